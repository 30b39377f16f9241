"""What one recall found: every number behind each memory's score, each candidate and why it
was kept or left out, and the result with its wire form (:mod:`.wire`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..index.table import IndexRow
from ..organize.activation import Step
from .wire import ExplainedCandidate, Memory, RecallAnswer, render_block


@dataclass(frozen=True)
class ScoreParts:
    """Every number behind one memory's score, in the order they are computed."""

    cosine: float
    fts_rel: float  # BM25 score / best BM25 score in the pool
    name_match: float
    date_match: float
    neighbour: float  # relevance of the strong hit this memory was told next to
    relevance: float
    lifecycle: float
    importance: float
    rep_bonus: float
    access_bonus: float
    kind_bias: float
    tier_bias: float
    recency: float
    weight: float
    raw: float
    own: float  # seed 001's sigmoid of raw: the score before the graph
    graph: float  # activation reached through the graph (0 without a graph)
    score: float


@dataclass(frozen=True)
class Candidate:
    row: IndexRow
    parts: ScoreParts
    kept: bool
    reason: str
    channels: tuple[str, ...]
    path: tuple[Step, ...] = ()  # the graph path that reached it, seed first


@dataclass(frozen=True)
class RecallResult:
    query: str
    memories: tuple[Memory, ...]
    tokens: int
    budget: int
    candidates: tuple[Candidate, ...] = ()  # with explain only

    def render(self) -> str:
        """Seed 004's prompt block (see :func:`engram_md.recall.wire.render_block`)."""
        return render_block(self.memories)

    def answer(self, *, explain: bool = False) -> RecallAnswer:
        """The wire form of this result; with ``explain``, its budget and every candidate."""
        if not explain:
            return RecallAnswer(self.query, self.memories, self.tokens)
        return RecallAnswer(
            self.query,
            self.memories,
            self.tokens,
            budget=self.budget,
            candidates=tuple(
                ExplainedCandidate(
                    id=c.row.id,
                    path=c.row.path,
                    status=c.row.status,
                    content=c.row.content,
                    kept=c.kept,
                    reason=c.reason,
                    channels=c.channels,
                    parts={name: round(getattr(c.parts, name), 4) for name in _PART_NAMES},
                    graph_path=tuple(
                        step._replace(confidence=round(step.confidence, 3)) for step in c.path
                    ),
                )
                for c in self.candidates
            ),
        )


# Read once: explain walks these per candidate instead of deep-copying via asdict.
_PART_NAMES = tuple(f.name for f in fields(ScoreParts))
