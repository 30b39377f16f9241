"""`forget`: a memory leaves every place it was in, a tombstone without its content stays."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from engram_md.app import open_reader, open_writer
from engram_md.cli import app
from engram_md.consolidate.entities import plan_entities
from engram_md.consolidate.folder_index import render_topics
from engram_md.consolidate.plan import Context, FileWrite
from engram_md.core.config import Config, load_config
from engram_md.core.errors import EngramError
from engram_md.core.lock import WriterLock
from engram_md.core.models import (
    Category,
    ConfidenceTier,
    Fact,
    MemoryKind,
    Role,
    Source,
    Status,
    StatusChange,
    Turn,
)
from engram_md.core.paths import MemoryLayout
from engram_md.core.statefile import save_json
from engram_md.core.telemetry import ActionLog
from engram_md.index.indexer import Indexer
from engram_md.index.lance import TABLE_NAME, connect
from engram_md.index.table import MemoryIndex
from engram_md.ingest.journal import Journal
from engram_md.ingest.pipeline import fact_id
from engram_md.maintain import forget as forget_mod
from engram_md.maintain.doctor import examine
from engram_md.maintain.forget import ForgetReport, named, plan_forget
from engram_md.maintain.problems import DoctorReport
from engram_md.maintain.quotes import Quotes
from engram_md.organize.boxfile import read_box
from engram_md.organize.graph import GraphStore
from engram_md.organize.structure import Structure
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact, write_fact
from engram_md.text.embeddings import CachedEmbedder, LocalMiniLM
from engram_md.text.hashing import content_hash

from .conftest import REPO, Cli, HashEmbedder, clean_env, sample

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

# Session s1: three facts about one subject (one sealed box), then s2: two (left open).
# s3: one fact alone in its box.
STATEMENTS = [
    ("s1", 0, Category.DECISION, "We decided to move billing to PostgreSQL next sprint."),
    ("s1", 2, Category.PREFERENCE, "Dana prefers PostgreSQL over MySQL for billing work."),
    ("s1", 4, Category.FACT, "The PostgreSQL billing cluster has three replicas."),
    ("s2", 10, Category.PREFERENCE, "Dana likes hiking in the Alps on weekends."),
    ("s2", 12, Category.FACT, "Dana went hiking near Chamonix last weekend."),
    ("s3", 20, Category.COMMITMENT, "Dana will send the roadmap to Omar by Friday."),
]
TAGS = {"s1": ("postgresql", "billing"), "s2": ("hiking",), "s3": ("roadmap",)}


def make_cfg(root: Path) -> Config:
    return load_config(
        None, env={}, overrides={"memory_dir": root / "memory", "state_dir": root / "state"}
    )


def embedder_for(layout: MemoryLayout) -> CachedEmbedder:
    return CachedEmbedder(HashEmbedder(), layout.embedding_cache_dir)


def make_fact(session: str, minute: int, category: Category, text: str) -> Fact:
    created = T0 + timedelta(minutes=minute)
    digest = content_hash(text)
    return Fact(
        id=fact_id(category.value, created, digest),
        category=category,
        created=created,
        updated=created,
        source=Source.OFFLINE,
        confidence=0.95,
        confidence_tier=ConfidenceTier.EXPLICIT,
        importance=0.5 + minute / 100,
        memory_kind=MemoryKind.NOTE,
        content=text,
        session=session,
        source_turn_ids=(f"{session}-t{minute}",),
        tags=TAGS.get(session, ()),
        entities=("person-dana",),
        content_hash=digest,
    )


@dataclass
class Folder:
    cfg: Config
    layout: MemoryLayout
    facts: dict[str, Fact]  # by content
    paths: dict[str, Path]  # by id

    def fact(self, text: str) -> Fact:
        return self.facts[text]

    def embedder(self) -> CachedEmbedder:
        return embedder_for(self.layout)


def build_folder(root: Path, *, seal_open: bool = False) -> Folder:
    """A folder as the daemon leaves it: fact files, index rows, hashes, graph, boxes, traces,
    one open box (session s2, unless ``seal_open``), recall counts, a cached vector each."""
    cfg = make_cfg(root)
    layout = cfg.layout
    layout.ensure()
    store = MemoryStore.open(layout)
    emb = embedder_for(layout)
    indexer = Indexer.open(cfg, layout, store, emb)
    structure = Structure(cfg, layout, ActionLog(layout.actions_path), on_seal=indexer.upsert_box)
    facts: dict[str, Fact] = {}
    paths: dict[str, Path] = {}
    for session, minute, category, text in STATEMENTS:
        fact = structure.prepare(make_fact(session, minute, category, text))
        path = store.write_new(fact)
        structure.add(path, fact)
        indexer.upsert_fact(path, fact, new=True)
        facts[text] = fact
        paths[fact.id] = path
    indexer.batch_done()
    structure.end_session("s1")
    structure.end_session("s3")
    if seal_open:
        structure.end_input()
    indexer.close()
    access = [{"at": "2026-03-03T10:00:00Z", "ids": list(paths)[:3]}] * 2
    layout.access_path.write_text("".join(json.dumps(a) + "\n" for a in access))
    return Folder(cfg, layout, facts, paths)


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return build_folder(tmp_path)


def examine_folder(folder: Folder, *, cfg: Config | None = None) -> DoctorReport:
    """`doctor` as the command examines: on a reader's parts (with the folder's embedder:
    its index was built with that one)."""
    with open_reader(cfg or folder.cfg, embedder=folder.embedder()) as parts:
        return examine(parts)


def plan_in(folder: Folder, ids: Sequence[str]) -> ForgetReport:
    """`forget --dry-run` as the command runs it: on a reader's parts, without the index."""
    with open_reader(folder.cfg, embedder=folder.embedder(), with_index=False) as parts:
        return plan_forget(parts, ids)


