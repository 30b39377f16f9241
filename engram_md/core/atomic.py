"""Atomic file writes: a temp file in the same folder, fsync, then os.replace.

A reader (or a crash) sees the old file or the new one, never half of either. Temp files are
named ``.<name>.tmp-<pid>`` so `doctor` can recognise orphans left by a kill -9.
"""

from __future__ import annotations

import os
from pathlib import Path

from .crashpoints import crashpoint

TMP_MARKER = ".tmp-"


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARKER}{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        crashpoint("file.rename")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:
            # A write or fsync error (a full disk) names no file; the caller's message should.
            exc.filename = str(path)
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def is_temp_file(path: Path) -> bool:
    return path.name.startswith(".") and TMP_MARKER in path.name


def sweep_temp_files(root: Path) -> int:
    """Delete temp files a killed writer left under ``root``; returns how many.

    Call only while holding the writer lock: then no write is in flight, every temp file is
    an orphan, and the file it would have replaced is whole (the rename is atomic).
    """
    removed = 0
    if not root.is_dir():
        return 0
    for path in root.rglob(f".*{TMP_MARKER}*"):
        if is_temp_file(path) and path.is_file():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
