"""Folder-level indexes rebuilt by consolidation: the topic index and compression guidelines.

* ``state/topics.json``: every topic of the active facts
(:func:`engram_md.organize.topics.fact_topics`)
  with its fact count and fact ids, so tools can answer "what do we know about X" without a
  scan. Derived from ``memory/`` alone, like everything in ``state/`` that can be rebuilt.
* ``state/compression-guidelines.md``: what the action telemetry
  (``state/memory-actions.jsonl``) says about how memory is being written: the action and
  outcome distributions, the reasons that dominate discards, how often extraction only
  re-states known facts, and a few plain guidelines drawn from those counts (see
  :func:`guidelines`). Learning is fail-open: an unreadable log is logged and skipped, a
  corrupt line is counted and skipped, never an exception.

Both files are written only when their text changes, and neither carries a clock reading, so
a repeated run plans nothing.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import regex

from ..core.models import Fact, Status
from ..organize.topics import fact_topics
from .action_policy import Action, Outcome, parse_record
from .plan import Change, Context, FileWrite

__all__ = [
    "ActionStats",
    "guidelines",
    "plan_folder_index",
    "read_action_stats",
    "render_guidelines",
    "render_topics",
]

log = logging.getLogger(__name__)


def plan_folder_index(ctx: Context) -> list[Change]:
    changes: list[Change] = []
    topics_text = render_topics(f for _, f in ctx.facts)
    _write_if_changed(
        changes, ctx.layout.topics_path, topics_text, "topics", "topic index of active facts"
    )
    stats = read_action_stats(ctx.layout.actions_path)
    if stats is not None:
        _write_if_changed(
            changes,
            ctx.layout.compression_guidelines_path,
            render_guidelines(stats),
            "guidelines",
            f"learned from {stats.records} telemetry records",
        )
    return changes


def _write_if_changed(changes: list[Change], path: Path, text: str, action: str, why: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    changes.append(FileWrite(path, text, action, why))


# ---------------------------------------------------------------- topics


def render_topics(facts: Iterable[Fact]) -> str:
    """``{"version", "facts", "topics": {topic: {"count", "facts": [ids]}}}``, one topic a line.

    Only active facts count: a superseded or archived fact is not what the folder says now.
    """
    index: dict[str, list[str]] = {}
    # Facts often share their tags, entities and category: compute each combination once.
    cache: dict[tuple[str, tuple[str, ...], tuple[str, ...]], frozenset[str]] = {}
    active = 0
    for fact in facts:
        if fact.status is not Status.ACTIVE:
            continue
        active += 1
        key = (fact.category.value, fact.tags, fact.entities)
        topics = cache.get(key)
        if topics is None:
            topics = cache[key] = fact_topics(fact)
        for topic in topics:
            index.setdefault(topic, []).append(fact.id)
    lines = [f'{{"version": 1, "facts": {active}, "topics": {{']
    names = sorted(index)
    for i, topic in enumerate(names):
        ids = sorted(set(index[topic]))
        entry = json.dumps({"count": len(ids), "facts": ids}, ensure_ascii=False)
        comma = "," if i < len(names) - 1 else ""
        lines.append(f"{json.dumps(topic, ensure_ascii=False)}: {entry}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- telemetry


@dataclass
class ActionStats:
    """Counts over the telemetry log."""

    records: int = 0  # lines parsed into a record (valid or not)
    unreadable: int = 0  # lines that were not JSON objects at all
    invalid: int = 0  # records whose action or outcome was outside the taxonomy
    by_action: Counter[tuple[Action, Outcome]] = field(default_factory=Counter)
    reasons: dict[Action, Counter[str]] = field(default_factory=dict)

    def total(self, action: Action) -> int:
        return sum(n for (a, _), n in self.by_action.items() if a is action)

    def count(self, action: Action, outcome: Outcome) -> int:
        return self.by_action[(action, outcome)]


def read_action_stats(path: Path) -> ActionStats | None:
    """Count the telemetry log; None when it is missing or cannot be read at all."""
    stats = ActionStats()
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s (%s); compression guidelines not updated", path, exc)
        return None
    with handle:
        try:
            for raw in handle:
                _count_line(stats, raw)
        except OSError as exc:
            log.warning("reading %s stopped early (%s); using what was read", path, exc)
    if stats.unreadable or stats.invalid:
        log.warning(
            "%s: %d unreadable and %d invalid telemetry line(s) skipped",
            path,
            stats.unreadable,
            stats.invalid,
        )
    return stats


def _count_line(stats: ActionStats, raw: bytes) -> None:
    if not raw.strip():
        return
    try:
        decoded = json.loads(raw)
    except ValueError:  # torn line, bad UTF-8, not JSON
        stats.unreadable += 1
        return
    if not isinstance(decoded, dict):
        stats.unreadable += 1
        return
    record = parse_record(decoded)
    stats.records += 1
    if not record.valid:
        stats.invalid += 1
        return
    stats.by_action[(record.action, record.outcome)] += 1
    if record.reason:
        stats.reasons.setdefault(record.action, Counter())[record.reason] += 1


# ---------------------------------------------------------------- guidelines

MIN_EVENTS = 5  # fewer events per action: no direction, "hold"
_GOOD = regex.compile(r"recall_good|useful|confirmed|helpful|kept", regex.IGNORECASE)
_BAD = regex.compile(r"noise|poor|bad|irrelevant|error|fail|wrong", regex.IGNORECASE)


def _top(counter: Mapping[str, int], n: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _share(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "0%"


def action_suggestion(stats: ActionStats, action: Action) -> str:
    """The reference system's per-action line: increase / decrease / hold with a delta."""
    total = stats.total(action)
    if total < MIN_EVENTS:
        return f"- {action.value}: hold (too few events: {total})"
    applied = stats.count(action, Outcome.APPLIED)
    failed = stats.count(action, Outcome.FAILED)
    reasons = stats.reasons.get(action, Counter())
    good = sum(n for r, n in reasons.items() if _GOOD.search(r))
    bad = sum(n for r, n in reasons.items() if _BAD.search(r))
    quality = (good - bad) / total
    delta = max(-0.15, min(0.15, (applied - failed) / total * 0.12 + quality * 0.06))
    direction = "increase" if delta > 0.02 else "decrease" if delta < -0.02 else "hold"
    confidence = "high" if total >= 50 else "medium" if total >= 20 else "low"
    return (
        f"- {action.value}: {direction} ({delta:+.3f}, confidence={confidence}) — "
        f"{applied} of {total} applied, {failed} failed"
    )


