"""The embedded client: :class:`OpenViking` over a store opened in this process (``client``), what
it holds between calls (``parts``), the namespace as a user sees it (``namespace``), and the doctor.

``from openviking.embedded import OpenViking`` loads the client on first use, so that importing one
of the parts does not load them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import OpenViking

__all__ = ["OpenViking"]


def __getattr__(name: str) -> Any:
    # PEP 562: the client imports the store, the retriever and the ingest pipeline.
    if name == "OpenViking":
        from .client import OpenViking

        return OpenViking
    raise AttributeError(f"module 'openviking.embedded' has no attribute {name!r}")
