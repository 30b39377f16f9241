"""Reading transcript lines with a size limit, and tailing files with saved cursors."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import cast

import pytest

from engram_md.core.models import Turn
from engram_md.ingest import sources
from engram_md.ingest.sources import (
    Cursor,
    CursorStore,
    FileTail,
    RawLine,
    expand_watch_paths,
    read_lines,
)
from engram_md.ingest.transcripts import LineError


def lines_of(data: bytes, **kw: object) -> list[RawLine]:
    return list(read_lines(io.BytesIO(data), **kw))  # type: ignore[arg-type]


def msg(n: int, text: str | None = None, **extra: object) -> str:
    obj = {
        "role": "user",
        "content": text or f"message {n}",
        "id": f"m{n}",
        "session": "s1",
        "timestamp": f"2026-03-02T09:{n:02d}:00Z",
        **extra,
    }
    return json.dumps(obj) + "\n"


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def drain(tail: FileTail, *, final: bool = False) -> tuple[list[Turn], list[LineError]]:
    errors: list[LineError] = []
    turns: list[Turn] = []
    for batch in tail.read_new(errors.append, final=final):
        turns.extend(batch)
    return turns, errors


# ---------------------------------------------------------------- read_lines


def test_read_lines_numbers_and_offsets() -> None:
    out = lines_of(b"one\ntwo\n\nfour\n")
    assert [(r.lineno, r.data, r.size, r.end_offset) for r in out] == [
        (1, b"one", 4, 4),
        (2, b"two", 4, 8),
        (3, b"", 1, 9),
        (4, b"four", 5, 14),
    ]


def test_read_lines_strips_crlf() -> None:
    out = lines_of(b"a: 1\r\nb: 2\r\n")
    assert [r.data for r in out] == [b"a: 1", b"b: 2"]
    assert [r.size for r in out] == [6, 6]
    assert out[-1].end_offset == 12


def test_read_lines_resumes_from_a_start_position() -> None:
    data = b"x\nyy\nzzz\n"
    out = list(read_lines(io.BytesIO(data[2:]), start_lineno=1, start_offset=2))
    assert [(r.lineno, r.data, r.end_offset) for r in out] == [(2, b"yy", 5), (3, b"zzz", 9)]


def test_partial_tail_is_read_only_when_asked() -> None:
    data = b"done\nhalf-writ"
    assert [r.data for r in lines_of(data)] == [b"done", b"half-writ"]
    kept = lines_of(data, partial_tail=False)
    assert [r.data for r in kept] == [b"done"]
    assert kept[-1].end_offset == 5  # the caller resumes at the start of the unfinished line


def test_overlong_line_is_skipped_and_the_next_is_intact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 16)
    monkeypatch.setattr(sources, "_CHUNK", 7)  # the skip loop needs several reads
    long = b"L" * 100
    data = b"short\n" + long + b"\n" + b"after\n" + b"y" * 16 + b"\n"
    out = lines_of(data)
    assert [r.lineno for r in out] == [1, 2, 3, 4]
    assert out[0].data == b"short"
    assert out[1].data is None
    assert out[1].size == 101  # the whole line including its newline
    assert out[1].end_offset == 6 + 101
    assert out[2].data == b"after"
    assert out[2].end_offset == 6 + 101 + 6
    assert out[3].data == b"y" * 16  # exactly at the limit: kept
    assert out[3].end_offset == len(data)


def test_overlong_last_line_without_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 8)
    out = lines_of(b"ok\n" + b"z" * 50)
    assert [(r.data, r.size, r.end_offset) for r in out] == [(b"ok", 3, 3), (None, 50, 53)]


def test_unfinished_overlong_line_is_left_for_later(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 8)
    growing = b"ok\n" + b"z" * 50
    out = lines_of(growing, partial_tail=False)
    assert [r.data for r in out] == [b"ok"]
    # Once the writer finishes the line, it is one skipped line and the next one is line 3.
    finished = growing + b"z" * 10 + b"\nnext\n"
    out = list(
        read_lines(io.BytesIO(finished[out[-1].end_offset :]), start_lineno=1, start_offset=3)
    )
    assert [(r.lineno, r.data) for r in out] == [(2, None), (3, b"next")]


# ---------------------------------------------------------------- CursorStore


def test_cursor_store_save_and_load(tmp_path: Path) -> None:
    store_path = tmp_path / "state" / "cursors.json"
    target = tmp_path / "t.jsonl"
    store = CursorStore(store_path)
    assert store.get(target) == Cursor()
    store.set(target, Cursor(offset=120, lineno=3, inode=42, reader={"session": "abc"}))
    store.save()
    again = CursorStore(store_path)
    assert again.get(target) == Cursor(120, 3, 42, {"session": "abc"})
    # Keys are resolved paths: another spelling of the same file finds the same cursor.
    assert again.get(tmp_path / "." / "t.jsonl").offset == 120
    assert again.get(tmp_path / "other.jsonl") == Cursor()


def test_cursor_store_tolerates_a_corrupt_file(tmp_path: Path) -> None:
    store_path = tmp_path / "cursors.json"
    store_path.write_text("{not json")
    assert CursorStore(store_path).get(tmp_path / "t.jsonl") == Cursor()
    store_path.write_text(json.dumps({"a": "not a mapping", str(tmp_path / "b"): {"offset": 7}}))
    store = CursorStore(store_path)
    assert store.get(tmp_path / "b").offset == 7
    assert store.get(tmp_path / "a") == Cursor()


# ---------------------------------------------------------------- FileTail


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text(msg(1) + msg(2), encoding="utf-8")
    return path


def test_tail_reads_only_new_lines(tmp_path: Path, transcript: Path) -> None:
    store = CursorStore(tmp_path / "cursors.json")
    tail = FileTail(transcript, store)
    turns, errors = drain(tail)
    assert [t.id for t in turns] == ["m1", "m2"] and errors == []
    assert drain(tail) == ([], [])
    append(transcript, msg(3))
    assert [t.content for t in drain(tail)[0]] == ["message 3"]
    cursor = store.get(transcript)
    assert cursor.offset == transcript.stat().st_size
    assert cursor.lineno == 3
    assert cursor.inode == transcript.stat().st_ino


def test_tail_resumes_across_instances_with_the_same_cursor_file(
    tmp_path: Path, transcript: Path
) -> None:
    cursors = tmp_path / "state" / "cursors.json"
    assert len(drain(FileTail(transcript, CursorStore(cursors)))[0]) == 2
    append(transcript, msg(3) + msg(4))
    # A restart: new store object, new tail, same file on disk.
    turns, _ = drain(FileTail(transcript, CursorStore(cursors)))
    assert [t.id for t in turns] == ["m3", "m4"]
    assert drain(FileTail(transcript, CursorStore(cursors)))[0] == []


def test_tail_leaves_an_unfinished_line_until_it_is_complete(
    tmp_path: Path, transcript: Path
) -> None:
    store = CursorStore(tmp_path / "cursors.json")
    tail = FileTail(transcript, store)
    drain(tail)
    line = msg(3)
    append(transcript, line[:20])
    assert drain(tail) == ([], [])  # no error for half a line either
    append(transcript, line[20:])
    assert [t.id for t in drain(tail)[0]] == ["m3"]


def test_tail_final_reads_an_unterminated_last_line(tmp_path: Path, transcript: Path) -> None:
    append(transcript, msg(3).rstrip("\n"))
    store = CursorStore(tmp_path / "cursors.json")
    assert [t.id for t in drain(FileTail(transcript, store))[0]] == ["m1", "m2"]
    assert [t.id for t in drain(FileTail(transcript, store), final=True)[0]] == ["m3"]


def test_tail_restarts_when_the_file_is_truncated(tmp_path: Path, transcript: Path) -> None:
    store = CursorStore(tmp_path / "cursors.json")
    tail = FileTail(transcript, store)
    drain(tail)
    with open(transcript, "w", encoding="utf-8") as handle:  # same inode, shorter content
        handle.write(msg(7))
    turns, _ = drain(tail)
    assert [t.id for t in turns] == ["m7"]
    assert store.get(transcript).lineno == 1


@pytest.mark.parametrize("offset", [10_000, 2**44, 2**63])
def test_a_cursor_past_the_end_without_an_inode_starts_over(
    tmp_path: Path, transcript: Path, offset: int
) -> None:
    """A damaged cursor file may hold any offset and no inode: seeking there raised."""
    cursors = tmp_path / "cursors.json"
    cursors.write_text(json.dumps({str(transcript.resolve()): {"offset": offset}}))
    turns, errors = drain(FileTail(transcript, CursorStore(cursors)))
    assert [t.id for t in turns] == ["m1", "m2"] and errors == []


def test_tail_restarts_when_the_file_is_replaced(tmp_path: Path, transcript: Path) -> None:
    store = CursorStore(tmp_path / "cursors.json")
    tail = FileTail(transcript, store)
    drain(tail)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text(msg(8) + msg(9) + msg(10), encoding="utf-8")  # longer than the old file
    os.replace(fresh, transcript)
    turns, _ = drain(tail)
    assert [t.id for t in turns] == ["m8", "m9", "m10"]


def test_tail_reports_bad_lines_and_keeps_going(tmp_path: Path, transcript: Path) -> None:
    append(transcript, "this is not a transcript line\n" + msg(4))
    turns, errors = drain(FileTail(transcript, CursorStore(tmp_path / "c.json")))
    assert [t.id for t in turns] == ["m1", "m2", "m4"]
    assert [(e.line, e.source) for e in errors] == [(3, str(transcript))]


def test_tail_reports_an_overlong_line(
    tmp_path: Path, transcript: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 200)
    append(transcript, msg(3, "x" * 500) + msg(4))
    turns, errors = drain(FileTail(transcript, CursorStore(tmp_path / "c.json")))
    assert [t.id for t in turns] == ["m1", "m2", "m4"]
    assert len(errors) == 1 and errors[0].line == 3 and "too long" in errors[0].reason


def test_tail_cursor_never_runs_ahead_of_the_consumer(tmp_path: Path, transcript: Path) -> None:
    store = CursorStore(tmp_path / "c.json")
    gen = cast(Generator[list[Turn], None, None], FileTail(transcript, store).read_new(print))
    first = next(gen)
    assert [t.id for t in first] == ["m1"]
    # The first line is handed out but not yet acknowledged by asking for the next.
    assert store.get(transcript).offset == 0
    next(gen)
    assert store.get(transcript).offset == len(msg(1).encode())
    gen.close()  # a consumer that stops here (e.g. killed) re-reads line 2 next time
    again, _ = drain(FileTail(transcript, store))
    assert [t.id for t in again] == ["m2"]


def test_tail_keeps_the_reader_state_across_restarts(tmp_path: Path) -> None:
    # An OpenClaw header names the session of every later message, even after a restart.
    path = tmp_path / "oc.jsonl"
    header = {"type": "session", "version": 3, "id": "sess-42", "timestamp": "2026-03-02T09:00:00Z"}

    def oc(n: int) -> str:
        entry = {
            "type": "message",
            "id": f"m{n}",
            "timestamp": f"2026-03-02T09:0{n}:00Z",
            "message": {"role": "user", "content": [{"type": "text", "text": f"hello {n}"}]},
        }
        return json.dumps(entry) + "\n"

    path.write_text(json.dumps(header) + "\n" + oc(1), encoding="utf-8")
    cursors = tmp_path / "cursors.json"
    assert [t.session for t in drain(FileTail(path, CursorStore(cursors)))[0]] == ["sess-42"]
    append(path, oc(2))
    turns, _ = drain(FileTail(path, CursorStore(cursors)))
    assert [(t.id, t.session) for t in turns] == [("m2", "sess-42")]


def test_tail_of_a_missing_file_yields_nothing(tmp_path: Path) -> None:
    store = CursorStore(tmp_path / "c.json")
    assert drain(FileTail(tmp_path / "absent.jsonl", store)) == ([], [])
    assert not (tmp_path / "c.json").exists()


def test_expand_watch_paths(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    (folder / "sub").mkdir(parents=True)
    for name in ["b.jsonl", "a.txt", "sub/c.log", "sub/d.json", "notes.md", ".hidden.jsonl"]:
        (folder / name).write_text("")
    named = tmp_path / "direct.dat"
    found = expand_watch_paths([folder, named])
    rel = [p.relative_to(tmp_path).as_posix() for p in found]
    assert rel == ["w/a.txt", "w/b.jsonl", "w/sub/c.log", "w/sub/d.json", "direct.dat"]
