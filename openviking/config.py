"""Configuration: ``~/.openviking/ov.conf`` (strict JSON, ``$VAR`` expanded), upstream key names.

Where a value comes from, first match wins: a flag, an environment variable, the config file,
the default. The file is found through ``--config``, then ``OPENVIKING_CONFIG_FILE``, then
``$OPENVIKING_HOME/ov.conf`` (``OPENVIKING_HOME`` defaults to ``~/.openviking``).
API keys are kept in the objects but never appear in ``repr`` or in :func:`redacted`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError, ConfigFileNotFoundError, InvalidArgumentError

__all__ = [
    "RETRIEVAL_MODES",
    "Config",
    "EmbeddingConfig",
    "LLMConfig",
    "RerankConfig",
    "RetrievalConfig",
    "ServerConfig",
    "StorageConfig",
    "config_home",
    "env_number",
    "is_secret",
    "load_config",
    "redacted",
    "unset_variables",
]

RETRIEVAL_MODES = ("hybrid", "vector", "keyword")
"""What find and search may rank by: meaning and words fused, meaning alone, words alone."""

CONFIG_ENV = "OPENVIKING_CONFIG_FILE"
STORE_ENV = "OPENVIKING_STORE"
HOME_ENV = "OPENVIKING_HOME"
SECRET_KEYS = frozenset({"api_key", "ak", "sk", "token", "password", "secret"})
# Storage options name their credentials so: aws_access_key_id, aws_secret_access_key,
# aws_session_token, azure_storage_account_key, azure_storage_sas_key, google_service_account_key...
SECRET_SUFFIXES = ("key", "key_id", "secret", "token", "password", "signature")
TOP_LEVEL_KEYS = frozenset(
    {
        "storage",
        "embedding",
        "vlm",
        "query_planner",
        "memory",
        "rerank",
        "retrieval",
        "grep",
        "semantic",
        "default_user",
        "default_account",
        "log",
        "server",
    }
)


def config_home() -> Path:
    """``$OPENVIKING_HOME``, else ``~/.openviking``."""
    home = os.environ.get(HOME_ENV)
    return Path(home).expanduser() if home else Path.home() / ".openviking"


def env_number(name: str, default: float, unit: str) -> float:
    """The number above 0 that the environment variable ``name`` holds (a count of ``unit``,
    named in the error), or ``default`` when it is unset or empty.

    Raises:
        InvalidArgumentError: it holds anything else (a word, 0, a negative number, nan, inf).
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e9:
        raise InvalidArgumentError(f"{name} must be a number of {unit} above 0 (got {text!r})", details={name: text})
    return value


