"""`engram-md forget`: remove a memory everywhere, and leave a tombstone without its content.

A fact lives in more places than its file: the index row (and its vector, in older table
versions too), the exact-dedup hash index, the graph (nodes and edges), its box (the box file
lists and summarizes it; the open box in ``state/open-box.json`` holds its statement), the
trace the box is in, the recall access counts, the embedding cache (keyed by the statement's
text), the journal (the turns it came from), the derived pages (entity pages, ``profile.md``),
``state/topics.json`` and ``state/consolidation.json`` (its id), and text that may quote it:
telemetry reasons and discard previews, consolidation reports, other facts' ``statusHistory``.
Consolidation keeps the facts it merged into or replaced by this one as retired files with
their own text: that lineage is forgotten with it (:func:`_lineage`).

Forgetting goes in this order; the fact files go last, so until then a re-run finds
everything the text-dependent steps need, and after that only steps that work by id remain:

1. A tombstone line per fact in ``state/forgotten.jsonl``: id, path, category, box, lineage,
   when, why and by whom — never the statement, nor a hash of it. Written first, so an
   interrupted forget is on record and re-running ``forget ID`` finishes the job (every step
   is idempotent; once a file is gone its tombstone stands in for it).
2. The embedding cache entries of the statement; the journal: the fact's pending source
   turns are marked done (a restart would extract them again and bring the fact back), then
   the journal is compacted so done turns' text leaves the disk.
3. Quotes of the statement in the telemetry, the reports, the compression guidelines and
   other facts' ``statusHistory`` (:class:`Quotes`); the id in ``topics.json`` and
   ``consolidation.json``.
4. The index row and the hash entry, the graph, the boxes (sealed ones rewritten with
   :func:`engram_md.organize.boxfile.render_box`, an emptied one deleted together with its trace
   entry), the open box, the box rows; then every older table version (``purge_history``).
5. The access counts, the derived pages.
6. The fact files, then a ``forget`` telemetry action each.

The tombstone lives in ``state/`` (machine-local), not ``memory/``: the folder's git history
already records the deletion of the file, and a tombstone there would only add a second file
per forgotten memory to review. The content itself stays in git history until that history
is rewritten; :func:`git_note` says so when the folder is in a repository.

Forgetting is a write: it takes the writer lock and is refused while the daemon runs (the
daemon keeps the open box, the graph and the hash index in memory and would write them back).
A reconcile or ``reindex`` cannot bring the fact back: the index follows the files, and the
file is gone. The same statement said again later, in a new turn, is a new memory.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import logging
import os
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import regex

from ..core.atomic import atomic_write_bytes, atomic_write_text
from ..core.config import Config
from ..core.crashpoints import crashpoint
from ..core.errors import EngramError, LockError, MemoryFileError
from ..core.models import Fact, Status, Turn
from ..core.paths import MemoryLayout
from ..core.statefile import load_json, save_json
from ..organize.boxes import BoxMember, OpenBox, Summarizer
from ..organize.boxfile import read_box, render_box
from ..organize.topics import fact_topics
from ..organize.traces import MAX_TRACE_TOPICS, TraceWeaver
from ..store.factfile import format_time, read_fact, write_fact
from ..text.embeddings import CachedEmbedder, Embedder

log = logging.getLogger(__name__)

TOMBSTONES = "forgotten.jsonl"
# The ids the pipeline writes: <category>-<YYYYMMDD>-<HHMMSS>-<hash8>. Such an id names its
# file directly (facts/YYYY-MM-DD/<category>-<HHMMSS>-<hash8>.md), so no folder scan is needed.
ID_SHAPE = regex.compile(r"^(?P<cat>[a-z_]+)-(?P<day>\d{8})-(?P<time>\d{6})-(?P<hash>[0-9a-f]{8})$")
# A scrubbed embedding-cache record keeps its place (readers address rows by position) but
# no longer answers for the forgotten text: its key becomes this value and its vector zeros.
SCRUBBED_KEY = 0
# What stands where forgotten text was quoted (telemetry, reports, other facts' history).
FORGOTTEN_MARK = "[forgotten]"
# A run of this many words of a forgotten statement counts as quoting it (see Quotes).
QUOTE_WORDS = 5
_WORD = regex.compile(r"\w+")
# The crash loop's kill point between forget's steps (see crashpoints.py).
CRASH_POINT = "forget.step"
# Retired facts: what consolidation merged away or replaced, kept as files with their text.
RETIRED = frozenset({Status.MERGED, Status.SUPERSEDED, Status.INVALIDATED, Status.ARCHIVED})


@dataclass(frozen=True)
class Target:
    """One fact to forget: where it is (or was), and what it said (None once its file is gone:
    a forget that is being finished from its tombstone)."""

    id: str
    path: str  # relative to the memory folder
    fact: Fact | None
    lineage_of: str | None = None  # the fact asked for, when this is a retired copy of it


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


def looks_like_id(text: str) -> bool:
    """Whether ``text`` has the shape of a pipeline fact id (a typo in one must not be taken
    for a search query whose matches get forgotten)."""
    return ID_SHAPE.match(text.strip()) is not None


def _candidate_paths(layout: MemoryLayout, fact_id: str) -> list[Path]:
    match = ID_SHAPE.match(fact_id)
    if match is None:
        return []
    day = match["day"]
    name = f"{match['cat']}-{match['time']}-{match['hash']}.md"
    rel = f"{day[:4]}-{day[4:6]}-{day[6:]}/{name}"
    return [layout.facts_dir / rel, layout.archive_dir / "facts" / rel]


def find_fact_files(layout: MemoryLayout, ids: Iterable[str]) -> dict[str, list[tuple[Path, Fact]]]:
    """Every readable fact file holding each id (two files may claim one id: both count).

    The file an id names is tried first; the folder is scanned only for ids not found there.
    """
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    found: dict[str, list[tuple[Path, Fact]]] = {}
    rest: set[str] = set()
    for fact_id in wanted:
        for path in _candidate_paths(layout, fact_id):
            try:
                fact = read_fact(path)
            except MemoryFileError:
                continue
            if fact.id == fact_id:
                found.setdefault(fact_id, []).append((path, fact))
        if fact_id not in found:
            rest.add(fact_id)
    if rest:
        from ..store.dedup import HashIndex
        from ..store.fact_store import MemoryStore

        store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
        for path, read in store.scan():
            if isinstance(read, Fact) and read.id in rest:
                found.setdefault(read.id, []).append((path, read))
    return found


def read_tombstones(layout: MemoryLayout) -> list[dict[str, Any]]:
    """Every tombstone, oldest first (damaged lines skipped)."""
    path = layout.state_dir / TOMBSTONES
    records: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return records
    for line in raw.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            records.append(data)
    return records


def _targets(layout: MemoryLayout, ids: Sequence[str]) -> tuple[list[Target], list[str]]:
    """The facts asked for, then their lineage; ids found nowhere are returned apart."""
    stones = {t["id"]: t for t in read_tombstones(layout)}
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    files = find_fact_files(layout, wanted)
    targets: list[Target] = []
    missing: list[str] = []
    for fact_id in wanted:
        held = files.get(fact_id)
        if held:
            targets += [Target(fact_id, layout.relative(path), fact) for path, fact in held]
        elif fact_id in stones:
            targets.append(_from_stone(stones[fact_id]))
        else:
            missing.append(fact_id)
    return targets + _lineage(layout, targets, stones), missing


def _from_stone(stone: dict[str, Any]) -> Target:
    root = stone.get("lineageOf")
    return Target(str(stone["id"]), str(stone.get("path", "")), None, str(root) if root else None)


def _lineage(
    layout: MemoryLayout, targets: Sequence[Target], stones: dict[str, dict[str, Any]]
) -> list[Target]:
    """The retired facts that carry the same memory as ``targets``: the duplicates merged
    into one (``mergedFrom``) and the older versions it replaced (``supersedes``), and theirs
    in turn. Active facts are never followed: they are memories of their own.

    A target being finished from its tombstone has no file to read links from: the
    tombstones its first run wrote for its lineage stand in (the asked-for file is removed
    before its lineage's, so they exist whenever it is gone). A linked id with neither a
    file nor a tombstone of this lineage (deleted, or forgotten on its own) is done.
    """
    seen = {t.id for t in targets}
    found: list[Target] = []
    frontier = list(targets)
    while frontier:
        links: dict[str, str] = {}  # linked id -> the fact asked for
        for t in frontier:
            root = t.lineage_of or t.id
            if t.fact is None:
                linked = [str(s["id"]) for s in stones.values() if s.get("lineageOf") == t.id]
            else:
                linked = [*t.fact.merged_from, *t.fact.supersedes]
            for link in linked:
                if link not in seen:
                    links.setdefault(link, root)
        seen.update(links)
        files = find_fact_files(layout, links)
        frontier = []
        for link, root in links.items():
            if link in files:
                frontier += [
                    Target(link, layout.relative(path), fact, root)
                    for path, fact in files[link]
                    if fact.status in RETIRED
                ]
            elif stones.get(link, {}).get("lineageOf") == root:
                frontier.append(_from_stone(stones[link]))
        found += frontier
    return found


# ---------------------------------------------------------------- boxes, traces, open box


def ranked_topics(facts: Iterable[Fact]) -> tuple[str, ...]:
    """A box's topics from its facts, ranked the way a sealed box ranks them."""
    counts: Counter[str] = Counter()
    for fact in facts:
        counts.update(fact_topics(fact))
    probe = OpenBox("", "", datetime.now(UTC), datetime.now(UTC), (), tuple(sorted(counts.items())))
    return probe.ranked_topics()


def _member_facts(layout: MemoryLayout, members: Iterable[BoxMember]) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    for member in members:
        try:
            fact = read_fact(layout.memory_dir / member.path)
        except (MemoryFileError, ValueError):
            continue
        out[member.id or fact.id] = fact
    return out


@dataclass(frozen=True)
class BoxEdit:
    box_id: str
    path: Path
    removed: tuple[str, ...]  # member ids dropped
    deleted: bool  # no member was left: the box file is gone
    old_text: str  # the box's searchable text before (its embedding-cache key)


def drop_box_members(layout: MemoryLayout, path: Path, gone: set[str]) -> BoxEdit | None:
    """Rewrite the sealed box at ``path`` without the members in ``gone`` (None if it has
    none of them). The summary, goal and topics are made again from the members left, so the
    box no longer quotes what was dropped; a box left empty is deleted."""
    from ..index.boxindex import box_text

    box = read_box(path, layout)
    removed = tuple(i for i in box.memory_ids if i in gone)
    if not removed and not any(m.id in gone for m in box.members):
        return None
    old_text = box_text(box)
    memory_ids = tuple(i for i in box.memory_ids if i not in gone)
    kept = [m for m in box.members if m.id not in gone]
    if not memory_ids:
        path.unlink(missing_ok=True)
        return BoxEdit(box.id, path, removed, True, old_text)
    facts = _member_facts(layout, kept)
    members = tuple(
        BoxMember(
            id=m.id,
            path=m.path,
            statement=facts[m.id].content,
            category=facts[m.id].category.value,
            importance=facts[m.id].importance,
            created=facts[m.id].created,
        )
        if m.id in facts
        else m
        for m in kept
    )
    said = Summarizer().summarize(members)
    times = [m.created for m in members if m.created is not None]
    new = replace(
        box,
        memory_ids=memory_ids,
        members=members,
        topics=ranked_topics(facts.values()) if facts else box.topics,
        summary=said.summary,
        goal=said.goal,
        created_at=min(times) if times else box.created_at,
    )
    atomic_write_text(path, render_box(new), fsync=False)
    return BoxEdit(box.id, path, removed, False, old_text)


def box_files(layout: MemoryLayout) -> list[Path]:
    from ..core.atomic import is_temp_file

    if not layout.boxes_dir.is_dir():
        return []
    return [p for p in sorted(layout.boxes_dir.rglob("*.md")) if not is_temp_file(p)]


def quoting_box_texts(layout: MemoryLayout, gone: set[str]) -> list[str]:
    """The searchable text (the embedding-cache key) of every sealed box that lists one of
    ``gone``, as it is before :func:`drop_from_boxes` rewrites it."""
    from ..index.boxindex import box_text

    texts: list[str] = []
    for path in box_files(layout):
        try:
            box = read_box(path, layout)
        except MemoryFileError:
            continue
        if gone.intersection(box.memory_ids) or any(m.id in gone for m in box.members):
            texts.append(box_text(box))
    return texts


def drop_from_boxes(layout: MemoryLayout, gone: set[str]) -> list[BoxEdit]:
    """Drop ``gone`` from every sealed box that lists them (unreadable boxes are skipped)."""
    edits: list[BoxEdit] = []
    for path in box_files(layout):
        try:
            edit = drop_box_members(layout, path, gone)
        except MemoryFileError as exc:
            log.warning("%s", exc)
            continue
        if edit is not None:
            edits.append(edit)
    return edits


def update_traces(cfg: Config, layout: MemoryLayout, edits: Sequence[BoxEdit]) -> None:
    """Bring ``state/traces.json`` in line with rewritten and deleted boxes."""
    if not edits or not layout.traces_path.exists():
        return
    deleted = {e.box_id for e in edits if e.deleted}
    weaver = TraceWeaver(cfg.traces, layout.traces_path)
    if deleted:
        weaver.remove_boxes(deleted)
    data = weaver.to_json()
    changed = {e.box_id: e.path for e in edits if not e.deleted}
    for trace in data["traces"].values():
        touched = False
        for entry in trace["boxes"]:
            path = changed.get(entry["id"])
            if path is None:
                continue
            try:
                box = read_box(path, layout)
            except MemoryFileError:
                continue
            entry["memories"] = len(box.memory_ids)
            entry["topics"] = list(box.topics)
            entry["createdAt"] = format_time(box.created_at)
            touched = True
        if touched:
            counts: Counter[str] = Counter()
            for entry in trace["boxes"]:
                counts.update(entry["topics"])
            trace["topicCounts"] = dict(sorted(counts.items()))
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            trace["topics"] = sorted(t for t, _ in ranked[:MAX_TRACE_TOPICS])
    save_json(layout.traces_path, data, fsync=False)


def drop_from_open_boxes(layout: MemoryLayout, gone: set[str]) -> dict[str, str]:
    """Remove ``gone`` from the open boxes in ``state/open-box.json``; an emptied open box is
    dropped. Returns fact id -> the open box it was in."""
    path = layout.open_box_path
    data = load_json(path, None)
    if not isinstance(data, dict) or not isinstance(data.get("open"), dict):
        return {}
    hits: dict[str, str] = {}
    for session, raw in list(data["open"].items()):
        try:
            members = list(raw["members"])
            box_id = str(raw["id"])
        except (KeyError, TypeError):
            continue
        kept = [m for m in members if str(m.get("id")) not in gone]
        if len(kept) == len(members):
            continue
        hits.update({str(m.get("id")): box_id for m in members if str(m.get("id")) in gone})
        if not kept:
            del data["open"][session]
            continue
        raw["members"] = kept
        facts = _member_facts(
            layout, (BoxMember(id=str(m["id"]), path=str(m["path"]), statement="") for m in kept)
        )
        counts: Counter[str] = Counter()
        for fact in facts.values():
            counts.update(fact_topics(fact))
        raw["topicCounts"] = dict(sorted(counts.items()))
    if hits:
        save_json(path, data, fsync=False)
    return hits


# ---------------------------------------------------------------- small state files


def drop_access(layout: MemoryLayout, gone: set[str]) -> int:
    """Remove ``gone`` from the recall access log; returns how many records named them.

    Recall appends to the log without a lock; an append that lands between our read and our
    replace is lost. That costs at most one recall's access counts, never a memory.
    """
    path = layout.access_path
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    hits = 0
    lines: list[bytes] = []
    for line in raw.splitlines():
        try:
            data = json.loads(line)
            ids = [str(i) for i in data["ids"]]
        except (ValueError, KeyError, TypeError):
            lines.append(line)  # not ours to judge (a torn line: doctor's business)
            continue
        kept = [i for i in ids if i not in gone]
        if len(kept) == len(ids):
            lines.append(line)
            continue
        hits += len(ids) - len(kept)
        if kept:
            data["ids"] = kept
            lines.append(json.dumps(data).encode())
    if hits:
        body = b"\n".join(lines) + (b"\n" if lines else b"")
        atomic_write_text(path, body.decode("utf-8", "replace"))
    return hits


def scrub_embedding_cache(cache_dir: Path, embedder: Embedder, texts: Iterable[str]) -> int:
    """Make the on-disk embedding cache forget the vectors of ``texts``; returns records hit.

    The cache (:class:`engram_md.text.embeddings.CachedEmbedder`) is keyed by a hash of the model
    id and the exact text, in append-only files (``<stem>.keys``: little-endian uint64 keys,
    ``<stem>.f32``: one float32 row per key). A record is overwritten in place — key set to
    :data:`SCRUBBED_KEY`, vector zeroed — under the same ``flock`` the cache's writers take:
    rows keep their positions, which other readers rely on.
    """
    if not isinstance(embedder, CachedEmbedder) or not cache_dir.is_dir():
        return 0
    keys = {embedder.key(text) for text in texts if text}
    keys.discard(SCRUBBED_KEY)
    if not keys:
        return 0
    hit = 0
    for keys_path in sorted(cache_dir.glob("*.keys")):
        try:
            dim = int(keys_path.stem.rsplit("-d", 1)[1])
        except (IndexError, ValueError):
            continue
        vecs_path = keys_path.with_suffix(".f32")
        with open(keys_path, "r+b") as keys_file:
            fcntl.flock(keys_file, fcntl.LOCK_EX)
            try:
                stored = np.fromfile(keys_path, dtype="<u8")
                rows = [int(i) for i in np.flatnonzero(np.isin(stored, list(keys)))]
                if not rows:
                    continue
                zero_key = np.array([SCRUBBED_KEY], dtype="<u8").tobytes()
                zero_row = np.zeros(dim, dtype="<f4").tobytes()
                with open(vecs_path, "r+b") as vecs_file:
                    for row in rows:
                        vecs_file.seek(row * 4 * dim)
                        vecs_file.write(zero_row)
                    vecs_file.flush()
                    os.fsync(vecs_file.fileno())
                for row in rows:
                    keys_file.seek(row * 8)
                    keys_file.write(zero_key)
                keys_file.flush()
                os.fsync(keys_file.fileno())
                hit += len(rows)
            finally:
                fcntl.flock(keys_file, fcntl.LOCK_UN)
    return hit


def source_turns(targets: Iterable[Target]) -> set[tuple[str, str]]:
    """(session, turn id) of every turn the targets came from (those whose file is read)."""
    return {
        (t.fact.session, turn)
        for t in targets
        if t.fact is not None
        for turn in t.fact.source_turn_ids
    }


def compact_journal(layout: MemoryLayout, turns: Collection[tuple[str, str]] = ()) -> list[Turn]:
    """Rewrite the journal as the digests of done turns plus the pending turns, so the text
    of turns already turned into memories leaves the disk. Pending turns named in ``turns``
    ((session, id): a forgotten fact's sources, journaled by a batch that crashed before it
    was marked done) are marked done first: a restart would extract them again and write the
    fact back.
    Returns those turns."""
    from ..ingest.journal import Journal

    if not layout.journal_path.exists():
        return []
    journal = Journal(layout.journal_path, fsync_each=False)
    journal.open()
    try:
        sources = [t for t in journal.pending if (t.session, t.id) in turns]
        journal.mark_done(sources)
        journal.compact()
    finally:
        journal.close()
    return sources


class Quotes:
    """Where text quotes a forgotten statement, to replace it with :data:`FORGOTTEN_MARK`.

    A quote is any run of :data:`QUOTE_WORDS` consecutive words of a statement (all of it, if
    shorter), compared word by word, ignoring case and punctuation; overlapping runs merge
    into one mark. A judge's reason or a preview that repeats the statement, in part or
    whole, is caught; a paraphrase, or one distinctive word on its own, is not: marking every
    shared word would blank other memories' audit trail too.
    """

    def __init__(self, statements: Iterable[str]) -> None:
        self._runs: dict[int, set[tuple[str, ...]]] = {}  # run length -> word runs
        for text in statements:
            words = [w.casefold() for w in _WORD.findall(text)]
            n = min(QUOTE_WORDS, len(words))
            if n:
                runs = self._runs.setdefault(n, set())
                runs.update(tuple(words[i : i + n]) for i in range(len(words) - n + 1))

    def __bool__(self) -> bool:
        return bool(self._runs)

    def scrub(self, text: str) -> str:
        if not self._runs or not text:
            return text
        spans = [m.span() for m in _WORD.finditer(text)]
        words = [text[a:b].casefold() for a, b in spans]
        quoted = [False] * len(words)
        for n, runs in self._runs.items():
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) in runs:
                    quoted[i : i + n] = [True] * n
        out: list[str] = []
        end = 0
        for i, hit in enumerate(quoted):
            if hit and (i == 0 or not quoted[i - 1]):
                out += [text[end : spans[i][0]], FORGOTTEN_MARK]
            if hit:
                end = spans[i][1]
        return "".join(out) + text[end:] if out else text

    def scrub_json(self, value: Any) -> Any:
        """``value`` with every string in it scrubbed (keys are ours, not quotes)."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub_json(v) for k, v in value.items()}
        return value


def scrub_actions(layout: MemoryLayout, targets: Sequence[Target], quotes: Quotes) -> bool:
    """Scrub the telemetry: quotes of the statements in any record, and the ``preview`` (text
    an extractor dropped) of records that name a forgotten fact or one of its source turns.
    Every record keeps its place and its other fields: the log is an audit trail. Records
    that need no change keep their bytes. Returns whether the file changed."""
    path = layout.actions_path
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return False
    gone = {t.id for t in targets}
    turns = source_turns(targets)
    changed = False
    for n, line in enumerate(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a torn line: doctor's business
        if not isinstance(event, dict):
            continue
        new = quotes.scrub_json(event)
        if "preview" in new and _names_source(event, gone, turns):
            del new["preview"]
        if new != event:
            lines[n] = json.dumps(new, ensure_ascii=False).encode("utf-8")
            changed = True
    if changed:
        atomic_write_bytes(path, b"\n".join(lines) + b"\n")
    return changed


def _names_source(event: dict[str, Any], gone: set[str], turns: set[tuple[str, str]]) -> bool:
    if event.get("memoryId") in gone:
        return True
    said = event.get("turns")
    session = str(event.get("session", ""))
    return isinstance(said, list) and any((session, str(t)) in turns for t in said)


def scrub_texts(layout: MemoryLayout, quotes: Quotes) -> list[Path]:
    """Scrub quotes from the consolidation reports and the compression guidelines (they
    repeat judges' reasons and telemetry); returns the files rewritten."""
    files = [layout.compression_guidelines_path]
    if layout.reports_dir.is_dir():
        files += sorted(layout.reports_dir.glob("*.md"))
    changed: list[Path] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        scrubbed = quotes.scrub(text)
        if scrubbed != text:
            atomic_write_text(path, scrubbed)
            changed.append(path)
    return changed


def scrub_history(facts: Sequence[tuple[Path, Fact]], quotes: Quotes) -> list[tuple[Path, Fact]]:
    """Scrub quotes from the ``statusHistory`` reasons of ``facts`` (a judge's reason for a
    merge or a correction may repeat the other fact); returns the facts rewritten."""
    rewritten: list[tuple[Path, Fact]] = []
    for path, fact in facts:
        history = tuple(replace(h, reason=quotes.scrub(h.reason)) for h in fact.status_history)
        if history != fact.status_history:
            fact = fact.with_changes(status_history=history)
            write_fact(path, fact)
            rewritten.append((path, fact))
    return rewritten


def drop_from_run_state(layout: MemoryLayout, gone: set[str]) -> bool:
    """Drop ``gone`` from ``consolidation.json``: the facts left unjudged (``pending``) and
    the content hashes of the facts the last run saw (``seen``)."""
    path = layout.consolidation_state_path
    data = load_json(path, None)
    if not isinstance(data, dict):
        return False
    changed = False
    pending = data.get("pending")
    if isinstance(pending, list) and gone.intersection(map(str, pending)):
        data["pending"] = [p for p in pending if str(p) not in gone]
        changed = True
    seen = data.get("seen")
    if isinstance(seen, dict) and gone.intersection(seen):
        data["seen"] = {k: v for k, v in seen.items() if k not in gone}
        changed = True
    if changed:
        save_json(path, data)
    return changed


def refresh_topics(
    layout: MemoryLayout, facts: Sequence[tuple[Path, Fact]], gone: set[str]
) -> bool:
    """Render ``topics.json`` again from ``facts`` (those left) if it lists a forgotten id."""
    from ..consolidate.folder_index import render_topics

    path = layout.topics_path
    if not _mentions(path, sorted(gone)):
        return False
    atomic_write_text(path, render_topics(f for _, f in facts))
    return True


def _mentions(path: Path, needles: Sequence[str]) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any(n and n in text for n in needles)


def refresh_derived(
    cfg: Config,
    layout: MemoryLayout,
    targets: Sequence[Target],
    facts: Sequence[tuple[Path, Fact]],
) -> list[str]:
    """Entity pages and ``profile.md`` quote facts: make the ones that quote a forgotten fact
    again from ``facts`` (those left), as consolidation would, and remove or scrub what the
    new plan no longer covers. Returns the pages changed, relative to the memory folder."""
    needles: list[str] = []
    for t in targets:
        needles.append(Path(t.path).name)
        if t.fact is not None:
            needles.append(" ".join(t.fact.content.split()))
    pages = [layout.profile_path] if layout.profile_path.exists() else []
    if layout.entities_dir.is_dir():
        pages += sorted(layout.entities_dir.glob("*.md"))
    hit = [p for p in pages if _mentions(p, needles)]
    if not hit:
        return []
    changed: set[str] = set()
    try:
        changed.update(_replan_derived(cfg, layout, facts))
    except Exception as exc:  # a failing planner must not stop the scrub below (fail open)
        log.warning("could not rebuild derived pages: %s", exc)
    for page in hit:
        if not page.exists() or not _mentions(page, needles):
            continue
        rel = layout.relative(page)
        text = page.read_text(encoding="utf-8")
        if page.parent == layout.entities_dir and text.startswith("---\ntype: "):
            # A generated page the plan no longer writes (too few facts left): nothing would
            # ever update it again, so it goes rather than keep quoting the forgotten fact.
            page.unlink()
        else:
            kept = [ln for ln in text.splitlines() if not any(n and n in ln for n in needles)]
            atomic_write_text(page, "\n".join(kept) + "\n")
        changed.add(rel)
    return sorted(changed)


def _replan_derived(
    cfg: Config, layout: MemoryLayout, facts: Sequence[tuple[Path, Fact]]
) -> list[str]:
    from ..consolidate.entities import plan_entities
    from ..consolidate.plan import Context, FileWrite
    from ..consolidate.profile import plan_profile
    from ..consolidate.run import RunState, read_access

    access, _ = read_access(layout.access_path)
    ctx = Context(
        cfg=cfg,
        layout=layout,
        now=datetime.now(UTC),
        epoch=max(1, RunState.load(layout.consolidation_state_path).epoch),
        facts=list(facts),
        access_counts=dict(access),
    )
    written: list[str] = []
    entities = layout.entities_dir.resolve()
    for change in [*plan_entities(ctx), *plan_profile(ctx)]:
        if not isinstance(change, FileWrite):
            continue
        target = change.path.resolve()
        if target == layout.profile_path.resolve() or target.parent == entities:
            atomic_write_text(change.path, change.text)
            written.append(layout.relative(change.path))
    return written


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


# ---------------------------------------------------------------- forgetting


def default_by() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def plan_forget(cfg: Config, ids: Sequence[str]) -> ForgetReport:
    """What forgetting ``ids`` would touch. Read-only: takes no lock, writes nothing."""
    from ..organize.graph import GraphStore

    layout = cfg.layout
    targets, missing = _targets(layout, ids)
    gone = {t.id for t in targets}
    graph = GraphStore.load(layout.graphs_dir, cfg.graph) if layout.graphs_dir.is_dir() else None
    hashed = set(_hash_lines(layout).values())
    open_hits = _open_members(layout)
    rewritten: dict[str, list[str]] = {}
    emptied: dict[str, list[str]] = {}
    for path in box_files(layout):
        try:
            box = read_box(path, layout)
        except MemoryFileError:
            continue
        into = emptied if set(box.memory_ids) <= gone else rewritten
        for member in box.memory_ids:
            if member in gone:
                into.setdefault(member, []).append(box.id)
    access, _ = _access_counts(layout)
    out = []
    for t in targets:
        out.append(
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
        )
    notes = survivor_notes(layout, targets)
    return ForgetReport(tuple(out), tuple(missing), True, tuple(notes))


def survivor_notes(layout: MemoryLayout, targets: Sequence[Target]) -> list[str]:
    """A retired fact asked for by itself lives on in the active fact it was merged into or
    replaced by, which is not forgotten with it (active facts are never lineage): say so."""
    gone = {t.id for t in targets}
    newer = {
        t.fact.superseded_by: t.id
        for t in targets
        if t.fact is not None and t.lineage_of is None and t.fact.superseded_by not in gone
    }
    notes = []
    for newer_id, held in find_fact_files(layout, [i for i in newer if i]).items():
        if any(fact.status is Status.ACTIVE for _, fact in held):
            notes.append(
                f"{newer[newer_id]} was merged into or replaced by {newer_id}, which stays: "
                "forget that one too if it says the same"
            )
    return notes


def _hash_lines(layout: MemoryLayout) -> dict[str, str]:
    from ..store.dedup import HashIndex

    loaded = HashIndex.load(layout.hashes_path)
    return dict(loaded.items()) if loaded is not None else {}


def _open_members(layout: MemoryLayout) -> dict[str, str]:
    data = load_json(layout.open_box_path, {})
    hits: dict[str, str] = {}
    if isinstance(data, dict) and isinstance(data.get("open"), dict):
        for raw in data["open"].values():
            try:
                for member in raw["members"]:
                    hits[str(member["id"])] = str(raw["id"])
            except (KeyError, TypeError):
                continue
    return hits


def _access_counts(layout: MemoryLayout) -> tuple[Counter[str], int]:
    from ..consolidate.run import read_access

    return read_access(layout.access_path)


def forget(
    cfg: Config,
    ids: Sequence[str],
    *,
    reason: str = "",
    by: str | None = None,
    dry_run: bool = False,
    embedder: Embedder | None = None,
) -> ForgetReport:
    """Forget the facts with these ids, and their lineage, everywhere (see the module
    docstring for the order).

    Raises :class:`LockError` while another writer (the daemon) holds the folder. Ids with
    neither a file nor a tombstone are returned as ``missing``; nothing else is refused.
    """
    if dry_run:
        return plan_forget(cfg, ids)
    from ..core.lock import WriterLock

    layout = cfg.layout
    layout.ensure()
    lock = WriterLock(layout.lock_path, memory_dir=layout.memory_dir)
    try:
        lock.acquire()
    except LockError as exc:
        raise LockError(
            f"cannot forget while another process writes to the memory folder: {exc}"
        ) from None
    try:
        targets, missing = _targets(layout, ids)
        if not targets:
            return ForgetReport((), tuple(missing), False)
        report = _forget_targets(
            cfg, layout, targets, reason=reason, by=by or default_by(), embedder=embedder
        )
        return replace(report, missing=tuple(missing))
    except OSError as exc:
        raise EngramError(f"forget failed part-way ({exc}); run it again to finish") from exc
    finally:
        lock.release()


def _forget_targets(
    cfg: Config,
    layout: MemoryLayout,
    targets: Sequence[Target],
    *,
    reason: str,
    by: str,
    embedder: Embedder | None,
) -> ForgetReport:
    from ..app import open_embedder

    gone = {t.id for t in targets}
    quotes = Quotes(t.fact.content for t in targets if t.fact is not None)
    why = quotes.scrub(reason)  # a reason may repeat what is being forgotten
    notes = survivor_notes(layout, targets)
    _write_tombstones(layout, targets, reason=why, by=by, at=datetime.now(UTC))
    crashpoint(CRASH_POINT)
    emb = embedder or open_embedder(cfg, layout)
    scrub_embedding_cache(
        layout.embedding_cache_dir, emb, [t.fact.content for t in targets if t.fact is not None]
    )
    pending = compact_journal(layout, source_turns(targets))
    crashpoint(CRASH_POINT)
    scrubbed = _scrub_state(layout, targets, quotes)
    facts, rewritten = _facts_left(layout, gone, quotes)
    if refresh_topics(layout, facts, gone):
        scrubbed.append(layout.topics_path)
    crashpoint(CRASH_POINT)
    removal = _unindex(cfg, layout, targets, emb, rewritten)
    crashpoint(CRASH_POINT)
    access = _access_per_id(layout, gone)
    drop_access(layout, gone)
    derived = refresh_derived(cfg, layout, targets, facts)
    derived += [layout.relative(path) for path, _ in rewritten]
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


def _scrub_state(layout: MemoryLayout, targets: Sequence[Target], quotes: Quotes) -> list[Path]:
    """Step 3 in ``state/``: quotes in the texts and the telemetry, the ids in the
    consolidation state. Returns the files changed."""
    scrubbed = scrub_texts(layout, quotes) if quotes else []
    if scrub_actions(layout, targets, quotes):
        scrubbed.append(layout.actions_path)
    if drop_from_run_state(layout, {t.id for t in targets}):
        scrubbed.append(layout.consolidation_state_path)
    return scrubbed


def _facts_left(
    layout: MemoryLayout, gone: set[str], quotes: Quotes
) -> tuple[list[tuple[Path, Fact]], list[tuple[Path, Fact]]]:
    """The facts that stay, read once, with quotes scrubbed from their ``statusHistory``; and
    the ones that scrub rewrote."""
    from ..consolidate.run import load_facts
    from ..store.dedup import HashIndex
    from ..store.fact_store import MemoryStore

    store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
    left = [(path, fact) for path, fact in load_facts(store).facts if fact.id not in gone]
    rewritten = scrub_history(left, quotes) if quotes else []
    fresh = dict(rewritten)
    return [(path, fresh.get(path, fact)) for path, fact in left], rewritten


@dataclass(frozen=True)
class _Removal:
    """What step 4 found and removed."""

    rows: set[str]  # ids that had an index row
    hashed: set[str]  # ids whose file had a hash entry
    edges: dict[str, int]
    nodes: set[str]
    edits: list[BoxEdit]
    open_hits: dict[str, str]


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


def _unindex(
    cfg: Config,
    layout: MemoryLayout,
    targets: Sequence[Target],
    emb: Embedder,
    rewritten: Sequence[tuple[Path, Fact]],
) -> _Removal:
    """Step 4: the index, the hashes, the graph and the boxes, all by id (and path)."""
    from ..index.boxindex import sync_boxes
    from ..index.indexer import Indexer
    from ..store.fact_store import MemoryStore

    gone = {t.id for t in targets}
    paths = {t.path for t in targets}
    store = MemoryStore.open(layout)
    hashed = {t.id for t in targets if t.path in {rel for _, rel in store.hashes.items()}}
    indexer = Indexer.open(cfg, layout, store, emb, reconcile=False)
    try:
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
        scrub_embedding_cache(layout.embedding_cache_dir, emb, quoting_box_texts(layout, gone))
        edits = drop_from_boxes(layout, gone)
        update_traces(cfg, layout, edits)
        open_hits = drop_from_open_boxes(layout, gone)
        sync_boxes(indexer.index, layout)
        # The published centroid (the offline extractor's novelty reference) is a sum of
        # every stored vector: publish it again without the forgotten ones.
        indexer.batch_done()
        indexer.index.purge_history()
    finally:
        indexer.close()
    return _Removal(rows, hashed, edges, nodes, edits, open_hits)


def _drop_from_graph(
    cfg: Config, layout: MemoryLayout, gone: set[str]
) -> tuple[dict[str, int], set[str]]:
    """Remove the facts' nodes and edges; returns edges per id and the ids that had a node."""
    from ..organize.graph import GraphStore

    if not layout.graphs_dir.is_dir():
        return {}, set()
    graph = GraphStore(layout.graphs_dir, cfg.graph)
    edges = {fact_id: len(graph.edges_of(fact_id)) for fact_id in gone}
    nodes = {fact_id for fact_id in gone if graph.has_node(fact_id)}
    graph.remove_nodes(gone)
    return edges, nodes


def _remove_files(layout: MemoryLayout, targets: Sequence[Target]) -> set[str]:
    """Step 6: the fact files, the asked-for ones before their lineage (see :func:`_lineage`).
    Returns the paths removed."""
    removed: set[str] = set()
    for t in targets:
        path = layout.memory_dir / t.path
        if t.fact is not None and path.exists():
            layout.inside(path).unlink()
            removed.add(t.path)
            crashpoint(CRASH_POINT)
    return removed


def _record(layout: MemoryLayout, targets: Sequence[Target], *, reason: str, by: str) -> None:
    from ..core.telemetry import ActionLog

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


def _access_per_id(layout: MemoryLayout, gone: set[str]) -> Counter[str]:
    counts, _ = _access_counts(layout)
    return Counter({i: n for i, n in counts.items() if i in gone})


def _write_tombstones(
    layout: MemoryLayout, targets: Sequence[Target], *, reason: str, by: str, at: datetime
) -> None:
    lines = []
    for t in targets:
        record: dict[str, Any] = {
            "at": format_time(at),
            "id": t.id,
            "path": t.path,
            "reason": reason,
            "by": by,
        }
        if t.lineage_of is not None:
            record["lineageOf"] = t.lineage_of
        if t.fact is not None:
            record["category"] = t.fact.category.value
            record["created"] = format_time(t.fact.created)
            record["session"] = t.fact.session
            if t.fact.box_id:
                record["boxId"] = t.fact.box_id
        else:
            record["resumed"] = True  # finishing an interrupted forget
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    path = layout.state_dir / TOMBSTONES
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, "".join(lines).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- finding by query


@dataclass(frozen=True)
class Match:
    id: str
    path: str
    category: str
    content: str
    score: float


def search(cfg: Config, query: str, limit: int = 5) -> list[Match]:
    """The facts recall finds for ``query`` (any status), best first. Counts no access."""
    from ..app import RecallSession

    session = RecallSession(cfg)
    result = session.recaller.recall(
        query,
        top_k=limit,
        budget_tokens=1_000_000,  # the limit decides how many, not the prompt budget
        include_inactive=True,
        record_access=False,
    )
    return [
        Match(m.id, m.path, m.category, m.content, m.score)
        for m in result.memories
        if m.memory_kind != "box"
    ][:limit]


def is_known_id(cfg: Config, text: str) -> bool:
    """Whether ``text`` is the id of a fact file, or of a forget to finish (a tombstone)."""
    text = text.strip()
    if not text or any(ch.isspace() for ch in text):
        return False
    layout = cfg.layout
    if find_fact_files(layout, [text]):
        return True
    return any(t["id"] == text for t in read_tombstones(layout))
