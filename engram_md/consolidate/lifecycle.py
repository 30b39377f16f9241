"""Lifecycle of a fact: importance decay, heat and decay scores, tiers, retirement, archival.

Two parts. :func:`rate` gives every fact its **standing** after a run (recalls folded in,
first epoch, heat, decay, lifecycle state, tier): machine numbers that live in
``state/access.jsonl`` (:mod:`engram_md.store.access`), never in the fact file, so neither a
recall nor the passing of epochs changes a file. The planning step :func:`plan_lifecycle`
plans the changes of meaning (retirement, archival) and, once, the move of the counters
older versions wrote into frontmatter (:func:`adopt_former` takes them into the standings).
The formulas are public so every caller uses the very same numbers (one formula, never a
fork).

**Importance decay** (seed 000/001). A fact's stored ``importance`` is what extraction gave it
and is never rewritten for decay. What counts is the *effective* importance, computed from the
consolidation epoch counter::

    effective = clamp(max(0.01, importance * factor ** epochs_lived) + 0.03 * accesses, 0.01, 1)

``factor`` depends on the kind of memory: 0.996 per epoch for procedural knowledge (preferences,
principles, skills: half-life ~173 epochs), 0.98 for episodes (~35), 0.988 for the rest (~58).
``epochs_lived`` is the current epoch minus the epoch a fact was first consolidated in (its
standing's ``firstEpoch``); decay therefore only happens while consolidation runs (an idle
agent forgets nothing). Each recall (``accesses``) lifts a memory by the activation boost of
seed 000.

**Heat, decay, lifecycle state** (reference §2.11), from normalized signals: confidence weight
(explicit 1, implied 0.8, inferred 0.6, speculative 0.35), access = log1p(n)/log1p(20),
recency = 1 - age/90 days, effective importance, feedback (user-confirmed 1, disputed 0,
otherwise 0.5 plus 0.1 per re-confirmation)::

    heat  = .25 conf + .30 access + .20 recency + .15 importance + .10 feedback - .2 disputed
    decay = .30 age/180d + .25 idle/120d + .20 (1 - conf) + .10 (1 - feedback) + .15 (1 - heat)

``idle`` is the time since the fact was last written or re-confirmed (the access log keeps
counts, not times). Both scores are kept rounded to steps of 0.05, and the state transitions
read the stepped values, so a standing explains itself:

* decay >= 0.85 and not protected -> ``archived``; decay >= 0.65 or disputed -> ``stale``
* heat >= 0.55 -> ``active`` when confirmed (user- or system-verified, or re-stated), else
  ``validated``
* otherwise a candidate stays a candidate, validated/active stay, and a stale memory that
  recovered (it was recalled or re-confirmed) becomes ``validated`` again.

The lifecycle state is machinery, not meaning: it follows heat and decay, which move with age
and recalls alone, so in a file it would change with no change of meaning (on the first run
after extraction, every fresh fact went from candidate to validated). What a person decides
is ``status`` and ``verificationState``, and both stay in the file.

**Tier** (reference §2.12): value = .24 conf + .26 access + .20 recency + .20 importance + .10
feedback + .08 correction + .05 user-confirmed - .5 disputed; hot -> cold at age >= 14 days and
value <= 0.35, cold -> hot at value >= 0.70, otherwise unchanged (hysteresis).

**Retirement** (status change + ``statusHistory`` entry, the file stays where it is):

* any active fact past its ``expiresAt`` (speculative facts get one at extraction; a
  re-confirmation clears it) -> ``invalidated``;
* a *resolved* commitment whose resolution is older than ``resolved_commitment_days`` ->
  ``superseded``. A commitment is resolved when it carries a resolution tag (``done``,
  ``fulfilled``, ``completed``, ``resolved``, ``expired``, ``cancelled``: resolved when last
  updated), or when a later active fact that is not itself a commitment, told in the same
  session or about one of the same entities, reports completion (done, finished, shipped,
  sent, delivered, fixed, paid, …, with no future or negation marker such as "will", "not",
  "yet") and shares a content word with it ("Sent the Q3 report to Dana" resolves "I'll send
  the Q3 report to Dana by Friday"). The earliest such fact resolves it and becomes its
  ``supersededBy``; the commitment retires once that fact is older than the limit.

**Archival**: an active fact under ``facts/`` older than ``archive_age_days``, with effective
importance below ``archive_max_importance``, at most ``archive_max_access`` recalls, not a
correction, its category not in ``protected_categories`` and its policyClass not protected,
moves to ``archive/facts/<same relative path>`` with status ``archived``.

Facts that are no longer active keep their standing (new recalls are still folded in; an
archived status implies the archived lifecycle state), and a file a person marked
``archived`` moves under ``archive/``. A file under ``archive/`` is never moved back (a person
who wants it live moves it back).

Why one module of ~600 lines: this docstring is the specification, and every formula in it
is shared by :func:`rate` and :func:`plan_lifecycle`; split apart, the two would read their
numbers from two places.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

import regex

from ..core.models import (
    Category,
    ConfidenceTier,
    Fact,
    LifecycleState,
    MemoryKind,
    PolicyClass,
    Status,
    StatusChange,
    VerificationState,
)
from ..core.paths import MemoryLayout
from ..store.access import ACTIVATION_BOOST, Standing, read_standing
from ..store.entity_pages import split_entity
from ..text.claims import DONE_TAG, without_asides
from ..text.sentences import split_sentences
from ..text.words import LETTER_WORD, STOP_WORDS
from .plan import Change, Context, FactMove, FactUpdate

__all__ = [
    "DECAY_FACTORS",
    "IMPORTANCE_FLOOR",
    "Scores",
    "adopt_former",
    "archive_predicate",
    "archive_target",
    "decay_kind",
    "decayed_importance",
    "effective_importance",
    "epochs_lived",
    "move_former_counters",
    "plan_lifecycle",
    "rate",
    "resolved_commitments",
    "score_fact",
]

# ---------------------------------------------------------------- importance decay

IMPORTANCE_FLOOR = 0.01
DECAY_FACTORS: Mapping[str, float] = {"episodic": 0.98, "semantic": 0.988, "procedural": 0.996}
# How a person should behave is procedural knowledge: recall gives it the same kind bias.
PROCEDURAL_CATEGORIES = frozenset({"preference", "principle", "skill"})


def decay_kind(category: str, memory_kind: str) -> str:
    """``procedural`` | ``episodic`` | ``semantic``: which decay rate applies."""
    if category in PROCEDURAL_CATEGORIES:
        return "procedural"
    if memory_kind == MemoryKind.EPISODE.value:
        return "episodic"
    return "semantic"


def decayed_importance(
    importance: float, category: str, memory_kind: str, epochs: int, accesses: int
) -> float:
    """The effective importance from plain values."""
    factor = DECAY_FACTORS[decay_kind(category, memory_kind)]
    decayed = max(IMPORTANCE_FLOOR, importance * factor ** max(0, epochs))
    boosted = decayed + ACTIVATION_BOOST * max(0, accesses)
    return min(1.0, max(IMPORTANCE_FLOOR, boosted))


def epochs_lived(first_epoch: int | None, epoch: int) -> int:
    """Consolidation epochs a fact has been through: 0 until it has been first seen."""
    return 0 if first_epoch is None else max(0, epoch - first_epoch)


def effective_importance(
    fact: Fact, *, epoch: int, first_epoch: int | None, accesses: int
) -> float:
    """Importance after per-epoch decay by kind (floor 0.01) and the activation boost.

    ``epoch`` is the current consolidation epoch counter, ``first_epoch`` the one the fact
    was first consolidated in (None: never), ``accesses`` its total recall count (folded in
    plus logged since).
    """
    return decayed_importance(
        fact.importance,
        fact.category.value,
        fact.memory_kind.value,
        epochs_lived(first_epoch, epoch),
        accesses,
    )


# ---------------------------------------------------------------- heat, decay, tier

CONFIDENCE_WEIGHT: Mapping[ConfidenceTier, float] = {
    ConfidenceTier.EXPLICIT: 1.0,
    ConfidenceTier.IMPLIED: 0.8,
    ConfidenceTier.INFERRED: 0.6,
    ConfidenceTier.SPECULATIVE: 0.35,
}
SCORE_STEPS = 20  # scores are written in steps of 1/20 = 0.05
ARCHIVE_DECAY = 0.85
STALE_DECAY = 0.65
ACTIVE_HEAT = 0.55
COLD_MIN_AGE_DAYS = 14.0
COLD_VALUE = 0.35
HOT_VALUE = 0.70
HOT = "hot"
COLD = "cold"
_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Scores:
    """The lifecycle numbers of one fact at one moment (heat and decay already stepped)."""

    heat: float
    decay: float
    tier_value: float


def _quantize(value: float) -> float:
    # k / 20 (not k * 0.05) so the value is the float that reads back from "0.7".
    return round(min(1.0, max(0.0, value)) * SCORE_STEPS) / SCORE_STEPS


def _days(later: datetime, earlier: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / _DAY)


def _feedback(fact: Fact) -> float:
    if fact.verification_state is VerificationState.USER_CONFIRMED:
        return 1.0
    if fact.verification_state is VerificationState.DISPUTED:
        return 0.0
    return min(1.0, 0.5 + 0.1 * fact.confirmations)


def score_fact(
    fact: Fact, *, now: datetime, epoch: int, first_epoch: int | None, accesses: int
) -> Scores:
    """Heat, decay and tier value of a fact; ``accesses`` is its total recall count."""
    conf = CONFIDENCE_WEIGHT.get(fact.confidence_tier, 0.35)
    access = min(1.0, math.log1p(max(0, accesses)) / math.log1p(20))
    age = _days(now, fact.created)
    recency = max(0.0, 1.0 - age / 90.0)
    importance = effective_importance(fact, epoch=epoch, first_epoch=first_epoch, accesses=accesses)
    feedback = _feedback(fact)
    disputed = fact.verification_state is VerificationState.DISPUTED
    last_touch = max(fact.created, fact.updated, fact.last_confirmed or fact.created)
    idle = _days(now, last_touch)
    heat = _quantize(
        0.25 * conf
        + 0.30 * access
        + 0.20 * recency
        + 0.15 * importance
        + 0.10 * feedback
        - (0.2 if disputed else 0.0)
    )
    decay = _quantize(
        0.30 * min(1.0, age / 180.0)
        + 0.25 * min(1.0, idle / 120.0)
        + 0.20 * (1.0 - conf)
        + 0.10 * (1.0 - feedback)
        + 0.15 * (1.0 - heat)
    )
    tier_value = (
        0.24 * conf
        + 0.26 * access
        + 0.20 * recency
        + 0.20 * importance
        + 0.10 * feedback
        + (0.08 if fact.category is Category.CORRECTION else 0.0)
        + (0.05 if fact.verification_state is VerificationState.USER_CONFIRMED else 0.0)
        - (0.5 if disputed else 0.0)
    )
    return Scores(heat, decay, tier_value)


def _is_protected(fact: Fact, protected_categories: frozenset[str]) -> bool:
    return fact.policy_class is PolicyClass.PROTECTED or fact.category.value in protected_categories


def _next_state(
    fact: Fact, current: LifecycleState, scores: Scores, protected: bool
) -> LifecycleState:
    disputed = fact.verification_state is VerificationState.DISPUTED
    if scores.decay >= ARCHIVE_DECAY and not protected:
        return LifecycleState.ARCHIVED
    if scores.decay >= STALE_DECAY or disputed:
        return LifecycleState.STALE
    if scores.heat >= ACTIVE_HEAT:
        confirmed = fact.confirmations > 0 or fact.verification_state in (
            VerificationState.USER_CONFIRMED,
            VerificationState.SYSTEM_INFERRED,
        )
        return LifecycleState.ACTIVE if confirmed else LifecycleState.VALIDATED
    if current in (LifecycleState.STALE, LifecycleState.ARCHIVED):
        return LifecycleState.VALIDATED  # recovered: recalled or re-confirmed since
    return current


def _next_tier(fact: Fact, tier: str | None, scores: Scores, now: datetime) -> str:
    current = COLD if tier == COLD else HOT
    if current == HOT and _days(now, fact.created) >= COLD_MIN_AGE_DAYS:
        return COLD if scores.tier_value <= COLD_VALUE else HOT
    if current == COLD and scores.tier_value >= HOT_VALUE:
        return HOT
    return current


# ---------------------------------------------------------------- resolved commitments

RESOLUTION_TAGS = frozenset({"done", "fulfilled", "completed", "resolved", "expired", "cancelled"})
_COMPLETION = regex.compile(
    r"\b(?:done|finished|completed?|shipped|sent|delivered|submitted|fixed|merged|deployed"
    r"|released|published|paid|filed|booked|returned|resolved|handed\s+in|wrapped\s+up"
    r"|took\s+care\s+of|followed\s+up)\b",
    regex.IGNORECASE,
)
_NOT_DONE = regex.compile(
    r"\b(?:not|never|no|yet|still|will|won['’]?t|going\s+to|plan(?:s|ned|ning)?\s+to"
    r"|could(?:n['’]?t)?|would(?:n['’]?t)?|can['’]?t|cannot"
    # "the key to getting things done", "to get it done": doing in general, not a report
    # ("got it done" is one).
    r"|get|gets|getting"
    r"|need(?:s)?\s+to|have\s+to|has\s+to|should|must|tomorrow|later|haven['’]?t"
    r"|hasn['’]?t|didn['’]?t|isn['’]?t|aren['’]?t|wasn['’]?t)\b|['’]ll\b",
    regex.IGNORECASE,
)
# Words that carry no object: function words, and the verbs of promising and finishing.
_NOISE_WORDS = STOP_WORDS | frozenset(
    """into onto about after before being shall may might must going want wants wanted need
    needs promise promised promises commit committed plan plans planned make sure today
    tomorrow tonight week weeks friday monday tuesday wednesday thursday saturday sunday
    next last done finished finish complete completed shipped ship sent send sending
    delivered deliver submitted submit fixed fix merged merge deployed deploy released
    release published publish paid pay filed file booked book returned return resolved
    resolve handed hand wrapped wrap took take care followed follow already finally
    yesterday""".split()
)


def _people(fact: Fact) -> set[str]:
    """The name slugs of the people a fact names (``person-dana-lee`` → ``dana-lee``)."""
    return {name for kind, name in map(split_entity, fact.entities) if kind == "person"}


def _object_words(fact: Fact) -> set[str]:
    """Words of three characters or more, led by a letter, that may name what was promised
    or done. The names of the people the fact is about are who, not what: sharing one made
    "Caroline will keep ya posted" done by any later report with "Caroline" in it; nor are
    the words of a caption ("[shares an image: …]")."""
    names = {part for person in _people(fact) for part in person.split("-")}
    text = without_asides(fact.content)
    words = {w.casefold() for w in LETTER_WORD.findall(text) if len(w) >= 3}
    return words - _NOISE_WORDS - names


def _reports_completion(fact: Fact) -> bool:
    """Some sentence of it says a thing was done: not asked ("what have you done?"), not
    negated, not still to come."""
    if fact.category is Category.COMMITMENT or _COMPLETION.search(fact.content) is None:
        return False  # the second test spares most facts the sentence split below
    return any(
        _COMPLETION.search(sentence) is not None
        and _NOT_DONE.search(sentence) is None
        and not sentence.rstrip().endswith("?")
        for sentence in split_sentences(without_asides(fact.content))
    )


def _closes(report: Fact, promise: Fact, shared: int, promise_words: int) -> bool:
    """Whether a later completion report sharing ``shared`` of the promise's object words
    closes it. It must share two, unless the promise has two or fewer (then one), and always
    two when it is an episode: on a LoCoMo conversation single shared words ("kids",
    "family") closed promises nothing had closed, and an episode, a stretch of conversation,
    meets some word of any promise by chance. When both name people, one must be the same:
    a report of someone else's does not close this one's promise."""
    needed = 2 if report.memory_kind is MemoryKind.EPISODE or promise_words > 2 else 1
    promised_by, reported_by = _people(promise), _people(report)
    same_people = not (promised_by and reported_by) or bool(promised_by & reported_by)
    return shared >= needed and same_people


@dataclass(frozen=True, slots=True)
class Resolution:
    """Why a commitment counts as resolved, and since when."""

    at: datetime
    by: str | None  # id of the fact that reports it done; None when a tag says so
    reason: str


def resolved_commitments(facts: Iterable[Fact]) -> dict[str, Resolution]:
    """commitment id -> its resolution, for every active commitment that is resolved.

    Completion reports are indexed by (session, word) and (entity, word), each list in time
    order; a commitment looks up only its own keys, from the first report told after it (a
    bisect), and the earliest report sharing enough of its words resolves it.
    """
    facts = list(facts)
    reports: dict[tuple[str, str, str], list[tuple[datetime, str]]] = {}
    by_id: dict[str, Fact] = {}
    for fact in facts:
        if fact.status is not Status.ACTIVE or not _reports_completion(fact):
            continue
        by_id[fact.id] = fact
        words = _object_words(fact)
        scopes = ([("s", fact.session)] if fact.session else []) + [
            ("e", entity) for entity in fact.entities
        ]
        for kind, scope in scopes:
            for word in words:
                reports.setdefault((kind, scope, word), []).append((fact.created, fact.id))
    for entries in reports.values():
        entries.sort()
    out: dict[str, Resolution] = {}
    for fact in facts:
        if fact.category is not Category.COMMITMENT or fact.status is not Status.ACTIVE:
            continue
        tags = {t.casefold() for t in fact.tags} & RESOLUTION_TAGS
        if tags:
            out[fact.id] = Resolution(fact.updated, None, f"tagged {sorted(tags)[0]}")
            continue
        scopes = ([("s", fact.session)] if fact.session else []) + [
            ("e", entity) for entity in fact.entities
        ]
        # Reports strictly after the commitment (ties by id are not later), with the words
        # each shares with it.
        promise_words = _object_words(fact)
        shared: dict[tuple[datetime, str], set[str]] = {}
        for kind, scope in scopes:
            for word in promise_words:
                entries = reports.get((kind, scope, word), [])
                i = bisect.bisect_right(entries, (fact.created, "\U0010ffff"))
                for entry in entries[i:]:
                    shared.setdefault(entry, set()).add(word)
        best = min(
            (
                entry
                for entry, words in shared.items()
                if _closes(by_id[entry[1]], fact, len(words), len(promise_words))
            ),
            default=None,
        )
        if best is not None:
            out[fact.id] = Resolution(best[0], best[1], f"reported done by {best[1]}")
    return out


# ---------------------------------------------------------------- paths


@functools.lru_cache(maxsize=32)
def _prefixes(root: Path) -> tuple[str, ...]:
    """``root`` as given and resolved, each with a trailing separator."""
    return tuple(dict.fromkeys((f"{root}{os.sep}", f"{root.resolve()}{os.sep}")))


def archive_predicate(layout: MemoryLayout) -> Callable[[Path], bool]:
    """A fast test "is this file under ``archive/``" (string prefixes, no file-system call).

    Paths in a consolidation context are built from the layout's folders, so comparing the
    text is exact and avoids a ``resolve()`` per fact on large folders.
    """
    prefixes = _prefixes(layout.archive_dir)
    return lambda path: str(path).startswith(prefixes)


def archive_target(layout: MemoryLayout, path: Path) -> Path | None:
    """``archive/facts/<path relative to facts/>``, or None for a file outside ``facts/``."""
    text = str(path)
    for prefix in _prefixes(layout.facts_dir):
        if text.startswith(prefix):
            rel = Path(text[len(prefix) :])
            if ".." in rel.parts or rel.is_absolute():
                return None
            return layout.archive_dir / "facts" / rel
    return None


# ---------------------------------------------------------------- standings


def adopt_former(
    standings: Mapping[str, Standing], facts: Iterable[tuple[Path, Fact]]
) -> dict[str, Standing]:
    """``standings`` with the counters older versions wrote into frontmatter taken in.

    Idempotent, so a run killed after ``state/`` was written and before the files were is
    simply done again: the folded count is the larger of the two (a standing that has taken a
    file's count in holds at least that), the first epoch the earlier, and the rest is taken
    only where the standing has nothing yet.
    """
    out = dict(standings)
    for _, fact in facts:
        former, keys = read_standing(fact.extra)
        if not keys:
            continue
        held = out.get(fact.id)
        if held is None:
            out[fact.id] = former
            continue
        epochs = [e for e in (held.first_epoch, former.first_epoch) if e is not None]
        out[fact.id] = Standing(
            accesses=max(held.accesses, former.accesses),
            first_epoch=min(epochs) if epochs else None,
            lifecycle=held.lifecycle or former.lifecycle,
            heat=former.heat if held.heat is None else held.heat,
            decay=former.decay if held.decay is None else held.decay,
            tier=held.tier or former.tier,
        )
    return out


def _accesses(ctx: Context, fact: Fact, standing: Standing) -> int:
    """Every recall of ``fact``: folded into its standing, and logged since the last run."""
    return standing.accesses + max(0, int(ctx.access_counts.get(fact.id, 0)))


def rate(ctx: Context) -> dict[str, Standing]:
    """Every fact's standing after this run, from the standings the last run left.

    Recalls logged since are folded in. An active fact under ``facts/`` gets its first epoch
    (if it has none), heat, decay, lifecycle state and tier; any other keeps its rating (an
    archived one is in the archived lifecycle state). Two files with one id: the first in
    ``ctx.facts`` order (live before archived, as the index decides) speaks for it. Facts the
    folder no longer holds lose their standing.
    """
    protected = frozenset(ctx.cfg.consolidate.protected_categories)
    in_archive_dir = archive_predicate(ctx.layout)
    out: dict[str, Standing] = {}
    for path, fact in ctx.facts:
        if fact.id in out:
            continue
        before = ctx.standings.get(fact.id, Standing())
        accesses = _accesses(ctx, fact, before)
        if fact.status is not Status.ACTIVE or in_archive_dir(path):
            archived = fact.status is Status.ARCHIVED
            state = LifecycleState.ARCHIVED if archived else before.lifecycle
            out[fact.id] = replace(before, accesses=accesses, lifecycle=state)
            continue
        born = ctx.epoch if before.first_epoch is None else before.first_epoch
        scores = score_fact(fact, now=ctx.now, epoch=ctx.epoch, first_epoch=born, accesses=accesses)
        current = before.lifecycle or LifecycleState.CANDIDATE
        is_protected = _is_protected(fact, protected)
        out[fact.id] = Standing(
            accesses=accesses,
            first_epoch=born,
            lifecycle=_next_state(fact, current, scores, is_protected),
            heat=scores.heat,
            decay=scores.decay,
            tier=_next_tier(fact, before.tier, scores, ctx.now),
        )
    return out


# ---------------------------------------------------------------- the step


def plan_lifecycle(ctx: Context) -> list[Change]:
    """Plan retirement and archival.

    At most one change per fact file, in ``ctx.facts`` order. A fact's standing (recalls,
    first epoch) counts as :func:`rate` leaves it, so a fact first seen now has lived 0
    epochs. Idempotent: once applied, the same ``now`` and ``epoch`` plan nothing.
    """
    cc = ctx.cfg.consolidate
    protected = frozenset(cc.protected_categories)
    resolutions = resolved_commitments(f for _, f in ctx.facts)
    commitment_age = timedelta(days=cc.resolved_commitment_days)
    archive_age = timedelta(days=cc.archive_age_days)
    in_archive_dir = archive_predicate(ctx.layout)
    changes: list[Change] = []
    for path, fact in ctx.facts:
        in_archive = in_archive_dir(path)
        if fact.status is not Status.ACTIVE or in_archive:
            target = None if in_archive else archive_target(ctx.layout, path)
            if fact.status is Status.ARCHIVED and target is not None:
                # Archived by hand (status edited): the file belongs under archive/.
                reason = "status archived: moved under archive/"
                changes.append(FactMove(path, target, fact, "archive", reason))
            continue

        standing = ctx.standings.get(fact.id, Standing())
        accesses = _accesses(ctx, fact, standing)
        retire = _retirement(fact, resolutions, ctx.now, commitment_age)
        if retire is not None:
            status, reason, superseded_by = retire
            history = StatusChange(ctx.now, fact.status, status, reason)
            changed: dict[str, object] = {
                "status": status,
                "status_history": (*fact.status_history, history),
                "updated": max(fact.updated, ctx.now),
            }
            if superseded_by is not None and fact.superseded_by is None:
                changed["superseded_by"] = superseded_by
            if fact.id in resolutions and status is Status.SUPERSEDED and DONE_TAG not in fact.tags:
                # A plan carried out, as the update rules tag one: recall keeps its sentence.
                changed["tags"] = (*fact.tags, DONE_TAG)
            changes.append(FactUpdate(path, fact, fact.with_changes(**changed), "retire", reason))
            continue

        importance = effective_importance(
            fact, epoch=ctx.epoch, first_epoch=standing.first_epoch, accesses=accesses
        )
        if (
            fact.category is not Category.CORRECTION
            and not _is_protected(fact, protected)
            and ctx.now - fact.created > archive_age
            and importance < cc.archive_max_importance
            and accesses <= cc.archive_max_access
        ):
            target = archive_target(ctx.layout, path)
            if target is not None:
                reason = (
                    f"archived: {_days(ctx.now, fact.created):.0f} days old, importance "
                    f"{importance:.2f} < {cc.archive_max_importance}, {accesses} recall(s)"
                )
                history = StatusChange(ctx.now, fact.status, Status.ARCHIVED, reason)
                after = fact.with_changes(
                    status=Status.ARCHIVED,
                    status_history=(*fact.status_history, history),
                    updated=max(fact.updated, ctx.now),
                )
                changes.append(FactMove(path, target, after, "archive", reason))
    return changes


def move_former_counters(ctx: Context) -> list[Change]:
    """Take the counters older versions wrote out of the fact files that still carry them.

    :func:`adopt_former` has taken them into the standings, which the run writes to ``state/``
    before any file; so all of a folder's files lose them in one run, and a run killed half-way
    is finished by the next. A value that is not as we wrote it is a person's key and stays.
    """
    changes: list[Change] = []
    for path, fact in ctx.facts:
        _, former = read_standing(fact.extra)
        if former:
            after = fact.with_changes(
                extra={k: v for k, v in fact.extra.items() if k not in former}
            )
            reason = "recall counts and lifecycle scores moved to state/access.jsonl"
            changes.append(FactUpdate(path, fact, after, "migrate", reason))
    return changes


def _retirement(
    fact: Fact,
    resolutions: Mapping[str, Resolution],
    now: datetime,
    commitment_age: timedelta,
) -> tuple[Status, str, str | None] | None:
    """(new status, reason, supersededBy) when an active fact should retire, else None."""
    if fact.expires_at is not None and fact.expires_at <= now:
        tier = fact.confidence_tier.value
        return (
            Status.INVALIDATED,
            f"expired: {tier} fact not confirmed before {fact.expires_at:%Y-%m-%d}",
            None,
        )
    resolution = resolutions.get(fact.id)
    if resolution is not None and now - resolution.at >= commitment_age:
        days = _days(now, resolution.at)
        return (
            Status.SUPERSEDED,
            f"resolved commitment ({resolution.reason}) {days:.0f} days ago",
            resolution.by,
        )
    return None
