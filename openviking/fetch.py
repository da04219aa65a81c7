"""A web page or file at an http(s) URL, fetched with httpx to a local file that an add reads:
within a timeout and a size cap, redirects followed, named as the server names it.

The URL as given (without any ``user:password@``) is what the nodes record as their source
(an :class:`Address`), so adding the same URL again updates what it added. httpx reads the
usual proxy variables (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) and
``SSL_CERT_FILE``, so a fetch behind a proxy works as curl's does.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import time
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from .archives import TooLargeError
from .errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnavailableError,
)

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
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.rpartition("@")[2], parts.path, parts.query, ""))


def fetch(url: str, folder: Path, *, public_only: bool = False) -> Path:
    """Fetch ``url`` into a file in ``folder``, named after what it is; returns its path.

    ``public_only`` refuses a URL (or a redirect) that leads to a loopback, private or
    link-local address: a server fetching for a user key must not reach its own network.

    Raises:
        InvalidArgumentError: not an http(s) URL with a host.
        PermissionDeniedError: ``public_only`` and an address that is not public.
        NotFoundError: the server answers 404 or 410.
        DeadlineExceededError: no answer within the timeout (``OPENVIKING_FETCH_TIMEOUT``).
        TooLargeError: more than the cap (``OPENVIKING_FETCH_MAX_MB``).
        UnavailableError: it cannot be reached, or answers another error.
    """
    import httpx

    shown = shown_url(url)
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidArgumentError(f"Not a web address: {shown}", details={"path": shown})
    seconds = _number("OPENVIKING_FETCH_TIMEOUT", DEFAULT_SECONDS)
    max_bytes = int(_number("OPENVIKING_FETCH_MAX_MB", DEFAULT_MAX_BYTES / 1024 / 1024) * 1024 * 1024)
    hooks: dict[str, list[Any]] = {"request": [_refuse_private]} if public_only else {}
    deadline = time.monotonic() + seconds
    try:
        with (
            httpx.Client(
                follow_redirects=True, max_redirects=MAX_REDIRECTS, timeout=seconds, event_hooks=hooks,
                headers={"User-Agent": "openviking (+https://github.com/volcengine/OpenViking)"},
            ) as client,
            client.stream("GET", url.strip()) as response,
        ):  # fmt: skip
            _check_status(response, shown)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise TooLargeError(f"{shown} is {int(declared):,} bytes: more than {max_bytes:,}", max_bytes)
            target = folder / _file_name(response, parts.path)
            received = 0
            with open(target, "wb") as out:
                for chunk in response.iter_bytes(_CHUNK):
                    received += len(chunk)
                    if received > max_bytes:
                        raise TooLargeError(f"{shown} is more than {max_bytes:,} bytes", max_bytes)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the whole answer took too long")
                    out.write(chunk)
    except httpx.TimeoutException as exc:
        raise DeadlineExceededError(
            f"{shown} did not answer within {seconds:g} s",
            hint="Set OPENVIKING_FETCH_TIMEOUT to wait longer",
            details={"path": shown, "timeout_seconds": seconds},
        ) from exc
    except httpx.TooManyRedirects as exc:
        raise UnavailableError(f"{shown} redirects more than {MAX_REDIRECTS} times", details={"path": shown}) from exc
    except httpx.HTTPError as exc:
        raise UnavailableError(
            f"Cannot fetch {shown}: {_reason(exc)}",
            hint="Check the address; behind a proxy, set HTTPS_PROXY (and NO_PROXY for local hosts)",
            details={"path": shown},
        ) from exc
    return target


def _number(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        raise InvalidArgumentError(f"{name} must be a number (got {text!r})") from None
    if value <= 0:
        raise InvalidArgumentError(f"{name} must be more than 0 (got {text!r})")
    return value


def _check_status(response: Any, shown: str) -> None:
    if response.status_code in (404, 410):
        raise NotFoundError(f"Nothing at {shown} (HTTP {response.status_code})", details={"path": shown})
    if response.status_code >= 400:
        raise UnavailableError(
            f"Cannot fetch {shown}: HTTP {response.status_code} {response.reason_phrase}",
            details={"path": shown, "http_status": response.status_code},
        )


def _refuse_private(request: Any) -> None:
    """Refuse a request to an address that is not public (the first one, and each redirect)."""
    host = request.url.host
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return  # httpx says it cannot connect
    for address in addresses:
        if not ipaddress.ip_address(address.split("%")[0]).is_global:
            raise PermissionDeniedError(
                f"{host} is not a public address, and this server fetches only public ones",
                hint="Fetch it on your side and upload it",
                details={"host": host},
            )


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
