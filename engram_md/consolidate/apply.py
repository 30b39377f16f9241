"""Applying a consolidation plan: the safety rail, then one atomic write per file.

First the standings go to ``state/access.jsonl`` (the recalls the plan read folded in, in one
atomic replace): before any file, so a file of an older version loses its counters only once
``state/`` holds them. Then the files: the plan is ordered so that a survivor is written
before the fact it retires (:func:`.combine.combine`): a run killed between two writes leaves
a folder the next run finishes, never a retired fact pointing at a successor that does not
know it. After the files, the index and the hash index follow.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.atomic import atomic_write_text, sweep_temp_files
from ..core.crashpoints import crashpoint
from ..core.errors import EngramError, UnsafePathError
from ..core.folder import read_text
from ..core.models import Fact, MemoryKind
from ..core.paths import MemoryLayout
from ..core.telemetry import ActionLog
from ..core.workers import map_spread
from ..index.indexer import Indexer
from ..store.access import AccessLog
from ..store.fact_store import MemoryStore
from ..store.factfile import write_fact
from ..store.read_cache import ReadCache, render_for_cache
from .plan import Change, FactCreate, FactMove, FactUpdate, FileWrite, Plan, Progress
from .report import relative_path

log = logging.getLogger(__name__)


# Up to this many changes, each file is synced as it is written (see apply_plan).
SYNC_EACH_UP_TO = 32


class RetireLimitError(EngramError):
    """A run would retire more active facts than ``consolidate.max_retire_fraction`` allows."""


def check_retire_limit(plan: Plan, max_fraction: float) -> None:
    """The safety rail: raise :class:`RetireLimitError` when ``plan`` retires more active
    facts than one run may (``max_fraction`` of them; see :func:`.plan.retire_allowance`)."""
    if plan.over_limit:
        raise RetireLimitError(
            f"this run would retire {plan.retiring} of {plan.active} active facts, more than "
            f"consolidate.max_retire_fraction ({max_fraction:.0%}, "
            f"{plan.allowed} facts) allows; review it with --dry-run, then run with --force"
        )


def sweep_orphans(layout: MemoryLayout) -> int:
    """Delete temp files a killed writer left in ``memory/`` (``.<name>.tmp-<pid>``).

    Only called by a run that holds the writer lock, so no write is in flight.
    """
    return sweep_temp_files(layout.memory_dir)


def _telemetry_action(change: Change) -> str:
    if isinstance(change, FactCreate):
        episode = change.fact.memory_kind is MemoryKind.EPISODE
        return "store_episode" if episode else "store_note"
    if isinstance(change, FileWrite):
        return "create_artifact"
    return "update_note"


def _memory_id(change: Change) -> str | None:
    if isinstance(change, FactUpdate | FactMove):
        return change.after.id
    if isinstance(change, FactCreate):
        return change.fact.id
    return None


def apply_change(
    layout: MemoryLayout, change: Change, *, fsync: bool = True, rendered: str | None = None
) -> bool:
    """Write one change atomically. Returns whether anything on disk changed. ``rendered``:
    a fact change's file, rendered beforehand (:func:`render_fact_changes`)."""
    if isinstance(change, FactUpdate):
        return write_fact(layout.inside(change.path), change.after, fsync=fsync, text=rendered)
    if isinstance(change, FactCreate):
        return write_fact(layout.inside(change.path), change.fact, fsync=fsync, text=rendered)
    if isinstance(change, FactMove):
        # Target first: a kill in between leaves two copies (the live one wins the index) and
        # the next run plans the move again, finding the target already right.
        target = layout.inside(change.target)
        wrote = write_fact(target, change.after, fsync=fsync, text=rendered)
        if change.source != change.target and change.source.exists():
            layout.inside(change.source).unlink()
            wrote = True
        return wrote
    path = change.path
    state_root = layout.state_dir.resolve()
    # A planted link, pipe or device in a page's place, or a folder linked out, is left as
    # it is and reported; the rest of the run goes on.
    if path.is_symlink() or (path.exists() and not path.is_file()):
        shown = relative_path(layout, path)
        log.warning("skipped %s: not a regular file (a link, a device or a pipe)", shown)
        return False
    try:
        if state_root not in path.resolve().parents:
            layout.inside(path)  # derived files live in memory/ or state/, nowhere else
    except UnsafePathError:
        shown = relative_path(layout, path)
        log.warning("skipped %s: its folder is a link out of the memory folder", shown)
        return False
    if read_text(path) == change.text:
        return False
    atomic_write_text(path, change.text, fsync=fsync)
    return True


