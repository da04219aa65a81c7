"""What an embedded client holds between calls: its configuration, its store, its embedder.

:class:`Embedded` makes each on first use (reads need an existing store, writes create it)
and hands the operations of :class:`~openviking.embedded.client.OpenViking` the parts they work with:
the open store, the user's namespace and sessions, the access rules, one write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Self

from openviking.config import Config, config_from_dict, load_config
from openviking.contract.results import AddResult
from openviking.contract.warn import WarningCallback, python_warning
from openviking.errors import InvalidArgumentError
from openviking.values.access import Access, check_user
from openviking.values.uri import VikingURI, parse

if TYPE_CHECKING:
    from openviking.contract.interface import ProgressCallback
    from openviking.ingest.transaction import Vectors, Write
    from openviking.models.embedder import Embedder
    from openviking.session.sessions import SessionStore
    from openviking.store.lance import LanceStore

    from .namespace import Namespace

__all__ = ["Embedded"]


class Embedded:
    """The parts of an embedded client, made on first use and kept between calls.

    Args:
        path: the store directory; else ``OPENVIKING_STORE``, ``storage.workspace`` or
            ``~/.openviking/data``.
        config: an already loaded :class:`Config`, or ov.conf's content as a dict.
        config_file: an ``ov.conf`` to read instead of the default one.
        warn: called with a one-line message when something degrades (never for errors);
            by default the message is an :class:`OpenVikingWarning` (Python's ``warnings``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        config: Config | Mapping[str, object] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        warn: WarningCallback | None = None,
    ) -> None:
        if isinstance(config, dict):  # ov.conf's content, as parsed JSON
            config = config_from_dict(config)
        if config is not None and not isinstance(config, Config):
            raise InvalidArgumentError(
                f"config must be a Config or a dict of ov.conf's keys (got {type(config).__name__})",
                hint="Or pass config_file='path/to/ov.conf'",
            )
        if config is not None:
            check_user(config.user)
        self._path_arg = path
        self._config = config
        self._config_file = config_file
        self._warn: WarningCallback = warn if warn is not None else python_warning
        self._store: LanceStore | None = None
        # Set on a client over the store as it was at a snapshot, a version or a time: the client
        # it was copied from and that moment, resolved when the store is first needed.
        self._pinned_from: tuple[Embedded, str] | None = None
        self._embedder: Embedder | None = None
        self._isolated = False

    # ------------------------------------------------------------------ lifecycle
    def initialize(self) -> None:
        """Load the configuration now (it is otherwise loaded on first use)."""
        _ = self.config

    @property
    def config(self) -> Config:
        """The configuration in effect."""
        if self._config is None:
            config = load_config(self._config_file)
            check_user(config.user)
            self._config = config
        return self._config

    @property
    def store_path(self) -> str:
        """Where the store lives."""
        return self.config.store_path(self._path_arg)

    @property
    def user(self) -> str:
        """The user whose space ``viking://~`` and ``viking://user/memories`` name."""
        return self.config.user

    def close(self) -> None:
        """Release the store handle, and the embedder's connections to its server (made again if
        it is used after)."""
        if self._store is not None:
            self._store.close()
            self._store = None
        disconnect = getattr(self._embedder, "close", None)
        if disconnect is not None:
            disconnect()

    def __enter__(self) -> Self:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def as_user(self, user: str, *, isolated: bool = False) -> Self:
        """A client for ``user`` over this one's store and embedder (a server answers many
        users from one open store and one loaded model). ``isolated``: ``user`` may not read
        other users' spaces either, and listings leave them out.

        Raises:
            ConfigError: ``user`` is not a valid user id.
        """
        import dataclasses

        check_user(user)
        other = type(self)(self._path_arg, config=dataclasses.replace(self.config, user=user), warn=self._warn)
        other._store = self._open(create=True)
        other._embedder = self.embedder()
        other._isolated = isolated
        return other

    @property
    def _access(self) -> Access:
        return Access(self.user, isolated=self._isolated)

    def embedder(self) -> Embedder:
        """The configured embedder (built once)."""
        if self._embedder is None:
            from openviking.models.embedder import make_embedder

            self._embedder = make_embedder(self.config.embedding, warn=self._warn)
        return self._embedder

    # ------------------------------------------------------------------ the parts, opened lazily
    def _open(self, *, create: bool = False) -> LanceStore:
        if self._store is None and self._pinned_from is not None:
            current, as_of = self._pinned_from
            self._store = current._open().at(as_of)
        if self._store is None:
            from openviking.store.lance import LanceStore

            self._store = LanceStore.open(self.store_path, create=create, storage=self.config.storage)
        return self._store

    def _existing_store(self) -> LanceStore | None:
        if self._store is None and self._pinned_from is not None:
            return self._open()
        if self._store is None:
            from openviking.store.lance import LanceStore

            self._store = LanceStore.open_existing(self.store_path, storage=self.config.storage)
        return self._store

    def _as_of(self, as_of: object) -> Self:
        """A client like this one over the store as it was at ``as_of`` (read-only). The moment is
        looked up when the call first needs the store, after it has checked its arguments.

        Raises:
            InvalidArgumentError: ``as_of`` is not a string naming a snapshot, a version or a time.
            NotFoundError: no store, or nothing kept of it at ``as_of``.
        """
        import copy

        from openviking.values.arguments import optional_text

        text = (optional_text(as_of, "as_of") or "").strip()
        if not text:
            raise InvalidArgumentError(
                "as_of is empty", hint="Name a snapshot, a version of the store or a time", details={"as_of": as_of}
            )
        pinned = copy.copy(self)
        pinned._store = None
        pinned._pinned_from = (self, text)
        return pinned

    def _namespace(self) -> Namespace:
        from .namespace import Namespace

        return Namespace(self._open(), self._access)

    def _sessions(self, *, create: bool = False) -> SessionStore:
        from openviking.session.sessions import SessionStore

        return SessionStore(self._open(create=create), self.user)

    def _uri(self, text: str, field: str = "uri") -> VikingURI:
        return self._access.reachable(parse(text, user=self.user, field=field))

    @contextmanager
    def _writing(
        self,
        store: LanceStore,
        touching: Sequence[VikingURI | None] = (),
        *,
        guard: bool = True,
        vectors: Vectors = "if_free",
        progress: ProgressCallback | None = None,
    ) -> Iterator[Write]:
        """One write of ``store``, its vectors made after it as ``vectors`` says (see
        :mod:`openviking.ingest.transaction`)."""
        from openviking.ingest.transaction import limits_of, writing

        limits = limits_of(self.config, self._warn)
        with writing(
            store, self.embedder(), limits, self._warn, touching, guard=guard, vectors=vectors, progress=progress
        ) as w:
            yield w

    def _said(self, result: AddResult) -> AddResult:
        """Each file's caveat (not UTF-8, renamed) through the warning channel, and kept in
        ``result.warnings``."""
        for item in result.warnings:
            self._warn(f"{item['path']}: {item['warning']}")
        return result
