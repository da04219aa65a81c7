"""Upstream's SDK entry point, ``ov.SyncHTTPClient(url=..., api_key=...)``, for code written against it.

Without a server to talk to, it is the embedded client over the local store (``path``, else
``OPENVIKING_STORE``, ``storage.workspace`` or ``~/.openviking/data``); ``url``, ``api_key``
and ``timeout`` are accepted and not used, and a ``url`` gets a one-time warning that says so.
"""

from __future__ import annotations

import os

from .client import OpenViking
from .config import Config
from .warn import WarningCallback

__all__ = ["SyncHTTPClient"]


class SyncHTTPClient(OpenViking):
    """:class:`OpenViking` under upstream's HTTP client's name and arguments."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        config: Config | None = None,
        config_file: str | os.PathLike[str] | None = None,
        warn: WarningCallback | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(path, config=config, config_file=config_file, warn=warn)
        del api_key, timeout  # upstream's HTTP settings: nothing here goes over a network
        if url:
            self._warn(
                f"openviking runs embedded, with no server: SyncHTTPClient ignores url={url!r} "
                "and opens the local store (pass path= or set OPENVIKING_STORE)"
            )
