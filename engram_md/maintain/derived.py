"""The pages and indexes consolidation derives from the facts, made again without forgotten
ones: ``state/topics.json``, the entity pages and ``profile.md``.

They are made the way consolidation makes them (its planners and renderers), from the facts
that stay; a page the plan no longer covers is removed or loses its quoting lines.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..consolidate.entities import plan_entities
from ..consolidate.folder_index import render_topics
from ..consolidate.plan import Context, FileWrite
from ..consolidate.profile import plan_profile
from ..consolidate.run_state import RunState
from ..core.atomic import atomic_write_text
from ..core.config import Config
from ..core.folder import read_text
from ..core.models import Fact
from ..core.paths import MemoryLayout
from .targets import Target

log = logging.getLogger(__name__)


def refresh_topics(
    layout: MemoryLayout, facts: Sequence[tuple[Path, Fact]], gone: set[str]
) -> bool:
    """Render ``topics.json`` again from ``facts`` (those left) if it lists a forgotten id."""
    path = layout.topics_path
    if not _mentions(path, sorted(gone)):
        return False
    atomic_write_text(path, render_topics(f for _, f in facts))
    return True


def _mentions(path: Path, needles: Sequence[str]) -> bool:
    text = read_text(path)  # never through a link, never a pipe
    return text is not None and any(n and n in text for n in needles)


def refresh_derived(
    cfg: Config,
    layout: MemoryLayout,
    targets: Sequence[Target],
    facts: Sequence[tuple[Path, Fact]],
) -> list[str]:
    """Entity pages and ``profile.md`` quote facts: make the ones that quote a forgotten fact
    again from ``facts`` (those left), as consolidation would, and remove or scrub what the
    new plan no longer covers. Returns the pages changed, relative to the memory folder."""
    needles: list[str] = []
    for t in targets:
        needles.append(Path(t.path).name)
        if t.fact is not None:
            needles.append(" ".join(t.fact.content.split()))
    pages = [layout.profile_path] if layout.profile_path.exists() else []
    if layout.entities_dir.is_dir():
        pages += sorted(layout.entities_dir.glob("*.md"))
    hit = [p for p in pages if _mentions(p, needles)]
    if not hit:
        return []
    changed: set[str] = set()
    try:
        changed.update(_replan(cfg, layout, facts))
    except Exception as exc:  # a failing planner must not stop the scrub below (fail open)
        log.warning("could not rebuild derived pages: %s", exc)
    for page in hit:
        if not page.exists() or not _mentions(page, needles):
            continue
        rel = layout.relative(page)
        text = read_text(page) or ""
        if page.parent == layout.entities_dir and text.startswith("---\ntype: "):
            # A generated page the plan no longer writes (too few facts left): nothing would
            # ever update it again, so it goes rather than keep quoting the forgotten fact.
            page.unlink()
        else:
            kept = [ln for ln in text.splitlines() if not any(n and n in ln for n in needles)]
            atomic_write_text(page, "\n".join(kept) + "\n")
        changed.add(rel)
    return sorted(changed)


def _replan(cfg: Config, layout: MemoryLayout, facts: Sequence[tuple[Path, Fact]]) -> list[str]:
    # Entity pages and the profile rank by what the files say; recall counts do not enter.
    ctx = Context(
        cfg=cfg,
        layout=layout,
        now=datetime.now(UTC),
        epoch=max(1, RunState.load(layout).epoch),
        facts=list(facts),
    )
    written: list[str] = []
    entities = layout.entities_dir.resolve()
    for change in [*plan_entities(ctx), *plan_profile(ctx)]:
        if not isinstance(change, FileWrite):
            continue
        target = change.path.resolve()
        if target == layout.profile_path.resolve() or target.parent == entities:
            atomic_write_text(change.path, change.text)
            written.append(layout.relative(change.path))
    return written
