"""What a consolidation run tells people: the report in ``state/reports/``, the dry run's and
the command's JSON (:func:`describe`, :func:`summary`), and the scrubbing of quotes from the
reports when a fact is forgotten.

One report per real run, named by its UTC time: every change, the action and the reason. A
dry run renders the same lines without writing them.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write_text
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..store.factfile import format_time
from .plan import Change, FactCreate, FactMove, FactUpdate, Plan


def relative_path(layout: MemoryLayout, path: Path) -> str:
    """``path`` relative to the memory folder (or as given outside it, e.g. state files).

    Paths here come from the store, under ``memory_dir`` as configured, so a string prefix
    answers without resolving symlinks for every one of a large run's changes.
    """
    root = str(layout.memory_dir) + os.sep
    text = str(path)
    if text.startswith(root):
        return Path(text[len(root) :]).as_posix()
    try:
        return layout.relative(path)
    except ValueError:
        return text


def describe(change: Change, layout: MemoryLayout) -> dict[str, Any]:
    """One change as JSON: what the dry run prints and the real run reports."""
    out: dict[str, Any] = {"action": change.action, "reason": change.reason}
    if isinstance(change, FactMove):
        out.update(
            path=relative_path(layout, change.source),
            target=relative_path(layout, change.target),
            id=change.after.id,
            status=change.after.status.value,
        )
    elif isinstance(change, FactUpdate):
        out.update(
            path=relative_path(layout, change.path),
            id=change.after.id,
            status=change.after.status.value,
            fields=_changed_fields(change.before, change.after),
        )
    elif isinstance(change, FactCreate):
        out.update(path=relative_path(layout, change.path), id=change.fact.id)
    else:
        out.update(path=relative_path(layout, change.path))
    out["kind"] = type(change).__name__
    return out


def _changed_fields(before: Fact, after: Fact) -> list[str]:
    """The fields that changed, then the keys we do not own (by name) that were set or taken out."""
    known = [
        spec.name
        for spec in fields(Fact)
        if spec.name != "extra" and getattr(before, spec.name) != getattr(after, spec.name)
    ]
    keys = before.extra.keys() | after.extra.keys()
    return known + sorted(k for k in keys if before.extra.get(k) != after.extra.get(k))


def summary(plan: Plan) -> dict[str, Any]:
    """The plan's figures as JSON (the command's ``--json`` output)."""
    by_action = Counter(c.action for c in plan.changes)
    return {
        "epoch": plan.epoch,
        "now": format_time(plan.now),
        "facts": plan.total,
        "active": plan.active,
        "new": plan.new,
        "changes": len(plan.changes),
        "retiring": plan.retiring,
        "allowedRetire": plan.allowed,
        "byAction": dict(sorted(by_action.items())),
        "broken": list(plan.broken),
        "notes": list(plan.notes),
        "unjudged": len(plan.unjudged),
    }


def render_report(plan: Plan, layout: MemoryLayout, *, applied: int, dry_run: bool) -> str:
    head = "Consolidation plan (dry run)" if dry_run else "Consolidation"
    lines = [
        f"# {head} — {format_time(datetime.now(UTC))}",
        "",
        f"- epoch {plan.epoch}, now {format_time(plan.now)}",
        f"- {plan.total} fact files, {plan.active} active, {plan.new} new since the last run",
        f"- {len(plan.changes)} planned changes, {applied} applied; "
        f"{plan.retiring} retire an active fact (allowed {plan.allowed})",
    ]
    if plan.unjudged:
        lines.append(f"- {len(plan.unjudged)} new fact(s) not judged (LLM failed): next run")
    for note in plan.notes:
        lines.append(f"- note: {note}")
    for problem in plan.broken:
        lines.append(f"- unreadable: {problem}")
    lines += ["", "## Changes", ""]
    if not plan.changes:
        lines.append("Nothing to change.")
    for change in plan.changes:
        item = describe(change, layout)
        where = item["path"] + (f" → {item['target']}" if "target" in item else "")
        lines.append(f"- **{item['action']}** `{where}` — {item['reason']}")
        if "fields" in item:
            lines.append(f"  - fields: {', '.join(item['fields'])}")
    return "\n".join(lines) + "\n"


def write_report(layout: MemoryLayout, text: str) -> Path:
    """Write ``text`` as a new report, ``<UTC time>.md`` (``-2``, ``-3`` … within a second)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = layout.reports_dir / f"{stamp}.md"
    n = 1
    while path.exists():
        n += 1
        path = layout.reports_dir / f"{stamp}-{n}.md"
    atomic_write_text(path, text)
    return path


def scrub_reports(layout: MemoryLayout, scrub: Callable[[str], str]) -> list[Path]:
    """Rewrite the reports and the compression guidelines with ``scrub`` applied; returns the
    files changed.

    Both repeat reasons a judge or the telemetry gave, which may quote a statement: a
    forgotten fact must leave them too. The guidelines file is plain text learned from the
    telemetry, so it is scrubbed the same way as the reports.
    """
    files = [layout.compression_guidelines_path]
    if layout.reports_dir.is_dir():
        files += sorted(layout.reports_dir.glob("*.md"))
    changed: list[Path] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        scrubbed = scrub(text)
        if scrubbed != text:
            atomic_write_text(path, scrubbed)
            changed.append(path)
    return changed
