"""`engram-md run` and `engram-md ingest`: feed turns from their sources into the pipeline.

One consumer thread (the caller's) owns the pipeline; producers (a stdin reader thread and
watchdog's observer) only put work on a queue. That keeps every write single-threaded and
ordered, with no locks inside the pipeline.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ..core.allocator import release_free_memory
from ..core.models import Turn
from .pipeline import Pipeline
from .sources import (
    CursorStore,
    FileTail,
    decode_lines,
    expand_watch_paths,
    is_watched_transcript,
    read_lines,
    report_line_error,
)
from .transcripts import LineError, TranscriptReader

log = logging.getLogger(__name__)


# How often the running daemon hands free native memory back to the system.
TRIM_SECONDS = 30.0
# A file is handed to the pipeline this many turns at a time, so the sentences they will be
# indexed by are embedded in one model run (Pipeline.receive_all).
READ_AHEAD_TURNS = 128

_STOP = "stop"
_STDIN_EOF = "stdin-eof"
T = TypeVar("T")


class RunnerBusy(Exception):
    """A call on the consumer thread did not run in time (the daemon is stopping or busy)."""


class _Call:
    """Work another thread hands to the consumer thread, which owns every write."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: Future[Any] = Future()

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # the caller gave up waiting
        try:
            self.future.set_result(self.fn())
        except BaseException as exc:  # handed to the caller, which reports it
            self.future.set_exception(exc)


class Runner:
    """Drives a pipeline from stdin and/or watched files until told to stop."""

    def __init__(
        self,
        pipeline: Pipeline,
        cursors: CursorStore,
        *,
        on_error: Callable[[LineError], None] = report_line_error,
    ) -> None:
        self.pipeline = pipeline
        self.cursors = cursors
        self.on_error = on_error
        self.bad_lines = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=10_000)

    def _error(self, err: LineError) -> None:
        self.bad_lines += 1
        self.on_error(err)

    # ------------------------------------------------------------ ingest (one pass)
    def ingest_stream(self, stream: BinaryIO, source: str) -> None:
        reader = TranscriptReader(source)
        ahead: list[Turn] = []
        for _raw, turns in decode_lines(reader, read_lines(stream), self._error):
            ahead.extend(turns)
            if len(ahead) >= READ_AHEAD_TURNS:
                self.pipeline.receive_all(ahead)
                ahead = []
        self.pipeline.receive_all(ahead)

    def ingest_file(self, path: Path) -> None:
        """Read a whole file once (no cursor: the journal skips what was already received)."""
        try:
            handle = open(path, "rb")
        except OSError as exc:
            self._error(LineError(str(path), 0, f"cannot open: {exc.strerror}"))
            return
        with handle:
            self.ingest_stream(handle, str(path))

    # ------------------------------------------------------------ daemon
    def call(self, fn: Callable[[], T], *, timeout: float) -> T:
        """Run ``fn`` on the consumer thread, between turns, and return what it returns.

        A remember or a forget asked over HTTP writes the folder: it must not race the
        pipeline. RunnerBusy when it has not started within ``timeout`` seconds (it then never
        runs); its own exception otherwise.
        """
        call = _Call(fn)
        try:
            self._queue.put(call, timeout=timeout)
            return call.future.result(timeout=timeout)
        except (queue.Full, FutureTimeout):
            if call.future.cancel():
                raise RunnerBusy(f"the daemon did not take the work within {timeout:g} s") from None
            return call.future.result()  # it started in the meantime: wait for it
        except CancelledError:
            raise RunnerBusy("the daemon is stopping") from None

    def run(
        self,
        *,
        stdin: BinaryIO | None,
        watch: list[Path],
        install_signals: bool = True,
    ) -> None:
        """Run until stdin ends (when it is the only source) or SIGTERM/SIGINT; then flush.
        Meanwhile, sessions that go quiet for `buffer.idle_flush_minutes` are extracted."""
        stop = threading.Event()
        if install_signals:
            self._install_signal_handlers(stop)
        observer = self._start_watch(watch) if watch else None
        if stdin is not None:
            threading.Thread(target=self._pump_stdin, args=(stdin,), daemon=True).start()
        stdin_only = stdin is not None and not watch
        try:
            if watch:
                self.catch_up(watch)
            next_trim = time.monotonic() + TRIM_SECONDS
            while not stop.is_set():
                # Between items, and at least every poll while none come, sessions that went
                # quiet are extracted instead of waiting for the end of input.
                self.pipeline.flush_idle()
                if time.monotonic() >= next_trim:
                    release_free_memory()  # see allocator.py: keeps a long run's size level
                    next_trim = time.monotonic() + TRIM_SECONDS
                try:
                    item = self._queue.get(timeout=0.2)
                except queue.Empty:
                    continue
                if item == _STOP:
                    break
                if item == _STDIN_EOF:
                    if stdin_only:
                        break
                    continue
                if isinstance(item, _Call):
                    item.run()
                elif isinstance(item, Path):
                    self._drain_files([item])
                else:
                    for turn in item:
                        self.pipeline.receive(turn)
        finally:
            if observer is not None:
                observer.stop()
                observer.join(timeout=5)
            if watch:
                self.catch_up(watch)
            self._cancel_calls()
            self.pipeline.flush()

    def _cancel_calls(self) -> None:
        """Calls still queued when the loop ends are refused, not left waiting (nothing reads
        the queue any more, as before)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Call):
                item.future.cancel()

    def _install_signal_handlers(self, stop: threading.Event) -> None:
        def handler(signum: int, _frame: Any) -> None:
            log.info("received signal %d: flushing and stopping", signum)
            stop.set()
            try:
                self._queue.put_nowait(_STOP)
            except queue.Full:
                pass

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def _pump_stdin(self, stream: BinaryIO) -> None:
        reader = TranscriptReader("stdin")
        try:
            for _raw, turns in decode_lines(reader, read_lines(stream), self._error):
                if turns:
                    self._queue.put(turns)
        finally:
            self._queue.put(_STDIN_EOF)

    def catch_up(self, watch: list[Path]) -> None:
        """Read what is new in the watched files and folders, as ``run --watch`` does when it
        starts and stops (cursors kept; no flush)."""
        self._drain_files(expand_watch_paths(watch))

    def _drain_files(self, paths: list[Path]) -> None:
        for path in paths:
            tail = FileTail(path, self.cursors)
            for turns in tail.read_new(self._error):
                for turn in turns:
                    self.pipeline.receive(turn)

    def _start_watch(self, paths: list[Path]) -> Any:
        files = {p.resolve() for p in paths if not p.is_dir()}
        folders = {p.resolve() for p in paths if p.is_dir()}
        out = self._queue

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.is_directory or event.event_type not in ("modified", "created", "moved"):
                    return
                raw = getattr(event, "dest_path", "") or event.src_path
                path = Path(raw if isinstance(raw, str) else raw.decode()).resolve()
                wanted = path in files or (
                    is_watched_transcript(path)
                    and any(folder in path.parents for folder in folders)
                )
                if wanted:
                    out.put(path)

        observer = Observer()
        handler = Handler()
        watched: set[Path] = set()
        for folder in folders | {f.parent for f in files}:
            if folder not in watched and folder.is_dir():
                observer.schedule(handler, str(folder), recursive=folder in folders)
                watched.add(folder)
        observer.start()
        return observer
