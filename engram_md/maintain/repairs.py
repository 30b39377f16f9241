"""Doctor's repairs: move the derived side towards the files, through each store's own methods.

:func:`fix` applies what one :class:`~engram_md.maintain.checks.Exam` calls for, on a
writer's opened parts: temp files and torn lines first, then links to facts no file holds
(boxes, traces, open boxes, the graph), facts put back in their box and linked into the
graph as the structure stage would have, the index reconciled with the folder, and the hash
index last.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..core.config import Config
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..index.opened import FolderParts
from ..ingest.journal import pending_count
from ..organize.boxes import BoxBuilder
from ..organize.boxfile import add_box_members, drop_from_boxes
from ..organize.graph import GraphStore
from ..organize.traces import TraceWeaver, update_traces
from .checks import Exam, hash_problems, read_folder

log = logging.getLogger(__name__)


def fix(parts: FolderParts, exam: Exam) -> list[str]:
    """Apply the repairs ``exam`` calls for; returns notes on what was held back."""
    cfg, layout = parts.cfg, parts.layout
    kinds = {p.kind for p in exam.problems}
    for path in exam.temp_files:
        path.unlink(missing_ok=True)
    for path in exam.torn:
        mend_torn(path)
    notes, rewrote = _fix_boxless(parts, exam)
    links_ok = exam.folder.unsalvaged == 0
    if exam.missing_ids and links_ok:
        _drop_links(cfg, layout, exam.missing_ids)
    rewrote = _list_in_boxes(cfg, layout, exam) or rewrote
    _fix_graph(cfg, layout, exam, exam.missing_ids if links_ok else set())
    if exam.dead_boxes:
        weaver = TraceWeaver(cfg.traces, layout.traces_path)
        weaver.remove_boxes(exam.dead_boxes)
        weaver.save()
    index_kinds = {k for k in kinds if k.startswith("index_")}
    if index_kinds or rewrote or (exam.missing_ids and links_ok):
        _reindex(parts)
    # The hash index last: the reconcile above adjusts entries of the files it touched.
    if hash_problems(layout, read_folder(parts.store)):
        parts.store.rebuild_hashes()
    return notes


def mend_torn(path: Path) -> None:
    """End a torn last line: kept (with its newline) if it is whole JSON, cut off if not."""
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    try:
        json.loads(data[cut:])
    except ValueError:
        with open(path, "r+b") as handle:
            handle.truncate(cut)
        return
    with open(path, "ab") as handle:
        handle.write(b"\n")


def _fix_boxless(parts: FolderParts, exam: Exam) -> tuple[list[str], bool]:
    """Clear the boxId of facts whose box does not exist; returns (notes, files rewritten)."""
    if not exam.boxless:
        return [], False
    layout = parts.layout
    if pending_count(layout.journal_path):
        # After a crash the daemon's replay joins such a fact to the box its boxId names
        # (engram_md.organize.structure.Structure.recover); clearing the id first would lose that.
        note = (
            "facts name boxes that do not exist yet, and the journal holds turns to "
            "replay: start the daemon once to recover them, then run doctor again"
        )
        return [note], False
    for rel in exam.boxless:
        fact = exam.folder.facts[rel]
        parts.store.rewrite(layout.memory_dir / rel, fact.with_changes(box_id=None))
    return [], True


def _drop_links(cfg: Config, layout: MemoryLayout, missing: set[str]) -> None:
    """Take facts no file holds out of the boxes, their traces and the open boxes (the graph
    is :func:`_fix_graph`'s)."""
    edits = drop_from_boxes(layout, missing)
    update_traces(cfg.traces, layout.traces_path, edits)
    BoxBuilder(cfg.boxes, layout.open_box_path).drop(missing, layout)


def _fix_graph(cfg: Config, layout: MemoryLayout, exam: Exam, missing: set[str]) -> None:
    """Drop nodes and edges of facts no file holds and edges to facts that are no node, then
    link the facts the pipeline would have linked, as ``Structure.recover`` does after a
    crash: in the order they were said, each as the latest fact of its session."""
    # Edges of an unreadable fact stay, as everything derived from it does until it is fixed.
    drop = missing | (exam.loose_ends - exam.folder.salvaged)
    if not layout.graphs_dir.is_dir() or not (drop or exam.unlinked):
        return
    graph = GraphStore(layout.graphs_dir, cfg.graph)
    if drop:
        # A loose end has no node, so removing it as a node drops exactly its edges.
        graph.remove_nodes(drop)
    facts = sorted(
        (exam.folder.facts[rel] for rel in exam.unlinked), key=lambda f: (f.created, f.id)
    )
    for fact in facts:
        if not graph.has_node(fact.id):
            graph.link(fact)


def _list_in_boxes(cfg: Config, layout: MemoryLayout, exam: Exam) -> bool:
    """Put each fact back in the box its boxId names, as an uninterrupted run would have:
    an open box takes it the way ``Structure.recover`` restores a member, a sealed box is
    written again with it. Returns whether a box file was rewritten."""
    if not exam.unlisted:
        return False
    builder = BoxBuilder(cfg.boxes, layout.open_box_path)
    sealed: dict[str, list[tuple[str, Fact]]] = {}
    for rel in exam.unlisted:
        fact = exam.folder.facts[rel]
        box = builder.open_box(fact.session)
        if box is not None and box.id == fact.box_id:
            builder.join(fact, rel)
        elif fact.box_id is not None:
            sealed.setdefault(fact.box_id, []).append((rel, fact))
    paths = {path.stem: path for path in exam.box_paths()}
    edits = [
        add_box_members(layout, paths[box_id], joining)
        for box_id, joining in sealed.items()
        if box_id in paths
    ]
    update_traces(cfg.traces, layout.traces_path, edits)
    return bool(edits)


def _reindex(parts: FolderParts) -> None:
    if parts.indexer is None:
        raise ValueError("a repair needs a writer's parts with the index open")
    report = parts.indexer.reconcile(full=True)
    for problem in report.broken:
        log.info("not indexed: %s", problem)
