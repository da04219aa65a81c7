"""The viking:// namespace as a user sees it: the store's files and folders, and sessions as folders.

Every read of the tree (read, abstract, overview, ls, tree, stat, grep, glob) and ``rm``
go through :class:`Namespace`, which asks the store's filesystem view for nodes and
:class:`~openviking.session.folders.SessionFolders` for sessions, and puts the two together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from openviking.contract.results import Entry, GlobResult, GrepResult, RemoveResult, Stat
from openviking.errors import FailedPreconditionError
from openviking.session.folders import SessionFolders, session_abstract, session_overview, stat_of
from openviking.session.sessions import SessionStore
from openviking.store.view import VikingFS, slice_lines
from openviking.values.access import Access
from openviking.values.uri import VikingURI, canonical, shell_word

if TYPE_CHECKING:
    from openviking.store.lance import LanceStore

__all__ = ["Namespace", "NodeRemoval"]

NodeRemoval = Callable[[VikingURI, bool, Callable[[RemoveResult], None]], RemoveResult]


class Namespace:
    """The files, folders and sessions one user sees in an open store (``access`` says
    whether other users' spaces are left out)."""

    def __init__(self, store: LanceStore, access: Access) -> None:
        user = access.user
        self.store = store
        self.user = user
        self.access = access
        self.fs = VikingFS(store, user)
        self.sessions = SessionStore(store, user)
        self.folders = SessionFolders(self.sessions)

    # ------------------------------------------------------------------ reading
    def read(self, target: VikingURI, offset: int, limit: int) -> str:
        """A file's lines; a directory's (a session's) overview."""
        session = self.folders.at(target)
        if session is None:
            return self.fs.read(target, offset, limit)
        return slice_lines(session_overview(session), offset, limit)

    def file_bytes(self, target: VikingURI) -> bytes:
        """A file's bytes as they were added (a hidden summary file: its text).

        Raises:
            FailedPreconditionError: a directory, or a session (a folder of messages).
        """
        if self.folders.at(target) is not None:
            raise FailedPreconditionError(
                f"{target} is a session, a folder of messages", hint=f"Read it: openviking read {shell_word(target)}"
            )
        if target.name in (".abstract.md", ".overview.md"):
            return self.fs.read(target).encode("utf-8")
        return self.fs.file_bytes(target)

    def abstract(self, target: VikingURI) -> str:
        """A directory's L0, a file's summary, a session's message count."""
        session = self.folders.at(target)
        return self.fs.abstract(target) if session is None else session_abstract(session)

    def overview(self, target: VikingURI) -> str:
        """A directory's L1 (a file's directory's), or a session's messages."""
        session = self.folders.at(target)
        return self.fs.overview(target) if session is None else session_overview(session)

    def ls(
        self,
        target: VikingURI,
        *,
        recursive: bool,
        show_hidden: bool,
        node_limit: int | None,
        abs_limit: int,
        offset: int = 0,
    ) -> list[Entry]:
        """A directory's entries, with the sessions where their URIs point (none inside a session)."""
        if self.folders.at(target) is not None:
            return []  # a session is a folder of messages, which 'openviking session show' reads
        entries = self.folders.with_entries(
            self.fs.ls(target, recursive=recursive, show_hidden=show_hidden, abs_limit=abs_limit),
            self.folders.entries_below(target, None if recursive else 1),
        )
        return _page([e for e in entries if not self.access.hides(e.uri)], offset, node_limit)

    def tree(
        self,
        target: VikingURI,
        *,
        level_limit: int,
        node_limit: int | None,
        offset: int = 0,
        directories_only: bool = False,
    ) -> list[Entry]:
        """Everything below ``target`` depth first, sessions included."""
        if self.folders.at(target) is not None:
            return []
        entries = self.fs.tree(target, level_limit=level_limit)
        sessions = self.folders.entries_below(target, level_limit or None)
        prefix = len(str(target)) if not target.is_root else len("viking://") - 1
        for entry in sessions:
            entry.rel_path = entry.uri[prefix:].lstrip("/")
        entries = [e for e in self.folders.with_entries(entries, sessions) if not self.access.hides(e.uri)]
        if directories_only:
            entries = [e for e in entries if e.is_dir]
        return _page(entries, offset, node_limit)

    def stat(self, target: VikingURI) -> Stat:
        """A node's metadata, or a session's; the sessions folder counts its sessions."""
        session = self.folders.at(target)
        if session is not None:
            return stat_of(session)
        info = self.fs.stat(target)
        if info.children is not None:
            info.children += self.folders.count_in(target)
            if target.segments == ("user",):  # as ls lists it: the other users' folders are not counted
                info.children -= len(self._hidden_below(target))
        return info

    # ------------------------------------------------------------------ searching the tree
    def grep(
        self, target: VikingURI, search: Callable[[Sequence[str]], GrepResult], *, count: bool, files: bool
    ) -> GrepResult:
        """``search(hidden folders)``'s matches, or none in a session (it holds messages, not
        files); the folders of users this one may not see are searched by no one."""
        if self.folders.at(target) is not None:
            return GrepResult(
                matches=None if count or files else [], counts=[] if count else None, files=[] if files else None
            )
        return search(self._hidden_below(target))

    def glob(
        self, target: VikingURI, search: Callable[[Sequence[str], int | None], GlobResult], node_limit: int | None
    ) -> GlobResult:
        """``search(session folders, limit)``: the sessions below ``target`` match like folders;
        what this user may not see is left out before the limit applies."""
        if self.folders.at(target) is not None:
            return GlobResult()
        if not self.access.isolated:
            return search(self.folders.uris_below(target), node_limit)
        found = [m for m in search(self.folders.uris_below(target), None).matches if not self.access.hides(m)]
        found = found[:node_limit] if node_limit else found
        return GlobResult(matches=found, count=len(found))

    def _hidden_below(self, target: VikingURI) -> list[str]:
        """The other users' folders below ``target`` that this user may not see."""
        users = VikingURI(("user",))
        if not self.access.isolated or not users.is_within(target):
            return []
        return [row["uri"] for row in self.store.children_of(str(users), ["uri"]) if self.access.hides(row["uri"])]

    def missing_targets(self, targets: Sequence[VikingURI], hits: Sequence[str] = ()) -> list[str]:
        """A warning for each find target that names nothing find can search; a target that
        holds one of ``hits`` exists, and is not looked up."""
        found = [canonical(uri) for uri in hits]
        named = [t for t in targets if not t.is_container and not any(uri.is_within(t) for uri in found)]
        if not named:
            return []
        stored = self.store.stored_uris([str(target) for target in named])
        warnings = []
        for target in named:
            if self.folders.names_a_session(target):
                warnings.append(
                    f"{target} is a session: find and search look in resources, memories and skills, not in "
                    f"sessions (search with its messages: openviking search QUERY --session-id {target.name})"
                )
            elif str(target) not in stored:
                warnings.append(
                    f"{target} does not exist, so nothing was searched there "
                    f"(see openviking ls {shell_word(target.parent or 'viking://')})"
                )
        return warnings

    # ------------------------------------------------------------------ removing
    def remove(self, target: VikingURI, recursive: bool, remove_nodes: NodeRemoval) -> RemoveResult:
        """Remove ``target``: a session as a folder goes (with ``recursive``), and a folder above
        the sessions takes them along. ``remove_nodes(target, recursive, also)`` removes what
        the store holds there and calls ``also(result)`` inside the same write."""
        session = self.folders.existing_at(target)
        if session is not None:
            if not recursive:
                raise FailedPreconditionError(
                    f"{target} is a session: remove it with -r (its messages go too)",
                    hint=f"openviking rm -r {target}",
                    details={"uri": str(target)},
                )
            return RemoveResult(uri=str(target), removed=1, session=self.sessions.delete(session.session_id))
        # the root and the scope roots are refused by remove_nodes, before anything goes
        sessions = self.folders.within(target)
        if sessions and not recursive:
            raise FailedPreconditionError(
                f"Cannot remove directory without --recursive: {target} (it holds {len(sessions)} session(s))",
                hint=f"openviking rm -r {shell_word(target)}",
                details={"uri": str(target)},
            )

        def take_the_sessions(result: RemoveResult) -> None:
            if sessions:  # ls lists them below their folder: they go with it
                for info in sessions:
                    self.sessions.delete(info.session_id)
                result.removed += len(sessions)
                result.sessions = len(sessions)

        return remove_nodes(target, recursive, take_the_sessions)


def _page(entries: list[Entry], offset: int, size: int | None) -> list[Entry]:
    """The entries from ``offset`` on, at most ``size`` of them (None or 0: all)."""
    return entries[offset : offset + size] if size else entries[offset:]
