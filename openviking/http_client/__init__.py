"""The HTTP clients: :class:`SyncHTTPClient` and :class:`AsyncHTTPClient`, the interface over an openviking server.

Each method of :class:`~openviking.contract.interface.OpenVikingClient` is one request (an add that
uploads is two) to the routes of ``openviking serve``, and returns what the embedded client
returns, rebuilt from the JSON with ``from_dict()``; the server's errors are raised as the
same :class:`~openviking.errors.OpenVikingError` subclasses, and the warnings it sends go to
the ``warn`` callback, as the embedded client's do.

The parts: ``calls`` builds each method's request, ``transport`` sends it (retries with
backoff) and decodes the answer, ``upload`` packs a local path for ``temp_upload``, ``upstream``
reads upstream OpenViking's answers and writes its add bodies, ``clients`` holds the two
clients that put them together, and ``plain`` the command line's client, whose JSON calls go
over the stdlib's ``http.client`` instead of httpx.
"""

from __future__ import annotations

from .clients import AsyncHTTPClient, AsyncSession, SyncHTTPClient
from .commandline import CommandLineHTTPClient

__all__ = ["AsyncHTTPClient", "AsyncSession", "CommandLineHTTPClient", "SyncHTTPClient"]

# Their public home, as reprs, pickles and the docs name them (not the module they are written in).
for _exported in (AsyncHTTPClient, AsyncSession, CommandLineHTTPClient, SyncHTTPClient):
    _exported.__module__ = __name__
del _exported
