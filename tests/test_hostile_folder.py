"""A memory folder someone else prepared: links, devices, pipes, sockets, huge files,
unreadable files and names with control characters are each reported in one line and
skipped; the other files are consolidated, indexed and forgotten as usual, and nothing is
read or written outside the folder."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engram_md.consolidate.planner import load_facts
from engram_md.core import folder
from engram_md.core.errors import MemoryFileError
from engram_md.core.folder import MAX_FILE_BYTES, markdown_files, read_file
from engram_md.core.paths import MemoryLayout
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact, write_fact

from .conftest import Cli
from .test_path_safety import _fact

DAY = "2026-03-02"


def _layout(root: Path) -> MemoryLayout:
    layout = MemoryLayout(root / "memory", root / "state")
    layout.ensure()
    return layout


def _good(layout: MemoryLayout, n: int) -> Path:
    path = layout.facts_dir / DAY / f"fact-09020{n}-0000000{n}.md"
    write_fact(path, _fact(id=f"fact-20260302-09020{n}-0000000{n}", content=f"Dana owns {n} cats."))
    return path


def _outside_fact(root: Path) -> Path:
    """A valid fact file outside the memory folder: reading it through a link would make
    someone else's file a memory."""
    target = root / "elsewhere" / "fact.md"
    write_fact(target, _fact(id="fact-20260302-090300-99999999", content="Planted fact."))
    return target


@contextmanager
def _socket_file(path: Path) -> Iterator[None]:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError as exc:  # a socket path over 107 bytes
        server.close()
        pytest.skip(f"cannot bind a unix socket here: {exc}")
    try:
        yield
    finally:
        server.close()


