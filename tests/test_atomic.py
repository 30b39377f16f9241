"""Atomic writes: the old file or the new one, never half, and no temp file left behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from engram_md.core import atomic
from engram_md.core.atomic import atomic_write_bytes, atomic_write_text, is_temp_file


def test_writes_creates_parents_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "fact.md"
    atomic_write_text(target, "héllo\n")
    assert target.read_bytes() == "héllo\n".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["fact.md"]


def test_replaces_existing_content(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old old old old")
    atomic_write_bytes(target, b"new", fsync=False)
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_failed_write_keeps_the_old_file_and_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_interrupted_write_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.txt"

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert os.listdir(tmp_path) == []


def test_temp_file_name_is_recognised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []
    real_replace = os.replace

    def spy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(Path(src))
        assert Path(src).exists()
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    atomic_write_text(tmp_path / "fact.md", "x")
    assert len(seen) == 1
    assert seen[0].parent == tmp_path
    assert is_temp_file(seen[0])
    assert str(os.getpid()) in seen[0].name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (".fact.md.tmp-1234", True),
        (".x.tmp-1", True),
        ("fact.md", False),
        ("fact.md.tmp-1234", False),  # not hidden: not ours
        (".hidden.md", False),
        (".gitignore", False),
    ],
)
def test_is_temp_file(name: str, expected: bool) -> None:
    assert is_temp_file(Path("/somewhere") / name) is expected


def test_a_write_error_names_the_file_it_was_writing(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A full disk fails in write or fsync, where the OS names no file: the error then names
    the file being written, so the CLI's one line can say which."""

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", no_space)
    target = tmp_path / "facts" / "a.md"
    with pytest.raises(OSError) as caught:
        atomic.atomic_write_text(target, "hello")
    assert caught.value.filename == str(target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temp file left behind
