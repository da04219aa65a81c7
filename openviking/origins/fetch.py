"""A web page or file at an http(s) URL, fetched with httpx to a local file that an add reads:
within a time limit on the whole answer and a size cap, redirects followed, named as the
server names it; for a server's user key, from public addresses only.

The URL as given (without any ``user:password@``) is what the nodes record as their source
(an :class:`Address`), so adding the same URL again updates what it added. httpx reads the
usual proxy variables (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) and
``SSL_CERT_FILE``, so a fetch behind a proxy works as curl's does.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import threading
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from openviking.config import env_number
from openviking.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnavailableError,
)

from .archives import TooLargeError

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_SECONDS", "Address", "fetch", "is_url", "shown_url"]

DEFAULT_SECONDS = 30.0  # OPENVIKING_FETCH_TIMEOUT
DEFAULT_MAX_BYTES = 100 * 1024 * 1024  # OPENVIKING_FETCH_MAX_MB
MAX_REDIRECTS = 10
_CHUNK = 256 * 1024
_URL = re.compile(r"^https?://", re.IGNORECASE)
# A name's suffix by the type the server declares, for a URL whose path names no file.
_SUFFIXES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/markdown": ".md",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "application/json": ".json",
    "application/zip": ".zip",
    "application/gzip": ".tar.gz",
    "application/x-gzip": ".tar.gz",
    "application/x-tar": ".tar",
    "application/epub+zip": ".epub",
    "application/rtf": ".rtf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}
_HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # an IPv4 address in its last 32 bits


class Address(PurePosixPath):
    """A URL as a path: joined and split like a folder's (``https://host/repo.tar.gz/docs/a.md``
    is a file of the archive at that URL), and shown with its ``//`` intact."""

    def __str__(self) -> str:
        text = super().__str__()
        scheme, sep, rest = text.partition(":/")
        return f"{scheme}://{rest}" if sep and "/" not in scheme else text

    def is_absolute(self) -> bool:
        return True  # a URL names one place, wherever it is read from


def is_url(text: object) -> bool:
    """True for text that starts ``http://`` or ``https://``."""
    return isinstance(text, str) and bool(_URL.match(text.strip()))


