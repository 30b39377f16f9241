"""`engram-md consolidate`: keep the memory folder healthy over months.

One run, in this order::

    plan (:mod:`.planner`: read every fact file -- parsing only those whose bytes the read
          cache does not know, store/read_cache.py -- find the new ones, judge them, run STEPS)
    -> safety rail -> (dry run: return the plan and stop)
    -> apply (:mod:`.apply`: one atomic file write at a time; index, hash index and access
       log follow) -> graph edges decay -> a report in state/reports/ (:mod:`.report`)
    -> state/consolidation.json (:mod:`.run_state`) and state/read-cache.json

Every step *plans* (returns :mod:`.plan` values) and nothing is written before the plan is
applied, so a dry run shows exactly what a real run would do and touches nothing, not even
``state/``. Because each run plans from what is on disk, a run killed half-way is finished by
the next one, and a run right after a finished one changes nothing in ``memory/``.

Concurrency: the CLI takes the writer lock and refuses (clearly) while the daemon runs; the
daemon consolidates in its own process on its schedule (:mod:`.schedule`), between two
extraction batches.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core.config import Config
from ..core.paths import MemoryLayout
from ..core.telemetry import ActionLog
from ..index.indexer import Indexer
from ..index.opened import FolderParts
from ..organize.graph import GraphStore
from ..store.fact_store import MemoryStore
from ..store.read_cache import ReadCache
from .apply import Pause, apply_plan, check_retire_limit, sweep_orphans
from .judge import Judge
from .plan import Plan, Progress, Step
from .planner import STEPS, plan_run
from .report import render_report, write_report
from .run_state import save_run
from .vectors import Vectors

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    """One run: its plan, how many files it wrote, moved or created, and its report."""

    plan: Plan
    applied: int  # files actually written, moved or created
    dry_run: bool
    report: Path | None = None


def consolidate(
    cfg: Config,
    layout: MemoryLayout,
    store: MemoryStore,
    *,
    now: datetime,
    vectors: Vectors,
    indexer: Indexer | None = None,
    judge: Judge | None = None,
    dry_run: bool = False,
    force: bool = False,
    full: bool = False,
    steps: Sequence[Step] = STEPS,
    progress: Progress | None = None,
    pause: Pause | None = None,
    graph: GraphStore | None = None,
) -> Result:
    """Plan, check the safety rail, and (unless ``dry_run``) apply one consolidation run.

    With ``graph`` (the writer's graph store), its edges decay by age as a last step.

    The caller holds the writer lock for a real run. Raises :class:`.apply.RetireLimitError` when
    the plan retires more active facts than allowed and ``force`` is not set; nothing is
    written then.
    """
    cache = ReadCache.load(layout.state_dir, layout.memory_dir)
    plan = plan_run(
        cfg, layout, store, now=now, vectors=vectors, judge=judge, steps=steps, full=full,
        progress=progress, cache=cache,
    )  # fmt: skip
    if dry_run:
        return Result(plan, 0, True)
    if not force:
        check_retire_limit(plan, cfg.consolidate.max_retire_fraction)
    swept = sweep_orphans(layout)
    if swept:
        log.info("removed %d temp file(s) left by an interrupted write", swept)
    applied = apply_plan(
        plan,
        layout,
        store,
        indexer=indexer,
        actions=ActionLog(layout.actions_path),
        progress=progress,
        pause=pause,
        cache=cache,
    )
    cache.save(fsync=store.fsync)
    if graph is not None:
        decayed = graph.apply_decay(now)
        if decayed:
            log.info("graph: %d edge(s) decayed", decayed)
    report = write_report(layout, render_report(plan, layout, applied=applied, dry_run=False))
    save_run(
        layout,
        epoch=plan.epoch,
        now=plan.now,
        changes=applied,
        report=report,
        pending=plan.unjudged,
        seen=plan.seen,
    )
    return Result(plan, applied, False, report)


def consolidate_folder(
    parts: FolderParts,
    *,
    now: datetime,
    judge: Judge | None = None,
    graph: GraphStore | None = None,
    dry_run: bool = False,
    force: bool = False,
    full: bool = False,
    progress: Progress | None = None,
    pause: Pause | None = None,
    steps: Sequence[Step] = STEPS,
) -> Result:
    """What `engram-md consolidate` does, over parts the composition root opened.

    A real run gets writer parts: the lock is held (a running daemon keeps the command from
    getting them: it consolidates on its own schedule) and the index was reconciled at open,
    so the plan starts from the folder as it is. A dry run gets reader parts and writes
    nothing: it reads the index as it stands and embeds what the index lacks without caching.
    """
    vectors = Vectors(parts.index, parts.embedder)
    if dry_run:
        return consolidate(
            parts.cfg, parts.layout, parts.store, now=now, vectors=vectors, judge=judge,
            dry_run=True, full=full, steps=steps, progress=progress,
        )  # fmt: skip
    return consolidate(
        parts.cfg, parts.layout, parts.store, now=now, vectors=vectors, indexer=parts.indexer,
        judge=judge, force=force, full=full, steps=steps, graph=graph, progress=progress,
        pause=pause,
    )  # fmt: skip
