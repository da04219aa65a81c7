"""openviking: an AI agent's context (resources, memories, skills) in a local ``viking://`` store.

``import openviking as ov; client = ov.OpenViking(path="./store")`` gives the embedded SDK,
``ov.SyncHTTPClient(url=..., api_key=...)`` (or ``ov.AsyncHTTPClient``) the same over a server.
This module stays light: a client (and LanceDB, or httpx, behind it), the result types and the
interface load on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
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
    UnauthenticatedError,
    UnavailableError,
)

if TYPE_CHECKING:
    from .contract.hits import (
        ContextType,
        FindResult,
        MatchedContext,
        QueryPlan,
        QueryResult,
        RelatedContext,
        TypedQuery,
    )
    from .contract.interface import OpenVikingClient, Session
    from .contract.results import (
        AddResult,
        DoctorReport,
        Entry,
        GlobResult,
        GrepMatch,
        GrepResult,
        IndexResult,
        LinkResult,
        MemoryResult,
        Message,
        MessageAdded,
        MkdirResult,
        MoveResult,
        ReindexResult,
        Relation,
        RemoveResult,
        SessionDeleted,
        SessionInfo,
        Stat,
        UnlinkResult,
    )
    from .embedded.client import OpenViking
    from .http_client import AsyncHTTPClient, SyncHTTPClient
    from .message import TextPart

# The result types and the interface, loaded when first named (``ov.FindResult``, ``from
# openviking import Stat``): a command line's --help reads none of them.
_LAZY = {
    **dict.fromkeys(
        ("ContextType", "FindResult", "MatchedContext", "QueryPlan", "QueryResult", "RelatedContext", "TypedQuery"),
        "contract.hits",
    ),
    **dict.fromkeys(("OpenVikingClient", "Session"), "contract.interface"),
    "TextPart": "message",
    **dict.fromkeys(
        (
            "AddResult", "DoctorReport", "Entry", "GlobResult", "GrepMatch", "GrepResult", "IndexResult", "LinkResult",
            "MemoryResult", "Message", "MessageAdded", "MkdirResult", "MoveResult", "ReindexResult", "Relation",
            "RemoveResult", "SessionDeleted", "SessionInfo", "Stat", "UnlinkResult",
        ),
        "contract.results",
    ),
}  # fmt: skip


__all__ = [
    "AddResult",
    "AlreadyExistsError",
    "AsyncHTTPClient",
    "ConfigError",
    "ContextType",
    "DeadlineExceededError",
    "DoctorReport",
    "Entry",
    "FailedPreconditionError",
    "FindResult",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "IndexResult",
    "InternalError",
    "InvalidArgumentError",
    "InvalidURIError",
    "LinkResult",
    "MatchedContext",
    "MemoryResult",
    "Message",
    "MessageAdded",
    "MkdirResult",
    "MoveResult",
    "NotFoundError",
    "OpenViking",
    "OpenVikingClient",
    "OpenVikingError",
    "OpenVikingWarning",
    "PermissionDeniedError",
    "QueryPlan",
    "QueryResult",
    "ReindexResult",
    "RelatedContext",
    "Relation",
    "RemoveResult",
    "Session",
    "SessionDeleted",
    "SessionInfo",
    "Stat",
    "SyncHTTPClient",
    "SyncOpenViking",
    "TextPart",
    "TypedQuery",
    "UnauthenticatedError",
    "UnavailableError",
    "UnlinkResult",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # PEP 562: the client pulls in the store and the models, so load it only when asked.
    if name in ("OpenViking", "SyncOpenViking"):
        from .embedded.client import OpenViking

        return OpenViking
    if name in ("SyncHTTPClient", "AsyncHTTPClient"):
        from . import http_client

        return getattr(http_client, name)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'openviking' has no attribute {name!r}")
