"""Fact extraction through any OpenAI-compatible endpoint, with our own retries and accounting.

The client's built-in retries are off (``max_retries=0``): we retry ourselves so every attempt,
retry and token is counted in :class:`Usage`, and so delays are deterministic and testable
(``sleep`` is injected). What the model answers is parsed leniently -- local models wrap JSON
in code fences or prose -- and then validated strictly: an answer of the wrong shape raises
:class:`~engram_md.core.errors.LLMOutputError` and the caller keeps the turns for a later retry,
while single unusable facts, facts that cite no person's turn, and those beyond the per-call
cap are dropped and reported through ``last_discarded`` so the telemetry can say which turns
lost what, and why.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Annotated, Any

import openai
import regex
from openai.types.responses import ResponseTextConfigParam
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from ..core.config import LLMConfig
from ..core.crashpoints import crashpoint
from ..core.errors import LLMOutputError, LLMUnavailable
from ..core.models import CandidateFact, Category, Source, Turn
from ..core.paths import safe_slug
from .extractor import Discard
from .prompts import ENTITY_TYPES, PRIORITY, SCHEMA, SYSTEM_PROMPT, user_prompt

MAX_DELAY_SECONDS = 30.0
MAX_TAGS = 8
MAX_ENTITIES = 8
PREVIEW_CHARS = 80

# Discard reasons, as they appear in the telemetry.
INVALID_FACT = "invalid_fact"
OVER_PER_CALL_CAP = "over_per_call_cap"
NOT_FROM_A_PERSON = "not_from_a_person"

# Statuses worth another try: the server is busy or broken for now, not rejecting the request.
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass
class Usage:
    """Running counters for LLM extraction; the caller persists them (state/llm-usage.json).

    ``calls`` counts every request sent, retries included; ``failed_calls`` the requests that
    raised or whose answer was unusable; ``dropped_facts`` the facts thrown away during
    validation (unknown category, empty content, bad shape, not from a person, over the
    per-call cap), each of which the extractor also reports in ``last_discarded``.
    """

    calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dropped_facts: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Usage:
        """Tolerant of missing and unknown keys, so older or newer state files still load."""
        known = {f.name for f in fields(cls)}
        values = {k: int(v) for k, v in d.items() if k in known and isinstance(v, int | float)}
        return cls(**values)


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


_THINK = regex.compile(r"<think>.*?</think>", regex.DOTALL | regex.IGNORECASE)
_FENCE = regex.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", regex.DOTALL)
_SPACE = regex.compile(r"\s+")


def _snippet(text: str, limit: int = 160) -> str:
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[:limit] + "..."


def parse_answer(text: str) -> Any:
    """The JSON value in a model's answer: bare, in a code fence, or after leading prose.

    Raises LLMOutputError when there is none.
    """
    stripped = _THINK.sub("", text).strip()
    if not stripped:
        raise LLMOutputError("the model returned an empty answer")
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    candidates = [m.group(1).strip() for m in _FENCE.finditer(stripped)]
    candidates.append(stripped)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        # raw_decode tolerates trailing prose; start at the first object or array.
        for opener in ("{", "["):
            start = candidate.find(opener)
            if start < 0:
                continue
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            return value
    raise LLMOutputError(f"the model's answer is not JSON: {_snippet(stripped)!r}")


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
    if isinstance(value, list):
        value = {"facts": value}
    try:
        answer = _RawAnswer.model_validate(value)
    except ValidationError as exc:
        raise LLMOutputError(
            f"the model's answer does not have the expected shape: {_snippet(str(value))!r}"
        ) from exc

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
            f"{_snippet(json.dumps(answer.facts[:2], default=str))!r}"
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


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), if any."""
    value = exc.response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True, slots=True)
class _Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int


