"""Where an added resource or skill comes from, and the URI it gets.

Before anything is written: the local path must exist and hold text (not only binary or
ignored files, and not the store's own folder); ``--to``/``--parent`` name where it goes, in a
space the user may write; a skill's name comes from its ``SKILL.md`` front matter or its path,
and may not be another skill's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from openviking.documents.kinds import kind_of
from openviking.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    InvalidURIError,
    NotFoundError,
)
from openviking.system.ostext import utf8_text
from openviking.values.access import Access
from openviking.values.arguments import describe
from openviking.values.uri import VikingURI, parse

from .naming import KEPT_CHARS, SKILL_FILES, resource_name, sanitize_segment, skill_name
from .walk import WalkResult, looks_binary, unpack_nested, walk

if TYPE_CHECKING:
    from openviking.store.lance import LanceStore

__all__ = ["Sources", "check_placement"]


def check_placement(to: object, parent: object) -> None:
    """Refuse a ``to`` or ``parent`` that is not a string (an empty one means none), before an
    add or a watch reads anything.

    Raises:
        InvalidURIError: either is given and is not a string.
    """
    for value, name in ((to, "to"), (parent, "parent")):
        if value is not None and not isinstance(value, str):
            raise InvalidURIError(describe(value), f"{name} must be a string")


class Sources:
    """The rules for what ``user`` adds to the store at ``store_path``."""

    def __init__(self, user: str, store_path: str) -> None:
        self.user = user
        self.store_path = store_path
        self.access = Access(user)

    def _uri(self, text: str, field: str) -> VikingURI:
        return parse(text, user=self.user, field=field)

    def writable(self, uri: VikingURI) -> VikingURI:
        """``uri`` as the place of an added resource: a space the user may write, not the
        root; ``viking://user`` alone is the user's resources folder."""
        self.access.writable(uri)
        if uri.is_root:
            raise InvalidURIError(str(uri), "cannot add to the root; name a scope such as viking://resources")
        if uri.scope == "user" and uri.depth == 1:
            return VikingURI(("user", self.user, "resources"))
        return uri

    def target(
        self, source: Path, to: str | None, parent: str | None, store: Callable[[], LanceStore | None]
    ) -> VikingURI:
        """The URI ``source`` is added at: ``to`` exactly, a scope root under its own name,
        ``parent`` (a stored directory, or a layout folder) under its own name, else
        ``viking://resources/<name>``. ``store()`` opens the store, or is None before there is one.

        Raises:
            InvalidArgumentError: both ``to`` and ``parent``.
            NotFoundError: ``parent`` does not exist.
            FailedPreconditionError: ``parent`` is a file.
        """
        if to and parent:
            raise InvalidArgumentError("Use just one of --to or --parent", details={"to": to, "parent": parent})
        if to:
            target = self._uri(to, "to")
            if target.depth <= 1:  # a scope root is where the resource goes, not its name
                target = self.writable(target).join(resource_name(source))
            return self.writable(target)
        if parent:
            base = self.writable(self._uri(parent, "parent"))
            if base.depth > 1:
                opened = store()
                node = opened.get_node(str(base), columns=["uri", "is_dir"]) if opened is not None else None
                if node is None and base.is_container:  # a layout folder (a user's memories...), empty so far
                    node = {"is_dir": True}
                if node is None:
                    raise NotFoundError(
                        f"Parent not found: {base}",
                        hint="Create it first with mkdir, or give the exact target with to=",
                        details={"uri": str(base)},
                    )
                if not node["is_dir"]:
                    raise FailedPreconditionError(f"Parent is a file, not a directory: {base}")
            return base.join(resource_name(source))
        return VikingURI(("resources",)).join(resource_name(source))

    def walk_text(
        self, source: Path, include: Sequence[str], exclude: Sequence[str], unpack_into: Path | None = None
    ) -> WalkResult:
        """Walk ``source`` once (the archives inside it unpacked into ``unpack_into``, when given),
        and refuse it before anything is written when it holds no text and no document.

        Raises:
            InvalidArgumentError: it is the store's own folder, a binary file that is no document,
                or holds no text file or document.
        """
        store = None if "://" in self.store_path else Path(self.store_path).absolute()
        if store is not None and source.resolve().is_relative_to(store.resolve()):
            raise InvalidArgumentError(
                f"Cannot add {source}: it is the store's own folder ({store})",
                hint="Add the folder that holds your files; the store keeps its own data",
                details={"path": str(source), "store": str(store)},
            )
        walked = walk(source, include, exclude, store=store)
        if unpack_into is not None and source.is_dir():
            from openviking.origins.local import unpack_cap

            walked = unpack_nested(walked, unpack_into, unpack_cap())
        for item in walked.files:
            try:
                with open(item.path, "rb") as handle:
                    head = handle.read(8192)
            except OSError:
                continue
            if not looks_binary(head) or kind_of(item.path) is not None:
                return walked
        if source.is_file():
            if walked.skipped:
                raise InvalidArgumentError(
                    f"Cannot add {source}: {walked.skipped[0][1]}", details={"path": str(source)}
                )
            raise InvalidArgumentError(
                f"{source} is a binary file; only text and documents can be added",
                hint="Documents are PDF, Word, PowerPoint, Excel, OpenDocument, EPUB, RTF, HTML and notebooks",
                details={"path": str(source)},
            )
        skipped = len(walked.skipped) + len(walked.files)
        raise InvalidArgumentError(
            f"Nothing to add: {source} holds no text files or documents" + (f" ({skipped} skipped)" if skipped else ""),
            hint="Hidden files, .gitignore'd paths and binary files are left out; check include and exclude.",
            details={"path": str(source), "skipped": skipped},
        )

    def renamed_warning(self, source: Path, to: str | None, root: VikingURI) -> dict[str, str] | None:
        """The warning for a new resource whose URI name differs from its local name (a name
        made from a path keeps only the characters a URI segment may hold)."""
        if to and parse(to).depth > 1:  # ``to`` named it
            return None
        local = utf8_text(source.name or source.resolve().name)
        if local == root.name:
            return None
        return {
            "path": str(source),
            "warning": f"stored as {root}: a name made from a path keeps {KEPT_CHARS} (--to names it)",
        }

    # ------------------------------------------------------------------ skills
    def skill_folder(self, source: Path, name: str | None) -> VikingURI:
        """``viking://agent/skills/<name>``: ``name``, else SKILL.md's front matter, else the path's.

        Raises:
            InvalidArgumentError: a folder without SKILL.md, or an empty ``name``.
        """
        if source.is_dir() and not any((source / n).is_file() for n in SKILL_FILES):
            raise InvalidArgumentError(
                f"{source} holds no SKILL.md",
                hint="A skill is a folder with a SKILL.md (or a single markdown file)",
                details={"path": str(source)},
            )
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidArgumentError("A skill's name must not be empty", hint="Leave name out to use SKILL.md's")
        return VikingURI(("agent", "skills", sanitize_segment(name) if name else skill_name(source)))

    @staticmethod
    def not_another_skill(store: LanceStore, folder: VikingURI, source: PurePath) -> None:
        """A skill's name is taken by the skill added under it from another place: adding this
        one there would mix the two skills' files (re-adding the same source updates it, and so
        does an upload named only by a bare name, or a skill given as text).

        Raises:
            AlreadyExistsError: another source's skill holds the name.
        """
        label = utf8_text(str(source))
        if not source.is_absolute():
            return  # an upload known only by a bare name updates the skill, as upstream's server does
        for node in store.nodes_below(folder, columns=["source"], files_only=True, limit=50):
            known = str(node.get("source") or "")
            if known.startswith(os.sep) and known != label and not known.startswith(label + os.sep):
                raise AlreadyExistsError(
                    f"A skill named '{folder.name}' already exists, with files from elsewhere ({known})",
                    hint=f"Give this one another name with name=, or remove the other: rm('{folder}', recursive=True)",
                    details={"uri": str(folder), "source": label},
                )

    @staticmethod
    def renamed_skill_warning(folder: VikingURI, name: str | None) -> dict[str, str] | None:
        """The warning for a ``--name`` that had to be changed to make a URI segment."""
        if name is None or folder.name == name:
            return None
        return {"path": name, "warning": f"stored as {folder}: a skill's name keeps {KEPT_CHARS}"}
