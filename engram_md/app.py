"""Wiring: turn a Config into the real, opened parts of one memory folder.

The CLI and the daemon call :func:`open_engine`; tests call it too, or build a Pipeline from
fakes directly. Nothing else constructs the real stages, so the choice of extractor,
embedder and index is made in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .core.atomic import sweep_temp_files
from .core.config import Config
from .core.errors import LockError
from .core.lock import WriterLock
from .core.paths import MemoryLayout
from .core.statefile import load_json, save_json
from .core.telemetry import ActionLog
from .extract.extractor import Extractor
from .extract.llm_extractor import LLMExtractor, Usage
from .extract.offline_extractor import OfflineExtractor
from .extract.speakers import SpeakerBook
from .index.indexer import Indexer
from .index.table import MemoryIndex
from .ingest.daemon import Runner
from .ingest.journal import Journal
from .ingest.pipeline import Pipeline
from .ingest.sources import CursorStore
from .organize.structure import Structure
from .store.fact_store import MemoryStore
from .text.embeddings import Embedder, make_embedder
from .text.signals import SignalScanner

log = logging.getLogger(__name__)


# A writer commits its index writes to LanceDB at most this often (MemoryIndex.hold_writes):
# each commit is slow and costs memory for good; searches in this process (recall through the
# daemon) see writes at once. On the soak's input 5 s let the daemon's size creep less than
# 1 s did; docs/RELIABILITY.md has what it still does.
HELD_INDEX_WRITE_SECONDS = 5.0


def layout_for(cfg: Config) -> MemoryLayout:
    return MemoryLayout(cfg.memory_dir, cfg.state_dir)


@dataclass
class Engine:
    """The opened parts of one memory folder, for one writer."""

    cfg: Config
    layout: MemoryLayout
    lock: WriterLock
    store: MemoryStore
    pipeline: Pipeline
    runner: Runner
    usage: Usage
    indexer: Indexer | None
    extras: dict[str, Any] = field(default_factory=dict)
    structure: Structure | None = None

    def close(self) -> None:
        try:
            self.pipeline.close()
            save_json(self.layout.usage_path, self.usage.to_dict(), fsync=False)
            if self.indexer is not None:
                self.indexer.close()
        finally:
            self.lock.release()


def open_embedder(cfg: Config, layout: MemoryLayout) -> Embedder:
    return make_embedder(cfg.embedding, layout.embedding_cache_dir)


def open_engine(
    cfg: Config,
    *,
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
    with_index: bool = True,
) -> Engine:
    layout = layout_for(cfg)
    layout.ensure()
    lock = WriterLock(layout.lock_path, memory_dir=layout.memory_dir)
    # Waits out a recall that holds the lock for a moment (see RecallSession); a running
    # daemon holds it for good and is still refused, only a little later.
    lock.acquire()
    try:
        # A kill -9 between a temp write and its rename leaves the temp file: ours to clear.
        swept = sweep_temp_files(layout.memory_dir) + sweep_temp_files(layout.state_dir)
        if swept:
            log.info("removed %d temp file(s) an interrupted run left behind", swept)
        store = MemoryStore.open(layout)
        usage = Usage.from_dict(load_json(layout.usage_path, {}))
        scanner = SignalScanner(cfg.signals)
        indexer: Indexer | None = None
        if with_index:
            embedder = embedder or open_embedder(cfg, layout)
            indexer = Indexer.open(cfg, layout, store, embedder)
            indexer.index.hold_writes(HELD_INDEX_WRITE_SECONDS)
        if extractor is None:
            if cfg.llm.enabled:
                extractor = LLMExtractor(cfg.llm, usage)
            else:
                extractor = OfflineExtractor(
                    cfg.offline,
                    scanner,
                    embedder,
                    existing_centroid=indexer.centroid if indexer is not None else lambda: None,
                )
        speakers = SpeakerBook.from_dict(load_json(layout.speakers_path, {}))
        actions = ActionLog(layout.actions_path)
        # A sealed box becomes searchable with the facts of the batch that sealed it.
        on_seal = indexer.upsert_box if indexer is not None else None
        structure = (
            Structure(cfg, layout, actions, fsync=store.fsync, on_seal=on_seal)
            if cfg.boxes.enabled or cfg.graph.enabled
            else None
        )
        pipeline = Pipeline(
            cfg,
            extractor=extractor,
            scanner=scanner,
            store=store,
            journal=Journal(layout.journal_path, fsync_each=cfg.buffer.fsync == "always"),
            actions=actions,
            speakers=speakers,
            indexer=indexer,
            structure=structure,
            sleep=time.sleep,
        )
        if cfg.consolidate.every_extractions > 0:
            from .consolidate.run import DaemonConsolidation

            judge = None
            if cfg.llm.enabled:
                from .consolidate.judge import LLMJudge

                judge = LLMJudge(cfg.llm, usage)
            graph = structure.graph if structure is not None else None
            pipeline.on_extraction = DaemonConsolidation(
                cfg, layout, store, indexer, judge=judge, graph=graph
            )
        pipeline.start()
        runner = Runner(pipeline, CursorStore(layout.cursors_path))
        return Engine(
            cfg, layout, lock, store, pipeline, runner, usage, indexer, structure=structure
        )
    except BaseException:
        lock.release()
        raise


class RecallSession:
    """In-process recall over one memory folder (what `recall` does when no daemon runs).

    When no writer holds the folder, the session takes the lock for a moment and reconciles
    the index with the folder first, so a hand edit made since the last run is respected.
    When a writer (the daemon) holds it, the daemon keeps the index true; we only read, and
    an index built for another embedding model is refused rather than rebuilt (that would wipe
    the table the writer fills). The lock is only tried, never waited for: a reader does not
    queue behind writers, and writers starting meanwhile wait the moment out.
    """

    def __init__(self, cfg: Config) -> None:
        from .recall.recaller import Recaller
        from .store.access import AccessLog

        self.layout = layout_for(cfg)
        self.layout.ensure()
        self.embedder = open_embedder(cfg, self.layout)
        # Only the state lock: the session writes nothing but this state's index, and a daemon
        # on the same memory folder with another state directory does not keep this index true.
        lock = WriterLock(self.layout.lock_path)
        try:
            lock.acquire(wait_seconds=0)  # never wait: a writer holding it keeps the index true
        except LockError:
            self.index = MemoryIndex.open(self.layout.index_dir, self.embedder, may_rebuild=False)
        else:
            try:
                store = MemoryStore.open(self.layout)
                indexer = Indexer.open(cfg, self.layout, store, self.embedder)
                self.index = indexer.index
            finally:
                lock.release()
        graph = None
        if cfg.graph.enabled:
            from .organize.graph import load_adjacency

            # Read once: a recall session is short, and the daemon serves the live graph.
            adjacency = load_adjacency(self.layout.graphs_dir)
            graph = lambda: adjacency  # noqa: E731
        self.recaller = Recaller(
            self.index,
            self.embedder,
            AccessLog(self.layout.access_path),
            cfg.recall,
            graph=graph,
            graph_cfg=cfg.graph,
        )


@contextmanager
def serving(engine: Engine) -> Iterator[None]:
    """While the daemon runs: answer recall on loopback and keep the index true to the folder.

    The recall server shares the daemon's open model and index (the fast path); the memory
    watcher feeds hand edits, deletions and git checkouts into the index as they happen.
    """
    from .index.memwatch import MemoryWatcher
    from .recall.recaller import Recaller
    from .recall.server import RecallServer
    from .store.access import AccessLog

    if engine.indexer is None:
        yield
        return
    structure = engine.structure
    graph = (
        structure.graph.adjacency
        if structure is not None and structure.graph is not None and engine.cfg.graph.enabled
        else None
    )
    recaller = Recaller(
        engine.indexer.index,
        engine.indexer.embedder,
        AccessLog(engine.layout.access_path),
        engine.cfg.recall,
        graph=graph,
        graph_cfg=engine.cfg.graph,
    )
    server = RecallServer(
        recaller,
        engine.layout.daemon_endpoint_path,
        host=engine.cfg.recall.host,
        port=engine.cfg.recall.port,
    )
    watcher = MemoryWatcher(engine.indexer, engine.layout.memory_dir)
    server.start()
    try:
        watcher.start()
        try:
            yield
        finally:
            watcher.stop()
    finally:
        server.stop()
