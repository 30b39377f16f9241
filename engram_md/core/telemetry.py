"""Action telemetry: every memory action with its outcome and reason, appended to
``state/memory-actions.jsonl``. Consolidation later learns compression guidelines from it.

Telemetry must never stop the pipeline: a failed append is reported once and skipped.

The log is an audit trail, rewritten only to forget (:meth:`ActionLog.scrub`): every record
keeps its place and its other fields.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .atomic import atomic_write_bytes

log = logging.getLogger(__name__)

# The action-policy taxonomy (seed 002) plus the extraction bookkeeping actions we emit.
ACTIONS = frozenset(
    {
        "store_episode",
        "store_note",
        "update_note",
        "create_artifact",
        "summarize_node",
        "discard",
        "link_graph",
        "forget",
    }
)
OUTCOMES = frozenset({"applied", "skipped", "failed"})


class ActionLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._warned = False

    def record(
        self,
        action: str,
        outcome: str,
        reason: str,
        *,
        memory_id: str | None = None,
        **details: Any,
    ) -> None:
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        event: dict[str, Any] = {
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "action": action,
            "outcome": outcome,
            "reason": reason,
        }
        if memory_id:
            event["memoryId"] = memory_id
        for key, value in details.items():
            if value is not None and key not in event:
                event[key] = value
        line = json.dumps(event, ensure_ascii=False, sort_keys=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            if not self._warned:
                log.warning("cannot append to %s (%s); telemetry skipped", self.path, exc)
                self._warned = True

    def scrub(
        self,
        scrub: Callable[[str], str],
        *,
        ids: Collection[str] = (),
        turns: Collection[tuple[str, str]] = (),
    ) -> bool:
        """Rewrite every string in every record with ``scrub`` (field names are ours, not
        quotes), and drop the ``preview`` (text an extractor dropped) of records that name
        one of ``ids`` or of ``turns`` ((session, turn id)). Records that need no change keep
        their bytes; a line that is no record (a torn one: doctor's business) is kept as it
        is. Returns whether the file changed."""
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return False
        changed = False
        for n, line in enumerate(lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            new = _scrub_strings(event, scrub)
            if "preview" in new and _names(event, ids, turns):
                del new["preview"]
            if new != event:
                lines[n] = json.dumps(new, ensure_ascii=False).encode("utf-8")
                changed = True
        if changed:
            atomic_write_bytes(self.path, b"\n".join(lines) + b"\n")
        return changed


def _scrub_strings(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrub_strings(v, scrub) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_strings(v, scrub) for k, v in value.items()}
    return value


def _names(event: dict[str, Any], ids: Collection[str], turns: Collection[tuple[str, str]]) -> bool:
    """Whether ``event`` is about one of ``ids``, or about one of ``turns`` of its session."""
    if event.get("memoryId") in ids:
        return True
    said = event.get("turns")
    session = str(event.get("session", ""))
    return isinstance(said, list) and any((session, str(t)) in turns for t in said)
