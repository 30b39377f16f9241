"""Full-text search in memory: BM25 over the resident rows' content, by row position.

LanceDB's own full-text query costs about 9 ms however small the table (planning and a hop
to its runtime; 1.7k rows or 40k, limit 10 or 800), and recall asks one per question: the
largest part of a recall's wall time. Scoring the few posting lists a question's words
touch, in process, takes well under a millisecond at a memory folder's sizes.

Words are read the way the LanceDB index was built to read them (:func:`.lance.fts_config`):
split on anything not a letter or digit, lower-cased, Snowball English stems (the stemmer
LanceDB's tokenizer uses), English stop words dropped, accents folded. Rows are ranked by
BM25 (k1 1.2, b 0.75, the usual constants) with the statistics of the live rows.

Positions are the resident copy's: they only grow, a replaced row's old position is dead
(``alive`` says which are not), and :meth:`TextIndex.renumbered` follows a compaction.
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
import regex
import snowballstemmer

_K1 = 1.2
_B = 0.75
# Longer runs of letters are not words (hashes, base64): LanceDB drops them too.
_MAX_WORD = 40
_WORD = regex.compile(r"[^\W_]+")
# English stop words (the NLTK list LanceDB's tokenizer uses). Like LanceDB, a word is
# dropped when its stem is one of them: "does" (stem "doe") stays, "once" goes.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
    couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
    mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
    weren't won won't wouldn wouldn't""".split()
)
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _term(word: str) -> str | None:
    """The indexed form of one lower-cased word, or None for a stop word or a non-word: its
    stem, accents folded after stemming (as LanceDB does: "résumé" is "resume")."""
    if len(word) > _MAX_WORD:
        return None
    stem = str(_STEMMER.stemWord(word))
    if stem in STOP_WORDS:
        return None
    if not stem.isascii():
        folded = "".join(
            c for c in unicodedata.normalize("NFKD", stem) if not unicodedata.combining(c)
        )
        stem = folded or stem
    return stem


def terms(text: str) -> list[str]:
    """The indexed words of ``text``, in order, repeats kept."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        term = _term(word)
        if term is not None:
            out.append(term)
    return out


class TextIndex:
    """Posting lists (positions and counts) per word, and each position's length in words."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._positions: list[array[int]] = []
        self._counts: list[array[int]] = []
        self._lengths = array("I")

    @property
    def size(self) -> int:
        """How many positions are indexed (the next one to add is this)."""
        return len(self._lengths)

    @classmethod
    def of(cls, texts: Iterable[str]) -> TextIndex:
        index = cls()
        index.extend(texts)
        return index

    def extend(self, texts: Iterable[str]) -> None:
        """Index the texts of the next positions, in order."""
        ids, positions, counts = self._ids, self._positions, self._counts
        position = len(self._lengths)
        for text in texts:
            words = terms(text or "")
            self._lengths.append(len(words))
            seen: dict[str, int] = {}
            for word in words:
                seen[word] = seen.get(word, 0) + 1
            for word, count in seen.items():
                term = ids.get(word)
                if term is None:
                    term = ids[word] = len(positions)
                    positions.append(array("i"))
                    counts.append(array("H"))
                positions[term].append(position)
                counts[term].append(min(count, 0xFFFF))
            position += 1

    def renumbered(self, keep: np.ndarray) -> TextIndex:
        """The index after a compaction that kept the (sorted) old positions ``keep``, which
        become 0, 1, 2…; words no kept row has are dropped."""
        new_of = np.full(len(self._lengths), -1, dtype=np.int64)
        new_of[keep] = np.arange(len(keep))
        out = TextIndex()
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)[keep]
        out._lengths = array("I", lengths.tobytes())
        for word, term in self._ids.items():
            old = np.frombuffer(self._positions[term], dtype=np.int32)
            new = new_of[old]
            kept = new >= 0
            if not kept.any():
                continue
            counts = np.frombuffer(self._counts[term], dtype=np.uint16)[kept]
            out._ids[word] = len(out._positions)
            out._positions.append(array("i", new[kept].astype(np.int32).tobytes()))
            out._counts.append(array("H", counts.tobytes()))
        return out

    def search(
        self, query: str, k: int, alive: np.ndarray, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the ``k`` best BM25 matches of ``query`` among the ``allowed`` live
        rows (best first, ties by position), and their scores. Any word may match; the
        corpus statistics are those of every live row, whatever the filter."""
        n = len(self._lengths)
        live = alive[:n]
        wanted: dict[int, int] = {}
        for word in terms(query):
            term = self._ids.get(word)
            if term is not None:  # a word said twice in the query counts twice, as in LanceDB
                wanted[term] = wanted.get(term, 0) + 1
        if k <= 0 or not wanted:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        lengths = np.frombuffer(self._lengths, dtype=np.uint32)
        documents = int(np.count_nonzero(live))
        if documents == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        average = float(lengths[live].mean()) or 1.0
        scores = np.zeros(n, dtype=np.float32)
        for term, repeats in sorted(wanted.items()):
            # Copies, not views: a view would pin the array against the next append.
            where = np.array(self._positions[term], dtype=np.int64)
            counts = np.array(self._counts[term], dtype=np.float32)
            on = live[where]
            frequency = int(np.count_nonzero(on))
            if frequency == 0:
                continue
            where, counts = where[on], counts[on]
            idf = repeats * np.log1p((documents - frequency + 0.5) / (frequency + 0.5))
            norm = _K1 * (1.0 - _B + _B * lengths[where] / average)
            scores[where] += (idf * counts * (_K1 + 1.0) / (counts + norm)).astype(np.float32)
        hit = scores > 0
        if allowed is not None:
            hit &= allowed[:n]
        found = np.flatnonzero(hit)
        if len(found) > k:
            found = found[np.argpartition(-scores[found], k - 1)[:k]]
        order = np.lexsort((found, -scores[found]))
        found = found[order]
        return found, scores[found]
