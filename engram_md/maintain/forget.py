"""`engram-md forget`: remove a memory everywhere, and leave a tombstone without its content.

A fact lives in more places than its file: the index row (and its vector, in older table
versions too), the exact-dedup hash index, the graph (nodes and edges), its box (the box file
lists and summarizes it; the open box in ``state/open-box.json`` holds its statement), the
trace the box is in, the recall access counts, the embedding cache (keyed by the statement's
text), the journal (the turns it came from), the derived pages (entity pages, ``profile.md``),
``state/topics.json`` and ``state/consolidation.json`` (its id), and text that may quote it:
telemetry reasons and discard previews, consolidation reports, other facts' ``statusHistory``.
Consolidation keeps the facts it merged into or replaced by this one as retired files with
their own text: that lineage is forgotten with it (:mod:`engram_md.maintain.targets`).

This module only finds the targets and asks each store, in turn, to drop them: every file
format is its store's own business. Before the first change it checks that every folder it
may write can be written (a read-only mount changes nothing and names the folder). Then, in
this order:

1. The embedding cache entries of the statement; the journal: the fact's pending source
   turns are marked done (a restart would extract them again and bring the fact back), then
   the journal is compacted so done turns' text leaves the disk.
2. Quotes of the statement (:class:`~engram_md.maintain.quotes.Quotes`) in the telemetry, the
   reports, the compression guidelines and other facts' ``statusHistory``; the id in
   ``topics.json`` and ``consolidation.json``.
3. The index row and the hash entry, the graph, the boxes (a box file rewritten without it,
   an emptied one deleted together with its trace entry), the open box, the box rows; the
   lines of its source turns in ``memory/said/`` and their sentence rows (recall would show
   the words again otherwise); then every older table version (``purge_history``).
4. The access counts, the derived pages.
5. A tombstone per fact (:mod:`engram_md.maintain.tombstones`), then the fact files, then a
   ``forget`` telemetry action each.

Every step is idempotent, so a forget stopped anywhere (a full disk, a kill) is finished by
running it again. Until the tombstone the fact file is there: a forget stopped before it
leaves a memory that is still whole in the folder (the next reconcile gives it its index row
back) and nothing on record as forgotten. From the tombstone on only file deletions remain,
which need no space and were checked to be allowed; once a file is gone its tombstone stands
in for it, so ``forget ID`` (or ``doctor --repair``) finishes the job. Only a kill in the
moment between the tombstone and the deletions leaves a tombstoned file the next reconcile
indexes again; doctor reports it (``forget_unfinished``) and its repair finishes the forget.

The tombstone lives in ``state/`` (machine-local), not ``memory/``: the folder's git history
already records the deletion of the file, and a tombstone there would only add a second file
per forgotten memory to review. The content itself stays in git history until that history
is rewritten; :func:`git_note` says so when the folder is in a repository.

Forgetting is a write: it runs on a writer's opened parts (the composition root takes the
lock, which the daemon holds while it runs: it keeps the open box, the graph and the hash
index in memory and would write them back). A reconcile or ``reindex`` cannot bring the fact
back: the index follows the files, and the file is gone. The same statement said again
later, in a new turn, is a new memory.

A person names what to forget by id, path or file name (:func:`named`), or searches for it
(:func:`search`): a query's matches are scored on an absolute scale and only those above a
floor qualify (:mod:`engram_md.maintain.matches`).
"""

from __future__ import annotations

import getpass
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..consolidate.planner import load_facts
from ..consolidate.report import scrub_reports
from ..consolidate.run_state import drop_facts
from ..core.config import Config
from ..core.crashpoints import crashpoint
from ..core.errors import EngramError
from ..core.models import Fact, Turn
from ..core.paths import MemoryLayout
from ..core.telemetry import ActionLog
from ..core.writable import check_writable, folders
from ..index.boxindex import box_text, sync_boxes
from ..index.factrows import FACT_KIND
from ..index.indexer import Indexer
from ..index.opened import FolderParts
from ..index.saidindex import SAID_KIND, sync_said
from ..ingest.journal import compact_journal
from ..organize.boxes import BoxBuilder
from ..organize.boxfile import BoxEdit, boxes_listing, drop_from_boxes
from ..organize.graph import GraphStore
from ..organize.traces import update_traces
from ..recall.recaller import Recaller
from ..recall.wire import RecallOptions
from ..store import read_cache
from ..store.access import AccessLog
from ..store.fact_store import MemoryStore
from ..store.said import SaidLog
from ..text.embeddings import CachedEmbedder, Embedder
from .derived import refresh_derived, refresh_topics
from .matches import MIN_SCORE, Match, Search, match_score
from .quotes import Quotes
from .targets import Target, find_targets, resolve, source_turns, survivor_notes
from .tombstones import read_tombstones, write_tombstones

