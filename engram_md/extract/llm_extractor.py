"""Fact extraction through any OpenAI-compatible endpoint.

The call itself -- API choice, retries, accounting, lenient JSON reading -- is
:class:`~engram_md.extract.llm_client.LLMClient`'s. What the model answers is validated here,
strictly: an answer of the wrong shape raises :class:`~engram_md.core.errors.LLMOutputError`
and the caller keeps the turns for a later retry, while single unusable facts, facts that cite
no person's turn, and those beyond the per-call cap are dropped and reported through
``last_discarded`` so the telemetry can say which turns lost what, and why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import regex
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from ..core.errors import LLMOutputError
from ..core.models import CandidateFact, Category, Source, Turn
from ..core.paths import safe_slug
from .extractor import Discard
from .llm_client import AnswerSchema, LLMClient, Usage, answer_of_shape, snippet
from .prompts import ENTITY_TYPES, PRIORITY, SCHEMA, SYSTEM_PROMPT, user_prompt

MAX_TAGS = 8
MAX_ENTITIES = 8
PREVIEW_CHARS = 80

# Discard reasons, as they appear in the telemetry.
INVALID_FACT = "invalid_fact"
OVER_PER_CALL_CAP = "over_per_call_cap"
NOT_FROM_A_PERSON = "not_from_a_person"

# ---- answer validation ---------------------------------------------------------------------


def _string_list(value: Any) -> Any:
    """Local models send a bare string, a number or null where a list of strings belongs."""
    if value is None:
        return []
    if isinstance(value, str | int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list):
        return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    return value


_StrList = Annotated[list[str], BeforeValidator(_string_list)]


class _RawFact(BaseModel):
    model_config = ConfigDict(extra="ignore")

    category: str
    content: str
    confidence: float
    tags: _StrList = []
    entities: _StrList = []
    source_turn_ids: _StrList = []


class _RawAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[Any]


_SPACE = regex.compile(r"\s+")
_ANSWER = AnswerSchema("extraction", SCHEMA)


def _category(raw: str) -> Category | None:
    name = raw.strip().casefold()
    for guess in (name, name.removesuffix("s")):
        try:
            return Category(guess)
        except ValueError:
            continue
    return None


_ENTITY_ALIASES = {
    "people": "person",
    "user": "person",
    "company": "org",
    "organization": "org",
    "organisation": "org",
    "team": "org",
    "library": "tool",
    "language": "tool",
    "framework": "tool",
    "software": "tool",
    "service": "tool",
    "product": "tool",
    "city": "place",
    "country": "place",
    "location": "place",
}


def _slugs(values: Sequence[str], limit: int) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        slug = safe_slug(value, fallback="")
        if slug and slug not in out:
            out.append(slug)
    return tuple(out[:limit])


def _entity_slugs(values: Sequence[str]) -> tuple[str, ...]:
    """``<type>-<name>`` slugs; a missing or unknown type is filed under ``other``."""
    out: list[str] = []
    for slug in _slugs(values, limit=len(values)):
        kind, _, name = slug.partition("-")
        kind = _ENTITY_ALIASES.get(kind, kind)
        if kind not in ENTITY_TYPES or not name:
            kind, name = "other", slug
        entity = safe_slug(f"{kind}-{name}")
        if entity not in out:
            out.append(entity)
    return tuple(out[:MAX_ENTITIES])


def _source_ids(
    values: Sequence[str], known: Mapping[str, Turn], fallback: tuple[str, ...]
) -> tuple[str, ...]:
    """The ids among ``values`` that name turns of the batch, else ``fallback``."""
    ids = tuple(dict.fromkeys(i.strip() for i in values))
    return tuple(i for i in ids if i in known) or fallback


def _salvage(item: Any) -> tuple[list[str], str]:
    """Source turn ids and content of an item without a fact's shape, as far as readable.

    So its discard names the turns the model meant rather than the whole batch.
    """
    if not isinstance(item, dict):
        return [], ""
    ids = _string_list(item.get("source_turn_ids"))
    content = item.get("content")
    return (
        [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else [],
        content if isinstance(content, str) else "",
    )


@dataclass(frozen=True, slots=True)
class _Checked:
    """The outcome of validating one answer: the facts kept and a discard per fact dropped."""

    facts: list[CandidateFact]
    discarded: tuple[Discard, ...]

    @property
    def dropped(self) -> int:
        return len(self.discarded)


def validate_answer(
    value: Any,
    turns: Sequence[Turn],
    speakers: Mapping[str, str],
    *,
    max_facts: int,
) -> _Checked:
    """Turn a parsed answer into candidate facts for ``turns``.

    The answer's shape must be right (an object with a ``facts`` list, or a bare list of
    facts); individual facts that are unusable (``invalid_fact``), that cite no person's turn
    (``not_from_a_person``), and the lowest-priority ones beyond ``max_facts``
    (``over_per_call_cap``) are dropped, each with a :class:`~engram_md.extract.extractor.Discard`
    naming its source turns. A non-empty list in which no item has the shape of a fact is a
    wrong schema, not an empty answer.

    Source turn ids the batch does not hold are ignored. A fact that cites none the batch
    holds is attributed to the batch's person turns: models often leave the ids out, and the
    prompt tells them to take facts only from what people said. A fact whose cited turns are
    all the assistant's or the system's is what no person said (the assistant's own claim,
    an instruction injected through a tool result it quoted), never a user's fact.
    """
    answer = answer_of_shape(_RawAnswer, value, "facts", "the model's answer")

    by_id = {t.id: t for t in turns}
    person_ids = tuple(t.id for t in turns if t.from_person)
    session = turns[0].session
    kept: list[tuple[int, CandidateFact]] = []
    discarded: list[Discard] = []
    shaped = 0
    for item in answer.facts:
        try:
            raw = _RawFact.model_validate(item)
        except ValidationError:
            ids, text = _salvage(item)
            preview = _SPACE.sub(" ", text).strip()[:PREVIEW_CHARS]
            discarded.append(Discard(_source_ids(ids, by_id, person_ids), INVALID_FACT, preview))
            continue
        shaped += 1
        category = _category(raw.category)
        content = _SPACE.sub(" ", raw.content).strip()
        source_ids = _source_ids(raw.source_turn_ids, by_id, person_ids)
        if category is None or not content or not math.isfinite(raw.confidence):
            discarded.append(Discard(source_ids, INVALID_FACT, content[:PREVIEW_CHARS]))
            continue
        sources = [by_id[i] for i in source_ids]
        people = [t for t in sources if t.from_person]
        if not people:
            discarded.append(Discard(source_ids, NOT_FROM_A_PERSON, content[:PREVIEW_CHARS]))
            continue
        latest = max(sources, key=lambda t: t.timestamp)
        speaker_turn = max(people, key=lambda t: t.timestamp)
        speaker = speakers.get(speaker_turn.id) or speaker_turn.speaker
        fact = CandidateFact(
            category=category,
            content=content,
            confidence=min(1.0, max(0.0, raw.confidence)),
            source_turn_ids=source_ids,
            session=session,
            created=latest.timestamp,
            tags=_slugs(raw.tags, MAX_TAGS),
            entities=_entity_slugs(raw.entities),
            source=Source.EXTRACTION,
            speaker=speaker,
        )
        kept.append((len(kept), fact))
    if answer.facts and shaped == 0:
        raise LLMOutputError(
            f"none of the model's {len(answer.facts)} facts has the expected fields: "
            f"{snippet(json.dumps(answer.facts[:2], default=str))!r}"
        )
    if len(kept) > max_facts:
        # Keep the most valuable ones (priority order, then confidence), in answer order.
        rank = {c: i for i, c in enumerate(PRIORITY)}
        best = sorted(kept, key=lambda p: (rank[p[1].category], -p[1].confidence, p[0]))
        discarded.extend(
            Discard(f.source_turn_ids, OVER_PER_CALL_CAP, f.content[:PREVIEW_CHARS])
            for _, f in sorted(best[max_facts:])
        )
        kept = sorted(best[:max_facts])
    return _Checked([f for _, f in kept], tuple(discarded))


# ---- the extractor -------------------------------------------------------------------------


class LLMExtractor:
    """The :class:`~engram_md.extract.extractor.Extractor` backed by an OpenAI-compatible
    endpoint."""

    name = "llm"

    def __init__(self, client: LLMClient) -> None:
        self._client = client  # closed with the extractor
        self.last_discarded: tuple[Discard, ...] = ()

    @property
    def usage(self) -> Usage:
        return self._client.usage

    @property
    def api(self) -> str:
        """The API the endpoint is asked through: "responses" or "chat"."""
        return self._client.api

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LLMExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        """Candidate facts for one session's turns.

        A batch without a person's turn asks nothing: assistant turns are only context.
        Afterwards ``last_discarded`` holds the facts this call dropped; it is emptied first, so a
        call that asks nothing or fails never reports the previous call's discards.
        """
        self.last_discarded = ()
        if not any(t.from_person for t in turns):
            return []
        max_facts = self._client.cfg.max_facts_per_call
        checked = self._client.ask(
            SYSTEM_PROMPT,
            user_prompt(turns, speakers, max_facts=max_facts),
            _ANSWER,
            lambda value: validate_answer(value, turns, speakers, max_facts=max_facts),
        )
        self.usage.dropped_facts += checked.dropped
        self.last_discarded = checked.discarded
        return checked.facts