@dataclass(frozen=True)
class Pause:
    """A test hook: sleep ``seconds`` after ``after`` written files (kill -9 tests)."""

    after: int
    seconds: float

    @classmethod
    def from_env(cls, value: str | None) -> Pause | None:
        if not value:
            return None
        after, _, seconds = value.partition(":")
        try:
            return cls(int(after), float(seconds or 60))
        except ValueError:
            return None


def _note_written(cache: ReadCache, change: Change, read_back: tuple[Fact, int] | None) -> None:
    """What the read cache knows of the files ``change`` wrote or moved away."""
    written = _fact_written(change)
    if written is None:
        return
    if isinstance(change, FactMove) and change.source != change.target:
        cache.gone(change.source)
    if read_back is None:
        cache.gone(written[1])
    else:
        cache.read(written[1], *read_back)


def _fact_written(change: Change) -> tuple[Fact, Path] | None:
    """The fact a change writes and where, or None for a change of another file."""
    if isinstance(change, FactCreate):
        return change.fact, change.path
    if isinstance(change, FactUpdate):
        return change.after, change.path
    if isinstance(change, FactMove):
        return change.after, change.target
    return None


Rendered = tuple[str, tuple[Fact, int] | None]


def render_fact_changes(changes: Sequence[Change]) -> dict[int, Rendered]:
    """The file of each fact change, by its place in ``changes``, and the fact a later read
    of it gives (for the read cache): rendering YAML is most of the cost of writing a fact,
    and a large run renders on all cores (:mod:`..core.workers`)."""
    written = [(place, _fact_written(change)) for place, change in enumerate(changes)]
    items = [(place, item) for place, item in written if item is not None]
    texts = map_spread(render_for_cache, [item for _, item in items])
    return {place: text for (place, _), text in zip(items, texts, strict=True)}


def apply_plan(
    plan: Plan,
    layout: MemoryLayout,
    store: MemoryStore,
    *,
    indexer: Indexer | None,
    actions: ActionLog,
    progress: Progress | None = None,
    pause: Pause | None = None,
    cache: ReadCache | None = None,
) -> int:
    """Write the standings, apply every change, then bring the index and the hash index up to
    date. ``cache`` learns each fact file written as the next run will read it."""
    AccessLog(layout.access_path).fold(plan.standings, plan.access_length)
    applied = 0
    total = len(plan.changes)
    rendered = render_fact_changes(plan.changes)
    # Each file is replaced atomically (a killed run leaves old or new bytes, never half).
    # Durability against power loss: a few files are synced as each is written; many at once
    # by one sync at the end, since two fsyncs a file cost 10+ ms each on a busy disk and
    # dominated large runs, and one sync flushes every disk of the machine (over a second
    # when other programs wrote much; a quiet run writes a file or two).
    each = store.fsync and total <= SYNC_EACH_UP_TO
    for done, change in enumerate(plan.changes, 1):
        crashpoint("consolidate.apply")
        text, read_back = rendered.get(done - 1, (None, None))
        wrote = apply_change(layout, change, fsync=each, rendered=text)
        if wrote:
            applied += 1
        if cache is not None:
            _note_written(cache, change, read_back)
        target = change.target if isinstance(change, FactMove) else change.path
        actions.record(
            _telemetry_action(change),
            "applied" if wrote else "skipped",
            change.reason,
            memory_id=_memory_id(change),
            change=change.action,
            path=relative_path(layout, target),
            source="consolidation",
        )
        if progress is not None:
            progress("applying", done, total)
        if pause is not None and applied == pause.after and wrote:
            time.sleep(pause.seconds)
    if store.fsync and applied and not each:
        os.sync()
    # The index learns each written fact as written (statements never change here, so vectors
    # are reused; a moved fact keeps its one row, now at the new path) in one write. The hash
    # index follows moved and created files.
    for change in plan.changes:
        written = _fact_written(change)
        if written is not None:
            fact, path = written
            if indexer is not None:
                indexer.upsert_fact(path, fact, new=isinstance(change, FactCreate))
            elif not isinstance(change, FactUpdate):
                store.hashes.add(fact.content_hash, layout.relative(path))
    if indexer is not None:
        indexer.flush()
    return applied
