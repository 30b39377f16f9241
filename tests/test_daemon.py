"""`Runner.run` (the daemon loop) in-process: a quiet session is extracted while stdin stays
open, on a fake wall clock; the end of input still flushes the rest."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engram_md.app import Engine, open_engine
from engram_md.core.config import load_config
from engram_md.ingest.buffer import SmartBuffer

from .test_pipeline import ScriptedExtractor


class CountingClock:
    """A wall clock that moves only when told; counts reads to know the loop has looked."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += minutes * 60


def _wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def _line(n: int, session: str, text: str) -> bytes:
    record = {
        "role": "user",
        "content": text,
        "id": f"d{n}",
        "session": session,
        "timestamp": "2026-05-01T10:00:00Z",  # one transcript minute: no time-window trigger
    }
    return (json.dumps(record) + "\n").encode()


class Daemon:
    """`Runner.run` on its own thread, reading a pipe the test writes into."""

    def __init__(self, engine: Engine, clock: CountingClock) -> None:
        assert engine.pipeline.buffer.depth() == 0  # nothing replayed that the swap would lose
        engine.pipeline.buffer = SmartBuffer(engine.cfg.buffer, clock=clock)
        self.engine = engine
        self.clock = clock
        read_end, self._write_end = os.pipe()
        self._stdin = os.fdopen(read_end, "rb")
        self.thread = threading.Thread(
            target=engine.runner.run,
            kwargs={"stdin": self._stdin, "watch": [], "install_signals": False},
            daemon=True,
        )
        self.thread.start()

    def send(self, *lines: bytes) -> None:
        os.write(self._write_end, b"".join(lines))

    def end_input(self) -> None:
        """Close stdin (the only source) and wait for the daemon to flush and stop."""
        os.close(self._write_end)
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()
        self._stdin.close()

    def looked(self, times: int = 3) -> None:
        """Wait until the loop has read the clock a few more times (polled for idle sessions)."""
        start = self.clock.reads
        assert _wait_for(lambda: self.clock.reads >= start + times)

    def received(self, count: int) -> None:
        assert _wait_for(lambda: self.engine.pipeline.stats.turns_received >= count)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    cfg = load_config(
        None,
        env={},
        overrides={
            "memory_dir": tmp_path / "memory",
            "state_dir": tmp_path / "state",
            "buffer.idle_flush_minutes": 15,
        },
    )
    opened = open_engine(cfg, extractor=ScriptedExtractor(), with_index=False)
    yield opened
    opened.close()


def _extractor(engine: Engine) -> ScriptedExtractor:
    extractor = engine.pipeline.extractor
    assert isinstance(extractor, ScriptedExtractor)
    return extractor


def _facts(engine: Engine) -> str:
    return "\n".join(p.read_text() for p in engine.layout.facts_dir.rglob("*.md"))


def _last_trigger(engine: Engine) -> str | None:
    """The trigger of the last finished extraction (noted after its facts and journal marks)."""
    path = engine.layout.run_state_path
    if not path.exists():
        return None
    return str(json.loads(path.read_text())["lastExtraction"]["trigger"])


def test_a_quiet_session_is_extracted_while_stdin_stays_open(engine: Engine) -> None:
    extractor = _extractor(engine)
    daemon = Daemon(engine, CountingClock())
    daemon.send(
        _line(1, "quiet", "The weather is mild today."),
        _line(2, "quiet", "We walked along the river."),
    )
    daemon.received(2)
    daemon.clock.advance(14.9)
    daemon.looked()
    assert extractor.calls == []  # below the two transcript triggers and the idle period

    daemon.clock.advance(0.1)
    assert _wait_for(lambda: _last_trigger(engine) == "idle")
    assert extractor.calls == [["d1", "d2"]]
    assert engine.pipeline.journal.pending == []
    assert "river" in _facts(engine)
    assert daemon.thread.is_alive()  # stdin is still open: the daemon keeps running

    # The end of input still stops the daemon and flushes what is buffered.
    daemon.send(_line(3, "later", "The train was on time."))
    daemon.received(3)
    daemon.end_input()
    assert extractor.calls == [["d1", "d2"], ["d3"]]
    assert _last_trigger(engine) == "flush"
    assert engine.pipeline.journal.pending == []
    assert "train" in _facts(engine)


def test_a_failed_idle_flush_waits_another_idle_period(engine: Engine) -> None:
    extractor = _extractor(engine)
    extractor.fail_next = 1  # the LLM is down for the first attempt
    daemon = Daemon(engine, CountingClock())
    daemon.send(_line(1, "quiet", "The weather is mild today."))
    daemon.received(1)
    daemon.clock.advance(15)
    assert _wait_for(lambda: len(extractor.calls) == 1)
    daemon.looked()  # polls later: not retried on every one
    assert len(extractor.calls) == 1
    assert [t.id for t in engine.pipeline.journal.pending] == ["d1"]  # the turn is kept

    daemon.clock.advance(15)
    assert _wait_for(lambda: engine.pipeline.journal.pending == [])
    assert extractor.calls == [["d1"], ["d1"]]
    assert "weather" in _facts(engine)
    daemon.end_input()
