"""One writer per memory folder.

Two advisory ``flock``s, taken together and released together:

* on ``state/lock``, a file that also holds the holder's pid, only to make a refusal useful;
* on the memory folder itself (a read-only directory descriptor, so no file is added to
  ``memory/`` and git stays clean). The state directory is chosen per process (it defaults to
  ./state under the working directory), so the first lock alone would let two writers with
  different state directories share one memory folder.

The kernel drops both when the holder dies (even by kill -9), so a stale lock never blocks a
restart.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from pathlib import Path
from types import TracebackType

from .errors import LockError

log = logging.getLogger(__name__)

# How long a command that starts writing waits for the folder: long enough to outlast a
# recall that holds the lock for a moment to reconcile the index, short enough that a second
# daemon is still refused promptly.
START_WAIT_SECONDS = 5.0
# How often a waiting acquire tries again.
_POLL_SECONDS = 0.05


class WriterLock:
    def __init__(self, path: Path, *, memory_dir: Path | None = None) -> None:
        self.path = path
        self.memory_dir = memory_dir
        self._fds: list[int] = []

    def acquire(self, *, wait_seconds: float | None = None) -> None:
        """Take the lock, or raise :class:`LockError` naming the holder and the folder.

        The attempt is repeated every 50 ms for ``wait_seconds`` (default
        :data:`START_WAIT_SECONDS`, what every writing command waits) before giving up:
        polling rather than blocking, so the wait is bounded and both locks are always taken
        together or not at all. A reader that only wants the lock if it is free passes 0.
        """
        wait = START_WAIT_SECONDS if wait_seconds is None else wait_seconds
        deadline = time.monotonic() + wait
        while True:
            refusal = self._try()
            if refusal is None:
                return
            if time.monotonic() >= deadline:
                raise LockError(refusal)
            time.sleep(_POLL_SECONDS)

    def _try(self) -> str | None:
        """One attempt at both locks: None when both are held, else why not (none is kept)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _flock(fd):
            holder = _read_pid(fd)
            os.close(fd)
            return _refusal(holder, self.memory_dir or self.path.parent)
        held = [fd]
        try:
            refusal = None if self.memory_dir is None else self._lock_folder(self.memory_dir, held)
        except BaseException:
            _unlock(held)
            raise
        if refusal is not None:
            _unlock(held)
            return refusal
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fds = held
        return None

    def _lock_folder(self, folder: Path, held: list[int]) -> str | None:
        """Lock the memory folder itself, adding its descriptor to ``held``; or say who has it."""
        folder.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            free = _flock(dir_fd)
        except OSError as exc:
            # Some file systems (NFS) cannot flock a directory: keep the state lock only.
            log.warning("cannot lock %s (%s); only %s guards it", folder, exc, self.path)
            os.close(dir_fd)
            return None
        if not free:
            holder = _flock_holder(dir_fd)
            os.close(dir_fd)
            return _refusal(holder, folder, other_state=self.path.parent)
        held.append(dir_fd)
        return None

    def release(self) -> None:
        _unlock(self._fds)
        self._fds = []

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


def _flock(fd: int) -> bool:
    """Try an exclusive flock without blocking: True if taken, False if someone holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fds: list[int]) -> None:
    for fd in reversed(fds):
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _refusal(holder: int | None, folder: Path, *, other_state: Path | None = None) -> str:
    who = f" (pid {holder})" if holder else ""
    if other_state is None:
        return (
            f"another engram-md{who} is already writing to {folder}; "
            "stop it first, or point this one at another folder with --memory-dir/--state-dir"
        )
    return (
        f"another engram-md{who} is already writing to {folder} (with a state directory "
        f"other than {other_state}); stop it first, or point this one at another memory "
        "folder with --memory-dir"
    )


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def _flock_holder(fd: int) -> int | None:
    """The pid holding a flock on ``fd``'s file, from /proc/locks (Linux); None if unknown.

    The memory folder has no room for a pid file (it would show up in git), so the kernel's
    own table is asked. Lines look like ``1: FLOCK  ADVISORY  WRITE 4242 fe:00:2163643 0 EOF``
    (device major:minor in hex, inode in decimal); waiters are marked ``->`` and skipped.
    """
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for line in table:
                parts = line.split()
                if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == key:
                    pid = int(parts[4]) if parts[4].isdigit() else 0
                    return pid or None  # 0: a holder outside our pid namespace
    except OSError:  # not Linux, or /proc not mounted
        pass
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts: it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
