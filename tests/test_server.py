"""The recall server: a real index and model in tmp_path, real sockets on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import stat
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_md.core.config import RecallConfig
from engram_md.core.errors import ConfigError, RecallServerError
from engram_md.index.table import IndexRow, MemoryIndex
from engram_md.recall.recaller import Recaller
from engram_md.recall.result import RecallResult
from engram_md.recall.server import (
    MAX_BODY_BYTES,
    Endpoint,
    RecallClient,
    RecallServer,
    find_daemon,
    loopback_host,
)
from engram_md.recall.wire import DEFAULT_OPTIONS, RecallAnswer, RecallOptions
from engram_md.store.access import AccessLog
from engram_md.text.embeddings import LocalMiniLM, l2_normalize

from .rows import index_row

T0 = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)

FACTS = {
    "f-uv": ("preference", "Dana wants shell commands to use uv instead of pip"),
    "f-db": ("decision", "The team decided to move the billing service to PostgreSQL"),
    "f-tea": ("fact", "Priya drinks green tea every morning before standup"),
    "f-trip": ("moment", "Dana went hiking in the Dolomites with her brother in June"),
    "f-tz": ("fact", "Dana lives in Lisbon and works on Central European Time"),
    "f-ci": ("decision", "CI runs the full test suite on every pull request"),
}
QUERIES = [
    "which package manager does Dana use",
    "what database will billing use",
    "what does Priya drink",
    "where did Dana go hiking",
    "Dana's time zone",
]


def row(id: str, content: str, category: str = "fact", **changes: Any) -> IndexRow:
    defaults: dict[str, Any] = {
        "category": category,
        "importance": 0.6,
        "confidence": 0.95,
        "created": T0,
        "updated": T0,
        "session": "demo-1",
        "source_turn_ids": ("t1",),
    }
    return index_row(id, content, **{**defaults, **changes})


@pytest.fixture(scope="module")
def facts_index(tmp_path_factory: pytest.TempPathFactory, minilm: LocalMiniLM) -> MemoryIndex:
    """Shared by the tests, which only read it; each test has its own access log."""
    index = MemoryIndex.open(tmp_path_factory.mktemp("server") / "index", minilm)
    rows = [row(i, text, category) for i, (category, text) in FACTS.items()]
    rows.append(row("f-old", "Dana used pip for every project", "preference", status="superseded"))
    index.upsert(rows)
    return index


@pytest.fixture
def recaller(tmp_path: Path, facts_index: MemoryIndex, minilm: LocalMiniLM) -> Recaller:
    return Recaller(facts_index, minilm, AccessLog(tmp_path / "access.jsonl"), RecallConfig())


@pytest.fixture
def endpoint_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "daemon.json"


@pytest.fixture
def server(recaller: Recaller, endpoint_path: Path) -> Iterator[RecallServer]:
    with RecallServer(recaller, endpoint_path) as running:
        yield running


@pytest.fixture
def endpoint(server: RecallServer, endpoint_path: Path) -> Endpoint:
    found = find_daemon(endpoint_path)
    assert found is not None
    return found


@pytest.fixture
def client(endpoint: Endpoint) -> Iterator[RecallClient]:
    with RecallClient(endpoint) as c:
        yield c


def ids(result: RecallResult | RecallAnswer) -> list[str]:
    return [m.id for m in result.memories]


def raw_request(
    endpoint: Endpoint, method: str, path: str, body: bytes | None, token: str | None
) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=5)
    try:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


# ---------------------------------------------------------------- the happy path


def test_the_endpoint_file_advertises_a_live_server_privately(
    server: RecallServer, endpoint_path: Path, recaller: Recaller, client: RecallClient
) -> None:
    found = find_daemon(endpoint_path)
    assert found is not None
    assert (found.host, found.port, found.pid) == ("127.0.0.1", server.port, os.getpid())
    assert len(found.token) >= 32
    assert stat.S_IMODE(endpoint_path.stat().st_mode) == 0o600
    assert not [p for p in endpoint_path.parent.iterdir() if p != endpoint_path]  # no temp left
    health = client.health()
    assert health == {"ok": True, "pid": os.getpid(), "memories": recaller.index.count()}
    assert health["memories"] == len(FACTS) + 1


def test_recall_through_the_server_matches_in_process_recall(
    recaller: Recaller, client: RecallClient
) -> None:
    for query in QUERIES:
        direct = recaller.recall(query, RecallOptions(record_access=False))
        remote = client.recall(query)
        assert ids(remote) == ids(direct)
        assert ids(remote)  # every query has an answer in this folder
        assert remote.query == query
        assert remote.tokens == direct.tokens
        assert remote.render() == direct.render()
        assert remote.memories[0].to_json() == direct.memories[0].to_json()
    assert "f-old" not in ids(client.recall("did Dana use pip"))  # inactive stays out


def test_the_answer_is_the_wire_json_with_the_rendered_block(
    recaller: Recaller, endpoint: Endpoint
) -> None:
    body = json.dumps({"query": QUERIES[2], "record_access": False}).encode()
    status, answer = raw_request(endpoint, "POST", "/recall", body, endpoint.token)
    direct = recaller.recall(QUERIES[2], RecallOptions(record_access=False))
    assert status == 200
    assert answer == {**direct.answer().to_json(), "block": direct.render()}
    assert RecallAnswer.from_json(answer).to_json() == direct.answer().to_json()


def test_options_reach_the_recaller(recaller: Recaller, client: RecallClient) -> None:
    query = "Dana"
    direct = recaller.recall(query, RecallOptions(top_k=2, record_access=False))
    remote = client.recall(query, RecallOptions(top_k=2))
    assert len(ids(remote)) == 2
    assert ids(remote) == ids(direct)
    one_fact = max(len(text) for _, text in FACTS.values()) // 4 + 1
    small = client.recall(query, RecallOptions(budget_tokens=one_fact))
    assert len(small.memories) == 1 and small.tokens <= one_fact
    with_inactive = client.recall("did Dana use pip", RecallOptions(include_inactive=True))
    assert "f-old" in ids(with_inactive)


def test_recall_records_access_like_in_process_recall(
    tmp_path: Path, recaller: Recaller, client: RecallClient
) -> None:
    remote = client.recall(QUERIES[0])
    assert recaller.access.usage().recent[ids(remote)[0]] == 1
    assert (tmp_path / "access.jsonl").exists()


def test_explain_returns_every_candidate_with_its_parts(client: RecallClient) -> None:
    answer = client.recall("did Dana use pip", RecallOptions(explain=True))
    assert answer.budget == RecallConfig().budget_tokens
    assert answer.candidates is not None
    candidates = {c.id: c for c in answer.candidates}
    assert set(ids(answer)) <= set(candidates)
    old = candidates["f-old"]
    assert old.kept is False and old.reason == "left out: status superseded"
    for candidate in candidates.values():
        assert {"cosine", "relevance", "weight", "score"} <= set(candidate.parts)
        assert candidate.channels
    assert answer.render().startswith("<memory>")


def test_a_batch_of_queries_uses_one_connection(
    server: RecallServer, recaller: Recaller, client: RecallClient
) -> None:
    batch = [QUERIES[i % len(QUERIES)] + f" {i}" for i in range(20)]
    answers = [client.recall(q) for q in batch]
    assert [a.query for a in answers] == batch
    assert all(a.memories for a in answers)
    client.health()
    assert server.connections_accepted == 1


def test_the_client_reconnects_after_the_server_closed_an_idle_connection(
    recaller: Recaller, tmp_path: Path
) -> None:
    path = tmp_path / "daemon.json"
    with RecallServer(recaller, path, idle_timeout=0.1) as server:
        found = find_daemon(path)
        assert found is not None
        with RecallClient(found) as client:
            first = client.recall(QUERIES[0])
            time.sleep(0.3)
            again = client.recall(QUERIES[0])
        assert ids(again) == ids(first)
        assert server.connections_accepted == 2


# ---------------------------------------------------------------- refusals and errors


def test_a_wrong_or_missing_token_is_refused(endpoint: Endpoint) -> None:
    with RecallClient(replace(endpoint, token="not-the-token")) as client:
        with pytest.raises(RecallServerError, match="401"):
            client.recall("anything")
        with pytest.raises(RecallServerError, match="401"):
            client.health()
    body = json.dumps({"query": "anything"}).encode()
    status, answer = raw_request(endpoint, "POST", "/recall", body, token=None)
    assert status == 401 and "token" in answer["error"]


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (b"{not json", "bad request"),
        (b"[1, 2]", "bad request"),
        (b'{"budget": 10}', "query"),
        (b'{"query": 5}', "query"),
        (b'{"query": "x", "top_k": 0}', "top_k"),
        (b'{"query": "x", "explain": "yes"}', "explain"),
        (b'{"query": "x", "dry_run": false}', "dry_run"),
    ],
)
def test_bad_requests_get_400_and_the_server_keeps_serving(
    endpoint: Endpoint, client: RecallClient, body: bytes, complaint: str
) -> None:
    status, answer = raw_request(endpoint, "POST", "/recall", body, endpoint.token)
    assert status == 400
    assert complaint in answer["error"]
    assert client.recall(QUERIES[0]).memories


def test_unknown_paths_get_404(endpoint: Endpoint) -> None:
    assert raw_request(endpoint, "GET", "/nope", None, endpoint.token)[0] == 404
    assert raw_request(endpoint, "POST", "/health", b"{}", endpoint.token)[0] == 404


def test_a_body_over_one_mib_gets_413_without_being_read(endpoint: Endpoint) -> None:
    with socket.create_connection((endpoint.host, endpoint.port), timeout=5) as sock:
        head = (
            "POST /recall HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {endpoint.token}\r\n"
            f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
        )
        sock.sendall(head.encode())
        response = b""
        while chunk := sock.recv(4096):  # the server answers and closes
            response += chunk
    status_line, _, rest = response.partition(b"\r\n")
    assert status_line.split()[1] == b"413"
    assert b"Connection: close" in rest
    assert "over" in json.loads(rest.partition(b"\r\n\r\n")[2])["error"]


class FailingRecaller(Recaller):
    def recall(self, query: str, options: RecallOptions = DEFAULT_OPTIONS) -> RecallResult:
        if query == "boom":
            raise RuntimeError("the index went away")
        return super().recall(query, options)


def test_a_failing_recall_gets_500_and_the_server_keeps_serving(
    recaller: Recaller, tmp_path: Path
) -> None:
    failing = FailingRecaller(recaller.index, recaller.embedder, recaller.access, recaller.cfg)
    path = tmp_path / "daemon.json"
    with RecallServer(failing, path) as server:
        found = find_daemon(path)
        assert found is not None
        with RecallClient(found) as client:
            with pytest.raises(RecallServerError, match="500.*the index went away"):
                client.recall("boom")
            assert client.recall(QUERIES[1]).memories
        assert server.connections_accepted == 1  # a 500 keeps the connection


def test_an_unreachable_daemon_is_a_recall_server_error(recaller: Recaller, tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    with RecallServer(recaller, path):
        found = find_daemon(path)
    assert found is not None
    with RecallClient(found, timeout=1) as client:
        with pytest.raises(RecallServerError, match="unreachable"):
            client.recall("anything")


def test_stop_closes_kept_alive_connections(server: RecallServer, client: RecallClient) -> None:
    assert client.recall(QUERIES[0]).memories
    server.stop()
    with pytest.raises(RecallServerError):
        client.recall(QUERIES[0])


class SlowRecaller(Recaller):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.finished = threading.Event()

    def recall(self, query: str, options: RecallOptions = DEFAULT_OPTIONS) -> RecallResult:
        time.sleep(0.3)
        try:
            return super().recall(query, options)
        finally:
            self.finished.set()


def test_stopping_mid_recall_is_quiet(
    recaller: Recaller, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    slow = SlowRecaller(recaller.index, recaller.embedder, recaller.access, recaller.cfg)
    path = tmp_path / "daemon.json"
    server = RecallServer(slow, path)
    server.start()
    found = find_daemon(path)
    assert found is not None
    errors: list[Exception] = []

    def ask() -> None:
        with RecallClient(found) as client:
            try:
                client.recall(QUERIES[0])
            except RecallServerError as exc:
                errors.append(exc)

    asking = threading.Thread(target=ask)
    asking.start()
    time.sleep(0.1)
    server.stop()
    asking.join(5)
    assert slow.finished.wait(5)
    time.sleep(0.1)  # the handler now writes to a closed connection
    assert len(errors) == 1
    assert capfd.readouterr().err == ""  # no traceback from the server thread


# ---------------------------------------------------------------- finding the daemon


def test_find_daemon_is_none_after_stop(
    server: RecallServer, endpoint_path: Path, endpoint: Endpoint
) -> None:
    server.stop()
    assert not endpoint_path.exists()
    assert find_daemon(endpoint_path) is None
    server.stop()  # twice is fine


def test_stop_leaves_an_endpoint_file_another_daemon_wrote(
    server: RecallServer, endpoint_path: Path
) -> None:
    other = {"host": "127.0.0.1", "port": 9, "pid": os.getppid(), "token": "theirs"}
    endpoint_path.write_text(json.dumps(other))
    server.stop()
    assert json.loads(endpoint_path.read_text()) == other


def test_find_daemon_ignores_dead_pids_and_broken_files(tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    assert find_daemon(path) is None  # missing

    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    live = {"host": "127.0.0.1", "port": 4242, "pid": os.getpid(), "token": "t"}
    path.write_text(json.dumps({**live, "pid": finished.pid}))
    assert find_daemon(path) is None

    path.write_text(json.dumps(live))
    assert find_daemon(path) == Endpoint("127.0.0.1", 4242, os.getpid(), "t")
    for broken in (
        "{not json",
        "[]",
        json.dumps({**live, "pid": 0}),  # would signal our own process group
        json.dumps({**live, "pid": True}),
        json.dumps({**live, "port": "4242"}),
        json.dumps({**live, "port": 70000}),
        json.dumps({**live, "token": ""}),
        json.dumps({**live, "host": "10.1.2.3"}),  # the token never leaves the machine
    ):
        path.write_text(broken)
        assert find_daemon(path) is None, broken


def test_only_loopback_hosts_are_served(recaller: Recaller, tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "", "::"):
        with pytest.raises(ConfigError, match="loopback"):
            RecallServer(recaller, tmp_path / "daemon.json", host=host)
    assert loopback_host("localhost") == "127.0.0.1"
    assert loopback_host("127.0.0.2") == "127.0.0.2"
    assert loopback_host("::1") == "::1"
    assert not (tmp_path / "daemon.json").exists()


def test_an_ipv6_loopback_server_is_found_and_answers(recaller: Recaller, tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    try:
        server = RecallServer(recaller, path, host="::1")
    except RecallServerError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    with server:
        found = find_daemon(path)
        assert found is not None and found.host == "::1"
        with RecallClient(found) as client:
            assert client.health()["ok"] is True


def test_a_busy_port_is_a_recall_server_error(
    server: RecallServer, recaller: Recaller, tmp_path: Path
) -> None:
    with pytest.raises(RecallServerError, match=str(server.port)):
        RecallServer(recaller, tmp_path / "other.json", port=server.port)


# ---------------------------------------------------------------- overhead


WORDS = (
    "redis kafka terraform grafana sqlite rust django kubernetes lisbon osaka nairobi toronto "
    "pottery climbing chess sourdough cycling photography billing deploy review sister team "
    "friday weekend outage migrate report class docs cluster disk budget travel dinner"
).split()


def test_the_http_layer_adds_little_to_a_recall(tmp_path: Path, minilm: LocalMiniLM) -> None:
    """1k memories: round trip minus in-process time. The HTTP layer itself costs under a
    millisecond; the bound leaves room for a loaded machine and still catches a per-request
    stall (a 40 ms Nagle / delayed-ACK wait, a DNS lookup, a reconnect per query)."""
    rng = random.Random(3)
    vectors = l2_normalize(np.random.default_rng(3).normal(size=(1000, minilm.dim)))
    rows = [
        row(
            f"f-{i:04d}",
            " ".join(rng.choice(WORDS) for _ in range(12)),
            created=T0 + timedelta(hours=i),
            vector=vectors[i].astype(np.float32),
        )
        for i in range(1000)
    ]
    index = MemoryIndex.open(tmp_path / "index", minilm)
    index.upsert(rows)
    recaller = Recaller(index, minilm, AccessLog(tmp_path / "access.jsonl"), RecallConfig())
    path = tmp_path / "daemon.json"
    queries = [" ".join(rng.choice(WORDS) for _ in range(5)) for _ in range(15)]
    with RecallServer(recaller, path) as server:
        found = find_daemon(path)
        assert found is not None
        with RecallClient(found) as client:
            client.recall(queries[0])  # warm both paths
            recaller.recall(queries[0])
            overheads = []
            for query in queries:
                start = time.perf_counter()
                direct = recaller.recall(query)
                middle = time.perf_counter()
                remote = client.recall(query)
                end = time.perf_counter()
                assert len(remote.memories) == len(direct.memories)
                overheads.append((end - middle) - (middle - start))
        assert server.connections_accepted == 1
    assert statistics.median(overheads) < 0.020
