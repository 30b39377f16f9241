"""End to end, offline: a transcript piped into `engram-md run` yields boxes, traces, edges."""

from __future__ import annotations

import json
from pathlib import Path

import frontmatter
import pytest

from .conftest import Cli, sample


def _run(cli: Cli) -> None:
    result = cli("run", input=sample("generic.jsonl").read_bytes())
    assert result.returncode == 0, result.stderr.decode()


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """One run shared by the read-only tests (a run loads the embedding model: slow)."""
    cli = Cli(tmp_path_factory.mktemp("ran"))
    _run(cli)
    return cli


def _box_files(cli: Cli) -> dict[str, bytes]:
    root = cli.memory / "boxes"
    return {
        p.relative_to(cli.memory).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
    }


def _facts_by_id(cli: Cli) -> dict[str, frontmatter.Post]:
    posts = (frontmatter.loads(data.decode()) for data in cli.fact_files().values())
    return {str(post["id"]): post for post in posts}


def test_boxes_are_sealed_linked_and_traced(ran: Cli) -> None:
    cli = ran
    boxes = {rel: frontmatter.loads(data.decode()) for rel, data in _box_files(cli).items()}
    assert boxes
    reasons = [str(post["sealReason"]) for post in boxes.values()]
    assert "idle" in reasons  # the 68-minute silence before the deploy story
    facts = _facts_by_id(cli)
    traces = json.loads((cli.state / "traces.json").read_text())["traces"]
    traced = {b["id"]: trace_id for trace_id, t in traces.items() for b in t["boxes"]}
    seen: set[str] = set()
    for rel, post in boxes.items():
        box_id = str(post["id"])
        assert rel.endswith(f"/{box_id}.md")
        assert post["memoryIds"], rel
        memory_ids = list(post["memoryIds"])  # type: ignore[call-overload]
        for memory_id in memory_ids:
            assert memory_id in facts, f"{rel} names a missing fact {memory_id}"
            assert facts[memory_id]["boxId"] == box_id
        seen.update(memory_ids)
        assert post["traceId"] and traced[box_id] == post["traceId"]
        # Every link in the body resolves to a fact file next to it on disk.
        links = [ln for ln in post.content.splitlines() if ln.startswith("- [")]
        assert len(links) == len(memory_ids)
        for line in links:
            href = line.rsplit("](", 1)[1].rstrip(")")
            assert (cli.memory / rel).parent.joinpath(href).resolve().is_file(), href
    # Every fact is in exactly one sealed box; nothing is left open after the input ended.
    assert seen == set(facts)
    assert json.loads((cli.state / "open-box.json").read_text())["open"] == {}


def test_the_traces_command_lists_every_box(ran: Cli) -> None:
    cli = ran
    result = cli("traces", "--json")
    assert result.returncode == 0, result.stderr.decode()
    listed = {b["id"] for t in json.loads(result.stdout)["traces"] for b in t["boxes"]}
    on_disk = {Path(rel).stem for rel in _box_files(cli)}
    assert listed == on_disk
    text = cli("traces")
    assert text.returncode == 0 and all(box_id in text.stdout.decode() for box_id in on_disk)


def test_replaying_into_a_fresh_folder_gives_the_same_bytes_and_again_none(
    ran: Cli, cli: Cli
) -> None:
    _run(cli)
    assert _box_files(ran) and _box_files(cli) == _box_files(ran)
    assert (cli.state / "traces.json").read_bytes() == (ran.state / "traces.json").read_bytes()
    for kind in ("entity", "time", "causal"):
        name = f"graphs/{kind}.jsonl"
        assert (cli.state / name).read_bytes() == (ran.state / name).read_bytes()
    # Piping the same input again into the same folder changes nothing.
    before = _box_files(cli), (cli.state / "traces.json").read_bytes(), cli.fact_files()
    _run(cli)
    assert (_box_files(cli), (cli.state / "traces.json").read_bytes(), cli.fact_files()) == before


def test_graph_edges_reference_only_existing_facts(ran: Cli) -> None:
    cli = ran
    facts = set(_facts_by_id(cli))
    total = 0
    for kind in ("entity", "time", "causal"):
        path = cli.state / "graphs" / f"{kind}.jsonl"
        assert path.exists(), path
        for line in path.read_text().splitlines():
            edge = json.loads(line)
            total += 1
            assert edge["kind"] == kind
            assert edge["source"] in facts and edge["target"] in facts, edge
            assert 0 < edge["confidence"] <= 1 and edge["observations"] >= 1
            assert edge["createdAt"].startswith("2026-03-02")  # transcript time, not today
    assert total >= len(facts) - 1  # at least the time chain of the one session
