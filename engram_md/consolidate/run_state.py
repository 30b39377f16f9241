"""``state/consolidation.json``: what one consolidation run leaves for the next.

The file holds the epoch counter, the last run (when, at which extraction count: the daemon's
schedule, how many changes, which report), ``pending``: the new facts the LLM judge could not
decide (judged again next run), and ``seen``: the content hash of every active fact the last
finished run saw, so the next run knows which facts are new. Keys written by other versions
are kept. Only this module reads or writes the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.paths import MemoryLayout
from ..core.statefile import load_json, save_json
from ..store.factfile import format_time


@dataclass(frozen=True)
class RunState:
    """``state/consolidation.json`` as read: the epoch counter and what the last run saw."""

    epoch: int = 0
    extractions: int = 0  # the pipeline's extraction count when it ran (daemon schedule)
    pending: tuple[str, ...] = ()  # new facts the judge could not decide: judged next run
    # Fact id -> content hash of every active fact the last finished run saw; None before
    # the first finished run (every fact is new then).
    seen: Mapping[str, str] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, layout: MemoryLayout) -> RunState:
        data = load_json(layout.consolidation_state_path, {})
        if not isinstance(data, dict):
            return cls()
        last = data.get("lastRun")
        if not isinstance(last, dict):
            last = {}
        pending = data.get("pending")
        seen = data.get("seen")
        return cls(
            epoch=_int(data.get("epoch")),
            extractions=_int(last.get("extractions")),
            pending=tuple(str(p) for p in pending) if isinstance(pending, list) else (),
            seen={str(k): str(v) for k, v in seen.items()} if isinstance(seen, dict) else None,
            raw=data,
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def extraction_count(layout: MemoryLayout) -> int:
    """How many extractions the pipeline has run in this folder (state/run-state.json)."""
    data = load_json(layout.run_state_path, {})
    return _int(data.get("extractions")) if isinstance(data, dict) else 0


def save_run(
    layout: MemoryLayout,
    *,
    epoch: int,
    now: datetime,
    changes: int,
    report: Path | None,
    pending: Iterable[str],
    seen: Mapping[str, str],
) -> None:
    """Record a finished run: its epoch, when it ran (wall clock and the run's ``now``), the
    extraction count it ran at, the changes it applied, its report, and what the next run
    compares with (``pending``, ``seen``)."""
    data = dict(RunState.load(layout).raw)
    data["epoch"] = epoch
    data["lastRun"] = {
        "at": format_time(datetime.now(UTC)),
        "now": format_time(now),
        "extractions": extraction_count(layout),
        "changes": changes,
        "report": report.name if report is not None else None,
    }
    data["pending"] = sorted(pending)
    data["seen"] = dict(sorted(seen.items()))
    save_json(layout.consolidation_state_path, data)


def save_refused(layout: MemoryLayout) -> None:
    """Record a run the safety rail refused as a run for the schedule (the extraction count it
    was due at), so a restarted daemon does not retry it at once; nothing else changes."""
    data = dict(RunState.load(layout).raw)
    last = dict(data.get("lastRun") or {})
    last["extractions"] = extraction_count(layout)
    data["lastRun"] = last
    save_json(layout.consolidation_state_path, data)


def drop_facts(layout: MemoryLayout, gone: set[str]) -> bool:
    """Drop ``gone`` from the file: from the facts left unjudged (``pending``) and from the
    content hashes of the facts the last run saw (``seen``). Returns whether it changed."""
    path = layout.consolidation_state_path
    data = load_json(path, None)
    if not isinstance(data, dict):
        return False
    changed = False
    pending = data.get("pending")
    if isinstance(pending, list) and gone.intersection(map(str, pending)):
        data["pending"] = [p for p in pending if str(p) not in gone]
        changed = True
    seen = data.get("seen")
    if isinstance(seen, dict) and gone.intersection(seen):
        data["seen"] = {k: v for k, v in seen.items() if k not in gone}
        changed = True
    if changed:
        save_json(path, data)
    return changed
