"""The daemon's consolidation schedule: every N extractions, at most once per interval."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from ..core.config import Config
from ..core.errors import EngramError
from ..core.paths import MemoryLayout
from ..index.indexer import Indexer
from ..organize.graph import GraphStore
from ..store.fact_store import MemoryStore
from .apply import RetireLimitError
from .judge import Judge
from .plan import Step
from .planner import STEPS
from .run import consolidate
from .run_state import RunState, extraction_count, save_refused
from .vectors import Vectors

log = logging.getLogger(__name__)


class DaemonConsolidation:
    """The daemon's ``on_extraction`` callback: consolidate every N extractions, and at most
    once per ``consolidate.min_interval_minutes`` of wall-clock time.

    The interval keeps a burst of input (a backlog or a long transcript piped in at once)
    from spending its time consolidating a folder that changes by the second: a run reads
    every fact file, so running it every N extractions would make intake quadratic.

    Runs in the daemon's own process, which already holds the writer lock, between two
    extraction batches (the pipeline calls back synchronously), so nothing else writes
    meanwhile. It never raises: a refused or failed run is logged and tried again at the
    next due extraction.
    """

    def __init__(
        self,
        cfg: Config,
        layout: MemoryLayout,
        store: MemoryStore,
        indexer: Indexer | None,
        *,
        judge: Judge | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        steps: Sequence[Step] = STEPS,
        graph: GraphStore | None = None,
    ) -> None:
        self.graph = graph  # the daemon's own graph store: one writer of state/graphs/
        self.cfg = cfg
        self.layout = layout
        self.store = store
        self.indexer = indexer
        self.judge = judge
        self.clock = clock
        self.steps = steps
        self.runs = 0
        # The schedule, kept here so `due` (asked after every extraction) reads no state file
        # but the small run-state counter: the extraction count at the last run (None: not
        # read yet) and when this daemon last ran one (None: not yet).
        self._last_extractions: int | None = None
        self._last_at: datetime | None = None

    def due(self, *, ending: bool = False) -> bool:
        """Whether to run now: after enough extractions, once the interval has passed; with
        ``ending`` (see :meth:`catch_up`), the interval waived, and after any extraction at
        all once this process ran one."""
        settings = self.cfg.consolidate
        if settings.every_extractions <= 0:
            return False
        if self._last_extractions is None:
            self._last_extractions = RunState.load(self.layout).extractions
        since = extraction_count(self.layout) - self._last_extractions
        if ending:
            return since >= settings.every_extractions or (self.runs > 0 and since > 0)
        if since < settings.every_extractions:
            return False
        interval = timedelta(minutes=settings.min_interval_minutes)
        return self._last_at is None or self.clock() - self._last_at >= interval

    def _ran(self) -> None:
        self._last_extractions = extraction_count(self.layout)
        self._last_at = self.clock()

    def __call__(self) -> None:
        self._run_if(self.due())

    def catch_up(self) -> None:
        """At the end of a one-shot read (``ingest``): consolidate what the read left
        unconsolidated, if enough extractions are due or this read already ran one. The
        interval keeps a burst from consolidating a changing folder over and over; once the
        burst is over, it would only leave part of what the burst wrote unconsolidated: a
        transcript read in two minutes was consolidated after its first 50 extractions and
        never again, so those facts alone were rated (by the wall clock: stale, a lower
        recall factor) while the later ones were not. A read too short to reach the count
        leaves its facts to the next run, all alike."""
        self._run_if(self.due(ending=True))

    def _run_if(self, due: bool) -> None:
        if not due:
            return
        try:
            self._run()
        finally:
            # A refused or failed run waits for the next due time too: retrying after every
            # extraction would re-read the whole folder each time for the same outcome.
            self._ran()

    def _run(self) -> None:
        if self.indexer is not None:
            self.indexer.flush()  # this batch's facts are in the index before we read it
        index = self.indexer.index if self.indexer is not None else None
        embedder = self.indexer.embedder if self.indexer is not None else None
        try:
            result = consolidate(
                self.cfg,
                self.layout,
                self.store,
                now=self.clock(),
                vectors=Vectors(index, embedder),
                indexer=self.indexer,
                judge=self.judge,
                steps=self.steps,
                graph=self.graph,
            )
        except RetireLimitError as exc:
            log.warning("consolidation skipped: %s", exc)
            # Count it as a run for the schedule, so a restarted daemon does not retry at once.
            save_refused(self.layout)
            return
        except (EngramError, OSError) as exc:
            log.warning("consolidation failed: %s", exc)
            return
        except Exception:  # a bug in a step must not stop the daemon's intake
            log.exception("consolidation failed; the daemon keeps running")
            return
        self.runs += 1
        log.info("consolidated: %d change(s) applied, report %s", result.applied, result.report)
