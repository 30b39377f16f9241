"""Recall end to end through the CLI: the JSON contract, batch mode, hand edits, the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Cli, following_daemon, sample

MEMORY_KEYS = {
    "id",
    "path",
    "category",
    "memoryKind",
    "content",
    "score",
    "sourceTurnIds",
    "created",
    "eventDate",
}


@pytest.fixture
def filled(cli: Cli) -> Cli:
    result = cli("run", input=sample("generic.jsonl").read_bytes())
    assert result.returncode == 0, result.stderr.decode()
    return cli


def recall_json(cli: Cli, query: str, *extra: str) -> dict:  # type: ignore[type-arg]
    result = cli("recall", "--json", *extra, query)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def _path_of(cli: Cli, needle: str) -> Path:
    for path in (cli.memory / "facts").rglob("*.md"):
        if needle in path.read_text():
            return path
    raise AssertionError(f"no fact mentions {needle!r}")


def test_json_contract_and_block(filled: Cli) -> None:
    answer = recall_json(filled, "which package manager should Dana use?", "--budget", "40")
    assert set(answer) == {"query", "memories", "tokens"}
    assert answer["memories"] and all(set(m) == MEMORY_KEYS for m in answer["memories"])
    assert answer["tokens"] <= 40
    assert answer["tokens"] == sum(-(-len(m["content"]) // 4) for m in answer["memories"])
    assert "uv instead of pip" in answer["memories"][0]["content"]
    block = filled("recall", "which package manager should Dana use?").stdout.decode()
    assert block.startswith("<memory>\n[PREFERENCE 2026-03-02] ")
    assert block.rstrip().endswith("</memory>")


def test_batch_mode_answers_one_line_per_query(filled: Cli) -> None:
    queries = b"where does Dana work?\n\nteam size\nwhat failed on staging?\n"
    result = filled("recall", "--json", "-", input=queries)
    assert result.returncode == 0, result.stderr.decode()
    answers = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [a["query"] for a in answers] == [
        "where does Dana work?",
        "team size",
        "what failed on staging?",
    ]
    assert "Acme Robotics" in answers[0]["memories"][0]["content"]


def test_hand_edits_deletions_and_broken_files_reach_the_next_recall(filled: Cli) -> None:
    uv = _path_of(filled, "uv instead of pip")
    uv.write_text(uv.read_text().replace("status: active", "status: superseded"))
    deploy = _path_of(filled, "staging deploy failed")
    deploy.unlink()
    acme = _path_of(filled, "Acme Robotics")
    acme.write_text("---\nid: [unclosed\n---\n\nDana works somewhere.\n")

    result = filled("recall", "--json", "--budget", "1000", "Dana")
    assert result.returncode == 0
    assert str(acme) in result.stderr.decode() or acme.name in result.stderr.decode()
    memories = json.loads(result.stdout)["memories"]
    # The files, not the words: what was said stays in memory/said/ until it is forgotten.
    paths = {m["path"] for m in memories}
    for gone in (uv, deploy, acme):  # superseded, deleted, broken (left untouched, not served)
        assert gone.relative_to(filled.memory).as_posix() not in paths
    rest = recall_json(filled, "which database and version do we use?")
    assert any("PostgreSQL 16" in m["content"] for m in rest["memories"])  # still recalled
    assert acme.read_text().startswith("---\nid: [unclosed")
    with_inactive = recall_json(filled, "Dana", "--include-inactive")
    assert any("uv instead of pip" in m["content"] for m in with_inactive["memories"])


def test_explain_shows_score_parts(filled: Cli) -> None:
    result = filled("explain", "--json", "team size")
    assert result.returncode == 0, result.stderr.decode()
    answer = json.loads(result.stdout)
    parts = answer["candidates"][0]["parts"]
    for key in ("relevance", "importance", "rep_bonus", "access_bonus", "kind_bias", "tier_bias",
                "recency", "weight", "score"):  # fmt: skip
        assert key in parts
    assert all("reason" in c and "kept" in c for c in answer["candidates"])


def test_daemon_and_in_process_return_the_same_memories(filled: Cli, tmp_path: Path) -> None:
    with following_daemon(filled, tmp_path):
        for query in ("team size", "what does Dana prefer?", "Priya"):
            # --dry: neither call counts as an access, so neither changes the other's ranking.
            via_daemon = recall_json(filled, query, "--dry")
            in_process = recall_json(filled, query, "--dry", "--no-daemon")
            assert [m["id"] for m in via_daemon["memories"]] == [
                m["id"] for m in in_process["memories"]
            ]
    assert not (filled.state / "daemon.json").exists()
