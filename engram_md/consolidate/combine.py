"""Combining the planning steps' changes into one change per file, in the order to apply them.

Each step plans over the folder as the steps before it leave it (:func:`advance`); the
combined plan goes from each file as it is on disk to what the last step left, so it is
applied with one write per file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..core.models import Fact
from .plan import Change, FactCreate, FactMove, FactUpdate, FileWrite

_GROWING = frozenset(
    {"status_history", "merged_from", "supersedes", "source_turn_ids", "tags", "entities"}
)


def apply_diff(base: Fact, before: Fact, after: Fact) -> Fact:
    """What a step changed (``before`` → ``after``), applied on top of ``base``.

    Fields the step left alone keep ``base``'s value. List fields that only grow (status
    history, lineage, turns, tags, entities) get the step's new items appended, so two steps
    that each add a history entry both keep theirs. Keys a person added (``extra``) are set
    and removed as the step set and removed them.
    """
    changes: dict[str, Any] = {}
    for spec in fields(Fact):
        name = spec.name
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if name in _GROWING:
            current = getattr(base, name)
            changes[name] = (*current, *(x for x in new if x not in current))
        elif name == "extra":
            kept = {k: v for k, v in base.extra.items() if k in new or k not in old}
            changes[name] = {**kept, **new}
        else:
            changes[name] = new
    return base.with_changes(**changes) if changes else base


View = Mapping[Path, Fact]  # the facts by path, as one step saw them


def advance(view: View, changes: Iterable[Change]) -> dict[Path, Fact]:
    """The folder as the next step sees it: ``view`` with ``changes`` applied (a moved fact
    appears at its new path, a created one at its path)."""
    out = dict(view)
    for change in changes:
        if isinstance(change, FactUpdate):
            out[change.path] = change.after
        elif isinstance(change, FactMove):
            out.pop(change.source, None)
            out[change.target] = change.after
        elif isinstance(change, FactCreate):
            out[change.path] = change.fact
    return out


def combine(
    plans: Sequence[tuple[Sequence[Change], View]],
    original: View,
) -> tuple[list[Change], list[str]]:
    """One change per file from the plans of all steps, in step order.

    Each plan comes with the view its step planned from: every step sees the folder as the
    steps before it left it (:func:`advance`), so a fact superseded by the first step is not
    also archived, and an entity page lists statuses as they will be. ``original`` is every
    fact as read from disk. The rule, deterministic and per file:

    * A FactUpdate contributes its diff (``before`` → ``after``), applied on top of the fact
      as the earlier steps left it (:func:`apply_diff`); the combined update goes from the
      fact on disk to the final fact, actions joined with ``+``, reasons with ``; ``.
    * A FactMove of a file carries every update to that file, earlier or later (a later step
      addresses the moved fact by its new path), to the target. A second move of the same
      file is dropped and reported.
    * FactCreate: the first for a path wins. FileWrite: the last for a path wins (a later
      step saw more). Either conflict is reported.

    The result is ordered for applying: creates, updates that keep a fact active (survivors,
    superseding facts), updates that retire one, moves, then derived files; by path within
    each group. A run killed in between thus never leaves a retired fact pointing at a
    successor that does not know it.
    """
    current: dict[Path, Fact] = {}
    labels: dict[Path, list[tuple[str, str]]] = {}
    moves: dict[Path, Path] = {}
    moved_from: dict[Path, Path] = {}  # target -> source
    creates: dict[Path, FactCreate] = {}
    writes: dict[Path, FileWrite] = {}
    notes: list[str] = []

    def base(path: Path, fallback: Fact) -> Fact:
        return current.get(path, original.get(path, fallback))

    for plan, view in plans:
        for change in plan:
            if isinstance(change, FactUpdate):
                path = moved_from.get(change.path, change.path)
                current[path] = apply_diff(base(path, change.before), change.before, change.after)
                labels.setdefault(path, []).append((change.action, change.reason))
            elif isinstance(change, FactMove):
                path = moved_from.get(change.source, change.source)
                if path in moves:
                    notes.append(f"{path}: a second move (to {change.target}) was dropped")
                    continue
                step_saw = view.get(change.source, original.get(path, change.after))
                current[path] = apply_diff(base(path, step_saw), step_saw, change.after)
                moves[path] = change.target
                moved_from[change.target] = path
                labels.setdefault(path, []).append((change.action, change.reason))
            elif isinstance(change, FactCreate):
                if change.path in creates:
                    notes.append(f"{change.path}: created twice; the first was kept")
                    continue
                creates[change.path] = change
            else:
                if change.path in writes:
                    notes.append(f"{change.path}: written by two steps; the later was kept")
                writes[change.path] = change

    def label(path: Path) -> tuple[str, str]:
        parts = labels[path]
        return "+".join(dict.fromkeys(a for a, _ in parts)), "; ".join(r for _, r in parts)

    keep: list[Change] = []
    retire: list[Change] = []
    moved: list[Change] = []
    for path in sorted(current):
        before = original.get(path)
        after = current[path]
        action, reason = label(path)
        if path in moves:
            moved.append(FactMove(path, moves[path], after, action, reason))
        elif before is not None and (after != before or after.extra != before.extra):
            update = FactUpdate(path, before, after, action, reason)
            (retire if update.retires else keep).append(update)
    ordered: list[Change] = [creates[p] for p in sorted(creates)]
    ordered += keep + retire + moved + [writes[p] for p in sorted(writes)]
    return ordered, notes
