"""OpenViking: the embedded client, over a store opened in this process.

It implements :class:`~openviking.contract.interface.OpenVikingClient` as a facade: each method
checks its arguments (before any store is opened or model loaded, so a bad one fails at
once) and hands the work to the module that owns it. What it keeps between calls (the
configuration, the open store, the embedder built once) is :class:`~openviking.embedded.parts.Embedded`'s.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from openviking.contract.evaluation import EvalResult
from openviking.contract.hits import FindResult
from openviking.contract.interface import MessageContent, ProgressCallback
from openviking.contract.results import (
    AddResult,
    CommitResult,
    ContextResult,
    DoctorReport,
    Entry,
    GlobResult,
    GrepResult,
    IndexResult,
    LinkResult,
    MemoryResult,
    MessageAdded,
    MkdirResult,
    MoveResult,
    ReindexResult,
    Relation,
    RemoveResult,
    SessionContext,
    SessionDeleted,
    SessionInfo,
    Snapshot,
    Stat,
    UnlinkResult,
    WatchDeleted,
    WatchInfo,
    WatchList,
    WatchReport,
    WriteResult,
)
from openviking.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from openviking.values.access import no_summary_names
from openviking.values.arguments import callback, describe, flag, optional_limit, optional_text, strings, whole_number
from openviking.values.tags import normalize_tags
from openviking.values.uri import VikingURI, shell_word, sidecar_owner

from .parts import Embedded

if TYPE_CHECKING:
    from openviking.contract.interface import Session
    from openviking.ingest.transaction import Vectors, Write
    from openviking.ingest.watching import Synced
    from openviking.models.embedder import Embedder
    from openviking.retrieve.request import FindArguments, FindRequest
    from openviking.store.lance import LanceStore

__all__ = ["OpenViking"]

TimeBound = str | datetime | date
Method = TypeVar("Method", bound=Callable[..., Any])


def readable_as_of(method: Method) -> Method:
    """``method`` taking ``as_of``: when one is given, the call runs on a client over the store
    as it was then (:meth:`Embedded._as_of`), with every other argument as it was passed. That
    store is looked up when the method first opens it, so the method checks its arguments (its
    URI too: ``target = self._uri(uri)``) before it calls ``_open`` or ``_namespace``."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def call(self: OpenViking, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        as_of = bound.arguments.pop("as_of", None)
        if as_of is None:
            return method(*bound.args, **bound.kwargs)
        return method(self._as_of(as_of), *bound.args[1:], **bound.kwargs)

    return call  # type: ignore[return-value]


