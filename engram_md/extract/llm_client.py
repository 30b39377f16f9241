"""One client for every LLM call: a JSON answer from any OpenAI-compatible endpoint.

The extractor and the consolidation judge both ask a question and read a JSON answer; they
differ only in the prompt, the answer's schema and how they read it. This module holds what
they share:

* **The API.** OpenAI itself gets structured output (the Responses API with a strict JSON
  schema); other servers get the widely supported JSON mode of chat completions.
* **Retries.** The client's built-in retries are off (``max_retries=0``): we retry ourselves so
  every attempt, retry and token is counted in :class:`Usage`, and so delays are deterministic
  and testable (``sleep`` is injected). Timeouts, connection errors, 408/409/429 and 5xx are
  retried with exponential backoff (a Retry-After header wins), capped at
  :data:`MAX_DELAY_SECONDS`; other statuses are not, since asking again will not help.
* **Errors.** openai's exceptions are mapped here: what did not get an answer becomes
  :class:`~engram_md.core.errors.LLMUnavailable`, an answer that is not usable JSON
  :class:`~engram_md.core.errors.LLMOutputError`.
* **Lenient reading.** Local models wrap JSON in code fences, prose or ``<think>`` blocks;
  :func:`parse_answer` finds the value. The caller's ``read`` then validates it strictly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, TypeVar

import regex
from pydantic import BaseModel, ValidationError

from ..core.config import LLMConfig
from ..core.crashpoints import crashpoint
from ..core.errors import LLMOutputError, LLMUnavailable

if TYPE_CHECKING:
    # Imported when a client is made, not with this module: every offline command (the
    # daemon, ingest, import, recall) reaches this module, and openai costs ~30 MB of RSS.
    import openai
    from openai.types.responses import ResponseTextConfigParam

__all__ = ["MAX_DELAY_SECONDS", "AnswerSchema", "LLMClient", "Usage", "parse_answer", "snippet"]

MAX_DELAY_SECONDS = 30.0

# Statuses worth another try: the server is busy or broken for now, not rejecting the request.
_RETRY_STATUSES = frozenset({408, 409, 429})

T = TypeVar("T")


@dataclass
class Usage:
    """Running counters of LLM calls; the caller persists them (state/llm-usage.json).

    ``calls`` counts every request sent, retries included; ``failed_calls`` the requests that
    raised or whose answer was unusable; ``dropped_facts`` the facts the extractor threw away
    during validation (unknown category, empty content, bad shape, not from a person, over the
    per-call cap), each of which it also reports in ``last_discarded``.
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


@dataclass(frozen=True)
class AnswerSchema:
    """The shape an answer must have, as the Responses API's strict JSON schema, by name."""

    name: str
    schema: dict[str, Any]


# ---- reading an answer ---------------------------------------------------------------------

_THINK = regex.compile(r"<think>.*?</think>", regex.DOTALL | regex.IGNORECASE)
_FENCE = regex.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", regex.DOTALL)
_SPACE = regex.compile(r"\s+")


def snippet(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut at ``limit`` characters: a model's output in an error message."""
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
    raise LLMOutputError(f"the model's answer is not JSON: {snippet(stripped)!r}")


Model = TypeVar("Model", bound=BaseModel)


def answer_of_shape(model: type[Model], value: Any, list_key: str, what: str) -> Model:
    """The answer as ``model``, an object with a ``list_key`` list. Models often send the bare
    list instead; it is taken as that list. A wrong overall shape raises LLMOutputError, in
    which ``what`` names the answer ("the judge's answer")."""
    if isinstance(value, list):
        value = {list_key: value}
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise LLMOutputError(
            f"{what} does not have the expected shape: {snippet(str(value))!r}"
        ) from exc


# ---- the transport -------------------------------------------------------------------------


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


class LLMClient:
    """JSON calls to the endpoint of an :class:`~engram_md.core.config.LLMConfig`."""

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
        import openai  # deferred: see the imports at the top

        self._client = openai.OpenAI(
            api_key=cfg.api_key or "not-needed",
            base_url=cfg.base_url,
            timeout=cfg.timeout_seconds,
            max_retries=0,
        )
        use_responses = cfg.api == "responses" or (cfg.api == "auto" and not cfg.base_url)
        self.api: str = "responses" if use_responses else "chat"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ask(self, system: str, user: str, schema: AnswerSchema, read: Callable[[Any], T]) -> T:
        """What ``read`` makes of the JSON value of the model's answer.

        An answer that holds no JSON, or one that ``read`` rejects with LLMOutputError, counts
        as a failed call and is not asked again: the model answered, the same question would
        most likely get the same answer.
        """
        answer = self._send(system, user, schema)
        try:
            return read(parse_answer(answer.text))
        except LLMOutputError:
            self.usage.failed_calls += 1
            raise

    def _send(self, system: str, user: str, schema: AnswerSchema) -> _Answer:
        """One answer, retried as the module docstring says; every attempt is counted."""
        import openai  # already loaded by __init__

        attempts = self.cfg.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                self.usage.retries += 1
            self.usage.calls += 1
            try:
                crashpoint("llm.before")
                answer = self._call(system, user, schema)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                self.usage.failed_calls += 1
                kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "unreachable"
                error = LLMUnavailable(f"LLM endpoint {kind} after {attempt + 1} attempt(s): {exc}")
                cause: Exception = exc
                delay = None
            except openai.APIStatusError as exc:
                self.usage.failed_calls += 1
                status = exc.status_code
                error = LLMUnavailable(
                    f"LLM endpoint answered HTTP {status} after {attempt + 1} attempt(s): "
                    f"{snippet(str(exc.message))}"
                )
                cause = exc
                if status < 500 and status not in _RETRY_STATUSES:
                    # 400/401/404...: asking again will not help; the caller keeps its work.
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

    def _call(self, system: str, user: str, schema: AnswerSchema) -> _Answer:
        import openai  # already loaded by __init__

        temperature = self.cfg.temperature if self.cfg.temperature is not None else openai.omit
        if self.api == "responses":
            text_format: ResponseTextConfigParam = {
                "format": {
                    "type": "json_schema",
                    "name": schema.name,
                    "schema": schema.schema,
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
        # Chat JSON mode takes no schema: the prompt describes the answer.
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
