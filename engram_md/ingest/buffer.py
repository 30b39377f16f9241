"""The smart buffer: per session, decide when buffered turns are worth an extraction.

Triggers (on transcript time, so a replay behaves like the live run):
  strong signal          -> extract now, the buffered turns as context. With an LLM only
                            an urgent one (Signal.urgent: a correction, a "remember this", a
                            standing rule); the others wait for their batch. Off
                            (high_signal_now) for imports of finished conversations
  >= max_turns turns     -> batch
  >= max_minutes between the oldest buffered turn and a new one -> batch what was buffered
                            before the new turn (the new one starts the next window)
  end of input / SIGTERM -> flush every session
Two on the wall clock (the daemon asks while it waits for input):
  no turn received for >= idle_flush_minutes -> batch the quiet session (`idle_batches`)
  a strong signal left waiting, then signal_idle_seconds of quiet -> batch it: a plan
                            or a preference said live is extracted within a minute, while a
                            burst of them (or a replay) still shares one extraction
The transcript-time triggers alone would leave a conversation that simply stops in the buffer
until the daemon stops. Because the idle flush depends on when turns arrive, a live daemon may
cut one extra batch at a quiet moment that a fast replay of the same transcript would not.
Turns leave the buffer only when their extraction succeeded (`drop`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from ..core.config import BufferConfig
from ..core.models import Level, Signal, Turn


class Trigger(enum.StrEnum):
    HIGH = "high_signal"
    TURNS = "turn_count"
    TIME = "time_window"
    IDLE = "idle"
    FLUSH = "flush"


@dataclass
class _SessionBuffer:
    # Clock reading (monotonic seconds) the idle period counts from: the last turn received,
    # or the last idle batch handed out, so a failing one is retried one idle period later.
    quiet_since: float
    turns: list[Turn] = field(default_factory=list)
    # After a failed extraction, wait for this many new turns before trying again,
    # so an LLM outage is not hammered once per turn.
    hold_for: int = 0
    # A buffered turn has a strong (HIGH) signal that did not cut the batch: the session is
    # due after signal_idle_seconds of quiet rather than idle_flush_minutes.
    strong: bool = False


@dataclass(frozen=True, slots=True)
class Batch:
    session: str
    turns: tuple[Turn, ...]
    trigger: Trigger


class SmartBuffer:
    def __init__(
        self,
        cfg: BufferConfig,
        *,
        llm: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        # Whether an LLM extracts decides the batch size (unless the configuration sets it) and
        # which signals cut a batch at once: with an LLM each batch is a call, so only urgent
        # ones do; offline a batch costs nothing, and every strong signal does (small batches
        # keep the offline extractor's episodes on one subject).
        self.max_turns = cfg.batch_turns(llm=llm)
        self._urgent_only = llm
        self._clock = clock
        self._sessions: dict[str, _SessionBuffer] = {}
        # No session can be idle before this clock reading (see `idle_batches`).
        self._next_idle_check = 0.0

    def add(self, turn: Turn, signal: Signal) -> list[Batch]:
        """Buffer a turn; return the batches that are due now (oldest first)."""
        now = self._clock()
        buf = self._sessions.get(turn.session)
        if buf is None:
            buf = self._sessions[turn.session] = _SessionBuffer(now)
        buf.quiet_since = now
        due: list[Batch] = []
        window = timedelta(minutes=self.cfg.max_minutes)
        if buf.turns and turn.timestamp - buf.turns[0].timestamp >= window and not buf.hold_for:
            due.append(Batch(turn.session, tuple(buf.turns), Trigger.TIME))
        buf.turns.append(turn)
        if buf.hold_for:
            buf.hold_for -= 1
            if buf.hold_for:
                return due
        cuts = signal.urgent if self._urgent_only else signal.level is Level.HIGH
        if signal.level is Level.HIGH and not cuts and self.cfg.signal_idle_seconds:
            buf.strong = True
            self._next_idle_check = min(self._next_idle_check, now + self.cfg.signal_idle_seconds)
        if cuts and self.cfg.high_signal_now:
            trigger: Trigger | None = Trigger.HIGH
        elif len(buf.turns) >= self.max_turns:
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
        buf.strong = False  # what stays is newer than the batch (signals are not kept)
        if not buf.turns:
            self._sessions.pop(batch.session, None)

    def hold(self, session: str) -> None:
        """An extraction failed: keep the turns, retry after max_turns more arrive (or, if the
        session stays quiet, with its next idle batch)."""
        buf = self._sessions.get(session)
        if buf is not None:
            buf.hold_for = self.max_turns

    def idle_batches(self) -> list[Batch]:
        """The sessions that received no turn for idle_flush_minutes of wall-clock time.

        Each one's idle period restarts here: a batch that succeeds leaves the buffer, and one
        that fails (`hold`) is not due again before another quiet period, so an LLM outage is
        not retried on every poll of the daemon.
        """
        quiet = self.cfg.idle_flush_minutes * 60
        strong = self.cfg.signal_idle_seconds or quiet
        if not quiet and not self.cfg.signal_idle_seconds:
            return []
        now = self._clock()
        # Called several times a second with possibly many sessions: skip the scan until the
        # earliest moment one can be due. Adding turns only moves that moment later, except
        # a strong signal's, which `add` brings forward.
        if now < self._next_idle_check:
            return []
        due: list[Batch] = []
        next_check = float("inf")
        for session, buf in self._sessions.items():
            period = strong if buf.strong else quiet
            if not period:
                continue
            if now >= buf.quiet_since + period:
                due.append(Batch(session, tuple(buf.turns), Trigger.IDLE))
                buf.quiet_since = now
            next_check = min(next_check, buf.quiet_since + period)
        if next_check == float("inf"):  # no session to wait for
            next_check = now + (quiet or strong)
        self._next_idle_check = next_check
        return due

    def flush_batches(self) -> list[Batch]:
        return [
            Batch(session, tuple(buf.turns), Trigger.FLUSH)
            for session, buf in self._sessions.items()
            if buf.turns
        ]

    def depth(self) -> int:
        return sum(len(buf.turns) for buf in self._sessions.values())
