"""Whether folders can be written, asked before a command changes anything.

A command that finds out half-way that it cannot write (a read-only mount, a folder owned by
someone else) leaves work half done; one that asks first changes nothing and says which folder
to fix. A full disk cannot be foreseen this way, but every write is atomic (temp file, then
rename), so it stops a command between two files, never inside one.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def check_writable(paths: Iterable[Path]) -> None:
    """Raise the :class:`OSError` a write to the first unwritable path would meet: EROFS for a
    read-only file system, EACCES for missing permission, with that path as its filename.

    A folder must also be searchable (``x``) to create or replace the files in it. Paths that
    do not exist are left out: whoever creates them finds out at their parent.
    """
    for path in paths:
        problem = unwritable(path)
        if problem is not None:
            raise problem


def unwritable(path: Path) -> OSError | None:
    """The error a write to ``path`` would meet, None when it can be written (or does not
    exist)."""
    try:
        info = os.statvfs(path)
    except FileNotFoundError:
        return None
    if info.f_flag & os.ST_RDONLY:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
    if not os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0)):
        return OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    return None


def folders(root: Path) -> Iterator[Path]:
    """``root`` and every folder under it, hidden ones (``.git``) and their contents left out."""
    for parent, names, _files in os.walk(root):
        names[:] = sorted(name for name in names if not name.startswith("."))
        yield Path(parent)
