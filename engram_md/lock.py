"""One writer per memory folder.

An advisory ``flock`` on ``state/lock``: the kernel drops it when the holder dies (even by
kill -9), so a stale lock never blocks a restart. The holder's pid is written into the file
only to make the refusal message useful.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from .errors import LockError


class WriterLock:
    def __init__(self, path: Path, *, memory_dir: Path | None = None) -> None:
        self.path = path
        self.memory_dir = memory_dir
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            folder = self.memory_dir or self.path.parent
            who = f" (pid {holder})" if holder else ""
            raise LockError(
                f"another engram-md{who} is already writing to {folder}; "
                "stop it first, or point this one at another folder with --memory-dir/--state-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None
