"""The structure stage end to end on real files: boxes, traces, edges, crash recovery."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from engram_md.core.config import Config, load_config
from engram_md.core.models import Fact
from engram_md.core.paths import MemoryLayout
from engram_md.core.telemetry import ActionLog
from engram_md.organize.boxfile import read_box
from engram_md.organize.structure import Structure
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact
from engram_md.text.hashing import content_hash

from .test_topics import T0, make_fact


def config(tmp_path: Path, **overrides: object) -> Config:
    base: dict[str, object] = {"memory_dir": tmp_path / "memory", "state_dir": tmp_path / "state"}
    base.update(overrides)
    return load_config(None, env={}, overrides=base)


class Rig:
    def __init__(self, tmp_path: Path, **overrides: object) -> None:
        self.cfg = config(tmp_path, **overrides)
        self.layout = MemoryLayout(self.cfg.memory_dir, self.cfg.state_dir)
        self.store = MemoryStore.open(self.layout)
        self.reopen()

    def reopen(self) -> None:
        """A new process: everything reloaded from disk."""
        self.structure = Structure(self.cfg, self.layout, ActionLog(self.layout.actions_path))

    def write(self, fact: Fact, *, crash_before_add: bool = False) -> tuple[Path, Fact]:
        fact = self.structure.prepare(fact)
        path = self.store.write_new(fact)
        if not crash_before_add:
            self.structure.add(path, fact)
        return path, fact

    def boxes(self) -> list[Path]:
        return sorted(self.layout.boxes_dir.rglob("*.md"))


def fact(i: int, text: str, tags: tuple[str, ...], minutes: float, **kw: Any) -> Fact:
    return make_fact(
        id=f"fact-{i:03d}",
        content=text,
        tags=tags,
        created=T0 + timedelta(minutes=minutes),
        content_hash=content_hash(text),
        **kw,
    )


def test_facts_get_the_id_of_the_box_they_join_at_creation(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    p1, f1 = rig.write(fact(1, "We move to Postgres.", ("postgres", "migration"), 0))
    p2, f2 = rig.write(fact(2, "PostgreSQL backups run nightly.", ("postgresql",), 3))
    assert f1.box_id is not None and f1.box_id == f2.box_id
    assert read_fact(p1).box_id == read_fact(p2).box_id == f1.box_id
    assert rig.boxes() == []  # still open
    state = json.loads(rig.layout.open_box_path.read_text())
    assert [m["id"] for m in state["open"]["s1"]["members"]] == [f1.id, f2.id]


def test_an_idle_gap_seals_writes_the_box_and_weaves_a_trace(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    p1, f1 = rig.write(fact(1, "We move to Postgres.", ("postgres",), 0))
    _, f2 = rig.write(fact(2, "Postgres needs a bigger disk.", ("postgres",), 68))
    assert f2.box_id != f1.box_id
    [path] = rig.boxes()
    box = read_box(path, rig.layout)
    assert box.id == f1.box_id and box.seal_reason == "idle"
    assert box.memory_ids == (f1.id,)
    assert box.members[0].path == rig.layout.relative(p1)
    assert box.trace_id is not None
    assert box.sealed_at == T0 + timedelta(minutes=68)
    traces = json.loads(rig.layout.traces_path.read_text())["traces"]
    assert box.trace_id in traces
    events = [json.loads(line) for line in rig.layout.actions_path.read_text().splitlines()]
    seals = [e for e in events if e["reason"] == "seal_box_idle"]
    assert seals and seals[0]["boxId"] == box.id and seals[0]["traceId"] == box.trace_id


def test_end_input_seals_every_open_box_and_the_next_box_joins_the_trace(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.write(fact(1, "We move to Postgres.", ("postgres", "migration"), 0))
    rig.write(fact(2, "Trip to Rome.", ("travel",), 1, session="s2"))
    sealed = rig.structure.end_input()
    assert {b.seal_reason for b in sealed} == {"end_of_input"}
    assert len(rig.boxes()) == 2
    assert json.loads(rig.layout.open_box_path.read_text())["open"] == {}
    # The same thread the next day continues the trace.
    rig.write(fact(3, "Postgres migration done.", ("postgres", "migration"), 60 * 24))
    [later] = rig.structure.end_input()
    assert later.trace_id == sealed[0].trace_id


def test_kill_between_fact_and_open_box_is_recovered_on_replay(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.write(fact(1, "We move to Postgres.", ("postgres",), 0))
    # The process dies after writing the second fact, before open-box.json knew it.
    p2, f2 = rig.write(fact(2, "Postgres 16 it is.", ("postgres",), 2), crash_before_add=True)
    rig.reopen()
    rig.structure.recover(p2, read_fact(p2))  # the replay's dedup found the file
    [box] = rig.structure.end_input()
    assert box.id == f2.box_id and f2.id in box.memory_ids
    assert rig.structure.graph is not None and rig.structure.graph.has_node(f2.id)


def test_kill_after_a_seal_recovers_the_new_box_with_the_same_id(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.write(fact(1, "We move to Postgres.", ("postgres",), 0))
    p2, f2 = rig.write(fact(2, "Trip to Rome.", ("travel",), 90), crash_before_add=True)
    assert len(rig.boxes()) == 1  # the first box was sealed before the fact was written
    rig.reopen()
    rig.structure.recover(p2, read_fact(p2))
    [box] = rig.structure.end_input()
    assert box.id == f2.box_id and box.memory_ids == (f2.id,)


def test_a_repeated_recover_changes_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    p1, f1 = rig.write(fact(1, "We move to Postgres.", ("postgres",), 0))
    before = rig.layout.open_box_path.read_bytes()
    edges = len(rig.structure.graph.edges())  # type: ignore[union-attr]
    rig.structure.recover(p1, read_fact(p1))
    assert rig.layout.open_box_path.read_bytes() == before
    assert len(rig.structure.graph.edges()) == edges  # type: ignore[union-attr]
    rig.structure.end_input()
    box_bytes = rig.boxes()[0].read_bytes()
    rig.structure.recover(p1, read_fact(p1))  # its box is sealed: nothing to restore
    assert rig.structure.boxes.open_boxes() == []  # type: ignore[union-attr]
    assert rig.boxes()[0].read_bytes() == box_bytes


def test_edges_are_written_and_a_restatement_reinforces_them(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.write(fact(1, "We run Postgres.", (), 0, entities=("tool-postgres",)))
    p2, f2 = rig.write(
        fact(2, "Postgres backups run nightly.", (), 1, entities=("tool-postgresql",))
    )
    graph = rig.structure.graph
    assert graph is not None
    [entity] = graph.edges("entity")
    rig.structure.confirm(p2, f2, T0 + timedelta(days=2))
    [again] = graph.edges("entity")
    assert again.confidence > entity.confidence and again.observations == 2
    lines = (rig.layout.graphs_dir / "entity.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["observations"] == 2


def test_with_boxes_and_graph_disabled_nothing_is_added(tmp_path: Path) -> None:
    rig = Rig(tmp_path, **{"boxes.enabled": False, "graph.enabled": False})
    _, f1 = rig.write(fact(1, "We run Postgres.", ("postgres",), 0))
    assert f1.box_id is None
    assert rig.structure.end_input() == []
    assert not rig.layout.graphs_dir.exists() and not rig.layout.open_box_path.exists()
