"""The smart buffer: per session, decide when buffered turns are worth an extraction.

Triggers (all on transcript time, so a replay behaves like the live run):
  HIGH signal            -> extract now, the buffered turns as context
  >= max_turns turns     -> batch
  >= max_minutes between the oldest buffered turn and a new one -> batch what was buffered
                            before the new turn (the new one starts the next window)
  end of input / SIGTERM -> flush every session
Turns leave the buffer only when their extraction succeeded (`drop`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import timedelta

from .config import BufferConfig
from .models import Level, Signal, Turn


class Trigger(enum.StrEnum):
    HIGH = "high_signal"
    TURNS = "turn_count"
    TIME = "time_window"
    FLUSH = "flush"


@dataclass
class _SessionBuffer:
    turns: list[Turn] = field(default_factory=list)
    # After a failed extraction, wait for this many new turns before trying again,
    # so an LLM outage is not hammered once per turn.
    hold_for: int = 0


@dataclass(frozen=True, slots=True)
class Batch:
    session: str
    turns: tuple[Turn, ...]
    trigger: Trigger


class SmartBuffer:
    def __init__(self, cfg: BufferConfig) -> None:
        self.cfg = cfg
        self._sessions: dict[str, _SessionBuffer] = {}

    def add(self, turn: Turn, signal: Signal) -> list[Batch]:
        """Buffer a turn; return the batches that are due now (oldest first)."""
        buf = self._sessions.setdefault(turn.session, _SessionBuffer())
        due: list[Batch] = []
        window = timedelta(minutes=self.cfg.max_minutes)
        if buf.turns and turn.timestamp - buf.turns[0].timestamp >= window and not buf.hold_for:
            due.append(Batch(turn.session, tuple(buf.turns), Trigger.TIME))
        buf.turns.append(turn)
        if buf.hold_for:
            buf.hold_for -= 1
            if buf.hold_for:
                return due
        if signal.level is Level.HIGH:
            trigger: Trigger | None = Trigger.HIGH
        elif len(buf.turns) >= self.cfg.max_turns:
            trigger = Trigger.TURNS
        else:
            trigger = None
        if trigger is not None:
            # One batch with everything buffered: the time-window batch (if any) is folded in.
            due = [Batch(turn.session, tuple(buf.turns), trigger)]
        return due

    def drop(self, batch: Batch) -> None:
        """Forget turns whose memories are written."""
        buf = self._sessions.get(batch.session)
        if buf is None:
            return
        # Matched by value: a batch may hold equal Turn objects rebuilt from the journal.
        done = {(t.id, t.content) for t in batch.turns}
        buf.turns = [t for t in buf.turns if (t.id, t.content) not in done]
        if not buf.turns:
            self._sessions.pop(batch.session, None)

    def hold(self, session: str) -> None:
        """An extraction failed: keep the turns, retry after max_turns more arrive."""
        buf = self._sessions.get(session)
        if buf is not None:
            buf.hold_for = self.cfg.max_turns

    def flush_batches(self) -> list[Batch]:
        return [
            Batch(session, tuple(buf.turns), Trigger.FLUSH)
            for session, buf in self._sessions.items()
            if buf.turns
        ]

    def depth(self) -> int:
        return sum(len(buf.turns) for buf in self._sessions.values())
