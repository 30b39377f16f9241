"""Watches the memory folder while the daemon runs, so hand edits reach the index at once.

A watchdog observer reports changes under ``memory/``; the fact files among them (``*.md``
under ``facts/`` and ``archive/``, temp files of atomic writes left out) are collected, and
once the folder has been quiet for a moment the batch goes to
:meth:`Indexer.reconcile_paths` on this watcher's own thread. A git checkout that touches a
hundred files thus costs one reconcile, not a hundred.

The daemon's own writes come back here too. They are cheap: their rows already carry the
file's mtime, so reconcile skips them after one ``stat``.

Folder events matter as well: a day folder created with files already in it, or a folder
deleted or moved away by a checkout, is handed over as a folder, which reconcile expands to
the files under it (or to the rows that pointed into it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ..core.atomic import is_temp_file
from ..core.errors import EngramError
from .indexer import Indexer
from .reconcile import ReconcileReport

log = logging.getLogger(__name__)

# The folders whose files are facts (archive/ holds archived facts under the same layout).
_WATCHED_TOPS = frozenset({"facts", "archive"})
# File events that can mean new content or a file gone; opened/closed-without-write and
# attribute changes cannot.
_FILE_EVENTS = frozenset({"created", "modified", "deleted", "moved", "closed"})
# A steady stream of events (a long checkout) still gets reconciled at least this often,
# measured in debounce periods.
_MAX_DELAY_FACTOR = 10


class MemoryWatcher:
    """Keeps the index true to the memory folder while the daemon runs."""

    def __init__(
        self,
        indexer: Indexer,
        memory_dir: Path,
        *,
        debounce_seconds: float = 0.3,
        on_report: Callable[[ReconcileReport], None] | None = None,
    ) -> None:
        self.indexer = indexer
        self.memory_dir = memory_dir
        self.debounce_seconds = debounce_seconds
        self.on_report = on_report
        self._root = memory_dir.resolve()
        self._cond = threading.Condition()
        self._pending: set[Path] = set()
        self._first_at = 0.0  # when the oldest pending path arrived
        self._last_at = 0.0  # when the newest one did
        self._stopping = False
        self._observer: Any = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._thread is not None:
            return
        self._root.mkdir(parents=True, exist_ok=True)
        # watchdog's inotify backend warns when a folder created inside the watched tree
        # (a new day folder, `mkdir -p`) gets its watch added twice; the second add is
        # harmless, but the warning would land on the daemon's stderr (and an error filter
        # would kill the observer thread).
        warnings.filterwarnings(
            "ignore",
            message=r"Callback with id .* already exists for watch",
            category=RuntimeWarning,
            module=r"watchdog\.",
        )
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                watcher._on_event(event)

        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="engram-memory-watcher", daemon=True)
        self._thread.start()
        observer = Observer()
        observer.schedule(Handler(), str(self._root), recursive=True)
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        """Stop watching; changes already seen are reconciled before this returns."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        thread, self._thread = self._thread, None
        if thread is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread.join(timeout=30)

    def __enter__(self) -> MemoryWatcher:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ events (observer thread)
    def _on_event(self, event: Any) -> None:
        kind = event.event_type
        if event.is_directory:
            if kind not in ("created", "deleted", "moved"):
                return  # a folder's own mtime changes with every file in it
        elif kind not in _FILE_EVENTS:
            return
        paths = [event.src_path]
        if kind == "moved":
            paths.append(event.dest_path)
        wanted = [p for p in (self._wanted(raw, event.is_directory) for raw in paths) if p]
        if not wanted:
            return
        now = time.monotonic()
        with self._cond:
            if not self._pending:
                self._first_at = now
            self._pending.update(wanted)
            self._last_at = now
            self._cond.notify_all()

    def _wanted(self, raw: str | bytes, is_directory: bool) -> Path | None:
        """The path if it can hold facts: a fact file, or a folder under facts/ or archive/."""
        if not raw:
            return None
        path = Path(os.fsdecode(raw))
        try:
            parts = path.relative_to(self._root).parts
        except ValueError:
            return None
        if not parts or parts[0] not in _WATCHED_TOPS:
            return None
        if is_directory:
            return path
        if path.suffix != ".md" or is_temp_file(path):
            return None
        return path

    # ------------------------------------------------------------ reconcile (own thread)
    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._reconcile(batch)

    def _next_batch(self) -> list[Path] | None:
        """Wait for pending paths and a quiet moment; None once stopped with nothing left."""
        with self._cond:
            while True:
                if self._pending:
                    now = time.monotonic()
                    quiet_at = self._last_at + self.debounce_seconds
                    latest = self._first_at + self.debounce_seconds * _MAX_DELAY_FACTOR
                    due = min(quiet_at, latest)
                    if self._stopping or now >= due:
                        batch = sorted(self._pending)
                        self._pending.clear()
                        return batch
                    self._cond.wait(timeout=due - now)
                elif self._stopping:
                    return None
                else:
                    self._cond.wait()

    def _reconcile(self, batch: list[Path]) -> None:
        try:
            report = self.indexer.reconcile_paths(batch)
        except (EngramError, OSError) as exc:
            # The folder is still the truth: the next start's reconcile catches up.
            log.warning("could not bring the index up to date with %d path(s): %s", len(batch), exc)
            return
        except Exception:
            # Whatever went wrong with this batch, the watcher must outlive it.
            log.exception("reconciling %d changed path(s) failed", len(batch))
            return
        for problem in report.broken:
            log.warning("not indexed: %s", problem)
        if report.changed:
            log.info(
                "memory folder changed: %d added, %d updated, %d removed",
                report.added,
                report.updated,
                report.removed,
            )
        if self.on_report is not None and (report.changed or report.broken):
            try:
                self.on_report(report)
            except Exception:
                log.exception("the memory watcher's report callback failed")
