"""The order of a said file's turns, read for the context of a strong sentence."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram_md.recall.context import SaidOrder
from engram_md.store.said import SaidTurn, format_line

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
REL = "said/2026-03-02/s-1.md"


def write(memory: Path, turn_ids: list[str], *, mtime_ns: int | None = None) -> Path:
    path = memory / REL
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(
        format_line(SaidTurn(turn, "s-1", "Lee", T0 + timedelta(minutes=n), f"message {n}"))
        for n, turn in enumerate(turn_ids)
    )
    path.write_text(f"---\nsession: s-1\ndate: 2026-03-02\n---\n\n{body}\n")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_the_turns_around_one_are_read_in_file_order_nearest_first(tmp_path: Path) -> None:
    write(tmp_path, ["a", "b", "c", "d", "e"])
    order = SaidOrder(tmp_path)
    assert order.around(REL, "c", 2) == ("b", "d", "a", "e")
    assert order.around(REL, "a", 1) == ("b",)
    assert order.around(REL, "c", 0) == ()
    assert order.around(REL, "missing", 2) == ()
    # Only said files are read: a path from anywhere else names no turns.
    assert order.around("facts/2026-03-02/x.md", "c", 1) == ()
    assert order.around("../outside/said.md", "c", 1) == ()
    assert order.around("said/../../outside.md", "c", 1) == ()


def test_a_file_that_changed_is_read_again_and_one_gone_names_nothing(tmp_path: Path) -> None:
    write(tmp_path, ["a", "b"], mtime_ns=1_000_000_000)
    order = SaidOrder(tmp_path)
    assert order.around(REL, "b", 1) == ("a",)
    path = write(tmp_path, ["a", "b", "c"], mtime_ns=2_000_000_000)  # a batch added a turn
    assert order.around(REL, "b", 1) == ("a", "c")
    path.write_bytes(b"---\nsession: s-1\n\xff\xfe not text\n")
    os.utime(path, ns=(3_000_000_000, 3_000_000_000))
    assert order.around(REL, "b", 1) == ()  # unreadable: recall goes on without context
    path.unlink()
    assert order.around(REL, "b", 1) == ()


def test_only_the_files_most_recently_asked_about_are_kept(tmp_path: Path) -> None:
    order = SaidOrder(tmp_path, files_kept=2)
    for day in ("01", "02", "03"):
        rel = f"said/2026-03-{day}/s-1.md"
        path = tmp_path / rel
        path.parent.mkdir(parents=True)
        line = format_line(SaidTurn("a", "s-1", "Lee", T0, "hi"))
        path.write_text(f"---\nsession: s-1\ndate: 2026-03-{day}\n---\n\n{line}\n")
        assert order.around(rel, "a", 1) == ()
    assert list(order._orders) == ["said/2026-03-02/s-1.md", "said/2026-03-03/s-1.md"]
