"""Action telemetry: JSON lines appended, never an exception on a failed write."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from engram_md.core.telemetry import ACTIONS, ActionLog


def read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_record_appends_one_json_line_per_action(tmp_path: Path) -> None:
    path = tmp_path / "state" / "memory-actions.jsonl"  # the folder does not exist yet
    log = ActionLog(path)
    log.record("store_note", "applied", "new preference", memory_id="preference-1", turns=2)
    log.record("discard", "skipped", "duplicate of an existing fact", similarity=None)
    ActionLog(path).record("store_episode", "failed", "écriture impossible — disque plein")
    events = read(path)
    assert [e["action"] for e in events] == ["store_note", "discard", "store_episode"]
    assert events[0]["outcome"] == "applied"
    assert events[0]["reason"] == "new preference"
    assert events[0]["memoryId"] == "preference-1"
    assert events[0]["turns"] == 2
    assert "memoryId" not in events[1] and "similarity" not in events[1]  # None is left out
    assert events[2]["reason"] == "écriture impossible — disque plein"
    assert "écriture" in path.read_text(encoding="utf-8")  # readable, not \\u-escaped


def test_timestamp_is_utc_iso(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "a.jsonl")
    log.record("link_graph", "applied", "entity edge")
    stamp = str(read(tmp_path / "a.jsonl")[0]["timestamp"])
    assert stamp.endswith("Z")
    assert datetime.fromisoformat(stamp.replace("Z", "+00:00")).utcoffset() == timedelta(0)


def test_every_known_action_is_accepted(tmp_path: Path) -> None:
    log = ActionLog(tmp_path / "a.jsonl")
    for action in sorted(ACTIONS):
        log.record(action, "applied", "ok")
    assert [e["action"] for e in read(tmp_path / "a.jsonl")] == sorted(ACTIONS)


@pytest.mark.parametrize(("action", "outcome"), [("store_fact", "applied"), ("", "applied")])
def test_unknown_action_is_a_value_error(tmp_path: Path, action: str, outcome: str) -> None:
    path = tmp_path / "a.jsonl"
    with pytest.raises(ValueError, match="unknown action"):
        ActionLog(path).record(action, outcome, "x")
    assert not path.exists()


def test_unknown_outcome_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown outcome"):
        ActionLog(tmp_path / "a.jsonl").record("discard", "maybe", "x")


def test_unwritable_path_is_reported_once_and_never_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    log = ActionLog(blocker / "memory-actions.jsonl")
    with caplog.at_level(logging.WARNING, logger="engram_md.core.telemetry"):
        for _ in range(3):
            log.record("store_note", "applied", "x")
    warnings = [r for r in caplog.records if "telemetry skipped" in r.getMessage()]
    assert len(warnings) == 1
    assert blocker.read_text() == "a file where the folder should be"


def test_path_that_is_a_directory_never_raises(tmp_path: Path) -> None:
    folder = tmp_path / "memory-actions.jsonl"
    folder.mkdir()
    ActionLog(folder).record("store_note", "applied", "x")
    assert folder.is_dir()


def test_scrub_rewrites_quotes_and_drops_previews_of_what_is_named(tmp_path: Path) -> None:
    path = tmp_path / "memory-actions.jsonl"
    log = ActionLog(path)
    log.record("update_note", "applied", "same as SECRET", memory_id="m1", why=["a SECRET"])
    log.record("discard", "applied", "bad", turns=["t2"], session="s1", preview="it said so")
    log.record("discard", "applied", "bad", turns=["t2"], session="s9", preview="another one")
    log.record("store_note", "applied", "fine", memory_id="gone", preview="x")
    log.record("store_note", "applied", "untouched", memory_id="m3")
    with open(path, "ab") as handle:
        handle.write(b"not json\n")
    before = path.read_bytes().splitlines()

    def mark(text: str) -> str:
        return text.replace("SECRET", "[forgotten]")

    assert log.scrub(mark, ids={"gone"}, turns={("s1", "t2")})

    after = path.read_bytes().splitlines()
    assert len(after) == len(before) and after[4:] == before[4:]  # untouched bytes kept
    events = [json.loads(line) for line in after[:5]]
    assert events[0]["reason"] == "same as [forgotten]" and events[0]["why"] == ["a [forgotten]"]
    assert "preview" not in events[1] and events[1]["turns"] == ["t2"]
    assert events[2]["preview"] == "another one"  # the same turn id, another session
    assert "preview" not in events[3] and events[3]["memoryId"] == "gone"
    assert after[2] == before[2]
    assert not log.scrub(mark, ids={"gone"}, turns={("s1", "t2")})  # nothing left to do
    assert not ActionLog(tmp_path / "none.jsonl").scrub(mark)