def _plant(layout: MemoryLayout, root: Path) -> dict[str, str]:
    """Every odd entry, by its path under memory/ -> the reason it is skipped."""
    day = layout.facts_dir / DAY
    day.mkdir(parents=True, exist_ok=True)
    outside = _outside_fact(root)
    (day / "link-090300-11111111.md").symlink_to(outside)
    (layout.facts_dir / "2026-03-05").symlink_to(outside.parent, target_is_directory=True)
    os.mkfifo(day / "pipe-090400-22222222.md")
    with open(day / "big-090500-33333333.md", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no real megabytes written
    for name in ("ctl-0906\n00-44444444.md", "esc-\x1b[31m-55555555.md"):
        write_fact(day / name, _fact(id=f"fact-{len(name)}", content="A name to hide."))
    (layout.boxes_dir / DAY).mkdir(parents=True, exist_ok=True)
    (layout.boxes_dir / DAY / "box-evil.md").symlink_to("/etc/hostname")
    # Pages consolidation writes: a link to a file outside, a pipe.
    (layout.memory_dir / "profile.md").symlink_to(outside)
    os.mkfifo(layout.memory_dir / "IDENTITY.md")
    return {
        f"facts/{DAY}/link-090300-11111111.md": "a symbolic link (not followed)",
        "facts/2026-03-05": "a symbolic link (not followed)",
        f"facts/{DAY}/pipe-090400-22222222.md": "not a regular file",
        f"facts/{DAY}/big-090500-33333333.md": "larger than 4 MiB",
        f"facts/{DAY}/ctl-0906\\x0a00-44444444.md": "control characters",
        f"facts/{DAY}/esc-\\x1b[31m-55555555.md": "control characters",
        f"boxes/{DAY}/box-evil.md": "a symbolic link (not followed)",
        "profile.md": "not a regular file",
    }


# ---------------------------------------------------------------- in-process


def test_the_walk_yields_regular_files_and_reports_each_odd_entry_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    layout = _layout(tmp_path)
    good = [_good(layout, 1), _good(layout, 2)]
    planted = _plant(layout, tmp_path)
    caplog.set_level(logging.WARNING, logger="engram_md")
    store = MemoryStore.open(layout, fsync=False)
    assert list(store.fact_paths()) == good
    assert list(store.fact_paths()) == good  # walked again: reported once only
    lines = [r.getMessage() for r in caplog.records]
    assert all("\n" not in line for line in lines)
    facts_planted = {k: v for k, v in planted.items() if k.startswith("facts/")}
    for rel, reason in facts_planted.items():
        hits = [line for line in lines if line.startswith(f"skipped {rel}:")]
        assert len(hits) == 1 and reason in hits[0], (rel, lines)
    assert len(lines) == len(facts_planted)


def test_read_file_refuses_links_pipes_devices_and_huge_files(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    _plant(layout, tmp_path)
    day = layout.facts_dir / DAY
    for name, reason in (
        ("link-090300-11111111.md", "symbolic link"),
        ("pipe-090400-22222222.md", "not a regular file"),  # and it does not block
        ("big-090500-33333333.md", "larger than"),
        ("ctl-0906\n00-44444444.md", "control characters"),
    ):
        with pytest.raises(MemoryFileError, match=reason) as caught:
            read_fact(day / name)
        assert "\n" not in str(caught.value)
    with pytest.raises(MemoryFileError, match="a folder"):
        read_file(layout.facts_dir)
    device = day / "null-090700-66666666.md"
    try:
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        return  # no CAP_MKNOD here: the pipe above stands for special files
    with pytest.raises(MemoryFileError, match="not a regular file"):
        read_fact(device)


def test_a_socket_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    layout = _layout(tmp_path)
    good = _good(layout, 1)
    caplog.set_level(logging.WARNING, logger="engram_md")
    with _socket_file(layout.facts_dir / DAY / "s.md"):
        assert list(markdown_files(layout.facts_dir, base=layout.memory_dir)) == [good]
        assert "not a regular file" in caplog.text


def test_an_unreadable_file_is_reported_and_the_rest_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permissions cannot stop root, so the refusal is made where the file is opened."""
    layout = _layout(tmp_path)
    good = _good(layout, 1)
    locked = _good(layout, 2)
    real_open = os.open

    def refusing(path: object, flags: int, *args: int) -> int:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(folder.os, "open", refusing)
    loaded = load_facts(MemoryStore.open(layout, fsync=False, rebuild_missing=False))
    assert [p for p, _ in loaded.facts] == [good]
    assert len(loaded.broken) == 1 and "cannot read: Permission denied" in loaded.broken[0]


def test_a_link_in_place_of_a_fact_is_replaced_never_written_through(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    target = _outside_fact(tmp_path)
    before = target.read_bytes()
    link = layout.facts_dir / DAY / "fact-090300-99999999.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    write_fact(link, _fact(id="fact-20260302-090300-99999999", content="Ours now."))
    assert target.read_bytes() == before
    assert not link.is_symlink() and read_fact(link).content == "Ours now."


# ---------------------------------------------------------------- the commands


def _snapshot(root: Path) -> dict[Path, tuple[int, int]]:
    out = {}
    for path in root.rglob("*"):
        info = path.lstat()
        out[path] = (info.st_mtime_ns, info.st_size)
    return out


@pytest.fixture
def prepared(cli: Cli) -> dict[str, str]:
    """A folder with real memories from an ingest, then every kind of odd entry planted."""
    rows = [
        {"role": "user", "content": text, "timestamp": f"2026-03-02T09:0{i}:00Z",
         "id": f"t{i}", "session": "s", "name": "Dana"}
        for i, text in enumerate([
            "I prefer green tea over coffee.",
            "We decided to move the billing service to Rust.",
            "My sister Maren lives in Utrecht.",
        ])
    ]  # fmt: skip
    transcript = cli.root / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = cli("ingest", str(transcript))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    transcript.unlink()
    return _plant(MemoryLayout(cli.memory, cli.state), cli.root)


def _real_memories(cli: Cli) -> list[Path]:
    """The fact files the ingest wrote (the planted entries have other shapes or names)."""
    return [
        p
        for p in (cli.memory / "facts" / DAY).iterdir()
        if stat.S_ISREG(p.lstat().st_mode)
        and p.lstat().st_size <= MAX_FILE_BYTES
        and p.name.isprintable()
    ]


def _skips(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("engram-md: skipped ")]


@pytest.mark.parametrize(
    "command",
    [("consolidate",), ("reindex",), ("doctor",), ("forget", "green tea", "--yes"), ("status",)],
)
def test_commands_skip_the_odd_entries_and_do_the_rest(
    cli: Cli, prepared: dict[str, str], command: tuple[str, ...]
) -> None:
    outside = cli.root / "elsewhere"
    before_outside = _snapshot(outside)
    assert len(_real_memories(cli)) >= 3
    result = cli(*command)
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "ValueError" not in stderr
    assert result.returncode == 0, stderr[-3000:] + result.stdout.decode()[-2000:]
    # Each odd entry the command walked past is named once, on one line.
    for line in _skips(stderr):
        assert sum(1 for other in _skips(stderr) if other == line) == 1
    named = {line.split(": ", 2)[1].removeprefix("skipped ") for line in _skips(stderr)}
    if command[0] in ("consolidate", "reindex", "doctor"):
        fact_entries = {rel for rel in prepared if rel.startswith("facts/")}
        assert fact_entries <= named, stderr
    if command[0] == "consolidate":
        assert "profile.md" in named, stderr
    assert _snapshot(outside) == before_outside, "something outside the folder changed"
    assert not list(cli.root.glob("*.md")) and not (cli.root.parent / "evil").exists()


def test_consolidation_still_sees_every_real_memory(cli: Cli, prepared: dict[str, str]) -> None:
    result = cli("consolidate", "--json")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    report = json.loads(result.stdout)
    text = json.dumps(report)
    assert "Planted fact" not in text and "elsewhere" not in text
    # The memories of the ingest are all read and planned over; the planted files are not
    # even unreadable facts to it: they were never opened.
    assert report["summary"]["facts"] == len(_real_memories(cli)) >= 3, report["summary"]
    assert report["summary"]["broken"] == []
