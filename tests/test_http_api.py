"""The daemon's HTTP API beyond recall: GET /memory/<id>, GET /recent, POST /remember,
POST /forget — against a real `engram-md run` over a real folder."""

from __future__ import annotations

import http.client
import io
import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from engram_md.core.errors import RecallServerError
from engram_md.ingest.daemon import Runner, RunnerBusy
from engram_md.ingest.pipeline import Pipeline
from engram_md.ingest.sources import CursorStore
from engram_md.recall.server import Endpoint, RecallClient, find_daemon
from engram_md.recall.wire import RecallOptions

from .conftest import Cli

MEMORY_KEYS = {
    "id",
    "path",
    "category",
    "kind",
    "status",
    "created",
    "validAt",
    "eventDate",
    "text",
    "entities",
    "supersedes",
    "supersededBy",
}

TURNS = [
    ("2026-03-02T09:00:00Z", "Hi, I'm Dana. I always use uv instead of pip for Python projects."),
    ("2026-03-02T09:05:00Z", "Our team decided to deploy the billing service on Fridays."),
    ("2026-03-03T10:00:00Z", "I moved to Lisbon last month and I love the light there."),
    ("2026-03-04T11:00:00Z", "Remember that my sister Priya is allergic to peanuts."),
]


def transcript(path: Path) -> Path:
    lines = [
        json.dumps({"role": "user", "content": text, "timestamp": at, "session": "s1"})
        for at, text in TURNS
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def wait_for_daemon(cli: Cli, daemon: subprocess.Popen[bytes]) -> Endpoint:
    deadline = time.monotonic() + 90
    while True:
        endpoint = find_daemon(cli.state / "daemon.json")
        if endpoint is not None:
            return endpoint
        if daemon.poll() is not None:
            raise AssertionError(f"daemon exited: {daemon.stderr.read().decode()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "daemon did not start"
        time.sleep(0.2)


def filled(root: Path) -> Cli:
    """A memory folder under ``root`` made from TURNS (offline)."""
    cli = Cli(root)
    result = cli("ingest", str(transcript(root / "talk.jsonl")))
    assert result.returncode == 0, result.stderr.decode()
    return cli


@contextmanager
def running_daemon(cli: Cli) -> Iterator[Endpoint]:
    """`engram-md run` on the folder (watching an empty folder, no stdin), until SIGTERM."""
    quiet = cli.root / "nothing-to-watch"
    quiet.mkdir(exist_ok=True)
    process = cli.popen("run", "--watch", str(quiet), "--no-stdin")
    try:
        yield wait_for_daemon(cli, process)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cli, Endpoint]]:
    cli = filled(tmp_path_factory.mktemp("api"))
    with running_daemon(cli) as endpoint:
        yield cli, endpoint


def raw(
    endpoint: Endpoint, method: str, path: str, body: Any = None, *, token: str | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=60)
    headers = {"Authorization": f"Bearer {endpoint.token if token is None else token}"}
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_recent_lists_the_newest_active_memories_first(daemon: tuple[Cli, Endpoint]) -> None:
    _, endpoint = daemon
    status, answer = raw(endpoint, "GET", "/recent?limit=2")
    assert status == 200
    memories = answer["memories"]
    assert len(memories) == 2
    assert all(set(m) == MEMORY_KEYS and m["status"] == "active" for m in memories)
    assert memories[0]["created"] >= memories[1]["created"]
    with RecallClient(endpoint) as client:
        everything = client.recent(100)
    assert [m["id"] for m in everything[:2]] == [m["id"] for m in memories]
    assert everything[-1]["created"] <= memories[-1]["created"]
    for bad in ("0", "abc", "100000"):
        status, answer = raw(endpoint, "GET", f"/recent?limit={bad}")
        assert status == 400 and "limit" in answer["error"]


