"""Traces: sealed boxes about the same thread of work, linked across sessions and days.

When a box is sealed, the weaver compares its topics with those of each box sealed within
``window_days`` of it (transcript time) and joins the trace of the box it overlaps most, if
that overlap is at least ``min_overlap`` and above 0 (no shared topic, no thread); ties go
to the most recently active trace, then to the smaller id. With no such box the box starts a
trace. Comparing with single boxes rather than a trace's pooled topics lets a thread move on
(the migration, then its cut-over) without a long trace's pool coming to match everything.
A trace's topics, for showing, are the :data:`MAX_TRACE_TOPICS` topics its boxes share most
often.

The defaults (``min_overlap`` 0.2 within 14 days) were chosen on LoCoMo conv-26's 30 boxes
(``python -m bench.boxes_bench``; its sessions are 1 to 30 days apart): at 0.15 one trace
gathers 9 boxes, at 0.3 only two boxes find a trace; 30 days at 0.2 make
an 8-box trace. At the defaults conv-26's boxes make 20 traces (at most 5 boxes), conv-30's
30 boxes 21 (at most 4); two sessions on one project share a trace
(tests/test_box_grouping.py).

``state/traces.json`` holds every trace with its boxes (id, path, times, topics, size): enough
for ``engram-md traces`` to list them without opening a box file. Weaving is idempotent: a
box that is already in a trace (a seal repeated after a crash) keeps that trace. A box file
rewritten or deleted later (a fact forgotten, or written back by doctor) is followed with
:func:`update_traces`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write_text
from ..core.config import TraceConfig
from ..core.statefile import compact_json, load_json
from ..store.factfile import format_time
from ..text.hashing import short_hash
from .boxes import Box
from .boxfile import BoxEdit
from .topics import topic_overlap

log = logging.getLogger(__name__)

MAX_TRACE_TOPICS = 16
STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class TraceBox:
    id: str
    path: str  # relative to the memory folder
    session: str
    created_at: datetime
    sealed_at: datetime
    topics: tuple[str, ...]
    memories: int


@dataclass(frozen=True, slots=True)
class Trace:
    id: str
    created_at: datetime
    last_seen: datetime
    boxes: tuple[TraceBox, ...]
    topic_counts: tuple[tuple[str, int], ...]  # sorted by topic

    @property
    def topics(self) -> tuple[str, ...]:
        """The trace's subject: its most shared topics (ties alphabetical), sorted."""
        ranked = sorted(self.topic_counts, key=lambda item: (-item[1], item[0]))
        return tuple(sorted(topic for topic, _ in ranked[:MAX_TRACE_TOPICS]))


def trace_id_for(box_id: str, created: datetime) -> str:
    return f"trace-{created.strftime('%Y%m%d')}-{short_hash(box_id)}"