# The crash loop's kill point between forget's steps (see crashpoints.py).
CRASH_POINT = "forget.step"


@dataclass(frozen=True)
class Forgotten:
    """What forgetting one fact touched (or would touch, in a dry run)."""

    id: str
    path: str
    lineage_of: str | None = None
    file_removed: bool = False
    index_row: bool = False
    hash_entry: bool = False
    graph_edges: int = 0
    graph_node: bool = False
    boxes_rewritten: tuple[str, ...] = ()
    boxes_removed: tuple[str, ...] = ()
    open_box: str | None = None
    access_records: int = 0
    pending_turns: int = 0  # journaled turns it came from that were still to be extracted

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "lineageOf": self.lineage_of,
            "fileRemoved": self.file_removed,
            "indexRow": self.index_row,
            "hashEntry": self.hash_entry,
            "graphEdges": self.graph_edges,
            "graphNode": self.graph_node,
            "boxesRewritten": list(self.boxes_rewritten),
            "boxesRemoved": list(self.boxes_removed),
            "openBox": self.open_box,
            "accessRecords": self.access_records,
            "pendingTurns": self.pending_turns,
        }


@dataclass(frozen=True)
class ForgetReport:
    forgotten: tuple[Forgotten, ...]
    missing: tuple[str, ...]  # ids with neither a fact file nor a tombstone
    dry_run: bool
    notes: tuple[str, ...] = ()
    derived: tuple[str, ...] = field(default=())  # memory files rewritten or removed
    scrubbed: tuple[str, ...] = field(default=())  # state files, relative to the state folder

    def to_json(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "forgotten": [f.to_json() for f in self.forgotten],
            "missing": list(self.missing),
            "derived": list(self.derived),
            "scrubbed": list(self.scrubbed),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------- finding the facts


def named(store: MemoryStore, text: str) -> str | None:
    """The id of the memory ``text`` names (an id, a file's path or name), or of a forget to
    finish (a tombstone's); None when it names none."""
    return resolve(store, text, read_tombstones(store.layout))


def _find(store: MemoryStore, ids: Sequence[str]) -> tuple[list[Target], list[str]]:
    stones = {stone.id: stone for stone in read_tombstones(store.layout)}
    return find_targets(store, ids, stones)


def search(
    recaller: Recaller, query: str, *, limit: int = 5, min_score: float = MIN_SCORE
) -> Search:
    """The facts (any status) that match ``query`` at ``min_score`` or better, best first,
    at most ``limit``. Counts no access.

    Every candidate recall weighed is scored (explain), not only those it would show: a
    near-duplicate it leaves out of a prompt is still a copy to forget.
    """
    result = recaller.recall(
        query,
        RecallOptions(top_k=limit, include_inactive=True, explain=True, record_access=False),
    )
    scored = sorted(
        (
            (match_score(query, c.row.content, c.parts.cosine), c.row)
            for c in result.candidates
            if c.row.kind == FACT_KIND
        ),
        key=lambda item: (-item[0], item[1].id),
    )
    matches = tuple(
        Match(row.id, row.path, row.category, row.content, score)
        for score, row in scored
        if score >= min_score
    )
    return Search(matches[:limit], scored[0][0] if scored else 0.0)


# ---------------------------------------------------------------- forgetting


def default_by() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def forget(
    parts: FolderParts,
    ids: Sequence[str],
    *,
    reason: str = "",
    by: str | None = None,
    dry_run: bool = False,
) -> ForgetReport:
    """Forget the facts with these ids, and their lineage, everywhere (see the module
    docstring for the order). ``parts``: a writer's, with the index open; a dry run only
    reads, and any parts do.

    Ids with neither a file nor a tombstone are returned as ``missing``; nothing else is
    refused. A folder it cannot write raises :class:`OSError` before anything changed; a
    failure part-way raises :class:`EngramError`: running it again finishes it.
    """
    if dry_run:
        return plan_forget(parts, ids)
    if not parts.writer or parts.indexer is None:
        raise ValueError("forget writes: it needs a writer's parts with the index open")
    targets, missing = _find(parts.store, ids)
    if not targets:
        return ForgetReport((), tuple(missing), False)
    check_writable(_written(parts.layout))
    try:
        report = _forget_targets(
            parts, parts.indexer, targets, reason=reason, by=by or default_by()
        )
        return replace(report, missing=tuple(missing))
    except OSError as exc:
        raise EngramError(f"forget failed part-way ({exc}); run it again to finish") from exc


def _forget_targets(
    parts: FolderParts, indexer: Indexer, targets: Sequence[Target], *, reason: str, by: str
) -> ForgetReport:
    layout = parts.layout
    gone = {t.id for t in targets}
    quotes = Quotes(t.fact.content for t in targets if t.fact is not None)
    why = quotes.scrub(reason)  # a reason may repeat what is being forgotten
    notes = survivor_notes(parts.store, targets)
    _scrub_cache(parts.embedder, [t.fact.content for t in targets if t.fact is not None])
    pending = compact_journal(layout.journal_path, source_turns(targets))
    crashpoint(CRASH_POINT)
    scrubbed = _scrub_state(layout, targets, quotes)
    facts, rewritten = _facts_left(parts.store, gone, quotes)
    if refresh_topics(layout, facts, gone):
        scrubbed.append(layout.topics_path)
    crashpoint(CRASH_POINT)
    removal = _unindex(parts, indexer, targets, rewritten)
    crashpoint(CRASH_POINT)
    access_log = AccessLog(layout.access_path)
    access, _ = access_log.read_counts()
    access_log.drop_ids(gone)
    derived = refresh_derived(parts.cfg, layout, targets, facts)
    derived += [layout.relative(path) for path, _ in rewritten]
    derived += [layout.relative(path) for path in removal.said]
    crashpoint(CRASH_POINT)
    write_tombstones(layout, targets, reason=why, by=by, at=datetime.now(UTC))
    crashpoint(CRASH_POINT)
    removed = _remove_files(layout, targets)
    _record(layout, targets, reason=why, by=by)
    out = [_outcome(t, removal, access, pending, removed) for t in targets]
    notes += [n for n in [git_note(layout)] if n]
    return ForgetReport(
        tuple(out),
        (),
        False,
        tuple(notes),
        tuple(sorted(set(derived))),
        tuple(sorted({p.relative_to(layout.state_dir).as_posix() for p in scrubbed})),
    )


def _written(layout: MemoryLayout) -> list[Path]:
    """Everything a forget may write: every folder of the memory folder and of the state
    (files there are replaced through a temp file in their folder), and the state files
    appended to or rewritten in place; the index's own files are only ever added."""
    index = layout.index_dir
    state_files = [
        path
        for folder in folders(layout.state_dir)
        if folder != index and index not in folder.parents
        for path in sorted(folder.iterdir())
        if path.is_file()
    ]
    return [*folders(layout.memory_dir), *folders(layout.state_dir), *state_files]


def _scrub_cache(embedder: Embedder | None, texts: Iterable[str]) -> None:
    """Only a cached embedder keeps vectors on disk, keyed by their text."""
    if isinstance(embedder, CachedEmbedder):
        embedder.scrub(texts)


def _scrub_state(layout: MemoryLayout, targets: Sequence[Target], quotes: Quotes) -> list[Path]:
    """Step 3 in ``state/``: quotes in the texts and the telemetry, the ids in the
    consolidation state. Returns the files changed."""
    gone = {t.id for t in targets}
    scrubbed = scrub_reports(layout, quotes.scrub) if quotes else []
    actions = ActionLog(layout.actions_path)
    if actions.scrub(quotes.scrub, ids=gone, turns=source_turns(targets)):
        scrubbed.append(layout.actions_path)
    if drop_facts(layout, gone):
        scrubbed.append(layout.consolidation_state_path)
    # The read cache names the forgotten facts' entities and tags: the next run rebuilds it.
    if read_cache.discard(layout.state_dir):
        scrubbed.append(layout.state_dir / read_cache.FILE_NAME)
    return scrubbed


def _facts_left(
    store: MemoryStore, gone: set[str], quotes: Quotes
) -> tuple[list[tuple[Path, Fact]], list[tuple[Path, Fact]]]:
    """The facts that stay, read once, with quotes scrubbed from their ``statusHistory``; and
    the ones that scrub rewrote."""
    left = [(path, fact) for path, fact in load_facts(store).facts if fact.id not in gone]
    rewritten = scrub_history(store, left, quotes) if quotes else []
    fresh = dict(rewritten)
    return [(path, fresh.get(path, fact)) for path, fact in left], rewritten


def scrub_history(
    store: MemoryStore, facts: Sequence[tuple[Path, Fact]], quotes: Quotes
) -> list[tuple[Path, Fact]]:
    """Scrub quotes from the ``statusHistory`` reasons of ``facts`` (a judge's reason for a
    merge or a correction may repeat the other fact); returns the facts rewritten."""
    rewritten: list[tuple[Path, Fact]] = []
    for path, fact in facts:
        history = tuple(replace(h, reason=quotes.scrub(h.reason)) for h in fact.status_history)
        if history != fact.status_history:
            fact = fact.with_changes(status_history=history)
            store.rewrite(path, fact)
            rewritten.append((path, fact))
    return rewritten


@dataclass(frozen=True)
class _Removal:
    """What step 4 found and removed."""

    rows: set[str]  # ids that had an index row
    hashed: set[str]  # ids whose file had a hash entry
    edges: dict[str, int]
    nodes: set[str]
    edits: list[BoxEdit]
    open_hits: dict[str, str]
    said: list[Path]  # said files rewritten without the facts' source turns


def _unindex(
    parts: FolderParts,
    indexer: Indexer,
    targets: Sequence[Target],
    rewritten: Sequence[tuple[Path, Fact]],
) -> _Removal:
    """Step 4: the index, the hashes, the graph and the boxes, all by id (and path)."""
    cfg, layout, store = parts.cfg, parts.layout, parts.store
    gone = {t.id for t in targets}
    paths = {t.path for t in targets}
    hashed = {t.id for t in targets if t.path in {rel for _, rel in store.hashes.items()}}
    for path, fact in rewritten:
        indexer.upsert_fact(path, fact, new=False)  # their rows follow the new mtimes
    rows = set(indexer.index.get(sorted(gone)))
    # Drops the rows; a hash entry moves to another file with the same statement, if any,
    # as at any deletion. Entries are matched by path: a resumed target has no statement.
    indexer.remove(sorted(gone))
    for digest, rel in store.hashes.items():
        if rel in paths:
            store.hashes.remove(digest)
    edges, nodes = _drop_from_graph(cfg, layout, gone)
    # The boxes' searchable text quotes their members: its cached vector goes first.
    _scrub_cache(parts.embedder, [box_text(box) for box in boxes_listing(layout, gone)])
    edits = drop_from_boxes(layout, gone)
    update_traces(cfg.traces, layout.traces_path, edits)
    open_hits = BoxBuilder(cfg.boxes, layout.open_box_path).drop(gone, layout)
    sync_boxes(indexer.index, layout)
    said = _unsay(parts, indexer, targets)
    # The published centroid (the offline extractor's novelty reference) is a sum of
    # every stored vector: publish it again without the forgotten ones.
    indexer.batch_done()
    indexer.index.purge_history()
    return _Removal(rows, hashed, edges, nodes, edits, open_hits, said)


def _unsay(parts: FolderParts, indexer: Indexer, targets: Sequence[Target]) -> list[Path]:
    """The lines of the facts' source turns leave the said files, and their sentence rows
    the index. Every said row is synced, not only those of the files changed now: a forget
    stopped after the files and before the index finds nothing left to take out of the
    files when run again. Returns the said files rewritten."""
    sources = source_turns(targets)
    if not sources:
        return []
    by_session: dict[str, list[str]] = {}
    for session, turn in sorted(sources):
        by_session.setdefault(session, []).append(turn)
    log = SaidLog(parts.layout)
    changed = [
        path for session, turns in by_session.items() for path in log.remove_turns(session, turns)
    ]
    # Their sentences' vectors are cached under their text, like a statement's.
    stored = indexer.index.columns_of_kind(SAID_KIND, ["content", "session", "source_turn_ids"])
    said = [
        content
        for content, session, turns in zip(
            stored["content"], stored["session"], stored["source_turn_ids"], strict=True
        )
        if any((session, turn) in sources for turn in turns)
    ]
    _scrub_cache(parts.embedder, said)
    sync_said(indexer.index, parts.layout)
    return changed


def _drop_from_graph(
    cfg: Config, layout: MemoryLayout, gone: set[str]
) -> tuple[dict[str, int], set[str]]:
    """Remove the facts' nodes and edges; returns edges per id and the ids that had a node."""
    if not layout.graphs_dir.is_dir():
        return {}, set()
    graph = GraphStore(layout.graphs_dir, cfg.graph)
    edges = {fact_id: len(graph.edges_of(fact_id)) for fact_id in gone}
    nodes = {fact_id for fact_id in gone if graph.has_node(fact_id)}
    graph.remove_nodes(gone)
    return edges, nodes


def _remove_files(layout: MemoryLayout, targets: Sequence[Target]) -> set[str]:
    """Step 6: the fact files, the asked-for ones before their lineage (see
    :func:`engram_md.maintain.targets.find_targets`). Returns the paths removed."""
    removed: set[str] = set()
    for t in targets:
        path = layout.memory_dir / t.path
        if t.fact is not None and path.exists():
            layout.inside(path).unlink()
            removed.add(t.path)
            crashpoint(CRASH_POINT)
    return removed


def _record(layout: MemoryLayout, targets: Sequence[Target], *, reason: str, by: str) -> None:
    actions = ActionLog(layout.actions_path)
    for t in targets:
        actions.record(
            "forget",
            "applied",
            reason or "forgotten_on_request",
            memory_id=t.id,
            path=t.path,
            by=by,
            lineageOf=t.lineage_of,
        )


def _outcome(
    t: Target,
    removal: _Removal,
    access: Counter[str],
    pending: Sequence[Turn],
    removed: set[str],
) -> Forgotten:
    edits = [e for e in removal.edits if t.id in e.removed]
    sources = source_turns([t])
    return Forgotten(
        id=t.id,
        path=t.path,
        lineage_of=t.lineage_of,
        file_removed=t.path in removed,
        index_row=t.id in removal.rows,
        hash_entry=t.id in removal.hashed,
        graph_edges=removal.edges.get(t.id, 0),
        graph_node=t.id in removal.nodes,
        boxes_rewritten=tuple(e.box_id for e in edits if not e.deleted),
        boxes_removed=tuple(e.box_id for e in edits if e.deleted),
        open_box=removal.open_hits.get(t.id),
        access_records=access.get(t.id, 0),
        pending_turns=sum((turn.session, turn.id) in sources for turn in pending),
    )


def git_note(layout: MemoryLayout) -> str | None:
    """A reminder when the memory folder is in a git repository: history keeps old files."""
    folder = layout.memory_dir.resolve()
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            return (
                f"{parent} is a git repository: the forgotten file's content stays in its "
                "history until that history is rewritten"
            )
    return None


# ---------------------------------------------------------------- the dry run


def plan_forget(parts: FolderParts, ids: Sequence[str]) -> ForgetReport:
    """What forgetting ``ids`` would touch. Read-only: needs no lock, writes nothing."""
    cfg, layout = parts.cfg, parts.layout
    targets, missing = _find(parts.store, ids)
    gone = {t.id for t in targets}
    graph = GraphStore.load(layout.graphs_dir, cfg.graph) if layout.graphs_dir.is_dir() else None
    hashed = {rel for _, rel in parts.store.hashes.items()}
    open_hits = {
        member.id: box.id
        for box in BoxBuilder(cfg.boxes, layout.open_box_path).open_boxes()
        for member in box.members
    }
    rewritten: dict[str, list[str]] = {}
    emptied: dict[str, list[str]] = {}
    for box in boxes_listing(layout, gone):
        into = emptied if set(box.memory_ids) <= gone else rewritten
        for member in box.memory_ids:
            if member in gone:
                into.setdefault(member, []).append(box.id)
    access, _ = AccessLog(layout.access_path).read_counts()
    out = [
        Forgotten(
            id=t.id,
            path=t.path,
            lineage_of=t.lineage_of,
            file_removed=t.fact is not None,
            index_row=False,  # the index is not opened by a dry run
            hash_entry=t.path in hashed,
            graph_edges=len(graph.edges_of(t.id)) if graph is not None else 0,
            graph_node=graph.has_node(t.id) if graph is not None else False,
            boxes_rewritten=tuple(rewritten.get(t.id, ())),
            boxes_removed=tuple(emptied.get(t.id, ())),
            open_box=open_hits.get(t.id),
            access_records=access.get(t.id, 0),
        )
        for t in targets
    ]
    notes = survivor_notes(parts.store, targets)
    return ForgetReport(tuple(out), tuple(missing), True, tuple(notes))
