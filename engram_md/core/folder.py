"""Reading a memory folder that someone else may have prepared.

The folder is reviewed with git and edited by people, so it can hold what we never write: a
symbolic link (to a file or a folder anywhere on the machine), a device, a named pipe (which
would block a plain ``read`` for ever), a socket, a file of gigabytes, a file nobody may read,
a name with control characters. Every read of the folder goes through here:

- :func:`markdown_files` walks a folder without following links and yields only regular
  ``*.md`` files; each odd entry is reported in one log line and skipped;
- :func:`read_file` opens one file without following a link, refuses anything but a regular
  file under :data:`MAX_FILE_BYTES`, and says why in a :class:`MemoryFileError`.

So nothing outside the folder is read through it, and the rest of the folder is consolidated,
indexed and forgotten as usual. Writes stay inside by :meth:`MemoryLayout.inside`.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import regex

from .atomic import is_temp_file
from .errors import MemoryFileError

log = logging.getLogger(__name__)

# Far above any file we write (a fact is a few KB; an entity page linking 10k facts ~1 MB),
# far below what would strain memory when a planted file is read whole.
MAX_FILE_BYTES = 4 * 1024 * 1024

_CONTROL = regex.compile(r"[\x00-\x1f\x7f-\x9f]")

# The folder is walked several times per command (consolidation reads it, then the index
# reconcile does), and every batch in a daemon: one line per odd entry and reason is enough.
_reported: set[str] = set()


def printable(text: str) -> str:
    """``text`` with control characters escaped, so a hostile name stays on one line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _report(path: Path, base: Path, reason: str) -> None:
    try:
        shown = path.relative_to(base).as_posix()
    except ValueError:
        shown = str(path)
    line = f"skipped {printable(shown)}: {reason}"
    if line not in _reported:
        _reported.add(line)
        log.warning("%s", line)


def _odd(entry: os.DirEntry[str], limit: int) -> str | None:
    """Why ``entry`` cannot be read as a file of the folder, or None when it can."""
    if _CONTROL.search(entry.name):
        return "its name holds control characters"
    if entry.is_symlink():
        return "a symbolic link (not followed)"
    mode = entry.stat(follow_symlinks=False).st_mode
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        return "not a regular file (a device, a pipe or a socket)"
    if entry.stat(follow_symlinks=False).st_size > limit:
        return f"larger than {limit // (1024 * 1024)} MiB"
    return None


def markdown_files(root: Path, *, base: Path, limit: int = MAX_FILE_BYTES) -> Iterator[Path]:
    """Every regular ``*.md`` file under ``root`` (temp files left out), in sorted order.

    Links are not followed, into files or folders. An odd entry (a link, a device, a pipe, a
    socket, a file over ``limit``, a name with control characters, a folder that cannot be
    listed) is reported once, by its path relative to ``base``, and skipped. Folders and
    non-markdown files pass silently, as they always have.
    """
    if root.is_symlink():
        _report(root, base, "a symbolic link (not followed)")
        return
    if not root.is_dir():
        return
    found: list[Path] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            _report(folder, base, f"cannot be listed: {exc.strerror}")
            continue
        for entry in entries:
            path = folder / entry.name
            try:
                reason = _odd(entry, limit)
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:  # removed while we looked, or not stat-able
                reason, is_dir = f"cannot be read: {exc.strerror}", False
            if reason is not None:
                if entry.name.endswith(".md") or entry.is_symlink() or _CONTROL.search(entry.name):
                    _report(path, base, reason)
                continue
            if is_dir:
                folders.append(path)
            elif entry.name.endswith(".md") and not is_temp_file(path):
                found.append(path)
    yield from sorted(found)


def read_file(path: Path, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, never through a link.

    Raises :class:`MemoryFileError` saying why not: a link, not a regular file, over
    ``limit``, a name with control characters, or unreadable (permissions, gone).
    """
    shown = printable(str(path))
    if _CONTROL.search(path.name):
        raise MemoryFileError(shown, "its name holds control characters")
    # O_NONBLOCK: opening a named pipe for reading must not wait for a writer.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemoryFileError(shown, "a symbolic link (not followed)") from exc
        raise MemoryFileError(shown, f"cannot read: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise MemoryFileError(shown, "a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise MemoryFileError(shown, "not a regular file (a device, a pipe or a socket)")
        if info.st_size > limit:
            raise MemoryFileError(shown, f"larger than {limit // (1024 * 1024)} MiB")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise MemoryFileError(shown, f"cannot read: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while we read
        raise MemoryFileError(shown, f"larger than {limit // (1024 * 1024)} MiB")
    return data


def read_text(path: Path) -> str | None:
    """The text of a regular file of the folder, or None when there is none to read: missing,
    a link, a pipe, too large, not UTF-8 (a derived page we would then write afresh)."""
    try:
        return read_file(path).decode("utf-8")
    except (MemoryFileError, UnicodeDecodeError):
        return None
