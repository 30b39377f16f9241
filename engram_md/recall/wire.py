"""A recall's answer as it leaves the recaller: the daemon's HTTP answer, the client's reading
of it and the CLI's ``--json`` are this one shape (DESIGN.md)::

    {"query", "memories": [{"id", "path", "category", "memoryKind", "content", "score",
                            "sourceTurnIds", "created"}], "tokens"}

An explained recall adds ``"budget"`` and ``"candidates"``: every memory looked at, with its
score parts, why it was kept or left out, and the graph path that reached it.

A memory's score is rounded to 4 places in JSON, so one read back differs from the one written
in those digits only. Reading is strict: a missing field or one of
the wrong type raises ValueError, which the client turns into its own error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..organize.activation import Step

__all__ = ["ExplainedCandidate", "Memory", "RecallAnswer", "render_block"]

_CREATED = "%Y-%m-%dT%H:%M:%SZ"
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


def _list(data: Any, key: str) -> list[Any]:
    return _get(data, key, list)


def _strings(data: Any, key: str) -> tuple[str, ...]:
    values = _list(data, key)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key!r} is not a list of strings: {values!r}")
    return tuple(values)


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
    created: datetime

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
        }

    @classmethod
    def from_json(cls, data: Any) -> Memory:
        created = datetime.strptime(_get(data, "created", str), _CREATED).replace(tzinfo=UTC)
        return cls(
            id=_get(data, "id", str),
            path=_get(data, "path", str),
            category=_get(data, "category", str),
            memory_kind=_get(data, "memoryKind", str),
            content=_get(data, "content", str),
            score=_get(data, "score", float),
            source_turn_ids=_strings(data, "sourceTurnIds"),
            created=created,
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
    """Seed 004's prompt block: one ``[TYPE] content`` line per memory."""
    lines = ["<memory>"]
    for m in memories:
        label = m.category.upper()
        if m.memory_kind == "box":
            lines.append(f"[TOPIC WINDOW] {m.created:%Y-%m-%d}: {m.content}")
        elif m.memory_kind == "episode":
            lines.append(f"[{label}] {m.created:%Y-%m-%d}: {m.content}")
        else:
            lines.append(f"[{label}] {m.content}")
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
