"""Duplicates and contradictions among stored facts: the offline rules, and the lineage they
leave behind.

Consolidation compares the facts that are new since its last run with every related stored
fact, not with a window of recent ones. "Related" is decided in two cheap stages, so a
100k-fact folder costs seconds:

1. **Same subject.** Facts are grouped by what they are about: their entities (``person-dana``
   → ``dana``), else the names in the statement, else its first content word. Only facts that
   share a subject are ever compared.
2. **Close in meaning.** Within a subject, the embeddings of the new facts are multiplied with
   those of the group; pairs under :data:`CANDIDATE_COSINE` are not looked at further.

A candidate pair is then judged by explainable rules on the words of the two statements
(:func:`relate`). The *frame* of a statement is its content words (stemmed lightly, stop words,
numbers and correction markers left out) — what the statement is about, without the values:

* **duplicate** — the same normalized text; or the same category, polarity and specifics
  (numbers, names), no correction marker, frames that overlap ≥ 0.6 (Jaccard) and word order
  that agrees (bigrams ≥ 0.3, so "uv over pip" never merges with "pip over uv").
* **numbers changed** — both are notes (stable knowledge, not events), the same frame
  (Jaccard ≥ 0.75), and numbers that differ: "Dana's team has 4 engineers" → "... 6 engineers".
  The newer one supersedes the older.
* **explicit correction** — the newer statement carries a correction marker ("not X",
  "actually", "no longer", "instead of", "rather than", "anymore", "correction", "turns out")
  or flips the polarity of the older one, the older one is a note, and the older frame is
  (almost) contained in the newer one (≥ 0.75): "Dana's manager is Priya" → "Actually,
  Dana's manager is Marco, not Priya".

Episodes (time-bound events) are never superseded by number or marker rules: two races of
different lengths are two events, not a correction (seed 002: episodes keep their fidelity).

Nothing is deleted. A duplicate is *merged* into the earliest (then most confident) fact of
its group: the others get status ``merged`` and ``supersededBy``, the survivor ``mergedFrom``,
their turns and their confirmations. A superseded fact gets status ``superseded``,
``supersededBy`` and a ``statusHistory`` entry; the newer fact lists it in ``supersedes``.
Every change is idempotent (a member already in ``mergedFrom`` is not folded in again), so a
run that was killed half-way is finished by the next one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import regex

from ..core.models import Category, Fact, MemoryKind, Status, StatusChange, add_source_turns
from ..core.workers import map_spread
from ..extract import normalize
from ..text.claims import DONE_TAG, ClaimBook, carried_out, claims_of, update_between
from ..text.words import STOP_WORDS, WORD, content_words
from .plan import Change, FactUpdate

# Pairs of facts less similar than this are never judged: well below any duplicate (≥ 0.9)
# and below a corrected statement and its original (0.75-0.95 with all-MiniLM-L6-v2).
CANDIDATE_COSINE = 0.6
# Nearest facts per subject a new fact is checked against (see candidate_pairs).
NEAREST = 10
DUPLICATE_FRAME = 0.6
DUPLICATE_BIGRAMS = 0.3
NUMBERS_FRAME = 0.75
CORRECTION_CONTAINMENT = 0.75
MIN_FRAME = 2  # a frame of one word ("dana") says too little to call anything a correction

Kind = Literal["duplicate", "supersede", "invalidate"]

# Quantifiers, wh-words and particles say nothing about what a statement states either; they
# are not in STOP_WORDS because the write-time near-duplicate test is tuned without them.
_STOP = STOP_WORDS | frozenset(
    "being s t all every any each some there here than then into about over under up out what "
    "which who whom whose".split()
)
# Words that mark a statement as correcting an earlier one. Deliberately strong ones only:
# "now" or "moved" also start plain news ("Dana now likes pizza" does not undo "likes sushi").
_MARKER = regex.compile(
    r"\b(?:not|no\s+longer|instead\s+of|rather\s+than|actually|anymore|any\s+more|"
    r"correction|turns\s+out|was\s+wrong|mistaken)\b",
    regex.IGNORECASE,
)
_MARKER_WORDS = frozenset(
    "not no longer instead rather actually anymore any more correction turns turn wrong "
    "mistaken never".split()
)
_NEGATION = regex.compile(r"\b(?:not|never|no|cannot)\b|n't\b", regex.IGNORECASE)


def _stem(word: str) -> str:
    """Plural and third-person -s only: "editors" = "editor", "prefers" = "prefer"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@dataclass(frozen=True)