def guidelines(stats: ActionStats) -> list[str]:
    """Plain guidance drawn from the counts, most actionable first.

    * a discard reason behind at least half of the discards (of at least MIN_EVENTS) names
      the case extraction most often wastes work on;
    * when a third or more of what extraction proposed was already stored (confirmations of
      an exact or near duplicate), extraction mostly re-states known facts;
    * an action failing in a fifth or more of its events needs attention;
    * strong signals that produced no fact point at the signal patterns or the extractor.
    """
    out: list[str] = []
    discards = stats.total(Action.DISCARD)
    discard_reasons = stats.reasons.get(Action.DISCARD, Counter())
    if discards >= MIN_EVENTS and discard_reasons:
        reason, n = _top(discard_reasons, 1)[0]
        if n * 2 >= discards:
            out.append(
                f"- Most discards ({n} of {discards}, {_share(n, discards)}) are `{reason}`: "
                "extraction keeps proposing this kind of statement only to drop it; tighten the "
                "rule that produces it rather than filtering afterwards."
            )
    updates = stats.reasons.get(Action.UPDATE_NOTE, Counter())
    near = sum(n for r, n in updates.items() if r.startswith("confirmed_near"))
    exact = sum(n for r, n in updates.items() if r.startswith("confirmed_exact"))
    stored = stats.count(Action.STORE_NOTE, Outcome.APPLIED) + stats.count(
        Action.STORE_EPISODE, Outcome.APPLIED
    )
    restated = near + exact
    proposed = restated + stored
    if restated >= MIN_EVENTS and restated * 3 >= proposed:
        out.append(
            f"- {restated} of {proposed} extracted facts ({_share(restated, proposed)})"
            f" re-stated a stored fact ({exact} exact, {near} near-duplicate): extraction mostly "
            "repeats what is known; batch more turns per extraction or skip turns that only "
            "restate earlier ones."
        )
    elif restated >= MIN_EVENTS:
        out.append(
            f"- Re-statements are folded into existing facts ({exact} exact, {near} "
            f"near-duplicate); keep the near-duplicate threshold."
        )
    for action in Action:
        total = stats.total(action)
        failed = stats.count(action, Outcome.FAILED)
        if total >= MIN_EVENTS and failed * 5 >= total:
            out.append(
                f"- `{action.value}` failed in {failed} of {total} events "
                f"({_share(failed, total)}): check the log for the cause before trusting it."
            )
    empty = stats.reasons.get(Action.DISCARD, Counter()).get("empty_extraction_on_high_signal", 0)
    if empty:
        out.append(
            f"- {empty} strong signal(s) produced no fact: review the high-signal patterns or "
            "what the extractor keeps from such turns."
        )
    if not out:
        out.append("- No action stands out yet: keep the current settings.")
    return out


def render_guidelines(stats: ActionStats) -> str:
    lines = ["# Compression Guidelines", ""]
    lines.append(
        f"Learned from {stats.records} telemetry record(s)"
        + (
            f"; {stats.unreadable} unreadable and {stats.invalid} invalid line(s) skipped."
            if stats.unreadable or stats.invalid
            else "."
        )
    )
    lines += ["", "## Action Distribution", ""]
    for action in Action:
        total = stats.total(action)
        if total:
            reasons = ", ".join(
                f"`{r}` {n}" for r, n in _top(stats.reasons.get(action, Counter()), 3)
            )
            lines.append(
                f"- {action.value}: {total}" + (f" (top reasons: {reasons})" if reasons else "")
            )
    lines += ["", "## Outcome Distribution", ""]
    for outcome in Outcome:
        n = sum(c for (_, o), c in stats.by_action.items() if o is outcome)
        lines.append(f"- {outcome.value}: {n}")
    lines += ["", "## Suggested Guidelines", ""]
    lines += guidelines(stats)
    lines += ["", "## Per-Action Suggestions", ""]
    lines += [action_suggestion(stats, action) for action in Action]
    return "\n".join(lines) + "\n"
