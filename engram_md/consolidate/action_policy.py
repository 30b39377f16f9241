"""The action-policy taxonomy (seed 002): what may be done with a memory, parsed strictly.

Two kinds of input reach this module: action records read back from the telemetry log
(``state/memory-actions.jsonl``) and action labels proposed by an LLM. Both are untrusted, so
parsing is *strict* (only the exact taxonomy values, case and surrounding space aside; no
fuzzy matching, no numbers given as strings) and *fail-open* (never an exception):

* an invalid action becomes :data:`FALLBACK_ACTION`, ``discard``: when we cannot tell what
  was meant, writing nothing is the step that cannot damage the memory folder;
* an invalid outcome becomes ``failed`` (an unreadable outcome did not demonstrably apply);
* an invalid eligibility payload becomes :data:`FALLBACK_ELIGIBILITY`, ``{confidence: 0,
  lifecycleState: candidate, importance: 0, source: unknown}``, the least trusted context,
  which the gate below defers rather than acts on.

Every fallback is flagged (``valid=False``) so telemetry statistics can count bad records
separately instead of mistaking them for real discards.

The gate (:func:`decide`) follows the reference system: a discard is denied for a memory of
importance >= 0.8, anything with confidence < 0.35 is deferred, and stale or archived
memories cannot be updated, summarized into artifacts or linked.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "FALLBACK_ACTION",
    "FALLBACK_ELIGIBILITY",
    "Action",
    "ActionRecord",
    "Decision",
    "Eligibility",
    "EligibilitySource",
    "Outcome",
    "PolicyDecision",
    "decide",
    "parse_action",
    "parse_action_strict",
    "parse_eligibility",
    "parse_outcome",
    "parse_record",
]


class Action(enum.StrEnum):
    STORE_EPISODE = "store_episode"
    STORE_NOTE = "store_note"
    UPDATE_NOTE = "update_note"
    CREATE_ARTIFACT = "create_artifact"
    SUMMARIZE_NODE = "summarize_node"
    DISCARD = "discard"
    LINK_GRAPH = "link_graph"
    FORGET = "forget"


class Outcome(enum.StrEnum):
    APPLIED = "applied"
    SKIPPED = "skipped"
    FAILED = "failed"


class EligibilitySource(enum.StrEnum):
    EXTRACTION = "extraction"
    CONSOLIDATION = "consolidation"
    REPLAY = "replay"
    MANUAL = "manual"
    UNKNOWN = "unknown"


_LIFECYCLE_STATES = frozenset({"active", "validated", "candidate", "stale", "archived"})

FALLBACK_ACTION = Action.DISCARD
FALLBACK_OUTCOME = Outcome.FAILED


@dataclass(frozen=True, slots=True)
class Eligibility:
    """The bounded context an action is judged in."""

    confidence: float
    lifecycle_state: str  # active | validated | candidate | stale | archived
    importance: float
    source: EligibilitySource
    valid: bool = True


FALLBACK_ELIGIBILITY = Eligibility(0.0, "candidate", 0.0, EligibilitySource.UNKNOWN, False)


def _label(value: object) -> str | None:
    return value.strip().casefold() if isinstance(value, str) else None


def parse_action_strict(value: object) -> Action | None:
    """The taxonomy action ``value`` names exactly, or None."""
    label = _label(value)
    try:
        return Action(label) if label is not None else None
    except ValueError:
        return None


def parse_action(value: object) -> Action:
    """The named action; anything else falls back to ``discard``."""
    return parse_action_strict(value) or FALLBACK_ACTION


def parse_outcome(value: object) -> Outcome | None:
    label = _label(value)
    try:
        return Outcome(label) if label is not None else None
    except ValueError:
        return None


def _unit(value: object) -> float | None:
    """A real number in [0, 1] (not a bool, not a string, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None


def parse_eligibility(payload: object) -> Eligibility:
    """Strictly parse ``{confidence, lifecycleState, importance, source}``.

    Any missing or invalid field makes the whole payload invalid: a half-trusted context is
    not trusted (the fallback is the documented least-trusted one).
    """
    if not isinstance(payload, Mapping):
        return FALLBACK_ELIGIBILITY
    confidence = _unit(payload.get("confidence"))
    importance = _unit(payload.get("importance"))
    state = _label(payload.get("lifecycleState"))
    source_label = _label(payload.get("source"))
    try:
        source = EligibilitySource(source_label) if source_label is not None else None
    except ValueError:
        source = None
    if confidence is None or importance is None or source is None:
        return FALLBACK_ELIGIBILITY
    if state not in _LIFECYCLE_STATES or state is None:
        return FALLBACK_ELIGIBILITY
    return Eligibility(confidence, state, importance, source)


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One telemetry event, parsed. ``valid`` is False when any fallback was used."""

    action: Action
    outcome: Outcome
    reason: str
    memory_id: str | None
    valid: bool


def parse_record(raw: object) -> ActionRecord:
    """Parse one decoded telemetry line (a JSON object); never raises."""
    if not isinstance(raw, Mapping):
        return ActionRecord(FALLBACK_ACTION, FALLBACK_OUTCOME, "", None, False)
    action = parse_action_strict(raw.get("action"))
    outcome = parse_outcome(raw.get("outcome"))
    reason = raw.get("reason")
    memory_id = raw.get("memoryId")
    return ActionRecord(
        action or FALLBACK_ACTION,
        outcome or FALLBACK_OUTCOME,
        reason.strip() if isinstance(reason, str) else "",
        memory_id if isinstance(memory_id, str) and memory_id else None,
        action is not None and outcome is not None,
    )


# ---------------------------------------------------------------- the gate


class Decision(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    DEFER = "defer"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    decision: Decision
    action: Action
    reason: str

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


DISCARD_PROTECTED_IMPORTANCE = 0.8
DEFER_BELOW_CONFIDENCE = 0.35
_NEEDS_LIVE_MEMORY = frozenset({Action.UPDATE_NOTE, Action.CREATE_ARTIFACT, Action.LINK_GRAPH})


def decide(action: object, eligibility: object) -> PolicyDecision:
    """Judge a proposed action (label or :class:`Action`) in its context (payload or value)."""
    parsed = action if isinstance(action, Action) else parse_action(action)
    context = (
        eligibility if isinstance(eligibility, Eligibility) else parse_eligibility(eligibility)
    )
    if parsed is Action.DISCARD and context.importance >= DISCARD_PROTECTED_IMPORTANCE:
        return PolicyDecision(
            Decision.DENY, parsed, f"importance {context.importance:.2f} is too high to discard"
        )
    if context.confidence < DEFER_BELOW_CONFIDENCE and parsed is not Action.DISCARD:
        why = "invalid eligibility context" if not context.valid else "low confidence"
        return PolicyDecision(
            Decision.DEFER, parsed, f"{why} ({context.confidence:.2f} < {DEFER_BELOW_CONFIDENCE})"
        )
    if parsed in _NEEDS_LIVE_MEMORY and context.lifecycle_state in ("stale", "archived"):
        return PolicyDecision(
            Decision.DENY,
            parsed,
            f"{parsed.value} is not allowed on a {context.lifecycle_state} memory",
        )
    return PolicyDecision(Decision.ALLOW, parsed, "allowed")
