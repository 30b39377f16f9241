"""A recall as it crosses a boundary: the options it was asked with, and its answer.

:class:`RecallOptions` is what every recall takes beside its query, in-process and through the
daemon alike; the daemon's request body is the query and those options::

    {"query", "budget", "top_k", "include_inactive", "explain", "record_access"}

A recall's answer as it leaves the recaller: the daemon's HTTP answer, the client's reading
of it and the CLI's ``--json`` are this one shape (DESIGN.md)::

    {"query", "memories": [{"id", "path", "category", "memoryKind", "content", "score",
                            "sourceTurnIds", "created", "eventDate"}], "tokens"}

``created`` is when it was said; ``eventDate`` (``YYYY-MM-DD`` or null) the day the event it
tells of happened, when that is known. An answer without ``eventDate`` (an older daemon's)
reads as one without an event date.

An explained recall adds ``"budget"`` and ``"candidates"``: every memory looked at, with its
score parts, why it was kept or left out, and the graph path that reached it.

A memory's score is rounded to 4 places in JSON and its event date to the day (read back as
midnight UTC), so one read back differs from the one written in those only. Reading is
strict: a missing field or one of the wrong type raises ValueError, which the client turns
into its own error and the daemon into a 400; so does an option a request carries that this
version does not know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..organize.activation import Step

__all__ = [
    "DEFAULT_OPTIONS",
    "ExplainedCandidate",
    "Memory",
    "RecallAnswer",
    "RecallOptions",
    "read_request",
    "render_block",
    "request_json",
]

_CREATED = "%Y-%m-%dT%H:%M:%SZ"
_DAY = "%Y-%m-%d"
T = TypeVar("T")


def _get(data: Any, key: str, kind: type[T]) -> T:
    """``data[key]`` if it is a ``kind`` (a bool is no int, an int is a float)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"not an object: {data!r}")
    if key not in data:
        raise ValueError(f"{key!r} is missing")
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{key!r} is not a {kind.__name__}: {value!r}")
    return value


def _nullable(data: Any, key: str, kind: type[T]) -> T | None:
    """``data[key]`` if it is a ``kind``; None when it is null or absent."""
    return None if data.get(key) is None else _get(data, key, kind)


def _flag(data: Any, key: str, default: bool) -> bool:
    return _get(data, key, bool) if key in data else default


def _day(text: str) -> datetime:
    """Midnight UTC of the day ``YYYY-MM-DD``."""
    return datetime.strptime(text, _DAY).replace(tzinfo=UTC)


def _list(data: Any, key: str) -> list[Any]:
    return _get(data, key, list)


def _strings(data: Any, key: str) -> tuple[str, ...]:
    values = _list(data, key)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key!r} is not a list of strings: {values!r}")
    return tuple(values)


@dataclass(frozen=True)
class RecallOptions:
    """How to recall, beside the query; ``None`` means the recall config's value."""

    budget_tokens: int | None = None
    top_k: int | None = None
    include_inactive: bool | None = None
    explain: bool = False  # also every candidate looked at, its score parts and fate
    record_access: bool = True  # count the memories shown as accessed (state/access.jsonl)


DEFAULT_OPTIONS = RecallOptions()


def request_json(query: str, options: RecallOptions) -> dict[str, Any]:
    """The daemon's ``POST /recall`` body asking ``query`` with ``options``."""
    return {
        "query": query,
        "budget": options.budget_tokens,
        "top_k": options.top_k,
        "include_inactive": options.include_inactive,
        "explain": options.explain,
        "record_access": options.record_access,
    }


def read_request(data: Any) -> tuple[str, RecallOptions]:
    """The query and options of a ``POST /recall`` body; absent options take their defaults."""
    query = _get(data, "query", str)
    # An option this version does not know is refused rather than dropped: a client of the
    # daemon then recalls in-process and honours it, instead of getting a different answer.
    unknown = sorted(set(data) - _REQUEST_KEYS)
    if unknown:
        raise ValueError(f"unknown option(s): {', '.join(map(repr, unknown))}")
    options = RecallOptions(
        budget_tokens=_nullable(data, "budget", int),
        top_k=_nullable(data, "top_k", int),
        include_inactive=_nullable(data, "include_inactive", bool),
        explain=_flag(data, "explain", DEFAULT_OPTIONS.explain),
        record_access=_flag(data, "record_access", DEFAULT_OPTIONS.record_access),
    )
    for key, value in (("budget", options.budget_tokens), ("top_k", options.top_k)):
        if value is not None and value < 1:
            raise ValueError(f"{key!r} must be at least 1, got {value}")
    return query, options


_REQUEST_KEYS = frozenset(request_json("", DEFAULT_OPTIONS))