class TraceWeaver:
    def __init__(self, cfg: TraceConfig, path: Path) -> None:
        self.cfg = cfg
        self.path = path
        self._traces: dict[str, Trace] = {}
        self._box_to_trace: dict[str, str] = {}
        self._encoded: dict[TraceBox, str] = {}  # each box's JSON, for save()
        self._load()

    # ------------------------------------------------------------ queries
    def trace_of(self, box_id: str) -> str | None:
        return self._box_to_trace.get(box_id)

    def traces(self) -> list[Trace]:
        """Every trace, most recently active first."""
        return sorted(self._traces.values(), key=lambda t: (t.last_seen, t.id), reverse=True)

    def best_match(self, topics: tuple[str, ...], at: datetime) -> tuple[str, float] | None:
        """The trace a box with ``topics``, created at ``at``, would join (and the overlap):
        the one holding the box, sealed within the window, whose topics overlap most."""
        window = timedelta(days=self.cfg.window_days)
        best: tuple[float, datetime, str] | None = None
        for trace in self._traces.values():
            overlap = max(
                (
                    topic_overlap(topics, b.topics)
                    for b in trace.boxes
                    if abs(at - b.sealed_at) <= window
                ),
                default=0.0,
            )
            if overlap < self.cfg.min_overlap or overlap == 0.0:
                continue
            # max() over (overlap, recency) with the smaller id winning a full tie.
            key = (overlap, trace.last_seen, trace.id)
            if best is None or key[:2] > best[:2] or (key[:2] == best[:2] and key[2] < best[2]):
                best = key
        return None if best is None else (best[2], best[0])

    # ------------------------------------------------------------ changes
    def weave(self, box: TraceBox) -> str:
        """Put a sealed box into a trace (joining or starting one); returns the trace id.

        The caller saves (:meth:`save`) once the box file is written.
        """
        known = self._box_to_trace.get(box.id)
        if known is not None:
            return known
        match = self.best_match(box.topics, box.created_at)
        if match is None:
            trace = Trace(
                id=trace_id_for(box.id, box.created_at),
                created_at=box.created_at,
                last_seen=box.sealed_at,
                boxes=(),
                topic_counts=(),
            )
        else:
            trace = self._traces[match[0]]
        counts = Counter(dict(trace.topic_counts))
        counts.update(box.topics)
        trace = Trace(
            id=trace.id,
            created_at=min(trace.created_at, box.created_at),
            last_seen=max(trace.last_seen, box.sealed_at),
            boxes=trace.boxes + (box,),
            topic_counts=tuple(sorted(counts.items())),
        )
        self._traces[trace.id] = trace
        self._box_to_trace[box.id] = trace.id
        return trace.id

    def remove_boxes(self, box_ids: set[str]) -> int:
        """Forget boxes (deleted by consolidation or by hand); empty traces go too."""
        removed = 0
        for trace in list(self._traces.values()):
            kept = tuple(b for b in trace.boxes if b.id not in box_ids)
            if len(kept) == len(trace.boxes):
                continue
            removed += len(trace.boxes) - len(kept)
            if not kept:
                del self._traces[trace.id]
                continue
            counts = Counter[str]()
            for b in kept:
                counts.update(b.topics)
            self._traces[trace.id] = Trace(
                id=trace.id,
                created_at=min(b.created_at for b in kept),
                last_seen=max(b.sealed_at for b in kept),
                boxes=kept,
                topic_counts=tuple(sorted(counts.items())),
            )
        for box_id in box_ids:
            self._box_to_trace.pop(box_id, None)
        return removed

    def update_boxes(self, boxes: Iterable[Box]) -> None:
        """Follow boxes rewritten with other members: each one's size, topics and first
        time, and the topics of its trace. The trace's own times stay: they record when the
        thread of work was active."""
        changed = {box.id: box for box in boxes}
        for trace in list(self._traces.values()):
            if not any(b.id in changed for b in trace.boxes):
                continue
            entries = tuple(
                replace(
                    entry,
                    created_at=box.created_at,
                    topics=box.topics,
                    memories=len(box.memory_ids),
                )
                if (box := changed.get(entry.id)) is not None
                else entry
                for entry in trace.boxes
            )
            counts = Counter[str]()
            for entry in entries:
                counts.update(entry.topics)
            self._traces[trace.id] = replace(
                trace, boxes=entries, topic_counts=tuple(sorted(counts.items()))
            )

    # ------------------------------------------------------------ state file
    def save(self) -> None:
        """Write the state file: ``{"traces": {id: trace_to_json(trace)}, "version": 1}`` as
        ``save_json(..., compact=True)`` writes it.

        It is rewritten at every seal and grows with every box, so each box is encoded once
        (a TraceBox is immutable: a changed box is a new one) and the file is put together
        from those texts. Encoding everything at every seal made an import quadratic: a
        25,000-message export, whose boxes all joined one trace, formatted 1.5M timestamps
        for its 1,250 seals (8 s of 270).
        """
        before, self._encoded = self._encoded, {}
        parts = []
        for trace_id in sorted(self._traces):
            trace = self._traces[trace_id]
            boxes = []
            for box in trace.boxes:
                text = before.get(box)
                if text is None:
                    text = compact_json(_box_to_json(box))
                boxes.append(self._encoded.setdefault(box, text))
            rest = compact_json(_trace_fields(trace))  # its keys all sort after "boxes"
            parts.append(f'{compact_json(trace_id)}:{{"boxes":[{",".join(boxes)}],{rest[1:]}')
        text = '{"traces":{' + ",".join(parts) + '},"version":' + f"{STATE_VERSION}}}\n"
        atomic_write_text(self.path, text, fsync=False)

    def _load(self) -> None:
        data = load_json(self.path, {})
        raw_traces = data.get("traces", {}) if isinstance(data, dict) else {}
        for trace_id, raw in (raw_traces or {}).items():
            try:
                trace = _trace_from_json(str(trace_id), raw)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: trace %s is unreadable (%s); skipped", self.path, trace_id, exc)
                continue
            self._traces[trace.id] = trace
            for box in trace.boxes:
                self._box_to_trace[box.id] = trace.id


def trace_to_json(trace: Trace) -> dict[str, Any]:
    return {**_trace_fields(trace), "boxes": [_box_to_json(b) for b in trace.boxes]}


def _trace_fields(trace: Trace) -> dict[str, Any]:
    return {
        "createdAt": format_time(trace.created_at),
        "lastSeen": format_time(trace.last_seen),
        "topics": list(trace.topics),
        "topicCounts": dict(trace.topic_counts),
    }


def _box_to_json(box: TraceBox) -> dict[str, Any]:
    return {
        "id": box.id,
        "path": box.path,
        "session": box.session,
        "createdAt": format_time(box.created_at),
        "sealedAt": format_time(box.sealed_at),
        "topics": list(box.topics),
        "memories": box.memories,
    }


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _trace_from_json(trace_id: str, raw: Any) -> Trace:
    boxes = tuple(
        TraceBox(
            id=str(b["id"]),
            path=str(b.get("path", "")),
            session=str(b.get("session", "")),
            created_at=_time(b["createdAt"]),
            sealed_at=_time(b["sealedAt"]),
            topics=tuple(str(t) for t in b.get("topics", [])),
            memories=int(b.get("memories", 0)),
        )
        for b in raw.get("boxes", [])
    )
    counts = tuple(sorted((str(k), int(v)) for k, v in dict(raw.get("topicCounts", {})).items()))
    return Trace(
        id=trace_id,
        created_at=_time(raw["createdAt"]),
        last_seen=_time(raw["lastSeen"]),
        boxes=boxes,
        topic_counts=counts,
    )


def update_traces(cfg: TraceConfig, path: Path, edits: Sequence[BoxEdit]) -> None:
    """Bring ``state/traces.json`` at ``path`` in line with box files rewritten or deleted."""
    if not edits or not path.exists():
        return
    weaver = TraceWeaver(cfg, path)
    weaver.remove_boxes({e.box_id for e in edits if e.box is None})
    weaver.update_boxes(e.box for e in edits if e.box is not None)
    weaver.save()


def load_traces(path: Path) -> list[Trace]:
    """Read-only view of ``state/traces.json`` (for `engram-md traces` and recall)."""
    return TraceWeaver(TraceConfig(), path).traces()
