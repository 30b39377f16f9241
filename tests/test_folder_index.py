"""Folder indexes: the topic index and guidelines learned (fail-open) from telemetry."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from engram_md.consolidate.folder_index import (
    plan_folder_index,
    read_action_stats,
    render_guidelines,
)
from engram_md.consolidate.plan import Change, FileWrite
from engram_md.core.models import Category, Status
from engram_md.core.telemetry import ActionLog

from .test_lifecycle import Folder, make_fact


def writes(changes: Sequence[Change]) -> dict[Path, str]:
    out = {}
    for change in changes:
        assert isinstance(change, FileWrite)
        out[change.path] = change.text
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


def test_topic_index_merges_spellings_and_skips_inactive(folder: Folder) -> None:
    a = make_fact("We run Postgres 16.", tags=("Postgres",), entities=("tool-postgresql",))
    b = make_fact("The replica is PostgreSQL too.", tags=("postgresql", "replication"))
    old = make_fact("We ran MySQL.", tags=("mysql",), status=Status.SUPERSEDED)
    pref = make_fact(
        "Dana likes dark mode.", category=Category.PREFERENCE, entities=("person-dana",)
    )
    for fact in (a, b, old, pref):
        folder.add(fact)
    changes = plan_folder_index(folder.ctx())
    text = writes(changes)[folder.layout.topics_path]
    data = json.loads(text)
    assert data["facts"] == 3
    assert data["topics"]["postgresql"] == {"count": 2, "facts": sorted([a.id, b.id])}
    assert data["topics"]["dana"]["facts"] == [pref.id]
    assert "mysql" not in data["topics"]
    assert list(data["topics"]) == sorted(data["topics"])
    # No telemetry yet: nothing learned, no guidelines file.
    assert folder.layout.compression_guidelines_path not in writes(changes)
    folder.layout.topics_path.write_text(text, encoding="utf-8")
    assert plan_folder_index(folder.ctx()) == []


def test_guidelines_from_telemetry(folder: Folder) -> None:
    log = ActionLog(folder.layout.actions_path)
    for _ in range(8):
        log.record("discard", "applied", "too_short")
    log.record("discard", "applied", "question")
    for i in range(6):
        log.record("update_note", "applied", "confirmed_near_duplicate", memory_id=f"f{i}")
    log.record("update_note", "applied", "confirmed_exact_duplicate", memory_id="f9")
    for i in range(4):
        log.record("store_note", "applied", "new_preference", memory_id=f"n{i}")
    for _ in range(3):
        log.record("store_episode", "failed", "disk full")
    log.record("store_episode", "applied", "new_moment")
    log.record("store_episode", "applied", "new_moment")
    log.record("discard", "skipped", "empty_extraction_on_high_signal")
    text = writes(plan_folder_index(folder.ctx()))[folder.layout.compression_guidelines_path]
    assert text.startswith("# Compression Guidelines\n")
    for section in ("## Action Distribution", "## Outcome Distribution", "## Suggested Guidelines"):
        assert section in text
    assert "Most discards (8 of 10, 80%) are `too_short`" in text
    assert "7 of 13 extracted facts" in text and "(1 exact, 6 near-duplicate)" in text
    assert "`store_episode` failed in 3 of 5 events" in text
    assert "1 strong signal(s) produced no fact" in text
    assert "- store_note: hold (too few events: 4)" in text
    assert "- update_note: increase" in text
    folder.layout.compression_guidelines_path.write_text(text, encoding="utf-8")
    assert folder.layout.compression_guidelines_path not in writes(plan_folder_index(folder.ctx()))


def test_corrupt_telemetry_is_skipped_line_by_line(
    folder: Folder, caplog: pytest.LogCaptureFixture
) -> None:
    path = folder.layout.actions_path
    good = json.dumps({"action": "store_note", "outcome": "applied", "reason": "new_fact"})
    path.write_bytes(
        (good + "\n").encode()
        + b'{"action": "store_note", "outc\n'  # torn by a crash
        + b"\xff\xfe garbage\n"
        + b"[1, 2]\n"
        + b'{"action": "teleport", "outcome": "applied"}\n'
        + b"\n"
        + (good + "\n").encode()
    )
    with caplog.at_level(logging.WARNING):
        stats = read_action_stats(path)
    assert stats is not None
    assert stats.records == 3 and stats.invalid == 1 and stats.unreadable == 3
    assert "3 unreadable and 1 invalid" in caplog.text
    text = render_guidelines(stats)
    assert "- store_note: 2" in text and "3 unreadable and 1 invalid line(s) skipped" in text


def test_unreadable_telemetry_never_raises(
    folder: Folder, caplog: pytest.LogCaptureFixture
) -> None:
    folder.layout.actions_path.mkdir(parents=True)  # a folder where the log should be
    with caplog.at_level(logging.WARNING):
        changes = plan_folder_index(folder.ctx())
    assert folder.layout.compression_guidelines_path not in writes(changes)
    assert folder.layout.topics_path in writes(changes)
    assert "compression guidelines not updated" in caplog.text
