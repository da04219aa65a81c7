"""Object storage: a store at ``s3://``, ``gs://`` or ``az://``, its options, and its errors.

LanceDB reaches object storage through the Rust ``object_store`` crate. The lease
(``locking.py``), the reindex marker and doctor's probe reach it through ``obstore``, a binding
of the same crate, so both read the same ``storage.options`` and the same ``AWS_*``,
``GOOGLE_*`` and ``AZURE_*`` variables the same way, and the lease lands in the bucket the
data is in. Nothing here prints an option's value: a :class:`Location` describes itself with
its credentials masked, and every error message is scrubbed of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from openviking.config import is_secret
from openviking.errors import (
    InternalError,
    NotFoundError,
    OpenVikingError,
    StoreNotWritableError,
    UnavailableError,
)

__all__ = ["Location", "StorageAccessDeniedError", "is_remote", "storage_error"]


class StorageAccessDeniedError(StoreNotWritableError):
    """The object store refused the credentials (PERMISSION_DENIED): the machine's
    configuration, not the command's input, so the CLI exits 1."""


# obstore takes its HTTP client's settings apart from the store's (LanceDB takes them in one map).
CLIENT_KEYS = frozenset(
    {
        "allow_http", "allow_invalid_certificates", "connect_timeout", "timeout", "user_agent",
        "proxy_url", "proxy_ca_certificate", "proxy_excludes", "pool_idle_timeout",
        "pool_max_idle_per_host", "http1_only", "http2_only", "http2_keep_alive_interval",
        "http2_keep_alive_timeout", "http2_keep_alive_while_idle", "randomize_addresses",
    }
)  # fmt: skip
# Lance's own options, which are no object_store key.
LANCE_ONLY_KEYS = frozenset(
    {
        "download_retry_count", "client_max_retries", "client_retry_timeout", "dynamodb_endpoint",
        "new_table_enable_v2_manifest_paths", "new_table_data_storage_version",
        "new_table_enable_stable_row_ids", "expires_at_millis", "use_opendal",
    }
)  # fmt: skip
ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url")
ENDPOINT_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT")
REGION_KEYS = ("region", "aws_region", "aws_default_region")
REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION")
# Credentials that reach object_store from the environment, never printed either.
SECRET_ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_KEY", "AZURE_CLIENT_SECRET", "GOOGLE_SERVICE_ACCOUNT_KEY",
)  # fmt: skip


def is_remote(path: str) -> bool:
    """True when ``path`` names object storage (a URL) rather than a local directory."""
    return "://" in path and not path.startswith("file://")


