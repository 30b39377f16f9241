"""Topic normalization: spellings of the same subject meet, different subjects stay apart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from engram_md.core.models import Category, ConfidenceTier, Fact, MemoryKind, Source
from engram_md.organize.topics import entity_topic, fact_topics, normalize_topic, topic_overlap

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def make_fact(tags: tuple[str, ...] = (), entities: tuple[str, ...] = (), **kw: Any) -> Fact:
    values: dict[str, Any] = dict(
        id="fact-x",
        category=Category.DECISION,
        created=T0,
        updated=T0,
        source=Source.OFFLINE,
        confidence=0.95,
        confidence_tier=ConfidenceTier.EXPLICIT,
        importance=0.5,
        memory_kind=MemoryKind.NOTE,
        content="We move to PostgreSQL.",
        session="s1",
        source_turn_ids=("t1",),
        tags=tags,
        entities=entities,
    )
    values.update(kw)
    return Fact(**values)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("postgres", "PostgreSQL"),
        ("PostgreSQL 16", "postgresql"),
        ("Deploys", "deploy"),
        ("deploying", "deploy"),
        ("libraries", "library"),
        ("k8s", "Kubernetes"),
        ("Machine Learning", "ml"),
        ("Acme  Robotics", "acme-robotics"),
    ],
)
def test_spellings_of_one_subject_meet(a: str, b: str) -> None:
    assert normalize_topic(a) == normalize_topic(b)


@pytest.mark.parametrize(("a", "b"), [("status", "state"), ("mysql", "postgresql"), ("go", "goal")])
def test_different_subjects_stay_apart(a: str, b: str) -> None:
    assert normalize_topic(a) != normalize_topic(b)


def test_short_ing_words_keep_their_ending() -> None:
    assert normalize_topic("staging") == "staging"
    assert normalize_topic("morning") == "morning"
    assert normalize_topic("programming") == "program"


def test_words_that_only_look_plural_keep_their_s() -> None:
    assert normalize_topic("status") == "status"
    assert normalize_topic("analysis") == "analysis"
    assert normalize_topic("class") == "class"


def test_nothing_left_is_empty() -> None:
    assert normalize_topic("  --  ") == ""


def test_entity_type_prefix_is_dropped_but_only_a_known_one() -> None:
    assert entity_topic("tool-postgres") == "postgresql"
    assert entity_topic("person-dana") == "dana"
    assert entity_topic("entity-postgresql-16") == "postgresql"
    assert entity_topic("acme-robotics") == "acme-robotics"


def test_fact_topics_union_tags_entities_and_category() -> None:
    fact = make_fact(tags=("Postgres", "migrations"), entities=("tool-postgresql", "person-dana"))
    assert fact_topics(fact) == frozenset({"postgresql", "migration", "dana", "decision"})


def test_extra_aliases_are_applied_on_top_of_the_known_ones() -> None:
    fact = make_fact(tags=("PG",), entities=())
    assert "postgresql" not in fact_topics(fact)
    assert "postgresql" in fact_topics(fact, {"pg": "Postgres"})


def test_overlap_is_the_share_of_the_smaller_set() -> None:
    assert topic_overlap({"a", "b"}, {"a", "b", "c", "d"}) == 1.0
    assert topic_overlap({"a", "x"}, {"a", "b", "c", "d"}) == 0.5
    assert topic_overlap({"a"}, {"b"}) == 0.0
    assert topic_overlap(set(), {"a"}) == 0.0
    assert topic_overlap({"a", "b", "c"}, {"c", "d"}) == topic_overlap({"c", "d"}, {"a", "b", "c"})
