"""`engram-md doctor`: check that the folder, the index, the hashes, the graph and the boxes
agree, and (``--repair``) make them agree again.

The folder is the truth, so a repair always moves the derived side towards the files: rows,
hash entries, graph nodes and box links that name a fact no file holds are dropped, files the
index lacks are indexed, stale rows re-read, and a fact is linked into the graph and its box
the way the structure stage would have linked it. The one exception is a tombstone: the
forget it records is finished (:func:`engram_md.maintain.forget.forget`), file included. Two things
are
never changed, only reported: a fact file that cannot be read (a person has to fix it;
everything derived from it is kept while an id can still be read out of it) and two files
claiming one id.

What is checked, by problem kind:

* ``temp_file`` — a ``.<name>.tmp-<pid>`` left in ``memory/`` or ``state/`` by a killed
  writer (one whose process still runs while it holds the writer lock is a write in flight,
  not an orphan).
* ``unreadable_fact``, ``duplicate_id`` — reported only.
* ``index_missing``, ``index_outdated`` (built for another model or row layout),
  ``index_unreadable`` (the table cannot be opened: a kill -9 while it was being created, a
  damaged manifest), ``index_incomplete`` (no text or id index: a kill between creating the
  table and its indices),
  ``index_row_orphan`` (no file, or an unreadable one), ``index_row_missing``,
  ``index_row_stale`` (mtime, content hash or path differ), and the same three for box rows.
* ``hashes_missing``, ``hash_entry_orphan`` (names a missing file, or one that now says
  something else), ``hash_entry_missing`` (a file's statement is not in the hash index).
* ``graph_node_orphan``, ``graph_edge_orphan`` — naming a fact no file holds;
  ``graph_edge_dangling`` — an edge between facts that exist, one of which is no graph node
  (a crash between a link's edge lines and its node line); ``graph_node_missing`` — with the
  graph enabled, an active live fact the pipeline wrote (source ``extraction`` or
  ``offline``) that is no graph node: the pipeline links every fact it writes, while facts a
  person or consolidation wrote, and retired or archived ones, need not be in the graph.
* ``unreadable_box`` (reported only), ``box_member_missing`` (a sealed or open box lists a
  missing fact), ``fact_box_missing`` (a fact's ``boxId`` names no box file and no open box),
  ``box_membership_mismatch`` (a fact's ``boxId`` names a box that does not list it),
  ``trace_box_missing`` (``traces.json`` lists a box without a file).
* ``forget_unfinished`` — a tombstone in ``state/forgotten.jsonl`` whose fact still has a
  file, an index row, a graph node or a place in a box: a forget that was interrupted.
* ``torn_line`` — a jsonl file in ``state/`` whose last line was cut short by a crash.

:func:`examine` only reads (no lock, so it also works beside a running daemon, whose writes
in flight may then show up). :func:`repair` takes the writer lock — refused while the daemon
runs — repairs, and examines again: what is gone is reported as repaired, what is left stays
a problem.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex

from ..core.atomic import TMP_MARKER, atomic_write_text, is_temp_file
from ..core.config import Config
from ..core.errors import LockError, MemoryFileError
from ..core.lock import WriterLock
from ..core.models import Fact, Source, Status
from ..core.paths import MemoryLayout
from ..core.statefile import load_json
from ..store.dedup import HashIndex
from ..store.factfile import read_fact, write_fact
from ..text.embeddings import Embedder

if TYPE_CHECKING:
    from ..organize.boxes import BoxMember
    from .forget import BoxEdit

log = logging.getLogger(__name__)

# Problems a repair never touches: they need a person.
REPORT_ONLY = frozenset({"unreadable_fact", "duplicate_id", "unreadable_box"})
# What --repair does about each kind, so its report says what was done, not only what was
# wrong.
REPAIRS = {
    "temp_file": "deleted the temp file",
    "torn_line": "ended the line (kept if it is whole JSON, cut off if not)",
    "index_missing": "built the index from the files",
    "index_outdated": "rebuilt the index from the files",
    "index_unreadable": "moved the index aside (state/index/unreadable/) and rebuilt it",
    "index_incomplete": "created the missing search indices",
    "index_row_orphan": "dropped the index row",
    "index_row_missing": "indexed the file",
    "index_row_stale": "re-read the file into its row",
    "index_box_row_orphan": "dropped the box row",
    "index_box_row_missing": "indexed the box file",
    "index_box_row_stale": "re-read the box file into its row",
    "hashes_missing": "rebuilt the hash index from the files",
    "hash_entry_orphan": "rebuilt the hash index from the files",
    "hash_entry_missing": "rebuilt the hash index from the files",
    "graph_node_orphan": "removed the node and its edges",
    "graph_edge_orphan": "removed the edge",
    "graph_edge_dangling": "removed the edge",
    "graph_node_missing": "linked the fact into the graph",
    "box_member_missing": "removed the member from the box",
    "box_membership_mismatch": "added the fact to its box",
    "fact_box_missing": "cleared the fact's boxId",
    "trace_box_missing": "removed the box from its trace",
    "forget_unfinished": "finished the forget",
}
_ID_LINE = regex.compile(r"^id:\s*['\"]?(?P<id>[^\s'\"#]+)", regex.MULTILINE)


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    subject: str  # what it is about: a path, an id, a box id
    detail: str  # what is wrong, for a person

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "subject": self.subject, "detail": self.detail}

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.subject)

    @property
    def action(self) -> str:
        """What ``--repair`` does about it."""
        return REPAIRS.get(self.kind, "repaired")


@dataclass(frozen=True)
class DoctorReport:
    """``problems``: what is wrong now (after a repair: what is left); ``repaired``: what a
    repair fixed."""

    problems: list[Problem]
    repaired: list[Problem] = field(default_factory=list)
    writer_active: bool = False  # a writer held the folder while examining
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "writerActive": self.writer_active,
            "problems": [p.to_json() for p in self.problems],
            "repaired": [{**p.to_json(), "action": p.action} for p in self.repaired],
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------- what the folder holds


def _order(rel: str) -> tuple[bool, str]:
    """Folder order, as the indexer decides between two files with one id: live first."""
    return (rel.startswith("archive/"), rel)


@dataclass
class _Folder:
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
        for rel in sorted(self.facts, key=_order):
            out.setdefault(self.facts[rel].id, []).append(rel)
        return out


def _read_folder(layout: MemoryLayout) -> _Folder:
    from ..store.fact_store import MemoryStore

    store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
    folder = _Folder({}, {}, {}, set(), 0)
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


def _writer_active(layout: MemoryLayout) -> bool:
    """Whether another process holds the writer lock (probed with a shared, non-blocking
    flock that is let go at once; nothing is written)."""
    import fcntl

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


def _tombstoned(layout: MemoryLayout) -> set[str]:
    from .forget import read_tombstones

    return {stone["id"] for stone in read_tombstones(layout)}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- the checks


class _Exam:
    def __init__(self, cfg: Config, layout: MemoryLayout, embedder: Embedder | None) -> None:
        self.cfg = cfg
        self.layout = layout
        self.embedder = embedder
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.folder = _read_folder(layout)
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
        self.tombstoned = _tombstoned(layout)

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
                if writer_active and pid is not None and _pid_alive(pid):
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
        from ..index.table import (
            TABLE_NAME,
            UNOPENABLE_TABLE,
            MemoryIndex,
            _mismatch,
            connect,
            search_indices_lacking,
        )

        facts = self.folder.facts
        index_dir = self.layout.index_dir
        if not index_dir.is_dir():
            if facts or self._box_paths():
                self.add("index_missing", self.label(index_dir), "there is no search index")
            return
        embedder = self._embedder()
        db = connect(index_dir)
        if TABLE_NAME not in db.list_tables().tables:
            if facts or self._box_paths():
                self.add("index_missing", self.label(index_dir), "the index has no table")
            return
        try:
            table = db.open_table(TABLE_NAME)
        except UNOPENABLE_TABLE as exc:
            self.add("index_unreadable", self.label(index_dir), f"it cannot be opened: {exc}")
            return
        reason = _mismatch(table.schema, embedder.model_id, embedder.dim)
        if reason is not None:
            self.add("index_outdated", self.label(index_dir), f"{reason}: it must be rebuilt")
            return
        lacking = search_indices_lacking(table)
        if lacking:
            names = " and no ".join(f"{what} index" for what in ("text", "id") if what in lacking)
            self.add("index_incomplete", self.label(index_dir), f"the table has no {names}")
        index = MemoryIndex.open(index_dir, embedder, may_rebuild=False)
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
            elif held.file_mtime_ns != self.folder.mtimes[rel]:
                stale.append("file changed since indexed")
            if stale:
                self.add("index_row_stale", rel, "; ".join(stale))
        files = {self.layout.relative(p): p for p in self._box_paths()}
        for rel, path in sorted(files.items()):
            box_row = box_rows.get(rel)
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue  # removed while we looked
            if box_row is None:
                self.add("index_box_row_missing", rel, "the box is not in the index")
            elif box_row.file_mtime_ns != mtime:
                self.add("index_box_row_stale", rel, "box file changed since indexed")
        for rel, box_row in sorted(box_rows.items()):
            if rel not in files:
                self.add("index_box_row_orphan", box_row.id, f"no box file at {rel}")

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            from ..app import open_embedder

            self.embedder = open_embedder(self.cfg, self.layout)
        return self.embedder

    def _box_paths(self) -> list[Path]:
        from .forget import box_files

        return box_files(self.layout)

    # ------------------------------------------------------------ hashes
    def check_hashes(self) -> None:
        self.problems.extend(hash_problems(self.layout, self.folder))

    # ------------------------------------------------------------ graph
    def check_graph(self) -> None:
        from ..organize.graph import GraphStore

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
        from ..organize.boxfile import read_box

        out: dict[str, set[str]] = {}
        for path in self._box_paths():
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
        data = load_json(self.layout.open_box_path, {})
        open_boxes = data.get("open", {}) if isinstance(data, dict) else {}
        out: dict[str, set[str]] = {}
        for raw in (open_boxes or {}).values():
            try:
                out.setdefault(str(raw["id"]), set()).update(str(m["id"]) for m in raw["members"])
            except (KeyError, TypeError):
                continue
        return out

    def _check_traces(self, box_ids: set[str]) -> None:
        if not self.layout.traces_path.exists():
            return
        from ..organize.traces import load_traces

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
        """A tombstone is written first: anything its fact still has is an interrupted forget."""
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
        from .forget import TOMBSTONES

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
            tail = _torn_tail(path)
            if tail is not None:
                self.torn.append(path)
                self.add(
                    "torn_line", self.label(path), f"the last line is cut short ({tail} bytes)"
                )


def hash_problems(layout: MemoryLayout, folder: _Folder) -> list[Problem]:
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
    for rel in sorted(facts, key=_order):
        digest = facts[rel].content_hash
        holder = entries.get(digest)
        if holder is None or holder not in facts or facts[holder].content_hash != digest:
            detail = f"its statement ({digest}) is not in the hash index"
            found.append(Problem("hash_entry_missing", rel, detail))
            entries[digest] = rel  # one report per statement, not one per copy
    return found


def _torn_tail(path: Path) -> int | None:
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


def _mend_torn(path: Path) -> None:
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


# ---------------------------------------------------------------- public API


def examine(cfg: Config, *, embedder: Embedder | None = None) -> DoctorReport:
    """Every disagreement between the folder and what is derived from it. Read-only."""
    layout = cfg.layout
    active = _writer_active(layout)
    exam = _Exam(cfg, layout, embedder)
    exam.run(writer_active=active)
    notes = list(exam.notes)
    if active:
        notes.append("a writer (the daemon) holds the folder: writes in flight may show up here")
    return DoctorReport(exam.problems, [], active, notes)


def repair(cfg: Config, *, embedder: Embedder | None = None) -> DoctorReport:
    """Examine, repair what can be repaired, examine again. Takes the writer lock.

    Raises :class:`LockError` while the daemon (or another writer) holds the folder: it keeps
    the index, the graph and the open boxes in memory and would undo a repair.
    """
    layout = cfg.layout
    layout.ensure()
    lock = _take_lock(layout)
    try:
        before = _Exam(cfg, layout, embedder)
        before.run(writer_active=False)
        current = before
        if before.unfinished:
            # forget() takes the writer lock itself (a second flock by this process would
            # conflict with ours), so it runs between two holds; the folder is then examined
            # again, since finishing a forget changes much of it.
            lock.release()
            _finish_forgets(cfg, before)
            lock = _take_lock(layout)
            current = _Exam(cfg, layout, before.embedder)
            current.run(writer_active=False)
        notes = list(current.notes) + _fix(cfg, layout, current)
        after = _Exam(cfg, layout, current.embedder)
        after.run(writer_active=False)
        left = {p.key for p in after.problems}
        found = list({p.key: p for p in [*current.problems, *before.problems]}.values())
        repaired = [p for p in found if p.key not in left and p.kind not in REPORT_ONLY]
        return DoctorReport(
            after.problems, repaired, False, list(dict.fromkeys(notes + after.notes))
        )
    finally:
        lock.release()


def _take_lock(layout: MemoryLayout) -> WriterLock:
    lock = WriterLock(layout.lock_path, memory_dir=layout.memory_dir)
    try:
        lock.acquire()
    except LockError as exc:
        raise LockError(f"doctor --repair needs the memory folder to itself: {exc}") from None
    return lock


def _finish_forgets(cfg: Config, exam: _Exam) -> None:
    """Run the interrupted forgets again, which is how a forget is finished: every step is
    idempotent, and once a file is gone its tombstone stands in for it."""
    from .forget import forget

    try:
        forget(
            cfg,
            exam.unfinished,
            reason="finishing an interrupted forget",
            by="engram-md doctor",
            embedder=exam._embedder(),
        )
    except LockError as exc:
        raise LockError(f"doctor --repair needs the memory folder to itself: {exc}") from None


def _fix(cfg: Config, layout: MemoryLayout, exam: _Exam) -> list[str]:
    """Apply the repairs ``exam`` calls for; returns notes on what was held back."""
    kinds = {p.kind for p in exam.problems}
    for path in exam.temp_files:
        path.unlink(missing_ok=True)
    for path in exam.torn:
        _mend_torn(path)
    notes, rewrote = _fix_boxless(layout, exam)
    links_ok = exam.folder.unsalvaged == 0
    if exam.missing_ids and links_ok:
        _drop_links(cfg, layout, exam.missing_ids)
    rewrote = _list_in_boxes(cfg, layout, exam) or rewrote
    _fix_graph(cfg, layout, exam, exam.missing_ids if links_ok else set())
    if exam.dead_boxes:
        from ..organize.traces import TraceWeaver

        weaver = TraceWeaver(cfg.traces, layout.traces_path)
        weaver.remove_boxes(exam.dead_boxes)
        weaver.save()
    index_kinds = {k for k in kinds if k.startswith("index_")}
    if index_kinds or rewrote or (exam.missing_ids and links_ok):
        _reindex(cfg, layout, exam)
    # The hash index last: the reconcile above adjusts entries of the files it touched.
    if hash_problems(layout, _read_folder(layout)):
        _rebuild_hashes(layout)
    return notes


def _fix_boxless(layout: MemoryLayout, exam: _Exam) -> tuple[list[str], bool]:
    """Clear the boxId of facts whose box does not exist; returns (notes, files rewritten)."""
    from ..ingest.journal import pending_count

    if not exam.boxless:
        return [], False
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
        write_fact(layout.inside(layout.memory_dir / rel), fact.with_changes(box_id=None))
    return [], True


def _drop_links(cfg: Config, layout: MemoryLayout, missing: set[str]) -> None:
    """Take facts no file holds out of the boxes, their traces and the open boxes (the graph
    is :func:`_fix_graph`'s)."""
    from .forget import drop_from_boxes, drop_from_open_boxes, update_traces

    edits = drop_from_boxes(layout, missing)
    update_traces(cfg, layout, edits)
    drop_from_open_boxes(layout, missing)


def _fix_graph(cfg: Config, layout: MemoryLayout, exam: _Exam, missing: set[str]) -> None:
    """Drop nodes and edges of facts no file holds and edges to facts that are no node, then
    link the facts the pipeline would have linked, as ``Structure.recover`` does after a
    crash: in the order they were said, each as the latest fact of its session."""
    from ..organize.graph import GraphStore

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


def _list_in_boxes(cfg: Config, layout: MemoryLayout, exam: _Exam) -> bool:
    """Put each fact back in the box its boxId names, as an uninterrupted run would have:
    an open box takes it the way ``Structure.recover`` restores a member, a sealed box is
    written again with it. Returns whether a box file was rewritten."""
    from ..organize.boxes import BoxBuilder

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
    paths = {path.stem: path for path in exam._box_paths()}
    edits = [
        _add_box_members(layout, paths[box_id], joining)
        for box_id, joining in sealed.items()
        if box_id in paths
    ]
    if edits:
        from .forget import update_traces

        update_traces(cfg, layout, edits)
    return bool(edits)


def _add_box_members(layout: MemoryLayout, path: Path, joining: list[tuple[str, Fact]]) -> BoxEdit:
    """Write the sealed box at ``path`` again with ``joining`` (rel, fact) among its members,
    as its seal would have written it: members in the order said, summary, goal and topics
    made from all of them (:func:`engram_md.maintain.forget.drop_box_members` in reverse)."""
    from ..index.boxindex import box_text
    from ..organize.boxes import BoxMember, Summarizer
    from ..organize.boxfile import read_box, render_box
    from .forget import BoxEdit, ranked_topics

    box = read_box(path, layout)
    # A box file keeps its members' statements and links only: what ordering and the
    # summary need comes from the fact files, as when the box was sealed.
    read = [(m, _read_member(layout, m.path)) for m in box.members]
    members = [BoxMember.of(f, m.path) if f is not None else m for m, f in read]
    facts = {m.id: f for m, f in read}
    for rel, fact in sorted(joining, key=lambda item: (item[1].created, item[1].id)):
        if fact.id not in facts:  # two files may hold one id
            facts[fact.id] = fact
            _insert_in_order(members, BoxMember.of(fact, rel))
    said = Summarizer().summarize(tuple(members))
    created = [f.created for _, f in joining]
    new = replace(
        box,
        memory_ids=tuple(m.id for m in members),
        members=tuple(members),
        topics=ranked_topics(f for f in facts.values() if f is not None),
        summary=said.summary,
        goal=said.goal,
        created_at=min([box.created_at, *created]),
        sealed_at=max([box.sealed_at, *created]),
    )
    atomic_write_text(path, render_box(new))
    return BoxEdit(box.id, path, (), False, box_text(box))


def _insert_in_order(members: list[BoxMember], member: BoxMember) -> None:
    """Before the first member said later: a box lists its facts in the order they joined,
    which is the order they were said."""
    said = member.created
    later = (
        i for i, m in enumerate(members) if said is not None and m.created and m.created > said
    )
    members.insert(next(later, len(members)), member)


def _read_member(layout: MemoryLayout, rel: str) -> Fact | None:
    try:
        return read_fact(layout.memory_dir / rel)
    except MemoryFileError:
        return None


def _reindex(cfg: Config, layout: MemoryLayout, exam: _Exam) -> None:
    from ..index.indexer import Indexer
    from ..store.fact_store import MemoryStore

    store = MemoryStore.open(layout)
    indexer = Indexer.open(cfg, layout, store, exam._embedder(), reconcile=False)
    try:
        report = indexer.reconcile(full=True)
        for problem in report.broken:
            log.info("not indexed: %s", problem)
    finally:
        indexer.close()


def _rebuild_hashes(layout: MemoryLayout) -> None:
    """The hash index from the readable files; the first file in folder order holds each
    statement (live before archived, as the indexer decides)."""
    folder = _read_folder(layout)
    pairs = [(folder.facts[rel].content_hash, rel) for rel in sorted(folder.facts, key=_order)]
    HashIndex.rebuild(layout.hashes_path, reversed(pairs))


def problem_kinds(problems: Iterable[Problem]) -> dict[str, int]:
    """How many problems of each kind (for a one-line summary)."""
    counts: dict[str, int] = {}
    for p in problems:
        counts[p.kind] = counts.get(p.kind, 0) + 1
    return dict(sorted(counts.items()))
