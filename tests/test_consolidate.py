"""The orchestrator: planning, combining, the safety rail, applying, state, the daemon hook.

Steps of other modules are replaced by small local ones (``steps=...``), so these tests are
about the orchestration; vectors are left out (every same-subject pair is a candidate).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engram_md.consolidate.apply import Pause, RetireLimitError
from engram_md.consolidate.combine import apply_diff, combine
from engram_md.consolidate.plan import (
    Change,
    Context,
    FactMove,
    FactUpdate,
    FileWrite,
    retire_allowance,
)
from engram_md.consolidate.run import Result, consolidate
from engram_md.consolidate.schedule import DaemonConsolidation
from engram_md.consolidate.vectors import Vectors
from engram_md.core.config import Config
from engram_md.core.models import Fact, Status
from engram_md.core.paths import MemoryLayout
from engram_md.core.statefile import save_json
from engram_md.index.indexer import Indexer
from engram_md.store.access import AccessLog
from engram_md.store.dedup import HashIndex
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact, render_fact

from .conftest import Cli, HashEmbedder
from .consolidate_folder import NOW, Planted, make_fact, plant, write

DAY = timedelta(days=1)
NONE = Vectors(None, None)


def _planted(cfg: Config, fillers: int | None = None) -> tuple[MemoryLayout, MemoryStore, Planted]:
    """The planted folder, then the store opened on it (its hash index built from the files)."""
    layout = cfg.layout
    planted = plant(layout) if fillers is None else plant(layout, fillers=fillers)
    return layout, MemoryStore.open(layout), planted


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _status(layout: MemoryLayout, fact: Fact) -> Status:
    return read_fact(
        layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
    ).status


def _run(cfg: Config, layout: MemoryLayout, store: MemoryStore, **kw: Any) -> Result:
    options: dict[str, Any] = {"now": NOW, "vectors": NONE, "steps": ()}
    options.update(kw)
    return consolidate(cfg, layout, store, **options)


def test_contradiction_and_duplicates_end_to_end_in_process(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    result = _run(cfg, layout, store)
    assert _status(layout, planted.old_team) is Status.SUPERSEDED
    assert _status(layout, planted.new_team) is Status.ACTIVE
    assert _status(layout, planted.pref_first) is Status.ACTIVE
    assert _status(layout, planted.pref_second) is Status.MERGED
    assert result.plan.retiring == 2 and result.applied == 4
    # Telemetry, state, report.
    events = [json.loads(line) for line in layout.actions_path.read_text().splitlines()]
    assert {e["change"] for e in events} == {
        "supersede",
        "supersede_newer",
        "merge",
        "merge_survivor",
    }
    assert all(e["action"] == "update_note" and e["outcome"] == "applied" for e in events)
    state = json.loads(layout.consolidation_state_path.read_text())
    assert state["epoch"] == 1 and state["lastRun"]["changes"] == 4
    assert result.report is not None and "count: 4 → 6" in result.report.read_text()
    # The hash index follows (no indexer here): every file's hash is known.
    hashes = HashIndex.load(layout.hashes_path)
    assert hashes is not None and len(hashes) == len(planted.all())
    # A second run changes nothing and sees nothing new.
    before = _snapshot(layout.memory_dir)
    again = _run(cfg, layout, store)
    assert again.plan.changes == () and again.plan.new == 0
    assert _snapshot(layout.memory_dir) == before
    assert json.loads(layout.consolidation_state_path.read_text())["epoch"] == 2


def test_dry_run_writes_nothing_not_even_state(cfg: Config) -> None:
    layout = cfg.layout
    plant(layout)
    store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
    before = _snapshot(layout.memory_dir)
    result = _run(cfg, layout, store, dry_run=True)
    assert result.dry_run and len(result.plan.changes) == 4
    assert _snapshot(layout.memory_dir) == before
    assert not layout.state_dir.exists()


def test_safety_rail(cfg: Config) -> None:
    layout, store, _ = _planted(
        cfg, fillers=0
    )  # 8 active facts; retiring 2 is over 25 % of... int(8*.25)=2

    def retire_all(ctx: Context) -> list[Change]:
        return [
            FactUpdate(p, f, f.with_changes(status=Status.INVALIDATED), "retire", "test")
            for p, f in ctx.facts
            if f.status is Status.ACTIVE
        ]

    with pytest.raises(RetireLimitError, match="--force"):
        _run(cfg, layout, store, steps=(retire_all,))
    assert not layout.consolidation_state_path.exists()  # refused: nothing written
    result = _run(cfg, layout, store, steps=(retire_all,), force=True)
    assert result.plan.retiring == 8 and result.plan.allowed == 2
    assert retire_allowance(3, 0.25) == 1  # one is always allowed


def test_new_facts_since_the_last_run(cfg: Config) -> None:
    layout, store, _ = _planted(cfg)
    _run(cfg, layout, store)
    later = make_fact("Dana's team has 7 engineers.", created=NOW, entities=("person-dana",))
    write(layout, later)
    result = _run(cfg, layout, store)
    assert result.plan.new == 1
    # The 6-engineer correction is superseded by the newer statement; its history grows.
    (update,) = [c for c in result.plan.changes if isinstance(c, FactUpdate) and c.retires]
    assert update.after.superseded_by == later.id
    assert [h.to_status for h in update.after.status_history] == [Status.SUPERSEDED]


def test_a_confirmation_is_not_new_but_an_edited_statement_is(cfg: Config) -> None:
    layout, store, _ = _planted(cfg)
    first = _run(cfg, layout, store)
    assert first.plan.new > 0
    path, fact = next(
        (p, f)
        for p, f in ((p, read_fact(p)) for p in store.fact_paths())
        if f.status is Status.ACTIVE and f.category.value == "fact"
    )
    # Re-stated: the file is rewritten with one more source turn and a later `updated`.
    confirmed = fact.with_changes(
        source_turn_ids=(*fact.source_turn_ids, "t-again"),
        confirmations=fact.confirmations + 1,
        updated=fact.updated + DAY,
    )
    write(layout, confirmed)
    assert _run(cfg, layout, store).plan.new == 0
    # Edited by hand: the statement changed, so it is compared with its neighbours again.
    path.write_text(path.read_text().replace(fact.content, fact.content + " Really."))
    assert _run(cfg, layout, store).plan.new == 1


def test_steps_see_earlier_plans_and_changes_combine(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    seen: dict[str, Status] = {}

    def watcher(ctx: Context) -> list[Change]:
        seen.update({f.id: f.status for _, f in ctx.facts})
        return []

    def tag_everything(ctx: Context) -> list[Change]:
        return [
            FactUpdate(p, f, f.with_changes(tags=(*f.tags, "seen")), "tag", "test")
            for p, f in ctx.facts
        ]

    def archive_trivial(ctx: Context) -> list[Change]:
        out: list[Change] = []
        for path, fact in ctx.facts:
            if fact.id == planted.trivial.id:
                target = layout.archive_dir / path.relative_to(layout.memory_dir)
                out.append(
                    FactMove(
                        path, target, fact.with_changes(status=Status.ARCHIVED), "archive", "old"
                    )
                )
        return out

    def page(ctx: Context) -> list[Change]:
        return [FileWrite(layout.memory_dir / "entities" / "x.md", "one\n", "entity", "a")]

    def page_again(ctx: Context) -> list[Change]:
        return [FileWrite(layout.memory_dir / "entities" / "x.md", "two\n", "entity", "b")]

    def broken(ctx: Context) -> list[Change]:
        raise RuntimeError("boom")

    steps = (watcher, tag_everything, archive_trivial, broken, page, page_again)
    result = _run(cfg, layout, store, steps=steps)
    assert seen[planted.old_team.id] is Status.SUPERSEDED  # the first step's plan is visible
    assert any("boom" in n for n in result.plan.notes)
    assert any("written by two steps" in n for n in result.plan.notes)
    assert (layout.memory_dir / "entities" / "x.md").read_text() == "two\n"
    old = read_fact(
        layout.fact_path("fact", planted.old_team.created, planted.old_team.content_hash[:8])
    )
    assert old.status is Status.SUPERSEDED and "seen" in old.tags  # both steps' edits
    moved = layout.archive_dir / layout.relative(
        layout.fact_path("moment", planted.trivial.created, planted.trivial.content_hash[:8])
    )
    assert read_fact(moved).status is Status.ARCHIVED and "seen" in read_fact(moved).tags
    assert not layout.fact_path(
        "moment", planted.trivial.created, planted.trivial.content_hash[:8]
    ).exists()
    # Order of application: survivors before the facts they retire, moves after updates.
    kinds = [(type(c).__name__, getattr(c, "retires", None)) for c in result.plan.changes]
    assert kinds.index(("FactMove", None)) > max(
        i for i, k in enumerate(kinds) if k[0] == "FactUpdate"
    )


def test_apply_diff_and_combine_rules(tmp_path: Path) -> None:
    fact = make_fact("Dana likes tea.", created=NOW)
    a = fact.with_changes(status=Status.SUPERSEDED, tags=("x",))
    b = fact.with_changes(importance=0.1, tags=("y",))
    assert apply_diff(a, fact, b) == fact.with_changes(
        status=Status.SUPERSEDED, importance=0.1, tags=("x", "y")
    )
    path = tmp_path / "f.md"
    first = [FactUpdate(path, fact, a, "one", "r1")]
    second = [FactUpdate(path, a, a.with_changes(importance=0.2), "two", "r2")]
    moves = [
        FactMove(
            path,
            tmp_path / "archive" / "f.md",
            a.with_changes(status=Status.ARCHIVED),
            "archive",
            "m1",
        ),
        FactMove(path, tmp_path / "elsewhere.md", a, "archive", "m2"),
    ]
    changes, notes = combine(
        [(first, {path: fact}), (second, {path: a}), (moves, {path: a})], {path: fact}
    )
    (move,) = changes
    assert isinstance(move, FactMove) and move.target == tmp_path / "archive" / "f.md"
    assert move.after.status is Status.ARCHIVED and move.after.importance == 0.2
    assert move.action == "one+two+archive" and move.reason == "r1; r2; m1"
    assert len(notes) == 1 and "second move" in notes[0]


def test_recalls_are_folded_into_state_once_and_no_file_changes(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    layout.access_path.write_text(json.dumps({"at": "x", "ids": [planted.decision.id]}) + "\n")
    decision = layout.fact_path(
        "decision", planted.decision.created, planted.decision.content_hash[:8]
    )
    before = decision.read_bytes()
    _run(cfg, layout, store)
    _run(cfg, layout, store)  # the recall was folded once: the second run adds nothing
    usage = AccessLog(layout.access_path).read()
    assert usage.accesses(planted.decision.id) == 1 and not usage.recent
    assert usage.standings[planted.decision.id].first_epoch == 1
    assert decision.read_bytes() == before


def test_index_follows_and_a_failed_judge_leaves_facts_pending(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    indexer = Indexer.open(cfg, layout, store, HashEmbedder())

    class Down:
        def decide(self, new: Fact, existing: object) -> None:
            return None

    try:
        result = _run(cfg, layout, store, indexer=indexer, judge=Down())
        assert result.plan.unjudged  # the judge was asked and could not answer
        state = json.loads(layout.consolidation_state_path.read_text())
        assert sorted(state["pending"]) == sorted(result.plan.unjudged)
        # The rules that need no model still ran: the team's new size is an update the
        # claim rules are sure of, judge or no judge, and the index was told.
        assert _status(layout, planted.old_team) is Status.SUPERSEDED
        row = indexer.index.get([planted.old_team.id])[planted.old_team.id]
        assert row.status == "superseded"
        again = _run(cfg, layout, store, indexer=indexer)
        still_active = [i for i in result.plan.unjudged if i != planted.old_team.id]
        assert again.plan.new >= len(still_active)
    finally:
        indexer.close()


def _every(cfg: Config, extractions: int, minutes: float) -> Config:
    schedule = {"every_extractions": extractions, "min_interval_minutes": minutes}
    return cfg.model_copy(update={"consolidate": cfg.consolidate.model_copy(update=schedule)})


def test_daemon_hook_runs_every_n_extractions(cfg: Config) -> None:
    cfg = _every(cfg, 2, 0)
    layout, store, planted = _planted(cfg)
    hook = DaemonConsolidation(cfg, layout, store, None, clock=lambda: NOW, steps=())
    save_json(layout.run_state_path, {"extractions": 1})
    hook()
    assert hook.runs == 0 and _status(layout, planted.old_team) is Status.ACTIVE
    save_json(layout.run_state_path, {"extractions": 2})
    hook()
    assert hook.runs == 1 and _status(layout, planted.old_team) is Status.SUPERSEDED
    hook()
    assert hook.runs == 1  # not due again until two more extractions


def test_daemon_hook_waits_out_the_interval_in_a_burst(cfg: Config) -> None:
    cfg = _every(cfg, 2, 10)
    layout, store, _ = _planted(cfg)
    clock = [NOW]
    hook = DaemonConsolidation(cfg, layout, store, None, clock=lambda: clock[0], steps=())
    save_json(layout.run_state_path, {"extractions": 2})
    hook()
    assert hook.runs == 1  # the first due run of a daemon is not held back
    save_json(layout.run_state_path, {"extractions": 10})
    clock[0] = NOW + timedelta(minutes=9)
    hook()
    assert hook.runs == 1  # enough extractions, but too soon
    clock[0] = NOW + timedelta(minutes=10)
    hook()
    assert hook.runs == 2


def test_the_end_of_a_one_shot_read_catches_up_the_deferred_run(cfg: Config) -> None:
    """A burst ran one consolidation early and the interval held back the rest: at the end
    of the read, the run is caught up, the interval waived."""
    cfg = _every(cfg, 2, 10)
    layout, store, planted = _planted(cfg)
    hook = DaemonConsolidation(cfg, layout, store, None, clock=lambda: NOW, steps=())
    save_json(layout.run_state_path, {"extractions": 2})
    hook()
    assert hook.runs == 1
    save_json(layout.run_state_path, {"extractions": 9})
    hook()
    assert hook.runs == 1  # due by count, but within the interval
    hook.catch_up()
    assert hook.runs == 2  # the burst is over: the interval is waived
    hook.catch_up()
    assert hook.runs == 2  # nothing extracted since
    save_json(layout.run_state_path, {"extractions": 10})
    hook.catch_up()
    assert hook.runs == 3  # one extraction, but this read ran one: its facts are rated alike

    # A read too short to reach the count leaves its facts to the next run, all alike.
    fresh = DaemonConsolidation(cfg, layout, store, None, clock=lambda: NOW, steps=())
    save_json(layout.run_state_path, {"extractions": 11})
    fresh.catch_up()
    assert fresh.runs == 0


def test_ingest_consolidates_what_its_burst_deferred(tmp_path: Path) -> None:
    """`ingest` over a transcript long enough for two scheduled runs, read faster than the
    interval: every fact is rated at the end, not only those of the first run."""
    root = tmp_path / "folder"
    root.mkdir()
    things = ["piano", "kayak", "violin", "telescope", "bonsai", "guitar", "drone", "canoe"]
    turns = [
        {"role": "user", "name": "Sam", "id": f"t{i}", "session": "s1",
         "timestamp": f"2026-03-02T09:00:{i:02d}Z",
         "content": f"Please remember that my {thing} number {i} is kept in room {100 + i}."}
        for i, thing in enumerate(things * 3)
    ]  # fmt: skip
    source = tmp_path / "talk.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in turns))
    config = tmp_path / "config.yaml"
    config.write_text(
        "buffer:\n  max_turns: 2\nconsolidate:\n  every_extractions: 4\n"
        "  min_interval_minutes: 60\n"
    )
    done = Cli(root)("--config", str(config), "ingest", str(source))
    assert done.returncode == 0, done.stderr.decode()
    facts = {p.stem.rsplit("-", 1)[-1] for p in (root / "memory" / "facts").rglob("*.md")}
    assert len(facts) == len(turns)  # twelve extractions: the schedule deferred a run
    rated = [json.loads(line)["id"] for line in (root / "state" / "access.jsonl").open()]
    assert {r.rsplit("-", 1)[-1] for r in rated} >= facts


def test_pause_hook_parsing() -> None:
    assert Pause.from_env("2:0.5") == Pause(2, 0.5)
    assert Pause.from_env("") is None and Pause.from_env("x") is None


def test_rendered_bytes_are_stable(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    _run(cfg, layout, store)
    path = layout.fact_path("fact", planted.old_team.created, planted.old_team.content_hash[:8])
    assert path.read_text() == render_fact(read_fact(path), path)


def test_orphaned_temp_files_are_swept_by_a_real_run_only(cfg: Config) -> None:
    layout, store, planted = _planted(cfg)
    live = layout.fact_path("fact", planted.old_team.created, planted.old_team.content_hash[:8])
    orphan = live.with_name(f".{live.name}.tmp-999999")
    orphan.write_text("---\nid: half")
    _run(cfg, layout, store, dry_run=True)
    assert orphan.exists()
    _run(cfg, layout, store)
    assert not orphan.exists() and read_fact(live).status is Status.SUPERSEDED
