"""The server as a process: SIGTERM lets the request in flight finish and exits 0; reads run
in parallel with a writer, and nothing written is lost; a request the server did not expect
to fail is 500 INTERNAL with an id that its log holds with the traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from ovserver import ROOT_KEY, body_of, error_of, handbook_store, headers, keyed_config, process_server, thread_server
from servers import ChatServer, plan_json, slow

PLAN = plan_json(("docker deployment", "resource"), reasoning="the user deploys")


def test_sigterm_finishes_the_request_in_flight_then_exits_0(tmp_path: Path) -> None:
    # The planner LLM answers after 3 s: the search is in flight while the signal arrives.
    with ChatServer(slow(PLAN, 3.0)) as chat:
        raw = keyed_config()
        raw["query_planner"] = {"api_base": chat.api_base, "model": "planner", "timeout": 30, "max_retries": 0}
        with process_server(raw, handbook_store(tmp_path), tmp_path) as server:
            auth = headers(ROOT_KEY)
            body = {"role": "user", "content": "How do we ship the service?"}
            body_of(httpx.post(server.url + "/api/v1/sessions/s1/messages", json=body, headers=auth))
            answers: list[httpx.Response] = []

            def search() -> None:
                body = {"query": "ship it", "session_id": "s1"}
                answers.append(httpx.post(server.url + "/api/v1/search/search", json=body, headers=auth, timeout=60))

            searching = threading.Thread(target=search)
            searching.start()
            deadline = time.monotonic() + 30
            while not chat.posts("/chat/completions"):
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.05)
            server.proc.terminate()
            searching.join(timeout=60)
            assert server.proc.wait(timeout=60) == 0, server.log()
    result = body_of(answers[0])
    assert result["query_plan"]["reasoning"] == "the user deploys"
    assert "viking://resources/docs/deploy/docker.md" in [hit["uri"] for hit in result["resources"]]
    log = server.log()
    assert "Shutting down" in log and "POST /api/v1/search/search 200" in log
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health", timeout=5)


def test_reads_in_parallel_with_a_writer_lose_nothing(tmp_path: Path) -> None:
    with thread_server(keyed_config(), handbook_store(tmp_path)) as url:
        with httpx.Client(base_url=url, headers=headers(ROOT_KEY), timeout=120) as http:

            def read(n: int) -> int:
                done = 0
                for i in range(8):
                    if (n + i) % 3 == 0:
                        result = body_of(http.post("/api/v1/search/find", json={"query": "deploy docker"}))
                        assert result["resources"], result
                    elif (n + i) % 3 == 1:
                        body_of(http.post("/api/v1/search/grep", json={"uri": "viking://resources", "pattern": "key"}))
                    else:
                        body_of(http.get("/api/v1/fs/ls", params={"uri": "viking://resources/docs"}))
                    done += 1
                return done

            def write() -> list[str]:
                uris = []
                for i in range(12):
                    memory = body_of(http.post("/api/v1/memories", json={"text": f"fact number {i} about the user"}))
                    uris.append(memory["uri"])
                body_of(http.post("/api/v1/fs/mkdir", json={"uri": "viking://resources/made-while-reading"}))
                return uris

            with ThreadPoolExecutor(max_workers=7) as pool:
                readers = [pool.submit(read, n) for n in range(6)]
                writer = pool.submit(write)
                assert [r.result(timeout=300) for r in readers] == [8] * 6
                written = writer.result(timeout=300)
            assert len(set(written)) == 12
            stored = body_of(
                http.get("/api/v1/fs/ls", params={"uri": "viking://user/default/memories", "simple": "true"})
            )
            assert sorted(stored) == sorted(written)
            body_of(http.get("/api/v1/fs/stat", params={"uri": "viking://resources/made-while-reading"}))
            found = body_of(http.post("/api/v1/search/grep", json={"uri": "viking://user", "pattern": "fact number"}))
            assert found["count"] == 12


def test_an_unexpected_exception_is_500_with_an_id_and_the_traceback_only_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise ValueError("internal detail at /srv/secret/path")

    def with_a_broken_route(app: Any) -> None:
        app.add_api_route("/api/v1/broken", broken, methods=["GET"])

    with thread_server(keyed_config(), handbook_store(tmp_path), setup=with_a_broken_route) as url:
        with caplog.at_level(logging.INFO, logger="openviking.server"):
            response = httpx.get(url + "/api/v1/broken", headers=headers(ROOT_KEY))
            assert body_of(httpx.get(url + "/api/v1/fs/ls", headers=headers(ROOT_KEY)))  # still serving
    error = error_of(response, 500, "INTERNAL")
    request_id = error["details"]["request_id"]
    assert error == {
        "code": "INTERNAL",
        "message": f"Internal error (id {request_id})",
        "details": {"request_id": request_id},
    }
    assert response.headers["x-request-id"] == request_id
    assert "/srv/secret" not in response.text
    failed = [r for r in caplog.records if r.getMessage() == f"request {request_id} failed: GET /api/v1/broken"]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert "internal detail at /srv/secret/path" in caplog.text and "Traceback" in caplog.text


def test_a_store_damaged_under_the_server_is_412_with_the_repair_hint(tmp_path: Path) -> None:
    store = handbook_store(tmp_path)
    with process_server(keyed_config(), store, tmp_path) as server:
        auth = headers(ROOT_KEY)
        for table in store.glob("*.lance"):
            for data in (table / "data").glob("*"):
                data.write_bytes(b"not a lance file")
        response = httpx.get(server.url + "/api/v1/content/read", params={"uri": "viking://resources/docs/auth.md"},
                             headers=auth)  # fmt: skip
        error = error_of(response, 412, "FAILED_PRECONDITION")
        assert "doctor --repair" in error["hint"] and "Traceback" not in response.text
        request_id = response.headers["x-request-id"]
        assert httpx.get(server.url + "/health").status_code == 200
        assert server.stop() == 0
    assert request_id in server.log()
