"""How well a memory matches what a person typed to forget it, on a scale that means the same
for every query.

Recall's score ranks memories against each other: its full-text part is relative to the best
hit of the query, so a query that shares a single word ("week", "plan") with a memory gives
that memory the full text share, and the weights (importance, recency, the graph) lift every
candidate. That is right for filling a prompt and wrong for deciding what to delete. A match
here is 0.6 × the cosine of the query and the statement (MiniLM) + 0.4 × the share of the
query's content words that the statement holds: an absolute measure, so one floor serves
every query and every folder.

The floor (:data:`MIN_SCORE`) was measured with the real MiniLM embedder on folders ingested
offline (the two LoCoMo dev conversations, 788 turns; the shared sample transcript):

* unrelated — 25 off-topic phrases ("Kubernetes ingress certificate", "wifi password", …)
  on the sample folder, 10 candidates each: at most 0.20; the sample's statements asked of
  the LoCoMo folders, LoCoMo phrases asked of the sample folder and of the other
  conversation: at most 0.35;
* near but not about it — every LoCoMo question asked of the other conversation's folder
  (2,310 candidates; the same kind of life, other people): p99 0.38, at most 0.47;
* related — short phrases naming a memory ("uv instead of pip", "Jon's dance studio",
  "Priya"): 26 of 27 at or above 0.5 (lowest 0.43, "team size"), median 0.76; the best
  memory holding a LoCoMo question's evidence, asked of its own folder (172 questions):
  median 0.62, 87% at or above 0.5.

So 0.5 lets no unrelated memory qualify; a vaguer query lists nothing and says how close the
best memory came, and ``--min-score`` can be lowered for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..text.words import content_words, words

MIN_SCORE = 0.5
COSINE_SHARE = 0.6


@dataclass(frozen=True)
class Match:
    """A memory a query found."""

    id: str
    path: str
    category: str
    content: str
    score: float  # :func:`match_score`


@dataclass(frozen=True)
class Search:
    """What a query found: the matches at or above the floor, best first, and how close the
    best memory came (0 when the search found none), to say why nothing matched."""

    matches: tuple[Match, ...]
    closest: float


def match_score(query: str, statement: str, cosine: float) -> float:
    """How well ``statement`` matches ``query``, 0 to 1; ``cosine``: of their embeddings."""
    # One-letter words ("s" of "Dana's") carry nothing.
    wanted = [w for w in dict.fromkeys(content_words(query)) if len(w) > 1]
    held = set(words(statement))
    share = sum(w in held for w in wanted) / len(wanted) if wanted else 0.0
    return COSINE_SHARE * max(0.0, cosine) + (1 - COSINE_SHARE) * share
