"""The index in an S3-compatible object store: one writer, read-only recall daemons elsewhere.

A real S3 server (moto's, on 127.0.0.1, started here) holds the index; the writer and each
reader have state folders of their own, as two machines would. Real fact files, the real
local model, real LanceDB over HTTP.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram_md.app import make_recaller, open_writer, serving_read_only
from engram_md.core.config import Config, load_config
from engram_md.core.errors import ConfigError
from engram_md.index.lance import TABLE_NAME, connect
from engram_md.index.opened import FolderParts
from engram_md.index.storage import index_location
from engram_md.index.table import MemoryIndex
from engram_md.maintain.doctor import examine
from engram_md.recall.server import RecallClient, find_daemon
from engram_md.recall.wire import RecallAnswer, RecallOptions
from engram_md.store.factfile import render_fact
from engram_md.text.embeddings import LocalMiniLM

from .conftest import Cli, clean_env
from .rows import preference_fact

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
boto3 = pytest.importorskip("boto3", reason="boto3 (installed with moto) is missing")

BUCKET = "engram"
KEY_ID = "testing-key"
SECRET = "testing-secret"
REGION = "us-east-1"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
QUIET = RecallOptions(record_access=False)  # both sides rank without their access logs

FACTS = (
    "Dana prefers uv over pip for installing Python packages.",
    "The team moved the staging database to PostgreSQL 16.",
    "Dana drinks green tea every afternoon.",
    "The release train leaves every second Thursday.",
    "Priya reviews every pull request that touches billing.",
)
QUERIES = ("which package manager does Dana use?", "what database is staging on?", "billing")

# The S3 server logs every request on stderr through werkzeug.
logging.getLogger("werkzeug").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """moto's S3 server on a free loopback port, with the bucket the tests use."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
        host, port = server.get_host_and_port()
    except Exception as exc:  # any failure to start is a reason to skip, said as such
        pytest.skip(f"moto's S3 server cannot start on 127.0.0.1: {exc}")
    url = f"http://{host}:{port}"
    s3_client(url).create_bucket(Bucket=BUCKET)
    try:
        yield url
    finally:
        server.stop()


def s3_client(url: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )


def machine(root: Path, endpoint: str, prefix: str) -> Config:
    """One machine's config: its own memory and state folders, the shared index in S3, the
    credentials from the environment (as the AWS variables would give them)."""
    return load_config(
        None,
        env={"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": REGION},
        overrides={
            "memory_dir": root / "memory",
            "state_dir": root / "state",
            "index.uri": f"s3://{BUCKET}/{prefix}",
            "index.storage_options.endpoint": endpoint,
            "index.storage_options.allow_http": True,
            "index.refresh_seconds": 0.2,
        },
    )


def remember(parts: FolderParts, text: str, minute: int) -> str:
    """Write a fact file and index it the way the pipeline ends a batch."""
    assert parts.indexer is not None
    item = preference_fact(text, minute)
    path = parts.store.write_new(item)
    parts.indexer.upsert_fact(path, item, new=True)
    parts.indexer.batch_done()
    return item.id


def contents(answer: RecallAnswer) -> list[tuple[str, str]]:
    return [(m.id, m.content) for m in answer.memories]


def reader_client(cfg: Config) -> RecallClient:
    endpoint = find_daemon(cfg.layout.daemon_endpoint_path)
    assert endpoint is not None, "the read-only daemon advertises no endpoint"
    return RecallClient(endpoint, timeout=30)


# ---------------------------------------------------------------- where the index lives


def test_location_from_config_and_environment(tmp_path: Path) -> None:
    local = load_config(None, env={}, overrides={"state_dir": tmp_path / "state"})
    assert index_location(local.index, local.layout.index_dir).local_dir == tmp_path / "state/index"

    cfg = load_config(
        None,
        env={"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": REGION},
        overrides={"index.uri": "s3://bucket/team/", "index.storage_options.allow_http": True},
    )
    location = index_location(cfg.index, Path("unused"))
    assert location.local_dir is None
    assert location.uri == "s3://bucket/team"
    assert location.options == {
        "aws_region": REGION,
        "aws_access_key_id": KEY_ID,
        "aws_secret_access_key": SECRET,
        "allow_http": "true",
    }
    # The secret never shows where a location or the config is printed.
    assert SECRET not in str(location) + repr(location) + repr(cfg)

    for bad in ("http://bucket/x", "s3:///no-bucket"):
        broken = load_config(None, env={}, overrides={"index.uri": bad})
        with pytest.raises(ConfigError):
            index_location(broken.index, Path("unused"))


# ---------------------------------------------------------------- one writer, many readers


def test_reader_on_another_state_folder_recalls_what_the_writer_does(
    tmp_path: Path, endpoint: str, minilm: LocalMiniLM
) -> None:
    writer_cfg = machine(tmp_path / "a", endpoint, "equal")
    reader_cfg = machine(tmp_path / "b", endpoint, "equal")
    with open_writer(writer_cfg, embedder=minilm) as parts:
        for minute, text in enumerate(FACTS):
            remember(parts, text, minute)
        writer = make_recaller(parts)
        with serving_read_only(reader_cfg, embedder=minilm):
            with reader_client(reader_cfg) as client:
                for query in QUERIES:
                    expected = contents(writer.recall(query, QUIET).answer())
                    assert expected, f"the writer found nothing for {query!r}"
                    assert contents(client.recall(query, QUIET)) == expected
    # The index is in the bucket, not in either state folder.
    keys = [
        o["Key"]
        for o in s3_client(endpoint).list_objects_v2(Bucket=BUCKET, Prefix="equal/")["Contents"]
    ]
    assert any(key.startswith(f"equal/{TABLE_NAME}.lance/") for key in keys)
    assert not writer_cfg.layout.index_dir.exists()
    assert not reader_cfg.layout.index_dir.exists()
    # doctor examines the index where it lives: nothing is missing.
    with open_writer(writer_cfg, embedder=minilm) as parts:
        found = {problem.kind for problem in examine(parts).problems}
    assert not found & {"index_missing", "index_unreadable", "index_outdated"}, found


