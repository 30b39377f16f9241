"""Recall over the fact graph and memory boxes: expansion, explain's paths, no dangling
edges, box rows in the index and the topic-window section."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.core.config import RecallConfig
from engram_md.core.paths import MemoryLayout
from engram_md.index.boxindex import BOX_KIND, sync_boxes
from engram_md.index.table import MemoryIndex
from engram_md.organize.activation import Adjacency
from engram_md.organize.boxes import Box
from engram_md.organize.boxfile import write_box
from engram_md.recall.recaller import Recaller, Weights
from engram_md.recall.wire import RecallOptions
from engram_md.store.access import AccessLog
from engram_md.text.embeddings import LocalMiniLM

from .conftest import Cli, sample
from .rows import index_row

FACTS = {
    "f-deploy": "Dana deployed the billing service to production on Friday",
    "f-rollback": "The release was rolled back after the payment errors",
    "f-guitar": "Priya is learning to play the guitar on weekends",
    "f-postmortem": "A postmortem meeting was scheduled with the finance team",
}
# f-deploy --causal--> f-rollback --time--> f-postmortem; f-guitar stands alone.
EDGES = [
    ("causal", "f-deploy", "f-rollback", 0.9),
    ("time", "f-rollback", "f-postmortem", 0.8),
]


def _recaller(
    tmp_path: Path, minilm: LocalMiniLM, edges: list[tuple[str, str, str, float]], **weights: float
) -> tuple[Recaller, MemoryIndex]:
    index = MemoryIndex.open(tmp_path / "index", minilm)
    index.upsert([index_row(i, text) for i, text in FACTS.items()])
    adjacency = Adjacency(edges)
    recaller = Recaller(
        index,
        minilm,
        AccessLog(tmp_path / "access.jsonl"),
        RecallConfig(),
        weights=Weights(graph_seeds=1, candidates_per_channel=1, **weights),  # type: ignore[arg-type]
        graph=lambda: adjacency,
    )
    return recaller, index


def test_the_graph_reaches_a_memory_the_search_missed(tmp_path: Path, minilm: LocalMiniLM) -> None:
    # One candidate per channel: the search alone finds only the deploy fact.
    query = "When did Dana deploy the billing service?"
    plain, _ = _recaller(tmp_path / "plain", minilm, [])
    found = plain.recall(query, RecallOptions(record_access=False)).memories
    assert {m.id for m in found} == {"f-deploy"}
    recaller, _ = _recaller(tmp_path / "graph", minilm, EDGES)
    result = recaller.recall(query, RecallOptions(record_access=False, explain=True))
    ids = [m.id for m in result.memories]
    assert ids[0] == "f-deploy"
    assert {"f-rollback", "f-postmortem"} <= set(ids)
    assert "f-guitar" not in ids
    explained = {c["id"]: c for c in result.answer(explain=True).to_json()["candidates"]}
    path = explained["f-postmortem"]["graphPath"]
    assert [(s["kind"], s["source"], s["target"]) for s in path] == [
        ("causal", "f-deploy", "f-rollback"),
        ("time", "f-rollback", "f-postmortem"),
    ]
    assert [s["confidence"] for s in path] == [0.9, 0.8]
    assert "graph" in explained["f-postmortem"]["channels"]
    parts = explained["f-postmortem"]["parts"]
    assert parts["graph"] > 0 and parts["score"] < parts["graph"] + parts["own"]


def test_edges_through_a_deleted_fact_lead_nowhere(tmp_path: Path, minilm: LocalMiniLM) -> None:
    recaller, index = _recaller(tmp_path, minilm, EDGES)
    index.delete(["f-rollback"])  # its file was deleted; the graph still names it
    result = recaller.recall(
        "When did Dana deploy the billing service?",
        RecallOptions(record_access=False, explain=True),
    )
    assert "f-rollback" not in {m.id for m in result.memories}
    assert "f-postmortem" not in {m.id for m in result.memories}  # only reachable through it
    for cand in result.answer(explain=True).to_json()["candidates"]:
        for step in cand["graphPath"]:
            assert "f-rollback" not in (step["source"], step["target"])


def test_weak_edges_are_ignored(tmp_path: Path, minilm: LocalMiniLM) -> None:
    recaller, _ = _recaller(tmp_path, minilm, [("entity", "f-deploy", "f-guitar", 0.1)])
    result = recaller.recall("Dana deploy billing", RecallOptions(record_access=False))
    ids = {m.id for m in result.memories}
    assert "f-guitar" not in ids


def _box(box_id: str, summary: str, memory_ids: tuple[str, ...]) -> Box:
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    return Box(
        id=box_id,
        session="s-1",
        created_at=at,
        sealed_at=at,
        seal_reason="idle",
        topics=("billing", "deploy"),
        memory_ids=memory_ids,
        trace_id="trace-1",
        goal=None,
        outcome="",
        summary=summary,
        members=(),
    )


def test_box_rows_follow_the_box_files_and_fill_topic_windows(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    layout.ensure()
    index = MemoryIndex.open(layout.index_dir, minilm)
    index.upsert([index_row(i, text) for i, text in FACTS.items()])
    path, _ = write_box(
        layout,
        _box("box-20260302-090000-aaaa", "The billing deploy went wrong and was rolled back.",
             ("f-deploy", "f-rollback")),
    )  # fmt: skip
    report = sync_boxes(index, layout)
    assert report.indexed == 1 and report.removed == 0
    assert sync_boxes(index, layout).indexed == 0  # unchanged files are not re-read
    rows = index.rows_of_kind(BOX_KIND)
    assert [r.id for r in rows] == ["box-20260302-090000-aaaa"]
    assert rows[0].source_turn_ids == ()

    def recaller(windows: int) -> Recaller:
        weights = Weights(topic_windows=windows)
        return Recaller(index, minilm, AccessLog(tmp_path / "a.jsonl"), RecallConfig(),
                        weights=weights)  # fmt: skip

    query = "what happened with the billing deploy?"
    plain = recaller(0).recall(query, RecallOptions(record_access=False))
    assert all(m.category != BOX_KIND for m in plain.memories)  # facts only by default
    windowed = recaller(2).recall(query, RecallOptions(record_access=False, budget_tokens=200))
    assert windowed.memories[-1].id == "box-20260302-090000-aaaa"
    assert "[TOPIC WINDOW 2026-03-02] The billing deploy" in windowed.render()
    assert windowed.tokens <= 200
    path.unlink()
    assert sync_boxes(index, layout).removed == 1
    assert index.rows_of_kind(BOX_KIND) == []


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    cli = Cli(tmp_path_factory.mktemp("graph-e2e"))
    # Facts only: with what was said kept, recall ranks sentences by fusion, not the graph.
    config = cli.root / "config.yaml"
    config.write_text("said:\n  enabled: false\n")
    result = cli(
        "run", input=sample("generic.jsonl").read_bytes(), env={"ENGRAM_CONFIG": str(config)}
    )
    assert result.returncode == 0, result.stderr.decode()
    return cli


def test_explain_shows_edges_and_a_deleted_fact_leaves_no_trace(ran: Cli) -> None:
    cli = ran
    edges = [
        json.loads(line)
        for kind in ("entity", "time", "causal")
        for line in (cli.state / "graphs" / f"{kind}.jsonl").read_text().splitlines()
        if line.strip()
    ]
    assert edges, "the sample should produce graph edges"
    answer = cli("explain", "--json", "what did we decide about the database?")
    assert answer.returncode == 0, answer.stderr.decode()
    data = json.loads(answer.stdout)
    with_paths = [c for c in data["candidates"] if c["graphPath"]]
    assert with_paths, "some candidate should be reached through the graph"
    for cand in with_paths:
        assert all(0 < step["confidence"] <= 1 for step in cand["graphPath"])
    text = cli("explain", "what did we decide about the database?")
    assert "graph " in text.stdout.decode() and "->" in text.stdout.decode()

    victim = with_paths[0]["graphPath"][0]["source"]
    victim_path = next(c["path"] for c in data["candidates"] if c["id"] == victim)
    (cli.memory / victim_path).unlink()
    after = json.loads(cli("explain", "--json", "what did we decide about the database?").stdout)
    assert victim not in {c["id"] for c in after["candidates"]}
    for cand in after["candidates"]:
        for step in cand["graphPath"]:
            assert victim not in (step["source"], step["target"])
    recalled = json.loads(cli("recall", "--json", "what did we decide about the database?").stdout)
    assert victim not in {m["id"] for m in recalled["memories"]}
