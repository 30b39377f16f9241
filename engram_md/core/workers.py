"""Pure, CPU-bound work over many items, spread over the machine's cores.

Reading a fact file (YAML, validation) and reading the claims of its statement (a few dozen
patterns) each cost about 0.3 ms of Python; over a folder of 100k facts one process spends a
minute on them while the other cores idle. :func:`map_spread` hands such work to worker
processes in chunks and puts the results back in order.

Workers are started with ``spawn``: the calling process may hold threads (the index's, the
embedding model's) that a forked child would inherit half-way through a lock. A worker costs
about 0.3 s to start (it imports only the module of the function it runs), so small inputs,
one core, or a pool that cannot be started run here instead, with the same result.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 5_000  # below this the workers' start costs more than they save
CHUNK = 1_000
MAX_WORKERS = 8


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def map_spread(
    work: Callable[[list[T]], list[R]],
    items: Sequence[T],
    *,
    done: Callable[[int], None] | None = None,
) -> list[R]:
    """``work`` over ``items`` in chunks, one result per item, in order. ``work`` must be a
    module-level function (a worker imports it by name) that maps a list to a list of the
    same length. ``done(n)`` is told how many items are finished as chunks complete."""

    def here() -> list[R]:
        results = work(list(items))
        if done is not None:
            done(len(items))
        return results

    workers = min(cores(), MAX_WORKERS)
    if workers < 2 or len(items) < max(MIN_ITEMS, 2):
        return here()
    parts = [list(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)]
    try:
        return _spread(work, parts, workers, done)
    except (BrokenProcessPool, OSError) as exc:
        # A sandbox that forbids processes, or a worker killed: the work is pure, so it is
        # simply done here.
        log.warning("worker processes failed (%s); continuing in this process", exc)
        return here()


def _spread(
    work: Callable[[list[T]], list[R]],
    parts: list[list[T]],
    workers: int,
    done: Callable[[int], None] | None,
) -> list[R]:
    context = multiprocessing.get_context("spawn")
    finished = 0
    out: list[R] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for part, results in zip(parts, pool.map(work, parts), strict=True):
            if len(results) != len(part):
                raise ValueError(f"{work.__name__} returned {len(results)} of {len(part)}")
            out.extend(results)
            finished += len(part)
            if done is not None:
                done(finished)
    return out