def shown_url(url: str) -> str:
    """``url`` without the ``user:password@`` it may carry: what messages and the store show."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # a broken address ("http://[::1/") is shown as given, without credentials
        scheme, sep, rest = url.strip().partition("://")
        place, slash, path = rest.partition("/")
        return f"{scheme.lower()}{sep}{place.rpartition('@')[2]}{slash}{path}"
    return urlunsplit((parts.scheme.lower(), parts.netloc.rpartition("@")[2], parts.path, parts.query, ""))


def fetch(url: str, folder: Path, *, public_only: bool = False) -> Path:
    """Fetch ``url`` into a file in ``folder``, named after what it is; returns its path.

    The whole answer (each redirect, the headers, the body) takes at most the timeout
    (``OPENVIKING_FETCH_TIMEOUT``), however slowly the server sends it. ``public_only`` (a
    server fetching for a user key, which must not reach the server's own network) refuses a
    host whose name does not resolve here to public addresses only, at the first request and
    at each redirect, and a connection that reached another address than the name resolved
    to; through a proxy, only the name can be checked (see :class:`_Watch`).

    Raises:
        InvalidArgumentError: not an http(s) URL with a host, or a bad setting.
        PermissionDeniedError: ``public_only`` and a host that is not public.
        NotFoundError: the server answers 404 or 410.
        DeadlineExceededError: the answer took longer than the timeout.
        TooLargeError: more than the cap (``OPENVIKING_FETCH_MAX_MB``).
        UnavailableError: it cannot be reached, or answers another error.
    """
    import httpx

    shown = shown_url(url)
    address = _address(url, shown)
    seconds = env_number("OPENVIKING_FETCH_TIMEOUT", DEFAULT_SECONDS, "seconds")
    max_bytes = int(env_number("OPENVIKING_FETCH_MAX_MB", DEFAULT_MAX_BYTES / 1024 / 1024, "MiB") * 1024 * 1024)
    watch = _Watch(seconds, public_only)
    try:
        with (
            watch,
            httpx.Client(
                follow_redirects=True, max_redirects=MAX_REDIRECTS, timeout=seconds,
                event_hooks={"request": [watch.request]},
                headers={"User-Agent": "openviking (+https://github.com/volcengine/OpenViking)"},
            ) as client,
            client.stream("GET", address, extensions={"trace": watch.trace}) as response,
        ):  # fmt: skip
            _check_status(response, shown)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise TooLargeError(f"{shown} is {int(declared):,} bytes: more than {max_bytes:,}", max_bytes)
            target = folder / _file_name(response, urlsplit(address).path)
            received = 0
            with open(target, "wb") as out:
                for chunk in response.iter_bytes(_CHUNK):
                    received += len(chunk)
                    if received > max_bytes:
                        raise TooLargeError(f"{shown} is more than {max_bytes:,} bytes", max_bytes)
                    out.write(chunk)
            watch.finished()
    except httpx.HTTPError as exc:
        if watch.expired or isinstance(exc, httpx.TimeoutException):
            raise _late(shown, seconds) from exc
        if isinstance(exc, httpx.TooManyRedirects):
            raise UnavailableError(
                f"{shown} redirects more than {MAX_REDIRECTS} times", details={"path": shown}
            ) from exc
        raise UnavailableError(
            f"Cannot fetch {shown}: {_reason(exc)}",
            hint="Check the address; behind a proxy, set HTTPS_PROXY (and NO_PROXY for local hosts)",
            details={"path": shown},
        ) from exc
    if watch.expired:  # the connection was cut at the deadline, which ends a body sent without a length
        raise _late(shown, seconds)
    return target


def _address(url: str, shown: str) -> str:
    """``url`` as httpx will send it.

    Raises:
        InvalidArgumentError: not an http(s) URL with a host, or one httpx cannot send.
    """
    import httpx

    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"Not a web address: {shown} ({_reason(exc)})", details={"path": shown}) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidArgumentError(f"Not a web address: {shown}", details={"path": shown})
    return text


def _late(shown: str, seconds: float) -> DeadlineExceededError:
    return DeadlineExceededError(
        f"{shown} did not answer within {seconds:g} s",
        hint="Set OPENVIKING_FETCH_TIMEOUT to wait longer",
        details={"path": shown, "timeout_seconds": seconds},
    )


class _Watch:
    """One fetch's deadline, and (``public_only``) the addresses it may reach.

    httpx's timeout bounds each read, so a server that sends a byte at a time could hold a
    fetch for ever: at the deadline a timer shuts down the connection in use, which ends the
    read under way at once. httpcore's ``trace`` extension hands over each connection as it is
    made (a duplicate of its socket is kept, which a TLS wrapping leaves usable).

    For a user key, each request's host must resolve here to public addresses only, and a
    direct connection must have reached a public address (a name that resolved to a public
    address, then to a private one, is caught there). Through a proxy (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY``; not for hosts in ``NO_PROXY``) the proxy resolves the name
    and connects: only the name, as this machine resolves it, can be checked, so a name that
    does not resolve here is refused rather than left to the proxy.
    """

    def __init__(self, seconds: float, public_only: bool) -> None:
        import urllib.request

        self.public_only = public_only
        self.expired = False
        self._direct = True  # the connection being made goes to the host asked for, not to a proxy
        # The proxies' hosts, read as httpx reads them (a value without a scheme is http://).
        proxies = urllib.request.getproxies()
        self._proxies = {
            urlsplit(value if "://" in value else f"http://{value}").hostname
            for scheme, value in proxies.items()
            if scheme in ("http", "https", "all") and value
        }
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watch:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finished()
        with self._lock:
            for watched in self._sockets:
                watched.close()
            self._sockets.clear()

    def finished(self) -> None:
        """The answer is read: no deadline to hold any more."""
        self._timer.cancel()

    def request(self, request: Any) -> None:
        """httpx's request hook, before the first request and each redirect."""
        if self.public_only:
            _refuse_unless_public(request.url.host)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace: each connection is watched as it is made, and checked."""
        if event == "connection.connect_tcp.started":
            self._direct = info.get("host") not in self._proxies
        elif event == "connection.connect_tcp.complete":
            connection = info["return_value"].get_extra_info("socket")
            with self._lock:
                self._sockets.append(connection.dup())
                if self.expired:
                    _shut(connection)
            if self.public_only and self._direct:
                try:
                    _refuse_unless_public(connection.getpeername()[0])
                except PermissionDeniedError:
                    connection.close()
                    raise

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for watched in self._sockets:
                _shut(watched)


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def _refuse_unless_public(host: str) -> None:
    """Raises:
    PermissionDeniedError: ``host`` is, or resolves here to, an address that is not public, or
        does not resolve here."""
    try:
        addresses = {ipaddress.ip_address(host.strip("[]").split("%")[0])}
    except ValueError:
        try:
            found = {str(info[4][0]).split("%")[0] for info in socket.getaddrinfo(host, None)}
        except (OSError, UnicodeError):
            raise PermissionDeniedError(
                f"{host} does not resolve here to a public address, and this server fetches only public ones",
                hint="Fetch it on your side and upload it",
                details={"host": host},
            ) from None
        addresses = {ipaddress.ip_address(address) for address in found}
    for address in addresses:
        if not _public(address):
            raise PermissionDeniedError(
                f"{host} is not a public address, and this server fetches only public ones",
                hint="Fetch it on your side and upload it",
                details={"host": host},
            )


def _check_status(response: Any, shown: str) -> None:
    if response.status_code in (404, 410):
        raise NotFoundError(f"Nothing at {shown} (HTTP {response.status_code})", details={"path": shown})
    if response.status_code >= 400:
        raise UnavailableError(
            f"Cannot fetch {shown}: HTTP {response.status_code} {response.reason_phrase}",
            details={"path": shown, "http_status": response.status_code},
        )


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for an address of the internet at large: neither private, loopback, link-local,
    shared, reserved nor multicast, nor an IPv6 address that carries such an IPv4 one."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return True
    carried = [address.ipv4_mapped, address.sixtofour, address.teredo[1] if address.teredo else None]
    if address in _NAT64:
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return all(inner is None or _public(inner) for inner in carried)


def _file_name(response: Any, path: str) -> str:
    """The file's name: the server's (Content-Disposition), else the URL's last segment, else
    its host; with the suffix of its declared type when the name has none that tells it."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    name = _disposition_name(response.headers.get("content-disposition", ""))
    if not name:
        final = urlsplit(str(response.url)).path or path
        name = unquote(final.rstrip("/").rsplit("/", 1)[-1]) or response.url.host or "page"
    name = re.sub(r"[\x00-\x1f/\\]", "_", name).strip(". ") or "page"
    name = name[:200]
    suffix = _SUFFIXES.get(kind)
    if suffix == ".html" and not name.lower().endswith(_HTML_SUFFIXES):
        return name + suffix
    if suffix is not None and "." not in name:
        return name + suffix
    return name


def _disposition_name(header: str) -> str:
    found = re.search(r"filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)", header)
    if found:
        return unquote(found.group(1).strip().strip('"'))
    found = re.search(r'filename\s*=\s*"([^"]+)"', header) or re.search(r"filename\s*=\s*([^;]+)", header)
    return Path(found.group(1).strip()).name if found else ""


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
