"""The daemon's allocator settings, each in a fresh interpreter so this one is untouched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engram_md.core.allocator import _glibc


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_arrow_buffers_come_from_malloc_once_routed() -> None:
    code = (
        "import pyarrow as pa\n"
        "from engram_md.core.allocator import route_arrow_to_malloc\n"
        "route_arrow_to_malloc()\n"
        "table = pa.table({'x': list(range(100_000))}).combine_chunks()\n"
        "print(pa.default_memory_pool().backend_name,"
        " pa.system_memory_pool().bytes_allocated() >= 800_000)\n"
    )
    backend, counted = _run(code).split()
    assert backend == "system"
    assert counted == "True"  # the new buffer is the system pool's


@pytest.mark.skipif(_glibc() is None, reason="the arena limit and trim are glibc's")
def test_trim_hands_freed_pages_below_a_live_block_back() -> None:
    # Freed memory under a block still in use cannot be returned by shrinking the heap; only
    # the trim gives those pages back, which is what a long-running daemon needs.
    code = (
        "import gc\n"
        "from engram_md.core.allocator import limit_arenas, release_free_memory\n"
        "def anon_mb():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('RssAnon:'):\n"
        "            return int(line.split()[1]) // 1024\n"
        "limit_arenas()\n"
        "blocks = [bytearray(1000) for _ in range(100_000)]\n"
        "pinned = bytearray(1000)\n"
        "del blocks\n"
        "gc.collect()\n"
        "before = anon_mb()\n"
        "release_free_memory()\n"
        "print(before, anon_mb())\n"
    )
    before, after = map(int, _run(code).split())
    assert before - after >= 50, (before, after)  # of the ~100 MB freed
