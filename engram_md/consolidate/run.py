"""`engram-md consolidate`: keep the memory folder healthy over months.

One run, in this order::

    load every fact file (facts/ and archive/) -> which facts are new since the last run
    -> duplicates and contradictions (offline rules, or the LLM judge per cluster)
    -> the planning steps of STEPS, over the folder as the first step leaves it
    -> combine the plans per file -> safety rail -> (dry run: print and stop)
    -> apply, one atomic file write at a time -> index and hash index follow
    -> telemetry, access log folded, state/consolidation.json, a report in state/reports/

Every step *plans* (returns :mod:`engram_md.consolidate.plan` values) and only this module writes,
so a
dry run shows exactly what a real run would do and touches nothing, not even ``state/``.
Because each run plans from what is on disk, a run killed half-way is finished by the next
one, and a run right after a finished one changes nothing in ``memory/``.

"New since the last run" is an active fact whose statement the last finished run did not see
(a new fact, or one whose text was edited or merged since), or one the LLM judge could not
decide last time. The run remembers the content hash of every active fact it saw
(``seen`` in ``state/consolidation.json``), so a fact that was only re-stated, whose file is
rewritten with one more ``sourceTurnIds`` entry, is not judged again: in a long conversation
most extractions are such confirmations, and re-judging them would cost one LLM call per
fact per run. Runs before the first finished one see every fact as new.

Concurrency: the CLI takes the writer lock and refuses (clearly) while the daemon runs; the
daemon consolidates in its own process every ``consolidate.every_extractions`` extractions
through :class:`DaemonConsolidation`, between two extraction batches.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..core.atomic import atomic_write_text, sweep_temp_files
from ..core.config import Config
from ..core.crashpoints import crashpoint
from ..core.errors import EngramError, MemoryFileError
from ..core.models import Fact, MemoryKind, Status
from ..core.paths import MemoryLayout
from ..core.statefile import load_json, save_json
from ..core.telemetry import ActionLog
from ..index.indexer import Indexer
from ..index.opened import FolderParts
from ..index.table import MemoryIndex
from ..organize.graph import GraphStore
from ..store.fact_store import MemoryStore
from ..store.factfile import format_time, read_fact, write_fact
from ..text.embeddings import Embedder, l2_normalize
from .contradictions import (
    Profile,
    Relation,
    exact_duplicates,
    lineage_changes,
    offline_relations,
    subjects,
)
from .entities import plan_entities
from .folder_index import plan_folder_index
from .judge import Judge, Neighbours, judged_relations
from .lifecycle import plan_lifecycle
from .plan import Change, Context, FactCreate, FactMove, FactUpdate, FileWrite
from .profile import plan_profile

log = logging.getLogger(__name__)

Step = Callable[[Context], list[Change]]
Progress = Callable[[str, int, int], None]  # (stage, done, total)


class RetireLimitError(EngramError):
    """A run would retire more active facts than ``consolidate.max_retire_fraction`` allows."""


# The planning steps after duplicates/contradictions, in the order they run and combine.
STEPS: tuple[Step, ...] = (
    plan_lifecycle,  # heat/decay/tier, TTL, resolved commitments, archival
    plan_entities,  # memory/entities/*.md
    plan_profile,  # profile.md, IDENTITY.md
    plan_folder_index,  # state/topics.json, state/compression-guidelines.md
)


# ---------------------------------------------------------------- state


@dataclass(frozen=True)
class RunState:
    """``state/consolidation.json``: the epoch counter and what the last finished run saw."""

    epoch: int = 0
    extractions: int = 0  # the pipeline's extraction count when it ran (daemon schedule)
    pending: tuple[str, ...] = ()  # new facts the judge could not decide: judged next run
    # Fact id -> content hash of every active fact the last finished run saw; None before
    # the first finished run (every fact is new then).
    seen: Mapping[str, str] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> RunState:
        data = load_json(path, {})
        if not isinstance(data, dict):
            return cls()
        last = data.get("lastRun")
        if not isinstance(last, dict):
            last = {}
        pending = data.get("pending")
        seen = data.get("seen")
        return cls(
            epoch=_int(data.get("epoch")),
            extractions=_int(last.get("extractions")),
            pending=tuple(str(p) for p in pending) if isinstance(pending, list) else (),
            seen={str(k): str(v) for k, v in seen.items()} if isinstance(seen, dict) else None,
            raw=data,
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def extraction_count(layout: MemoryLayout) -> int:
    """How many extractions the pipeline has run in this folder (state/run-state.json)."""
    data = load_json(layout.run_state_path, {})
    return _int(data.get("extractions")) if isinstance(data, dict) else 0


# ---------------------------------------------------------------- access log


def read_access(path: Path) -> tuple[Counter[str], int]:
    """Recall counts from ``state/access.jsonl`` and the byte length they were read from.

    Only whole lines count; the length lets a finished run drop exactly what it folded while
    recalls keep appending.
    """
    import json

    counts: Counter[str] = Counter()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return counts, 0
    end = data.rfind(b"\n") + 1
    for raw in data[:end].splitlines():
        try:
            counts.update(str(i) for i in json.loads(raw)["ids"])
        except (ValueError, KeyError, TypeError):
            continue
    return counts, end


def _drop_access_prefix(path: Path, length: int) -> None:
    """Remove the first ``length`` bytes (folded into frontmatter) and keep what came after."""
    if length <= 0:
        return
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    atomic_write_text(path, data[length:].decode("utf-8", "replace"))


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """Everything a run would do, and the figures the safety rail and the summary need."""

    changes: tuple[Change, ...]
    now: datetime
    epoch: int
    total: int  # readable fact files
    active: int  # active facts under facts/
    new: int  # facts new since the last run
    retiring: int  # active facts this plan retires (status change or archival move)
    allowed: int  # what the safety rail allows
    broken: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # steps that failed, conflicting changes that were dropped
    unjudged: tuple[str, ...] = ()
    seen: Mapping[str, str] = field(default_factory=dict)  # what the next run compares with
    access_length: int = 0

    @property
    def over_limit(self) -> bool:
        return self.retiring > self.allowed


@dataclass(frozen=True)
class Result:
    plan: Plan
    applied: int  # files actually written, moved or created
    dry_run: bool
    report: Path | None = None


def retire_allowance(active: int, fraction: float) -> int:
    """How many active facts one run may retire. One is always allowed, so a small folder can
    still fix its one contradiction."""
    return max(1, int(active * fraction))


# ---------------------------------------------------------------- combining plans

_GROWING = frozenset(
    {"status_history", "merged_from", "supersedes", "source_turn_ids", "tags", "entities"}
)


def apply_diff(base: Fact, before: Fact, after: Fact) -> Fact:
    """What a step changed (``before`` → ``after``), applied on top of ``base``.

    Fields the step left alone keep ``base``'s value. List fields that only grow (status
    history, lineage, turns, tags, entities) get the step's new items appended, so two steps
    that each add a history entry both keep theirs.
    """
    changes: dict[str, Any] = {}
    for spec in fields(Fact):
        name = spec.name
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if name in _GROWING:
            current = getattr(base, name)
            changes[name] = (*current, *(x for x in new if x not in current))
        elif name == "extra":
            changes[name] = {**base.extra, **new}
        else:
            changes[name] = new
    return base.with_changes(**changes) if changes else base


View = Mapping[Path, Fact]  # the facts by path, as one step saw them


def advance(view: View, changes: Iterable[Change]) -> dict[Path, Fact]:
    """The folder as the next step sees it: ``view`` with ``changes`` applied (a moved fact
    appears at its new path, a created one at its path)."""
    out = dict(view)
    for change in changes:
        if isinstance(change, FactUpdate):
            out[change.path] = change.after
        elif isinstance(change, FactMove):
            out.pop(change.source, None)
            out[change.target] = change.after
        elif isinstance(change, FactCreate):
            out[change.path] = change.fact
    return out


def combine(
    plans: Sequence[tuple[Sequence[Change], View]],
    original: View,
) -> tuple[list[Change], list[str]]:
    """One change per file from the plans of all steps, in step order.

    Each plan comes with the view its step planned from: every step sees the folder as the
    steps before it left it (:func:`advance`), so a fact superseded by the first step is not
    also archived, and an entity page lists statuses as they will be. ``original`` is every
    fact as read from disk. The rule, deterministic and per file:

    * A FactUpdate contributes its diff (``before`` → ``after``), applied on top of the fact
      as the earlier steps left it (:func:`apply_diff`); the combined update goes from the
      fact on disk to the final fact, actions joined with ``+``, reasons with ``; ``.
    * A FactMove of a file carries every update to that file, earlier or later (a later step
      addresses the moved fact by its new path), to the target. A second move of the same
      file is dropped and reported.
    * FactCreate: the first for a path wins. FileWrite: the last for a path wins (a later
      step saw more). Either conflict is reported.

    The result is ordered for applying: creates, updates that keep a fact active (survivors,
    superseding facts), updates that retire one, moves, then derived files; by path within
    each group. A run killed in between thus never leaves a retired fact pointing at a
    successor that does not know it.
    """
    current: dict[Path, Fact] = {}
    labels: dict[Path, list[tuple[str, str]]] = {}
    moves: dict[Path, Path] = {}
    moved_from: dict[Path, Path] = {}  # target -> source
    creates: dict[Path, FactCreate] = {}
    writes: dict[Path, FileWrite] = {}
    notes: list[str] = []

    def base(path: Path, fallback: Fact) -> Fact:
        return current.get(path, original.get(path, fallback))

    for plan, view in plans:
        for change in plan:
            if isinstance(change, FactUpdate):
                path = moved_from.get(change.path, change.path)
                current[path] = apply_diff(base(path, change.before), change.before, change.after)
                labels.setdefault(path, []).append((change.action, change.reason))
            elif isinstance(change, FactMove):
                path = moved_from.get(change.source, change.source)
                if path in moves:
                    notes.append(f"{path}: a second move (to {change.target}) was dropped")
                    continue
                step_saw = view.get(change.source, original.get(path, change.after))
                current[path] = apply_diff(base(path, step_saw), step_saw, change.after)
                moves[path] = change.target
                moved_from[change.target] = path
                labels.setdefault(path, []).append((change.action, change.reason))
            elif isinstance(change, FactCreate):
                if change.path in creates:
                    notes.append(f"{change.path}: created twice; the first was kept")
                    continue
                creates[change.path] = change
            else:
                if change.path in writes:
                    notes.append(f"{change.path}: written by two steps; the later was kept")
                writes[change.path] = change

    def label(path: Path) -> tuple[str, str]:
        parts = labels[path]
        return "+".join(dict.fromkeys(a for a, _ in parts)), "; ".join(r for _, r in parts)

    keep: list[Change] = []
    retire: list[Change] = []
    moved: list[Change] = []
    for path in sorted(current):
        before = original.get(path)
        after = current[path]
        action, reason = label(path)
        if path in moves:
            moved.append(FactMove(path, moves[path], after, action, reason))
        elif before is not None and after != before:
            update = FactUpdate(path, before, after, action, reason)
            (retire if update.retires else keep).append(update)
    ordered: list[Change] = [creates[p] for p in sorted(creates)]
    ordered += keep + retire + moved + [writes[p] for p in sorted(writes)]
    return ordered, notes


def retiring(changes: Iterable[Change], original: Mapping[Path, Fact]) -> int:
    """Active facts that stop being active: what the safety rail counts."""
    count = 0
    for change in changes:
        if isinstance(change, FactUpdate) and change.retires:
            count += 1
        elif isinstance(change, FactMove):
            before = original.get(change.source)
            if before is not None and before.status is Status.ACTIVE:
                count += 1
    return count


# ---------------------------------------------------------------- loading


@dataclass
class Loaded:
    facts: list[tuple[Path, Fact]]
    broken: list[str]


def load_facts(store: MemoryStore, progress: Progress | None = None) -> Loaded:
    paths = list(store.fact_paths())
    loaded = Loaded([], [])
    for done, path in enumerate(paths, 1):
        try:
            fact = read_fact(path)
        except MemoryFileError as exc:
            loaded.broken.append(str(exc))
            continue
        except OSError:
            continue  # removed while we read: the folder wins
        loaded.facts.append((path, fact))
        if progress is not None and (done % 2000 == 0 or done == len(paths)):
            progress("reading facts", done, len(paths))
    return loaded


# ---------------------------------------------------------------- vectors


class Vectors:
    """Embeddings of facts: from the index when its row holds the same statement, else
    computed (uncached in a dry run, so nothing under ``state/`` is written)."""

    def __init__(self, index: MemoryIndex | None, embedder: Embedder | None) -> None:
        self.index = index
        self.embedder = embedder

    def matrix(self, facts: Sequence[Fact], wanted: np.ndarray) -> np.ndarray | None:
        """Unit vectors, one row per fact; rows not ``wanted`` are left zero."""
        dim = self.index.dim if self.index is not None else None
        if dim is None and self.embedder is not None:
            dim = self.embedder.dim
        if dim is None:
            return None
        out = np.zeros((len(facts), dim), dtype=np.float32)
        positions = np.flatnonzero(wanted).tolist()
        missing: list[int] = []
        if self.index is not None:
            for start in range(0, len(positions), 8192):
                chunk = positions[start : start + 8192]
                rows = self.index.get([facts[i].id for i in chunk])
                for i in chunk:
                    row = rows.get(facts[i].id)
                    if (
                        row is not None
                        and row.vector is not None
                        and (row.content_hash == facts[i].content_hash)
                    ):
                        out[i] = row.vector
                    else:
                        missing.append(i)
        else:
            missing = positions
        if missing:
            if self.embedder is None:
                return None
            out[missing] = self.embedder.embed([facts[i].content for i in missing])
        return l2_normalize(out) if len(out) else out

    def neighbours(self, k: int = 8) -> Neighbours | None:
        """The index's nearest active facts of a fact, for the judge's clusters."""
        index = self.index
        if index is None:
            return None

        def near(fact: Fact) -> list[tuple[str, float]]:
            try:
                hits = index.nearest(
                    fact.content, k + 1, where="status = 'active' AND kind = 'fact'"
                )
            except EngramError:
                return []
            return [(hit.row.id, hit.score) for hit in hits if hit.row.id != fact.id]

        return near


def involved(facts: Sequence[Fact], new: Sequence[bool]) -> np.ndarray:
    """Facts that share a subject with a new fact: the only ones whose vectors are needed."""
    keys_of = [subjects(f, Profile(f.content)) for f in facts]
    hot: set[str] = set()
    for keys, is_new in zip(keys_of, new, strict=True):
        if is_new:
            hot.update(keys)
    return np.array([bool(keys & hot) for keys in keys_of], dtype=bool)


# ---------------------------------------------------------------- planning


def _folder_order(layout: MemoryLayout, path: Path) -> tuple[bool, str]:
    """Store order: live facts before archived ones, then by path."""
    text = str(path)
    return (text.startswith(str(layout.archive_dir) + os.sep), text)


def plan_run(
    cfg: Config,
    layout: MemoryLayout,
    store: MemoryStore,
    *,
    now: datetime,
    vectors: Vectors,
    judge: Judge | None = None,
    steps: Sequence[Step] = STEPS,
    full: bool = False,
    progress: Progress | None = None,
) -> Plan:
    """Read the folder and plan a run. Pure with respect to the folder: writes nothing."""
    state = RunState.load(layout.consolidation_state_path)
    loaded = load_facts(store, progress)
    facts = loaded.facts
    original = {path: fact for path, fact in facts}
    pending = set(state.pending)

    seen = state.seen

    def is_new(fact: Fact) -> bool:
        if full or seen is None or fact.id in pending:
            return True
        return seen.get(fact.id) != fact.content_hash

    live = str(layout.facts_dir) + os.sep  # the store lists paths under it as it was given
    eligible = [
        (path, fact)
        for path, fact in facts
        if fact.status is Status.ACTIVE and str(path).startswith(live)
    ]
    new_mask = [is_new(f) for _, f in eligible]
    only = [f for _, f in eligible]
    unjudged: list[str] = []
    relations: list[Relation]
    if any(new_mask):
        matrix = vectors.matrix(only, involved(only, new_mask))
        if judge is None:
            relations = offline_relations(only, new_mask, matrix)
        else:
            exact = exact_duplicates(only, new_mask)

            def judged(done: int, total: int) -> None:
                if progress is not None:
                    progress("judging clusters", done, total)

            decided, unjudged = judged_relations(
                only, new_mask, matrix, judge, neighbours=vectors.neighbours(), progress=judged
            )
            relations = exact + decided
    else:
        relations = []
    by_id = {fact.id: (path, fact) for path, fact in eligible}
    first = lineage_changes(relations, by_id, now)
    access, access_length = read_access(layout.access_path)
    view: View = original
    plans: list[tuple[Sequence[Change], View]] = [(first, view)]
    view = advance(view, first)
    notes: list[str] = []
    for step in steps:
        name = getattr(step, "__qualname__", repr(step))
        if progress is not None:
            progress(f"planning: {name}", 0, 1)
        ctx = Context(
            cfg=cfg,
            layout=layout,
            now=now,
            epoch=state.epoch + 1,
            facts=sorted(view.items(), key=lambda item: _folder_order(layout, item[0])),
            access_counts=dict(access),
        )
        try:
            planned = step(ctx)
        except Exception as exc:  # a failing step must not block the others (fail open)
            log.exception("consolidation step %s failed; its changes are skipped", name)
            notes.append(f"step {name} failed: {exc}")
            continue
        plans.append((planned, view))
        view = advance(view, planned)
    changes, conflicts = combine(plans, original)
    active = sum(1 for path, fact in eligible)
    return Plan(
        changes=tuple(changes),
        now=now,
        epoch=state.epoch + 1,
        total=len(facts),
        active=active,
        new=sum(new_mask),
        retiring=retiring(changes, original),
        allowed=retire_allowance(active, cfg.consolidate.max_retire_fraction),
        broken=tuple(loaded.broken),
        notes=tuple(notes + conflicts),
        unjudged=tuple(unjudged),
        seen={fact.id: fact.content_hash for _, fact in eligible},
        access_length=access_length,
    )


# ---------------------------------------------------------------- applying


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


def apply_change(layout: MemoryLayout, change: Change, *, fsync: bool = True) -> bool:
    """Write one change atomically. Returns whether anything on disk changed."""
    if isinstance(change, FactUpdate):
        return write_fact(layout.inside(change.path), change.after, fsync=fsync)
    if isinstance(change, FactCreate):
        return write_fact(layout.inside(change.path), change.fact, fsync=fsync)
    if isinstance(change, FactMove):
        # Target first: a kill in between leaves two copies (the live one wins the index) and
        # the next run plans the move again, finding the target already right.
        wrote = write_fact(layout.inside(change.target), change.after, fsync=fsync)
        if change.source != change.target and change.source.exists():
            layout.inside(change.source).unlink()
            wrote = True
        return wrote
    path = change.path
    state_root = layout.state_dir.resolve()
    if state_root not in path.resolve().parents:
        layout.inside(path)  # derived files live in memory/ or state/, nowhere else
    try:
        if path.read_text(encoding="utf-8") == change.text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
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


def apply_plan(
    plan: Plan,
    layout: MemoryLayout,
    store: MemoryStore,
    *,
    indexer: Indexer | None,
    actions: ActionLog,
    progress: Progress | None = None,
    pause: Pause | None = None,
) -> int:
    """Apply every change, then bring the index and the hash index up to date."""
    applied = 0
    # Recall counts folded into frontmatter must leave the log, or recall counts them twice.
    folded_access = any(
        isinstance(c, FactUpdate) and c.before.access_count != c.after.access_count
        for c in plan.changes
    )
    total = len(plan.changes)
    for done, change in enumerate(plan.changes, 1):
        # Each file is replaced atomically (a killed run leaves old or new bytes, never half);
        # durability against power loss comes from one sync at the end instead of two fsyncs
        # per file, which cost 10+ ms each on a busy disk and dominated large runs.
        crashpoint("consolidate.apply")
        wrote = apply_change(layout, change, fsync=False)
        if wrote:
            applied += 1
        target = change.target if isinstance(change, FactMove) else change.path
        actions.record(
            _telemetry_action(change),
            "applied" if wrote else "skipped",
            change.reason,
            memory_id=_memory_id(change),
            change=change.action,
            path=_rel(layout, target),
            source="consolidation",
        )
        if progress is not None:
            progress("applying", done, total)
        if pause is not None and applied == pause.after and wrote:
            time.sleep(pause.seconds)
    if store.fsync and applied:
        os.sync()
    # The index learns each written fact as written (statements never change here, so vectors
    # are reused; a moved fact keeps its one row, now at the new path) in one write. The hash
    # index follows moved and created files.
    for change in plan.changes:
        if isinstance(change, FactUpdate | FactMove | FactCreate):
            fact = change.fact if isinstance(change, FactCreate) else change.after
            path = change.target if isinstance(change, FactMove) else change.path
            if indexer is not None:
                indexer.upsert_fact(path, fact, new=isinstance(change, FactCreate))
            elif not isinstance(change, FactUpdate):
                store.hashes.add(fact.content_hash, layout.relative(path))
    if indexer is not None:
        indexer.flush()
    if folded_access:
        _drop_access_prefix(layout.access_path, plan.access_length)
    return applied


def _rel(layout: MemoryLayout, path: Path) -> str:
    """``path`` relative to the memory folder (or as given outside it, e.g. state files).

    Paths here come from the store, under ``memory_dir`` as configured, so a string prefix
    answers without resolving symlinks for every one of a large run's changes.
    """
    root = str(layout.memory_dir) + os.sep
    text = str(path)
    if text.startswith(root):
        return Path(text[len(root) :]).as_posix()
    try:
        return layout.relative(path)
    except ValueError:
        return text


def sweep_orphans(layout: MemoryLayout) -> int:
    """Delete temp files a killed writer left in ``memory/`` (``.<name>.tmp-<pid>``).

    Only called by a run that holds the writer lock, so no write is in flight.
    """
    return sweep_temp_files(layout.memory_dir)


def save_state(layout: MemoryLayout, plan: Plan, *, applied: int, report: Path | None) -> None:
    previous = RunState.load(layout.consolidation_state_path)
    data = dict(previous.raw)
    data["epoch"] = plan.epoch
    data["lastRun"] = {
        "at": format_time(datetime.now(UTC)),
        "now": format_time(plan.now),
        "extractions": extraction_count(layout),
        "changes": applied,
        "report": report.name if report is not None else None,
    }
    data["pending"] = sorted(plan.unjudged)
    data["seen"] = dict(sorted(plan.seen.items()))
    save_json(layout.consolidation_state_path, data)


# ---------------------------------------------------------------- rendering


def describe(change: Change, layout: MemoryLayout) -> dict[str, Any]:
    """One change as JSON: what the dry run prints and the real run reports."""
    out: dict[str, Any] = {"action": change.action, "reason": change.reason}
    if isinstance(change, FactMove):
        out.update(
            path=_rel(layout, change.source),
            target=_rel(layout, change.target),
            id=change.after.id,
            status=change.after.status.value,
        )
    elif isinstance(change, FactUpdate):
        out.update(
            path=_rel(layout, change.path),
            id=change.after.id,
            status=change.after.status.value,
            fields=_changed_fields(change.before, change.after),
        )
    elif isinstance(change, FactCreate):
        out.update(path=_rel(layout, change.path), id=change.fact.id)
    else:
        out.update(path=_rel(layout, change.path))
    out["kind"] = type(change).__name__
    return out


def _changed_fields(before: Fact, after: Fact) -> list[str]:
    return [
        spec.name
        for spec in fields(Fact)
        if spec.name != "extra" and getattr(before, spec.name) != getattr(after, spec.name)
    ]


def summary(plan: Plan) -> dict[str, Any]:
    by_action = Counter(c.action for c in plan.changes)
    return {
        "epoch": plan.epoch,
        "now": format_time(plan.now),
        "facts": plan.total,
        "active": plan.active,
        "new": plan.new,
        "changes": len(plan.changes),
        "retiring": plan.retiring,
        "allowedRetire": plan.allowed,
        "byAction": dict(sorted(by_action.items())),
        "broken": list(plan.broken),
        "notes": list(plan.notes),
        "unjudged": len(plan.unjudged),
    }


def render_report(plan: Plan, layout: MemoryLayout, *, applied: int, dry_run: bool) -> str:
    head = "Consolidation plan (dry run)" if dry_run else "Consolidation"
    lines = [
        f"# {head} — {format_time(datetime.now(UTC))}",
        "",
        f"- epoch {plan.epoch}, now {format_time(plan.now)}",
        f"- {plan.total} fact files, {plan.active} active, {plan.new} new since the last run",
        f"- {len(plan.changes)} planned changes, {applied} applied; "
        f"{plan.retiring} retire an active fact (allowed {plan.allowed})",
    ]
    if plan.unjudged:
        lines.append(f"- {len(plan.unjudged)} new fact(s) not judged (LLM failed): next run")
    for note in plan.notes:
        lines.append(f"- note: {note}")
    for problem in plan.broken:
        lines.append(f"- unreadable: {problem}")
    lines += ["", "## Changes", ""]
    if not plan.changes:
        lines.append("Nothing to change.")
    for change in plan.changes:
        item = describe(change, layout)
        where = item["path"] + (f" → {item['target']}" if "target" in item else "")
        lines.append(f"- **{item['action']}** `{where}` — {item['reason']}")
        if "fields" in item:
            lines.append(f"  - fields: {', '.join(item['fields'])}")
    return "\n".join(lines) + "\n"


def write_report(layout: MemoryLayout, text: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = layout.reports_dir / f"{stamp}.md"
    n = 1
    while path.exists():
        n += 1
        path = layout.reports_dir / f"{stamp}-{n}.md"
    atomic_write_text(path, text)
    return path


# ---------------------------------------------------------------- one run


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

    The caller holds the writer lock for a real run. Raises :class:`RetireLimitError` when
    the plan retires more active facts than allowed and ``force`` is not set; nothing is
    written then.
    """
    plan = plan_run(
        cfg, layout, store, now=now, vectors=vectors, judge=judge, steps=steps, full=full,
        progress=progress,
    )  # fmt: skip
    if dry_run:
        return Result(plan, 0, True)
    if plan.over_limit and not force:
        raise RetireLimitError(
            f"this run would retire {plan.retiring} of {plan.active} active facts, more than "
            f"consolidate.max_retire_fraction ({cfg.consolidate.max_retire_fraction:.0%}, "
            f"{plan.allowed} facts) allows; review it with --dry-run, then run with --force"
        )
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
    )
    if graph is not None:
        decayed = graph.apply_decay(now)
        if decayed:
            log.info("graph: %d edge(s) decayed", decayed)
    report = write_report(layout, render_report(plan, layout, applied=applied, dry_run=False))
    save_state(layout, plan, applied=applied, report=report)
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


