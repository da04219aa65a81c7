"""What a command's process spends before it answers: lancedb's import, the threads a query
embeds on, numpy's BLAS threads. The figures are the benchmark's (bench/README.md, "Per call");
these tests hold the behaviour each cut keeps, in fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO


def run_python(code: str, **env: str) -> list[str]:
    """The lines ``code`` prints in a fresh interpreter (which must exit 0)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(REPO),
        env={**environment, **env},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_lancedb_loads_without_the_models_lance_namespace_only_reexports() -> None:
    code = """
import sys
from openviking.store._fastimport import import_lancedb
lancedb = import_lancedb()
print(sum(name.startswith("lance_namespace_urllib3_client.models.") for name in sys.modules))
import lance_namespace
from lance_namespace_urllib3_client.models.list_namespaces_request import ListNamespacesRequest
print(lance_namespace.ListNamespacesRequest is ListNamespacesRequest)
print(lance_namespace.CreateEmptyTableRequest is lance_namespace.CreateTableRequest)
print(all(getattr(lance_namespace, name) is not None for name in lance_namespace.__all__))
print(sys.modules["lancedb"] is lancedb and lancedb.connect is not None)
"""
    built, same_class, alias, every_name, module = run_python(code)
    # Imported as usual, lance_namespace builds every one of its 140-odd model classes.
    assert int(built) < 40
    assert same_class == alias == every_name == module == "True"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="lancedb uses typing.override from Python 3.12 on")
def test_lancedb_methods_are_marked_as_overrides_unchecked_and_overrides_checks_again_after() -> None:
    code = """
import sys, overrides
checking = sys.modules["overrides.overrides"]
scans = []
scan = checking._get_base_class_names
def counted(frame):
    scans.append(frame)
    return scan(frame)
checking._get_base_class_names = counted
from openviking.store._fastimport import import_lancedb
lancedb = import_lancedb()
print(len(scans))
print(overrides.override is checking.override)
print(lancedb.db.LanceDBConnection.list_namespaces.__override__)
class Base:
    pass
try:
    class Derived(Base):
        @overrides.override
        def nowhere_above(self): ...
except TypeError:
    print("checked")
"""
    scans, restored, marked, checked = run_python(code)
    assert scans == "0"  # imported as usual: about 100 scans of a class body's bytecode
    assert restored == marked == "True"
    assert checked == "checked"


@pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
    reason="counts a Linux process's threads, on 2 cores or more",
)
def test_a_query_embeds_on_its_own_thread_and_passages_still_on_every_core() -> None:
    code = """
import os
from openviking.models.embedder import LocalE5Embedder
def threads():
    return len(os.listdir("/proc/self/task"))
embedder = LocalE5Embedder()
engine = embedder._engine()
before = threads()
vector = embedder.embed_query("how do I authenticate users")
after_query = threads()
embedder.embed_documents(["a passage about keys", "another about tokens"] * 4)
after_passages = threads()
print(before, after_query, after_passages)
print(bool((vector == engine.query("how do I authenticate users")).all()))
"""
    counts, same_vector = run_python(code, OPENBLAS_NUM_THREADS="1")
    before, after_query, after_passages = map(int, counts.split())
    assert after_query == before  # no OpenMP thread started for a query
    assert after_passages > before  # a batch of passages still shares the cores
    assert same_vector == "True"  # the same vector as on every core, to the bit


def test_a_command_keeps_numpy_to_one_blas_thread_unless_told_otherwise() -> None:
    code = """
import atexit, os, sys
from openviking_cli.main import console
atexit.register(lambda: print(os.environ.get("OPENBLAS_NUM_THREADS")))
sys.argv = ["openviking", "--version"]
console()
"""
    assert run_python(code)[-1] == "1"
    assert run_python(code, OPENBLAS_NUM_THREADS="3")[-1] == "3"
