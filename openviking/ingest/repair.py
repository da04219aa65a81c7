"""What a crash can leave in a store, found and mended (``doctor`` and ``doctor --repair``).

Every write is ordered so that a kill at any commit leaves a state that the same write run
again finishes (records before nodes when writing, nodes before records when deleting). What
such a kill leaves meanwhile, and what a damaged file leaves, is found here: a table missing
or unreadable, records without a node, a node without records, directory summaries out of
date, an interrupted reindex or move, a leftover records table or reindex marker. Each is a
:class:`Finding` with the sentence doctor prints; :func:`repair` mends them in an order in
which one repair's leftovers are the next one's input (a table restored to an older version
may leave records without nodes, which go; nodes without records, which are embedded again;
and summaries out of date, which are refreshed last).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openviking.store import schema
from openviking.values.uri import VikingURI, shell_word

from .limits import IngestLimits

if TYPE_CHECKING:
    from openviking.models.embedder import Embedder
    from openviking.store.lance import LanceStore

__all__ = ["Finding", "damaged_tables", "inspect", "repair", "restore_tables"]

# Shown by name up to this many; the rest are counted.
SHOWN = 3


@dataclass(slots=True)
class Finding:
    """One thing wrong with the store: its kind, what doctor says, and what it is about."""

    kind: str
    problem: str
    uris: tuple[str, ...] = ()
    detail: str = ""


def _named(uris: list[str]) -> str:
    shown = ", ".join(uris[:SHOWN])
    return shown + (f" and {len(uris) - SHOWN} more" if len(uris) > SHOWN else "")


def damaged_tables(problems: dict[str, str]) -> list[Finding]:
    """A finding for each table that cannot be read (``{table: why}``)."""
    return [
        Finding(
            "damaged_table",
            f"the store cannot be read (table {name}: {why}); openviking doctor --repair restores the "
            "table to its last readable version and says what that loses",
            detail=name,
        )
        for name, why in problems.items()
    ]


def restore_tables(store: LanceStore, findings: list[Finding]) -> list[str]:
    """Restore each damaged table to its newest readable version; a sentence for each."""
    said = []
    for finding in findings:
        if finding.kind != "damaged_table":
            continue
        done = store.restore_readable(finding.detail)
        before, after = done["rows_before"], done["rows_after"]
        lost = (
            f"{before - after} of its {before} rows lost" if before is not None and before >= after else "rows unknown"
        )
        if done["version"] == done["latest"]:
            what = f"table {done['table']}: its damaged newest manifest was set aside; version {done['version']} reads"
        else:
            what = f"table {done['table']}: restored to version {done['version']} of {done['latest']}"
        aside = f"; set aside: {', '.join(done['manifests_set_aside'])}" if done["manifests_set_aside"] else ""
        said.append(f"{what} ({lost}{aside})")
    return said


def inspect(store: LanceStore, embedder: Embedder, limits: IngestLimits) -> list[Finding]:
    """Everything a crash can leave in a readable store."""
    from .writes import interrupted_move

    findings: list[Finding] = []
    if not store.has_table(schema.META):
        findings.append(
            Finding(
                "missing_table",
                "the store has no meta table (a write was stopped as the store was made); "
                "openviking doctor --repair makes it",
                detail=schema.META,
            )
        )
    meta = store.meta()
    findings += _reindex_findings(store, embedder, meta)
    move = interrupted_move(store, meta)
    if move is not None:
        findings.append(
            Finding(
                "unfinished_move",
                f"a move from {move[0]} to {move[1]} was interrupted: until it is finished, both places may "
                "show; run the same mv again to finish it: "
                f"openviking mv {shell_word(move[0])} {shell_word(move[1])}",
                uris=(str(move[0]), str(move[1])),
            )
        )
        return findings  # the rest is the move's half-made state, which finishing it mends
    nodes = store.scan_nodes_below(VikingURI(()), ["uri", "is_dir", "depth"]).to_pylist()
    node_uris = {row["uri"] for row in nodes}
    record_uris = {row["uri"] for row in store.all_records(["uri"])}
    orphans = sorted(record_uris - node_uris)
    if orphans:
        findings.append(
            Finding(
                "records_without_nodes",
                f"{len(orphans)} URI(s) have records but no node ({_named(orphans)}): finds leave them out; "
                "openviking doctor --repair deletes them",
                uris=tuple(orphans),
            )
        )
    # Every node below a scope root has records (a file its chunks, a directory its L0/L1).
    bare = sorted(row["uri"] for row in nodes if row["depth"] >= 2 and row["uri"] not in record_uris)
    if bare:
        findings.append(
            Finding(
                "nodes_without_records",
                f"{len(bare)} node(s) have no records ({_named(bare)}): find cannot reach them; "
                "openviking doctor --repair embeds them again",
                uris=tuple(bare),
            )
        )
    stale = stale_directories(store, embedder, limits)
    if stale:
        findings.append(
            Finding(
                "stale_summaries",
                f"{len(stale)} directory summar{'y is' if len(stale) == 1 else 'ies are'} out of date "
                f"({_named(stale)}): a write was stopped before it refreshed them; "
                "openviking doctor --repair refreshes them",
                uris=tuple(stale),
            )
        )
    return findings


def stale_directories(store: LanceStore, embedder: Embedder, limits: IngestLimits) -> list[str]:
    """The directories whose summaries do not say what they hold now (or that hold files and
    have no node): what a refresh of the whole store would write."""
    from .directories import refresh_directories

    would: list[str] = []
    refresh_directories(store, embedder, VikingURI(()), tags=None, limits=_extractive(limits), dry_run=would)
    return sorted(set(would))


def _reindex_findings(store: LanceStore, embedder: Embedder, meta: dict[str, str]) -> list[Finding]:
    findings = []
    target, switching_to = meta.get("reindex_table") or "", meta.get("reindex_embedder") or ""
    if target:
        resumes = switching_to == embedder.identity
        findings.append(
            Finding(
                "pending_reindex",
                f"a reindex to {switching_to or 'another embedder'} was interrupted; "
                + (
                    "run openviking reindex (or openviking doctor --repair) to finish it"
                    if resumes
                    else f"configure {switching_to} and run openviking reindex to finish it, or run "
                    "openviking doctor --repair to drop it and keep the store's embedder"
                ),
                detail=target,
            )
        )
    elif store.has_marker():
        findings.append(
            Finding(
                "pending_reindex",
                "a reindex marker is left with no reindex under way; openviking doctor --repair removes it",
            )
        )
    leftovers = store.leftover_records_tables()
    if leftovers:
        findings.append(
            Finding(
                "leftover_table",
                f"records table(s) {', '.join(leftovers)} are left from a reindex and not in use; "
                "openviking doctor --repair drops them",
                detail=",".join(leftovers),
            )
        )
    return findings


def _extractive(limits: IngestLimits) -> IngestLimits:
    return IngestLimits(limits.abstract_max_chars, limits.overview_max_chars, None)


def repair(store: LanceStore, embedder: Embedder, limits: IngestLimits, findings: list[Finding]) -> list[str]:
    """Mend ``findings`` (of :func:`inspect`); a sentence for each thing done."""
    from openviking.ingest.reindex import abandon_switch, reindex

    from .directories import refresh_directories
    from .writes import move

    kinds = {finding.kind: finding for finding in findings}
    said: list[str] = []
    if "missing_table" in kinds:
        store.create_missing_tables()
        said.append("made the meta table")
    if "pending_reindex" in kinds:
        finding = kinds["pending_reindex"]
        if finding.detail and store.meta().get("reindex_embedder") == embedder.identity:
            done = reindex(store, embedder, limits=_extractive(limits))
            said.append(f"finished the reindex to {embedder.identity} ({done['files']} files)")
        else:
            dropped = abandon_switch(store)
            said.append(
                f"dropped the interrupted reindex to {dropped}" if dropped else "removed the leftover reindex marker"
            )
    if "leftover_table" in kinds:
        with store.write_lock():
            for name in store.leftover_records_tables():
                store.drop_table(name)
        said.append(f"dropped {kinds['leftover_table'].detail}")
    if "unfinished_move" in kinds:
        source, target = kinds["unfinished_move"].uris
        from openviking.values.uri import parse

        done_move = move(store, embedder, parse(source), parse(target), limits=_extractive(limits))
        said.append(f"finished the move from {source} to {target} ({done_move['moved']} nodes)")
        # What the move left half-made is mended now; the rest is looked at afresh.
        rest = [f for f in inspect(store, embedder, limits) if f.kind != "unfinished_move"]
        return said + repair(store, embedder, limits, rest)
    if "records_without_nodes" in kinds:
        uris = list(kinds["records_without_nodes"].uris)
        with store.write_lock():
            current = store.stored_uris(uris)  # a node may have been written since doctor looked
            store.delete_records_by_uri([uri for uri in uris if uri not in current])
        said.append(f"deleted the records of {len(uris)} URI(s) without a node")
    if "nodes_without_records" in kinds:
        said.append(_embed_again(store, embedder, limits, list(kinds["nodes_without_records"].uris)))
    with store.write_lock():
        stale = stale_directories(store, embedder, limits)
        if stale:
            refresh_directories(store, embedder, VikingURI(()), tags=None, limits=_extractive(limits), embed_now=True)
            said.append(f"refreshed {len(stale)} directory summar{'y' if len(stale) == 1 else 'ies'}")
    if said:
        store.optimize()
    return said


def _embed_again(store: LanceStore, embedder: Embedder, limits: IngestLimits, uris: list[str]) -> str:
    """Embed the files among ``uris`` from their stored content; refresh the directories."""
    from .directories import refresh_directories
    from .files import reembed_files
    from .reindex import FILE_COLUMNS
    from .rows import stored_uri

    with store.write_lock():
        nodes = store.nodes_by_uri(uris, columns=[*FILE_COLUMNS, "is_dir"])
        files = [node for node in nodes if not node["is_dir"]]
        if files:
            reembed_files(store, embedder, sorted(files, key=lambda n: n["uri"]), limits=_extractive(limits))
        for node in nodes:
            if node["is_dir"]:
                refresh_directories(
                    store, embedder, stored_uri(node["uri"]), tags=None, limits=_extractive(limits), force=True,
                    embed_now=True,
                )  # fmt: skip
    return f"embedded {len(files)} file(s) and {len(nodes) - len(files)} director(ies) again"