# A key close to one this tool reads (`treshold`, `provder`) that is no upstream key is a typo:
# refused, rather than leaving the setting at its default without a word. Any other key is
# taken for one of upstream's many (credentials, extra_headers, failover...) and accepted.
# These are upstream's keys (from its config models: embedding, rerank, vlm, storage...) that
# sit close to a key read here and must not be taken for typos.
UPSTREAM_KEYS = frozenset(
    {
        "api_version", "model_name", "model_version", "backend", "version", "batch_size", "max_concurrent",
        "max_retries", "text_source", "sparse", "hybrid", "input", "encoding_format", "extra_headers",
        "extra_body", "extra_request_body", "credentials", "failback_timeout_seconds", "failback_request_count",
        "forward_api_key", "model_path", "cache_dir", "thinking", "stream", "backup", "providers",
        "default_provider", "media", "ak", "sk", "host", "region", "enable_fusion", "res_level",
        "max_video_frames", "circuit_breaker", "allow_metadata_override", "hotness_alpha",
        "score_propagation_alpha", "recall_intent_timeout_s", "recall_rewrite_timeout_s",
        "default_search_mode", "default_search_limit", "memory_association", "engine",
        "switch_to_remote_threshold", "agfs", "vectordb",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """``embedding.dense`` plus the top-level ``embedding.max_input_tokens``, ``max_concurrent``
    and ``max_retries`` (upstream's place for them; ``embedding.dense`` may hold them too).

    ``provider`` is ``local`` (the bundled multilingual-e5-small, falling back to ``hash``
    where it cannot load), ``hash`` (feature hashing, no model) or ``openai`` (any
    OpenAI-compatible ``/v1/embeddings`` server).
    """

    provider: str = "local"
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    dimension: int | None = None
    batch_size: int = 32
    query_param: str | None = None
    document_param: str | None = None
    max_input_tokens: int | None = None
    timeout: float = 60.0
    # The openai provider's requests in flight at once, and its tries again of one that got
    # 429, 408, 409 or 5xx, or no answer (upstream's embedding.max_concurrent and max_retries).
    max_concurrent: int = 10
    max_retries: int = 3


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """``vlm`` / ``query_planner``: an OpenAI-compatible chat model."""

    provider: str = "openai"
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0
    max_retries: int = 2

    @property
    def is_configured(self) -> bool:
        """True when a model or an endpoint was given."""
        return bool(self.model or self.api_base)


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """``rerank``: an OpenAI-compatible ``/rerank`` endpoint or Cohere."""

    provider: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    threshold: float = 0.1
    timeout: float = 30.0
    max_input_tokens: int = 0

    @property
    def resolved_provider(self) -> str | None:
        """The provider, auto-detected as upstream does when unset."""
        if self.provider:
            return self.provider
        if self.api_key and self.api_base:
            return "openai"
        if self.api_key:
            return "cohere"
        return None

    @property
    def is_available(self) -> bool:
        """True when the provider has what it needs to be called."""
        provider = self.resolved_provider
        if provider == "cohere":
            return bool(self.api_key)
        if provider == "openai":
            return bool(self.api_base)
        return False


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """``retrieval``: intent analysis switch, the default find mode, query translation."""

    enable_intent: bool = True
    mode: str = "hybrid"
    # Chinese words of a query also search as their English glosses (keyword side).
    translate_queries: bool = True


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """``server``: where ``openviking serve`` listens, its API keys, and what a request may cost.

    ``users`` maps each user id to the SHA-256 hex digest of its key: a plain ``api_key`` in
    ov.conf is digested when read, so no user's key is kept in memory.
    """

    host: str = "127.0.0.1"
    port: int = 1933
    root_api_key: str | None = field(default=None, repr=False)
    users: dict[str, str] = field(default_factory=dict, repr=False)
    max_body_bytes: int = 8 * 1024 * 1024
    max_upload_bytes: int = 512 * 1024 * 1024
    # What one caller's uploads not yet added may hold in all, unpacked (None: max_upload_bytes),
    # and how long an upload nobody adds is kept.
    upload_quota_bytes: int | None = None
    upload_unused_seconds: float = 600.0
    request_timeout: float = 60.0
    # The folders a root key's ``path`` may name (empty: anything the server's user can read).
    path_roots: tuple[str, ...] = ()
    # The Host and Origin names a request may carry besides the loopback ones and the bound
    # host (a web page elsewhere must not reach a keyless loopback server: DNS rebinding).
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    @property
    def has_keys(self) -> bool:
        """True when requests must carry an API key."""
        return bool(self.root_api_key or self.users)


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """``storage``: where the store is, and how object storage is reached and shared.

    ``options`` go to LanceDB as its storage options (and to the lease, which reads them the
    same way): ``endpoint``, ``region``, ``allow_http``, ``aws_access_key_id``... They may
    hold credentials, so they are left out of ``repr``.
    """

    workspace: str | None = None
    options: dict[str, str] = field(default_factory=dict, repr=False)
    # How stale a reader may be: another process's writes are looked for at most this often
    # (None: 0 on a local disk, as LanceDB's strong consistency; 1 on object storage, where
    # each look is a LIST request).
    read_consistency_seconds: float | None = None
    # How long a dead writer's lease blocks the store's other writers (object storage).
    lease_seconds: float = 15.0


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration, after defaults and environment were applied."""

    path: Path | None = None
    workspace: str | None = None
    user: str = "default"
    storage: StorageConfig = StorageConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    vlm: LLMConfig = LLMConfig()
    query_planner: LLMConfig = LLMConfig()
    memory_llm: LLMConfig = LLMConfig()
    rerank: RerankConfig = RerankConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    abstract_max_chars: int = 256
    overview_max_chars: int = 4000
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def server(self) -> ServerConfig:
        """``server``, checked when read: only ``openviking serve`` reads it, so a key meant for
        the server (``$ROOT_KEY`` not exported here) does not stop every other command."""
        return _server(_section(self.raw, "server"))

    @property
    def planner(self) -> LLMConfig:
        """The model for intent analysis: ``query_planner`` when set, else ``vlm``."""
        return self.query_planner if self.query_planner.is_configured else self.vlm

    @property
    def memory_model(self) -> LLMConfig:
        """The model that takes memories from a commit: ``memory.llm`` when set, else ``vlm``
        (neither: memories are taken extractively)."""
        return self.memory_llm if self.memory_llm.is_configured else self.vlm

    def store_path(self, explicit: str | os.PathLike[str] | None = None) -> str:
        """The store location: the flag, ``OPENVIKING_STORE``, ``storage.workspace``, the default;
        a directory made absolute, so that every process names one store alike."""
        for candidate in (explicit, os.environ.get(STORE_ENV), self.workspace):
            if candidate:
                text = os.fspath(candidate)
                return text if "://" in text else os.path.abspath(Path(text).expanduser())
        return str(config_home() / "data")


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the config file (see the module docstring for where it is looked for).

    Raises:
        ConfigFileNotFoundError: an explicitly named file does not exist (or is a directory, a device...).
        ConfigError: the file is not valid JSON or holds invalid values.
    """
    explicit = path or os.environ.get(CONFIG_ENV)
    if explicit:
        file = Path(explicit).expanduser()
        if not file.is_file():
            raise ConfigFileNotFoundError(
                f"Config file not found: {file}" if not file.exists() else f"Config path is not a file: {file}",
                hint=f"Check the config file named (config_file= or {CONFIG_ENV}), or remove it to use the defaults.",
                details={"path": str(file)},
            )
    else:
        file = config_home() / "ov.conf"
        if not file.is_file():
            return Config()
    try:
        text = file.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {file}: {exc.strerror}", details={"path": str(file)}) from exc
    try:
        raw = json.loads(os.path.expandvars(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"Config file {file} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            hint="ov.conf is strict JSON: no comments, no trailing commas.",
            details={"path": str(file)},
        ) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"Config file {file} must hold a JSON object", details={"path": str(file)})
    return config_from_dict(raw, path=file)


def config_from_dict(raw: dict[str, Any], *, path: Path | None = None) -> Config:
    """Build a :class:`Config` from an already parsed ``ov.conf`` object."""
    _no_typos("", raw, tuple(sorted(TOP_LEVEL_KEYS)))  # upstream's other sections (encryption, pdf...) pass
    storage = _section(raw, "storage")
    embedding = _section(raw, "embedding")
    dense = _section(embedding, "dense", prefix="embedding.")
    semantic = _section(raw, "semantic")
    memory = _section(raw, "memory")
    memory_llm = _section(memory, "llm", prefix="memory.")
    sections = {
        "storage": storage, "embedding": embedding, "embedding.dense": dense, "semantic": semantic, "memory": memory,
        "memory.llm": memory_llm,
    }  # fmt: skip
    for name, read in _keys_read().items():
        _no_typos(name, sections[name] if name in sections else _section(raw, name), read)
    dense = {**dense}
    if embedding.get("max_input_tokens") is not None and not _is_int(embedding["max_input_tokens"]):
        raise ConfigError("Config key 'embedding.max_input_tokens' must be an integer")
    for key in ("max_input_tokens", "max_concurrent", "max_retries"):  # upstream's place for them
        if key in embedding and key not in dense:
            dense[key] = embedding[key]
    if "backend" in dense and "provider" not in dense:
        dense["provider"] = dense.pop("backend")
    config = Config(
        path=path,
        workspace=_optional_str(storage.get("workspace"), "storage.workspace"),
        storage=_storage(storage),
        user=_optional_str(raw.get("default_user"), "default_user") or "default",
        embedding=_build(EmbeddingConfig, dense, "embedding.dense"),
        vlm=_build(LLMConfig, _section(raw, "vlm"), "vlm"),
        query_planner=_build(LLMConfig, _section(raw, "query_planner"), "query_planner"),
        memory_llm=_build(LLMConfig, memory_llm, "memory.llm"),
        rerank=_build(RerankConfig, _section(raw, "rerank"), "rerank"),
        retrieval=_build(RetrievalConfig, _section(raw, "retrieval"), "retrieval"),
        abstract_max_chars=_positive_int(semantic, "abstract_max_chars", 256),
        overview_max_chars=_positive_int(semantic, "overview_max_chars", 4000),
        raw=raw,
    )
    if config.embedding.provider not in ("local", "hash", "openai"):
        raise ConfigError(
            f"embedding.dense.provider '{config.embedding.provider}' is not supported",
            hint="Use 'local' (the bundled model), 'hash' or 'openai' (any OpenAI-compatible server).",
        )
    if config.embedding.provider == "openai" and not config.embedding.model:
        raise ConfigError(
            "embedding.dense.model is required for provider 'openai'",
            hint="Set embedding.dense.model in ov.conf, e.g. text-embedding-3-small",
        )
    if config.embedding.max_concurrent < 1 or config.embedding.max_retries < 0:
        raise ConfigError(
            "embedding.max_concurrent must be at least 1 and embedding.max_retries at least 0 "
            f"(got {config.embedding.max_concurrent} and {config.embedding.max_retries})"
        )
    if config.embedding.dimension is not None and config.embedding.dimension < 1:
        raise ConfigError(f"embedding.dense.dimension must be a positive integer (got {config.embedding.dimension})")
    if config.retrieval.mode not in RETRIEVAL_MODES:
        raise ConfigError(f"retrieval.mode must be hybrid, vector or keyword (got '{config.retrieval.mode}')")
    return config


def is_secret(key: str) -> bool:
    """True for a config or storage option key that names a credential."""
    name = key.lower()
    return name in SECRET_KEYS or name.endswith(SECRET_SUFFIXES)


def redacted(value: Any) -> Any:
    """A copy of a config object with every secret replaced by ``"***"``."""
    if isinstance(value, dict):
        return {k: ("***" if is_secret(k) and v else redacted(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def _section(raw: dict[str, Any], key: str, *, prefix: str = "") -> dict[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"Config key '{prefix}{key}' must be a JSON object")
    return value


def _keys_read() -> dict[str, tuple[str, ...]]:
    """The keys this tool reads, by section."""

    def of(kind: type[Any], *aliases: str) -> tuple[str, ...]:
        return (*(f.name for f in fields(kind)), *aliases)

    llm = of(LLMConfig, "model_name")
    return {
        "storage": ("workspace", "options", "read_consistency_seconds", "lease_seconds"),
        "embedding": ("dense", "max_input_tokens", "max_concurrent", "max_retries"),
        "embedding.dense": of(EmbeddingConfig, "backend", "model_name"),
        "vlm": llm,
        "query_planner": llm,
        "memory": ("llm",),
        "memory.llm": llm,
        "rerank": of(RerankConfig, "model_name"),
        "retrieval": of(RetrievalConfig),
        "semantic": ("abstract_max_chars", "overview_max_chars"),
        "server": of(ServerConfig),
    }


def _no_typos(name: str, section: dict[str, Any], read: tuple[str, ...]) -> None:
    for key in section:
        if key in read or key in UPSTREAM_KEYS:
            continue
        import difflib  # only for a key it does not know: every command loads the config

        near = difflib.get_close_matches(key, read, n=1, cutoff=0.75)
        if near:
            prefix = f"{name}." if name else ""
            raise ConfigError(
                f"Unknown config key '{prefix}{key}'",
                hint=f"Did you mean '{prefix}{near[0]}'?",
                details={"key": f"{prefix}{key}"},
            )


USER_KEY_FIELDS = ("api_key_sha256", "api_key")


def _server(section: dict[str, Any]) -> ServerConfig:
    """``server``, with its keys checked: a key left as an unset ``$VARIABLE`` or shared by two
    callers would let in whoever guesses it, so either is refused rather than served."""
    users = _section(section, "users", prefix="server.")
    built = _build(ServerConfig, {k: v for k, v in section.items() if k != "users"}, "server")
    root = _secret(section.get("root_api_key"), "server.root_api_key")
    digests: dict[str, str] = {}
    for user, entry in users.items():
        digests[user] = _user_digest(user, entry)
    import hashlib

    taken = list(digests.values()) + ([hashlib.sha256(root.encode()).hexdigest()] if root else [])
    if len(set(taken)) != len(taken):
        raise ConfigError("Two callers in 'server' share one API key", hint="Give every user a key of its own")
    if not isinstance(built.host, str) or not built.host.strip():
        raise ConfigError("Config key 'server.host' must be a host name or address")
    for key in ("max_body_bytes", "max_upload_bytes", "upload_quota_bytes", "port"):
        value = getattr(built, key)
        if value is not None and value < (0 if key == "port" else 1):
            raise ConfigError(f"Config key 'server.{key}' must be a positive integer")
    if built.port > 65535:
        raise ConfigError("Config key 'server.port' must be at most 65535")
    for key in ("request_timeout", "upload_unused_seconds"):
        if getattr(built, key) <= 0:
            raise ConfigError(f"Config key 'server.{key}' must be a positive number of seconds")
    names = {
        key: _strings(section.get(key), f"server.{key}") for key in ("path_roots", "allowed_hosts", "allowed_origins")
    }
    roots = tuple(str(Path(root).expanduser().resolve()) for root in names["path_roots"])
    return ServerConfig(
        host=built.host,
        port=built.port,
        root_api_key=root,
        users=digests,
        max_body_bytes=built.max_body_bytes,
        max_upload_bytes=built.max_upload_bytes,
        upload_quota_bytes=built.upload_quota_bytes,
        upload_unused_seconds=built.upload_unused_seconds,
        request_timeout=built.request_timeout,
        path_roots=roots,
        allowed_hosts=tuple(name.lower() for name in names["allowed_hosts"]),
        allowed_origins=tuple(name.lower().rstrip("/") for name in names["allowed_origins"]),
    )


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"Config key '{name}' must be a list of non-empty strings")
    return tuple(item.strip() for item in value)


def _user_digest(user: str, entry: Any) -> str:
    """The SHA-256 hex digest of ``server.users.<user>``'s key (given digested or plain)."""
    from openviking.values.uri import is_valid_user_id

    name = f"server.users.{user}"
    if not is_valid_user_id(user):
        raise ConfigError(f"'{name}' is not a valid user id", hint="Use letters, digits and _ . @ -")
    if not isinstance(entry, dict) or len([k for k in USER_KEY_FIELDS if k in entry]) != 1:
        raise ConfigError(
            f"Config key '{name}' must be an object with one of api_key_sha256, api_key",
            hint='e.g. "alice": {"api_key_sha256": "<hex>"} (openviking key new alice prints one)',
        )
    unknown = [k for k in entry if k not in USER_KEY_FIELDS]
    if unknown:
        raise ConfigError(f"Unknown config key '{name}.{unknown[0]}'", details={"key": f"{name}.{unknown[0]}"})
    if "api_key" in entry:
        import hashlib

        plain = _secret(entry["api_key"], f"{name}.api_key")
        if plain is None:
            raise ConfigError(f"Config key '{name}.api_key' must not be empty")
        return hashlib.sha256(plain.encode()).hexdigest()
    digest = entry["api_key_sha256"]
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdefABCDEF" for c in digest):
        raise ConfigError(f"Config key '{name}.api_key_sha256' must be 64 hexadecimal digits (a SHA-256)")
    return digest.lower()


def _secret(value: Any, name: str) -> str | None:
    """An API key from the config: None when absent; refused when empty, not a string, or a
    ``$VARIABLE`` the environment does not set (expandvars leaves those as they are)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"Config key '{name}' must be a non-empty string")
    import re

    if re.fullmatch(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", value.strip()):
        raise ConfigError(
            f"Config key '{name}' names the environment variable {value.strip()}, which is not set",
            hint="Export it before starting the server",
        )
    return value


def _storage(section: dict[str, Any]) -> StorageConfig:
    options = _section(section, "options", prefix="storage.")
    texts: dict[str, str] = {}
    for key, value in options.items():
        if isinstance(value, bool):
            texts[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            texts[key] = str(value)
        else:
            raise ConfigError(f"Config key 'storage.options.{key}' must be a string, a number or true/false")
    consistency = section.get("read_consistency_seconds")
    if consistency is not None and (not _is_number(consistency) or consistency < 0):
        raise ConfigError("Config key 'storage.read_consistency_seconds' must be a number >= 0")
    lease = section.get("lease_seconds", 15.0)
    if not _is_number(lease) or lease < 1:
        raise ConfigError("Config key 'storage.lease_seconds' must be a number >= 1")
    return StorageConfig(
        workspace=_optional_str(section.get("workspace"), "storage.workspace"),
        options=texts,
        read_consistency_seconds=None if consistency is None else float(consistency),
        lease_seconds=float(lease),
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(section: dict[str, Any], key: str, default: int) -> int:
    value = section.get(key, default)
    if not _is_int(value) or value < 1:
        raise ConfigError(f"Config key 'semantic.{key}' must be a positive integer (got {value!r})")
    return int(value)


def _optional_str(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"Config key '{name}' must be a string")
    return value


def _build(kind: type[Any], values: dict[str, Any], name: str) -> Any:
    known = {f.name: f for f in fields(kind)}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        target = "model" if key == "model_name" and "model" in known else key
        if target not in known:
            continue  # upstream keys we do not use (credentials, extra_headers...) are accepted
        expected = known[target].type
        if value is not None and expected in ("int", "int | None") and not _is_int(value):
            raise ConfigError(f"Config key '{name}.{key}' must be an integer")
        if (
            value is not None
            and expected in ("float",)
            and (isinstance(value, bool) or not isinstance(value, int | float))
        ):
            raise ConfigError(f"Config key '{name}.{key}' must be a number")
        if value is not None and expected == "bool" and not isinstance(value, bool):
            raise ConfigError(f"Config key '{name}.{key}' must be true or false")
        kwargs[target] = float(value) if expected == "float" else value
    return kind(**kwargs)


def unset_variables(path: Path) -> list[str]:
    """The ``$VAR`` / ``${VAR}`` names a config file uses that the environment does not set
    (``os.path.expandvars`` leaves them as they are, so an API key would read "$VAR")."""
    import re

    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError:
        return []
    names = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text)
    return sorted({name for name in names if name not in os.environ})