def test_a_memory_by_id_is_what_its_file_says(daemon: tuple[Cli, Endpoint]) -> None:
    cli, endpoint = daemon
    with RecallClient(endpoint) as client:
        listed = client.recent(100)
        wanted = next(m for m in listed if "Lisbon" in m["text"])
        got = client.memory(wanted["id"])
        assert got == wanted
        assert client.memory("fact-20990101-000000-deadbeef") is None
    text = (cli.memory / got["path"]).read_text(encoding="utf-8")
    assert f"id: {got['id']}" in text and "Lisbon" in text
    status, answer = raw(endpoint, "GET", "/memory/no-such-id")
    assert status == 404 and answer == {"error": "no memory with id 'no-such-id'"}


def test_every_id_recall_answers_with_can_be_read(daemon: tuple[Cli, Endpoint]) -> None:
    """Recall also answers with sentences of what was said: their ids read back too."""
    _, endpoint = daemon
    with RecallClient(endpoint) as client:
        answer = client.recall("Priya peanuts", RecallOptions(record_access=False))
        assert answer.memories
        for found in answer.memories:
            got = client.memory(found.id)
            assert got is not None and set(got) == MEMORY_KEYS
            assert (got["id"], got["path"], got["text"]) == (found.id, found.path, found.content)
    assert any(m.memory_kind == "said" for m in answer.memories)


def test_every_endpoint_wants_the_token(daemon: tuple[Cli, Endpoint]) -> None:
    _, endpoint = daemon
    for method, path, body in (
        ("GET", "/recent", None),
        ("GET", "/memory/x", None),
        ("POST", "/remember", {"text": "I like tea."}),
        ("POST", "/forget", {"id": "x"}),
    ):
        status, answer = raw(endpoint, method, path, body, token="wrong")
        assert status == 401 and answer == {"error": "missing or wrong token"}


def test_remember_goes_through_the_pipeline(daemon: tuple[Cli, Endpoint]) -> None:
    cli, endpoint = daemon
    secret = "sk-proj-" + "Q3vX9mTz2Lw8Rk4Yp7Hn1Bc6Df0Gs5Ja"
    text = f"My staging OpenAI key is {secret} and I keep my passport in the blue drawer."
    with RecallClient(endpoint) as client:
        first = client.remember(text, "Dana")
        assert first["received"] is True and len(first["written"]) == 1
        (kept,) = first["memories"]
        assert set(kept) == MEMORY_KEYS and "blue drawer" in kept["text"]
        assert secret not in kept["text"] and "[REDACTED" in kept["text"]
        assert client.memory(kept["id"]) == kept
        answer = client.recall("where is the passport?", RecallOptions(record_access=False))
    assert any("blue drawer" in m.content for m in answer.memories)
    # Nothing durable holds the secret: not the file, not the journal.
    for folder in (cli.memory, cli.state):
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in (".md", ".jsonl", ".json"):
                assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    with RecallClient(endpoint) as client:
        again = client.remember(text, "Dana")
    assert again["written"] == []  # deduplicated: confirmed or already seen, never twice


def test_forget_removes_the_memory_everywhere(daemon: tuple[Cli, Endpoint]) -> None:
    cli, endpoint = daemon
    with RecallClient(endpoint) as client:
        kept = client.remember("Dana's locker code is on a card in the red folder.")
        (memory,) = kept["memories"]
        report = client.forget(memory["id"])
        assert report is not None
        assert [f["id"] for f in report["forgotten"]][0] == memory["id"]
        assert client.memory(memory["id"]) is None
        # Forgetting again finishes whatever is left (nothing): idempotent, not an error.
        again = client.forget(memory["id"])
        assert again is not None and again["forgotten"][0]["fileRemoved"] is False
        assert client.forget("fact-20990101-000000-deadbeef") is None
        answer = client.recall("red folder locker card", RecallOptions(record_access=False))
    assert all(m.id != memory["id"] for m in answer.memories)
    assert not (cli.memory / memory["path"]).exists()
    tombstones = (cli.state / "forgotten.jsonl").read_text(encoding="utf-8")
    assert memory["id"] in tombstones and "red folder" not in tombstones
    status, answer = raw(endpoint, "POST", "/forget", {"id": "no-such-id"})
    assert status == 404 and answer == {"error": "no memory with id 'no-such-id'"}


