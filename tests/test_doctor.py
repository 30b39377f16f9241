"""`doctor`: every planted disagreement is found, repaired, and the folder checks clean after."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram_md.app import open_writer
from engram_md.cli import app
from engram_md.core.lock import WriterLock
from engram_md.core.models import Category, Fact, Source, Status
from engram_md.index.table import IndexRow, MemoryIndex
from engram_md.maintain.doctor import repair
from engram_md.maintain.problems import DoctorReport, Problem
from engram_md.organize.boxes import BoxBuilder
from engram_md.organize.boxfile import drop_box_members, read_box
from engram_md.organize.graph import GraphStore
from engram_md.organize.traces import update_traces
from engram_md.store.dedup import HashIndex
from engram_md.store.factfile import read_fact, render_fact, write_fact

from .test_forget import STATEMENTS, Folder, build_folder, examine_folder, make_fact

DEAD_PID = 4_194_303 + 1000  # above any Linux pid_max: never a running process


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return build_folder(tmp_path)


def repair_folder(folder: Folder, found: DoctorReport | None = None) -> DoctorReport:
    """A repair as the command runs it: on a writer's parts (with the folder's embedder),
    measured against what examining found before they were opened."""
    opened = open_writer(
        folder.cfg, embedder=folder.embedder(), reconcile=False, rebuild_missing=False
    )
    with opened as parts:
        return repair(parts, found=found.problems if found is not None else None)


def _kinds(report: DoctorReport) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in report.problems:
        out.setdefault(p.kind, set()).add(p.subject)
    return out


def _keys(problems: list[Problem]) -> list[tuple[str, str]]:
    return sorted(p.key for p in problems)


def _rel(folder: Folder, fact: Fact) -> str:
    return folder.layout.relative(folder.paths[fact.id])


def _box_file(folder: Folder, box_id: str | None) -> Path:
    [path] = list(folder.layout.boxes_dir.rglob(f"{box_id}.md"))
    return path


def _write_by_hand(folder: Folder, fact: Fact) -> None:
    layout = folder.layout
    write_fact(layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8]), fact)


def _manual_fact() -> Fact:
    made = make_fact("s9", 30, Category.FACT, "The staging database runs on port 5433.")
    return replace(made, source=Source.MANUAL)


def test_a_fresh_folder_is_healthy(folder: Folder) -> None:
    report = examine_folder(folder)
    assert report.ok and report.problems == [] and not report.writer_active
    assert report.to_json()["ok"] is True


def test_every_planted_problem_is_found_and_repaired(folder: Folder) -> None:
    layout = folder.layout
    facts = [folder.fact(s[3]) for s in STATEMENTS]
    # 1. Orphan temp files in memory/ and state/.
    day = folder.paths[facts[0].id].parent
    tmp_memory = day / f".{folder.paths[facts[0].id].name}.tmp-{DEAD_PID}"
    tmp_memory.write_text("half a fact")
    tmp_state = layout.state_dir / f".traces.json.tmp-{DEAD_PID}"
    tmp_state.write_text("{")
    # 2. A fact deleted by hand: its row, hash entry, graph node/edges and box link dangle.
    deleted = facts[1]
    folder.paths[deleted.id].unlink()
    # 3. A fact deleted by hand from the open box.
    open_gone = facts[3]
    folder.paths[open_gone.id].unlink()
    # 4. A fact added by hand: no row, no hash entry; its boxId names no box.
    added = replace(
        make_fact("s9", 30, Category.FACT, "The staging database runs on port 5433."),
        box_id="box-20260302-093000-00000000",
    )
    added_path = layout.fact_path(added.category.value, added.created, added.content_hash[:8])
    write_fact(added_path, added)
    # 5. A fact edited by hand (status): its row is stale.
    edited = facts[2]
    write_fact(folder.paths[edited.id], replace(edited, status=Status.INVALIDATED))
    os.utime(folder.paths[edited.id], ns=(1, 1))
    # 6. Hash drift: an entry for a file that never existed.
    with open(layout.hashes_path, "a") as handle:
        handle.write("0123456789abcdef facts/2026-03-02/fact-235959-01234567.md\n")
    # 7. A graph edge naming a fact that never existed.
    with open(layout.graphs_dir / "entity.jsonl", "a") as handle:
        edge = {
            "kind": "entity",
            "source": facts[0].id,
            "target": "ghost-20260302-000000-00000000",
            "confidence": 0.5,
            "createdAt": "2026-03-02T09:00:00Z",
            "lastObserved": "2026-03-02T09:00:00Z",
        }
        handle.write(json.dumps(edge) + "\n")
    # 8. A box file deleted by hand: its trace entry and row dangle, its fact names no box.
    lone = facts[5]
    assert lone.box_id is not None
    [lone_box] = list(layout.boxes_dir.rglob(f"{lone.box_id}.md"))
    lone_box.unlink()
    # 9. Torn last lines in the journal and the telemetry.
    layout.journal_path.write_text('{"op": "seen", "keys": []}\n{"op": "tu')
    with open(layout.actions_path, "ab") as handle:
        handle.write(b'{"action": "discard", "outcome": "applied", "reason": "x"}')

    found = examine_folder(folder)
    kinds = _kinds(found)
    assert not found.ok
    assert kinds["temp_file"] == {
        f"memory/{layout.relative(tmp_memory)}",
        f"state/{tmp_state.name}",
    }
    assert {deleted.id, open_gone.id} <= kinds["index_row_orphan"]
    assert layout.relative(added_path) in kinds["index_row_missing"]
    assert layout.relative(folder.paths[edited.id]) in kinds["index_row_stale"]
    assert "0123456789abcdef" in kinds["hash_entry_orphan"]
    assert deleted.content_hash in kinds["hash_entry_orphan"]
    assert layout.relative(added_path) in kinds["hash_entry_missing"]
    assert {deleted.id, open_gone.id} <= kinds["graph_node_orphan"]
    assert any("ghost-" in s for s in kinds["graph_edge_orphan"])
    assert deleted.box_id in kinds["box_member_missing"]
    assert open_gone.box_id in kinds["box_member_missing"]
    assert kinds["fact_box_missing"] == {
        layout.relative(added_path),
        layout.relative(folder.paths[lone.id]),
    }
    assert kinds["trace_box_missing"] == {lone.box_id}
    assert lone.box_id in kinds["index_box_row_orphan"]
    assert kinds["torn_line"] == {"state/buffer-journal.jsonl", "state/memory-actions.jsonl"}

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert {p.key for p in fixed.repaired} == {p.key for p in found.problems}
    assert examine_folder(folder).ok

    # What the repairs did, place by place.
    assert not tmp_memory.exists() and not tmp_state.exists()
    index = MemoryIndex.open(layout.index_dir, folder.embedder())
    rows = index.get([deleted.id, open_gone.id, added.id, edited.id])
    assert set(rows) == {added.id, edited.id}
    assert rows[edited.id].status == "invalidated"
    hashes = HashIndex.load(layout.hashes_path)
    assert hashes is not None and hashes.lookup("0123456789abcdef") is None
    assert hashes.lookup(added.content_hash) == layout.relative(added_path)
    graph = GraphStore.load(layout.graphs_dir)
    assert not graph.has_node(deleted.id) and graph.has_node(facts[0].id)
    assert all("ghost-" not in e.target for e in graph.edges())
    [box_path] = list(layout.boxes_dir.rglob(f"{deleted.box_id}.md"))
    assert deleted.id not in read_box(box_path, layout).memory_ids
    assert deleted.content not in box_path.read_text()
    assert open_gone.id not in layout.open_box_path.read_text()
    assert read_fact(added_path).box_id is None and read_fact(folder.paths[lone.id]).box_id is None
    assert lone.box_id not in layout.traces_path.read_text()
    assert layout.journal_path.read_bytes() == b'{"op": "seen", "keys": []}\n'
    # A whole JSON line that only lacked its newline is kept.
    assert layout.actions_path.read_text().endswith('"reason": "x"}\n')


def test_unreadable_facts_are_reported_never_modified_and_keep_their_links(
    folder: Folder,
) -> None:
    layout = folder.layout
    broken = folder.fact(STATEMENTS[0][3])
    path = folder.paths[broken.id]
    text = render_fact(broken).replace("confidence: 0.95", "confidence: [oops")
    path.write_text(text)
    before = path.read_bytes()

    found = examine_folder(folder)
    kinds = _kinds(found)
    assert kinds["unreadable_fact"] == {layout.relative(path)}
    # Its id is still read out of the file: its graph node and box link are not orphans.
    assert "graph_node_orphan" not in kinds and "box_member_missing" not in kinds
    assert broken.id in kinds["index_row_orphan"]  # recall must not serve it meanwhile

    fixed = repair_folder(folder, found)
    assert not fixed.ok
    assert [p.kind for p in fixed.problems] == ["unreadable_fact"]
    # Its row and hash entry go (as the indexer drops them); they come back once it is fixed.
    assert sorted(p.kind for p in fixed.repaired) == ["hash_entry_orphan", "index_row_orphan"]
    assert path.read_bytes() == before
    assert GraphStore.load(layout.graphs_dir).has_node(broken.id)


def test_repair_is_refused_while_a_writer_holds_the_folder(folder: Folder) -> None:
    layout = folder.layout
    folder.paths[folder.fact(STATEMENTS[0][3]).id].unlink()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    with WriterLock(layout.lock_path, memory_dir=layout.memory_dir):
        refused = CliRunner().invoke(app, [*args, "doctor", "--repair"])
        assert refused.exit_code == 3
        assert "doctor --repair needs the memory folder" in refused.output
        # Examining still works beside the writer, and says a writer is there.
        report = examine_folder(folder)
        assert report.writer_active and not report.ok
    assert "index_row_orphan" in _kinds(examine_folder(folder))


def test_a_temp_file_of_a_running_writer_is_left_alone(folder: Folder) -> None:
    layout = folder.layout
    parent_pid = os.getppid()  # alive for the whole test
    in_flight = layout.state_dir / f".open-box.json.tmp-{parent_pid}"
    in_flight.write_text("{")
    with WriterLock(layout.lock_path, memory_dir=layout.memory_dir):
        assert examine_folder(folder).ok
    # With no writer holding the folder, nobody is finishing that write.
    assert [p.kind for p in examine_folder(folder).problems] == ["temp_file"]


def test_the_problem_and_report_values_serialize() -> None:
    problem = Problem("torn_line", "state/x.jsonl", "cut short")
    report = DoctorReport([problem], [Problem("temp_file", "memory/.a.tmp-1", "left")])
    assert not report.ok
    data = json.loads(json.dumps(report.to_json()))
    assert data["problems"] == [
        {"kind": "torn_line", "subject": "state/x.jsonl", "detail": "cut short"}
    ]
    assert data["repaired"][0]["kind"] == "temp_file" and data["ok"] is False


def test_the_doctor_command_exit_status_and_json(tmp_path: Path) -> None:
    # The command opens the configured (real) embedder: build the folder's index with it
    # by letting doctor --repair create it, which also checks a missing index is repaired.
    folder = build_folder(tmp_path)
    layout = folder.layout
    runner = CliRunner()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    first = runner.invoke(app, [*args, "doctor", "--json"])
    assert first.exit_code == 1
    data = json.loads(first.stdout)
    assert data["ok"] is False and {p["kind"] for p in data["problems"]} == {"index_outdated"}
    text = runner.invoke(app, [*args, "doctor"])
    assert text.exit_code == 1 and "doctor --repair" in text.stdout
    fixed = runner.invoke(app, [*args, "doctor", "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert "repaired  index_outdated" in fixed.stdout and "all good" in fixed.stdout
    assert runner.invoke(app, [*args, "doctor"]).exit_code == 0


# ---------------------------------------------------------------- the graph


def test_a_fact_missing_from_the_graph_is_linked_again(folder: Folder) -> None:
    layout, cfg = folder.layout, folder.cfg
    last = folder.fact(STATEMENTS[2][3])  # the last fact of session s1
    previous = folder.fact(STATEMENTS[1][3])
    GraphStore(layout.graphs_dir, cfg.graph).remove_nodes({last.id})  # node and edges gone

    found = examine_folder(folder)
    assert _keys(found.problems) == [("graph_node_missing", _rel(folder, last))]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == _keys(found.problems)
    graph = GraphStore.load(layout.graphs_dir)
    assert graph.has_node(last.id)
    # Linked as the structure stage links it: after the previous fact of its session.
    assert any(
        e.kind == "time" and {e.source, e.target} == {previous.id, last.id}
        for e in graph.edges_of(last.id)
    )


def test_only_facts_the_pipeline_links_are_expected_in_the_graph(folder: Folder) -> None:
    layout, cfg = folder.layout, folder.cfg
    _write_by_hand(folder, _manual_fact())  # a person wrote it: never linked
    retired = folder.fact(STATEMENTS[3][3])
    write_fact(folder.paths[retired.id], replace(retired, status=Status.INVALIDATED))
    GraphStore(layout.graphs_dir, cfg.graph).remove_nodes({retired.id})
    assert "graph_node_missing" not in _kinds(examine_folder(folder))

    # With the graph switched off, nothing is expected in it at all.
    active = folder.fact(STATEMENTS[0][3])
    GraphStore(layout.graphs_dir, cfg.graph).remove_nodes({active.id})
    graph_off = cfg.model_copy(update={"graph": cfg.graph.model_copy(update={"enabled": False})})
    assert "graph_node_missing" not in _kinds(examine_folder(folder, cfg=graph_off))
    assert _kinds(examine_folder(folder))["graph_node_missing"] == {_rel(folder, active)}


def test_an_edge_to_a_fact_that_is_no_graph_node_is_dropped(folder: Folder) -> None:
    layout = folder.layout
    manual = _manual_fact()
    _write_by_hand(folder, manual)
    assert repair_folder(folder).ok  # indexed; the graph leaves it alone
    first = folder.fact(STATEMENTS[0][3])
    kept = GraphStore.load(layout.graphs_dir).edges_of(first.id)
    edge = {
        "kind": "entity",
        "source": first.id,
        "target": manual.id,
        "confidence": 0.5,
        "createdAt": "2026-03-02T09:30:00Z",
        "lastObserved": "2026-03-02T09:30:00Z",
    }
    with open(layout.graphs_dir / "entity.jsonl", "a") as handle:
        handle.write(json.dumps(edge) + "\n")

    found = examine_folder(folder)
    assert _keys(found.problems) == [("graph_edge_dangling", f"entity:{first.id}->{manual.id}")]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == _keys(found.problems)
    graph = GraphStore.load(layout.graphs_dir)
    assert graph.edges_of(manual.id) == [] and graph.edges_of(first.id) == kept


# ---------------------------------------------------------------- boxes


def test_a_fact_its_open_box_does_not_list_joins_it_again(folder: Folder) -> None:
    layout = folder.layout
    before = layout.open_box_path.read_bytes()
    last = folder.fact(STATEMENTS[4][3])  # the last fact of session s2, whose box is open
    # As if killed between its write and its join.
    BoxBuilder(folder.cfg.boxes, layout.open_box_path).drop({last.id}, layout)

    found = examine_folder(folder)
    assert _keys(found.problems) == [("box_membership_mismatch", _rel(folder, last))]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == _keys(found.problems)
    assert layout.open_box_path.read_bytes() == before  # what the join would have saved


def test_a_fact_its_sealed_box_does_not_list_is_written_back_into_it(folder: Folder) -> None:
    layout, cfg = folder.layout, folder.cfg
    middle = folder.fact(STATEMENTS[1][3])  # the second of three in s1's sealed box
    path = _box_file(folder, middle.box_id)
    before = path.read_bytes()
    edit = drop_box_members(layout, path, {middle.id})
    assert edit is not None
    update_traces(cfg.traces, layout.traces_path, [edit])

    found = examine_folder(folder)
    assert _keys(found.problems) == [
        ("box_membership_mismatch", _rel(folder, middle)),
        ("index_box_row_stale", layout.relative(path)),
    ]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == _keys(found.problems)
    assert path.read_bytes() == before  # the box as its seal wrote it
    assert middle.id in read_box(path, layout).memory_ids


# ---------------------------------------------------------------- interrupted forgets


def _tombstone(folder: Folder, fact: Fact) -> None:
    """The first step of a forget, alone: as if it was killed right after."""
    stone = {
        "at": "2026-03-03T12:00:00Z",
        "id": fact.id,
        "path": _rel(folder, fact),
        "category": fact.category.value,
        "created": "2026-03-02T09:00:00Z",
        "session": fact.session,
        "boxId": fact.box_id,
        "reason": "test",
        "by": "test",
    }
    with open(folder.layout.state_dir / "forgotten.jsonl", "a") as handle:
        handle.write(json.dumps(stone) + "\n")


def test_a_forget_killed_after_its_tombstone_is_finished(folder: Folder) -> None:
    layout = folder.layout
    target = folder.fact(STATEMENTS[0][3])
    _tombstone(folder, target)

    found = examine_folder(folder)
    [problem] = found.problems
    assert problem.key == ("forget_unfinished", target.id)
    for place in ("fact file", "index row", "graph node", "place in a box"):
        assert place in problem.detail

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert ("forget_unfinished", target.id) in {p.key for p in fixed.repaired}
    assert not folder.paths[target.id].exists()
    assert MemoryIndex.open(layout.index_dir, folder.embedder()).get([target.id]) == {}
    assert not GraphStore.load(layout.graphs_dir).has_node(target.id)
    assert target.id not in read_box(_box_file(folder, target.box_id), layout).memory_ids
    assert examine_folder(folder).ok  # the tombstone alone is no problem


def test_a_forget_killed_half_way_is_finished(folder: Folder) -> None:
    layout, cfg = folder.layout, folder.cfg
    target = folder.fact(STATEMENTS[3][3])  # in the open box of s2
    _tombstone(folder, target)
    folder.paths[target.id].unlink()  # the file and the graph went; the rest is left
    GraphStore(layout.graphs_dir, cfg.graph).remove_nodes({target.id})

    found = examine_folder(folder)
    [problem] = [p for p in found.problems if p.kind == "forget_unfinished"]
    assert problem.subject == target.id
    assert "index row" in problem.detail and "place in a box" in problem.detail
    assert "graph node" not in problem.detail and "fact file" not in problem.detail

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert {p.key for p in found.problems} <= {p.key for p in fixed.repaired}
    assert target.id not in layout.open_box_path.read_text()


# ---------------------------------------------------------------- hashes and box rows


def test_a_missing_hash_index_is_rebuilt(folder: Folder) -> None:
    layout = folder.layout
    layout.hashes_path.unlink()

    found = examine_folder(folder)
    assert _keys(found.problems) == [("hashes_missing", "state/fact-hashes.txt")]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == _keys(found.problems)
    hashes = HashIndex.load(layout.hashes_path)
    assert hashes is not None
    for fact_id, path in folder.paths.items():
        fact = read_fact(path)
        assert hashes.lookup(fact.content_hash) == layout.relative(path), fact_id


def _drop_box_row(folder: Folder, path: Path) -> tuple[str, str]:
    box = read_box(path, folder.layout)
    MemoryIndex.open(folder.layout.index_dir, folder.embedder()).delete([box.id])
    return ("index_box_row_missing", folder.layout.relative(path))


def _edit_box(folder: Folder, path: Path) -> tuple[str, str]:
    """A box file edited by hand (a topic added): its row no longer says what the file does.
    (A touch alone is no problem: see test_cli_safety.)"""
    path.write_text(path.read_text().replace("topics: [", "topics: [edited-by-hand, ", 1))
    return ("index_box_row_stale", folder.layout.relative(path))


def _orphan_box_row(folder: Folder, path: Path) -> tuple[str, str]:
    index = MemoryIndex.open(folder.layout.index_dir, folder.embedder())
    box_id = read_box(path, folder.layout).id
    row = index.get([box_id])[box_id]
    ghost = replace(row, id="box-20260302-235900-00000000", path="boxes/2026-03-02/gone.md")
    index.upsert([ghost])
    return ("index_box_row_orphan", ghost.id)


@pytest.mark.parametrize("plant", [_drop_box_row, _edit_box, _orphan_box_row])
def test_each_box_row_problem_alone_is_repaired(
    folder: Folder, plant: Callable[[Folder, Path], tuple[str, str]]
) -> None:
    path = _box_file(folder, folder.fact(STATEMENTS[0][3]).box_id)
    before = {r.path: r.id for r in _box_rows(folder)}
    planted = plant(folder, path)

    found = examine_folder(folder)
    assert _keys(found.problems) == [planted]

    fixed = repair_folder(folder, found)
    assert fixed.ok, fixed.problems
    assert _keys(fixed.repaired) == [planted]
    assert {r.path: r.id for r in _box_rows(folder)} == before


def _box_rows(folder: Folder) -> list[IndexRow]:
    index = MemoryIndex.open(folder.layout.index_dir, folder.embedder())
    return [r for r in index.get(list(index.manifest())).values() if r.kind == "box"]


# ---------------------------------------------------------------- the command


def test_the_doctor_command_says_what_it_repaired(tmp_path: Path) -> None:
    folder = build_folder(tmp_path)
    layout = folder.layout
    runner = CliRunner()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    # The command's own embedder differs from the test's: let it build its index first.
    assert runner.invoke(app, [*args, "doctor", "--repair"]).exit_code == 0
    gone = folder.fact(STATEMENTS[2][3])
    day = folder.paths[gone.id].parent
    (day / f".{folder.paths[gone.id].name}.tmp-{DEAD_PID}").write_text("half a fact")
    folder.paths[gone.id].unlink()  # an index row without a file
    _write_by_hand(folder, _manual_fact())  # a file without an index row
    with open(layout.hashes_path, "a") as handle:  # hash drift
        handle.write("0123456789abcdef facts/2026-03-02/fact-235959-01234567.md\n")

    result = runner.invoke(app, [*args, "doctor", "--repair"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for kind, action in (
        ("temp_file", "deleted the temp file"),
        ("index_row_orphan", "dropped the index row"),
        ("index_row_missing", "indexed the file"),
        ("hash_entry_orphan", "rebuilt the hash index"),
    ):
        assert any(ln.startswith(f"repaired  {kind}  ") and action in ln for ln in lines), kind
    assert lines[-1].startswith("all good;") and "repaired" in lines[-1]
