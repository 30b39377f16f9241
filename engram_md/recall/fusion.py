"""What was said, fused with the facts drawn from it: one ranking for the budget.

Facts rewrite what was said; a question's words often match the original sentence better, and
a sentence fills a budget far better than a fact built from a pair of turns. So recall ranks
the sentences of ``memory/said/`` (rows of kind ``said``, one per sentence) with three votes,
each a reciprocal rank (1 / (k + rank), as in reciprocal-rank fusion, with k = 10 rather than
the textbook 60; see ``FusionWeights.rrf_k``):

* the sentence's BM25 rank among the said rows (the words),
* its cosine rank among them (the meaning),
* ``fact_vote`` × the rank of the best fact drawn from its turn, as recall's own fact
  ranking placed it (what the extractor understood: names, dates, categories, the graph).

A sentence spoken by someone the query names is lifted by ``name_lift``. Facts that are notes
(a preference, a decision, a relationship: what the extractor distilled, not a moment's
words) join the same ranking with ``note_weight`` × their reciprocal rank; episodes do not,
since their sentences stand for them. A fact no longer true votes only when it stays true
as history (an event, a plan carried out; ``history_vote``). Last, the turns said just
before and after the best sentences gain a share of their score (``context_share``;
recall/context.py): a chat answer is often the message after the one a question matches.
Measured on the LoCoMo dev conversations with the offline extractor, tuned on one and
reported on the other (docs/ARCHITECTURE.md "Recall").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..index.saidindex import SAID_KIND, said_row_id
from ..index.table import IndexRow, MemoryIndex
from ..text.claims import tells_event
from ..text.words import content_words

SAID = f"kind = '{SAID_KIND}'"
# The turns said around a sentence's turn, nearest first: (said row, reach) -> turn ids.
Around = Callable[[IndexRow, int], Sequence[str]]
# A turn's sentences are looked up by id; a turn longer than this many sentences gets its
# fact's vote on the first ones only.
SENTENCES_LOOKED_UP = 24
# Far more than any budget takes (a sentence is ~20 tokens); the rest is not worth scoring.
FUSED_KEPT = 400


@dataclass(frozen=True)
class FusionWeights:
    depth: int = 200  # candidates per channel, and the deepest fact rank that votes
    # The k of 1 / (k + rank). The textbook 60 makes ranks nearly flat (rank 1 is worth 1/61,
    # rank 20 1/80), so many middling matches add up past a sentence one channel ranks
    # first; 10 lets the top of each ranking count. Chosen by cross-check over k 5-120 on the
    # LoCoMo dev pair and its two chat rewrites (bench/recall_bench.py, bench/chat_style.py):
    # 10 is the best on either conversation and on the other one too; the mean over 500/1000
    # tokens and the three texts went from 0.854/0.824 (conv-26/conv-30) at 60 to 0.869/0.849,
    # and most on the shortest messages (one per clause: 0.869 -> 0.895 at 1000 tokens).
    rrf_k: int = 10
    # A fact's vote and a note's place weigh as much as a channel. They weighed twice as much
    # until the context below: with it, 1 measured better on both dev conversations at 1000
    # tokens, and at 500 better on one and the same on the other (docs/ARCHITECTURE.md).
    fact_vote: float = 1.0
    note_weight: float = 1.0
    name_lift: float = 0.3
    # The sentence a superseded or invalidated fact was drawn from ("I live in Berlin" after
    # "we moved to Munich") is weighed by this factor; 0 leaves it out. Only the sentence
    # that holds the outdated statement's words, not its whole turn, and only when inactive
    # memories are not asked for. (When the old write-time rules superseded commitments
    # that were still true, sinking their turns cost 0.017 of conv-26's evidence recall;
    # text/claims/ replaced those rules.)
    outdated_factor: float = 0.0
    # ... unless the sentence tells of something that happened (text.claims.tells_event):
    # "I lost my job last month, so I'm starting a business" stays true as history once
    # "I'm back at work", so it is weighed by this factor instead.
    history_factor: float = 1.0
    # A fact no longer true that stays true as history (recaller.votes) still votes for its
    # sentences, by this share of an active fact's vote; it is never recalled itself. Before,
    # such a fact left the fact ranking and its sentence lost the vote (conv-30 multi-hop at
    # 1000 tokens: 0.729 -> 0.774; its sentence rewrite 0.642 -> 0.688; conv-26 multi-hop
    # 0.784 -> 0.799). A full vote let a carried-out plan push one of conv-26's answers out
    # in an earlier measure; 0.25 and 0.5 measured the same, 0.5 ranks it below the current
    # facts that vote with it.
    history_vote: float = 0.5
    # Context: the sentences of the turns within ``context_reach`` lines of each of the best
    # ``context_hits`` sentences gain ``context_share`` of its score (recall/context.py). In
    # chat the answer is often the message after the one a question matches. Across the LoCoMo
    # dev pair and the held-out conversations (docs/ARCHITECTURE.md "Recall"), reach 2 with a
    # share of 0.2-0.4 over the best 10-15 sentences measured alike; reach 1 gained half.
    context_share: float = 0.3
    context_hits: int = 10
    context_reach: int = 2


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
    context_of: str = ""  # the id of the sentence whose context lifted it, if one did


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
    outdated: Mapping[tuple[str, str], Sequence[frozenset[str]]],
    w: FusionWeights,
    around: Around | None = None,
) -> list[FusedItem]:
    """Sentences and notes in one ranking, best first (see the module's docstring)."""
    k = w.rrf_k
    scores: dict[str, float] = {}
    rows: dict[str, IndexRow] = {c.row.id: c.row for c in pool}
    for ranking in (lexical, dense):
        for rank, row_id in enumerate(ranking[: w.depth], start=1):
            scores[row_id] = scores.get(row_id, 0.0) + 1.0 / (k + rank)
    turn_vote: dict[tuple[str, str], float] = {}
    for rank, fact in enumerate(facts[: w.depth], start=1):
        vote = w.fact_vote / (k + rank) * (1.0 if fact.status == "active" else w.history_vote)
        for turn in fact.source_turn_ids:
            key = (fact.session, turn)
            turn_vote[key] = max(turn_vote.get(key, 0.0), vote)
        if fact.memory_kind == "note" and fact.status == "active":
            rows[fact.id] = fact
            scores[fact.id] = scores.get(fact.id, 0.0) + w.note_weight / (k + rank)
    turn_vote = {turn: vote for turn, vote in turn_vote.items() if vote > 0.0}
    if w.fact_vote and turn_vote:
        for row in _sentences_of(index, turn_vote):
            rows[row.id] = row
            scores[row.id] = (
                scores.get(row.id, 0.0) + turn_vote[(row.session, row.source_turn_ids[0])]
            )
    if names and w.name_lift:
        named = set(names)
        for row_id, row in rows.items():
            if row.kind == SAID_KIND and row.speaker.casefold() in named:
                scores[row_id] *= 1.0 + w.name_lift
    context_of: dict[str, str] = {}
    if around is not None and w.context_share and w.context_hits and w.context_reach:
        support = _context_support(rows, scores, around, w)
        for row in _sentences_of(index, support):
            lent, lender = support[(row.session, row.source_turn_ids[0])]
            rows[row.id] = row
            scores[row.id] = scores.get(row.id, 0.0) + lent
            context_of[row.id] = lender
    # After the context, so that a statement no longer true is not brought back by the
    # sentence said next to it ("we moved to Munich" after "I live in Berlin").
    if outdated:
        for row_id, row in rows.items():
            if row.kind != SAID_KIND:
                continue
            statements = outdated.get((row.session, row.source_turn_ids[0]))
            if statements and drawn_from(row.content, statements):
                scores[row_id] *= outdated_weight(row.content, w)
    scores = {row_id: score for row_id, score in scores.items() if score > 0.0}
    order = sorted(scores, key=lambda row_id: (-scores[row_id], row_id))[:FUSED_KEPT]
    return [FusedItem(rows[i], scores[i], context_of.get(i, "")) for i in order]


def _context_support(
    rows: Mapping[str, IndexRow], scores: Mapping[str, float], around: Around, w: FusionWeights
) -> dict[tuple[str, str], tuple[float, str]]:
    """What each turn said near one of the best sentences gains, by (session, turn):
    ``context_share`` of the best such sentence's score, and that sentence's id."""
    said = (row_id for row_id in scores if rows[row_id].kind == SAID_KIND)
    best = sorted(said, key=lambda row_id: (-scores[row_id], row_id))[: w.context_hits]
    support: dict[tuple[str, str], tuple[float, str]] = {}
    for row_id in best:  # best first: a turn keeps the first, strongest, lender
        row, lent = rows[row_id], w.context_share * scores[row_id]
        for turn in around(row, w.context_reach):
            support.setdefault((row.session, turn), (lent, row_id))
    return support


# Share of an outdated statement's words a sentence must hold to be the one it was drawn from.
DRAWN_FROM = 0.6


def outdated_weight(sentence: str, w: FusionWeights) -> float:
    """The factor of a sentence an outdated statement was drawn from: ``history_factor`` when
    it tells of an event, which stays true as history, ``outdated_factor`` otherwise."""
    return w.history_factor if tells_event(sentence) else w.outdated_factor


def statement_words(content: str, speaker: str) -> frozenset[str]:
    """The words of a stored statement that its sentence also holds: not the speaker's name,
    which the statement adds ("Sam lives in Berlin" from "I live in Berlin")."""
    name = set(content_words(speaker))
    return frozenset(_stem(w) for w in content_words(content) if w not in name)


def drawn_from(sentence: str, statements: Iterable[frozenset[str]]) -> bool:
    """Whether ``sentence`` holds most words of one of ``statements``."""
    words = frozenset(_stem(w) for w in content_words(sentence))
    return any(s and len(s & words) >= DRAWN_FROM * len(s) for s in statements)


def _stem(word: str) -> str:
    """Third-person and plural -s: "lives" in the statement is "live" in the sentence."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


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