def test_serve_read_only_follows_versions_the_writer_commits(
    tmp_path: Path, endpoint: str, minilm: LocalMiniLM
) -> None:
    writer_cfg = machine(tmp_path / "a", endpoint, "follow")
    reader = Cli(tmp_path / "b")
    reader.root.mkdir()
    config_file = reader.root / "config.yaml"
    config_file.write_text(
        f"index:\n  uri: s3://{BUCKET}/follow\n  refresh_seconds: 0.2\n"
        f"  storage_options:\n    endpoint: {endpoint}\n    allow_http: true\n",
        encoding="utf-8",
    )
    env = clean_env(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION)
    with open_writer(writer_cfg, embedder=minilm) as parts:
        remember(parts, FACTS[0], 0)
        daemon = reader.popen("--config", str(config_file), "serve", "--read-only", env=env)
        try:
            reader_cfg = load_config(
                None, env={}, overrides={"state_dir": reader.state, "memory_dir": reader.memory}
            )
            deadline = time.monotonic() + 40
            while find_daemon(reader_cfg.layout.daemon_endpoint_path) is None:
                assert daemon.poll() is None, daemon.communicate()[1].decode()
                assert time.monotonic() < deadline, "the read-only daemon did not start"
                time.sleep(0.1)
            with reader_client(reader_cfg) as client:
                kayak = "Dana paddles a sea kayak around the bay on Sundays."
                query = "what does Dana do on Sundays with the kayak?"
                assert kayak not in [m.content for m in client.recall(query, QUIET).memories]
                remember(parts, kayak, 1)  # committed at once: open_writer holds no writes
                written = time.monotonic()
                while kayak not in [m.content for m in client.recall(query, QUIET).memories]:
                    assert time.monotonic() - written < 10, "the reader never saw the new fact"
                    time.sleep(0.1)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=20)
    assert daemon.returncode == 0, daemon.stderr.read().decode() if daemon.stderr else ""
    # The reader wrote nothing of the index, and withdrew its endpoint when it stopped.
    assert not (reader.state / "index").exists()
    assert not (reader.state / "daemon.json").exists()


def test_serve_needs_read_only(tmp_path: Path) -> None:
    result = Cli(tmp_path)("serve")
    assert result.returncode == 2
    assert b"engram-md run" in b" ".join(result.stderr.split())  # however the terminal wraps


def test_a_writer_killed_mid_upsert_leaves_the_table_readable(
    tmp_path: Path, endpoint: str, minilm: LocalMiniLM
) -> None:
    writer = Cli(tmp_path / "a")
    facts_dir = writer.memory / "facts" / "2026-03-02"
    facts_dir.mkdir(parents=True)
    words = ("kayak", "tea", "Rust", "billing", "Postgres", "Thursday", "garden", "piano")
    for i in range(1500):
        item = preference_fact(
            f"Note {i}: the {words[i % 8]} plan number {i} was agreed with Dana.", i
        )
        (facts_dir / f"note-{i:04d}.md").write_text(render_fact(item), encoding="utf-8")
    config_file = writer.root / "config.yaml"
    config_file.write_text(
        f"index:\n  uri: s3://{BUCKET}/killed\n  storage_options:\n"
        f"    endpoint: {endpoint}\n    allow_http: true\n",
        encoding="utf-8",
    )
    env = clean_env(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION)
    s3 = s3_client(endpoint)
    prefix = f"killed/{TABLE_NAME}.lance/"

    def objects(under: str) -> int:
        found = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + under)
        return int(found.get("KeyCount", 0))

    proc = writer.popen("--config", str(config_file), "reindex", env=env)
    try:
        # Kill once an upsert's data files are in the bucket but its version is not: the
        # moment between writing rows and committing them.
        deadline = time.monotonic() + 60
        versions = data = 0
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the ingest ended before it could be killed"
            # Data first: new files and, after them, still no new version is an open upsert.
            now_data = objects("data/")
            now_versions = objects("_versions/")
            if now_versions >= 4 and now_versions == versions and now_data > data:
                break
            if now_versions != versions:
                versions, data = now_versions, now_data
        else:
            pytest.fail("no upsert was seen in flight within a minute")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    reader_cfg = machine(tmp_path / "b", endpoint, "killed")
    location = index_location(reader_cfg.index, reader_cfg.layout.index_dir)
    table = connect(location).open_table(TABLE_NAME)
    committed = table.count_rows()
    assert 0 < committed < 1500  # some batches went in, not all
    index = MemoryIndex.open(location, minilm, may_rebuild=False)
    assert index.count() == committed
    hits = index.text_search("kayak plan agreed", 5)
    assert hits and all("kayak" in hit.row.content for hit in hits)
    assert index.nearest("the kayak plan", 3)