# ---------------------------------------------------------------- the daemon's schedule


class DaemonConsolidation:
    """The daemon's ``on_extraction`` callback: consolidate every N extractions, and at most
    once per ``consolidate.min_interval_minutes`` of wall-clock time.

    The interval keeps a burst of input (a backlog or a long transcript piped in at once)
    from spending its time consolidating a folder that changes by the second: a run reads
    every fact file, so running it every N extractions would make intake quadratic.

    Runs in the daemon's own process, which already holds the writer lock, between two
    extraction batches (the pipeline calls back synchronously), so nothing else writes
    meanwhile. It never raises: a refused or failed run is logged and tried again at the
    next due extraction.
    """

    def __init__(
        self,
        cfg: Config,
        layout: MemoryLayout,
        store: MemoryStore,
        indexer: Indexer | None,
        *,
        judge: Judge | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        steps: Sequence[Step] = STEPS,
        graph: GraphStore | None = None,
    ) -> None:
        self.graph = graph  # the daemon's own graph store: one writer of state/graphs/
        self.cfg = cfg
        self.layout = layout
        self.store = store
        self.indexer = indexer
        self.judge = judge
        self.clock = clock
        self.steps = steps
        self.runs = 0
        # The schedule, kept here so `due` (asked after every extraction) reads no state file
        # but the small run-state counter: the extraction count at the last run (None: not
        # read yet) and when this daemon last ran one (None: not yet).
        self._last_extractions: int | None = None
        self._last_at: datetime | None = None

    def due(self) -> bool:
        settings = self.cfg.consolidate
        if settings.every_extractions <= 0:
            return False
        if self._last_extractions is None:
            self._last_extractions = RunState.load(self.layout.consolidation_state_path).extractions
        if extraction_count(self.layout) - self._last_extractions < settings.every_extractions:
            return False
        interval = timedelta(minutes=settings.min_interval_minutes)
        return self._last_at is None or self.clock() - self._last_at >= interval

    def _ran(self) -> None:
        self._last_extractions = extraction_count(self.layout)
        self._last_at = self.clock()

    def __call__(self) -> None:
        if not self.due():
            return
        try:
            self._run()
        finally:
            # A refused or failed run waits for the next due time too: retrying after every
            # extraction would re-read the whole folder each time for the same outcome.
            self._ran()

    def _run(self) -> None:
        if self.indexer is not None:
            self.indexer.flush()  # this batch's facts are in the index before we read it
        index = self.indexer.index if self.indexer is not None else None
        embedder = self.indexer.embedder if self.indexer is not None else None
        try:
            result = consolidate(
                self.cfg,
                self.layout,
                self.store,
                now=self.clock(),
                vectors=Vectors(index, embedder),
                indexer=self.indexer,
                judge=self.judge,
                steps=self.steps,
                graph=self.graph,
            )
        except RetireLimitError as exc:
            log.warning("consolidation skipped: %s", exc)
            # Count it as a run for the schedule, so a restarted daemon does not retry at once.
            plan_state = RunState.load(self.layout.consolidation_state_path)
            data = dict(plan_state.raw)
            last = dict(data.get("lastRun") or {})
            last["extractions"] = extraction_count(self.layout)
            data["lastRun"] = last
            save_json(self.layout.consolidation_state_path, data)
            return
        except (EngramError, OSError) as exc:
            log.warning("consolidation failed: %s", exc)
            return
        except Exception:  # a bug in a step must not stop the daemon's intake
            log.exception("consolidation failed; the daemon keeps running")
            return
        self.runs += 1
        log.info("consolidated: %d change(s) applied, report %s", result.applied, result.report)