def known_in(folder: Folder, text: str) -> bool:
    with open_reader(folder.cfg, embedder=folder.embedder(), with_index=False) as parts:
        return named(parts.store, text) == text


def forget_in(
    folder: Folder,
    ids: Sequence[str],
    *,
    reason: str = "",
    by: str | None = None,
    embedder: CachedEmbedder | None = None,
) -> ForgetReport:
    """A forget as the command runs it: on a writer's parts (with the folder's embedder)."""
    emb = embedder or folder.embedder()
    with open_writer(folder.cfg, embedder=emb, reconcile=False) as parts:
        return forget_mod.forget(parts, ids, reason=reason, by=by)


def _everything(layout: MemoryLayout) -> dict[str, bytes]:
    """Every byte under memory/ and state/, the search index's data files included."""
    out = {}
    for root in (layout.memory_dir, layout.state_dir):
        for path in sorted(root.rglob("*")):
            if path.is_file():
                out[str(path)] = path.read_bytes()
    return out


def _holding(layout: MemoryLayout, *needles: str) -> list[str]:
    """The files under memory/ and state/ whose bytes hold any of ``needles`` (any case)."""
    wanted = [n.lower().encode() for n in needles]
    return [
        path for path, data in _everything(layout).items() if any(n in data.lower() for n in wanted)
    ]


def _table_versions(layout: MemoryLayout) -> int:
    return len(connect(layout.index_dir).open_table(TABLE_NAME).list_versions())


def _box_of(folder: Folder, fact: Fact) -> Path:
    assert fact.box_id is not None
    [path] = list(folder.layout.boxes_dir.rglob(f"{fact.box_id}.md"))
    return path


