"""VikingFS: the filesystem view of a store (ls, tree, read, abstract, overview, stat).

Directories carry their L0 and L1 as the hidden files ``.abstract.md`` and ``.overview.md``:
they can be read like any file and are listed only on request.
"""

from __future__ import annotations

from typing import Any

from openviking.contract.results import Entry, Stat
from openviking.errors import FailedPreconditionError, NotFoundError
from openviking.values.access import public_row
from openviking.values.arguments import whole_number
from openviking.values.timefilter import format_iso8601
from openviking.values.uri import SIDECAR_FILES, VikingURI, fixed_children, fixed_descendants, shell_word, sidecar_owner

from .lance import LanceStore
from .schema import NODE_LISTING_COLUMNS

__all__ = ["SIDECARS", "VikingFS", "check_line_range", "slice_lines", "tree_key"]

SIDECARS = SIDECAR_FILES


class VikingFS:
    """Read-side filesystem operations over one open store."""

    def __init__(self, store: LanceStore, user: str = "default") -> None:
        self.store = store
        self.user = user

    # ------------------------------------------------------------------ lookups
    def node(self, uri: VikingURI, columns: list[str] | None = None) -> dict[str, Any]:
        """The node at ``uri``; the root and the layout's fixed folders (scope roots, a
        user's memories...) are empty directories until something is stored in them.

        Raises:
            NotFoundError: nothing is stored at ``uri``.
        """
        row = None if uri.is_root else self.store.get_node(str(uri), columns=columns)
        if row is None and uri.is_container:
            return public_row(_empty_directory(uri))
        if row is None:
            raise NotFoundError(
                f"File not found: {uri}",
                hint=f"List what exists with: openviking ls {shell_word(uri.parent or 'viking://')}",
                details={"uri": str(uri), "type": "file"},
            )
        return row

    def read(self, uri: VikingURI, offset: int = 0, limit: int = -1) -> str:
        """A file's text (lines ``offset`` .. ``offset+limit``); a directory reads as its overview."""
        check_line_range(offset, limit)
        sidecar = SIDECARS.get(uri.name)
        if sidecar and uri.parent is not None:
            text = self._sidecar(uri.parent, sidecar)
        else:
            row = self.node(uri, columns=["uri", "is_dir", "content", "overview"])
            text = _overview_text(uri, row) if row["is_dir"] else row.get("content") or ""
        return slice_lines(text, offset, limit)

    def file_bytes(self, uri: VikingURI) -> bytes:
        """A file's bytes as they were added: a document's own (its PDF, its workbook), a text
        file's text as UTF-8.

        Raises:
            NotFoundError: nothing is stored at ``uri``.
            FailedPreconditionError: ``uri`` is a directory.
        """
        row = self.node(uri, columns=["uri", "is_dir", "content", "raw"])
        if row["is_dir"]:
            raise FailedPreconditionError(
                f"{uri} is a directory, which has no bytes", hint="Download a file below it", details={"uri": str(uri)}
            )
        if row.get("raw") is not None:
            return bytes(row["raw"])
        return str(row.get("content") or "").encode("utf-8")

    def abstract(self, uri: VikingURI) -> str:
        """A directory's L0, or a file's summary (a directory's sidecar file: its directory's)."""
        uri = sidecar_owner(uri)
        row = self.node(uri, columns=["uri", "is_dir", "abstract"])
        return row.get("abstract") or f"# {uri} [Directory abstract is not ready]"

    def overview(self, uri: VikingURI) -> str:
        """A directory's L1; a file (a directory's sidecar file too) falls back to its directory's."""
        uri = sidecar_owner(uri)
        row = self.node(uri, columns=["uri", "is_dir", "overview", "parent_uri"])
        if not row["is_dir"] and uri.parent is not None:
            return self.overview(uri.parent)
        return _overview_text(uri, row)

    def _sidecar(self, directory: VikingURI, column: str) -> str:
        row = self.node(directory, columns=["uri", "is_dir", column])
        if not row["is_dir"]:
            raise NotFoundError(f"File not found: {directory}/.{column}.md", details={"uri": str(directory)})
        return row.get(column) or ""

    # ------------------------------------------------------------------ listings
    def ls(
        self,
        uri: VikingURI,
        *,
        recursive: bool = False,
        show_hidden: bool = False,
        node_limit: int | None = None,
        abs_limit: int = 256,
    ) -> list[Entry]:
        """Entries of a directory (or the file itself), directories first, then by name."""
        if uri.name in SIDECARS and uri.parent is not None:  # a hidden file lists as itself, like any file
            owner = self.node(uri.parent, columns=[*NODE_LISTING_COLUMNS, "overview"])
            if owner["is_dir"]:
                return [entry for entry in self._sidecar_entries(owner) if entry.uri == str(uri)]
        columns = [*NODE_LISTING_COLUMNS, "overview"] if show_hidden else NODE_LISTING_COLUMNS
        row = self.node(uri, columns=columns)
        if not row["is_dir"]:
            return [self._entry(row, abs_limit)]
        if recursive:
            found = [r for r in self.store.nodes_below(uri, columns=columns) if r["uri"] != str(uri)]
        else:
            found = self.store.children_of(str(uri), columns=columns)
        rows = self._with_layout_folders(found, uri, None if recursive else 1)
        entries: list[Entry] = []
        if recursive:
            rows.sort(key=lambda r: _path_key(r["uri"]))
        else:
            rows.sort(key=lambda r: (not r["is_dir"], r["name"].lower(), r["name"]))
        for child in rows:
            entries.append(self._entry(child, abs_limit))
            if child["is_dir"] and show_hidden and recursive:  # a listing shows its own sidecars only
                entries.extend(self._sidecar_entries(child))
        if show_hidden and not uri.is_root:
            entries[0:0] = self._sidecar_entries(row)
        if node_limit is not None and node_limit > 0:
            entries = entries[:node_limit]
        return entries

    def tree(self, uri: VikingURI, *, level_limit: int = 3, node_limit: int | None = None) -> list[Entry]:
        """Depth-first listing below ``uri``, each directory before its children, ``level_limit`` deep."""
        row = self.node(uri, columns=NODE_LISTING_COLUMNS)
        if not row["is_dir"]:
            return [self._entry(row, 256, rel_path="")]  # the file is the tree's root: no path below it
        below = self.store.nodes_below(uri, NODE_LISTING_COLUMNS, max_depth=level_limit if level_limit > 0 else None)
        rows = [r for r in below if r["uri"] != str(uri)]
        rows = self._with_layout_folders(rows, uri, level_limit if level_limit > 0 else None)
        rows.sort(key=lambda r: tree_key(r["uri"], r["is_dir"]))
        entries = []
        for child in rows:
            rel = child["uri"][len(str(uri)) :].lstrip("/")
            entries.append(self._entry(child, 128, rel_path=rel))
        if node_limit is not None and node_limit > 0:
            entries = entries[:node_limit]
        return entries

    def _with_layout_folders(
        self, rows: list[dict[str, Any]], uri: VikingURI, depth: int | None
    ) -> list[dict[str, Any]]:
        """``rows`` and the layout's folders below ``uri`` (``depth`` levels) that are not stored:
        every listing shows them, as ``node`` reads them, stored or not."""
        stored = {r["uri"] for r in rows}
        layout = [_empty_directory(c) for c in fixed_descendants(uri, self.user, depth) if str(c) not in stored]
        return [public_row(r) for r in rows + layout]

    def stat(self, uri: VikingURI) -> Stat:
        """Everything known about one node, without its content."""
        if uri.name in SIDECARS and uri.parent is not None:
            text = self._sidecar(uri.parent, SIDECARS[uri.name])
            size = len(text.encode("utf-8"))
            return Stat(
                uri=str(uri), name=uri.name, is_dir=False, size=size, context_type=uri.context_type, kind="sidecar"
            )
        row = self.node(uri, columns=NODE_LISTING_COLUMNS)
        info = Stat(
            uri=str(uri),
            name=row.get("name") or "",
            is_dir=bool(row["is_dir"]),
            size=int(row.get("size") or 0),
            context_type=row.get("context_type") or uri.context_type,
            created_at=_iso(row.get("created_at")),
            updated_at=_iso(row.get("updated_at")),
            tags=list(row.get("tags") or []),
            abstract=row.get("abstract") or "",
        )
        if not uri.is_root:
            info.content_hash = row.get("content_hash") or ""
            info.source = row.get("source") or ""
            info.records = self.store.count_records(at=str(uri))
        if row["is_dir"]:
            children = self.store.count_children(str(uri))
            fixed = [str(child) for child in fixed_children(uri, self.user)]
            if fixed:  # the layout's folders count as children, as ls lists them, stored or not
                children += len(fixed) - len(self.store.stored_uris(fixed))
            info.children = children
        return info

    def _entry(self, row: dict[str, Any], abs_limit: int, rel_path: str | None = None) -> Entry:
        abstract = row.get("abstract") or ""
        if abs_limit and len(abstract) > abs_limit:
            abstract = abstract[:abs_limit] + "..."
        return Entry(
            uri=row["uri"],
            size=int(row.get("size") or 0),
            is_dir=bool(row["is_dir"]),
            mod_time=_iso(row.get("updated_at")),
            abstract=abstract,
            rel_path=rel_path,
        )

    def _sidecar_entries(self, row: dict[str, Any]) -> list[Entry]:
        return [
            Entry(
                uri=f"{row['uri']}/{name}",
                size=len((row.get(column) or "").encode("utf-8")),
                is_dir=False,
                mod_time=_iso(row.get("updated_at")),
                abstract="",
            )
            for name, column in SIDECARS.items()
        ]