class Profile:
    """The words of one statement that the rules look at."""

    text: str

    @cached_property
    def words(self) -> tuple[str, ...]:
        """Content words in order, stemmed; numbers kept."""
        return tuple(_stem(w) for w in content_words(self.text, _STOP))

    @cached_property
    def numbers(self) -> frozenset[str]:
        return frozenset(w for w in self.words if any(ch.isdigit() for ch in w))

    @cached_property
    def names(self) -> frozenset[str]:
        """Capitalized words that are not the first of their sentence (as the indexer does)."""
        found: set[str] = set()
        for sentence in regex.split(r"(?<=[.!?:])\s+", self.text):
            for position, word in enumerate(WORD.findall(sentence)):
                if position > 0 and word[0].isupper() and word.casefold() not in _STOP:
                    found.add(word.casefold())
        return frozenset(found - _MARKER_WORDS)

    @cached_property
    def frame(self) -> frozenset[str]:
        """What the statement is about: content words without values and correction words."""
        return frozenset(w for w in self.words if w not in self.numbers and w not in _MARKER_WORDS)

    @cached_property
    def bigrams(self) -> frozenset[tuple[str, str]]:
        seq = [w for w in self.words if w not in _MARKER_WORDS]
        return frozenset(zip(seq, seq[1:], strict=False))

    @cached_property
    def marker(self) -> str | None:
        match = _MARKER.search(self.text)
        return match.group(0).casefold() if match else None

    @cached_property
    def negated(self) -> bool:
        return _NEGATION.search(self.text) is not None

    @cached_property
    def first_word(self) -> str | None:
        return next(iter(sorted(self.frame, key=self.words.index)), None)


def subjects(fact: Fact, profile: Profile | None = None) -> frozenset[str]:
    """What a fact is about, for grouping: entity names, else names in the text, else its
    first content word."""
    keys = {e.partition("-")[2] or e for e in fact.entities}
    keys = {k.casefold() for k in keys if k}
    if keys:
        return frozenset(keys)
    profile = profile or Profile(fact.content)
    first = WORD.findall(fact.content)[:1]
    names = set(profile.names)
    if first and first[0][0].isupper() and first[0].casefold() not in _STOP | _MARKER_WORDS:
        names.add(first[0].casefold())  # "Dana's team ..." starts with its subject
    if names:
        return frozenset(names)
    return frozenset({profile.first_word}) if profile.first_word else frozenset()


