"""The LLM judge of consolidation: one call per cluster of related facts.

A cluster is one fact that is new since the last run plus the related stored facts found for
it (same subject and close embeddings, see :mod:`engram_md.consolidate.contradictions`, and the
index's nearest neighbours when an index is at hand). The model says, for each stored fact, how
the new fact relates to it:

    ADD         unrelated or complementary: keep both
    SKIP        nothing to do
    MERGE       the same fact said twice: merge them
    UPDATE      the new fact is a later version of the stored one: supersede the stored one
    INVALIDATE  the new fact shows the stored one is wrong: invalidate the stored one

Transport, retries, token accounting and lenient JSON extraction are the LLM client's
(:mod:`engram_md.extract.llm_client`), as for extraction; only the prompt and the answer schema
differ. The answer is validated strictly (known references, known actions; anything else about
an item drops that item) and the judge fails open: an unreachable endpoint or an answer that is
not the expected shape changes nothing for that cluster, and its new fact is judged again on
the next run.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.errors import ExtractionError, LLMOutputError
from ..core.models import Fact
from ..extract.llm_client import AnswerSchema, LLMClient, Usage, answer_of_shape
from .contradictions import CANDIDATE_COSINE, Profile, Relation, candidate_pairs, order

log = logging.getLogger(__name__)

ACTIONS = ("ADD", "SKIP", "MERGE", "UPDATE", "INVALIDATE")
MAX_MEMBERS = 8  # stored facts shown with one new fact; the nearest ones first

SYSTEM_PROMPT = """\
You keep a long-term memory of facts about a user and the people and work around them.
A NEW fact was just remembered. For each EXISTING fact, decide how the NEW fact relates to it:
- ADD: it is about something else, or adds to it without conflict. Keep both.
- SKIP: nothing to do.
- MERGE: both say the same thing (wording may differ). They will be merged.
- UPDATE: the NEW fact is a later version of the EXISTING one (a value changed, a plan moved).
- INVALIDATE: the NEW fact shows the EXISTING one was wrong.
Only use MERGE, UPDATE or INVALIDATE when you are sure; ADD otherwise. Events that happened at
different times are different facts (ADD), even when they look alike.
Answer with JSON only: {"decisions": [{"existing": "<ref like E1>", "action": "<ADD|SKIP|MERGE|\
UPDATE|INVALIDATE>", "reason": "<a few words>"}]}, one decision per EXISTING fact."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "existing": {"type": "string"},
                    "action": {"type": "string", "enum": list(ACTIONS)},
                    "reason": {"type": "string"},
                },
                "required": ["existing", "action", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["decisions"],
    "additionalProperties": False,
}
_ANSWER = AnswerSchema("judge", SCHEMA)


def _line(ref: str, fact: Fact) -> str:
    day = fact.created.strftime("%Y-%m-%d")
    text = " ".join(fact.content.split())
    return f"[{ref}] ({fact.category.value}, {fact.memory_kind.value}, {day}) {text}"


def build_prompt(new: Fact, existing: Sequence[Fact]) -> str:
    lines = ["NEW:", _line("N", new), "", "EXISTING:"]
    lines += [_line(f"E{i}", fact) for i, fact in enumerate(existing, 1)]
    return "\n".join(lines)


class _Decision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    existing: str
    action: str
    reason: str = ""


class _Decisions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    decisions: list[Any]


def parse_decisions(value: Any, new: Fact, existing: Sequence[Fact]) -> list[Relation]:
    """Relations from a parsed answer. A wrong overall shape raises LLMOutputError; a single
    unusable decision (unknown reference or action) is dropped, keeping its fact as it is."""
    answer = answer_of_shape(_Decisions, value, "decisions", "the judge's answer")
    refs = {f"E{i}": fact for i, fact in enumerate(existing, 1)}
    refs.update({fact.id: fact for fact in existing})
    found: dict[str, Relation] = {}
    shaped = 0
    for item in answer.decisions:
        try:
            decision = _Decision.model_validate(item)
        except ValidationError:
            continue
        shaped += 1
        target = refs.get(decision.existing.strip().strip("[]"))
        action = decision.action.strip().upper()
        if target is None or action not in ACTIONS or target.id in found:
            continue
        reason = " ".join(decision.reason.split())[:200] or action.lower()
        if action == "MERGE":
            older, newer = order(target, new)
            found[target.id] = Relation("duplicate", older.id, newer.id, f"judge: {reason}")
        elif action == "UPDATE":
            found[target.id] = Relation("supersede", target.id, new.id, f"judge: {reason}")
        elif action == "INVALIDATE":
            found[target.id] = Relation("invalidate", target.id, new.id, f"judge: {reason}")
    if answer.decisions and shaped == 0:
        raise LLMOutputError("none of the judge's decisions has the expected fields")
    return list(found.values())


