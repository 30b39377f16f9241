"""The composition root: turn a Config into the real, opened parts of one memory folder.

Every command gets its parts here and nowhere else: :func:`open_writer` (the lock, a sweep of
interrupted writes, the store, the embedder, the index kept true to the folder, LLM usage) and
:func:`open_reader` (the same without the lock, for recall, a dry run, doctor's checks). The
daemon's engine (:func:`open_engine`) is a writer plus the pipeline and its run loop. Tests
call these too, or build a Pipeline from fakes directly. So the choice of extractor, embedder,
judge and index is made in one place, and nothing below this module opens a lock or an index.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .consolidate.judge import LLMJudge
from .consolidate.schedule import DaemonConsolidation
from .core.allocator import PeriodicRelease
from .core.atomic import sweep_temp_files
from .core.config import Config
from .core.errors import IndexError_, LockError, RecallServerError
from .core.lock import WriterLock
from .core.models import Fact
from .core.paths import MemoryLayout
from .core.statefile import load_json, save_json
from .core.telemetry import ActionLog
from .core.writable import check_writable, unwritable
from .extract.extractor import Extractor
from .extract.llm_client import LLMClient, Usage
from .extract.llm_extractor import LLMExtractor
from .extract.offline_extractor import OfflineExtractor
from .extract.speakers import SpeakerBook
from .index.indexer import Indexer
from .index.memwatch import MemoryWatcher
from .index.opened import FolderParts
from .index.storage import index_location
from .index.table import MemoryIndex
from .ingest.daemon import Runner
from .ingest.journal import Journal
from .ingest.pipeline import Pipeline
from .ingest.sources import CursorStore
from .ingest.updating import Statement, UpdateTracker
from .integrations.service import WRITE_WAIT_SECONDS, DaemonOps, FolderOps, remember_answer
from .organize.graph import GraphStore, load_adjacency
from .organize.structure import Structure
from .recall.context import SaidOrder
from .recall.recaller import Recaller
from .recall.server import RecallServer, find_daemon
from .recall.wire import RecallOptions
from .store.access import AccessLog
from .store.dedup import HashIndex
from .store.entity_pages import EntityPages
from .store.fact_store import MemoryStore
from .store.said import SaidLog
from .text.embeddings import Embedder, make_embedder
from .text.signals import SignalScanner

log = logging.getLogger(__name__)


# A writer commits its index writes to LanceDB at most this often (MemoryIndex.hold_writes):
# each commit is slow and costs memory for good; searches in this process (recall through the
# daemon) see writes at once. On the soak's input 5 s let the daemon's size creep less than
# 1 s did; docs/RELIABILITY.md has what it still does.
HELD_INDEX_WRITE_SECONDS = 5.0
# A writer hands its free native memory back at most this often, between batches: a few
# milliseconds each time (core/allocator.py).
RELEASE_MEMORY_SECONDS = 2.0


def open_embedder(cfg: Config, layout: MemoryLayout, *, cache: bool = True) -> Embedder:
    """The configured embedder; ``cache=False`` for a caller that must write nothing."""
    return make_embedder(cfg.embedding, layout.embedding_cache_dir if cache else None)


def open_judge(cfg: Config, usage: Usage | None = None) -> LLMJudge | None:
    """The LLM judge consolidation asks about hard cases, or None offline."""
    return LLMJudge(LLMClient(cfg.llm, usage)) if cfg.llm.enabled else None


# ---------------------------------------------------------------- writer and reader


def _take_writer_lock(layout: MemoryLayout) -> WriterLock:
    lock = WriterLock(layout.lock_path, memory_dir=layout.memory_dir)
    # Waits out a recall that holds the lock for a moment (see open_reader); a running daemon
    # holds it for good and is still refused, only a little later.
    lock.acquire()
    return lock


def _open_writer_parts(
    cfg: Config,
    *,
    embedder: Embedder | None,
    with_index: bool,
    reconcile: bool,
    rebuild_missing: bool,
) -> FolderParts:
    layout = cfg.layout
    layout.ensure()
    # A read-only or foreign folder is refused here, by name, before anything is written.
    check_writable([layout.memory_dir, layout.state_dir])
    lock = _take_writer_lock(layout)
    try:
        # A kill -9 between a temp write and its rename leaves the temp file: ours to clear.
        swept = sweep_temp_files(layout.memory_dir) + sweep_temp_files(layout.state_dir)
        if swept:
            log.info("removed %d temp file(s) an interrupted run left behind", swept)
        store = MemoryStore.open(layout, rebuild_missing=rebuild_missing)
        usage = Usage.from_dict(load_json(layout.usage_path, {}))
        indexer: Indexer | None = None
        if with_index:
            embedder = embedder or open_embedder(cfg, layout)
            indexer = Indexer.open(cfg, layout, store, embedder, reconcile=reconcile)
        return FolderParts(
            cfg,
            layout,
            store,
            embedder,
            indexer.index if indexer is not None else None,
            indexer,
            usage,
            lock,
        )
    except BaseException:
        lock.release()
        raise


def _close_writer_parts(parts: FolderParts) -> None:
    try:
        save_json(parts.layout.usage_path, parts.usage.to_dict(), fsync=False)
        if parts.indexer is not None:
            parts.indexer.close()
    finally:
        if parts.lock is not None:
            parts.lock.release()


@contextmanager
def open_writer(
    cfg: Config,
    *,
    embedder: Embedder | None = None,
    with_index: bool = True,
    reconcile: bool = True,
    rebuild_missing: bool = True,
) -> Iterator[FolderParts]:
    """The folder opened for writing, for as long as the block runs.

    Takes the writer lock (:class:`LockError` while the daemon or another writer holds it),
    clears temp files an interrupted write left, opens the store and, ``with_index``, the index
    reconciled with the folder (``reconcile=False``: the caller is about to rebuild or repair
    it). On leaving, held index writes are committed, LLM usage saved, the lock released.
    """
    parts = _open_writer_parts(
        cfg,
        embedder=embedder,
        with_index=with_index,
        reconcile=reconcile,
        rebuild_missing=rebuild_missing,
    )
    try:
        yield parts
    finally:
        _close_writer_parts(parts)


def _open_reader_parts(
    cfg: Config,
    *,
    refresh_index: bool,
    cache_embeddings: bool,
    with_index: bool,
    embedder: Embedder | None = None,
) -> FolderParts:
    layout = cfg.layout
    # A reader of a read-only state folder (a mounted snapshot) embeds without the cache.
    cache = cache_embeddings and unwritable(layout.state_dir) is None
    embedder = embedder or open_embedder(cfg, layout, cache=cache)
    hashes = HashIndex.load(layout.hashes_path) or HashIndex(layout.hashes_path, {})
    store = MemoryStore(layout, hashes)
    if not with_index:
        return FolderParts(cfg, layout, store, embedder, None)
    location = index_location(cfg.index, layout.index_dir)
    # An index in an object store is shared by machines; only the writer daemon whose folder
    # fills it may reconcile it, so a reader elsewhere never refreshes it (this state's lock
    # does not guard it).
    if refresh_index and location.local_dir is not None and layout.memory_dir.is_dir():
        # A reader never creates the memory folder; the index lives in state/, which a fresh
        # clone of the memory folder lacks.
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        # Only the state lock: a reader writes nothing but this state's index, and a daemon on
        # the same memory folder with another state directory does not keep this index true.
        lock = WriterLock(layout.lock_path)
        try:
            lock.acquire(wait_seconds=0)  # never wait: a writer holding it keeps the index true
        except (LockError, OSError):
            pass  # held by a writer, or a state folder we cannot write: the index as it stands
        else:
            try:
                store = MemoryStore.open(layout)
                indexer = Indexer.open(cfg, layout, store, embedder)
                return FolderParts(cfg, layout, store, embedder, indexer.index)
            finally:
                lock.release()
        return FolderParts(
            cfg,
            layout,
            store,
            embedder,
            MemoryIndex.open(location, embedder, may_rebuild=False),
        )
    # The index as it stands, or none: this reader must not create, drop or rebuild a table.
    index = None
    if location.local_dir is None or location.local_dir.is_dir():
        try:
            index = MemoryIndex.open(location, embedder, may_rebuild=False)
        except IndexError_ as exc:
            log.info("reading without the search index: %s", exc)
    return FolderParts(cfg, layout, store, embedder, index)


@contextmanager
def open_reader(
    cfg: Config,
    *,
    refresh_index: bool = False,
    cache_embeddings: bool = True,
    with_index: bool = True,
    embedder: Embedder | None = None,
) -> Iterator[FolderParts]:
    """The folder opened for reading: no lock held, nothing in ``memory/`` written, and a
    memory folder that does not exist is not created (a mistyped path reads as empty; the
    command says so).

    ``refresh_index``: when no writer holds the folder, take the lock for a moment and
    reconcile the index with the folder first, so a hand edit made since the last run is
    respected (what a recall with no daemon does). When a writer (the daemon) holds it, the
    daemon keeps the index true; we only read, and an index built for another embedding model
    is refused rather than rebuilt (that would wipe the table the writer fills). The lock is
    only tried, never waited for: a reader does not queue behind writers.

    Without ``refresh_index`` the index is opened as it stands, or is None when there is none
    a reader can use. ``cache_embeddings=False`` for a caller that must write nothing at all.
    """
    yield _open_reader_parts(
        cfg,
        refresh_index=refresh_index,
        cache_embeddings=cache_embeddings,
        with_index=with_index,
        embedder=embedder,
    )


def make_recaller(parts: FolderParts) -> Recaller:
    """Recall over opened parts (the in-process path; the daemon serves its own)."""
    if parts.index is None or parts.embedder is None:
        where = index_location(parts.cfg.index, parts.layout.index_dir)
        raise IndexError_(f"no search index at {where}: run `engram-md reindex`")
    graph = None
    if parts.cfg.graph.enabled:
        # Read once: an in-process recall is short, and the daemon serves the live graph.
        adjacency = load_adjacency(parts.layout.graphs_dir)
        graph = lambda: adjacency  # noqa: E731
    return Recaller(
        parts.index,
        parts.embedder,
        AccessLog(parts.layout.access_path),
        parts.cfg.recall,
        graph=graph,
        graph_cfg=parts.cfg.graph,
        said_order=SaidOrder(parts.layout.memory_dir),
    )


class RecallSession:
    """In-process recall over one memory folder (what `recall` does when no daemon runs):
    a reader that refreshes the index first when no writer holds the folder."""

    def __init__(self, cfg: Config) -> None:
        parts = _open_reader_parts(cfg, refresh_index=True, cache_embeddings=True, with_index=True)
        self.layout = parts.layout
        self.embedder = parts.embedder
        self.index = parts.index
        self.recaller = make_recaller(parts)


@contextmanager
def serving_read_only(cfg: Config, *, embedder: Embedder | None = None) -> Iterator[RecallServer]:
    """A read-only recall daemon (`engram-md serve --read-only`) while the block runs.

    It answers recall on loopback from the configured index as the writer daemon (perhaps on
    another machine, through an object store) leaves it: no writer lock, nothing ingested,
    the index neither created nor reconciled. Before a recall it looks for a newer table
    version at most every ``index.refresh_seconds`` and reloads what it holds when there is
    one. Its own state folder gets the endpoint file, the access log and the embedding cache;
    one a writer daemon already serves from is refused (its endpoint file is the writer's).
    """
    layout = cfg.layout
    if find_daemon(layout.daemon_endpoint_path) is not None:
        raise RecallServerError(
            f"a daemon already serves recall for the state folder {layout.state_dir}: give "
            "the read-only daemon a state folder of its own"
        )
    layout.state_dir.mkdir(parents=True, exist_ok=True)
    embedder = embedder or open_embedder(cfg, layout)
    index = MemoryIndex.open(
        index_location(cfg.index, layout.index_dir),
        embedder,
        may_rebuild=False,
        refresh_seconds=cfg.index.refresh_seconds,
    )
    hashes = HashIndex(layout.hashes_path, {})  # recall reads no fact file: nothing to load
    recaller = make_recaller(FolderParts(cfg, layout, MemoryStore(layout, hashes), embedder, index))
    server = RecallServer(
        recaller, layout.daemon_endpoint_path, host=cfg.recall.host, port=cfg.recall.port
    )
    with server:
        yield server


# ---------------------------------------------------------------- the daemon's engine


@dataclass
class Engine:
    """The opened parts of one memory folder, for one writer, with its pipeline."""

    cfg: Config
    layout: MemoryLayout
    lock: WriterLock
    store: MemoryStore
    pipeline: Pipeline
    runner: Runner
    usage: Usage
    indexer: Indexer | None
    structure: Structure | None = None
    consolidation: DaemonConsolidation | None = None  # the schedule, when it is on

    def catch_up(self) -> None:
        """The end of a one-shot read: the consolidation its burst deferred, if one is due
        (:meth:`DaemonConsolidation.catch_up`)."""
        if self.consolidation is not None:
            self.consolidation.catch_up()

    def close(self) -> None:
        try:
            self.pipeline.close()
        finally:
            _close_writer_parts(
                FolderParts(
                    self.cfg,
                    self.layout,
                    self.store,
                    None,
                    None,
                    self.indexer,
                    self.usage,
                    self.lock,
                )
            )


def open_engine(
    cfg: Config,
    *,
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
    with_index: bool = True,
) -> Engine:
    parts = _open_writer_parts(
        cfg, embedder=embedder, with_index=with_index, reconcile=True, rebuild_missing=True
    )
    assert parts.lock is not None
    try:
        layout, store, indexer = parts.layout, parts.store, parts.indexer
        scanner = SignalScanner(cfg.signals)
        if indexer is not None:
            indexer.index.hold_writes(HELD_INDEX_WRITE_SECONDS)
        if extractor is None:
            if cfg.llm.enabled:
                extractor = LLMExtractor(LLMClient(cfg.llm, parts.usage))
            else:
                extractor = OfflineExtractor(
                    cfg.offline,
                    scanner,
                    parts.embedder,
                    existing_centroid=indexer.centroid if indexer is not None else lambda: None,
                )
        speakers = SpeakerBook.from_dict(load_json(layout.speakers_path, {}))
        actions = ActionLog(layout.actions_path)
        # A sealed box becomes searchable with the facts of the batch that sealed it.
        on_seal = indexer.upsert_box if indexer is not None else None
        structure = (
            Structure(
                cfg, layout, actions, fsync=store.fsync, on_seal=on_seal, embedder=parts.embedder
            )
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
            said=SaidLog(layout) if cfg.said.enabled else None,
            updates=_update_tracker(store, actions, indexer),
            pages=EntityPages(layout, fsync=store.fsync),
            sleep=time.sleep,
            release_memory=PeriodicRelease(RELEASE_MEMORY_SECONDS),
        )
        consolidation = None
        if cfg.consolidate.every_extractions > 0:
            graph = structure.graph if structure is not None else None
            consolidation = DaemonConsolidation(
                cfg, layout, store, indexer, judge=open_judge(cfg, parts.usage), graph=graph
            )
            pipeline.on_extraction = consolidation
        pipeline.start()
        runner = Runner(pipeline, CursorStore(layout.cursors_path))
        return Engine(
            cfg,
            layout,
            parts.lock,
            store,
            pipeline,
            runner,
            parts.usage,
            indexer,
            structure=structure,
            consolidation=consolidation,
        )
    except BaseException:
        parts.lock.release()
        raise


@contextmanager
def serving(engine: Engine) -> Iterator[None]:
    """While the daemon runs: answer recall on loopback and keep the index true to the folder.

    The recall server shares the daemon's open model and index (the fast path); the memory
    watcher feeds hand edits, deletions and git checkouts into the index as they happen.
    """
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
        said_order=SaidOrder(engine.layout.memory_dir),
    )
    indexer = engine.indexer
    writer = FolderParts(
        engine.cfg,
        engine.layout,
        engine.store,
        indexer.embedder,
        indexer.index,
        indexer,
        engine.usage,
        engine.lock,
    )
    memory = DaemonOps(
        writer,
        run_on_writer=lambda fn: engine.runner.call(fn, timeout=WRITE_WAIT_SECONDS),
        remember=lambda text, speaker: remember_answer(
            engine.pipeline, engine.store, text, speaker
        ),
        structure=engine.structure,
    )
    server = RecallServer(
        recaller,
        engine.layout.daemon_endpoint_path,
        host=engine.cfg.recall.host,
        port=engine.cfg.recall.port,
        memory=memory,
    )
    watcher = MemoryWatcher(engine.indexer, engine.layout.memory_dir)
    server.start()
    warming = _warm_up(recaller)
    try:
        watcher.start()
        try:
            yield
        finally:
            watcher.stop()
    finally:
        server.stop()
        # Native code (the model, LanceDB) must not be mid-call when the index closes or the
        # process exits: the runtime aborts the process.
        warming.join()


def folder_ops(cfg: Config) -> FolderOps:
    """The memory operations with no daemon (the MCP server's while none runs): reads without
    a lock; a forget opens the folder as a writer, a remember opens the engine, each for its
    own duration (refused while another writer holds the folder)."""
    layout = cfg.layout
    hashes = HashIndex.load(layout.hashes_path) or HashIndex(layout.hashes_path, {})

    def remember_alone(text: str, speaker: str | None) -> dict[str, Any]:
        engine = open_engine(cfg)
        try:
            return remember_answer(engine.pipeline, engine.store, text, speaker)
        finally:
            engine.close()

    return FolderOps(
        MemoryStore(layout, hashes),
        writer=lambda: open_writer(cfg),
        remember=remember_alone,
        recaller=lambda: RecallSession(cfg).recaller,
    )


def graph_store(cfg: Config) -> GraphStore | None:
    """The folder's graph store for a writer outside the daemon, or None when disabled."""
    return GraphStore(cfg.layout.graphs_dir, cfg.graph) if cfg.graph.enabled else None


def _update_tracker(
    store: MemoryStore, actions: ActionLog, indexer: Indexer | None
) -> UpdateTracker:
    """Updates recognized at write time, over the active facts the index holds."""
    if indexer is None:
        return UpdateTracker(store, actions, lambda: ())

    def statements() -> Iterator[Statement]:
        cols = indexer.index.columns_where(
            "status = 'active' AND kind = 'fact'", ["id", "path", "content", "entities", "created"]
        )
        names = ("id", "path", "content", "entities", "created")
        for i, p, text, entities, created in zip(*(cols[n] for n in names), strict=True):
            yield Statement(i, p, text, entities or (), created)

    def reindex(path: Path, fact: Fact) -> None:
        indexer.upsert_fact(path, fact, new=False)

    return UpdateTracker(store, actions, statements, on_change=reindex)


def _warm_up(recaller: Recaller) -> threading.Thread:
    """Ask one question in the background as the daemon starts: the first recall opens the
    model's session and the index's search structures (a second or more on a busy machine),
    and a hook waiting on the first prompt of a session gives up after its timeout."""

    def ask() -> None:
        try:
            recaller.recall("warm up", RecallOptions(budget_tokens=100, record_access=False))
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only costs the first caller
            log.debug("warm-up recall failed: %s", exc)

    thread = threading.Thread(target=ask, name="engram-warm-up", daemon=True)
    thread.start()
    return thread
