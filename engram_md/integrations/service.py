"""The memory operations over one opened folder: the daemon's, or one the caller opens.

:class:`DaemonOps` is what the running daemon serves beside recall (``GET /memory``,
``GET /recent``, ``POST /remember``, ``POST /forget``): reads straight from the folder on the
server's threads; writes handed to the daemon's consumer thread, which owns the pipeline, so
they never race extraction. :class:`FolderOps` is the same with no daemon: reads without a
lock, each write under the writer lock for its own duration (refused, with the holder's
pid, while another writer has the folder).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ..core.errors import MemoryFileError, RecallServerError
from ..index.opened import FolderParts
from ..ingest.daemon import RunnerBusy
from ..ingest.pipeline import Pipeline
from ..ingest.remember import remember
from ..maintain.forget import ForgetReport, forget
from ..maintain.targets import ID_SHAPE
from ..organize.structure import Structure
from ..recall.recaller import Recaller
from ..recall.wire import RecallAnswer, RecallOptions
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact
from . import memories

T = TypeVar("T")

# How long a write asked over HTTP waits for the consumer thread to take it: an extraction
# batch with an LLM can hold the thread for a while; past this the client hears 503.
WRITE_WAIT_SECONDS = 30.0


class Remember(Protocol):
    """Remember one statement through the pipeline; its outcome as JSON."""

    def __call__(self, text: str, speaker: str | None) -> dict[str, Any]: ...


def remember_answer(
    pipeline: Pipeline, store: MemoryStore, text: str, speaker: str | None
) -> dict[str, Any]:
    """Remember ``text`` through ``pipeline`` (started, on the thread that owns it); the
    outcome as JSON: ``{"received", "written", "confirmed", "memories"}``, ``memories`` the
    JSON of each memory written. ``received`` is false when the statement was seen before."""
    done = remember(pipeline, text, speaker=speaker)
    written = []
    for rel in done.written:
        path = store.layout.memory_dir / rel
        try:
            written.append(memories.memory_json(store, path, read_fact(path)))
        except MemoryFileError:
            continue  # removed by hand in the meantime: the folder wins
    return {
        "received": done.received,
        "written": list(done.written),
        "confirmed": done.confirmed,
        "memories": written,
    }


def forget_answer(report: ForgetReport) -> dict[str, Any] | None:
    """A forget's JSON, or None when the id named no memory (nothing was forgotten)."""
    return report.to_json() if report.forgotten else None


class DaemonOps:
    """The daemon's memory operations (see the module docstring)."""

    def __init__(
        self,
        parts: FolderParts,
        *,
        run_on_writer: Callable[[Callable[[], Any]], Any],
        remember: Remember,
        structure: Structure | None,
    ) -> None:
        self.parts = parts
        self._run = run_on_writer
        self._remember = remember
        self._structure = structure

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        return memories.memory(self.parts.store, memory_id, self.parts.index)

    def recent(self, limit: int) -> list[dict[str, Any]]:
        return memories.recent(self.parts.store, limit)

    def remember(self, text: str, speaker: str | None) -> dict[str, Any]:
        return self._on_writer(lambda: self._remember(text, speaker))

    def forget(self, memory_id: str) -> dict[str, Any] | None:
        return self._on_writer(lambda: self._forget(memory_id))

    def _forget(self, memory_id: str) -> dict[str, Any] | None:
        report = forget(self.parts, [memory_id])
        gone = {f.id for f in report.forgotten}
        # forget() rewrote the graph, the open boxes and the traces on disk; the daemon holds
        # them in memory and would write the forgotten ids back with its next batch.
        structure = self._structure
        if gone and structure is not None:
            if structure.graph is not None:
                structure.graph.remove_nodes(gone)
            if structure.boxes is not None:
                structure.boxes.drop(gone, self.parts.layout)
            if structure.traces is not None:
                structure.traces.remove_boxes(
                    {box for f in report.forgotten for box in f.boxes_removed}
                )
        return forget_answer(report)

    def _on_writer(self, fn: Callable[[], T]) -> T:
        try:
            result: T = self._run(fn)
        except RunnerBusy as exc:
            raise RecallServerError(str(exc)) from None
        return result


class FolderOps:
    """The memory operations with no daemon, recall included: ``writer()`` opens the folder
    for one forget and ``remember`` does the same for itself; ``recaller()`` opens the index
    and the model, once, at the first search."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        writer: Callable[[], AbstractContextManager[FolderParts]],
        remember: Remember,
        recaller: Callable[[], Recaller],
    ) -> None:
        self.store = store
        self._writer = writer
        self._remember = remember
        self._open_recaller = recaller
        self._recaller: Recaller | None = None
        self._recaller_lock = threading.Lock()

    def search(self, query: str, options: RecallOptions) -> RecallAnswer:
        return self._open().recall(query, options).answer(explain=options.explain)

    def _open(self) -> Recaller:
        with self._recaller_lock:  # requests come on several threads; open it once
            if self._recaller is None:
                self._recaller = self._open_recaller()
            return self._recaller

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        found = memories.memory(self.store, memory_id)
        if found is None and not ID_SHAPE.match(memory_id.strip()):
            # Not a fact's id: maybe a sentence or a topic window recall showed, which only
            # the index holds (opened as a search opens it).
            found = memories.memory(self.store, memory_id, self._open().index)
        return found

    def recent(self, limit: int) -> list[dict[str, Any]]:
        return memories.recent(self.store, limit)

    def remember(self, text: str, speaker: str | None) -> dict[str, Any]:
        answer = self._remember(text, speaker)
        self._wrote()
        return answer

    def forget(self, memory_id: str) -> dict[str, Any] | None:
        with self._writer() as parts:
            answer = forget_answer(forget(parts, [memory_id]))
        self._wrote()
        return answer

    def _wrote(self) -> None:
        """The next search sees the write at once (an open index looks again within a second
        by itself)."""
        with self._recaller_lock:
            recaller = self._recaller
        if recaller is not None:
            recaller.index.refresh()
