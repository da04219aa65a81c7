"""Every write killed at every commit: the store opens, readers see nothing impossible, and the
same command run again ends where a run that was never killed does.

Each case builds a small store, runs its command once to the end (the clean run), and then, on
a fresh copy of the store for each k, runs it with ``OPENVIKING_FAULT_AFTER_COMMITS=k`` (the
process ends as kill -9 would right after its k-th commit) until a run is no longer killed:
so every commit the command makes is a kill point. At each one the store must open, each file
node must have its records, every hit of a find must have a node, and doctor must read the
store; the command run again must then leave the clean run's nodes, records (their vectors
too), summaries, relations and sessions, with no URI or id twice. A command run again that
answers with an error (mkdir of what the killed run made) makes no vectors: the next
``index`` does, and is run before the comparison.

The cases whose embedder is an OpenAI-compatible server started here count the texts it
embeds for the store: at every kill point, the killed run's and the run again's add up to
the clean run's, so no text is embedded twice however a write and its vectors are cut.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import HASH64_CONF, HASH_CONF, REPO, make_tree, write_config
from servers import ChatServer, Reply, StubServer, completion, random_embeddings

from openviking.store.tables import FAULT_AFTER_COMMITS, FAULT_EXIT_STATUS

SOURCE = {
    "a.md": "# Alpha\n\nAlpha is the first page. It links to beta.\n",
    "d1/b.md": "# Beta\n\nBeta lives in the first folder.\n",
    "d1/deep/e.md": "# Epsilon\n\nEpsilon is deeper down.\n",
    "d2/c.md": "# Gamma\n\nGamma lives in the second folder.\n",
}
SKILL = {"SKILL.md": "---\nname: brewing\ndescription: How to brew tea.\n---\n# Brewing\n\nBoil water, steep.\n"}
R = "viking://resources/src"
# Columns that hold when a row was written, not what it says: a killed run and the run after
# it write them later than the clean run did.
TIMES = {"created_at", "updated_at"}


# A step that makes a case's store, besides a command line: given the work folder, the store
# and the case's config file.
Step = Callable[[Path, Path, Path], None]


@dataclass
class Case:
    """A write to kill: how its store is made (with ``setup_conf``), the command, and what a
    finished run again may exit with."""

    name: str
    command: Sequence[str]
    setup: Sequence[Sequence[str] | Step] = ()
    conf: str = "hash"
    rerun_codes: tuple[int, ...] = (0,)
    source: dict[str, str] = field(default_factory=lambda: SOURCE)
    setup_conf: str = "hash"


def _add_later(work: Path, store: Path, conf: Path) -> None:
    """The source added as ``add_resource(wait=False)`` leaves it: every record waits for its vector."""
    from openviking import OpenViking
    from openviking.config import load_config

    with OpenViking(path=store, config=load_config(conf)) as client:
        assert client.add_resource(work / "src", wait=False).pending_vectors > 0


def _edit(work: Path, _store: Path, _conf: Path) -> None:
    (work / "src" / "a.md").write_text("# Alpha\n\nAlpha was rewritten, and is longer now.\n\nA second part.\n")
    (work / "src" / "d2" / "c.md").unlink()
    (work / "src" / "d1" / "new.md").write_text("# New\n\nA new page in the first folder.\n")


ADD = ["add-resource", "@src"]  # @: the case's work folder
# Enough one-chunk pages for several batches of vectors (vectors.BATCH_RECORDS).
PAGES = {f"p{i % 3}/page{i:03d}.md": f"# Page {i}\n\nPage {i} is about subject {i}.\n" for i in range(400)}
CASES = [
    Case("add-resource", ADD),
    Case("re-add with edits", ADD, setup=[ADD, _edit]),
    Case("add-memory", ["add-memory", "The user prefers green tea in the morning."], setup=[ADD]),
    Case("add-skill", ["add-skill", "@skill"], setup=[ADD]),
    Case("mkdir", ["mkdir", f"{R}/d3", "--description", "A third folder."], setup=[ADD], rerun_codes=(0, 1)),
    Case("rm -r", ["rm", "-r", f"{R}/d1"], setup=[ADD, ["link", f"{R}/a.md", f"{R}/d1/b.md", "--reason", "see"]]),
    Case("mv", ["mv", f"{R}/d1", "viking://resources/moved"], setup=[ADD, ["link", f"{R}/a.md", f"{R}/d1/b.md"]]),
    Case("link", ["link", f"{R}/a.md", f"{R}/d1/b.md", f"{R}/d2/c.md", "--reason", "related"], setup=[ADD]),
    Case("unlink", ["unlink", f"{R}/a.md", f"{R}/d1/b.md"], setup=[ADD, ["link", f"{R}/a.md", f"{R}/d1/b.md"]]),
    Case("session add-message", ["session", "add-message", "s1", "--role", "user", "--content", "hi"], setup=[ADD]),
    Case(
        "session delete",
        ["session", "delete", "s1"],
        setup=[ADD, ["session", "add-message", "s1", "--role", "user", "--content", "hi"]],
        rerun_codes=(0, 1),
    ),
    Case(
        "session commit",
        ["session", "commit", "s1"],
        setup=[
            ADD,
            ["session", "add-message", "s1", "--role", "user", "--content", "I'm vegetarian and I moved to Lisbon."],
            ["session", "add-message", "s1", "--role", "assistant", "--content", "Welcome to Lisbon!"],
            ["session", "add-message", "s1", "--role", "user", "--content", "Last Friday I went hiking."],
        ],
    ),
    Case(
        "session commit superseding a memory",  # the new memory written, then the old one removed
        ["session", "commit", "s2"],
        setup=[
            ["session", "add-message", "s1", "--role", "user", "--content", "We live in Berlin with our kids."],
            ["session", "commit", "s1"],
            [
                "session",
                "add-message",
                "s2",
                "--role",
                "user",
                "--content",
                "We moved from Berlin to Lisbon with our kids.",
            ],
        ],
    ),
    Case("reindex to another model", ["reindex"], setup=[ADD], conf="hash64"),
    Case("reindex in place", ["reindex"], setup=[ADD]),
    # Two folders are enough for the LLM's pass (each folder's summary is a commit of its own).
    Case("add with the LLM's summaries", ADD, conf="llm", source={k: SOURCE[k] for k in ("a.md", "d1/b.md")}),
    # The vectors made by a server that counts them, in the add itself and by index after one
    # that did not wait (what a background index or a server's indexer runs).
    Case("add-resource, vectors from a server", ADD, conf="served", setup_conf="served"),
    Case(
        "index after an add that did not wait",
        ["index"],
        setup=[_add_later],
        conf="served",
        setup_conf="served",
        source=PAGES,
    ),  # fmt: skip
]
# A message is not a write that can be made twice: killed, it is either there or not.
ONCE = {"session add-message"}


def summary_reply(request: Any) -> Reply:
    prompt = request.body["messages"][-1]["content"]
    name = prompt.split("Folder: ", 1)[-1].split()[0].rsplit("/", 1)[-1] if "Folder: " in prompt else "x"
    body = {"abstract": f"LLM abstract of {name}.", "overview": f"# {name}\n\nLLM overview of {name}."}
    return Reply(body=completion("```json\n" + json.dumps(body) + "\n```"))


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with ChatServer(summary_reply) as server:
        yield server


class Embeddings(StubServer):
    """An OpenAI-compatible embedding server (the same text, the same vector) that counts the
    texts it embeds for the store (queries apart)."""

    def __init__(self) -> None:
        super().__init__(random_embeddings(64))

    def passages(self) -> int:
        return sum(len(r.body["input"]) for r in self.posts("/embeddings") if r.body.get("input_type") == "passage")

    def conf(self) -> dict[str, Any]:
        dense = {
            "provider": "openai", "api_base": f"{self.url}/v1", "model": "stub", "dimension": 64,
            "query_param": "query", "document_param": "passage", "max_retries": 0,
        }  # fmt: skip
        return {"embedding": {"dense": dense}}


@pytest.fixture(scope="module")
def embeddings() -> Iterator[Embeddings]:
    with Embeddings() as server:
        yield server


def _confs(work: Path, chat: ChatServer, embeddings: Embeddings) -> dict[str, Path]:
    return {
        "hash": write_config(work / "hash.conf", HASH_CONF),
        "hash64": write_config(work / "hash64.conf", HASH64_CONF),
        "llm": write_config(work / "llm.conf", {**HASH_CONF, "vlm": {"model": "w", "api_base": chat.api_base}}),
        "served": write_config(work / "served.conf", embeddings.conf()),
    }


class Runner:
    """``openviking`` command lines, each in a process of its own forked from a warm one
    (``forkrunner.py``): a kill point costs a fork, not a second of imports."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "forkrunner.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(REPO),
        )
        self.runs = 0

    def run(self, argv: Sequence[str], env: dict[str, str], out: Path) -> subprocess.CompletedProcess[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.runs += 1
        request = {"argv": list(argv), "env": {**os.environ, **env}, "out": str(out)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        code = json.loads(self.process.stdout.readline())["code"]
        read = lambda suffix: Path(str(out) + suffix).read_text(errors="replace")  # noqa: E731
        return subprocess.CompletedProcess(argv, code, read(".out"), read(".err"))

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    started = Runner()
    try:
        yield started
    finally:
        started.close()


def ov(runner: Runner, work: Path, store: Path, conf: Path, argv: Sequence[str], fault: int | None = None) -> Any:
    env = {FAULT_AFTER_COMMITS: str(fault)} if fault else {FAULT_AFTER_COMMITS: ""}
    args = [f"{work}/{a[1:]}" if a.startswith("@") else a for a in argv]
    return runner.run([*args, "--store", str(store), "--config", str(conf)], env, work / "last")


# ----------------------------------------------------------------------------- what a store holds
def _rows(rows: list[dict[str, Any]], drop: set[str]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True, default=str) for r in rows)


def state(store_path: Path) -> dict[str, Any]:
    """Everything a store holds that a run decides (not when it ran), checked for duplicates."""
    from openviking.store import schema
    from openviking.store.lance import LanceStore
    from openviking.store.session_schema import MESSAGES, SESSIONS
    from openviking.values.uri import VikingURI

    with LanceStore.open(str(store_path)) as store:
        nodes = store.scan_nodes_below(VikingURI(()), schema.NODE_COLUMNS).to_pylist()
        records = store.all_records()
        uris = [n["uri"] for n in nodes]
        ids = [r["id"] for r in records]
        assert len(uris) == len(set(uris)), "a URI stored twice"
        assert len(ids) == len(set(ids)), "a record id stored twice"
        for record in records:
            if record["vector"] is not None:  # None: it waits for its vector
                record["vector"] = [round(float(x), 5) for x in record["vector"]]
        tables = sorted(store.table_names())
        meta = {k: v for k, v in store.meta().items() if v}
        return {
            "tables": tables,
            "meta": meta,
            "nodes": _rows(nodes, TIMES),
            "records": _rows(records, TIMES),
            "relations": _rows(store._query_rows(schema.RELATIONS), TIMES),
            "sessions": _rows(store._query_rows(SESSIONS), TIMES),
            "messages": _rows(store._query_rows(MESSAGES), {*TIMES, "id", "seq"}),
        }


def check_readers(store_path: Path, confs: dict[str, Path]) -> None:
    """What a reader meets at a kill point: a store that opens, no file node without its
    records, no hit of find without a node, and a doctor that reads every table."""
    from openviking import OpenViking
    from openviking.config import load_config
    from openviking.store.lance import LanceStore
    from openviking.values.uri import VikingURI

    with LanceStore.open(str(store_path)) as store:
        files = store.scan_nodes_below(VikingURI(()), ["uri"], files_only=True).column("uri").to_pylist()
        with_records = {r["uri"] for r in store.all_records(["uri"])}
        assert not [uri for uri in files if uri not in with_records], "a file node without its records"
        # A reader configured with the embedder the store is bound to at this point.
        bound = {"hash:v1-64": "hash64", "openai:stub": "served"}
        conf = confs[bound.get(store.meta().get("embedder") or "", "hash")]
    with OpenViking(path=store_path, config=load_config(conf)) as client:
        for query in ("alpha", "beta folder", "tea"):
            for hit in client.find(query, limit=50):
                assert client.stat(hit.uri) is not None
        report = client.doctor()
        assert report["store"]["readable"], report["problems"]


def run_case(case: Case, tmp: Path, chat: ChatServer, runner: Runner, embeddings: Embeddings) -> tuple[int, int]:
    """(kill points tried, converged) for ``case``; asserts at each."""
    work = tmp / "work"
    make_tree(work / "src", case.source)
    make_tree(work / "skill", SKILL)
    confs = _confs(work, chat, embeddings)
    base = tmp / "base"
    for step in case.setup:
        if callable(step):
            step(work, base, confs[case.setup_conf])
        else:
            done = ov(runner, work, base, confs[case.setup_conf], step)
            assert done.returncode == 0, done.stderr

    def fresh(name: str) -> Path:
        target = tmp / name
        if base.exists():
            shutil.copytree(base, target)
        return target

    conf = confs[case.conf]

    def embedded(run: Callable[[], Any]) -> tuple[Any, int]:
        before = embeddings.passages()
        return run(), embeddings.passages() - before

    clean_store = fresh("clean")
    clean, clean_embedded = embedded(lambda: ov(runner, work, clean_store, conf, case.command))
    assert clean.returncode == 0, clean.stderr
    expected = state(clean_store)
    assert case.conf != "served" or clean_embedded > 0
    before = state(base) if case.name in ONCE else None
    tried = converged = 0
    for k in range(1, 500):
        store = fresh(f"k{k}")
        killed, killed_embedded = embedded(lambda: ov(runner, work, store, conf, case.command, fault=k))  # noqa: B023
        if killed.returncode != FAULT_EXIT_STATUS:
            assert killed.returncode == 0, killed.stderr
            assert state(store) == expected  # the k-th commit was never reached: a clean run again
            shutil.rmtree(store)
            break
        tried += 1
        if store.exists() and (store / "nodes.lance").exists():
            check_readers(store, confs)
        if case.name in ONCE:
            assert state(store) in (before, expected) or _only_the_session_row(state(store), before, expected)
        else:
            again, again_embedded = embedded(lambda: ov(runner, work, store, conf, case.command))  # noqa: B023
            assert again.returncode in case.rerun_codes, f"k={k}: {again.stderr}"
            if again.returncode:  # an answer of an error makes no vectors: whoever embeds next does
                index, index_embedded = embedded(lambda: ov(runner, work, store, conf, ["index"]))  # noqa: B023
                assert index.returncode == 0, index.stderr
                again_embedded += index_embedded
            got = state(store)
            assert got == expected, f"{case.name}: killed at commit {k}, run again, differs: {_diff(got, expected)}"
            assert killed_embedded + again_embedded == clean_embedded, (
                f"{case.name}: killed at commit {k}: {killed_embedded} + {again_embedded} texts embedded, "
                f"{clean_embedded} in a clean run"
            )
        converged += 1
        shutil.rmtree(store)
    assert tried > 0, "the command made no commit"
    return tried, converged


def _diff(got: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in expected:
        if got[key] != expected[key]:
            extra = [row[:400] for row in got[key] if row not in expected[key]]
            missing = [row[:400] for row in expected[key] if row not in got[key]]
            out[key] = {"unexpected": extra[:3], "missing": missing[:3]}
    return out


def _only_the_session_row(got: dict[str, Any], before: Any, expected: Any) -> bool:
    # Killed between the session's row and its message: the session, without the message.
    return got["messages"] == before["messages"] and got["nodes"] == expected["nodes"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_write_killed_at_every_commit_converges(
    case: Case, tmp_path: Path, chat: ChatServer, runner: Runner, embeddings: Embeddings
) -> None:
    tried, converged = run_case(case, tmp_path, chat, runner, embeddings)
    assert converged == tried
