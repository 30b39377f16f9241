"""The buffer journal: what is appended survives a restart, done turns stay done."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.core.models import Role, Turn
from engram_md.ingest import journal as journal_mod
from engram_md.ingest import seen_set
from engram_md.ingest.journal import Journal, compact_journal, pending_count, turn_key

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


def turn(n: int, content: str | None = None, *, session: str = "s1", **kw: object) -> Turn:
    return Turn(
        id=f"t{n}",
        session=session,
        role=Role.USER,
        content=content if content is not None else f"message number {n}",
        timestamp=T0 + timedelta(minutes=n),
        **kw,  # type: ignore[arg-type]
    )


def reopen(path: Path) -> tuple[Journal, list[Turn]]:
    j = Journal(path, fsync_each=False)
    return j, j.open()


def turn_record(t: Turn) -> str:
    """The journal line that records ``t`` as received."""
    return json.dumps({"op": "turn", "key": turn_key(t), "turn": journal_mod.turn_to_dict(t)})


def test_turn_key_includes_a_content_hash() -> None:
    a = turn(1, "I use uv")
    b = turn(1, "I use pip")  # same session and id, different words
    assert turn_key(a) != turn_key(b)
    assert turn_key(a) == turn_key(turn(1, "I use uv"))
    assert turn_key(a).startswith("s1\x1ft1\x1f")
    assert turn_key(a) != turn_key(turn(1, "I use uv", session="s2"))
    # The role is part of what was said.
    assert turn_key(a) != turn_key(Turn("t1", "s1", Role.ASSISTANT, "I use uv", a.timestamp))


def test_append_then_replay_returns_pending_in_arrival_order(tmp_path: Path) -> None:
    path = tmp_path / "state" / "journal.jsonl"
    j, pending = reopen(path)
    assert pending == []
    turns = [turn(3), turn(1), turn(2, speaker="Dana", origin="a.jsonl:2")]
    for t in turns:
        assert j.append(t) is True
    j.close()

    j2, pending = reopen(path)
    assert pending == turns  # every field, including speaker, origin and the UTC timestamp
    assert pending[2].speaker == "Dana" and pending[2].origin == "a.jsonl:2"
    assert pending[0].timestamp.tzinfo is not None
    assert all(j2.seen(t) for t in turns)
    j2.close()


def test_append_refuses_a_turn_already_received(tmp_path: Path) -> None:
    j, _ = reopen(tmp_path / "j.jsonl")
    assert j.append(turn(1)) is True
    assert j.append(turn(1)) is False
    assert len(j.pending) == 1
    j.close()
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    assert len(lines) == 1


def test_seen_survives_restart_even_after_done(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    j.append(turn(1))
    j.append(turn(2))
    j.mark_done([turn(1)])
    assert j.pending == [turn(2)]
    j.close()

    j2, pending = reopen(path)
    assert pending == [turn(2)]
    assert j2.seen(turn(1)) and j2.seen(turn(2))
    assert not j2.seen(turn(3))
    assert j2.append(turn(1)) is False  # the same input fed again is not processed twice
    assert j2.append(turn(1, "different words, same id")) is True
    j2.close()


def test_mark_done_ignores_unknown_and_already_done(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    j.append(turn(1))
    j.mark_done([turn(1)])
    size = path.stat().st_size
    j.mark_done([turn(1), turn(9)])  # nothing pending among them: nothing written
    j.mark_done([])
    assert path.stat().st_size == size
    j.close()


def test_write_before_open_is_an_error(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.jsonl")
    with pytest.raises(RuntimeError):
        j.append(turn(1))


def test_torn_last_line_is_ignored_and_the_next_record_is_intact(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    j.append(turn(1))
    j.append(turn(2))
    j.close()
    # A crash in the middle of writing the third record: half a line, no newline.
    full = json.dumps({"op": "turn", "key": turn_key(turn(3)), "turn": {"id": "t3"}})
    with open(path, "ab") as handle:
        handle.write(full[: len(full) // 2].encode())

    j2, pending = reopen(path)
    assert pending == [turn(1), turn(2)]
    assert not j2.seen(turn(3))
    assert j2.append(turn(3)) is True
    j2.mark_done([turn(1)])
    j2.close()

    j3, pending = reopen(path)
    assert pending == [turn(2), turn(3)]
    j3.close()


def test_record_torn_just_before_its_newline_is_not_merged_with_the_next(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    j.append(turn(1))
    j.close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # the newline never reached the disk

    j2, pending = reopen(path)
    assert pending == [turn(1)]
    j2.append(turn(2))
    j2.close()

    j3, pending = reopen(path)
    assert pending == [turn(1), turn(2)]
    j3.close()


def test_garbage_and_unknown_ops_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    j.append(turn(1))
    j.close()
    with open(path, "a") as handle:
        handle.write("not json at all\n")
        handle.write(json.dumps({"op": "explode", "keys": []}) + "\n")
        handle.write(json.dumps([1, 2, 3]) + "\n")
    j2, pending = reopen(path)
    assert pending == [turn(1)]
    j2.append(turn(2))
    j2.close()
    assert [t.id for t in reopen(path)[1]] == ["t1", "t2"]


def test_compact_keeps_pending_and_seen_and_shrinks_the_file(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    for n in range(20):
        j.append(turn(n))
    j.mark_done([turn(n) for n in range(18)])
    before = path.stat().st_size
    j.compact()
    assert path.stat().st_size < before
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["op"] for r in records] == ["seen", "turn", "turn"]
    # The done turns are kept as their 16-byte digests, not as keys or text.
    assert len(base64.b64decode(records[0]["digests"])) == 18 * 16
    assert "message number" not in json.dumps(records[0])
    # Still appendable after compaction (the file descriptor was reopened).
    j.append(turn(20))
    j.close()

    j2, pending = reopen(path)
    assert pending == [turn(18), turn(19), turn(20)]
    assert all(j2.seen(turn(n)) for n in range(21))
    assert j2.seen_count == 21
    assert j2.append(turn(5)) is False
    j2.close()
    assert [p.name for p in tmp_path.iterdir()] == ["j.jsonl"]  # no temp file left


def test_a_seen_record_of_keys_written_before_digests_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    legacy = {"op": "seen", "keys": [turn_key(turn(n)) for n in range(3)]}
    path.write_text(json.dumps(legacy) + "\n" + turn_record(turn(3)) + "\n")
    j, replayed = reopen(path)
    assert replayed == [turn(3)]
    assert all(j.seen(turn(n)) for n in range(4)) and not j.seen(turn(4))
    j.compact()  # rewritten in the current form, nothing forgotten
    j.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert "digests" in records[0] and "keys" not in records[0]
    j2, replayed = reopen(path)
    assert replayed == [turn(3)] and all(j2.seen(turn(n)) for n in range(4))
    j2.close()


def test_a_corrupt_digest_record_is_reported_and_the_rest_replayed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.jsonl"
    bad = {"op": "seen", "digests": "AAAA"}  # 3 bytes: not a whole digest
    path.write_text(json.dumps(bad) + "\n" + turn_record(turn(1)) + "\n")
    with caplog.at_level("WARNING"):
        j, replayed = reopen(path)
    assert replayed == [turn(1)]
    assert "1 unreadable record" in caplog.text
    j.close()


def test_many_done_turns_survive_merges_and_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past several merges of the recent digests into the sorted array, and a compaction.
    monkeypatch.setattr(seen_set, "MERGE_AFTER", 64)
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    for start in range(0, 1000, 50):
        batch = [turn(n) for n in range(start, start + 50)]
        for t in batch:
            assert j.append(t)
        j.mark_done(batch)
    assert j.seen_count == 1000
    assert all(not j.append(turn(n)) for n in range(0, 1000, 7))
    j.compact()
    j.close()
    j2, pending = reopen(path)
    assert pending == [] and j2.seen_count == 1000
    assert all(j2.seen(turn(n)) for n in range(1000))
    assert not j2.seen(turn(5, "other words")) and j2.append(turn(1000))
    j2.close()


def test_mark_done_compacts_past_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_mod, "COMPACT_AFTER_RECORDS", 10)
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    for n in range(12):
        j.append(turn(n))
    j.mark_done([turn(n) for n in range(11)])
    j.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["op"] for r in records] == ["seen", "turn"]
    assert reopen(path)[1] == [turn(11)]


def test_pending_count_reads_without_opening(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    assert pending_count(path) == 0
    j, _ = reopen(path)
    for n in range(4):
        j.append(turn(n))
    j.mark_done([turn(0)])
    j.close()
    with open(path, "ab") as handle:
        handle.write(b'{"op": "turn", "ke')  # torn tail
    assert pending_count(path) == 3


def test_unicode_content_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j, _ = reopen(path)
    t = turn(1, 'Zoë prefers 東京 🚀 and "quotes"\nover two lines')
    j.append(t)
    j.close()
    assert reopen(path)[1] == [t]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 1


def test_compact_journal_finishes_the_named_turns_and_drops_done_text(tmp_path: Path) -> None:
    path = tmp_path / "buffer-journal.jsonl"
    j = Journal(path, fsync_each=False)
    j.open()
    done, source, other = turn(1, "first said"), turn(2, "second said"), turn(3, "third said")
    elsewhere = turn(2, "the same id in another session", session="s9")
    for t in (done, source, other, elsewhere):
        j.append(t)
    j.mark_done([done])
    j.close()

    finished = compact_journal(path, {("s1", source.id)})

    assert finished == [source]
    text = path.read_text()
    assert "first said" not in text and "second said" not in text
    j, pending = reopen(path)
    assert pending == [other, elsewhere]
    assert j.seen(done) and j.seen(source)  # fed again, neither is extracted again
    j.close()
    assert compact_journal(tmp_path / "none.jsonl", {("s1", "t1")}) == []
    assert not (tmp_path / "none.jsonl").exists()
