"""Action-policy taxonomy: strict parsing, documented fallbacks, the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram_md.consolidate.action_policy import (
    FALLBACK_ACTION,
    FALLBACK_ELIGIBILITY,
    Action,
    Decision,
    EligibilitySource,
    Outcome,
    decide,
    parse_action,
    parse_action_strict,
    parse_eligibility,
    parse_record,
)
from engram_md.core.telemetry import ACTIONS, ActionLog


def test_taxonomy_matches_what_telemetry_writes() -> None:
    assert {a.value for a in Action} == set(ACTIONS)


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("store_note", Action.STORE_NOTE),
        ("  Link_Graph ", Action.LINK_GRAPH),
        ("store-note", None),  # strict: no fuzzy spellings
        ("store", None),
        ("", None),
        (None, None),
        (3, None),
        (["discard"], None),
    ],
)
def test_strict_action_parsing(label: object, expected: Action | None) -> None:
    assert parse_action_strict(label) == expected
    assert parse_action(label) == (expected or FALLBACK_ACTION)
    assert FALLBACK_ACTION is Action.DISCARD


def test_eligibility_valid_and_fallbacks() -> None:
    good = parse_eligibility(
        {"confidence": 0.9, "lifecycleState": "Active", "importance": 1, "source": "manual"}
    )
    assert good.valid and good.lifecycle_state == "active" and good.importance == 1.0
    assert good.source is EligibilitySource.MANUAL
    for bad in (
        None,
        "confidence=0.9",
        {"confidence": "0.9", "lifecycleState": "active", "importance": 0.5, "source": "manual"},
        {"confidence": True, "lifecycleState": "active", "importance": 0.5, "source": "manual"},
        {"confidence": 1.5, "lifecycleState": "active", "importance": 0.5, "source": "manual"},
        {
            "confidence": float("nan"),
            "lifecycleState": "active",
            "importance": 0.5,
            "source": "manual",
        },
        {"confidence": 0.9, "lifecycleState": "fresh", "importance": 0.5, "source": "manual"},
        {"confidence": 0.9, "lifecycleState": "active", "importance": 0.5, "source": "web"},
        {"confidence": 0.9, "lifecycleState": "active", "source": "manual"},
    ):
        assert parse_eligibility(bad) == FALLBACK_ELIGIBILITY
    assert FALLBACK_ELIGIBILITY.confidence == 0 and FALLBACK_ELIGIBILITY.importance == 0
    assert FALLBACK_ELIGIBILITY.lifecycle_state == "candidate" and not FALLBACK_ELIGIBILITY.valid


def test_records_written_by_telemetry_parse_back(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    ActionLog(path).record("update_note", "applied", "confirmed_near_duplicate", memory_id="f-1")
    record = parse_record(json.loads(path.read_text(encoding="utf-8")))
    assert record.valid and record.action is Action.UPDATE_NOTE
    assert record.outcome is Outcome.APPLIED and record.memory_id == "f-1"
    assert record.reason == "confirmed_near_duplicate"


@pytest.mark.parametrize(
    "raw",
    [
        [],
        "discard",
        7,
        {"action": "explode", "outcome": "applied"},
        {"action": "discard"},
        {"action": "discard", "outcome": "maybe", "reason": 5},
    ],
)
def test_bad_records_fall_back_and_are_flagged(raw: object) -> None:
    record = parse_record(raw)
    assert not record.valid
    assert record.action in set(Action) and record.outcome in set(Outcome)
    assert isinstance(record.reason, str)


def test_gate() -> None:
    live = {
        "confidence": 0.9,
        "lifecycleState": "active",
        "importance": 0.5,
        "source": "extraction",
    }
    assert decide("store_note", live).decision is Decision.ALLOW
    assert decide("discard", {**live, "importance": 0.85}).decision is Decision.DENY
    assert decide("discard", live).allowed
    assert decide("update_note", {**live, "confidence": 0.2}).decision is Decision.DEFER
    assert decide("link_graph", {**live, "lifecycleState": "stale"}).decision is Decision.DENY
    assert decide("create_artifact", {**live, "lifecycleState": "archived"}).decision is (
        Decision.DENY
    )
    assert decide("store_episode", {**live, "lifecycleState": "stale"}).allowed
    # Garbage in: the proposal becomes a discard, the context the least trusted one.
    fallback = decide("rewrite everything", "not json")
    assert fallback.action is Action.DISCARD and fallback.allowed
    assert decide("store_note", None).decision is Decision.DEFER
    assert "invalid eligibility" in decide("store_note", None).reason