def test_forget_removes_a_boxed_linked_indexed_fact_everywhere(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[1][3])  # the middle fact of the sealed s1 box
    box_path = _box_of(folder, target)
    assert target.content in box_path.read_text()
    graph = GraphStore.load(layout.graphs_dir)
    assert graph.has_node(target.id) and graph.edges_of(target.id)
    emb = folder.embedder()
    cache_key = emb.key(target.content)
    assert cache_key in set(np.fromfile(next(layout.embedding_cache_dir.glob("*.keys")), "<u8"))

    report = forget_in(folder, [target.id], reason="asked by Dana", by="tester", embedder=emb)

    [done] = report.forgotten
    assert done.file_removed and done.index_row and done.hash_entry and done.graph_node
    assert done.graph_edges >= 2 and done.boxes_rewritten == (target.box_id,)
    assert done.access_records == 2 and not report.missing
    # The file, the row, the hash entry.
    assert not folder.paths[target.id].exists()
    index = MemoryIndex.open(layout.index_dir, folder.embedder())
    assert target.id not in index.get([target.id])
    assert all(target.content not in r.content for r in index.get(list(index.manifest())).values())
    store = MemoryStore.open(layout)
    assert store.hashes.lookup(target.content_hash) is None
    # The graph: no node, no edge naming it; the others keep theirs.
    graph = GraphStore.load(layout.graphs_dir)
    assert not graph.has_node(target.id) and not graph.edges_of(target.id)
    assert graph.edges() and all(target.id not in (e.source, e.target) for e in graph.edges())
    assert target.id not in (layout.graphs_dir / "nodes.jsonl").read_text()
    # The box: rewritten without it (ids, links, summary), the other two kept.
    box = read_box(box_path, layout)
    others = [folder.fact(s[3]) for s in STATEMENTS[:3] if s[3] != target.content]
    assert box.memory_ids == tuple(f.id for f in others)
    text = box_path.read_text()
    assert target.content not in text and "MySQL" not in text
    assert all(f.content in text for f in others)
    # Its trace knows the box now holds two memories; the box row no longer quotes it.
    traces = json.loads(layout.traces_path.read_text())["traces"]
    entry = next(b for t in traces.values() for b in t["boxes"] if b["id"] == target.box_id)
    assert entry["memories"] == 2
    assert target.box_id is not None
    box_row = index.get([target.box_id])[target.box_id]
    assert "MySQL" not in box_row.content
    # Recall counts, the embedding cache, the tombstone (without the statement).
    assert target.id not in layout.access_path.read_text()
    keys = np.fromfile(next(layout.embedding_cache_dir.glob("*.keys")), "<u8")
    assert cache_key not in set(keys.tolist())
    [stone] = [
        json.loads(x) for x in (layout.state_dir / "forgotten.jsonl").read_text().splitlines()
    ]
    assert stone["id"] == target.id and "contentHash" not in stone
    assert stone["reason"] == "asked by Dana" and stone["by"] == "tester"
    assert stone["path"] == layout.relative(folder.paths[target.id])
    raw = (layout.state_dir / "forgotten.jsonl").read_text()
    assert "MySQL" not in raw and "prefers" not in raw
    # Everything agrees afterwards.
    assert examine_folder(folder).ok


def test_no_byte_of_a_forgotten_statement_is_left_on_disk(folder: Folder) -> None:
    """Not in the index's data files or older table versions either (a delete only marks a
    row deleted; compaction leaves a file with few deletions alone)."""
    layout = folder.layout
    target = folder.fact(STATEMENTS[1][3])
    index = MemoryIndex.open(layout.index_dir, folder.embedder())
    index.optimize()  # the row is in the full-text index and a compacted file too
    index.upsert([next(iter(index.get([folder.fact(STATEMENTS[0][3]).id]).values()))])
    before = _holding(layout, target.content, "MySQL")
    assert any("/index/" in p for p in before) and _table_versions(layout) > 1

    forget_in(folder, [target.id])

    assert _holding(layout, target.content, "MySQL") == []
    assert _table_versions(layout) == 1  # no older version to check out
    index = MemoryIndex.open(layout.index_dir, folder.embedder())
    assert index.text_search("MySQL", 5) == []
    assert len(index.text_search("PostgreSQL billing", 5)) == 3  # both indices still work
    assert examine_folder(folder).ok