class Judge(Protocol):
    """Decides a cluster; None means it could not (the facts are kept and judged again)."""

    def decide(self, new: Fact, existing: Sequence[Fact]) -> list[Relation] | None: ...


class LLMJudge:
    """:class:`Judge` over an OpenAI-compatible endpoint."""

    def __init__(self, client: LLMClient) -> None:
        self._client = client  # closed with the judge
        self.clusters = 0
        self.failures = 0

    @property
    def usage(self) -> Usage:
        return self._client.usage

    def close(self) -> None:
        self._client.close()

    def decide(self, new: Fact, existing: Sequence[Fact]) -> list[Relation] | None:
        if not existing:
            return []
        self.clusters += 1
        try:
            return self._client.ask(
                SYSTEM_PROMPT,
                build_prompt(new, existing),
                _ANSWER,
                lambda value: parse_decisions(value, new, existing),
            )
        except LLMOutputError as exc:
            self.failures += 1
            log.warning("consolidation judge: unusable answer for %s (%s); kept as is", new.id, exc)
        except ExtractionError as exc:
            self.failures += 1
            log.warning("consolidation judge unavailable for %s (%s); kept as is", new.id, exc)
        return None


Neighbours = Callable[[Fact], Sequence[tuple[str, float]]]


def judged_relations(
    facts: Sequence[Fact],
    new: Sequence[bool],
    vectors: np.ndarray | None,
    judge: Judge,
    *,
    neighbours: Neighbours | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Relation], list[str]]:
    """Ask ``judge`` about every new fact that has related facts; returns the relations and
    the ids of new facts whose cluster could not be judged (to be judged again next run).

    A cluster holds the new fact and up to :data:`MAX_MEMBERS` related facts, nearest first:
    same-subject facts with close embeddings, plus ``neighbours`` (the index's nearest active
    facts, as ``(id, cosine)``) when given. A pair is judged once: a new fact that already
    appeared in an earlier cluster is not shown again with that cluster's new fact. Facts
    retired by an earlier cluster of this run are left out of later ones.
    """
    profiles = [Profile(f.content) for f in facts]
    related: dict[int, dict[int, float]] = defaultdict(dict)
    for i, j, score in candidate_pairs(facts, new, vectors, profiles):
        related[i][j] = score
        related[j][i] = score
    position = {fact.id: i for i, fact in enumerate(facts)}
    if neighbours is not None:
        for i, fact in enumerate(facts):
            if not new[i]:
                continue
            for other_id, score in neighbours(fact):
                near = position.get(other_id)
                if near is not None and near != i and score >= CANDIDATE_COSINE:
                    related[i].setdefault(near, score)
    relations: list[Relation] = []
    unjudged: list[str] = []
    judged: set[frozenset[int]] = set()
    retired: set[int] = set()
    order_new = sorted(
        (i for i in range(len(facts)) if new[i]), key=lambda i: (facts[i].created, facts[i].id)
    )
    for done, i in enumerate(order_new, 1):
        if progress is not None:
            progress(done, len(order_new))
        if i in retired:
            continue
        members = [
            j
            for j, _ in sorted(related[i].items(), key=lambda p: (-p[1], facts[p[0]].id))
            if j not in retired and frozenset((i, j)) not in judged
        ][:MAX_MEMBERS]
        if not members:
            continue
        judged.update(frozenset((i, j)) for j in members)
        decided = judge.decide(facts[i], [facts[j] for j in members])
        if decided is None:
            unjudged.append(facts[i].id)
            continue
        relations.extend(decided)
        retired.update(position[r.older] for r in decided if r.kind != "duplicate")
    return relations, unjudged
