"""Work spread over worker processes gives what the same work gives in this process: the same
results in the same order, progress as chunks finish, and the work done here when the workers
cannot be used. A consolidation that reads its folder and its statements on workers plans and
writes exactly what one without them does."""

from __future__ import annotations

import multiprocessing
import os
import shutil
from pathlib import Path

import pytest

from engram_md.consolidate.planner import load_facts
from engram_md.consolidate.run import Result, consolidate
from engram_md.consolidate.vectors import Vectors
from engram_md.core import workers
from engram_md.core.config import Config, load_config
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_facts
from engram_md.text.claims import claims_of, fact_claims

from .consolidate_folder import NOW, plant


def _in_worker() -> bool:
    return multiprocessing.parent_process() is not None


def pids(items: list[int]) -> list[tuple[int, int]]:
    """Each item with the id of the process that saw it."""
    return [(item, os.getpid()) for item in items]


def die_in_worker(items: list[int]) -> list[int]:
    """A worker killed half-way (out of memory, a signal): here the work goes through."""
    if _in_worker():
        os._exit(3)
    return [item * 2 for item in items]


@pytest.fixture
def spread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any input, in chunks of 3, even on a one-core machine."""
    monkeypatch.setattr(workers, "cores", lambda: 2)
    monkeypatch.setattr(workers, "MIN_ITEMS", 1)
    monkeypatch.setattr(workers, "CHUNK", 3)


@pytest.mark.usefixtures("spread")
def test_results_come_back_in_order_from_other_processes() -> None:
    seen: list[int] = []
    out = workers.map_spread(pids, list(range(10)), done=seen.append)
    assert [item for item, _ in out] == list(range(10))
    assert os.getpid() not in {pid for _, pid in out}
    assert seen == [3, 6, 9, 10]


@pytest.mark.usefixtures("spread")
def test_claims_read_on_workers_equal_claims_read_here() -> None:
    statements = [
        ("Dana moved to Munich last spring.", ("person-dana",)),
        ("Dana no longer lives in Berlin.", ("person-dana",)),
        ("Dana is planning to repaint the shed.", ("person-dana",)),
        ("The meeting is on Tuesday.", ()),
    ]
    expected = [fact_claims(text, entities) for text, entities in statements]
    assert workers.map_spread(claims_of, statements) == expected
    assert any(expected)  # the statements say something the rules read


@pytest.mark.usefixtures("spread")
def test_a_failed_worker_leaves_the_work_to_this_process(caplog: pytest.LogCaptureFixture) -> None:
    assert workers.map_spread(die_in_worker, [1, 2, 3, 4]) == [2, 4, 6, 8]
    assert "worker processes failed" in caplog.text


def test_small_inputs_stay_in_this_process() -> None:
    assert {pid for _, pid in workers.map_spread(pids, [1, 2, 3])} == {os.getpid()}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_a_consolidation_on_workers_writes_what_one_without_them_writes(
    cfg: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(cfg.layout)
    copy = tmp_path / "copy"
    shutil.copytree(cfg.layout.memory_dir, copy / "memory")
    overrides = {"memory_dir": copy / "memory", "state_dir": copy / "state"}
    alone = load_config(None, env={}, overrides=overrides)
    options = {"now": NOW, "vectors": Vectors(None, None)}
    here = consolidate(alone, alone.layout, MemoryStore.open(alone.layout), **options)

    monkeypatch.setattr(workers, "cores", lambda: 2)
    monkeypatch.setattr(workers, "MIN_ITEMS", 1)
    monkeypatch.setattr(workers, "CHUNK", 4)
    spread = consolidate(cfg, cfg.layout, MemoryStore.open(cfg.layout), **options)

    def planned(result: Result) -> list[tuple[str, str]]:
        return [(change.action, change.reason) for change in result.plan.changes]

    assert planned(here) and planned(spread) == planned(here)
    assert _snapshot(cfg.layout.memory_dir) == _snapshot(alone.layout.memory_dir)


def test_files_read_on_workers_report_broken_files_as_here(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(cfg.layout)
    day = cfg.layout.facts_dir / "2026-01-09"
    day.mkdir(parents=True, exist_ok=True)
    (day / "broken.md").write_text("---\nid: [unclosed\n---\n\nA statement.\n")
    (day / "latin1.md").write_bytes(b"---\nid: x\n---\n\ncaf\xe9\n")
    store = MemoryStore.open(cfg.layout)
    here = load_facts(store)
    monkeypatch.setattr(workers, "cores", lambda: 2)
    monkeypatch.setattr(workers, "MIN_ITEMS", 1)
    monkeypatch.setattr(workers, "CHUNK", 2)
    spread = load_facts(store)
    assert len(here.broken) == 2 and spread.broken == here.broken
    assert [(p, f.id) for p, f in spread.facts] == [(p, f.id) for p, f in here.facts]
    (gone,) = read_facts([day / "gone.md"])  # a file removed meanwhile: said, not raised
    assert isinstance(gone, str) and "cannot read" in gone
