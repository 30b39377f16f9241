"""`engram-md history`: a fact's status changes, lineage, confirmations and actions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram_md.cli import app
from engram_md.consolidate.run import consolidate
from engram_md.consolidate.vectors import Vectors
from engram_md.core.config import Config
from engram_md.core.paths import MemoryLayout
from engram_md.maintain.history import fact_history, render_history
from engram_md.store.fact_store import MemoryStore

from .consolidate_folder import NOW, Planted, make_fact, plant, write


def _consolidated(cfg: Config) -> tuple[MemoryLayout, Planted]:
    layout = cfg.layout
    planted = plant(layout)
    consolidate(
        cfg, layout, MemoryStore.open(layout), now=NOW, vectors=Vectors(None, None), steps=()
    )
    return layout, planted


def test_superseded_fact_tells_its_story(cfg: Config) -> None:
    layout, planted = _consolidated(cfg)
    data = fact_history(layout, planted.old_team.id)
    assert data is not None
    assert data["status"] == "superseded" and data["sourceTurnIds"] == ["t10"]
    (change,) = data["statusHistory"]
    assert (change["from"], change["to"], change["at"]) == (
        "active",
        "superseded",
        "2026-03-01T12:00:00Z",
    )
    assert [link["id"] for link in data["supersededBy"]] == [planted.new_team.id]
    assert data["supersededBy"][0]["status"] == "active"
    assert [a["change"] for a in data["actions"]] == ["supersede"]
    text = render_history(data)
    assert "active -> superseded" in text and "Dana's team has 6 engineers, not 4." in text

    newer = fact_history(layout, planted.new_team.id)
    assert newer is not None and [s["id"] for s in newer["supersedes"]] == [planted.old_team.id]


def test_merge_survivor_lists_what_it_absorbed(cfg: Config) -> None:
    layout, planted = _consolidated(cfg)
    data = fact_history(layout, planted.pref_first.id)
    assert data is not None
    assert [m["id"] for m in data["mergedFrom"]] == [planted.pref_second.id]
    assert data["mergedFrom"][0]["status"] == "merged"
    assert data["confirmations"] == 1 and data["sourceTurnIds"] == ["t5", "t70"]
    assert "merged from:" in render_history(data)


def test_hand_written_ids_and_missing_links(cfg: Config) -> None:
    layout = cfg.layout
    fact = make_fact("Dana keeps a paper notebook.", created=NOW)
    custom = fact.with_changes(id="my-own-note", superseded_by="gone-1")
    path = write(layout, custom)
    data = fact_history(layout, "my-own-note")
    assert data is not None and data["path"] == layout.relative(path)
    assert data["supersededBy"] == [{"id": "gone-1", "missing": True}]
    assert "no file holds this id" in render_history(data)
    assert fact_history(layout, "fact-20990101-000000-deadbeef") is None


def test_a_fact_is_named_by_its_id_its_path_or_its_file_name(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, planted = _consolidated(cfg)
    fact = planted.old_team
    path = layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
    rel = layout.relative(path)
    monkeypatch.chdir(layout.memory_dir.parent)  # where git prints "memory/facts/..."
    names = [
        fact.id,
        path.stem,
        path.name,
        rel,  # relative to the memory folder
        f"{layout.memory_dir.name}/{rel}",  # relative to the working folder
        str(path),
        f"elsewhere/memory/{rel}",  # as git prints it from a repository root elsewhere
    ]
    for name in names:
        data = fact_history(layout, name)
        assert data is not None and data["id"] == fact.id, name
    for name in ("facts/2026-01-10/fact-000000-00000000.md", "fact-000000-00000000", "../x.md"):
        assert fact_history(layout, name) is None, name


def test_an_archived_copy_yields_to_the_live_file(cfg: Config) -> None:
    layout = cfg.layout
    fact = make_fact("Dana keeps a paper notebook.", created=NOW)
    live = write(layout, fact)
    archived = layout.archive_dir / Path(layout.relative(live))
    archived.parent.mkdir(parents=True)
    archived.write_bytes(live.read_bytes())
    for name in (fact.id, live.stem, layout.relative(archived)):
        data = fact_history(layout, name)
        assert data is not None and data["path"] == layout.relative(live), name


def test_cli(cfg: Config) -> None:
    layout, planted = _consolidated(cfg)
    runner = CliRunner()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    result = runner.invoke(app, [*args, "history", planted.old_team.id, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "superseded"
    old = planted.old_team
    path = layout.fact_path(old.category.value, old.created, old.content_hash[:8])
    by_name = runner.invoke(app, [*args, "history", path.stem, "--json"])
    assert by_name.exit_code == 0, by_name.output
    assert json.loads(by_name.stdout)["id"] == old.id
    result = runner.invoke(app, [*args, "history", "nope"])
    assert result.exit_code == 1 and "no memory named 'nope'" in result.output