@dataclass(frozen=True, slots=True)
class Location:
    """A store on object storage: its URL, split into bucket and prefix, and its options."""

    url: str
    options: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme

    @property
    def bucket(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def prefix(self) -> str:
        return urlsplit(self.url).path.strip("/")

    @property
    def endpoint(self) -> str | None:
        """The endpoint given (an option or ``AWS_ENDPOINT_URL``), without credentials or query."""
        lowered = {key.lower(): value for key, value in self.options.items()}
        for key in ENDPOINT_KEYS:
            if lowered.get(key):
                return _safe_url(lowered[key])
        if self.scheme in ("s3", "s3a"):
            for name in ENDPOINT_ENV:
                if os.environ.get(name):
                    return _safe_url(os.environ[name])
        return None

    @property
    def region(self) -> str | None:
        lowered = {key.lower(): value for key, value in self.options.items()}
        found = next((lowered[key] for key in REGION_KEYS if lowered.get(key)), None)
        return found or next((os.environ[name] for name in REGION_ENV if os.environ.get(name)), None)

    def describe(self) -> dict[str, Any]:
        """What doctor shows: the bucket, prefix, endpoint and region; each credential as ``***``."""
        return {
            "bucket": self.bucket,
            "prefix": self.prefix,
            "endpoint": self.endpoint,
            "region": self.region,
            "options": {key: ("***" if is_secret(key) else value) for key, value in sorted(self.options.items())},
        }

    def secrets(self) -> list[str]:
        """Every credential this location may send (options and environment), to scrub from text."""
        values = [value for key, value in self.options.items() if is_secret(key)]
        values += [os.environ[name] for name in SECRET_ENV if os.environ.get(name)]
        return [value for value in values if len(value) >= 4]

    def scrub(self, text: str) -> str:
        """``text`` with every credential masked and every URL's query (a signature) dropped."""
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return re.sub(r"(https?://[^\s?\"')]+)\?[^\s\"')]*", r"\1", text)

    def object_store(self, *, timeout: float | None = None) -> Any:
        """An obstore store rooted at this location's prefix (``timeout``: seconds a request,
        retries included, may take: doctor's probe waits this long at most)."""
        import obstore.store

        config: dict[str, str] = {}
        client: dict[str, str] = {}
        for key, value in self.options.items():
            name = key.lower()
            if name in LANCE_ONLY_KEYS:
                continue
            (client if name in CLIENT_KEYS else config)[name] = value
        if self.scheme in ("s3", "s3a") and not any(key in config for key in ENDPOINT_KEYS):
            # LanceDB takes the endpoint from AWS_ENDPOINT_URL too; object_store's own reading
            # of the environment knows only AWS_ENDPOINT.
            endpoint = os.environ.get("AWS_ENDPOINT_URL")
            if endpoint and not os.environ.get("AWS_ENDPOINT"):
                config["endpoint"] = endpoint
        retry: dict[str, Any] | None = None
        if timeout is not None:
            from datetime import timedelta

            client.setdefault("connect_timeout", f"{max(1, int(timeout / 2))}s")
            client.setdefault("timeout", f"{max(1, int(timeout))}s")
            retry = {"max_retries": 1, "retry_timeout": timedelta(seconds=timeout)}
        # A key object_store does not know is refused; drop it (it was meant for lance alone).
        for _ in range(len(config) + 1):
            try:
                # Empty client options would replace those read from the environment (AWS_ALLOW_HTTP).
                return obstore.store.from_url(  # type: ignore[call-overload]
                    self.url, config=config, client_options=client or None, retry_config=retry
                )
            except obstore.exceptions.UnknownConfigurationKeyError as exc:
                unknown = re.search(r"key: '([^']+)'", str(exc))
                if not unknown or unknown.group(1) not in config:
                    raise storage_error(exc, self, "Invalid storage option") from None
                config.pop(unknown.group(1))
        raise InternalError("Invalid storage options")


def _safe_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else url


_NOT_FOUND = re.compile(r"NoSuchBucket|bucket does not exist|ContainerNotFound|The specified bucket", re.I)
_DENIED = re.compile(
    r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|ExpiredToken|InvalidToken|AuthorizationFailure"
    r"|AuthenticationFailed|Unauthenticated|PermissionDenied|status code: 40[13]|\b40[13] (Forbidden|Unauthorized)",
    re.I,
)
_UNREACHABLE = re.compile(
    r"error sending request|connection refused|tcp connect|dns error|timed out|timeout|connection reset"
    r"|Connect(ion)? error|failed to lookup address|client error \(Connect\)|network is unreachable",
    re.I,
)
_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")


def storage_error(exc: BaseException, location: Location, context: str) -> OpenVikingError:
    """``exc`` (from LanceDB or obstore) as the error a user can act on, with no credential in it."""
    text = str(exc)
    details = {"store": location.url, "endpoint": location.endpoint}
    where = f" at {location.endpoint}" if location.endpoint else ""
    if _NOT_FOUND.search(text):
        return NotFoundError(
            f"{context}: the bucket '{location.bucket}' does not exist{where}",
            hint="Create the bucket, or name another one in storage.workspace",
            details=details,
        )
    if _DENIED.search(text):
        return StorageAccessDeniedError(
            f"{context}: the object store{where} refused the credentials for '{location.bucket}'",
            hint="Check the credentials in storage.options (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
            details=details,
        )
    if _UNREACHABLE.search(text):
        return UnavailableError(
            f"{context}: the object store{where} cannot be reached",
            hint="Check storage.options.endpoint (and allow_http for a plain http:// endpoint)",
            details=details,
        )
    first = _RUST_LOCATION.sub("", text.strip().splitlines()[0] if text.strip() else type(exc).__name__)
    return InternalError(f"{context}: {location.scrub(first)[:300]}", details={**details, "error": type(exc).__name__})