class OpenViking(Embedded):
    """An embedded OpenViking over one LanceDB store (see :class:`~openviking.contract.interface.OpenVikingClient`).

    Args:
        path: the store directory; else ``OPENVIKING_STORE``, ``storage.workspace`` or
            ``~/.openviking/data``.
        config: an already loaded :class:`Config`, or ov.conf's content as a dict.
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

    # ------------------------------------------------------------------ retrieval
    @readable_as_of
    def find(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: Mapping[str, object] | str | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: int | str | Sequence[int | str] | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: Iterable[str] | str | None = None,
        include_provenance: bool = False,
        telemetry: bool | Mapping[str, bool] = False,
        *,
        mode: str | None = None,
        explain: bool = False,
        as_of: str | None = None,
    ) -> FindResult:
        """Search by meaning, without session context (see the interface)."""
        from openviking.retrieve.request import FindArguments, Telemetry
        from openviking.retrieve.retriever import find

        extras = Telemetry(telemetry, include_provenance, "search.find")
        explain = flag(explain, "explain")
        request = self._find_request(
            FindArguments(
                query=query,
                target_uri=target_uri,
                limit=limit,
                node_limit=node_limit,
                score_threshold=score_threshold,
                filter=filter,
                since=since,
                until=until,
                time_field=time_field,
                level=level,
                context_type=context_type,
                tags=tags,
                mode=mode,
            )
        )
        store, embedder = self._retrieval_backend(request)
        return extras.attach(self._said_missing_targets(request, find(store, embedder, request, explain=explain)))

    @readable_as_of
    def search(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session: Session | SessionInfo | str | None = None,
        session_id: str | None = None,
        limit: int = 10,
        node_limit: int | None = None,
        score_threshold: float | None = None,
        filter: Mapping[str, object] | str | None = None,  # noqa: A002 - upstream's name
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        time_field: str | None = None,
        level: int | str | Sequence[int | str] | None = None,
        context_type: str | Sequence[str] | None = None,
        tags: Iterable[str] | str | None = None,
        include_provenance: bool = False,
        telemetry: bool | Mapping[str, bool] = False,
        *,
        mode: str | None = None,
        explain: bool = False,
        as_of: str | None = None,
    ) -> FindResult:
        """Search with a session's context and LLM intent analysis (see the interface)."""
        from openviking.retrieve.planned import search
        from openviking.retrieve.request import FindArguments, Telemetry, session_id_of

        extras = Telemetry(telemetry, include_provenance, "search.search")
        explain = flag(explain, "explain")
        request = self._find_request(
            FindArguments(
                query=query,
                target_uri=target_uri,
                limit=limit,
                node_limit=node_limit,
                score_threshold=score_threshold,
                filter=filter,
                since=since,
                until=until,
                time_field=time_field,
                level=level,
                context_type=context_type,
                tags=tags,
                mode=mode,
            )
        )
        chosen = session_id_of(session, session_id)
        store, embedder = self._retrieval_backend(request)
        result = search(
            store, embedder, request, self.config, session_id=chosen, user=self.user, explain=explain, warn=self._warn
        )
        return extras.attach(self._said_missing_targets(request, result))

    def _find_request(self, arguments: FindArguments) -> FindRequest:
        """The checked request of a find's, search's or context's arguments, with the config's
        defaults."""
        from openviking.retrieve.request import find_request

        config = self.config
        request = find_request(
            arguments,
            user=self.user,
            default_threshold=config.rerank.threshold,
            default_mode=config.retrieval.mode,
            translate=config.retrieval.translate_queries,
        )
        window = request.scope.time_range
        if window is not None and window.empty:
            self._warn("since is later than until: nothing changed in that window, so nothing is found")
        return request

    def _retrieval_backend(self, request: FindRequest) -> tuple[LanceStore, Embedder | None]:
        """The store and the checked embedder a find needs (none in keyword mode)."""
        from openviking.ingest.transaction import check_embedder

        store = self._open()
        if request.mode == "keyword":
            return store, None
        embedder = self.embedder()
        check_embedder(store, embedder)
        return store, embedder

    def _said_missing_targets(self, request: FindRequest, result: FindResult) -> FindResult:
        """``result``, once a target that names nothing stored got its warning, as "no results"
        alone would not say why (a target with a hit in it exists, and is not looked up), with
        the count of the records in its scope that wait for their vectors, and with no relation
        to a place this user may not see."""
        from openviking.store.pending import count_pending

        for message in self._namespace().missing_targets(request.scope.targets, [hit.uri for hit in result]):
            self._warn(message)
        for hit in result:
            hit.relations = self._visible(hit.relations)
        result.pending_vectors = count_pending(self._open(), request.scope)
        return result

    def _visible(self, relations: list[Relation]) -> list[Relation]:
        """``relations`` less those to another user's space, for a user who may not see it: a
        link from a shared file to a private one would name it to everyone."""
        return [relation for relation in relations if not self._access.hides(relation.uri)]

    @readable_as_of
    def grep(
        self,
        uri: str,
        pattern: str,
        case_insensitive: bool = False,
        exclude_uri: str | Sequence[str] | None = None,
        node_limit: int | None = None,
        level_limit: int | None = 5,
        *,
        fixed_strings: bool = False,
        count: bool = False,
        files_with_matches: bool = False,
        spans: bool = False,
        as_of: str | None = None,
    ) -> GrepResult:
        """Regex search, line by line, over file content (see the interface)."""
        from openviking.retrieve.grep import check_arguments, excluded_uris, grep

        # Argument errors come before the store (and lancedb) is opened: they stay instant.
        check_arguments(
            pattern,
            case_insensitive=case_insensitive,
            fixed_strings=fixed_strings,
            node_limit=node_limit,
            level_limit=level_limit,
            count=count,
            files_with_matches=files_with_matches,
            spans=spans,
        )
        target = self._uri(uri)
        for item in excluded_uris(exclude_uri):
            self._uri(item, "exclude_uri")

        def search(hidden: Sequence[str]) -> GrepResult:
            excluded = [*excluded_uris(exclude_uri), *hidden]
            found = grep(
                self._open(), uri, pattern, user=self.user, case_insensitive=case_insensitive,
                exclude_uri=excluded or None, node_limit=node_limit, level_limit=level_limit,
                fixed_strings=fixed_strings, count=count, files_with_matches=files_with_matches, spans=spans,
            )  # fmt: skip
            return GrepResult.from_dict(found)

        return self._namespace().grep(target, search, count=count, files=files_with_matches)

    @readable_as_of
    def glob(
        self, pattern: str, uri: str = "viking://", node_limit: int | None = None, *, as_of: str | None = None
    ) -> GlobResult:
        """URIs whose path below ``uri`` matches a glob (see the interface)."""
        from openviking.retrieve.glob import compile_glob, glob

        optional_limit(node_limit, "node_limit")
        compile_glob(pattern)
        target = self._uri(uri)

        def search(sessions: Sequence[str], limit: int | None) -> GlobResult:
            found = glob(self._open(), pattern, uri, user=self.user, node_limit=limit, extra_folders=sessions)
            return GlobResult.from_dict(found)

        return self._namespace().glob(target, search, node_limit)

    # ------------------------------------------------------------------ reading
    @readable_as_of
    def read(self, uri: str, offset: int = 0, limit: int = -1, *, as_of: str | None = None) -> str:
        """A file's content (L2); a directory (a session too) reads as its overview."""
        from openviking.store.view import check_line_range

        check_line_range(offset, limit)
        target = self._uri(uri)
        return self._namespace().read(target, offset, limit)

    def download(self, uri: str) -> bytes:
        """A file's bytes as they were added."""
        return self._namespace().file_bytes(self._uri(uri))

    @readable_as_of
    def abstract(self, uri: str, *, as_of: str | None = None) -> str:
        """A directory's L0 abstract, or a file's summary."""
        target = self._uri(uri)
        return self._namespace().abstract(target)

    @readable_as_of
    def overview(self, uri: str, *, as_of: str | None = None) -> str:
        """A directory's L1 overview; a file falls back to its directory's; a session's lists its messages."""
        target = self._uri(uri)
        return self._namespace().overview(target)

    @readable_as_of
    def ls(
        self,
        uri: str = "viking://",
        *,
        recursive: bool = False,
        simple: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
        offset: int = 0,
        as_of: str | None = None,
    ) -> list[Entry] | list[str]:
        """The entries of a directory; URIs only with ``simple``."""
        optional_limit(node_limit, "node_limit")
        recursive, simple = flag(recursive, "recursive"), flag(simple, "simple")
        show_hidden = flag(show_hidden, "show_hidden")
        abs_limit = whole_number(abs_limit, "abs_limit")
        offset = whole_number(offset, "offset")
        target = self._uri(uri)
        entries = self._namespace().ls(
            target,
            recursive=recursive,
            show_hidden=show_hidden,
            node_limit=node_limit,
            abs_limit=abs_limit,
            offset=offset,
        )
        return [e.uri for e in entries] if simple else entries

    @readable_as_of
    def tree(
        self,
        uri: str = "viking://",
        *,
        level_limit: int = 3,
        node_limit: int | None = None,
        offset: int = 0,
        directories_only: bool = False,
        as_of: str | None = None,
    ) -> list[Entry]:
        """Everything below ``uri``, depth first, at most ``level_limit`` levels deep."""
        optional_limit(node_limit, "node_limit")
        level_limit = whole_number(
            level_limit, "level_limit", hint="Pass level_limit as a whole number; 0 means all levels"
        )
        offset = whole_number(offset, "offset")
        directories_only = flag(directories_only, "directories_only")
        target = self._uri(uri)
        return self._namespace().tree(
            target,
            level_limit=level_limit,
            node_limit=node_limit,
            offset=offset,
            directories_only=directories_only,
        )

    @readable_as_of
    def stat(self, uri: str, *, as_of: str | None = None) -> Stat:
        """Metadata of one file, directory or session."""
        target = self._uri(uri)
        return self._namespace().stat(target)

    def relations(self, uri: str) -> list[Relation]:
        """What ``uri`` was linked to, with the reasons."""
        from openviking.store.relations import links_from

        source = sidecar_owner(self._uri(uri))  # a level-0/1 hit's URI names its directory's links
        self._namespace().stat(source)  # NOT_FOUND for nothing there; a session has no links
        return self._visible(links_from(self._open(), str(source)))

    # ------------------------------------------------------------------ writing
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
        source_name: str | None = None,
        wait: bool = True,
    ) -> AddResult:
        """Mirror a file or folder (a URL, an archive) under a ``viking://`` URI and index it
        (see the interface)."""
        from openviking.ingest.pipeline import ingest_tree
        from openviking.ingest.sources import Sources, check_placement
        from openviking.origins.local import local_source

        check_placement(to, parent)
        tag_list = normalize_tags(tags)
        include, exclude = strings(include, "include"), strings(exclude, "exclude")
        progress = callback(progress, "progress")
        source_name = optional_text(source_name, "source_name")
        vectors = _vectors(flag(wait, "wait"))
        sources = Sources(self.user, self.store_path)
        with local_source(path, source_name) as local:
            source = local.path
            root = sources.target(source, to, parent, self._existing_store)
            walked = sources.walk_text(source, include, exclude, unpack_into=local.scratch)
            store = self._open(create=True)
            with self._writing(store, [root], vectors=vectors, progress=progress) as w:
                new = store.get_node(str(root), columns=["uri"]) is None
                result = ingest_tree(
                    store, w.embedder, source, root, tags=tag_list, limits=w.limits, progress=progress,
                    walked=walked, recorded_as=local.recorded_as,
                )  # fmt: skip
            _embedded(store, root, result, w)
            renamed = new and (result.added or result.directories) and local.temporary is None
            warning = sources.renamed_warning(source, to, root) if renamed else None
            if warning is not None:
                result.warnings.insert(0, warning)
        return self._said(result)

    def add_memory(
        self, text: str, category: str | None = None, *, tags: Iterable[str] | str | None = None
    ) -> MemoryResult:
        """Remember something about the user (see the interface)."""
        from openviking.ingest.memories import memory_uri
        from openviking.ingest.pipeline import write_document

        uri, name = memory_uri(text, category, self.user)
        wanted = None if tags is None else normalize_tags(tags)
        store = self._open(create=True)
        with self._writing(store, [uri]) as w:
            result = write_document(store, w.embedder, uri, text.strip() + "\n", tags=wanted, limits=w.limits)
        return MemoryResult(uri=str(uri), category=name, added=bool(result.added), tags_changed=bool(result.updated))

    def add_skill(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
        progress: ProgressCallback | None = None,
        source_name: str | None = None,
        wait: bool = True,
    ) -> AddResult:
        """Add an agent skill under ``viking://agent/skills/<name>`` (see the interface)."""
        from openviking.ingest.pipeline import ingest_tree
        from openviking.ingest.sources import Sources
        from openviking.origins.local import existing_path, recorded_source

        source = existing_path(path)
        name = optional_text(name, "name")
        source_name = optional_text(source_name, "source_name")
        progress = callback(progress, "progress")
        vectors = _vectors(flag(wait, "wait"))
        tag_list = normalize_tags(tags)
        sources = Sources(self.user, self.store_path)
        folder = sources.skill_folder(source, name)
        walked = sources.walk_text(source, (), ())
        root = folder.join("SKILL.md") if source.is_file() else folder
        store = self._open(create=True)
        with self._writing(store, [root], vectors=vectors, progress=progress) as w:
            recorded = recorded_source(source_name)
            sources.not_another_skill(store, folder, recorded or source)
            result = ingest_tree(
                store, w.embedder, source, root, tags=tag_list, limits=w.limits, progress=progress,
                walked=walked, recorded_as=recorded,
            )  # fmt: skip
        _embedded(store, root, result, w)
        warning = sources.renamed_skill_warning(folder, name) if result.added else None
        if warning is not None:
            result.warnings.insert(0, warning)
        return self._said(result)

    # ------------------------------------------------------------------ watched sources
    def watch(
        self,
        path: str | os.PathLike[str],
        to: str | None = None,
        parent: str | None = None,
        *,
        tags: Iterable[str] | str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        watch_interval: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> WatchInfo:
        """Add a local folder or file and keep it in step with its files (see the interface)."""
        from openviking.ingest.sources import Sources, check_placement
        from openviking.ingest.watching import Synced, new_watch, outcome
        from openviking.origins.local import watchable_path
        from openviking.store.watches import save_watch, watch_state, watch_states

        check_placement(to, parent)
        self._watches_are_the_roots()
        interval = _minutes(watch_interval, "watch_interval")
        tag_list = normalize_tags(tags)
        include, exclude = strings(include, "include"), strings(exclude, "exclude")
        source = watchable_path(path)
        root = Sources(self.user, self.store_path).target(source, to, parent, self._existing_store)
        existing = self._existing_store()
        if existing is not None:
            _refuse_another_watch(watch_states(existing), str(root), str(source))
        result = self.add_resource(
            source, str(root), tags=tag_list, include=include, exclude=exclude, progress=progress
        )
        store = self._open()
        state = new_watch(
            root, source, include=include, exclude=exclude, tags=tag_list, interval=interval,
            previous=watch_state(store, str(root)),
        )  # fmt: skip
        state.update(outcome(Synced(result)))
        save_watch(store, state)
        return self._watch_info(state)

    def list_watches(self, active_only: bool = False, to_uri: str | None = None) -> WatchList:
        """The watched sources, oldest first (see the interface)."""
        from openviking.store.watches import watch_states

        self._watches_are_the_roots()
        active_only = flag(active_only, "active_only")
        wanted = None if to_uri is None else str(self._uri(to_uri, "to_uri"))
        store = self._existing_store()
        states = watch_states(store) if store is not None else []
        infos = [
            self._watch_info(state)
            for state in states
            if (wanted is None or state["to_uri"] == wanted) and (state.get("is_active", True) or not active_only)
        ]
        if wanted is not None and not infos:
            raise NotFoundError(f"Watch not found: {wanted}", details={"resource": wanted, "type": "watch_task"})
        return WatchList(tasks=infos, total=len(infos))

    def update_watch(
        self, to_uri: str, *, watch_interval: float | None = None, is_active: bool | None = None
    ) -> WatchInfo:
        """Pause or resume a watch, or change its interval (see the interface)."""
        from openviking.store.watches import change_watch

        self._watches_are_the_roots()
        fields: dict[str, Any] = {}
        if watch_interval is not None:
            fields["watch_interval"] = _minutes(watch_interval, "watch_interval")
        if is_active is not None:
            fields["is_active"] = flag(is_active, "is_active")
        uri = self._watched(to_uri)
        state = change_watch(self._open(), uri, fields)
        if state is None:
            raise _not_watched(uri)
        return self._watch_info(state)

    def delete_watch(self, to_uri: str) -> WatchDeleted:
        """Stop watching a source (see the interface)."""
        from openviking.store.watches import forget_watch, watch_state

        self._watches_are_the_roots()
        uri = self._watched(to_uri)
        store = self._open()
        state = watch_state(store, uri)
        forget_watch(store, uri)
        return WatchDeleted(task_id=str((state or {}).get("task_id", "")), to_uri=uri)

    def trigger_watch(self, to_uri: str) -> WatchInfo:
        """Bring a watched source in step now, in full (see the interface)."""
        from openviking.store.watches import watch_state

        self._watches_are_the_roots()
        uri = self._watched(to_uri)
        state = watch_state(self._open(), uri)
        if state is None:
            raise _not_watched(uri)
        self._sync_watched(state, None)
        return self._watch_info(watch_state(self._open(), uri) or state)

    def keep_watching(
        self,
        to_uris: Sequence[str] = (),
        *,
        stop: threading.Event | None = None,
        report: Callable[[WatchReport], None] | None = None,
        vectors_by: Callable[[], None] | None = None,
    ) -> None:
        """Keep the watched sources of the store (``to_uris``: those only) in step until ``stop``
        is set (or, with ``to_uris``, until none of them is watched any more); ``report`` is told
        what happens (each sync with its counts, each error). Blocks: run it in a thread to watch
        in the background. A source another process watches is taken over when that one stops.
        Each sync commits the text, found at once; its vectors follow in a thread of the
        watcher's own, or are left to whoever ``vectors_by`` wakes (a server's indexer)."""
        import functools

        from openviking.ingest.transaction import LATER
        from openviking.ingest.watching import Watcher
        from openviking.store.watches import claim_watch, watch_states

        self._watches_are_the_roots()
        wanted = [str(self._watched(uri)) for uri in to_uris]
        store = self._open(create=True)
        Watcher(
            lambda: watch_states(store),
            functools.partial(self._sync_watched, vectors=LATER),
            lambda uri: claim_watch(self.store_path, uri),
            report or _logged,
            stop or threading.Event(),
            embed=self._embed_waiting,
            wake=vectors_by,
            only=wanted,
            store_dir=self._local_store_dir(),
        ).run()

    def _embed_waiting(self, progress: ProgressCallback) -> None:
        """Make the vectors that wait, unless another process makes them already (then it makes
        these too)."""
        from openviking.ingest.vectors import embed_pending

        embed_pending(self._open(), self.embedder(), wait=False, progress=progress)

    def _sync_watched(
        self, state: Mapping[str, Any], changed: Collection[Path] | None, vectors: Vectors = "if_free"
    ) -> Synced:
        """Bring one watched source in (in full, or the folder of ``changed``) and record how it
        went; its vectors made after it as ``vectors`` says."""
        from openviking.errors import OpenVikingError
        from openviking.ingest.watching import outcome, sync_source
        from openviking.store.watches import change_watch

        store = self._open()
        uri = state["to_uri"]
        try:
            with self._writing(store, vectors=vectors) as w:  # sync_source finishes, or refuses, an unfinished move
                synced = sync_source(
                    store, w.embedder, state, changed, limits=w.limits, store_dir=self._local_store_dir()
                )
        except OpenVikingError as exc:
            change_watch(store, uri, outcome(None, exc))
            raise
        self._said(synced.result)
        change_watch(store, uri, outcome(synced))
        return synced

    def _watch_info(self, state: Mapping[str, Any]) -> WatchInfo:
        from openviking.store.watches import watch_holder

        return WatchInfo.from_dict({**state, "watcher": watch_holder(self.store_path, state["to_uri"])})

    def _watched(self, to_uri: str) -> str:
        """``to_uri`` as stored, when it names a watched source."""
        from openviking.store.watches import watch_state

        uri = str(self._uri(to_uri, "to_uri"))
        store = self._existing_store()
        if store is None or watch_state(store, uri) is None:
            raise _not_watched(uri)
        return uri

    def _watches_are_the_roots(self) -> None:
        """Refuse watched sources to a client confined to its user's space: they read paths of
        the server's machine."""
        if self._isolated:
            raise PermissionDeniedError(
                "Only the root key may watch sources or list them: they are paths of the server's machine",
                hint="Ask whoever holds the root key",
                details={"user": self.user},
            )

    def _local_store_dir(self) -> Path | None:
        return None if "://" in self.store_path else Path(self.store_path).absolute()

    def write(self, uri: str, content: str, mode: str = "replace") -> WriteResult:
        """Write a file's text (replace, append or create), then index it again."""
        from openviking.ingest.writes import write_file

        target = self._access.writable(self._uri(uri), sessions="written with add_message")
        text = optional_text(content, "content")
        if text is None:
            raise InvalidArgumentError("content must be a string", details={"content": describe(content)})
        store = self._open(create=mode == "create")
        with self._writing(store, [target]) as w:
            return write_file(store, w.embedder, target, text, mode, limits=w.limits)

    def mkdir(self, uri: str, description: str | None = None) -> MkdirResult:
        """Create a directory (parents too); ``description`` becomes its L0 abstract."""
        from openviking.ingest.writes import make_directory

        description = optional_text(description, "description")
        target = self._access.writable(self._uri(uri))
        store = self._open(create=True)
        with self._writing(store, [target]) as w:
            return make_directory(store, w.embedder, target, description, limits=w.limits)

    def rm(self, uri: str, recursive: bool = False) -> RemoveResult:
        """Remove a file, or a directory with ``recursive``; its records and relations go too."""
        from openviking.ingest.writes import remove

        recursive = flag(recursive, "recursive")

        def remove_nodes(target: VikingURI, recursive: bool, also: Callable[[RemoveResult], None]) -> RemoveResult:
            store = self._open()
            with self._writing(store, [target]) as w:
                result = remove(store, w.embedder, target, recursive=recursive, limits=w.limits)
                also(result)
            return result

        return self._namespace().remove(self._uri(uri), recursive, remove_nodes)

    def mv(self, from_uri: str, to_uri: str) -> MoveResult:
        """Move a file or directory (records keep their vectors, relations follow)."""
        from openviking.ingest.writes import move

        source, target = self._uri(from_uri, "from_uri"), self._uri(to_uri, "to_uri")
        access = self._access
        for uri in (source, target):
            access.not_in_sessions(uri, "named by their id; they cannot be moved")
        access.not_in_another_space(target)
        no_summary_names(target)
        store = self._open()
        with self._writing(store) as w:  # move() deals with an unfinished move
            return move(store, w.embedder, source, target, limits=w.limits)

    def link(self, from_uri: str, uris: str | Sequence[str], reason: str = "") -> LinkResult:
        """Relate ``from_uri`` to one or more URIs, with a reason (every URI must exist)."""
        from openviking.store.relations import add_links

        reason = optional_text(reason, "reason") or ""
        source = self._uri(from_uri, "from_uri")
        listed: list[Any] = (
            [uris] if isinstance(uris, str) else list(uris) if isinstance(uris, list | tuple) else [uris]
        )
        targets = [self._uri(u, "to_uri") for u in listed]
        if not targets:
            raise InvalidArgumentError("link needs at least one target URI")
        fs = self._namespace().fs
        for uri in (source, *targets):
            fs.node(uri, columns=["uri"])  # NOT_FOUND for a URI that does not exist
        if source in targets:  # it would list itself among its own relations
            self._warn(f"{source} is not linked to itself: a URI's relations are other URIs")
            targets = [target for target in targets if target != source]
        added = add_links(self._open(), str(source), [str(t) for t in targets], reason) if targets else 0
        return LinkResult(from_uri=str(source), to=[str(t) for t in targets], reason=reason, linked=added)

    def unlink(self, from_uri: str, uri: str) -> UnlinkResult:
        """Remove the relation from ``from_uri`` to ``uri``."""
        from openviking.store.relations import remove_links

        source, target = self._uri(from_uri, "from_uri"), self._uri(uri, "to_uri")
        return UnlinkResult(
            from_uri=str(source), to=str(target), removed=remove_links(self._open(), str(source), str(target))
        )

    def reindex(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> ReindexResult:
        """Embed the store (or the files below ``uri``) again with the configured embedder."""
        from openviking.ingest.reindex import reindex
        from openviking.ingest.writes import refuse_while_a_move_is_unfinished

        root = None if uri is None or (isinstance(uri, str) and not uri) else self._uri(uri)
        progress = callback(progress, "progress")
        store = self._open()
        if root is not None and not root.is_container and str(root) not in store.stored_uris([str(root)]):
            raise NotFoundError(
                f"Nothing to reindex: {root} does not exist",
                hint=f"See what is there: openviking ls {shell_word(root.parent or 'viking://')}",
                details={"uri": str(root)},
            )
        refuse_while_a_move_is_unfinished(store, [root])
        with self._writing(store, guard=False) as w:  # it changes the binding itself
            return reindex(store, w.embedder, root, limits=w.limits, progress=progress)

    def index(self, uri: str | None = None, *, progress: ProgressCallback | None = None) -> IndexResult:
        """Make the vectors of the records that wait for them (below ``uri``; see the interface)."""
        from openviking.ingest.transaction import check_embedder
        from openviking.ingest.vectors import embed_pending
        from openviking.values.uri import VikingURI

        root = None if uri is None or (isinstance(uri, str) and not uri) else self._uri(uri)
        progress = callback(progress, "progress")
        if root is None:
            self._store_wide(
                "make the vectors of the whole store", "it holds every user's space", "Name a uri of your own"
            )
        shown = str(root or VikingURI(()))
        store = self._existing_store()
        if store is None:
            return IndexResult(uri=shown)
        embedder = self.embedder()
        check_embedder(store, embedder)
        done = embed_pending(store, embedder, below=root, progress=progress)
        return IndexResult(
            uri=shown,
            records_embedded=done.filled,
            texts_embedded=done.embedded,
            pending_vectors=done.pending,
            seconds=round(done.seconds, 3),
        )

    # ------------------------------------------------------------------ sessions
    def create_session(self, session_id: str | None = None) -> SessionInfo:
        """Start a session (an id is generated when none is given)."""
        from openviking.session.sessions import validate_session_id

        if session_id is not None:
            validate_session_id(session_id)  # before the store is created
        return self._sessions(create=True).create(session_id)

    def add_message(
        self, session_id: str, role: str, content: MessageContent, *, created_at: TimeBound | None = None
    ) -> MessageAdded:
        """Append a ``user``/``assistant`` message; creates the session."""
        from openviking.session.sessions import check_message, message_time

        check_message(session_id, role, content)  # bad input never creates a store
        said_at = message_time(created_at)
        return self._sessions(create=True).add_message(session_id, role, content, created_at=said_at)

    def get_session(self, session_id: str, auto_create: bool = False) -> SessionInfo:
        """A session with its messages (created first with ``auto_create``, when there is none)."""
        if flag(auto_create, "auto_create"):
            self._sessions(create=True).ensure(session_id)
        return self._sessions().get(session_id)

    def list_sessions(self) -> list[SessionInfo]:
        """Every session of the user, most recently changed first."""
        return self._sessions().all()

    def delete_session(self, session_id: str) -> SessionDeleted:
        """Delete a session and its messages."""
        return self._sessions().delete(session_id)

    def commit_session(self, session_id: str, keep_recent_count: int = 0, *, dry_run: bool = False) -> CommitResult:
        """Archive the session's new messages and keep what they say as memories (see the interface)."""
        from openviking.ingest.session_commit import commit_session
        from openviking.models.llm import make_chat
        from openviking.session.sessions import validate_session_id

        sid = validate_session_id(session_id)
        keep = whole_number(keep_recent_count, "keep_recent_count", maximum=10_000)
        dry_run = flag(dry_run, "dry_run")
        chat = make_chat(self.config.memory_model, purpose="memory extraction")
        store = self._open()
        self._sessions().commit_state(sid)  # a session that is not there is NOT_FOUND before any write
        if dry_run:  # no write: the embedder is only checked against the store's, never bound to it
            from openviking.ingest.transaction import check_embedder, limits_of

            embedder = self.embedder()
            if store.has_records:
                check_embedder(store, embedder)
            limits = limits_of(self.config, self._warn)
            return commit_session(store, embedder, self.user, sid, chat=chat, keep_recent_count=keep, dry_run=True,
                                  limits=limits)  # fmt: skip
        with self._writing(store, [VikingURI(("user", self.user, "history", sid))]) as w:
            return commit_session(store, w.embedder, self.user, sid, chat=chat, keep_recent_count=keep, limits=w.limits)

    def get_session_context(self, session_id: str, token_budget: int = 128_000) -> SessionContext:
        """The session's messages since its last commit, and its latest archive's overview, within
        a budget of tokens (see the interface)."""
        from openviking.retrieve.packing import session_context
        from openviking.session.sessions import validate_session_id

        sid = validate_session_id(session_id)
        budget = whole_number(token_budget, "token_budget", maximum=None)
        return session_context(self._open(), self.user, sid, budget)

    def context(
        self,
        query: str,
        target_uri: str | Sequence[str] = "",
        session_id: str | None = None,
        budget: int = 2000,
        limit: int = 20,
    ) -> ContextResult:
        """The best context for ``query`` within ``budget`` tokens (see the interface): the best
        ``RECORDS_PER_HIT x limit`` records, several of a file; with a session, the hits of its
        planned search (one a file)."""
        from openviking.retrieve.packing import RECORDS_PER_HIT, pack
        from openviking.retrieve.request import query_arguments
        from openviking.retrieve.retriever import record_hits

        budget = whole_number(budget, "budget", minimum=1, maximum=1_000_000)
        limit = whole_number(limit, "limit", minimum=1, maximum=200)
        if optional_text(session_id, "session_id"):
            found = self.search(query, target_uri=target_uri, session_id=session_id, limit=limit)
            packed = pack(self._open(), found, budget, ranked_by="search")
            packed.pending_vectors = found.pending_vectors
            return packed
        request = self._find_request(query_arguments(query, target_uri, limit * RECORDS_PER_HIT))
        store, embedder = self._retrieval_backend(request)
        hits = self._said_missing_targets(request, record_hits(store, embedder, request))
        packed = pack(store, hits, budget)
        packed.pending_vectors = hits.pending_vectors
        return packed

    def session(self, session_id: str | None = None) -> Session:
        """A :class:`~openviking.contract.interface.Session` handle, created when needed."""
        from openviking.contract.interface import Session
        from openviking.session.sessions import validate_session_id

        if session_id is not None:
            validate_session_id(session_id)
        info = self.create_session(session_id) if session_id is None else self._sessions(create=True).ensure(session_id)
        return Session(self, info.session_id)

    # ------------------------------------------------------------------ evaluation and snapshots
    @readable_as_of
    def evaluate(
        self,
        queries: Sequence[Mapping[str, Any]],
        k: int = 10,
        *,
        search: bool = False,
        session_id: str | None = None,
        as_of: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> EvalResult:
        """Each golden query through find (or search), scored (see the interface)."""
        from openviking.contract.evaluation import check_queries, run
        from openviking.values.uri import parse

        k = whole_number(k, "k", minimum=1, maximum=1000)
        search, progress = flag(search, "search"), callback(progress, "progress")
        checked = check_queries(queries, k)
        for index, query in enumerate(checked):
            # Another user's URI is refused whether it exists or not (a user key's golden file
            # would otherwise learn which of its guesses are stored).
            field = f"queries[{index}].relevant"
            query["relevant"] = {str(self._uri(uri, field)): grade for uri, grade in query["relevant"].items()}
        with_search = search or session_id is not None
        store = self._open()

        def ranked(query: dict[str, Any]) -> list[str]:
            options: dict[str, Any] = {
                "target_uri": query["uri"] or "", "limit": query["k"], "mode": query["mode"],
                "since": query["after"], "until": query["before"],
            }  # fmt: skip
            if with_search:
                found = self.search(query["query"], session_id=session_id, **options)
            else:
                found = self.find(query["query"], **options)
            return [str(sidecar_owner(parse(hit.uri))) for hit in sorted(found, key=lambda hit: -hit.score)]

        return run(
            checked, k, ranked, lambda uris: store.stored_uris(uris), warn=self._warn, progress=progress,
            searched_with="search" if with_search else "find", as_of=store.pinned_as or None,
        )  # fmt: skip

    def snapshot_tag(self, name: str) -> Snapshot:
        """Name the store's state now (see the interface)."""
        from openviking.store.snapshots import check_name, tag_snapshot

        check_name(name)
        self._store_wide("tag a snapshot")
        return Snapshot.from_dict(tag_snapshot(self._open(), name))

    def list_snapshots(self) -> list[Snapshot]:
        """Every snapshot of the store, oldest first."""
        from openviking.store.snapshots import list_snapshots

        snapshots = [Snapshot.from_dict(item) for item in list_snapshots(self._open())]
        if self._isolated:  # each table's version counts every user's writes: the root key's to know
            for snapshot in snapshots:
                snapshot.tables = {}
        return snapshots

    def delete_snapshot(self, name: str) -> Snapshot:
        """Forget a snapshot (see the interface)."""
        from openviking.store.snapshots import check_name, delete_snapshot

        check_name(name)
        self._store_wide("delete a snapshot")
        return Snapshot.from_dict(delete_snapshot(self._open(), name))

    def _store_wide(
        self,
        what: str,
        why: str = "a snapshot holds every user's space",
        hint: str = "Ask whoever holds the root key, or read as_of an existing snapshot",
    ) -> None:
        """Refuse a change of the whole store to a client confined to its user's space."""
        if self._isolated:
            raise PermissionDeniedError(f"Only the root key may {what}: {why}", hint=hint, details={"user": self.user})

    # ------------------------------------------------------------------ health
    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """What is installed and configured, what the store holds, and any problem found
        (with ``repair``, mended first: see the interface)."""
        from openviking.values.arguments import flag

        from .doctor import doctor

        repair = flag(repair, "repair")
        config = self.config
        report = doctor(config, self.embedder(), self.store_path, self._open, repair=repair)
        if report.repaired:
            self.close()  # tables were restored or replaced under the open handle
        if self._access.isolated:  # a server's user key: of the store, only the user's own space
            from openviking.values.uri import VikingURI

            from .doctor import for_one_user

            files = self._open().count_nodes(VikingURI(("user", self.user))) if report.store.get("readable") else 0
            return for_one_user(report, self.user, files)
        return report


def _vectors(wait: bool) -> Vectors:
    """When an add's vectors are made: before it returns, or later (``wait`` false)."""
    return "wait" if wait else "later"


def _embedded(store: LanceStore, root: VikingURI, result: AddResult, write: Write) -> None:
    """Count in ``result`` what the add's embedding phase made and how long it took, and what of
    its tree still waits."""
    from openviking.ingest.vectors import waiting

    if write.embedding is not None:
        result.records_embedded += write.embedding.embedded
        result.seconds += write.embedding.seconds
    result.pending_vectors = waiting(store, write.embedder, root)


def _minutes(value: object, name: str) -> float | None:
    """A watch interval in minutes: a number of at least 0 (0, like None: file events)."""
    import math

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidArgumentError(
            f"{name} must be a number of minutes, 0 or more (got {describe(value)})",
            hint="For example 0.5 (every 30 s), or 0 to follow file events",
            details={name: describe(value)},
        )
    return float(value) or None


def _not_watched(uri: str) -> NotFoundError:
    return NotFoundError(
        f"Watch not found: {uri}",
        hint="List the watched sources with list_watches()",
        details={"resource": uri, "type": "watch_task"},
    )


def _refuse_another_watch(states: list[dict[str, Any]], uri: str, path: str) -> None:
    """Refuse to watch ``path`` at ``uri`` when another path is watched there.

    Raises:
        AlreadyExistsError: it is.
    """
    for state in states:
        if state["to_uri"] == uri and state.get("path") != path:
            raise AlreadyExistsError(
                f"{uri} is watched from {state.get('path')}",
                hint=f"Stop that watch first: delete_watch('{uri}')",
                details={"resource": uri, "type": "watch_task", "path": state.get("path")},
            )


def _logged(report: WatchReport) -> None:
    import logging

    logging.getLogger("openviking.watch").info("%s: %s", report.uri, report.message)