def test_derived_state_stops_naming_or_quoting_a_forgotten_fact(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[1][3])  # "Dana prefers PostgreSQL over MySQL for billing work."
    other = folder.fact(STATEMENTS[0][3])
    quote = "Dana prefers PostgreSQL over MySQL for billing"
    # A judge's reason in another fact's history, in the telemetry and in a report; a discard
    # preview from the target's source turn; topics and consolidation state naming its id.
    history = StatusChange(T0, Status.ACTIVE, Status.ACTIVE, f"same as '{quote}', kept")
    write_fact(folder.paths[other.id], other.with_changes(status_history=(history,)))
    Indexer.open(folder.cfg, layout, MemoryStore.open(layout), folder.embedder()).close()
    actions = ActionLog(layout.actions_path)
    actions.record("update_note", "applied", f"{quote} (duplicate)", memory_id=other.id)
    for turn, preview in (("s1-t2", "prefers postgres over my sql"), ("s2-t10", "Alps hiking")):
        session = turn.split("-")[0]
        actions.record("discard", "applied", "bad", turns=[turn], session=session, preview=preview)
    lines_before = layout.actions_path.read_text().splitlines()
    layout.topics_path.write_text(render_topics(folder.facts.values()))
    seen = {f.id: f.content_hash for f in folder.facts.values()}
    save_json(layout.consolidation_state_path, {"epoch": 3, "pending": [target.id], "seen": seen})
    layout.reports_dir.mkdir(parents=True)
    name = "20260303T100000Z.md"
    report_path = layout.reports_dir / name
    report_path.write_text(f"- **merge** `{folder.paths[other.id].name}` — {quote.upper()} again\n")
    assert len(_holding(layout, quote)) >= 5

    report = forget_in(folder, [target.id])

    assert _holding(layout, target.content, quote, "MySQL", "my sql") == []
    assert report.scrubbed == tuple(
        sorted(["memory-actions.jsonl", "consolidation.json", "topics.json", "reports/" + name])
    )
    assert report.derived == (layout.relative(folder.paths[other.id]),)
    # The telemetry keeps every record and every field but the quote and the preview.
    lines = layout.actions_path.read_text().splitlines()
    assert len(lines) == len(lines_before) + 1 and json.loads(lines[-1])["action"] == "forget"
    events = [json.loads(x) for x in lines]
    [judged] = [e for e in events if e["action"] == "update_note"]
    assert judged["reason"] == "[forgotten] (duplicate)" and judged["memoryId"] == other.id
    discards = [e for e in events if e["action"] == "discard"]
    assert [d.get("preview") for d in discards[-2:]] == [None, "Alps hiking"]
    assert discards[-2]["turns"] == ["s1-t2"]
    untouched = [x for x in lines_before if other.id not in x and "s1-t2" not in x]
    assert all(x in lines for x in untouched)
    # The other fact's history, the report, the topic index, the consolidation state.
    [kept] = read_fact(folder.paths[other.id]).status_history
    assert kept.reason == "same as '[forgotten]', kept"
    assert (
        report_path.read_text()
        == f"- **merge** `{folder.paths[other.id].name}` — [forgotten] again\n"
    )
    topics = json.loads(layout.topics_path.read_text())
    assert topics["facts"] == len(STATEMENTS) - 1
    assert all(target.id not in t["facts"] for t in topics["topics"].values())
    state = json.loads(layout.consolidation_state_path.read_text())
    assert state["pending"] == [] and target.id not in state["seen"] and other.id in state["seen"]
    assert state["epoch"] == 3
    assert examine_folder(folder).ok


def test_quotes_are_runs_of_five_words_of_a_statement() -> None:
    quotes = Quotes(["Dana prefers PostgreSQL over MySQL for billing work."])
    assert quotes.scrub("dana PREFERS postgresql, over mysql!") == "[forgotten]!"
    assert (
        quotes.scrub("x: prefers PostgreSQL over MySQL for billing work. y") == "x: [forgotten]. y"
    )
    assert (
        quotes.scrub("Dana prefers PostgreSQL over Oracle") == "Dana prefers PostgreSQL over Oracle"
    )
    assert Quotes(["Dana smokes."]).scrub("so Dana smokes, sadly") == "so [forgotten], sadly"
    assert not Quotes([])


