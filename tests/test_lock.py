"""One writer per memory folder: a clear refusal for a second (whatever its state directory),
a short wait for a brief holder, no stale lock after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engram_md.core.errors import LockError
from engram_md.core.lock import WriterLock

# A child process that tries the lock and reports the outcome on stdout.
TRY_LOCK = """
import sys
import threading
from pathlib import Path
from engram_md.core.errors import LockError
from engram_md.core.lock import WriterLock
try:
    WriterLock(Path(sys.argv[1]), memory_dir=Path(sys.argv[2])).acquire()
except LockError as exc:
    print("LOCKED:", exc)
else:
    print("ACQUIRED")
"""

# A child process that takes the lock and holds it until it is killed.
HOLD_LOCK = """
import sys, time
from pathlib import Path
from engram_md.core.lock import WriterLock
WriterLock(Path(sys.argv[1])).acquire()
print("HELD", flush=True)
time.sleep(60)
"""


def run_child(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_acquire_writes_the_pid_and_release_lets_others_in(tmp_path: Path) -> None:
    path = tmp_path / "state" / "lock"
    lock = WriterLock(path, memory_dir=tmp_path / "memory")
    lock.acquire()
    assert path.read_text().strip() == str(os.getpid())
    lock.release()
    lock.release()  # idempotent
    assert run_child(TRY_LOCK, str(path), str(tmp_path / "memory")) == "ACQUIRED"


def test_second_writer_gets_a_lock_error_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "state" / "lock"
    memory = tmp_path / "memory"
    with WriterLock(path, memory_dir=memory):
        out = run_child(TRY_LOCK, str(path), str(memory))
    assert out.startswith("LOCKED:")
    assert f"pid {os.getpid()}" in out
    assert str(memory) in out
    # Once released, the next writer gets in.
    assert run_child(TRY_LOCK, str(path), str(memory)) == "ACQUIRED"


def test_second_acquire_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with WriterLock(path):
        with pytest.raises(LockError, match=f"pid {os.getpid()}"):
            WriterLock(path).acquire()
    # The refused attempt did not break the file or leave the lock taken.
    with WriterLock(path):
        assert path.read_text().strip() == str(os.getpid())


def test_lock_is_released_when_the_holder_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "state" / "lock"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "HELD"
        with pytest.raises(LockError, match=f"pid {child.pid}"):
            WriterLock(path).acquire()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    # The pid of the dead holder is still in the file, but the kernel dropped the flock.
    assert path.read_text().strip() == str(child.pid)
    deadline = time.monotonic() + 5
    while True:
        try:
            lock = WriterLock(path)
            lock.acquire()
            break
        except LockError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    assert path.read_text().strip() == str(os.getpid())
    lock.release()


def test_refusal_without_a_readable_pid_still_explains(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with WriterLock(path):
        path.write_text("garbage")
        with pytest.raises(LockError) as info:
            WriterLock(path).acquire()
    message = str(info.value)
    assert "pid" not in message
    assert "already writing" in message


def test_a_writer_with_another_state_dir_is_refused_on_the_same_memory_folder(
    tmp_path: Path,
) -> None:
    memory = tmp_path / "memory"
    mine = tmp_path / "state-a" / "lock"
    theirs = tmp_path / "state-b" / "lock"
    with WriterLock(mine, memory_dir=memory):
        out = run_child(TRY_LOCK, str(theirs), str(memory))
        assert out.startswith("LOCKED:")
        assert f"pid {os.getpid()}" in out  # found through the kernel's lock table
        assert str(memory) in out and "already writing" in out
        assert "state directory" in out
        # The refused attempt let go of its own state lock again.
        with WriterLock(theirs):
            pass
    assert list(memory.iterdir()) == []  # no lock file in the folder git tracks
    # Released together with the state lock: the other one gets in now.
    assert run_child(TRY_LOCK, str(theirs), str(memory)) == "ACQUIRED"


def test_another_memory_folder_with_its_own_state_is_not_blocked(tmp_path: Path) -> None:
    with WriterLock(tmp_path / "a" / "state" / "lock", memory_dir=tmp_path / "a" / "memory"):
        other = WriterLock(tmp_path / "b" / "state" / "lock", memory_dir=tmp_path / "b" / "memory")
        other.acquire()
        other.release()


def test_a_waiting_acquire_gets_the_lock_once_a_brief_holder_lets_go(tmp_path: Path) -> None:
    path, memory = tmp_path / "state" / "lock", tmp_path / "memory"
    brief = WriterLock(path, memory_dir=memory)
    brief.acquire()  # as a recall does while it reconciles the index
    timer = threading.Timer(0.3, brief.release)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(LockError):
            WriterLock(path, memory_dir=memory).acquire(wait_seconds=0)  # refused at once
        waiting = WriterLock(path, memory_dir=memory)
        waiting.acquire(wait_seconds=5)
    finally:
        timer.join()
    assert 0.25 <= time.monotonic() - started < 4
    assert path.read_text().strip() == str(os.getpid())
    waiting.release()


def test_a_waiting_acquire_still_refuses_a_holder_that_stays(tmp_path: Path) -> None:
    path, memory = tmp_path / "state" / "lock", tmp_path / "memory"
    with WriterLock(path, memory_dir=memory):
        started = time.monotonic()
        with pytest.raises(LockError, match=f"pid {os.getpid()}"):
            WriterLock(path, memory_dir=memory).acquire(wait_seconds=0.4)
        assert time.monotonic() - started >= 0.4
