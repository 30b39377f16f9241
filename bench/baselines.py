"""Three retrieval baselines a user could build in an afternoon, to measure recall against.

* :class:`BM25Turns` — Okapi BM25 over raw dialogue turns.
* :class:`DenseTurns` — all-MiniLM-L6-v2 cosine over raw dialogue turns.
* :class:`HybridSentences` — single sentences prefixed with the speaker's name, ranked by BM25
  and by MiniLM separately and fused by reciprocal rank.

Each is built over one conversation's turns (one memory) and answers a query with ranked
units ``((dia_id,), text)``. They are deliberately plain — textbook parameters, no tuning to
the benchmark — because they are the bar the project's recall has to clear.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from engram_md.text.embeddings import Embedder, LocalMiniLM
from engram_md.text.sentences import split_sentences

from .evidence import QuestionRetriever, Retriever, Unit, scoped
from .locomo import Turn

K1 = 1.2
B = 0.75
RRF_K = 60
FUSION_DEPTH = 200

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# Function words only: content words, names and numbers all carry the match.
STOP_WORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from as into about over after before
    is am are was were be been being do does did done have has had having
    i me my mine we us our you your he him his she her it its they them their
    this that these those there here what which who whom whose when where why how
    not no so than then too very can could will would shall should may might must
    just also up out off again all any some such only own same other
    i'm i've i'd i'll you're you've it's that's there's don't didn't doesn't
    """.split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase words (with an inner apostrophe kept), stop words dropped."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25:
    """Okapi BM25 over a fixed list of documents (k1 = 1.2, b = 0.75).

    Postings are numpy arrays per term, so a query touches only the documents that share a
    term with it. The idf is the non-negative form ``ln(1 + (N - df + 0.5) / (df + 0.5))``,
    so a term found in most documents still counts a little instead of counting against.
    """

    def __init__(self, documents: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.size = len(documents)
        counted = [Counter(tokenize(doc)) for doc in documents]
        lengths = np.array([sum(c.values()) for c in counted], dtype=np.float64)
        average = float(lengths.mean()) if self.size and lengths.sum() else 1.0
        # The per-document part of the denominator, computed once.
        self._norm = k1 * (1.0 - b + b * lengths / average)
        self._k1 = k1
        docs: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        for i, counts in enumerate(counted):
            for term, n in counts.items():
                docs.setdefault(term, []).append(i)
                freqs.setdefault(term, []).append(n)
        self._postings = {
            term: (np.array(docs[term]), np.array(freqs[term], dtype=np.float64)) for term in docs
        }

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (0 where no term matches)."""
        out = np.zeros(self.size, dtype=np.float64)
        for term in set(tokenize(query)):
            posting = self._postings.get(term)
            if posting is None:
                continue
            ids, tf = posting
            idf = math.log(1.0 + (self.size - len(ids) + 0.5) / (len(ids) + 0.5))
            out[ids] += idf * tf * (self._k1 + 1.0) / (tf + self._norm[ids])
        return out

    def rank(self, query: str, limit: int | None = None) -> list[int]:
        """Indices of the documents matching ``query``, best first (ties in document order)."""
        scores = self.scores(query)
        matched = np.flatnonzero(scores > 0)
        order = matched[np.argsort(-scores[matched], kind="stable")]
        return [int(i) for i in order[:limit]]


def dense_rank(matrix: np.ndarray, query_vector: np.ndarray, limit: int | None = None) -> list[int]:
    """Row indices by cosine similarity to ``query_vector`` (rows are unit length), best first."""
    if len(matrix) == 0:
        return []
    order = np.argsort(-(matrix @ query_vector), kind="stable")
    return [int(i) for i in order[:limit]]


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: each item scores sum(1 / (k + rank)), rank counted from 1.

    Ties keep the order in which items were first seen across the rankings, so the result is
    deterministic.
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def turn_text(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


class _QueryVectors:
    """Embeds each query once, though two baselines ask for it."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, query: str) -> np.ndarray:
        vector = self._cache.get(query)
        if vector is None:
            vector = self.embedder.embed([query])[0]
            self._cache[query] = vector
        return vector


class BM25Turns:
    """BM25 over raw turns; a unit is one turn, ``"Speaker: text"``."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._units: list[Unit] = [((t.dia_id,), turn_text(t)) for t in turns]
        self._bm25 = BM25([text for _, text in self._units])

    def __call__(self, query: str) -> list[Unit]:
        return [self._units[i] for i in self._bm25.rank(query)]


class DenseTurns:
    """MiniLM cosine over raw turns (embedded once, in batches); the same units as BM25."""

    def __init__(
        self,
        turns: Sequence[Turn],
        embedder: Embedder,
        query_vector: Callable[[str], np.ndarray] | None = None,
    ) -> None:
        self._units: list[Unit] = [((t.dia_id,), turn_text(t)) for t in turns]
        self._matrix = embedder.embed([text for _, text in self._units])
        self._query_vector = query_vector or _QueryVectors(embedder)

    def __call__(self, query: str) -> list[Unit]:
        return [self._units[i] for i in dense_rank(self._matrix, self._query_vector(query))]


class HybridSentences:
    """Speaker-prefixed sentences ranked by BM25 and by MiniLM, fused by RRF (k = 60).

    Each ranking contributes its top :data:`FUSION_DEPTH` sentences; a sentence keeps its
    turn's dia_id as its source.
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        embedder: Embedder,
        query_vector: Callable[[str], np.ndarray] | None = None,
    ) -> None:
        self._units: list[Unit] = [
            ((t.dia_id,), f"{t.speaker}: {sentence}")
            for t in turns
            for sentence in split_sentences(t.text)
        ]
        texts = [text for _, text in self._units]
        self._bm25 = BM25(texts)
        self._matrix = embedder.embed(texts)
        self._query_vector = query_vector or _QueryVectors(embedder)

    def __call__(self, query: str) -> list[Unit]:
        lexical = self._bm25.rank(query, FUSION_DEPTH)
        dense = dense_rank(self._matrix, self._query_vector(query), FUSION_DEPTH)
        return [self._units[i] for i in rrf([lexical, dense])]


def build_baselines(
    turns: Sequence[Turn], embedder: Embedder | None = None
) -> dict[str, QuestionRetriever]:
    """The three baselines, each scoped per conversation, keyed by a display name."""
    by_conversation: dict[str, list[Turn]] = {}
    for turn in turns:
        by_conversation.setdefault(turn.conversation, []).append(turn)
    model = embedder if embedder is not None else LocalMiniLM()
    vectors = _QueryVectors(model)  # shared: both dense baselines embed the same questions
    bm25: dict[str, Retriever] = {}
    dense: dict[str, Retriever] = {}
    hybrid: dict[str, Retriever] = {}
    for conversation, items in by_conversation.items():
        bm25[conversation] = BM25Turns(items)
        dense[conversation] = DenseTurns(items, model, vectors)
        hybrid[conversation] = HybridSentences(items, model, vectors)
    return {
        "bm25-turns": scoped(bm25),
        "dense-turns": scoped(dense),
        "hybrid-sentences": scoped(hybrid),
    }
