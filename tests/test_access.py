"""The recall access log: counts, the prefix consolidation folded, ids a forget drops."""

from __future__ import annotations

import json
from pathlib import Path

from engram_md.store.access import AccessLog


def _line(*ids: str) -> str:
    return json.dumps({"at": "2026-03-03T10:00:00Z", "ids": list(ids)}) + "\n"


def test_record_and_counts(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "state" / "access.jsonl")
    assert log.counts() == {}
    log.record(["a", "b"])
    log.record(["a"])
    log.record([])  # nothing recalled: nothing written
    assert log.counts() == {"a": 2, "b": 1}
    assert len(log.path.read_text().splitlines()) == 2
    # Another process appends: the count follows.
    with open(log.path, "a") as handle:
        handle.write(_line("b"))
    assert log.counts()["b"] == 2


def test_read_counts_takes_whole_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "access.jsonl"
    torn = '{"at": "x", "ids": ["c"'
    path.write_text(_line("a", "b") + "not json\n" + _line("a") + torn)
    counts, length = AccessLog(path).read_counts()
    assert counts == {"a": 2, "b": 1}
    assert length == len(path.read_bytes()) - len(torn)
    assert AccessLog(tmp_path / "none.jsonl").read_counts() == ({}, 0)


def test_drop_prefix_keeps_what_came_after(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "access.jsonl")
    log.path.write_text(_line("a") + _line("b"))
    _, length = log.read_counts()
    log.record(["c"])  # a recall after the fold read the log
    log.drop_prefix(length)
    (left,) = log.path.read_text().splitlines()
    assert json.loads(left)["ids"] == ["c"]
    assert log.counts() == {"c": 1}
    log.drop_prefix(0)
    assert log.counts() == {"c": 1}
    AccessLog(tmp_path / "none.jsonl").drop_prefix(10)
    assert not (tmp_path / "none.jsonl").exists()


def test_drop_ids(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "access.jsonl")
    log.path.write_text(_line("a", "b") + _line("a") + "torn{\n" + _line("c"))
    assert log.counts() == {"a": 2, "b": 1, "c": 1}
    assert log.drop_ids({"a"}) == 2
    assert log.counts() == {"b": 1, "c": 1}  # the cached counts follow the rewrite
    lines = log.path.read_text().splitlines()
    assert lines[1] == "torn{"  # not a record: kept as it was
    assert json.loads(lines[0])["ids"] == ["b"] and len(lines) == 3
    before = log.path.read_bytes()
    assert log.drop_ids({"zzz"}) == 0
    assert log.path.read_bytes() == before
    assert AccessLog(tmp_path / "none.jsonl").drop_ids({"a"}) == 0
