"""The command line's client of the local service, which hands a call to the embedded client
whenever the service cannot answer it as that client would.

:class:`LocalServiceClient` is :class:`~.commandline.CommandLineHTTPClient` over the service's
unix socket, with the service's key and the fingerprint it must have
(:mod:`openviking.service.rendezvous`) on every request. A call falls back, for the rest of the
process, to the client ``fallback`` makes (the embedded one) when the service cannot be
reached, answers without that fingerprint (another version or configuration, or no openviking
service at all), is starting or stopping (503), times out on a read, or breaks a connection
mid-call: a read is then simply asked again, and so is a write whose service is gone (a write
killed at any point is finished by the same write run again). A write whose service still
listens after the connection broke is an error, as over ``--url``: it may have been done.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from openviking.contract.interface import OpenVikingClient
from openviking.contract.operations import Operation
from openviking.contract.warn import WarningCallback
from openviking.errors import UnavailableError
from openviking.service.rendezvous import EXPECT_HEADER, SERVICE_HEADER, STATUS_PATH, Announcement

from .calls import Call
from .commandline import CommandLineHTTPClient, PlainConnection
from .transport import Files, Response, TransportFailed

__all__ = ["LocalServiceClient", "ServiceUnusable", "service_status"]

# A read the service has not answered in this time is asked of the embedded client instead;
# a write waits as long as it takes (an add of a large folder takes minutes).
READ_TIMEOUT = 120.0


class ServiceUnusable(Exception):
    """The local service cannot answer this call as the embedded client would."""


class LocalServiceClient(CommandLineHTTPClient):
    """The interface over the local service, falling back to ``fallback()`` (module docstring).

    Args:
        announcement: the service's announcement (its socket and key).
        expected: the fingerprint this process needs the service to have.
        fallback: makes the client to use instead (called once, when first needed).
        user: the user the command line acts as (the service acts as it too).
        warn: called with each warning.
    """

    def __init__(
        self,
        announcement: Announcement,
        expected: str,
        fallback: Callable[[], OpenVikingClient],
        *,
        user: str,
        warn: WarningCallback | None = None,
    ) -> None:
        super().__init__("http://localhost", announcement.key, timeout=READ_TIMEOUT, user=user, warn=warn)
        self._headers[EXPECT_HEADER] = expected
        self._announcement = announcement
        self._expected = expected
        self._make_fallback = fallback
        self._fallback: OpenVikingClient | None = None
        self._upstream = False  # our own service: never upstream's

    def _fall_back(self) -> OpenVikingClient:
        if self._fallback is None:
            if self._plain is not None:
                self._plain.close()
                self._plain = None
            self._fallback = self._make_fallback()
        return self._fallback

    @property
    def user(self) -> str:
        """The user the calls act as."""
        return self._fallback.user if self._fallback is not None else self._user or "default"

    def initialize(self) -> None:
        """Check that the service answers (else that the fallback client can be used)."""
        if self._fallback is None:
            try:
                super().initialize()
                return
            except ServiceUnusable:
                pass
        self._fall_back().initialize()

    def _perform(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Any:
        if self._fallback is None:
            try:
                return super()._perform(operation, arguments)
            except ServiceUnusable:
                pass
        return getattr(self._fall_back(), operation.name)(**arguments)

    def _sent(self, call: Call[Any], files: Files | None = None) -> Response:
        if files is not None or _names_a_relative_path(call.body):
            # The service cannot read the caller's working directory: the embedded client can.
            raise ServiceUnusable("a relative path or an upload")
        if self._plain is None:
            self._plain = PlainConnection(self.url, self._headers, READ_TIMEOUT, unix_socket=self._announcement.socket)
        self._plain.set_timeout(READ_TIMEOUT if call.read else None)
        try:
            response = self._plain.request(call.method, call.path, params=call.params, json=call.body)
        except TransportFailed as exc:
            if call.read or exc.failure.unsent or not self._listening():
                raise ServiceUnusable(exc.failure.reason) from None
            raise UnavailableError(
                f"The local service stopped answering during a write ({exc.failure.reason}); it may have done it",
                hint="Look before running it again; openviking status says whether the service runs",
            ) from None
        if response.status_code == 503 or response.headers.get(SERVICE_HEADER) != self._expected:
            raise ServiceUnusable(f"HTTP {response.status_code} without this configuration's fingerprint")
        return response

    def _listening(self) -> bool:
        """Whether the service's socket still takes connections."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(2.0)
        try:
            probe.connect(self._announcement.socket)
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def close(self) -> None:
        """Close the connection, and the fallback client if one was made."""
        super().close()
        if self._fallback is not None:
            self._fallback.close()


def _names_a_relative_path(body: Any) -> bool:
    path = body.get("path") if isinstance(body, dict) else None
    return isinstance(path, str) and "://" not in path and not os.path.isabs(os.path.expanduser(path))


def service_status(announcement: Announcement, timeout: float = 5.0) -> dict[str, Any] | None:
    """What the service ``announcement`` names says of itself (its pid, requests, what it
    watches...), or None when nothing answers there as that service."""
    headers = {"Authorization": f"Bearer {announcement.key}", "Accept": "application/json"}
    connection = PlainConnection("http://localhost", headers, timeout, unix_socket=announcement.socket)
    try:
        response = connection.request("GET", STATUS_PATH)
    except TransportFailed:
        return None
    finally:
        connection.close()
    if response.status_code != 200 or response.headers.get(SERVICE_HEADER) != announcement.fingerprint:
        return None
    try:
        payload = response.json()
    except ValueError:
        return None
    result = payload.get("result") if isinstance(payload, dict) else None
    return result if isinstance(result, dict) and result.get("pid") == announcement.pid else None
