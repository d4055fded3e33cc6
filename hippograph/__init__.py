"""Hippograph: a memory server for LLM agents (knowledge graph + vector memory + query planner)."""

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
