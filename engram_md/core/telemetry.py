"""Action telemetry: every memory action with its outcome and reason, appended to
``state/memory-actions.jsonl``. Consolidation later learns compression guidelines from it.

Telemetry must never stop the pipeline: a failed append is reported once and skipped.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
