"""Hippograph: a memory server for LLM agents (knowledge graph + vector memory + query planner)."""

from hippograph.config import Settings
from hippograph.errors import (
    BackendUnavailable,
    ConfigurationError,
    Conflict,
    ExtractionError,
    HippographError,
    InsufficientStorage,
    InvalidInput,
    NotFound,
)
from hippograph.models import DocumentIn, MessageIn, Role
from hippograph.service import ContextResult, Hippograph, SearchHit

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "ConfigurationError",
    "Conflict",
    "ContextResult",
    "DocumentIn",
    "ExtractionError",
    "Hippograph",
    "HippographError",
    "InsufficientStorage",
    "InvalidInput",
    "MessageIn",
    "NotFound",
    "Role",
    "SearchHit",
    "Settings",
    "__version__",
]