def test_a_forget_through_the_daemon_stays_forgotten(daemon: tuple[Cli, Endpoint]) -> None:
    """The daemon holds the graph and the open box in memory: the next batch it writes must
    not bring the forgotten memory back into either."""
    cli, endpoint = daemon
    with RecallClient(endpoint) as client:
        (first,) = client.remember("Dana parks the blue van behind the bakery.")["memories"]
        assert first["id"] in (cli.state / "open-box.json").read_text(encoding="utf-8")
        assert client.forget(first["id"]) is not None
        (second,) = client.remember("Dana waters the office plants on Thursdays.")["memories"]
    open_box = (cli.state / "open-box.json").read_text(encoding="utf-8")
    assert second["id"] in open_box and first["id"] not in open_box
    for path in (cli.state / "graphs").glob("*.jsonl"):
        assert first["id"] not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/remember", {"text": ""}, "'text' must be a non-empty string"),
        ("/remember", {"text": "x", "when": "now"}, "unknown field(s): 'when'"),
        ("/remember", b"{not json", "bad request"),
        ("/forget", {"memory": "x"}, "'id' must be a non-empty string"),
        ("/forget", [1, 2], "not a JSON object"),
    ],
)
def test_bad_bodies_are_400(daemon: tuple[Cli, Endpoint], path: str, body: Any, says: str) -> None:
    _, endpoint = daemon
    status, answer = raw(endpoint, "POST", path, body)
    assert status == 400 and says in answer["error"]


def test_the_client_reports_errors_as_recall_server_errors(daemon: tuple[Cli, Endpoint]) -> None:
    _, endpoint = daemon
    with RecallClient(endpoint) as client, pytest.raises(RecallServerError, match="400"):
        client.remember("   ")


@pytest.mark.skipif(
    not (shutil.which("curl") and shutil.which("jq")),
    reason="needs curl and jq (.ci/run installs them)",
)
def test_the_documented_curl_examples_work(daemon: tuple[Cli, Endpoint]) -> None:
    """docs/API.md's shell blocks, run in order against the daemon (last: it forgets)."""
    cli, _ = daemon
    doc = (Path(__file__).resolve().parents[1] / "docs" / "API.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", doc, flags=re.S)
    assert len(blocks) == 7
    script = "set -eu\n" + "\n".join(f"{block}echo '=== next'" for block in blocks)
    result = subprocess.run(
        ["bash", "-c", script], cwd=cli.root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    outputs = result.stdout.split("=== next\n")
    assert outputs[0] == ""  # the set-up prints nothing
    recall, health, one, recent, kept, gone = (outputs[i] for i in range(1, 7))
    assert "uv instead of pip" in json.loads(recall)["block"]
    assert json.loads(health)["ok"] is True
    assert set(json.loads(one)) == MEMORY_KEYS
    assert len(recent.strip().splitlines()) == 5
    assert json.loads(kept)["memories"][0]["text"].endswith("blue drawer.")
    assert json.loads(gone)["forgotten"][0]["id"] == json.loads(one)["id"]


class _IdlePipeline:
    """Just enough of a pipeline for the consumer loop to run with no input."""

    def flush_idle(self) -> None:
        pass

    def flush(self) -> bool:
        return False


def test_a_write_the_daemon_cannot_take_is_refused_and_never_runs(tmp_path: Path) -> None:
    """No consumer loop takes the call in time (the daemon is stopping, or stuck in a batch):
    the caller hears RunnerBusy (the server's 503), and the loop, once it runs, skips it."""
    runner = Runner(cast(Pipeline, _IdlePipeline()), CursorStore(tmp_path / "cursors.json"))
    ran: list[int] = []
    start = time.monotonic()
    with pytest.raises(RunnerBusy, match="did not take the work"):
        runner.call(lambda: ran.append(1), timeout=0.2)
    assert time.monotonic() - start < 5
    runner.run(stdin=io.BytesIO(b""), watch=[], install_signals=False)
    assert ran == []
