"""Doctor's checks: what the folder holds, and every way the derived side disagrees with it.

One :class:`Exam` reads the fact files once and compares the index, the hash index, the
graph, the boxes, the traces, the tombstones and the jsonl files in ``state/`` with them. It
only reads, through each store's own reader, and keeps what a repair needs besides the
problems (which temp files, which facts lack their box, ...). The kinds are listed in
:mod:`engram_md.maintain.doctor`.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, replace
from pathlib import Path

import regex

from ..core.atomic import TMP_MARKER, is_temp_file
from ..core.errors import MemoryFileError
from ..core.lock import pid_alive
from ..core.models import Fact, Source, Status
from ..core.paths import MemoryLayout
from ..index.boxindex import box_row
from ..index.factrows import fact_row
from ..index.lance import (
    TABLE_NAME,
    UNOPENABLE_TABLE,
    connect,
    layout_mismatch,
    search_indices_lacking,
)
from ..index.opened import FolderParts
from ..index.rows import IndexRow
from ..index.storage import index_location
from ..organize.boxes import BoxBuilder
from ..organize.boxfile import box_files, read_box
from ..organize.graph import GraphStore
from ..organize.traces import load_traces
from ..store.dedup import HashIndex
from ..store.fact_store import MemoryStore, folder_order
from ..store.factfile import read_fact
from .problems import Problem
from .tombstones import TOMBSTONES, read_tombstones

# The id line of a fact file whose frontmatter cannot be parsed: links to it are kept while
# its id can still be read.
_ID_LINE = regex.compile(r"^id:\s*['\"]?(?P<id>[^\s'\"#]+)", regex.MULTILINE)


# ---------------------------------------------------------------- what the folder holds


@dataclass
class Folder:
    facts: dict[str, Fact]  # rel -> fact, readable files only
    mtimes: dict[str, int]
    unreadable: dict[str, str]  # rel -> reason
    salvaged: set[str]  # ids read out of unreadable files
    unsalvaged: int  # unreadable files no id could be read from

    @property
    def known_ids(self) -> set[str]:
        return {f.id for f in self.facts.values()} | self.salvaged

    def holders(self) -> dict[str, list[str]]:
        """id -> files holding it, in folder order (the first is the one indexed)."""
        out: dict[str, list[str]] = {}
        for rel in sorted(self.facts, key=folder_order):
            out.setdefault(self.facts[rel].id, []).append(rel)
        return out


def read_folder(store: MemoryStore) -> Folder:
    """Every fact file: the readable ones, and what can be read out of the others."""
    layout = store.layout
    folder = Folder({}, {}, {}, set(), 0)
    for path in store.fact_paths():
        rel = layout.relative(path)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            continue
        try:
            folder.facts[rel] = read_fact(path)
            folder.mtimes[rel] = mtime
        except MemoryFileError as exc:
            folder.unreadable[rel] = exc.reason
            try:
                head = path.read_bytes()[:4096].decode("utf-8", "replace")
            except OSError:
                head = ""
            match = _ID_LINE.search(head)
            if match:
                folder.salvaged.add(match["id"])
            else:
                folder.unsalvaged += 1
    return folder


def writer_active(layout: MemoryLayout) -> bool:
    """Whether another process holds the writer lock (probed with a shared, non-blocking
    flock that is let go at once; nothing is written)."""
    try:
        fd = os.open(layout.lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we got
    return False


# ---------------------------------------------------------------- the checks


class Exam:
    """One examination of the folder: the problems, and what a repair needs to fix them."""

    def __init__(self, parts: FolderParts) -> None:
        if parts.embedder is None:
            raise ValueError("doctor needs parts opened with an embedder")
        self.parts = parts
        self.cfg = parts.cfg
        self.layout = parts.layout
        self.embedder = parts.embedder
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.folder = read_folder(parts.store)
        self.temp_files: list[Path] = []
        self.torn: list[Path] = []
        self.missing_ids: set[str] = set()  # ids named by the graph or boxes, held by no file
        self.dead_boxes: set[str] = set()  # box ids in traces.json without a file
        self.boxless: list[str] = []  # rel of facts whose boxId names nothing
        self.unlisted: list[str] = []  # rel of facts whose box does not list them
        self.unlinked: list[str] = []  # rel of facts the graph should hold and does not
        self.loose_ends: set[str] = set()  # edge ends that are no graph node
        self.unfinished: list[str] = []  # ids of interrupted forgets
        # What each derived place holds, for the forget check.
        self.row_ids: set[str] = set()
        self.node_ids: set[str] = set()
        self.listed_ids: set[str] = set()
        self.unreadable_boxes: set[str] = set()  # file stems: the id such a box would have
        self.tombstoned = {stone.id for stone in read_tombstones(self.layout)}

    def add(self, kind: str, subject: str, detail: str) -> None:
        self.problems.append(Problem(kind, subject, detail))

    def label(self, path: Path) -> str:
        for name, root in (("memory", self.layout.memory_dir), ("state", self.layout.state_dir)):
            try:
                return f"{name}/{path.relative_to(root).as_posix()}"
            except ValueError:
                continue
        return str(path)

    def run(self, *, writer_active: bool) -> None:
        self.check_temp_files(writer_active)
        self.check_facts()
        self.check_index()
        self.check_hashes()
        self.check_graph()
        self.check_boxes()
        self.check_forgets()
        self.check_torn()

    # ------------------------------------------------------------ files
    def check_temp_files(self, writer_active: bool) -> None:
        index_dir = self.layout.index_dir.resolve()
        for root in (self.layout.memory_dir, self.layout.state_dir):
            if not root.is_dir():
                continue
            for path in sorted(root.rglob(f".*{TMP_MARKER}*")):
                if not is_temp_file(path) or not path.is_file():
                    continue
                if index_dir in path.resolve().parents:
                    continue  # LanceDB's own files
                pid_text = path.name.rsplit(TMP_MARKER, 1)[1]
                pid = int(pid_text) if pid_text.isdigit() else None
                if pid == os.getpid():
                    continue
                if writer_active and pid is not None and pid_alive(pid):
                    continue  # a write in flight
                self.temp_files.append(path)
                who = f"pid {pid}, not running" if pid is not None else "no writer"
                self.add("temp_file", self.label(path), f"left by an interrupted write ({who})")

    def check_facts(self) -> None:
        for rel, reason in sorted(self.folder.unreadable.items()):
            self.add("unreadable_fact", rel, f"{reason} (fix it by hand; doctor never edits it)")
        for fact_id, rels in sorted(self.folder.holders().items()):
            if len(rels) > 1:
                self.add(
                    "duplicate_id",
                    fact_id,
                    f"held by {', '.join(rels)}; only {rels[0]} is searchable",
                )
        if self.folder.unsalvaged:
            self.notes.append(
                f"{self.folder.unsalvaged} unreadable fact file(s) have no readable id: links "
                "to facts no file holds are reported but not removed until they are fixed"
            )

    # ------------------------------------------------------------ index
    def check_index(self) -> None:
        facts = self.folder.facts
        location = index_location(self.parts.cfg.index, self.layout.index_dir)
        where = location.local_dir
        if where is not None and not where.is_dir():
            if facts or self.box_paths():
                self.add("index_missing", self.label(where), "there is no search index")
            return
        # An index in an object store is named by its URI (never with its options).
        name = self.label(where) if where is not None else str(location)
        embedder = self.embedder
        db = connect(location)
        if TABLE_NAME not in db.list_tables().tables:
            if facts or self.box_paths():
                self.add("index_missing", name, "the index has no table")
            return
        try:
            table = db.open_table(TABLE_NAME)
        except UNOPENABLE_TABLE as exc:
            self.add("index_unreadable", name, f"it cannot be opened: {exc}")
            return
        reason = layout_mismatch(table.schema, embedder.model_id, embedder.dim)
        if reason is not None:
            self.add("index_outdated", name, f"{reason}: it must be rebuilt")
            return
        if search_indices_lacking(table):
            self.add("index_incomplete", name, "the table has no id index")
        index = self.parts.index
        if index is None:  # opened before the table became what it is now
            self.notes.append("the search index could not be opened: its rows were not checked")
            return
        rows = index.get(list(index.manifest()))
        fact_rows = {i: r for i, r in rows.items() if r.kind == "fact"}
        self.row_ids = set(fact_rows)
        box_rows = {r.path: r for r in rows.values() if r.kind == "box"}
        holders = self.folder.holders()
        for row_id, row in sorted(fact_rows.items()):
            fact = facts.get(row.path)
            if fact is None:
                why = (
                    "its file is unreadable"
                    if row.path in self.folder.unreadable
                    else f"no file at {row.path}"
                )
                self.add("index_row_orphan", row_id, why)
            elif fact.id != row_id:
                self.add("index_row_orphan", row_id, f"{row.path} now holds {fact.id}")
        for fact_id, rels in sorted(holders.items()):
            rel = rels[0]
            held = fact_rows.get(fact_id)
            if held is None:
                self.add("index_row_missing", rel, f"{fact_id} is not in the index")
                continue
            stale = []
            if held.path != rel:
                stale.append(f"points at {held.path}")
            if held.content_hash != facts[rel].content_hash:
                stale.append("statement changed")
            elif held.file_mtime_ns != self.folder.mtimes[rel] and not same_row(
                held, fact_row(self.layout, self.layout.memory_dir / rel, facts[rel], 0)
            ):
                stale.append("file changed since indexed")
            if stale:
                self.add("index_row_stale", rel, "; ".join(stale))
        files = {self.layout.relative(p): p for p in self.box_paths()}
        for rel, path in sorted(files.items()):
            held_box = box_rows.get(rel)
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue  # removed while we looked
            if held_box is None:
                self.add("index_box_row_missing", rel, "the box is not in the index")
            elif held_box.file_mtime_ns != mtime and not self._box_row_holds(held_box, path):
                self.add("index_box_row_stale", rel, "box file changed since indexed")
        for rel, held_box in sorted(box_rows.items()):
            if rel not in files:
                self.add("index_box_row_orphan", held_box.id, f"no box file at {rel}")

    def _box_row_holds(self, held: IndexRow, path: Path) -> bool:
        try:
            box = read_box(path, self.layout)
        except MemoryFileError:
            return False  # reported as unreadable_box; its row is stale too
        return same_row(held, box_row(self.layout, path, box, 0))

    def box_paths(self) -> list[Path]:
        return box_files(self.layout)

    # ------------------------------------------------------------ hashes
    def check_hashes(self) -> None:
        self.problems.extend(hash_problems(self.layout, self.folder))

    # ------------------------------------------------------------ graph
    def check_graph(self) -> None:
        if not self.layout.graphs_dir.is_dir():
            return
        known = self.folder.known_ids
        graph = GraphStore.load(self.layout.graphs_dir, self.cfg.graph)
        self.node_ids = {node.id for node in graph.nodes()}
        for node_id in sorted(self.node_ids - known):
            self.missing_ids.add(node_id)
            self.add("graph_node_orphan", node_id, "a graph node for a fact no file holds")
        for edge in graph.edges():
            subject = f"{edge.kind}:{edge.source}->{edge.target}"
            ends = (edge.source, edge.target)
            gone = [end for end in ends if end not in known]
            loose = [end for end in ends if end not in self.node_ids]
            if gone:
                self.missing_ids.update(gone)
                self.add(
                    "graph_edge_orphan", subject, f"names {', '.join(gone)}, which no file holds"
                )
            elif loose:
                self.loose_ends.update(loose)
                self.add("graph_edge_dangling", subject, f"{', '.join(loose)} is no graph node")
        if self.cfg.graph.enabled:
            self._check_linked()

    def _check_linked(self) -> None:
        """Every fact the pipeline wrote is a graph node (``Structure.add`` links it)."""
        for fact_id, rels in sorted(self.folder.holders().items()):
            fact = self.folder.facts[rels[0]]
            if fact_id not in self.node_ids and self._linked_by_pipeline(rels[0], fact):
                self.unlinked.append(rels[0])
                self.add(
                    "graph_node_missing",
                    rels[0],
                    f"{fact_id} is no graph node, though the pipeline wrote it",
                )

    def _linked_by_pipeline(self, rel: str, fact: Fact) -> bool:
        """Whether the pipeline's structure stage links ``fact`` and nothing unlinks it since.

        Only extracted facts pass through the stage; a person or consolidation writes the
        others. Retired and archived facts are left out: recall does not serve them, so a
        path to one is worth nothing. A tombstoned fact is being removed.
        """
        return (
            fact.source in (Source.EXTRACTION, Source.OFFLINE)
            and fact.status is Status.ACTIVE
            and not rel.startswith("archive/")
            and fact.id not in self.tombstoned
        )

    # ------------------------------------------------------------ boxes
    def check_boxes(self) -> None:
        members = self._sealed_members()
        for box_id, ids in self._open_members().items():
            # A box sealed by a run killed before it closed the open box is in both places.
            members.setdefault(box_id, set()).update(ids)
        self.listed_ids = {i for ids in members.values() for i in ids}
        for box_id, ids in members.items():
            for member in sorted(ids - self.folder.known_ids):
                self.missing_ids.add(member)
                self.add("box_member_missing", box_id, f"lists {member}, which no fact file holds")
        box_ids = set(members) | self.unreadable_boxes
        for rel, fact in sorted(self.folder.facts.items()):
            named = fact.box_id
            if not named or fact.id in self.tombstoned:
                continue
            if named not in box_ids:
                self.boxless.append(rel)
                self.add("fact_box_missing", rel, f"names box {named}, which has no file")
            elif named in members and fact.id not in members[named]:
                self.unlisted.append(rel)
                self.add(
                    "box_membership_mismatch", rel, f"names box {named}, which does not list it"
                )
        self._check_traces(box_ids)

    def _sealed_members(self) -> dict[str, set[str]]:
        """Box id -> the ids its file lists (unreadable files are reported instead)."""
        out: dict[str, set[str]] = {}
        for path in self.box_paths():
            try:
                box = read_box(path, self.layout)
            except MemoryFileError as exc:
                self.unreadable_boxes.add(path.stem)
                self.add("unreadable_box", self.layout.relative(path), exc.reason)
                continue
            out[box.id] = set(box.memory_ids)
        return out

    def _open_members(self) -> dict[str, set[str]]:
        """Open box id -> its members, from ``state/open-box.json``."""
        builder = BoxBuilder(self.cfg.boxes, self.layout.open_box_path)
        return {box.id: {m.id for m in box.members} for box in builder.open_boxes()}

    def _check_traces(self, box_ids: set[str]) -> None:
        if not self.layout.traces_path.exists():
            return
        for trace in load_traces(self.layout.traces_path):
            for box_ref in trace.boxes:
                if box_ref.id not in box_ids:
                    self.dead_boxes.add(box_ref.id)
                    self.add(
                        "trace_box_missing",
                        box_ref.id,
                        f"{trace.id} lists a box without a file ({box_ref.path})",
                    )

    # ------------------------------------------------------------ forgets
    def check_forgets(self) -> None:
        """A tombstone is written just before the fact files are deleted, the rest already
        gone: anything its fact still has is an interrupted forget."""
        places = (
            (self.folder.known_ids, "its fact file"),
            (self.row_ids, "its index row"),
            (self.node_ids, "its graph node"),
            (self.listed_ids, "its place in a box"),
        )
        for fact_id in sorted(self.tombstoned):
            left = [what for held, what in places if fact_id in held]
            if left:
                self.unfinished.append(fact_id)
                self.add("forget_unfinished", fact_id, f"forgotten, but {', '.join(left)} remain")

    # ------------------------------------------------------------ jsonl
    def jsonl_files(self) -> list[Path]:
        layout = self.layout
        files = [
            layout.journal_path,
            layout.actions_path,
            layout.access_path,
            layout.state_dir / TOMBSTONES,
        ]
        if layout.graphs_dir.is_dir():
            files += sorted(layout.graphs_dir.glob("*.jsonl"))
        return [p for p in files if p.is_file()]

    def check_torn(self) -> None:
        for path in self.jsonl_files():
            tail = torn_tail(path)
            if tail is not None:
                self.torn.append(path)
                self.add(
                    "torn_line", self.label(path), f"the last line is cut short ({tail} bytes)"
                )


def same_row(held: IndexRow, fresh: IndexRow) -> bool:
    """Whether an index row holds what reading its file again would put there, the file's
    mtime aside: a git checkout or a ``touch`` changes only that, which is no problem (the
    next reconcile refreshes it silently)."""
    return replace(held, file_mtime_ns=0, vector=None) == replace(fresh, vector=None)


def hash_problems(layout: MemoryLayout, folder: Folder) -> list[Problem]:
    """Disagreements between ``state/fact-hashes.txt`` and the readable fact files."""
    facts = folder.facts
    loaded = HashIndex.load(layout.hashes_path)
    if loaded is None:
        if not facts:
            return []
        detail = "the exact-dedup hash index is missing"
        return [Problem("hashes_missing", "state/fact-hashes.txt", detail)]
    found: list[Problem] = []
    entries = dict(loaded.items())
    for digest, rel in sorted(entries.items()):
        fact = facts.get(rel)
        if fact is None:
            why = "unreadable" if rel in folder.unreadable else "gone"
            found.append(Problem("hash_entry_orphan", digest, f"names {rel}, which is {why}"))
        elif fact.content_hash != digest:
            found.append(Problem("hash_entry_orphan", digest, f"{rel} now says something else"))
    for rel in sorted(facts, key=folder_order):
        digest = facts[rel].content_hash
        holder = entries.get(digest)
        if holder is None or holder not in facts or facts[holder].content_hash != digest:
            detail = f"its statement ({digest}) is not in the hash index"
            found.append(Problem("hash_entry_missing", rel, detail))
            entries[digest] = rel  # one report per statement, not one per copy
    return found


def torn_tail(path: Path) -> int | None:
    """The length of a last line that lacks its newline, None when the file ends cleanly."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            if size == 0:
                return None
            handle.seek(max(0, size - 65536))
            chunk = handle.read()
    except OSError:
        return None
    if chunk.endswith(b"\n"):
        return None
    cut = chunk.rfind(b"\n")
    return len(chunk) - cut - 1 if cut >= 0 else len(chunk)
