"""`engram-md history`: a fact's status changes, lineage, confirmations and actions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from engram_md.cli import app
from engram_md.consolidate.run import consolidate
from engram_md.consolidate.vectors import Vectors
from engram_md.core.config import Config
from engram_md.core.paths import MemoryLayout
from engram_md.maintain.history import fact_history, find_fact, render_history
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
    found = find_fact(layout, "my-own-note")
    assert found is not None and found.path == path
    data = fact_history(layout, "my-own-note")
    assert data is not None and data["supersededBy"] == [{"id": "gone-1", "missing": True}]
    assert "no file holds this id" in render_history(data)
    assert fact_history(layout, "fact-20990101-000000-deadbeef") is None


def test_cli(cfg: Config) -> None:
    layout, planted = _consolidated(cfg)
    runner = CliRunner()
    args = ["--memory-dir", str(layout.memory_dir), "--state-dir", str(layout.state_dir)]
    result = runner.invoke(app, [*args, "history", planted.old_team.id, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "superseded"
    result = runner.invoke(app, [*args, "history", "nope"])
    assert result.exit_code == 1
