"""SmartBuffer triggers: on transcript time, and the idle flush on a (fake) wall clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram_md.core.config import BufferConfig
from engram_md.core.models import Level, Role, Signal, Turn
from engram_md.ingest.buffer import Batch, SmartBuffer, Trigger

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
NONE = Signal(Level.NONE)
LOW = Signal(Level.LOW)
MEDIUM = Signal(Level.MEDIUM, ("preference",))
HIGH = Signal(Level.HIGH, ("correction_actually",), urgent=True)
# Strong, but nothing the agent needs before the batch: a plan, a preference, a decision.
STRONG = Signal(Level.HIGH, ("commitment_will",))


def turn(n: int, minute: float | None = None, *, session: str = "s1") -> Turn:
    return Turn(
        id=f"t{n}",
        session=session,
        role=Role.USER,
        content=f"message {n}",
        timestamp=T0 + timedelta(minutes=n if minute is None else minute),
    )


def ids(batch: Batch) -> list[str]:
    return [t.id for t in batch.turns]


@pytest.fixture
def buf() -> SmartBuffer:
    return SmartBuffer(BufferConfig(max_turns=5, max_minutes=15))


def test_low_and_medium_turns_wait(buf: SmartBuffer) -> None:
    for n, sig in enumerate([NONE, LOW, MEDIUM, LOW]):
        assert buf.add(turn(n), sig) == []
    assert buf.depth() == 4


def test_high_signal_extracts_now_with_buffered_context(buf: SmartBuffer) -> None:
    buf.add(turn(1), LOW)
    buf.add(turn(2), NONE)
    due = buf.add(turn(3), HIGH)
    assert len(due) == 1
    assert due[0].trigger is Trigger.HIGH
    assert due[0].session == "s1"
    assert ids(due[0]) == ["t1", "t2", "t3"]


def test_with_an_llm_a_strong_signal_that_is_not_urgent_waits_for_its_batch() -> None:
    # Each batch is a call: a plan or a preference rides with its batch, a correction does not.
    buf = SmartBuffer(BufferConfig(max_turns=5, max_minutes=15), llm=True)
    for n in range(1, 5):
        assert buf.add(turn(n), STRONG) == []
    due = buf.add(turn(5), STRONG)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.TURNS, ["t1", "t2", "t3", "t4", "t5"])]
    buf.drop(due[0])
    due = buf.add(turn(6), HIGH)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.HIGH, ["t6"])]


def test_offline_every_strong_signal_cuts_its_batch(buf: SmartBuffer) -> None:
    buf.add(turn(1), LOW)
    due = buf.add(turn(2), STRONG)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.HIGH, ["t1", "t2"])]


def test_the_batch_size_follows_the_extractor_unless_set() -> None:
    assert SmartBuffer(BufferConfig()).max_turns == 5
    assert SmartBuffer(BufferConfig(), llm=True).max_turns == 10
    assert SmartBuffer(BufferConfig(max_turns=7), llm=True).max_turns == 7


def test_high_signal_on_an_empty_buffer(buf: SmartBuffer) -> None:
    due = buf.add(turn(1), HIGH)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.HIGH, ["t1"])]


def test_without_high_signal_now_a_strong_signal_waits_for_a_full_batch() -> None:
    # What an import asks for: finished conversations, extracted in full batches.
    bulk = SmartBuffer(BufferConfig(max_turns=4, max_minutes=15, high_signal_now=False))
    assert bulk.add(turn(1), HIGH) == []
    assert bulk.add(turn(2), NONE) == []
    assert bulk.add(turn(3), HIGH) == []
    due = bulk.add(turn(4), LOW)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.TURNS, ["t1", "t2", "t3", "t4"])]


def test_max_turns_makes_a_batch(buf: SmartBuffer) -> None:
    for n in range(4):
        assert buf.add(turn(n), LOW) == []
    due = buf.add(turn(4), LOW)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.TURNS, ["t0", "t1", "t2", "t3", "t4"])]


def test_time_window_batches_the_older_turns(buf: SmartBuffer) -> None:
    buf.add(turn(1, 0), LOW)
    buf.add(turn(2, 5), LOW)
    assert buf.add(turn(3, 14.9), LOW) == []  # still inside the window
    due = buf.add(turn(4, 15), LOW)  # exactly max_minutes after the oldest
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.TIME, ["t1", "t2", "t3"])]
    buf.drop(due[0])
    # The new turn starts the next window.
    assert buf.depth() == 1
    assert buf.flush_batches()[0].turns == (turn(4, 15),)


def test_time_window_uses_transcript_time_not_the_clock(buf: SmartBuffer) -> None:
    # A replay of an old transcript arrives within milliseconds; transcript time still counts.
    buf.add(turn(1, 0), LOW)
    due = buf.add(turn(2, 60 * 24 * 30), LOW)
    assert [b.trigger for b in due] == [Trigger.TIME]
    # And turns whose transcript times are close never trigger on time however late they come.
    other = SmartBuffer(BufferConfig(max_turns=50, max_minutes=15))
    for n in range(10):
        assert other.add(turn(n, n * 0.5), LOW) == []


def test_time_window_batch_is_folded_into_a_high_batch(buf: SmartBuffer) -> None:
    buf.add(turn(1, 0), LOW)
    due = buf.add(turn(2, 30), HIGH)
    assert [(b.trigger, ids(b)) for b in due] == [(Trigger.HIGH, ["t1", "t2"])]


def test_sessions_are_buffered_apart(buf: SmartBuffer) -> None:
    for n in range(4):
        buf.add(turn(n, session="a"), LOW)
        buf.add(turn(n, session="b"), LOW)
    due = buf.add(turn(9, session="a"), HIGH)
    assert len(due) == 1 and due[0].session == "a"
    assert all(t.session == "a" for t in due[0].turns)
    assert buf.depth() == 9
    buf.drop(due[0])
    assert buf.depth() == 4
    assert [b.session for b in buf.flush_batches()] == ["b"]


def test_drop_forgets_only_the_batch_turns(buf: SmartBuffer) -> None:
    buf.add(turn(1), LOW)
    due = buf.add(turn(2), HIGH)
    buf.add(turn(3), LOW)  # arrived while the extraction ran
    buf.drop(due[0])
    assert [ids(b) for b in buf.flush_batches()] == [["t3"]]
    buf.drop(Batch("no-such-session", (turn(3),), Trigger.FLUSH))  # harmless
    assert buf.depth() == 1


def test_drop_matches_equal_turns_restored_from_the_journal(buf: SmartBuffer) -> None:
    buf.add(turn(1), LOW)
    buf.add(turn(2), LOW)
    # A batch built from other (equal, not identical) Turn objects still removes them.
    buf.drop(Batch("s1", (turn(1), turn(2)), Trigger.FLUSH))
    assert buf.depth() == 0
    assert buf.flush_batches() == []


def test_hold_waits_max_turns_before_retrying(buf: SmartBuffer) -> None:
    for n in range(4):
        buf.add(turn(n), LOW)
    (batch,) = buf.add(turn(4), LOW)
    buf.hold("s1")  # the extraction failed: the turns stay
    assert buf.depth() == 5
    # Even a HIGH turn or a time gap does not hammer a failing backend.
    assert buf.add(turn(5), HIGH) == []
    assert buf.add(turn(6, 500), LOW) == []
    assert buf.add(turn(7, 501), LOW) == []
    assert buf.add(turn(8, 502), LOW) == []
    # The retry comes with the max_turns-th new turn (see the test below).
    due = buf.add(turn(9, 502), LOW)
    assert [b.trigger for b in due] == [Trigger.TURNS]
    assert ids(due[0]) == [f"t{n}" for n in range(10)]  # nothing was lost meanwhile
    assert batch.turns == due[0].turns[:5]


def test_retry_comes_with_the_max_turns_th_new_turn() -> None:
    buf = SmartBuffer(BufferConfig(max_turns=3, max_minutes=15))
    buf.add(turn(0), HIGH)
    buf.hold("s1")
    assert buf.add(turn(1), LOW) == []
    assert buf.add(turn(2), LOW) == []
    due = buf.add(turn(3), LOW)  # three more turns have arrived: time to retry
    assert [b.trigger for b in due] == [Trigger.TURNS]


def test_hold_on_an_unknown_session_is_harmless(buf: SmartBuffer) -> None:
    buf.hold("nobody")
    assert buf.add(turn(1, session="nobody"), HIGH) != []


def test_flush_batches_returns_every_session_and_keeps_the_turns(buf: SmartBuffer) -> None:
    assert buf.flush_batches() == []
    buf.add(turn(1, session="a"), LOW)
    buf.add(turn(2, session="b"), LOW)
    buf.add(turn(3, session="a"), LOW)
    batches = buf.flush_batches()
    assert {b.session: ids(b) for b in batches} == {"a": ["t1", "t3"], "b": ["t2"]}
    assert all(b.trigger is Trigger.FLUSH for b in batches)
    assert buf.depth() == 3  # flushing is not dropping
    for b in batches:
        buf.drop(b)
    assert buf.depth() == 0 and buf.flush_batches() == []


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += minutes * 60


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def idle_buffer(clock: FakeClock, idle_flush_minutes: float = 10, llm: bool = False) -> SmartBuffer:
    cfg = BufferConfig(max_turns=5, max_minutes=15, idle_flush_minutes=idle_flush_minutes)
    return SmartBuffer(cfg, llm=llm, clock=clock)


def test_a_quiet_session_is_flushed_after_the_idle_period(clock: FakeClock) -> None:
    buf = idle_buffer(clock)
    buf.add(turn(1, session="quiet"), LOW)
    buf.add(turn(2, session="quiet"), LOW)
    clock.advance(9.9)
    assert buf.idle_batches() == []
    clock.advance(0.1)  # exactly the idle period since the last turn was received
    due = buf.idle_batches()
    assert [(b.session, b.trigger, ids(b)) for b in due] == [("quiet", Trigger.IDLE, ["t1", "t2"])]
    assert buf.depth() == 2  # handing a batch out is not dropping it


def test_idle_counts_from_the_last_received_turn_not_transcript_time(clock: FakeClock) -> None:
    buf = idle_buffer(clock)
    buf.add(turn(1, 0, session="active"), LOW)
    buf.add(turn(1, 0, session="quiet"), LOW)
    clock.advance(6)
    # Transcript time barely moves, but the turn arrives now: the session is active.
    buf.add(turn(2, 0.1, session="active"), LOW)
    clock.advance(6)
    assert [b.session for b in buf.idle_batches()] == ["quiet"]
    clock.advance(4)
    assert [b.session for b in buf.idle_batches()] == ["active"]


def test_a_failed_idle_batch_waits_another_idle_period(clock: FakeClock) -> None:
    buf = idle_buffer(clock)
    buf.add(turn(1), LOW)
    clock.advance(10)
    (batch,) = buf.idle_batches()
    buf.hold(batch.session)  # the extraction failed: the turns stay
    for _ in range(5):  # the daemon polls several times a second: no retry meanwhile
        clock.advance(9.9 / 5)
        assert buf.idle_batches() == []
    clock.advance(0.1)
    (retry,) = buf.idle_batches()
    assert retry.turns == batch.turns and retry.trigger is Trigger.IDLE


def test_a_successful_idle_batch_leaves_the_buffer(clock: FakeClock) -> None:
    buf = idle_buffer(clock)
    buf.add(turn(1), LOW)
    clock.advance(10)
    (batch,) = buf.idle_batches()
    buf.drop(batch)
    clock.advance(100)
    assert buf.idle_batches() == [] and buf.depth() == 0
    # A session that starts later gets its own full idle period.
    buf.add(turn(2), LOW)
    clock.advance(9)
    assert buf.idle_batches() == []
    clock.advance(1)
    assert [ids(b) for b in buf.idle_batches()] == [["t2"]]


def test_zero_disables_the_idle_flush(clock: FakeClock) -> None:
    buf = idle_buffer(clock, idle_flush_minutes=0)
    buf.add(turn(1), LOW)
    clock.advance(60 * 24 * 365)
    assert buf.idle_batches() == []
    assert buf.depth() == 1


def test_idle_flush_defaults_to_the_time_window() -> None:
    cfg = BufferConfig()
    assert cfg.idle_flush_minutes == cfg.max_minutes == 15


def test_a_strong_signal_is_extracted_after_a_minute_of_quiet(clock: FakeClock) -> None:
    buf = idle_buffer(clock, llm=True)
    buf.add(turn(1, session="plain"), LOW)
    buf.add(turn(1, session="planned"), STRONG)
    # A burst shares the batch: each turn restarts the quiet.
    for n in (2, 3):
        clock.advance(0.5)
        assert buf.idle_batches() == []
        buf.add(turn(n, session="planned"), NONE)
    clock.advance(0.99)
    assert buf.idle_batches() == []
    clock.advance(0.01)  # signal_idle_seconds (60) after the last turn
    (due,) = buf.idle_batches()
    assert (due.session, due.trigger, ids(due)) == ("planned", Trigger.IDLE, ["t1", "t2", "t3"])
    buf.drop(due)
    # What comes next in that session waits like any other turn: the strong mark went with it.
    buf.add(turn(4, session="planned"), LOW)
    clock.advance(5)
    assert buf.idle_batches() == []
    clock.advance(5)  # the plain idle period (10 minutes here) for both sessions
    assert sorted(b.session for b in buf.idle_batches()) == ["plain", "planned"]


def test_zero_signal_idle_seconds_lets_a_strong_signal_wait_like_the_others(
    clock: FakeClock,
) -> None:
    cfg = BufferConfig(max_turns=5, idle_flush_minutes=10, signal_idle_seconds=0)
    buf = SmartBuffer(cfg, llm=True, clock=clock)
    buf.add(turn(1), STRONG)
    clock.advance(9.9)
    assert buf.idle_batches() == []
    clock.advance(0.1)
    assert [ids(b) for b in buf.idle_batches()] == [["t1"]]
