"""API keys: which caller a request's key names (the root, one user, or, with no key
configured, the default user), and new keys for ``openviking key new``.

The key comes from ``X-API-Key``, else ``Authorization: Bearer``. It is digested with
SHA-256 and compared in constant time with every configured digest (``hmac.compare_digest``,
all of them every time), so the timing tells nothing about how close a guess came. The key
itself is never logged, echoed nor kept; user keys are held only as digests. This module
needs no web framework, so the CLI's key command stays light.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from openviking.config import ServerConfig
from openviking.errors import PermissionDeniedError, UnauthenticatedError

__all__ = ["Caller", "Keys", "USER_HEADER", "digest_hex", "new_api_key"]

USER_HEADER = "x-openviking-user"
_ROOT = "\0root"  # no user id can be this (ids are letters, digits and _ . @ -)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request acts as.

    ``user`` None is the configured default user. ``root``: the root key, which may name
    any user in ``X-OpenViking-User``. ``isolated``: a user key, which may not even read
    another user's space.
    """

    user: str | None = None
    root: bool = False
    isolated: bool = False

    @property
    def owner(self) -> str:
        """Who an upload belongs to: only the same caller may add it (the root key may act as anyone)."""
        return "root" if self.root else f"user:{self.user or ''}"


NOBODY = Caller()


def digest_hex(key: str) -> str:
    """The SHA-256 hex digest ov.conf holds for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_api_key() -> tuple[str, str]:
    """A fresh random key (256 bits) and its SHA-256 hex digest."""
    key = "ov_" + secrets.token_urlsafe(32)
    return key, digest_hex(key)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries (``headers`` has lower-case names), or None."""
    key = (headers.get("x-api-key") or "").strip()
    if key:
        return key
    scheme, _, value = (headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


class Keys:
    """The keys ``server`` configures, as digests."""

    def __init__(self, server: ServerConfig) -> None:
        self._digests: list[tuple[str, bytes]] = [(user, bytes.fromhex(d)) for user, d in server.users.items()]
        if server.root_api_key:
            self._digests.append((_ROOT, hashlib.sha256(server.root_api_key.encode("utf-8")).digest()))

    @property
    def required(self) -> bool:
        """True when every request must carry a key."""
        return bool(self._digests)

    @property
    def mode(self) -> str:
        """What ``/health`` reports: ``api_key``, or ``none`` when no key is configured."""
        return "api_key" if self.required else "none"

    def caller(self, headers: Mapping[str, str]) -> Caller:
        """Who the request (``headers`` with lower-case names) acts as.

        Raises:
            UnauthenticatedError: keys are configured and the request has none, or one that is not among them.
            PermissionDeniedError: a user key names another user in ``X-OpenViking-User``.
        """
        if not self.required:
            return NOBODY
        key = presented_key(headers)
        if key is None:
            raise UnauthenticatedError(
                "Missing API key", hint="Send it in the X-API-Key header, or as Authorization: Bearer <key>"
            )
        found = self._match(hashlib.sha256(key.encode("utf-8")).digest())
        if found is None:
            raise UnauthenticatedError("Invalid API key")
        named = (headers.get(USER_HEADER) or "").strip() or None
        if found == _ROOT:
            return Caller(named, root=True)
        if named is not None and named != found:
            raise PermissionDeniedError(
                f"This API key acts as user '{found}' only", details={"user": found, "asked": named}
            )
        return Caller(found, isolated=True)

    def _match(self, presented: bytes) -> str | None:
        found = None
        for who, digest in self._digests:  # every one, match or not: the time does not say which
            if hmac.compare_digest(presented, digest):
                found = who
        return found
