"""Planning a consolidation run: read the folder, find what is new, plan every step.

::

    load every fact file (facts/ and archive/) -> which facts are new since the last run
    -> duplicates and contradictions (offline rules, or the LLM judge per cluster)
    -> the planning steps of STEPS, each over the folder as the steps before it leave it
    -> counters an older version wrote into frontmatter taken out (they live in state/)
    -> one change per file (:mod:`.combine`), every fact's standing after the run
       (:func:`.lifecycle.rate`) and the safety rail's figures: a :class:`Plan`

Planning writes nothing, not even ``state/``: a dry run is a plan printed.

"New since the last run" is an active fact whose statement the last finished run did not see
(a new fact, or one whose text was edited or merged since), or one the LLM judge could not
decide last time. The run remembers the content hash of every active fact it saw
(``seen`` in ``state/consolidation.json``), so a fact that was only re-stated, whose file is
rewritten with one more ``sourceTurnIds`` entry, is not judged again: in a long conversation
most extractions are such confirmations, and re-judging them would cost one LLM call per
fact per run. Runs before the first finished one see every fact as new.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core.config import Config
from ..core.models import Fact, Status
from ..core.paths import MemoryLayout, RelativePaths
from ..core.workers import map_spread
from ..store.access import AccessLog
from ..store.fact_store import MemoryStore, folder_order
from ..store.factfile import read_facts
from ..store.read_cache import ReadCache, recognized
from .combine import View, advance, combine
from .contradictions import (
    Relation,
    exact_duplicates,
    lineage_changes,
    offline_relations,
    update_relations,
)
from .entities import plan_entities
from .folder_index import plan_folder_index
from .judge import Judge, judged_relations
from .lifecycle import adopt_former, move_former_counters, plan_lifecycle, rate
from .plan import Change, Context, Plan, Progress, Step, retire_allowance, retiring
from .profile import plan_profile
from .run_state import RunState
from .vectors import Vectors, involved

log = logging.getLogger(__name__)

# The planning steps after duplicates/contradictions, in the order they run and combine.
STEPS: tuple[Step, ...] = (
    plan_lifecycle,  # heat/decay/tier, TTL, resolved commitments, archival
    plan_entities,  # memory/entities/*.md
    plan_profile,  # profile.md, IDENTITY.md
    plan_folder_index,  # state/topics.json, state/compression-guidelines.md
)


@dataclass
class Loaded:
    """Every readable fact file (live and archived, any status) and the unreadable ones."""

    facts: list[tuple[Path, Fact]]
    broken: list[str]  # path and reason of each file whose frontmatter cannot be read


def load_facts(
    store: MemoryStore, progress: Progress | None = None, cache: ReadCache | None = None
) -> Loaded:
    """Read every fact file once, in the store's order (a large folder on all cores). With
    ``cache``, a file whose bytes it knows is not parsed again, and what was read is noted in
    it for the next run (store/read_cache.py)."""
    paths = list(store.fact_paths())

    def read(done: int) -> None:
        if progress is not None:
            progress("reading facts", done, len(paths))

    # Files the cache knows are read and hashed here (~25 us each: less than handing them to
    # a worker and back costs); the rest, and any whose bytes changed, are parsed on workers.
    here = {} if cache is None else _known_facts(cache, paths)

    def parsed(done: int) -> None:
        read(len(here) + done)

    unknown = [place for place in range(len(paths)) if place not in here]
    items = [paths[place] for place in unknown]
    results = dict(zip(unknown, map_spread(read_facts, items, done=parsed), strict=True))
    loaded = Loaded([], [])
    for place, path in enumerate(paths):
        if place in here:
            loaded.facts.append((path, here[place]))
            continue
        result = results[place]
        if isinstance(result, str):
            loaded.broken.append(result)
        elif result is not None:  # None: removed while we read, the folder wins
            fact, file_digest = result
            if cache is not None:
                cache.read(path, fact, file_digest)
            loaded.facts.append((path, fact))
    return loaded


def _known_facts(cache: ReadCache, paths: Sequence[Path]) -> dict[int, Fact]:
    """The facts of the files whose bytes ``cache`` knows, by their place in ``paths``."""
    found: dict[int, Fact] = {}
    for place, path in enumerate(paths):
        known = cache.digest_of(path)
        content = None if known is None else recognized(path, known)
        fact = None if content is None else cache.known(path, content)
        if fact is not None:
            found[place] = fact
    return found


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
    cache: ReadCache | None = None,
) -> Plan:
    """Read the folder and plan a run. Pure with respect to the folder: writes nothing (what
    it read is noted in ``cache``, which the caller saves or not)."""
    state = RunState.load(layout)
    loaded = load_facts(store, progress, cache)
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
            exact = exact_duplicates(only, new_mask) + update_relations(only, new_mask)

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
    usage = AccessLog(layout.access_path).read()
    # Counters an older version wrote into frontmatter count as state/ from the start.
    standings = adopt_former(usage.standings, facts)

    # Each step sees the facts in folder order. The files' relative paths are worked out once
    # per run, each folder resolved once: layout.relative resolves every link of a path (an
    # lstat per folder), and five steps asking it for 10k files spent 12 s of a 77 s run on it.
    order: dict[Path, tuple[bool, str]] = {}
    relative = RelativePaths(layout)

    def in_folder_order(item: tuple[Path, Fact]) -> tuple[bool, str]:
        key = order.get(item[0])
        if key is None:
            key = order[item[0]] = folder_order(relative(item[0]))
        return key

    def context(view: View) -> Context:
        return Context(
            cfg=cfg,
            layout=layout,
            now=now,
            epoch=state.epoch + 1,
            facts=sorted(view.items(), key=in_folder_order),
            access_counts=usage.recent,
            standings=standings,
        )

    view: View = original
    plans: list[tuple[Sequence[Change], View]] = [(first, view)]
    view = advance(view, first)
    notes: list[str] = []
    for step in steps:
        name = getattr(step, "__qualname__", repr(step))
        if progress is not None:
            progress(f"planning: {name}", 0, 1)
        ctx = context(view)
        try:
            planned = step(ctx)
        except Exception as exc:  # a failing step must not block the others (fail open)
            log.exception("consolidation step %s failed; its changes are skipped", name)
            notes.append(f"step {name} failed: {exc}")
            continue
        plans.append((planned, view))
        view = advance(view, planned)
    # Bookkeeping of every run, whatever its steps: the standings of the folder as the run
    # leaves it, and files of an older version relieved of their counters (one run moves all).
    final = context(view)
    moved = move_former_counters(final)
    if moved:
        plans.append((moved, view))
        notes.append(
            f"{len(moved)} fact file(s) of an older version kept recall counts or lifecycle "
            "scores in frontmatter: moved to state/access.jsonl"
        )
    changes, conflicts = combine(plans, original)
    active = len(eligible)
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
        standings=rate(final),
        access_length=usage.length,
    )