class LLMExtractor:
    """The :class:`~engram_md.extract.extractor.Extractor` backed by an OpenAI-compatible
    endpoint."""

    name = "llm"

    def __init__(
        self,
        cfg: LLMConfig,
        usage: Usage | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cfg = cfg
        self.usage = usage if usage is not None else Usage()
        self._sleep = sleep
        self.last_discarded: tuple[Discard, ...] = ()
        self._client = openai.OpenAI(
            api_key=cfg.api_key or "not-needed",
            base_url=cfg.base_url,
            timeout=cfg.timeout_seconds,
            max_retries=0,
        )
        # OpenAI itself gets structured output; other servers get the widely supported
        # JSON mode of chat completions.
        use_responses = cfg.api == "responses" or (cfg.api == "auto" and not cfg.base_url)
        self.api: str = "responses" if use_responses else "chat"

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
        prompt = user_prompt(turns, speakers, max_facts=self.cfg.max_facts_per_call)
        answer = self._call_with_retries(SYSTEM_PROMPT, prompt)
        try:
            checked = validate_answer(
                parse_answer(answer.text),
                turns,
                speakers,
                max_facts=self.cfg.max_facts_per_call,
            )
        except LLMOutputError:
            self.usage.failed_calls += 1
            raise
        self.usage.dropped_facts += checked.dropped
        self.last_discarded = checked.discarded
        return checked.facts

    # ---- transport

    def _call_with_retries(self, system: str, user: str) -> _Answer:
        attempts = self.cfg.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                self.usage.retries += 1
            self.usage.calls += 1
            try:
                crashpoint("llm.before")
                answer = self._call(system, user)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                self.usage.failed_calls += 1
                kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "unreachable"
                error: LLMUnavailable = LLMUnavailable(
                    f"LLM endpoint {kind} after {attempt + 1} attempt(s): {exc}"
                )
                cause: Exception = exc
                delay = None
            except openai.APIStatusError as exc:
                self.usage.failed_calls += 1
                status = exc.status_code
                error = LLMUnavailable(
                    f"LLM endpoint answered HTTP {status} after {attempt + 1} attempt(s): "
                    f"{_snippet(str(exc.message))}"
                )
                cause = exc
                if status < 500 and status not in _RETRY_STATUSES:
                    # 400/401/404...: asking again will not help; the turns wait for a fix.
                    raise error from exc
                delay = _retry_after(exc)
            except ValueError as exc:
                # The HTTP body itself was not JSON: the server answered, but unusably.
                self.usage.failed_calls += 1
                raise LLMOutputError(f"LLM endpoint sent a body that is not JSON: {exc}") from exc
            else:
                crashpoint("llm.after")
                self.usage.prompt_tokens += answer.prompt_tokens
                self.usage.completion_tokens += answer.completion_tokens
                return answer
            if attempt + 1 >= attempts:
                raise error from cause
            if delay is None:
                delay = self.cfg.backoff_seconds * 2**attempt
            self._sleep(min(MAX_DELAY_SECONDS, delay))
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _call(self, system: str, user: str) -> _Answer:
        temperature = self.cfg.temperature if self.cfg.temperature is not None else openai.omit
        if self.api == "responses":
            text_format: ResponseTextConfigParam = {
                "format": {
                    "type": "json_schema",
                    "name": "extraction",
                    "schema": SCHEMA,
                    "strict": True,
                }
            }
            response = self._client.responses.create(
                model=self.cfg.model,
                input=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                text=text_format,
                temperature=temperature,
            )
            usage = response.usage
            return _Answer(
                text=response.output_text or "",
                prompt_tokens=usage.input_tokens if usage else 0,
                completion_tokens=usage.output_tokens if usage else 0,
            )
        completion = self._client.chat.completions.create(
            model=self.cfg.model,
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            response_format={"type": "json_object"},
            temperature=temperature,
        )
        chat_usage = completion.usage
        text = completion.choices[0].message.content if completion.choices else None
        return _Answer(
            text=text or "",
            prompt_tokens=chat_usage.prompt_tokens if chat_usage else 0,
            completion_tokens=chat_usage.completion_tokens if chat_usage else 0,
        )
