"""The structure stage: boxes, traces and graph edges for each fact the pipeline writes.

The pipeline calls, in this order for a new fact:

1. :meth:`Structure.prepare` — before the fact file is written: seals the session's open box
   if the fact does not belong to it (writing the box file and weaving its trace), and returns
   the fact with its ``boxId``. The id goes into the fact file at creation, so membership never
   needs a second write of the fact.
2. :meth:`Structure.add` — after the write: the fact joins the open box (``open-box.json``)
   and its graph edges are observed.

For a fact found again by dedup it calls :meth:`confirm` (a re-statement: graph edges are
re-observed) or :meth:`recover` (a replay of turns already processed). ``recover`` is the
crash path: after a kill -9 between writing a fact and saving ``open-box.json`` (or the graph),
the journal re-extracts the same turns, dedup finds the fact, and ``recover`` restores the
membership its ``boxId`` already names, and its edges. Box ids derive from the first fact of a
box, so the replay reaches the same decision as the run that crashed.

:meth:`end_input` (a flush: end of input, SIGTERM) seals every open box;
:meth:`end_session` seals one session's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from ..core.config import Config
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..core.telemetry import ACTIONS, ActionLog
from ..text.embeddings import Embedder
from .boxes import Box, BoxBuilder, Seal, SealReason, Summarizer
from .boxfile import box_path, write_box
from .graph import GraphStore
from .traces import TraceBox, TraceWeaver

log = logging.getLogger(__name__)

# Sealing a box writes a summary node of its facts; telemetry names it so until a dedicated
# "seal_box" action joins the taxonomy.
SEAL_ACTION = "seal_box" if "seal_box" in ACTIONS else "summarize_node"
LINK_ACTION = "link_graph"


class Structure:
    def __init__(
        self,
        cfg: Config,
        layout: MemoryLayout,
        actions: ActionLog | None = None,
        *,
        summarizer: Summarizer | None = None,
        on_seal: Callable[[Path, Box], None] | None = None,
        fsync: bool = True,
        embedder: Embedder | None = None,
    ) -> None:
        self.layout = layout
        self.actions = actions
        self.summarizer = summarizer or Summarizer()
        self.on_seal = on_seal  # e.g. the index, to make the box searchable
        self.fsync = fsync
        self.boxes: BoxBuilder | None = None
        self.traces: TraceWeaver | None = None
        self.graph: GraphStore | None = None
        if cfg.boxes.enabled:
            # The embedder tells a box's subject from a digression (organize/boxes.py).
            self.boxes = BoxBuilder(cfg.boxes, layout.open_box_path, embedder=embedder)
            self.traces = TraceWeaver(cfg.traces, layout.traces_path)
        if cfg.graph.enabled:
            self.graph = GraphStore(layout.graphs_dir, cfg.graph)
            self.graph.ensure_files()
        self.sealed: list[Box] = []  # boxes sealed since this object was made

    # ------------------------------------------------------------ new facts
    def prepare(self, fact: Fact) -> Fact:
        """Before writing a new fact: seal what it ends, and give it its box id
        (:meth:`BoxBuilder.target_id`), so the fact file names its box when it is created."""
        if self.boxes is None:
            return fact
        seal = self.boxes.check(fact)
        if seal is not None:
            self._seal(seal)
        return fact.with_changes(box_id=self.boxes.target_id(fact))

    def add(self, path: Path, fact: Fact) -> None:
        """After writing a new fact: it joins its box and gets its graph edges."""
        if self.boxes is not None and fact.box_id is not None:
            self.boxes.join(fact, self.layout.relative(path))
        self._link(fact)

    # ------------------------------------------------------------ facts seen again
    def confirm(self, path: Path, fact: Fact, at: datetime) -> None:
        """A stored fact was said again at transcript time ``at``: re-observe its edges."""
        del path  # the fact keeps its box: a box is where a fact was first said
        if self.boxes is not None and fact.box_id is not None:
            box = self.boxes.open_box(fact.session)
            if box is not None and box.id == fact.box_id:
                self.boxes.touch(fact.session, at)
        self._link(fact, at)

    def recover(self, path: Path, fact: Fact) -> None:
        """A replay met a fact these same turns already wrote: restore what a crash lost."""
        if self.boxes is not None and self.traces is not None and fact.box_id is not None:
            box = self.boxes.open_box(fact.session)
            member = box is not None and box.has(fact.id)
            if not member and self.traces.trace_of(fact.box_id) is None:
                seal = self.boxes.check(fact)
                if seal is not None and seal.box.id != fact.box_id:
                    self._seal(seal)
                if self.boxes.target_id(fact) == fact.box_id:
                    self.boxes.join(fact, self.layout.relative(path))
                    log.info("restored %s in %s after an interrupted run", fact.id, fact.box_id)
                else:
                    log.warning("%s names box %s, which is gone", fact.id, fact.box_id)
        if self.graph is not None and not self.graph.has_node(fact.id):
            self._link(fact)

    # ------------------------------------------------------------ ends
    def end_session(self, session: str, at: datetime | None = None) -> list[Box]:
        """Seal the open box of ``session`` (at its last activity unless ``at`` is given)."""
        if self.boxes is None:
            return []
        seals = self.boxes.seals_at_end(SealReason.END_OF_SESSION, session)
        return [self._seal(replace(s, at=at) if at is not None else s) for s in seals]

    def end_input(self) -> list[Box]:
        """Seal every open box: the input ended (or the daemon is stopping)."""
        if self.boxes is None:
            return []
        return [self._seal(s) for s in self.boxes.seals_at_end(SealReason.END_OF_INPUT)]

    # ------------------------------------------------------------ internals
    def _seal(self, seal: Seal) -> Box:
        assert self.boxes is not None and self.traces is not None
        open_box = seal.box
        said = self.summarizer.summarize(open_box.members)
        box = Box(
            id=open_box.id,
            session=open_box.session,
            created_at=open_box.created_at,
            sealed_at=max(seal.at, open_box.last_activity),
            seal_reason=seal.reason.value,
            topics=seal.topics,
            memory_ids=tuple(m.id for m in open_box.members),
            trace_id=None,
            goal=said.goal,
            outcome=said.outcome,
            summary=said.summary,
            members=open_box.members,
        )
        rel = self.layout.relative(box_path(self.layout, box))
        trace_id = self.traces.weave(
            TraceBox(
                id=box.id,
                path=rel,
                session=box.session,
                created_at=box.created_at,
                sealed_at=box.sealed_at,
                topics=box.topics,
                memories=len(box.memory_ids),
            )
        )
        box = replace(box, trace_id=trace_id)
        # Order matters for a crash: box file, then traces.json, then open-box.json. Each
        # step is idempotent, so a replay that redoes the seal writes the same bytes.
        path, _ = write_box(self.layout, box, fsync=self.fsync)
        self.traces.save()
        self.boxes.close(box.id)
        self.sealed.append(box)
        if self.actions is not None:
            self.actions.record(
                SEAL_ACTION,
                "applied",
                f"seal_box_{box.seal_reason}",
                path=rel,
                session=box.session,
                memories=len(box.memory_ids),
                **{"boxId": box.id, "traceId": trace_id},
            )
        if self.on_seal is not None:
            self.on_seal(path, box)
        return box

    def _link(self, fact: Fact, at: datetime | None = None) -> None:
        if self.graph is None:
            return
        edges = self.graph.link(fact, at)
        if edges and self.actions is not None:
            counts = {kind: sum(1 for e in edges if e.kind == kind) for kind in ("entity", "time")}
            counts["causal"] = sum(1 for e in edges if e.kind == "causal")
            self.actions.record(
                LINK_ACTION,
                "applied",
                "edges_observed",
                memory_id=fact.id,
                session=fact.session,
                **{f"{kind}Edges": n for kind, n in counts.items() if n},
            )
