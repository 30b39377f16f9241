"""Normalization rules: confidence tiers, expiry, importance, memory kind, policy class.

These are pure functions over text, so the tests need no files.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram_md.core.models import Category, ConfidenceTier, MemoryKind, PolicyClass
from engram_md.extract.normalize import (
    SPECULATIVE_TTL_DAYS,
    classify_kind,
    confidence_tier,
    expires_at,
    has_temporal_marker,
    importance_score,
    policy_class,
)

CREATED = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)


# --- confidence tiers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "tier"),
    [
        (1.0, ConfidenceTier.EXPLICIT),
        (0.95, ConfidenceTier.EXPLICIT),
        (0.9499, ConfidenceTier.IMPLIED),
        (0.7, ConfidenceTier.IMPLIED),
        (0.70, ConfidenceTier.IMPLIED),
        (0.6999, ConfidenceTier.INFERRED),
        (0.4, ConfidenceTier.INFERRED),
        (0.3999, ConfidenceTier.SPECULATIVE),
        (0.0, ConfidenceTier.SPECULATIVE),
        (math.nan, ConfidenceTier.SPECULATIVE),
    ],
)
def test_confidence_tier_boundaries(confidence: float, tier: ConfidenceTier) -> None:
    assert confidence_tier(confidence) is tier


def test_expires_at_only_for_speculative() -> None:
    assert expires_at(ConfidenceTier.SPECULATIVE, CREATED) == CREATED + timedelta(days=30)
    assert SPECULATIVE_TTL_DAYS == 30
    for tier in (ConfidenceTier.EXPLICIT, ConfidenceTier.IMPLIED, ConfidenceTier.INFERRED):
        assert expires_at(tier, CREATED) is None


def test_expires_at_keeps_the_timezone() -> None:
    expiry = expires_at(ConfidenceTier.SPECULATIVE, CREATED)
    assert expiry is not None and expiry.tzinfo is UTC


# --- memory kind ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "category", "tags", "kind"),
    [
        # 1. a temporal marker wins over everything, even a note category
        ("Yesterday I decided to use uv.", Category.DECISION, (), MemoryKind.EPISODE),
        ("Last week the release policy changed.", Category.FACT, ("policy",), MemoryKind.EPISODE),
        ("Dana met Priya on 2026-03-01.", Category.RELATIONSHIP, (), MemoryKind.EPISODE),
        # 2. the category
        ("Dana prefers uv over pip.", Category.PREFERENCE, (), MemoryKind.NOTE),
        ("Dana deployed the billing service.", Category.COMMITMENT, (), MemoryKind.NOTE),
        ("Dana's first conference talk.", Category.MOMENT, (), MemoryKind.EPISODE),
        ("Priya is Dana's manager.", Category.ENTITY, (), MemoryKind.NOTE),
        # 3. tags, note tags winning; they beat the verb and keyword rules
        ("Pin the base image.", Category.FACT, ("Policy",), MemoryKind.NOTE),
        ("Pin the base image.", Category.FACT, ("incident",), MemoryKind.EPISODE),
        ("Pin the base image.", Category.FACT, ("incident", "#convention"), MemoryKind.NOTE),
        ("Dana deployed with blue-green.", Category.FACT, ("convention",), MemoryKind.NOTE),
        # 4. a past-tense action verb, before note keywords
        ("Deployed the service.", Category.FACT, (), MemoryKind.EPISODE),
        ("The team fixed the policy document.", Category.FACT, (), MemoryKind.EPISODE),
        # 5. note keywords and present-tense states
        ("We should always pin versions.", Category.FACT, (), MemoryKind.NOTE),
        ("Dana works at Acme Robotics.", Category.FACT, (), MemoryKind.NOTE),
        # 6. default
        ("Coffee machine on floor three.", Category.FACT, (), MemoryKind.EPISODE),
    ],
)
def test_classify_kind_priority(
    content: str, category: Category, tags: tuple[str, ...], kind: MemoryKind
) -> None:
    assert classify_kind(content, category, tags) is kind


def test_a_deadline_date_is_not_a_temporal_marker() -> None:
    text = "Dana will send the plan to Priya by 2026-03-06."
    assert not has_temporal_marker(text)
    assert classify_kind(text, Category.COMMITMENT) is MemoryKind.NOTE


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "Today the CI was red",
        "last Tuesday",
        "this morning",
        "three days ago",
        "2 weeks ago",
        "on Friday",
        "recently",
        "on 2026-03-01",
        "May 7th",
        "7 March",
        "in 2019",
        "since June 2021",
    ],
)
def test_temporal_markers(text: str) -> None:
    assert has_temporal_marker(text)


@pytest.mark.parametrize(
    "text",
    [
        "Dana goes climbing on Mondays",
        "stores data in 2048 blocks",
        "Dana prefers tabs",
        "the lastest build",
        "by 2026-03-06",
        "",
    ],
)
def test_not_temporal_markers(text: str) -> None:
    assert not has_temporal_marker(text)


# --- importance ----------------------------------------------------------------------------


def test_correction_outranks_trivial_acknowledgement() -> None:
    correction = importance_score("Actually, my team is 6 people, not 4.", Category.CORRECTION)
    trivial = importance_score("ok thanks", Category.FACT)
    assert trivial == 0.1
    assert correction > 0.8 > trivial


@pytest.mark.parametrize(
    "text", ["hi", "ok", "okay, thank you so much!", "Hello there, thanks!", "hahaha ok", "!!!"]
)
def test_trivial_content_scores_point_one(text: str) -> None:
    assert importance_score(text, Category.PREFERENCE) == 0.1


def test_hedging_lowers_and_category_raises() -> None:
    plain = importance_score("Dana drinks green tea every afternoon.", Category.FACT)
    hedged = importance_score("Dana maybe drinks green tea every afternoon.", Category.FACT)
    assert hedged == pytest.approx(plain - 0.15)
    as_correction = importance_score("Dana drinks green tea every afternoon.", Category.CORRECTION)
    assert as_correction == pytest.approx(plain + 0.15)


def test_markers_add_up_once_per_tier() -> None:
    base = importance_score("The printer sits near the window.", Category.FACT)
    assert base == 0.5
    critical = importance_score("The printer must sit near the window.", Category.FACT)
    assert critical == 0.7
    twice = importance_score("The printer must always, always sit near it.", Category.FACT)
    assert twice == pytest.approx(critical + 0.12)  # "always" is also a high marker, once


def test_personal_reference_specifics_and_length() -> None:
    base = importance_score("The printer sits near the window.", Category.FACT)
    assert importance_score("My printer sits near the window.", Category.FACT) == base + 0.05
    assert importance_score("The printer sits near room 42.", Category.FACT) == base + 0.03
    assert importance_score("The printer sits near Priya.", Category.FACT) == base + 0.03
    long_text = "The printer sits near the window. " * 12
    assert importance_score(long_text, Category.FACT) == pytest.approx(
        base + min((len(long_text) - 200) / 1000, 0.1)
    )


@given(st.text(max_size=600), st.sampled_from(list(Category)))
def test_importance_is_clamped_and_rounded(text: str, category: Category) -> None:
    score = importance_score(text, category)
    assert 0.0 <= score <= 1.0
    assert round(score, 2) == score


def test_importance_never_exceeds_one() -> None:
    loud = (
        "Actually, correction: I must never forget that my name is Dana and I hate "
        "meetings; we decided I will always prefer async, version 2, by Friday. "
    ) * 5
    assert importance_score(loud, Category.CORRECTION) == 1.0


# --- policy ----------------------------------------------------------------------------------


def test_policy_class() -> None:
    protected = {Category.DECISION, Category.PRINCIPLE, Category.COMMITMENT, Category.PREFERENCE}
    for category in Category:
        expected = PolicyClass.PROTECTED if category in protected else PolicyClass.DURABLE
        assert policy_class(category) is expected