def check_line_range(offset: int, limit: int) -> None:
    """``read``'s line window: ``offset`` >= 0, ``limit`` >= 0 or -1 for all, whole numbers."""
    whole_number(offset, "offset")
    whole_number(limit, "limit", minimum=-1)


def slice_lines(text: str, offset: int = 0, limit: int = -1) -> str:
    """Lines ``offset`` .. ``offset + limit`` of ``text`` (all from ``offset`` with -1)."""
    check_line_range(offset, limit)
    if offset == 0 and limit == -1:
        return text
    # Cut at "\n" only, as grep numbers lines and find's "lines A-B" count them (not at form feeds).
    lines = text.split("\n")
    ends = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return "".join(ends[offset : None if limit == -1 else offset + limit])


def _overview_text(uri: VikingURI, row: dict[str, Any]) -> str:
    """A directory's L1, or what says that it has none yet (a layout folder, an empty add)."""
    return row.get("overview") or f"# {uri}\n\n[Directory overview is not ready]"


def _empty_directory(uri: VikingURI) -> dict[str, Any]:
    parent = uri.parent
    return {
        "uri": str(uri),
        "name": uri.name,
        "is_dir": True,
        "size": 0,
        "abstract": "",
        "overview": "",
        "parent_uri": None if parent is None else str(parent),
        "context_type": uri.context_type,
        "tags": [],
        "created_at": None,
        "updated_at": None,
        "depth": uri.depth,
    }


def _iso(value: Any) -> str | None:
    return format_iso8601(value) if value is not None else None


def _path_key(uri: str) -> tuple[str, ...]:
    return tuple(uri[len("viking://") :].split("/"))


def tree_key(uri: str, is_dir: bool) -> tuple[tuple[int, str, str], ...]:
    """Depth-first order: path segment by segment, at each level directories first, then by
    name case-insensitively (then as written)."""
    parts = _path_key(uri)
    last = len(parts) - 1
    return tuple((0 if (is_dir or index < last) else 1, part.lower(), part) for index, part in enumerate(parts))
