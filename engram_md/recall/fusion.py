"""What was said, fused with the facts drawn from it: one ranking for the budget.

Facts rewrite what was said; a question's words often match the original sentence better, and
a sentence fills a budget far better than a fact built from a pair of turns. So recall ranks
the sentences of ``memory/said/`` (rows of kind ``said``, one per sentence) with three votes,
each a reciprocal rank (1 / (k + rank), k = 60, as in reciprocal-rank fusion):

* the sentence's BM25 rank among the said rows (the words),
* its cosine rank among them (the meaning),
* ``fact_vote`` × the rank of the best fact drawn from its turn, as recall's own fact
  ranking placed it (what the extractor understood: names, dates, categories, the graph).

A sentence spoken by someone the query names is lifted by ``name_lift``. Facts that are notes
(a preference, a decision, a relationship: what the extractor distilled, not a moment's
words) join the same ranking with ``note_weight`` × their reciprocal rank; episodes do not,
since their sentences stand for them. Measured on the LoCoMo dev conversations with the
offline extractor, tuned on one and reported on the other (docs/ARCHITECTURE.md "Recall").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..index.saidindex import SAID_KIND, said_row_id
from ..index.table import IndexRow, MemoryIndex

SAID = f"kind = '{SAID_KIND}'"
# A turn's sentences are looked up by id; a turn longer than this many sentences gets its
# fact's vote on the first ones only.
SENTENCES_LOOKED_UP = 24
# Far more than any budget takes (a sentence is ~20 tokens); the rest is not worth scoring.
FUSED_KEPT = 400


@dataclass(frozen=True)
class FusionWeights:
    depth: int = 200  # candidates per channel, and the deepest fact rank that votes
    rrf_k: int = 60
    fact_vote: float = 2.0
    note_weight: float = 2.0
    name_lift: float = 0.3
    # A sentence of a turn a superseded or invalidated fact was drawn from ("I live in
    # Berlin" after "we moved to Munich") can be made to sink by this factor. Off (1.0) while
    # superseding is imprecise: on conv-26 the write-time rules superseded five commitments
    # that were still true ("Caroline is going to a transgender conference this month"), and
    # sinking their words by 0.5 cost 0.017 of its evidence recall (temporal 1.000 -> 0.946);
    # dropping them, 0.024.
    outdated_factor: float = 1.0


@dataclass(frozen=True)
class SaidCandidate:
    """A sentence in the pool: its row, what the channels said of it."""

    row: IndexRow
    cosine: float
    bm25: float
    channels: tuple[str, ...]


@dataclass(frozen=True)
class FusedItem:
    row: IndexRow
    score: float


def said_candidates(
    index: MemoryIndex,
    lexical: Sequence[tuple[IndexRow, float]],
    qvec: np.ndarray,
    depth: int,
) -> tuple[list[SaidCandidate], list[str], list[str]]:
    """The said pool and its two rankings (ids, best first): BM25 hits as given, cosine
    nearest from the index."""
    dense = index.vector_search(qvec, depth, where=SAID, exact=False)
    pool: dict[str, SaidCandidate] = {}
    for hit in dense:
        pool[hit.row.id] = SaidCandidate(hit.row, hit.score, 0.0, ("vector",))
    for row, score in lexical:
        found = pool.get(row.id)
        if found is None:
            cosine = float(np.dot(row.vector, qvec)) if row.vector is not None else 0.0
            pool[row.id] = SaidCandidate(row, cosine, score, ("text",))
        else:
            pool[row.id] = SaidCandidate(row, found.cosine, score, (*found.channels, "text"))
    return list(pool.values()), [r.id for r, _ in lexical], [h.row.id for h in dense]


def fuse(
    index: MemoryIndex,
    pool: Sequence[SaidCandidate],
    lexical: Sequence[str],
    dense: Sequence[str],
    facts: Sequence[IndexRow],
    names: Sequence[str],
    outdated: set[tuple[str, str]],
    w: FusionWeights,
) -> list[FusedItem]:
    """Sentences and notes in one ranking, best first (see the module's docstring)."""
    k = w.rrf_k
    scores: dict[str, float] = {}
    rows: dict[str, IndexRow] = {c.row.id: c.row for c in pool}
    for ranking in (lexical, dense):
        for rank, row_id in enumerate(ranking[: w.depth], start=1):
            scores[row_id] = scores.get(row_id, 0.0) + 1.0 / (k + rank)
    turn_rank: dict[tuple[str, str], int] = {}
    for rank, fact in enumerate(facts[: w.depth], start=1):
        for turn in fact.source_turn_ids:
            turn_rank.setdefault((fact.session, turn), rank)
        if fact.memory_kind == "note":
            rows[fact.id] = fact
            scores[fact.id] = scores.get(fact.id, 0.0) + w.note_weight / (k + rank)
    if w.fact_vote and turn_rank:
        for row in _sentences_of(index, turn_rank):
            voted = turn_rank[(row.session, row.source_turn_ids[0])]
            rows[row.id] = row
            scores[row.id] = scores.get(row.id, 0.0) + w.fact_vote / (k + voted)
    if names and w.name_lift:
        named = set(names)
        for row_id, row in rows.items():
            if row.kind == SAID_KIND and row.speaker.casefold() in named:
                scores[row_id] *= 1.0 + w.name_lift
    if outdated:
        for row_id, row in rows.items():
            if row.kind == SAID_KIND and (row.session, row.source_turn_ids[0]) in outdated:
                scores[row_id] *= w.outdated_factor
    order = sorted(scores, key=lambda row_id: (-scores[row_id], row_id))[:FUSED_KEPT]
    return [FusedItem(rows[row_id], scores[row_id]) for row_id in order]


def _sentences_of(index: MemoryIndex, turns: Iterable[tuple[str, str]]) -> list[IndexRow]:
    """The said rows of these (session, turn) pairs. Sentence ids are derived from the turn
    and numbered from 0, so the lookup asks for sentence n only of the turns that had n - 1:
    a few id lookups per turn instead of a search."""
    found: list[IndexRow] = []
    pending = list(turns)
    for number in range(SENTENCES_LOOKED_UP):
        if not pending:
            break
        wanted = {said_row_id(session, turn, number): (session, turn) for session, turn in pending}
        rows = index.get(list(wanted))
        found.extend(rows.values())
        pending = [wanted[row_id] for row_id in rows]
    return found
