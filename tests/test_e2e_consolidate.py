"""Acceptance: `engram-md consolidate` on a hand-written folder with planted problems, through
the real CLI, offline.

Planted: a contradiction (4 engineers, later "6 engineers, not 4"), two near-duplicate
preferences, an expired speculative fact, a fulfilled commitment from last year, an old trivial
moment, an old but protected decision, and unrelated facts around them.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engram_md.core.atomic import is_temp_file
from engram_md.core.models import Fact
from engram_md.core.paths import MemoryLayout
from engram_md.store.factfile import read_fact

from .conftest import Cli, clean_env
from .consolidate_folder import NOW, Planted, plant

ENV = clean_env(ENGRAM_NOW="2026-03-01T12:00:00Z")


def _tree(memory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(memory).as_posix(): p.read_bytes()
        for p in sorted(memory.rglob("*"))
        if p.is_file() and not is_temp_file(p)  # a write in flight is not a change yet
    }


def _where(layout: MemoryLayout, fact: Fact) -> tuple[str, Fact]:
    """Where the fact lives now ("facts" or "archive") and what it says; never lost."""
    live = layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
    archived = layout.archive_dir / live.relative_to(layout.memory_dir)
    found = [(name, p) for name, p in (("facts", live), ("archive", archived)) if p.exists()]
    assert len(found) == 1, f"{fact.id}: expected one file, found {found}"
    name, path = found[0]
    return name, read_fact(path)


def _run(cli: Cli, *args: str, env: dict[str, str] = ENV) -> dict[str, Any]:
    done = cli("consolidate", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def _plan_items(payload: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["action"], c["path"], c.get("target"), c.get("status")) for c in payload["changes"]]


def _check_outcome(layout: MemoryLayout, planted: Planted) -> None:
    status = {}
    for fact in planted.all():
        place, now = _where(layout, fact)
        status[fact.id] = (place, now.status.value)
        assert now.content == fact.content  # statements are never rewritten
    assert status[planted.old_team.id] == ("facts", "superseded")
    assert status[planted.new_team.id] == ("facts", "active")
    assert status[planted.pref_first.id] == ("facts", "active")
    assert status[planted.pref_second.id] == ("facts", "merged")
    assert status[planted.decision.id] == ("facts", "active")  # protected, however old
    assert status[planted.trivial.id] == ("archive", "archived")
    for retired in (planted.speculative, planted.commitment):
        place, now = _where(layout, retired)
        assert now.status.value != "active", retired.id
        assert now.status_history and now.status_history[-1].to_status is now.status
    for filler in planted.fillers:
        assert status[filler.id] == ("facts", "active")
    _, old = _where(layout, planted.old_team)
    _, new = _where(layout, planted.new_team)
    assert old.superseded_by == new.id and new.supersedes == (old.id,)
    assert old.status_history[-1].at == NOW
    _, first = _where(layout, planted.pref_first)
    _, second = _where(layout, planted.pref_second)
    assert first.merged_from == (second.id,) and second.superseded_by == first.id


def test_consolidate_offline_end_to_end(cli: Cli) -> None:
    layout = MemoryLayout(cli.memory, cli.state)
    planted = plant(layout)
    original = _tree(cli.memory)

    dry = _run(cli, "--dry-run")
    assert dry["dryRun"] and dry["changes"]
    assert _tree(cli.memory) == original and not cli.state.exists()  # touched nothing

    real = _run(cli)
    assert not real["dryRun"] and real["applied"] > 0
    assert _plan_items(real) == _plan_items(dry)  # the plan is what the run did
    _check_outcome(layout, planted)
    assert Path(real["report"]).is_file()

    # History through the CLI.
    shown = cli("history", planted.old_team.id, "--json", env=ENV)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["supersededBy"][0]["id"] == planted.new_team.id

    # A second run right after changes nothing in memory/.
    after_first = _tree(cli.memory)
    _run(cli)
    assert _tree(cli.memory) == after_first


def test_kill_9_mid_run_then_the_next_run_completes(make_cli: Callable[[str], Cli]) -> None:
    clean, crashed = make_cli("clean"), make_cli("crashed")
    planted = plant(MemoryLayout(clean.memory, clean.state))
    shutil.copytree(clean.memory, crashed.memory)
    _run(clean)
    expected = _tree(clean.memory)

    before = _tree(crashed.memory)
    proc = crashed.popen("consolidate", env={**ENV, "ENGRAM_CONSOLIDATE_PAUSE": "1:120"})
    deadline = time.monotonic() + 120
    while _tree(crashed.memory) == before:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the run never wrote anything"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    if proc.stdout:
        proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()

    # No half-written file: every fact file parses (a temp file of the write that was cut
    # off may remain; it is never read as a fact), nothing is lost.
    layout = MemoryLayout(crashed.memory, crashed.state)
    for path in crashed.memory.rglob("*.md"):
        if "facts" in path.parts and not is_temp_file(path):
            read_fact(path)
    for fact in planted.all():
        _where(layout, fact)
    assert _tree(crashed.memory) != expected  # it really stopped half-way

    _run(crashed)
    assert _tree(crashed.memory) == expected
    assert not [p for p in crashed.memory.rglob("*") if is_temp_file(p)]  # orphans swept
    _check_outcome(layout, planted)


def test_refused_while_another_writer_holds_the_folder(cli: Cli) -> None:
    from engram_md.core.lock import WriterLock

    plant(MemoryLayout(cli.memory, cli.state))
    with WriterLock(cli.state / "lock"):
        done = cli("consolidate", env=ENV)
    assert done.returncode == 3
    assert b"consolidates by itself" in done.stderr


def test_safety_rail_through_the_cli(cli: Cli) -> None:
    plant(MemoryLayout(cli.memory, cli.state), fillers=0)
    before = _tree(cli.memory)
    done = cli("consolidate", env=ENV)
    assert done.returncode == 4 and b"--force" in done.stderr
    assert _tree(cli.memory) == before  # --force is covered in test_consolidate.py
