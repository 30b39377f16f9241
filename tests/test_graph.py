"""The fact graph: the three edge rules, reinforcement, decay, removal, damaged files."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engram_md.core.config import GraphConfig
from engram_md.core.models import Category, Fact
from engram_md.organize.graph import (
    GraphStore,
    causal_marker,
    decayed,
    load_adjacency,
    node_words,
)

from .test_topics import T0, make_fact


def fact(i: int, text: str, entities: tuple[str, ...] = (), minutes: float = 0, **kw: Any) -> Fact:
    return make_fact(
        id=f"f{i}",
        content=text,
        entities=entities,
        created=T0 + timedelta(minutes=minutes or i),
        **kw,
    )


def store(tmp_path: Path, **cfg: Any) -> GraphStore:
    return GraphStore(tmp_path / "graphs", GraphConfig(**cfg))


def kinds(edges) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return sorted((e.kind, e.source, e.target) for e in edges)


def test_time_edges_chain_the_facts_of_a_session(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "Alpha one."))
    g.link(fact(2, "Beta two.", session="other"))
    edges = g.link(fact(3, "Gamma three."))
    assert kinds(edges) == [("time", "f1", "f3")]
    assert edges[0].confidence == round(0.7 * 0.95, 3)


def test_entity_edges_join_facts_naming_the_same_thing_however_spelt(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "We run Postgres.", ("tool-postgres",), session="a"))
    g.link(fact(2, "Travel to Rome.", ("place-rome",), session="b"))
    edges = g.link(fact(3, "PostgreSQL 16 is out.", ("entity-postgresql-16",), session="c"))
    assert kinds(edges) == [("entity", "f3", "f1")]
    assert edges[0].label == "postgresql"


def test_a_causal_marker_links_to_the_earlier_fact_it_refers_to(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "The staging deploy failed on Monday."))
    g.link(fact(2, "Priya joins the team next week."))
    edges = g.link(fact(3, "The deploy failed because the disk was full."))
    causal = [e for e in edges if e.kind == "causal"]
    assert [(e.source, e.target, e.marker) for e in causal] == [("f3", "f1", "because")]
    assert causal[0].confidence == round(0.6 * 0.95, 3)


def test_no_marker_no_causal_edge(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "The staging deploy failed on Monday."))
    assert not [e for e in g.link(fact(2, "The deploy failed again.")) if e.kind == "causal"]


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        ("We moved to uv so that builds are faster.", "so that"),
        ("Due to the outage we paused.", "due to"),
        ("As a result, the release slipped.", "as a result"),
        ("The leak led to the crash.", "led to"),
        ("Therefore we roll back.", "therefore"),
        ("Nothing causal in here.", None),
    ],
)
def test_causal_markers(text: str, marker: str | None) -> None:
    assert causal_marker(text) == marker


def test_node_words_skip_stop_words_and_normalize() -> None:
    assert node_words("The deploys failed because the disk was full") == (
        "deploy",
        "disk",
        "failed",
        "full",
    )


def test_observing_an_edge_again_reinforces_it_up_to_one(tmp_path: Path) -> None:
    g = store(tmp_path, reinforce=0.05)
    g.link(fact(1, "We run Postgres.", ("tool-postgres",)))
    f2 = fact(2, "Postgres backups nightly.", ("tool-postgres",))
    g.link(f2)
    [first] = g.edges("entity")
    g.link(f2, at=T0 + timedelta(days=1))  # said again a day later
    [again] = g.edges("entity")
    assert again.confidence == round(first.confidence + 0.05, 3)
    assert again.observations == 2 and again.last_observed == T0 + timedelta(days=1)
    for day in range(2, 12):
        g.link(f2, at=T0 + timedelta(days=day))
    assert g.edges("entity")[0].confidence == 1.0


def test_the_store_reloads_to_the_same_state(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "We run Postgres.", ("tool-postgres",)))
    g.link(fact(2, "Postgres backups nightly.", ("tool-postgres",)))
    g.link(fact(2, "Postgres backups nightly.", ("tool-postgres",)), at=T0 + timedelta(days=1))
    again = store(tmp_path)
    assert sorted(again.edges(), key=lambda e: e.key) == sorted(g.edges(), key=lambda e: e.key)
    assert [n.id for n in again.nodes()] == [n.id for n in g.nodes()]
    for kind in ("entity", "time", "causal"):
        assert (tmp_path / "graphs" / f"{kind}.jsonl").exists()


def test_decay_is_linear_per_window_after_grace_with_a_floor() -> None:
    kw: dict[str, float] = dict(decay=0.1, window_days=90, grace_days=90, floor=0.1)
    assert decayed(0.8, 89, 0, **kw) == (0.8, 0)
    assert decayed(0.8, 179, 0, **kw) == (0.8, 0)
    assert decayed(0.8, 180, 0, **kw) == (0.7, 1)
    assert decayed(0.8, 360, 0, **kw) == (pytest.approx(0.5), 3)
    assert decayed(0.8, 360, 3, **kw) == (0.8, 3)  # already applied: nothing again
    assert decayed(0.25, 2000, 0, **kw) == (0.1, 21)
    assert decayed(0.05, 2000, 0, **kw) == (0.05, 21)


def test_apply_decay_is_idempotent_and_persisted(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "Alpha."))
    g.link(fact(2, "Beta."))
    [edge] = g.edges()
    later = T0 + timedelta(days=200)
    assert g.apply_decay(later) == 1
    assert g.apply_decay(later) == 0
    [decayed_edge] = store(tmp_path).edges()
    assert decayed_edge.confidence == round(edge.confidence - 0.1, 6)
    # Seeing the edge again restarts its clock.
    g.link(fact(2, "Beta."), at=later)
    assert g.edges()[0].decay_windows == 0


def test_removing_a_node_removes_its_edges_on_disk_too(tmp_path: Path) -> None:
    g = store(tmp_path)
    for i in range(1, 4):
        g.link(fact(i, f"Postgres note {i}.", ("tool-postgres",)))
    assert any("f2" in (e.source, e.target) for e in g.edges())
    removed = g.remove_nodes({"f2"})
    assert removed > 0
    for graph in (g, store(tmp_path)):
        assert not [e for e in graph.edges() if "f2" in (e.source, e.target)]
        assert not graph.has_node("f2")
    assert g.adjacency().degree("f2") == 0 and g.adjacency().degree("f1") > 0


def test_a_truncated_last_line_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    g = store(tmp_path)
    g.link(fact(1, "Alpha."))
    g.link(fact(2, "Beta."))
    path = tmp_path / "graphs" / "time.jsonl"
    with path.open("a") as handle:
        handle.write('{"kind": "time", "source": "f2", "tar')  # the crash
    reader = GraphStore.load(tmp_path / "graphs")
    assert len(reader.edges()) == 1
    assert "damaged" in caplog.text
    assert path.read_text().endswith('"tar')  # a reader never rewrites
    writer = store(tmp_path)
    writer.link(fact(3, "Gamma."))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["target"] for line in lines] == ["f2", "f3"]


def test_appends_are_compacted(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "Alpha."))
    f2 = fact(2, "Beta.")
    for day in range(400):
        g.link(f2, at=T0 + timedelta(days=day))
    lines = (tmp_path / "graphs" / "time.jsonl").read_text().splitlines()
    assert len(lines) < 300
    assert store(tmp_path).edges()[0].observations == 400


def test_category_alone_links_nothing(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "Alpha.", category=Category.DECISION, session="a"))
    assert g.link(fact(2, "Beta.", category=Category.DECISION, session="b")) == []


def test_a_name_every_fact_mentions_links_only_a_few_recent_facts(tmp_path: Path) -> None:
    g = store(tmp_path)
    for i in range(1, 30):
        g.link(fact(i, f"Dana note {i}.", ("person-dana",), session=f"s{i}"))
    edges = g.link(fact(99, "Dana and Postgres.", ("person-dana",), minutes=99, session="x"))
    targets = sorted(e.target for e in edges if e.kind == "entity")
    assert targets == ["f25", "f26", "f27", "f28", "f29"]


def test_facts_sharing_more_entities_win_the_limited_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engram_md.organize.graph.MAX_ENTITY_EDGES", 3)
    g = store(tmp_path)
    plan = [("tool-postgres",)] * 4 + [("org-acme",)] * 4 + [("tool-postgres", "org-acme")]
    plan += [("tool-postgres",)] * 2 + [("org-acme",)] * 2
    for i, entities in enumerate(plan, 1):
        g.link(fact(i, f"Note {i}.", entities, session=f"s{i}"))
    edges = g.link(fact(99, "Both.", ("tool-postgres", "org-acme"), minutes=99, session="x"))
    # f9 shares both names; then the most recent: f13, f12.
    assert sorted(e.target for e in edges if e.kind == "entity") == ["f12", "f13", "f9"]


def test_recall_can_load_the_adjacency_without_the_store(tmp_path: Path) -> None:
    g = store(tmp_path)
    g.link(fact(1, "The staging deploy failed.", ("tool-k8s",)))
    g.link(fact(2, "Kubernetes upgrade planned.", ("tool-kubernetes",)))
    g.link(fact(3, "The deploy failed because the disk was full."))
    g.link(fact(2, "Kubernetes upgrade planned.", ("tool-kubernetes",)), at=T0 + timedelta(days=1))
    fast = load_adjacency(tmp_path / "graphs")
    full = g.adjacency()
    assert sorted(fast.edges) == sorted(full.edges)
    assert {s.kind for s in fast.edges} == {"entity", "time", "causal"}
