"""Snapshots: a store's state named, and any earlier state read back exactly (``as_of``).

Every write commits new versions of the tables it touches, and LanceDB can read any version
still kept. A snapshot is the version of every table at one moment, taken under the write lock
so that no write is half in it: a row of ``meta`` (``snapshot:<name>``, JSON of the versions and
their times) is what names it, and a LanceDB tag of the same name on each table marks those
versions for LanceDB's own tools. ``as_of`` takes a snapshot's name, a version of the store (the
nodes table's version: every change of the tree moves it, and the other tables are taken as they
were until the next one), or a time (each table as it was then).

Cleanup. A write ends with ``optimize``, which deletes versions older than ten minutes. While a
snapshot exists, no version of a table from the snapshot's on is deleted (:func:`cleanup_after`),
so a snapshot stays readable whatever is written after it, as do the versions between it and
now; a time or version older than every snapshot, and older than ten minutes, may be gone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from openviking.contract.forms import SNAPSHOT_NAME_FORM
from openviking.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from openviking.values.timefilter import format_iso8601, parse_iso_datetime, parse_time_range

from . import schema
from .tables import committed

if TYPE_CHECKING:
    from .lance import LanceStore

__all__ = [
    "NAME_PATTERN",
    "Pin",
    "check_name",
    "cleanup_after",
    "delete_snapshot",
    "list_snapshots",
    "resolve",
    "tag_snapshot",
]

KEY_PREFIX = "snapshot:"
# A name starts with a letter: a version of the store is digits, and a time starts with one.
# LanceDB's tags take letters, digits, '.', '-' and '_' (no '..', not ending in '.' or '.lock').
NAME_PATTERN = SNAPSHOT_NAME_FORM
_NAME = re.compile(NAME_PATTERN)
# Cleanup keeps this much before a snapshot's oldest version too: the versions' times and this
# machine's clock may differ a little (a bucket shared by several machines).
CLOCK_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Pin:
    """Where ``as_of`` points: each table's version (a table not named did not exist then),
    what it was called, and the store's version (the nodes table's)."""

    versions: dict[str, int]
    label: str
    version: int


def check_name(name: Any) -> str:
    """``name`` if it can name a snapshot.

    Raises:
        InvalidArgumentError: it is not a string of letters, digits, '.', '-' or '_' starting
            with a letter, of at most 64 characters, that LanceDB takes for a tag.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        shown = name if isinstance(name, str) and len(name) <= 80 else type(name).__name__
        raise InvalidArgumentError(
            f"A snapshot's name is a letter, then letters, digits, '.', '-' or '_' (64 at most, no '..', "
            f"not ending in '.' or '.lock'): got {shown!r}",
            hint="For example: openviking snapshot tag release-2026-12",
            details={"name": shown},
        )
    return name


def tag_snapshot(store: LanceStore, name: str) -> dict[str, Any]:
    """Name the store's state now ``name`` and return the snapshot.

    Raises:
        AlreadyExistsError: a snapshot has that name.
    """
    name = check_name(name)
    with store.write_lock():
        if _stored(store).get(name) is not None:
            raise AlreadyExistsError(
                f"A snapshot named {name} exists",
                hint=f"Pick another name, or delete it first: openviking snapshot delete {name}",
                details={"resource": name, "type": "snapshot"},
            )
        versions: dict[str, int] = {}
        times: dict[str, str] = {}
        for table_name in sorted(store.table_names()):
            table = store._table(table_name)
            version = int(store.run(lambda t=table: t.version))
            versions[table_name] = version
            times[table_name] = format_iso8601(_version_time(store, table, version))
        for table_name, version in versions.items():
            _retag(store, table_name, name, version)
        snapshot = {
            "name": name,
            "created_at": format_iso8601(datetime.now(UTC)),
            "version": versions.get(schema.NODES, 0),
            "tables": versions,
            "times": times,
        }
        store.set_meta({KEY_PREFIX + name: json.dumps(snapshot, sort_keys=True)})
    return _shown(snapshot)


def list_snapshots(store: LanceStore) -> list[dict[str, Any]]:
    """Every snapshot, oldest first."""
    return [_shown(s) for s in sorted(_stored(store).values(), key=lambda s: (s["created_at"], s["name"]))]


def delete_snapshot(store: LanceStore, name: str) -> dict[str, Any]:
    """Forget snapshot ``name``: its versions are cleaned up like any others from then on.

    Raises:
        NotFoundError: no snapshot has that name.
    """
    name = check_name(name)
    with store.write_lock():
        snapshot = _stored(store).get(name)
        if snapshot is None:
            raise _unknown(store, name)
        # The meta row first: it is what names the snapshot; a tag left by a kill after it
        # is dropped when the name is tagged again.
        store.delete_meta([KEY_PREFIX + name])
        for table_name in snapshot["tables"]:
            if store.has_table(table_name):
                _untag(store, table_name, name)
    return _shown(snapshot)


