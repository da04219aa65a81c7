"""Many writers and readers on one store in a bucket (a local moto server), as separate machines
would be: separate processes with separate homes and temp dirs.

Every write lands once (no duplicate URI or record id, no lost file), a writer killed while it
holds the lease delays the others by at most the lease's term, a reader in another process sees
a write within ``storage.read_consistency_seconds``, and never half of one. The server-level
form of the readers' test (two ``openviking serve`` on one bucket) waits for the server: here
each process has its own embedded client, which is what a server holds.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, make_tree, start_module, write_config
from s3server import MotoServer, S3Store, s3_config

pytestmark = pytest.mark.slow


def _writer_tree(root: Path, writer: int, files: int) -> Path:
    return make_tree(
        root / f"writer{writer}",
        {
            f"part{i // 25}/note{i:03d}.md": f"# Writer {writer} note {i}\n\nmarker{writer}x{i} from writer {writer}.\n"
            for i in range(files)
        },
    )


def _add(tmp_path: Path, s3: S3Store, source: Path, to: str, name: str) -> subprocess.Popen[str]:
    """``openviking add-resource SOURCE --to TO`` in a process of its own, as on another machine."""
    return start_module(["add-resource", source, "--to", to, "--config", s3.conf], env=_env(tmp_path, name))


def _finish(proc: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str, str]:
    with proc:
        out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _env(tmp_path: Path, name: str) -> dict[str, str]:
    home = tmp_path / f"home-{name}"
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "OPENVIKING_HOME": str(home / ".openviking"), "TMPDIR": str(home)}


def _client(s3: S3Store) -> Any:
    from openviking.embedded.client import OpenViking

    return OpenViking(config=s3.config())


def _census(client: Any) -> tuple[list[str], list[str]]:
    """Every node URI and every record id of the store, duplicates included."""
    store = client._open()
    store._look_for_writes()
    nodes = [row["uri"] for row in store.nodes_below(_root(), columns=["uri"])]
    records = [row["id"] for row in store.all_records(["id"])]
    return nodes, records


def _root() -> Any:
    from openviking.values.uri import VikingURI

    return VikingURI(())


def _duplicates(values: list[str]) -> list[str]:
    return [value for value, count in collections.Counter(values).items() if count > 1]


@pytest.mark.parametrize("run", [1, 2, 3])
def test_eight_writers_of_125_files_each_all_land_once(run: int, s3: S3Store, tmp_path: Path) -> None:
    trees = [_writer_tree(tmp_path / "sources", w, 125) for w in range(8)]
    procs = [_add(tmp_path, s3, tree, f"viking://resources/w{w}", f"w{w}") for w, tree in enumerate(trees)]
    for code, out, err in [_finish(proc) for proc in procs]:
        assert code == 0, err
        assert "Added 125" in out, out
    with _client(s3) as client:
        nodes, records = _census(client)
        assert _duplicates(nodes) == [] and _duplicates(records) == []
        files = [uri for uri in nodes if uri.endswith(".md")]
        assert len(files) == 1000
        for w in range(8):
            hits = client.find(f"marker{w}x7", target_uri=f"viking://resources/w{w}", mode="keyword", limit=3)
            assert hits.resources[0].uri == f"viking://resources/w{w}/part0/note007.md"


def test_four_writers_of_one_folder_to_one_target_leave_one_copy(s3: S3Store, tmp_path: Path) -> None:
    tree = _writer_tree(tmp_path / "sources", 0, 60)
    procs = [_add(tmp_path, s3, tree, "viking://resources/shared", f"s{i}") for i in range(4)]
    for code, _, err in [_finish(proc) for proc in procs]:
        assert code == 0, err
    with _client(s3) as client:
        nodes, records = _census(client)
        assert _duplicates(nodes) == [] and _duplicates(records) == []
        assert len([uri for uri in nodes if uri.endswith(".md")]) == 60
        assert client.add_resource(tree, to="viking://resources/shared").unchanged == 60


def _lease(s3: S3Store) -> dict[str, Any] | None:
    import obstore

    from openviking.store.locking import LEASE_KEY

    try:
        return dict(json.loads(bytes(obstore.get(_location(s3).object_store(), LEASE_KEY).bytes())))
    except FileNotFoundError:
        return None


def _location(s3: S3Store) -> Any:
    from openviking.store.objectstore import Location

    return Location(s3.url, dict(s3.config().storage.options))


def test_a_writer_killed_holding_the_lease_blocks_the_next_one_for_its_term_only(s3: S3Store, tmp_path: Path) -> None:
    big = _writer_tree(tmp_path / "sources", 1, 300)
    other = _writer_tree(tmp_path / "sources", 2, 20)
    killed = _add(tmp_path, s3, big, "viking://resources/big", "killed")
    deadline = time.monotonic() + 120
    while True:  # until the writer holds the lease
        lease = _lease(s3)
        if lease and lease["state"] == "held" and f":{killed.pid}:" in lease["holder"]:
            break
        assert killed.poll() is None and time.monotonic() < deadline, "the writer never held the lease"
        time.sleep(0.005)
    killed.send_signal(signal.SIGKILL)
    _finish(killed, 30)
    killed_at = time.monotonic()
    term = s3.config().storage.lease_seconds
    code, _, err = _finish(_add(tmp_path, s3, other, "viking://resources/other", "next"), 120)
    assert code == 0, err
    took = time.monotonic() - killed_at
    # Its own add takes a few seconds here; the dead holder's lease cost at most its term.
    assert took < term + 30, took
    code, _, err = _finish(_add(tmp_path, s3, big, "viking://resources/big", "again"), 300)
    assert code == 0, err
    with _client(s3) as client:
        nodes, records = _census(client)
        assert _duplicates(nodes) == [] and _duplicates(records) == []
        assert len([uri for uri in nodes if uri.startswith("viking://resources/big/") and uri.endswith(".md")]) == 300
        assert len([uri for uri in nodes if uri.startswith("viking://resources/other/") and uri.endswith(".md")]) == 20
        assert client.add_resource(big, to="viking://resources/big").unchanged == 300
        hit = client.find("marker1x299", target_uri="viking://resources/big", mode="keyword", limit=1)
        assert hit.resources[0].uri == "viking://resources/big/part11/note299.md"


def test_the_lease_is_exclusive_renewed_and_taken_over_when_its_holder_stops(s3: S3Store) -> None:
    from openviking.errors import UnavailableError
    from openviking.store.locking import Lease

    first, second = Lease(_location(s3), 2.0), Lease(_location(s3), 2.0)
    first.acquire()
    got: list[float] = []
    waiter = threading.Thread(target=lambda: (second.acquire(), got.append(time.monotonic())))
    waiter.start()
    time.sleep(3.0)  # longer than the term: the renewals keep it
    assert not got
    first.check()
    released = time.monotonic()
    first.release()
    waiter.join(timeout=10)
    assert got and got[0] - released < 1.5
    # The holder stops renewing (as a process that hangs would): taken over after the term.
    second._stop_renewing()
    stopped = time.monotonic()
    first.acquire()
    assert 2.0 <= time.monotonic() - stopped < 4.0
    with pytest.raises(UnavailableError, match="lost the store's write lease"):
        second.check()
    second.release()  # lost: releasing does not free the new holder's lease
    assert _lease(s3)["state"] == "held"
    first.release()
    assert _lease(s3)["state"] == "free"


READER = textwrap.dedent(
    """
    import json, sys, time
    from openviking.embedded.client import OpenViking
    from openviking.config import load_config

    client = OpenViking(config=load_config(sys.argv[1]))
    root, half, expected = "viking://resources/fresh", int(sys.argv[2]), int(sys.argv[3])
    deadline = time.time() + 240
    seen_first = seen_all = None
    checks, told = 0, False
    print("ready", flush=True)

    def files():
        entries = client.ls("viking://resources", recursive=True)
        return {e["uri"] for e in entries if not e["isDir"] and e["uri"].startswith(root)}

    while time.time() < deadline:
        listed = files()
        if listed or seen_first:
            # Records are found by their words as soon as they are written; their vectors follow.
            found = client.find(
                "writer note", target_uri=root, mode="keyword", level=2, limit=1000, score_threshold=-1
            )
            hits = {h.uri for h in found.resources if h.level == 2}
            after = files()
            without_records = sorted(listed - hits)  # a node whose records find does not see
            without_node = sorted(hits - after)  # a hit whose node is not there
            if without_records or without_node:
                print(json.dumps({"torn": True, "records": without_records[:3], "nodes": without_node[:3]}))
                sys.exit(1)
            checks += 1
        if listed and seen_first is None:
            seen_first = time.time()
        if len(listed) == half and not told:
            print("half", flush=True)  # the writer waits for this before its second add
            told = True
        if len(listed) == expected:
            seen_all = time.time()
            break
        time.sleep(0.05)
    print(json.dumps({"first": seen_first, "all": seen_all, "checks": checks}), flush=True)
    """
)


def test_a_write_through_one_process_is_seen_by_another_within_the_bound_and_never_torn(
    s3: S3Store, moto_server: MotoServer, tmp_path: Path
) -> None:
    from openviking.config import config_from_dict
    from openviking.embedded.client import OpenViking

    bound = 1.0
    conf = write_config(
        tmp_path / "reader.conf", s3_config(s3.url, moto_server.endpoint, read_consistency_seconds=bound)
    )
    # Two adds, the second only once the reader has checked the first: the reader is then sure to
    # look at a store holding part of what it waits for, however fast one add lands.
    first, second = (_writer_tree(tmp_path / "sources", w, 500) for w in (5, 6))
    with OpenViking(config=config_from_dict(s3_config(s3.url, moto_server.endpoint))) as writer:
        writer.add_resource(_writer_tree(tmp_path / "seed", 9, 3), to="viking://resources/seed")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(conf), "500", "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(REPO),
            env={**os.environ, **_env(tmp_path, "reader")},
        )
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        writer.add_resource(first, to="viking://resources/fresh/a")
        assert reader.stdout.readline().strip() == "half"
        writer.add_resource(second, to="viking://resources/fresh/b")
        done = time.time()
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, out + err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["all"] is not None, report
    assert report["all"] - done <= bound + 1.0, report  # the bound, plus one poll and one find
    assert report["checks"] > 1, report