def _jaccard(a: frozenset[object], b: frozenset[object]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class Relation:
    """What consolidation decided about two facts; ``older`` loses, ``newer`` stays.

    For ``duplicate`` the two are merged (the orchestrator picks the survivor of each group);
    for ``supersede`` and ``invalidate`` the older fact is retired in favour of the newer one.
    """

    kind: Kind
    older: str
    newer: str
    reason: str


def compatible(a: Fact, b: Fact) -> bool:
    """Same subject: a compatible category and, when both name entities, a shared one."""
    if a.category != b.category and Category.CORRECTION not in (a.category, b.category):
        return False
    return not (a.entities and b.entities and not set(a.entities) & set(b.entities))


def order(a: Fact, b: Fact) -> tuple[Fact, Fact]:
    """(older, newer) by creation time, then id, so a pair is judged the same either way."""
    return (a, b) if (a.created, a.id) <= (b.created, b.id) else (b, a)


def relate(
    a: Fact, b: Fact, pa: Profile | None = None, pb: Profile | None = None
) -> Relation | None:
    """The offline verdict on two active facts, or None when they are unrelated."""
    older, newer = order(a, b)
    if older.id == newer.id or not compatible(older, newer):
        return None
    if older.content_hash and older.content_hash == newer.content_hash:
        return Relation("duplicate", older.id, newer.id, "the same statement")
    if pa is None or pb is None:
        pa, pb = Profile(a.content), Profile(b.content)
    po, pn = (pa, pb) if older is a else (pb, pa)
    frame_j = _jaccard(po.frame, pn.frame)
    flipped = po.negated != pn.negated
    if (
        older.category == newer.category
        and not flipped
        and po.marker is None
        and pn.marker is None
        and po.numbers == pn.numbers
        and po.names == pn.names
        and frame_j >= DUPLICATE_FRAME
        and _jaccard(po.bigrams, pn.bigrams) >= DUPLICATE_BIGRAMS
    ):
        return Relation("duplicate", older.id, newer.id, f"near duplicate (frame {frame_j:.2f})")
    if older.memory_kind is not MemoryKind.NOTE or len(po.frame) < MIN_FRAME:
        return None
    if po.numbers and pn.numbers and po.numbers != pn.numbers and frame_j >= NUMBERS_FRAME:
        was, now = ", ".join(sorted(po.numbers)), ", ".join(sorted(pn.numbers - po.numbers))
        return Relation(
            "supersede", older.id, newer.id, f"same statement, numbers changed ({was} → {now})"
        )
    contained = len(po.frame & pn.frame) / len(po.frame)
    if (pn.marker is not None or flipped) and contained >= CORRECTION_CONTAINMENT:
        cue = f"'{pn.marker}'" if pn.marker else "opposite polarity"
        return Relation("supersede", older.id, newer.id, f"corrected by a newer statement ({cue})")
    return None


# ---------------------------------------------------------------- finding candidate pairs


def candidate_pairs(
    facts: Sequence[Fact],
    new: Sequence[bool],
    vectors: np.ndarray | None,
    profiles: Sequence[Profile],
    *,
    min_cosine: float = CANDIDATE_COSINE,
    per_fact: int = NEAREST,
) -> Iterator[tuple[int, int, float]]:
    """Pairs ``(i, j, cosine)`` with ``i < j``, at least one of them new, the same subject and
    a cosine of at least ``min_cosine``; each pair once.

    Each new fact is paired with its ``per_fact`` nearest facts of each subject it has: a
    duplicate or a corrected statement is among the nearest, and a subject with thousands of
    alike statements (a busy person, a template) must not cost a quadratic number of checks.
    Without vectors every same-subject pair is a candidate (cosine reported as 1.0).
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for i, fact in enumerate(facts):
        for key in subjects(fact, profiles[i]):
            groups[key].append(i)
    seen: set[tuple[int, int]] = set()
    new_mask = np.asarray(new, dtype=bool)
    for key in sorted(groups):
        members = np.asarray(groups[key], dtype=np.int64)
        fresh = members[new_mask[members]]
        if len(members) < 2 or len(fresh) == 0:
            continue
        for start in range(0, len(fresh), 512):
            rows = fresh[start : start + 512]
            if vectors is None:
                scores = np.ones((len(rows), len(members)), dtype=np.float32)
            else:
                scores = vectors[rows] @ vectors[members].T
            scores[rows[:, None] == members[None, :]] = -np.inf  # not with itself
            if vectors is not None and len(members) > per_fact:
                top = np.argpartition(-scores, per_fact - 1, axis=1)[:, :per_fact]
                keep = np.zeros_like(scores, dtype=bool)
                np.put_along_axis(keep, top, True, axis=1)
                scores[~keep] = -np.inf
            hit_r, hit_c = np.nonzero(scores >= min_cosine)
            for r, c in zip(hit_r.tolist(), hit_c.tolist(), strict=True):
                i, j = int(rows[r]), int(members[c])
                pair = (i, j) if i < j else (j, i)
                if pair in seen:
                    continue
                seen.add(pair)
                yield pair[0], pair[1], float(scores[r, c])


def exact_duplicates(facts: Sequence[Fact], new: Sequence[bool]) -> list[Relation]:
    """Facts with the same normalized text as a new fact: the same fact, whatever the subject.
    Certain, so they are merged offline even when an LLM judges the rest."""
    by_hash: dict[str, list[int]] = defaultdict(list)
    for i, fact in enumerate(facts):
        if fact.content_hash:
            by_hash[fact.content_hash].append(i)
    found = []
    for members in by_hash.values():
        if len(members) > 1 and any(new[i] for i in members):
            ranked = sorted(members, key=lambda i: (facts[i].created, facts[i].id))
            first = facts[ranked[0]]
            for i in ranked[1:]:
                found.append(Relation("duplicate", first.id, facts[i].id, "the same statement"))
    return found


UPDATED = "updated: "  # the reason of a supersede the claim rules found


def update_relations(facts: Sequence[Fact], new: Sequence[bool]) -> list[Relation]:
    """Updates the claim rules recognize (:mod:`engram_md.text.claims`) between a new fact
    and any other active fact, in either direction: an imported old statement can be the one
    that a stored newer statement already replaced."""
    book = ClaimBook()
    stated = map_spread(claims_of, [(f.content, tuple(f.entities)) for f in facts])
    for fact, claims in zip(facts, stated, strict=True):
        book.add(fact.id, claims, fact.created)
    is_new = {fact.id for fact, fresh in zip(facts, new, strict=True) if fresh}
    found = []
    for i, fact in enumerate(facts):
        if not new[i] or not stated[i]:
            continue
        for older, reason in book.updated_by(fact.id, stated[i], fact.created):
            found.append(Relation("supersede", older, fact.id, f"{UPDATED}{reason}"))
        for other_id, (other, other_at) in book.later_candidates(fact.id, stated[i]).items():
            # Said later, stored earlier. A new one of those is compared from its own side
            # (above), so only the ones stored before are looked at here.
            if other_id not in is_new and (other_at, other_id) > (fact.created, fact.id):
                back = update_between(stated[i], other)
                if back is not None:
                    found.append(Relation("supersede", fact.id, other_id, f"{UPDATED}{back}"))
    return found


def offline_relations(
    facts: Sequence[Fact], new: Sequence[bool], vectors: np.ndarray | None
) -> list[Relation]:
    """Every relation the offline rules find between a new fact and any related fact."""
    profiles = [Profile(f.content) for f in facts]
    found = exact_duplicates(facts, new) + update_relations(facts, new)
    for i, j, _ in candidate_pairs(facts, new, vectors, profiles):
        relation = relate(facts[i], facts[j], profiles[i], profiles[j])
        if relation is not None:
            found.append(relation)
    # One relation per pair and kind: the first rule to find it gives the reason.
    first = {(r.older, r.newer, r.kind): r for r in reversed(found)}
    return sorted(first.values(), key=lambda r: (r.older, r.newer, r.kind))


# ---------------------------------------------------------------- relations -> changes


def _history(fact: Fact, to: Status, reason: str, now: datetime) -> tuple[StatusChange, ...]:
    return (*fact.status_history, StatusChange(now, fact.status, to, reason))


def _add(items: tuple[str, ...], extra: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*items, *extra)))


def _strength(fact: Fact) -> tuple[datetime, float, str]:
    # Earliest first; among equally old ones the most confident; the id breaks ties.
    return (fact.created, -fact.confidence, fact.id)


def _newest(fact: Fact) -> tuple[datetime, str]:
    return (fact.created, fact.id)


def lineage_changes(
    relations: Iterable[Relation],
    facts: Mapping[str, tuple[Path, Fact]],
    now: datetime,
) -> list[Change]:
    """FactUpdates for a set of relations between active facts.

    Duplicates are grouped (a merged fact is not also superseded); each group keeps its
    earliest, then strongest fact. An older fact corrected by several newer ones is
    superseded by the newest. The survivor of a merge is written before the facts merged into
    it, and a newer fact before the one it supersedes (the order of the returned list), so a
    run killed in between leaves lineage the next run completes rather than dangling links.
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    retire: dict[str, Relation] = {}
    for rel in relations:
        if rel.older not in facts or rel.newer not in facts:
            continue
        if rel.kind == "duplicate":
            a, b = find(rel.older), find(rel.newer)
            if a != b:
                parent[max(a, b)] = min(a, b)
        else:
            # Corrected by several newer facts: the newest one wins.
            current = retire.get(rel.older)
            if current is None or _newest(facts[rel.newer][1]) > _newest(facts[current.newer][1]):
                retire[rel.older] = rel
    groups: dict[str, list[str]] = defaultdict(list)
    for x in list(parent):
        groups[find(x)].append(x)
    for root in list(groups):
        groups[root] = sorted(set(groups[root]) | {root}, key=lambda i: _strength(facts[i][1]))

    after: dict[str, Fact] = {}
    first: list[str] = []  # survivors and superseding facts: written first
    second: list[str] = []  # facts that stop being active
    reasons: dict[str, tuple[str, str]] = {}
    merged_into: dict[str, str] = {}
    for members in groups.values():
        survivor_id, *others = members
        survivor = after.get(survivor_id, facts[survivor_id][1])
        fold = [facts[o][1] for o in others if o not in survivor.merged_from]
        if fold:
            confidence = max([survivor.confidence, *(f.confidence for f in fold)])
            confirmed = [survivor.last_confirmed, *(f.last_confirmed for f in fold)]
            confirmed += [f.created for f in fold]
            survivor = survivor.with_changes(
                merged_from=_add(survivor.merged_from, (f.id for f in fold)),
                source_turn_ids=add_source_turns(
                    survivor.source_turn_ids, (t for f in fold for t in f.source_turn_ids)
                ),
                confirmations=survivor.confirmations + sum(f.confirmations + 1 for f in fold),
                last_confirmed=max(c for c in confirmed if c is not None),
                confidence=confidence,
                confidence_tier=normalize.confidence_tier(confidence),
                importance=max([survivor.importance, *(f.importance for f in fold)]),
                tags=_add(survivor.tags, (t for f in fold for t in f.tags)),
                entities=_add(survivor.entities, (e for f in fold for e in f.entities)),
                expires_at=None,  # said again: a speculative fact stops expiring
                updated=max(survivor.updated, now),
            )
            after[survivor_id] = survivor
            first.append(survivor_id)
            reasons[survivor_id] = ("merge_survivor", f"absorbed {len(fold)} duplicate(s)")
        for other in others:
            merged_into[other] = survivor_id
            fact = facts[other][1]
            reason = f"duplicate of {survivor_id}"
            after[other] = fact.with_changes(
                status=Status.MERGED,
                superseded_by=survivor_id,
                status_history=_history(fact, Status.MERGED, reason, now),
                updated=max(fact.updated, now),
            )
            second.append(other)
            reasons[other] = ("merge", reason)
    for old_id, rel in sorted(retire.items()):
        if old_id in merged_into:
            continue
        newer_id = merged_into.get(rel.newer, rel.newer)
        newer = after.get(newer_id, facts[newer_id][1])
        if old_id not in newer.supersedes:
            after[newer_id] = newer.with_changes(
                supersedes=_add(newer.supersedes, [old_id]), updated=max(newer.updated, now)
            )
            if newer_id not in first:
                first.append(newer_id)
                reasons.setdefault(newer_id, ("supersede_newer", f"supersedes {old_id}"))
        old = after.get(old_id, facts[old_id][1])
        to = Status.SUPERSEDED if rel.kind == "supersede" else Status.INVALIDATED
        reason = f"{rel.reason}; replaced by {newer_id}"
        done = carried_out(rel.reason.removeprefix(UPDATED))
        after[old_id] = old.with_changes(
            tags=_add(old.tags, [DONE_TAG]) if done else old.tags,
            status=to,
            superseded_by=newer_id,
            status_history=_history(old, to, reason, now),
            updated=max(old.updated, now),
        )
        second.append(old_id)
        reasons[old_id] = (rel.kind, reason)

    changes: list[Change] = []
    for fact_id in dict.fromkeys([*sorted(first), *sorted(second)]):
        path, before = facts[fact_id]
        action, reason = reasons[fact_id]
        if after[fact_id] != before:
            changes.append(FactUpdate(path, before, after[fact_id], action, reason))
    return changes