def resolve(store: LanceStore, as_of: str) -> Pin:
    """Where ``as_of`` points: a snapshot's name, a version of the store, or a time.

    Raises:
        NotFoundError: no snapshot of that name, no such version, one no longer kept, or a
            time before any version the store keeps.
        InvalidArgumentError: neither a name, a version nor a time.
    """
    text = as_of.strip()
    snapshot = _stored(store).get(text)
    if snapshot is not None:
        return Pin(dict(snapshot["tables"]), f"snapshot {text}", int(snapshot["version"]))
    if text.isdigit():
        return _at_version(store, int(text[:19]), text)
    if _NAME.fullmatch(text) and not text[0].isdigit():
        raise _unknown(store, text)
    try:
        bound = parse_time_range(until=text)
    except InvalidArgumentError:
        bound = None
    if bound is None or bound.lte is None:  # not a time, or nothing at all
        raise InvalidArgumentError(
            f"as_of {text[:80]!r} is not a snapshot, a version of the store or a time",
            hint="A snapshot's name (openviking snapshot list), a version (digits), or a time: 2h, 2026-12-01, "
            "2026-12-01T12:00:00Z",
            details={"as_of": text[:80]},
        )
    return _at_time(store, bound.lte, text)


def cleanup_after(store: LanceStore, table_name: str, default: timedelta) -> timedelta:
    """How old a version of table ``table_name`` must be for cleanup to delete it: ``default``,
    or, while snapshots exist, older than the oldest version of it any of them holds (less a
    margin for clocks)."""
    oldest = min(
        (parse_iso_datetime(s["times"][table_name]) for s in _stored(store).values() if table_name in s["times"]),
        default=None,
    )
    if oldest is None:
        return default
    return max(default, datetime.now(UTC) - oldest + CLOCK_MARGIN)


# ----------------------------------------------------------------------------- helpers
def _stored(store: LanceStore) -> dict[str, dict[str, Any]]:
    found = {}
    for key, value in store.meta().items():
        if key.startswith(KEY_PREFIX):
            found[key[len(KEY_PREFIX) :]] = json.loads(value)
    return found


def _shown(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": snapshot["name"],
        "created_at": snapshot["created_at"],
        "version": snapshot["version"],
        "tables": dict(snapshot["tables"]),
    }


def _unknown(store: LanceStore, name: str) -> NotFoundError:
    names = sorted(_stored(store))
    known = f"the snapshots are: {', '.join(names[:10])}" if names else "the store has no snapshot"
    return NotFoundError(
        f"No snapshot named {name}",
        hint=f"{known[0].upper()}{known[1:]} (openviking snapshot list)",
        details={"resource": name, "type": "snapshot"},
    )


def _versions(store: LanceStore, table_name: str) -> list[tuple[int, datetime]]:
    """The versions of a table still kept, with their times (UTC), oldest first."""
    table = store._table(table_name)
    # LanceDB gives each version's time as a naive local time.
    listed = store.run(table.list_versions)
    return sorted((int(v["version"]), v["timestamp"].astimezone(UTC)) for v in listed)


def _version_time(store: LanceStore, table: Any, version: int) -> datetime:
    for number, when in _versions(store, table.name):
        if number == version:
            return when
    return datetime.now(UTC)


def _at_version(store: LanceStore, version: int, label: str) -> Pin:
    kept = _versions(store, schema.NODES)
    made = next((when for number, when in kept if number == version), None)
    if made is None:
        span = f"it keeps versions {kept[0][0]} to {kept[-1][0]}" if kept else "it keeps none"
        raise NotFoundError(
            f"The store has no version {label}: {span}",
            hint="Old versions are kept only while a snapshot tag points at them (openviking snapshot list)",
            details={"resource": label, "type": "version"},
        )
    # The other tables as they were until the tree changed again: a write commits the nodes
    # table first and the records of the same files after it.
    following = next((when for number, when in kept if number > version), None)
    pin = _at_time(store, made, f"version {label}") if following is None else _before(store, following, label)
    return Pin({**pin.versions, schema.NODES: version}, pin.label, version)


def _before(store: LanceStore, moment: datetime, label: str) -> Pin:
    """Each table's last version made before ``moment``."""
    versions = {}
    for table_name in store.table_names():
        before = [number for number, when in _versions(store, table_name) if when < moment]
        if before:
            versions[table_name] = before[-1]
    return Pin(versions, f"version {label}", versions.get(schema.NODES, 0))


def _at_time(store: LanceStore, moment: datetime, label: str) -> Pin:
    nodes = [(number, when) for number, when in _versions(store, schema.NODES) if when <= moment]
    if not nodes:
        first = _versions(store, schema.NODES)
        oldest = format_iso8601(first[0][1]) if first else "none"
        raise NotFoundError(
            f"The store keeps no version as old as {format_iso8601(moment)} (as_of {label})",
            hint=f"Its oldest kept version is of {oldest}; name a later time, or a snapshot",
            details={"as_of": label, "oldest": oldest, "resource": label, "type": "version"},
        )
    versions = {}
    for table_name in store.table_names():
        before = [number for number, when in _versions(store, table_name) if when <= moment]
        if before:
            versions[table_name] = before[-1]
    return Pin(versions, f"the store as of {label}", nodes[-1][0])


def _retag(store: LanceStore, table_name: str, name: str, version: int) -> None:
    tags = store._table(table_name).tags
    if name in store.run(tags.list):
        store.run(lambda: tags.delete(name))  # left by a tag killed before its meta row
    store.run(lambda: tags.create(name, version))
    committed()


def _untag(store: LanceStore, table_name: str, name: str) -> None:
    tags = store._table(table_name).tags
    if name in store.run(tags.list):
        store.run(lambda: tags.delete(name))
        committed()
