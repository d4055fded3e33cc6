"""Hippograph: a memory server for LLM agents (knowledge graph + vector memory + query planner)."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# the names below are imported when first used, so that `hippograph --help` does not load the server
_WHERE = {
    "AsyncClient": "client", "Client": "client", "Settings": "config", "ContextResult": "context_entry",
    "DocumentIn": "models", "MessageIn": "models", "Role": "models", "Hippograph": "service", "SearchHit": "service",
    **{name: "errors" for name in ("BackendUnavailable", "ConfigurationError", "Conflict", "ExtractionError",
                                   "Forbidden", "HippographError", "InsufficientStorage", "InvalidInput", "NotFound",
                                   "RateLimited", "Unauthorized", "Unavailable")},
}

if TYPE_CHECKING:
    from hippograph.client import AsyncClient, Client
    from hippograph.config import Settings
    from hippograph.context_entry import ContextResult
    from hippograph.errors import (
        BackendUnavailable,
        ConfigurationError,
        Conflict,
        ExtractionError,
        Forbidden,
        HippographError,
        InsufficientStorage,
        InvalidInput,
        NotFound,
        RateLimited,
        Unauthorized,
        Unavailable,
    )
    from hippograph.models import DocumentIn, MessageIn, Role
    from hippograph.service import Hippograph, SearchHit


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(f"hippograph.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hippograph' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "BackendUnavailable",
    "Client",
    "ConfigurationError",
    "Conflict",
    "ContextResult",
    "DocumentIn",
    "ExtractionError",
    "Forbidden",
    "Hippograph",
    "HippographError",
    "InsufficientStorage",
    "InvalidInput",
    "MessageIn",
    "NotFound",
    "RateLimited",
    "Role",
    "SearchHit",
    "Settings",
    "Unauthorized",
    "Unavailable",
    "__version__",
]
