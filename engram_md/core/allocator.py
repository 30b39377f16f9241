"""The native allocators of a long-running process (the arena limit and the trim are glibc's
and do nothing elsewhere; Arrow is routed to malloc everywhere).

LanceDB and onnxruntime work on pools of native threads, and glibc gives each such thread
its own malloc arena (up to eight per core). Memory freed in an arena is kept by it rather
than returned to the system, so a daemon's resident size creeps up with every index write it
makes although nothing it holds grows (lance-format/lance#7242). Two arenas, and a trim now
and then that hands free pages back, keep most of that from piling up; docs/RELIABILITY.md
has the daemon's size over a 100k-turn run.

Arrow's buffers are a third heap: pyarrow allocates them from its own mimalloc pool, which
keeps freed pages too (in a 50k-turn run it held 15-50 MB while Arrow had 2 MB allocated)
and which no trim here reaches. In the daemon they go through malloc instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

_M_ARENA_MAX = -8  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
# Blocks of at least this size get pages of their own, handed back when freed (see below).
MMAP_THRESHOLD_BYTES = 1 << 20


@cache
def _glibc() -> Any | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    # Only glibc has both; musl and the BSDs have neither, and need neither.
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None
    return libc


def limit_arenas(count: int = 2) -> None:
    """Let native threads share ``count`` arenas. Call before any thread pool starts: an
    arena a thread already has stays its own."""
    libc = _glibc()
    if libc is not None and not libc.mallopt(_M_ARENA_MAX, count):
        log.debug("mallopt(M_ARENA_MAX, %d) was refused", count)


def fix_mmap_threshold(size: int = MMAP_THRESHOLD_BYTES) -> None:
    """Serve blocks of ``size`` bytes and more from their own pages, always.

    glibc starts out that way (from 128 KiB), but each time such a block is freed it raises
    the threshold to that block's size, up to 32 MiB: after the first long text, the
    embedding model's working buffers of a few MiB came from the arenas and stayed there,
    fragmented. Fixing the threshold turns the adjustment off. An ingest of one LoCoMo
    conversation peaked at 455 MB before, at 32 texts of 256 tokens the model alone went from
    160 to 412 MB at its peak, and now to 262 MB."""
    libc = _glibc()
    if libc is not None and not libc.mallopt(_M_MMAP_THRESHOLD, size):
        log.debug("mallopt(M_MMAP_THRESHOLD, %d) was refused", size)


def route_arrow_to_malloc() -> None:
    """Allocate Arrow buffers with malloc, so the trim below returns them too. Call before
    the first Arrow buffer is made: a buffer is freed by the pool that made it, so earlier
    ones stay with the old pool (harmless, just not trimmed)."""
    import pyarrow  # deferred: commands that never touch Arrow should not load it

    pyarrow.set_memory_pool(pyarrow.system_memory_pool())


def release_free_memory() -> None:
    """Return the free pages of every arena to the system (a few milliseconds)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def set_up_long_work() -> None:
    """What every command that runs the pipeline or serves recall does first (the daemon,
    `ingest`, `import`, `serve`): before any native thread pool starts, see above."""
    limit_arenas()
    fix_mmap_threshold()
    route_arrow_to_malloc()


class PeriodicRelease:
    """:func:`release_free_memory` at most once every ``seconds``: cheap to call per batch."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._seconds = seconds
        self._clock = clock
        self._next = clock() + seconds

    def __call__(self) -> None:
        now = self._clock()
        if now >= self._next:
            release_free_memory()
            self._next = now + self._seconds