def test_forget_takes_a_fact_out_of_the_open_box(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[3][3])
    kept = folder.fact(STATEMENTS[4][3])
    assert target.content in layout.open_box_path.read_text()
    report = forget_in(folder, [target.id])
    assert report.forgotten[0].open_box == target.box_id
    state = json.loads(layout.open_box_path.read_text())["open"]["s2"]
    assert [m["id"] for m in state["members"]] == [kept.id]
    assert "Alps" not in layout.open_box_path.read_text()
    assert examine_folder(folder).ok


def test_forgetting_a_box_s_only_fact_removes_the_box_its_row_and_its_trace_entry(
    folder: Folder,
) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[5][3])
    box_path = _box_of(folder, target)
    report = forget_in(folder, [target.id])
    assert report.forgotten[0].boxes_removed == (target.box_id,)
    assert not box_path.exists()
    traces = json.loads(layout.traces_path.read_text())["traces"]
    assert all(b["id"] != target.box_id for t in traces.values() for b in t["boxes"])
    index = MemoryIndex.open(layout.index_dir, folder.embedder())
    assert target.box_id is not None and target.box_id not in index.get([target.box_id])
    assert examine_folder(folder).ok


def test_reconcile_and_rebuild_do_not_bring_a_forgotten_fact_back(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[0][3])
    forget_in(folder, [target.id])
    store = MemoryStore.open(layout)
    indexer = Indexer.open(folder.cfg, layout, store, folder.embedder())  # reconciles
    assert target.id not in indexer.index.get([target.id])
    indexer.rebuild()
    assert target.id not in indexer.index.get([target.id])
    indexer.close()
    store.rebuild_hashes()
    assert store.hashes.lookup(target.content_hash) is None


def test_forget_is_refused_while_another_writer_holds_the_folder(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[0][3])
    before = _everything(layout)
    runner = CliRunner()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    with WriterLock(layout.lock_path, memory_dir=layout.memory_dir):
        refused = runner.invoke(app, [*args, "forget", target.id])
    assert refused.exit_code == 3
    assert "cannot forget while another process writes" in refused.output
    after = _everything(layout)
    after.pop(str(layout.lock_path), None)
    before.pop(str(layout.lock_path), None)
    assert after == before


def test_a_dry_run_says_what_would_go_and_changes_nothing(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[5][3])
    before = _everything(layout)
    report = plan_in(folder, [target.id, "fact-20990101-000000-deadbeef"])
    assert report.dry_run and report.missing == ("fact-20990101-000000-deadbeef",)
    [item] = report.forgotten
    assert item.boxes_removed == (target.box_id,) and item.hash_entry and item.graph_node
    assert _everything(layout) == before


