"""openviking: an AI agent's context (resources, memories, skills) in a local ``viking://`` store.

``import openviking as ov; client = ov.OpenViking(path="./store")`` gives the embedded SDK.
This module stays light: the client (and LanceDB behind it) loads on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AlreadyExistsError,
    ConfigError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    InvalidURIError,
    NotFoundError,
    OpenVikingError,
    OpenVikingWarning,
    PermissionDeniedError,
    UnavailableError,
)
from .message import TextPart
from .types import AddResult, ContextType, FindResult, MatchedContext, QueryPlan, QueryResult, TypedQuery

if TYPE_CHECKING:
    from .client import OpenViking, SyncHTTPClient

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AlreadyExistsError",
    "ConfigError",
    "ContextType",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "FindResult",
    "InternalError",
    "InvalidArgumentError",
    "InvalidURIError",
    "MatchedContext",
    "NotFoundError",
    "OpenViking",
    "OpenVikingError",
    "OpenVikingWarning",
    "PermissionDeniedError",
    "QueryPlan",
    "QueryResult",
    "SyncHTTPClient",
    "SyncOpenViking",
    "TextPart",
    "TypedQuery",
    "UnavailableError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # PEP 562: the client pulls in the store and the models, so load it only when asked.
    if name in ("OpenViking", "SyncOpenViking"):
        from .client import OpenViking

        return OpenViking
    if name == "SyncHTTPClient":
        from .client import SyncHTTPClient

        return SyncHTTPClient
    raise AttributeError(f"module 'openviking' has no attribute {name!r}")