@dataclass(frozen=True)
class Memory:
    """One recalled memory."""

    id: str
    path: str
    category: str
    memory_kind: str
    content: str
    score: float
    source_turn_ids: tuple[str, ...]
    created: datetime  # when it was said
    valid_at: datetime | None = None  # when the event it tells of happened, if known

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "category": self.category,
            "memoryKind": self.memory_kind,
            "content": self.content,
            "score": round(self.score, 4),
            "sourceTurnIds": list(self.source_turn_ids),
            "created": self.created.strftime(_CREATED),
            "eventDate": self.event_day,
        }

    @property
    def event_day(self) -> str | None:
        """The day the event happened, ``YYYY-MM-DD`` (None when unknown)."""
        return None if self.valid_at is None else self.valid_at.strftime(_DAY)

    @classmethod
    def from_json(cls, data: Any) -> Memory:
        created = datetime.strptime(_get(data, "created", str), _CREATED).replace(tzinfo=UTC)
        event = _nullable(data, "eventDate", str)
        return cls(
            id=_get(data, "id", str),
            path=_get(data, "path", str),
            category=_get(data, "category", str),
            memory_kind=_get(data, "memoryKind", str),
            content=_get(data, "content", str),
            score=_get(data, "score", float),
            source_turn_ids=_strings(data, "sourceTurnIds"),
            created=created,
            valid_at=None if event is None else _day(event),
        )


@dataclass(frozen=True)
class ExplainedCandidate:
    """A memory an explained recall looked at, and what it made of it.

    Its numbers come rounded as JSON carries them (score parts to 4 places, edge confidences
    to 3), so an explanation reads the same in-process and through the daemon.
    """

    id: str
    path: str
    status: str
    content: str
    kept: bool
    reason: str
    channels: tuple[str, ...]  # "vector", "text", "graph": how it became a candidate
    parts: Mapping[str, float]  # every number behind its score, by name
    graph_path: tuple[Step, ...]  # the graph path that reached it, seed first

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "status": self.status,
            "content": self.content,
            "kept": self.kept,
            "reason": self.reason,
            "channels": list(self.channels),
            "parts": dict(self.parts),
            "graphPath": [
                {
                    "kind": step.kind,
                    "source": step.source,
                    "target": step.target,
                    "confidence": step.confidence,
                }
                for step in self.graph_path
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> ExplainedCandidate:
        parts = _get(data, "parts", dict)
        return cls(
            id=_get(data, "id", str),
            path=_get(data, "path", str),
            status=_get(data, "status", str),
            content=_get(data, "content", str),
            kept=_get(data, "kept", bool),
            reason=_get(data, "reason", str),
            channels=_strings(data, "channels"),
            parts={name: _get(parts, name, float) for name in parts},
            graph_path=tuple(
                Step(
                    _get(step, "kind", str),
                    _get(step, "source", str),
                    _get(step, "target", str),
                    _get(step, "confidence", float),
                )
                for step in _list(data, "graphPath")
            ),
        )


def render_block(memories: Sequence[Memory]) -> str:
    """Seed 004's prompt block: one ``[TYPE day] content`` line per memory.

    The day is when it was said, so an agent can tell old from new; the event's own day
    follows when it is another (``[MOMENT 2023-05-08, event 2023-05-07] …``). Both are
    UTC days, and nothing else is added: every character of the block is paid for.
    """
    lines = ["<memory>"]
    for m in memories:
        label = "TOPIC WINDOW" if m.memory_kind == "box" else m.category.upper()
        said = m.created.strftime(_DAY)
        event = m.event_day
        when = said if event in (None, said) else f"{said}, event {event}"
        lines.append(f"[{label} {when}] {m.content}")
    lines.append("</memory>")
    return "\n".join(lines)


@dataclass(frozen=True)
class RecallAnswer:
    """What one recall answers; ``budget`` and ``candidates`` only when it was explained."""

    query: str
    memories: tuple[Memory, ...]
    tokens: int
    budget: int | None = None
    candidates: tuple[ExplainedCandidate, ...] | None = None

    def render(self) -> str:
        return render_block(self.memories)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "memories": [m.to_json() for m in self.memories],
            "tokens": self.tokens,
        }
        if self.budget is not None:
            out["budget"] = self.budget
        if self.candidates is not None:
            out["candidates"] = [c.to_json() for c in self.candidates]
        return out

    @classmethod
    def from_json(cls, data: Any) -> RecallAnswer:
        """The answer in ``data``; keys it does not know (the daemon's ``block``) are ignored."""
        return cls(
            query=_get(data, "query", str),
            memories=tuple(Memory.from_json(m) for m in _list(data, "memories")),
            tokens=_get(data, "tokens", int),
            budget=_get(data, "budget", int) if "budget" in data else None,
            candidates=(
                tuple(ExplainedCandidate.from_json(c) for c in _list(data, "candidates"))
                if "candidates" in data
                else None
            ),
        )