def test_a_failed_forget_keeps_the_file_until_the_rest_is_done(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = folder.fact(STATEMENTS[2][3])

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(forget_mod, "drop_from_boxes", crash)
    with pytest.raises(Exception, match="run it again"):
        forget_in(folder, [target.id])
    monkeypatch.undo()
    # The file is removed last: what a re-run needs its statement for can still be done.
    assert folder.paths[target.id].exists()
    assert target.id in _box_of(folder, target).read_text()
    assert known_in(folder, target.id)

    report = forget_in(folder, [target.id])
    assert report.forgotten[0].boxes_rewritten == (target.box_id,)
    assert target.id not in _box_of(folder, target).read_text()
    assert _holding(folder.layout, target.content) == []
    assert examine_folder(folder).ok


def test_a_forget_stopped_before_its_files_is_not_on_record_and_the_memory_stays_whole(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk after the index row went: no tombstone beside a memory recall serves, the
    file is whole, the next reader's reconcile indexes it again; a re-run finishes."""
    layout = folder.layout
    target = folder.fact(STATEMENTS[5][3])

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(layout.entities_dir))

    monkeypatch.setattr(forget_mod, "refresh_derived", disk_full)
    with pytest.raises(EngramError, match="run it again"):
        forget_in(folder, [target.id])
    monkeypatch.undo()
    assert not (layout.state_dir / "forgotten.jsonl").exists()
    assert read_fact(folder.paths[target.id]) == target
    with open_reader(folder.cfg, refresh_index=True, embedder=folder.embedder()) as parts:
        assert parts.index is not None and target.id in parts.index.get([target.id])

    forget_in(folder, [target.id])
    assert not folder.paths[target.id].exists()
    assert _holding(layout, target.content) == []
    assert examine_folder(folder).ok


def test_a_folder_it_cannot_write_is_refused_before_any_change(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[1][3])
    box = _box_of(folder, target)
    before = _everything(layout)
    read_only = {box.parent}

    def unwritable(path: Path) -> OSError | None:
        if path in read_only:
            return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return None

    monkeypatch.setattr("engram_md.core.writable.unwritable", unwritable)
    with pytest.raises(OSError) as raised:
        forget_in(folder, [target.id])
    assert raised.value.errno == errno.EROFS and raised.value.filename == str(box.parent)
    # Opening and closing the writer writes its own files (the lock, LLM usage): forget none.
    writer_files = {str(layout.lock_path), str(layout.usage_path)}
    after = _everything(layout)
    assert {k: v for k, v in after.items() if k not in writer_files} == {
        k: v for k, v in before.items() if k not in writer_files
    }


# ---------------------------------------------------------------- lineage


@dataclass
class Lineage:
    """X (active) merged A, which had merged C, and superseded B; X also names the active Y
    (a hand edit) as superseded, which must not make Y lineage."""

    folder: Folder
    x: Fact
    a: Fact
    b: Fact
    c: Fact
    y: Fact

    @property
    def retired(self) -> list[Fact]:
        return [self.a, self.b, self.c]


def build_lineage(root: Path) -> Lineage:
    folder = build_folder(root)
    x, a, c, y, _, b = (folder.fact(s[3]) for s in STATEMENTS)
    edits = {
        x: x.with_changes(merged_from=(a.id,), supersedes=(b.id, y.id)),
        a: a.with_changes(status=Status.MERGED, superseded_by=x.id, merged_from=(c.id,)),
        c: c.with_changes(status=Status.MERGED, superseded_by=a.id),
        b: b.with_changes(status=Status.SUPERSEDED, superseded_by=x.id),
    }
    for before, after in edits.items():
        write_fact(folder.paths[before.id], after)
    Indexer.open(
        folder.cfg, folder.layout, MemoryStore.open(folder.layout), folder.embedder()
    ).close()
    return Lineage(folder, edits[x], edits[a], edits[b], edits[c], y)


def test_forgetting_a_fact_forgets_its_retired_lineage_and_no_active_fact(tmp_path: Path) -> None:
    chain = build_lineage(tmp_path)
    folder, x = chain.folder, chain.x
    assert examine_folder(folder).ok
    expected = [(x.id, None), *((f.id, x.id) for f in (chain.a, chain.b, chain.c))]
    plan = plan_in(folder, [x.id])
    assert [(f.id, f.lineage_of) for f in plan.forgotten] == expected
    # A retired fact asked for by itself takes its own lineage only, and the dry run says
    # which active fact still carries it.
    alone = plan_in(folder, [chain.a.id])
    assert [f.id for f in alone.forgotten] == [chain.a.id, chain.c.id]
    assert len(alone.notes) == 1 and x.id in alone.notes[0]

    report = forget_in(folder, [x.id])

    assert [(f.id, f.lineage_of) for f in report.forgotten] == expected
    assert all(f.file_removed for f in report.forgotten)
    assert _holding(folder.layout, *(f.content for f in [x, *chain.retired])) == []
    assert folder.paths[chain.y.id].exists()
    stones = [json.loads(line) for line in (folder.layout.state_dir / "forgotten.jsonl").open()]
    assert [(s["id"], s.get("lineageOf")) for s in stones] == expected
    assert examine_folder(folder).ok


# ---------------------------------------------------------------- journal, crashes


def test_a_forgotten_fact_s_pending_source_turn_is_not_replayed(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[1][3])  # from turn s1-t2
    at = T0 + timedelta(minutes=2)
    said = Turn("s1-t2", "s1", Role.USER, "I prefer PostgreSQL over MySQL for billing.", at)
    later = Turn("s1-t9", "s1", Role.USER, "Next: the roadmap.", at)
    other = Turn("s9-t2", "s9", Role.USER, "Same turn id, another session.", at)
    journal = Journal(layout.journal_path)
    journal.open()
    for turn in (said, later, other):
        journal.append(turn)  # written, but the batch crashed before it was marked done
    journal.close()

    report = forget_in(folder, [target.id])

    assert report.forgotten[0].pending_turns == 1
    journal = Journal(layout.journal_path)
    assert [t.id for t in journal.open()] == ["s1-t9", "s9-t2"]
    assert journal.seen(said)  # the same input fed again is not extracted again either
    journal.close()
    assert _holding(layout, target.content, "MySQL") == []


class _Killed(BaseException):
    """Stands in for kill -9 at a crash point: nothing catches it."""


def _crash_at(monkeypatch: pytest.MonkeyPatch, n: int) -> list[str]:
    """Make forget's ``n``-th crash point kill it (0: never); returns the points reached."""
    reached: list[str] = []

    def point(name: str) -> None:
        reached.append(name)
        if len(reached) == n:
            raise _Killed(name)

    monkeypatch.setattr(forget_mod, "crashpoint", point)
    return reached


def _quote_elsewhere(folder: Folder, facts: Sequence[Fact], by: Fact) -> None:
    """State that holds the statements where only their text can find them: their source
    turns pending in the journal, a judge's reason about ``by`` quoting them."""
    journal = Journal(folder.layout.journal_path)
    journal.open()
    actions = ActionLog(folder.layout.actions_path)
    for fact in facts:
        journal.append(Turn(fact.source_turn_ids[0], fact.session, Role.USER, fact.content, T0))
        actions.record("update_note", "applied", f"like: {fact.content}", memory_id=by.id)
    journal.close()


def _cached(folder: Folder, facts: Sequence[Fact]) -> list[str]:
    keys = set(np.fromfile(next(folder.layout.embedding_cache_dir.glob("*.keys")), "<u8"))
    return [f.id for f in facts if folder.embedder().key(f.content) in keys]


def test_a_forget_killed_at_any_step_is_finished_by_running_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = build_lineage(tmp_path / "probe")
    reached = _crash_at(monkeypatch, 0)
    forget_in(probe.folder, [probe.x.id])
    assert set(reached) == {forget_mod.CRASH_POINT} and len(reached) >= 8
    for n in range(1, len(reached) + 1):
        chain = build_lineage(tmp_path / f"killed-at-{n}")
        folder, gone = chain.folder, [chain.x, *chain.retired]
        _quote_elsewhere(folder, gone, chain.y)
        assert _cached(folder, gone) == [f.id for f in gone]
        _crash_at(monkeypatch, n)
        with pytest.raises(_Killed):
            forget_in(folder, [chain.x.id])
        monkeypatch.undo()
        assert known_in(folder, chain.x.id), n

        report = forget_in(folder, [chain.x.id])

        assert {f.id for f in report.forgotten} == {f.id for f in gone}, n
        assert _holding(folder.layout, *(f.content for f in gone)) == [], n
        assert _cached(folder, gone) == [], n
        assert folder.paths[chain.y.id].exists(), n
        assert examine_folder(folder).ok, n


def test_the_crash_loop_can_kill_forget_between_steps(folder: Folder) -> None:
    """The real crash point: ENGRAM_CRASH_AT=forget.step:2 kills a forget in another process
    with SIGKILL; a forget run afterwards finishes the job."""
    target = folder.fact(STATEMENTS[1][3])
    script = (
        "import sys; from pathlib import Path\n"
        "from engram_md.app import open_writer\n"
        "from engram_md.maintain.forget import forget\n"
        "from tests.test_forget import embedder_for, make_cfg\n"
        "cfg = make_cfg(Path(sys.argv[1]))\n"
        "with open_writer(cfg, embedder=embedder_for(cfg.layout), reconcile=False) as parts:\n"
        "    forget(parts, [sys.argv[2]])\n"
    )
    root = folder.cfg.memory_dir.parent
    killed = subprocess.run(
        [sys.executable, "-c", script, str(root), target.id],
        cwd=REPO,
        env=clean_env(ENGRAM_CRASH_AT=f"{forget_mod.CRASH_POINT}:2"),
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert known_in(folder, target.id)

    forget_in(folder, [target.id])
    assert _holding(folder.layout, target.content, "MySQL") == []
    assert examine_folder(folder).ok


def test_unknown_ids_are_reported_missing(folder: Folder) -> None:
    report = forget_in(folder, ["fact-20990101-000000-deadbeef"])
    assert report.forgotten == () and report.missing == ("fact-20990101-000000-deadbeef",)
    assert not (folder.layout.state_dir / "forgotten.jsonl").exists()


def test_derived_entity_pages_stop_quoting_a_forgotten_fact(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, seal_open=True)
    layout = folder.layout
    ctx = Context(
        cfg=folder.cfg,
        layout=layout,
        now=T0 + timedelta(days=1),
        epoch=1,
        facts=[(folder.paths[f.id], f) for f in folder.facts.values()],
    )
    for change in plan_entities(ctx):
        assert isinstance(change, FileWrite)
        change.path.parent.mkdir(parents=True, exist_ok=True)
        change.path.write_text(change.text)
    pages = sorted(layout.entities_dir.glob("*.md"))
    target = folder.fact(STATEMENTS[3][3])
    quoting = [p for p in pages if "Alps" in p.read_text()]
    assert quoting, "the entity page should quote the fact before it is forgotten"

    report = forget_in(folder, [target.id])
    assert report.derived
    for page in layout.entities_dir.glob("*.md"):
        text = page.read_text()
        assert "Alps" not in text and folder.paths[target.id].name not in text
    assert any("Chamonix" in p.read_text() for p in layout.entities_dir.glob("*.md"))


# ---------------------------------------------------------------- the command


def test_the_forget_command_by_query_and_by_id(cli: Cli) -> None:
    ran = cli("run", input=sample("generic.jsonl").read_bytes())
    assert ran.returncode == 0, ran.stderr.decode()
    files = cli.fact_files()
    uv = next(rel for rel, data in files.items() if b"uv instead of pip" in data)

    # A query without --all-matches and without a terminal lists the matches and forgets
    # nothing.
    asked = cli("forget", "uv instead of pip")
    assert asked.returncode == 1 and "--all-matches" in asked.stderr.decode()
    assert "uv instead of pip" in asked.stdout.decode()
    assert cli.fact_files() == files

    gone = cli("forget", "uv instead of pip", "--yes", "--limit", "1", "--json")
    assert gone.returncode == 0, gone.stderr.decode()
    [item] = json.loads(gone.stdout)["forgotten"]
    assert item["path"] == uv and item["fileRemoved"] and item["indexRow"]
    assert set(cli.fact_files()) == set(files) - {uv}

    # reindex does not bring it back.
    assert cli("reindex").returncode == 0
    index = MemoryIndex.open(cli.state / "index", LocalMiniLM())  # reading needs no model
    assert item["id"] not in index.get([item["id"]]) and index.get(list(index.manifest()))

    # By id (in-process: an id needs no search, so no model is loaded).
    runner = CliRunner()
    args = ["--memory-dir", str(cli.memory), "--state-dir", str(cli.state)]
    typo = runner.invoke(app, [*args, "forget", "preference-20260302-090200-00000000"])
    assert typo.exit_code == 1 and "no memory named" in typo.output
    other_id = _id_of(cli, next(iter(cli.fact_files())))
    by_id = runner.invoke(app, [*args, "forget", other_id, "--reason", "test"])
    assert by_id.exit_code == 0, by_id.output
    assert f"forgot {other_id}" in by_id.output
    stones = (cli.state / "forgotten.jsonl").read_text().splitlines()
    assert [json.loads(s)["id"] for s in stones] == [item["id"], other_id]


def _id_of(cli: Cli, rel: str) -> str:
    for line in (cli.memory / rel).read_text().splitlines():
        if line.startswith("id: "):
            return line.removeprefix("id: ").strip()
    raise AssertionError(rel)
