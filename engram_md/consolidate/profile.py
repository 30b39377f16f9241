"""The behavioral profile (``memory/profile.md``) and IDENTITY.md consolidation.

``profile.md`` is derived: the active preferences, principles, skills and habits (facts
tagged ``habit``/``routine``), most important first (the importance in their files: recall
counts and decay live in state/, and a recall must never rewrite this file), near-duplicates
left out, at most
``consolidate.profile_max_lines`` bullets, each linking to its fact. A person changes the
profile by changing facts; the file carries no date, so it is rewritten only when its content
changes.

``IDENTITY.md`` is written by people and agents (reflections), never derived. Once it grows
past ``consolidate.identity_max_bytes`` it is consolidated: it is cut into units (a paragraph
or a list item, each under its section heading), near-identical units are reduced to their
latest occurrence, and units are kept in this order until three quarters of the limit is
used (the headroom stops the next reflection from triggering another pass): first units
that state a rule (always, never, must, important, remember, prefer), then the most recent.
Kept units stay in their original order and sections. Everything else, duplicates included,
is moved verbatim to ``memory/archive/IDENTITY-<date>.md`` (appended when that file exists),
so nothing is lost. The plan lists the archive write before the rewrite of IDENTITY.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import regex

from ..core.folder import read_text
from ..core.models import Category, Fact, Status
from ..text.words import WORD
from .lifecycle import archive_predicate
from .plan import Change, Context, FileWrite

__all__ = [
    "IDENTITY_KEEP_SHARE",
    "PROFILE_CATEGORIES",
    "consolidate_identity",
    "plan_profile",
    "render_profile",
]

PROFILE_CATEGORIES = frozenset({Category.PREFERENCE, Category.PRINCIPLE, Category.SKILL})
HABIT_TAGS = frozenset({"habit", "habits", "routine", "routines"})
NEAR_DUPLICATE = 0.8  # token Jaccard at or above which two bullets say the same thing
IDENTITY_KEEP_SHARE = 0.75
PROFILE_HEADER = (
    "# Behavioral Profile\n\n"
    "Preferences, principles, skills and habits, most important first. Derived from the "
    "facts by `engram-md consolidate`: change a fact, not this file.\n"
)


def _tokens(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in WORD.findall(text))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def plan_profile(ctx: Context) -> list[Change]:
    changes: list[Change] = []
    text = render_profile(ctx)
    path = ctx.layout.profile_path
    existing = read_text(path)
    if text is not None and text != existing:
        changes.append(FileWrite(path, text, "profile", "behavioral profile from active facts"))
    changes.extend(consolidate_identity(ctx))
    return changes


# ---------------------------------------------------------------- profile.md


def _is_behavioral(fact: Fact) -> bool:
    return fact.category in PROFILE_CATEGORIES or any(t.casefold() in HABIT_TAGS for t in fact.tags)


def render_profile(ctx: Context) -> str | None:
    """The profile text, or None when there is nothing to say and no profile yet."""
    in_archive = archive_predicate(ctx.layout)
    ranked: list[tuple[tuple[float, float, float, str], Path, Fact]] = []
    for path, fact in ctx.facts:
        if fact.status is not Status.ACTIVE or not _is_behavioral(fact):
            continue
        if in_archive(path):
            continue
        # Importance, then confidence, then newest first, then the id for a stable order.
        key = (-fact.importance, -fact.confidence, -fact.created.timestamp(), fact.id)
        ranked.append((key, path, fact))
    ranked.sort(key=lambda r: r[0])
    limit = ctx.cfg.consolidate.profile_max_lines
    kept: list[tuple[Path, Fact]] = []
    seen: list[frozenset[str]] = []
    for _, path, fact in ranked:
        tokens = _tokens(fact.content)
        if any(_jaccard(tokens, other) >= NEAR_DUPLICATE for other in seen):
            continue
        seen.append(tokens)
        kept.append((path, fact))
        if len(kept) >= limit:
            break
    if not kept and not ctx.layout.profile_path.exists():
        return None
    lines = [PROFILE_HEADER]
    if not kept:
        lines.append("No behavioral facts yet.\n")
    for path, fact in kept:
        statement = " ".join(fact.content.split())
        link = ctx.layout.relative(path)
        lines.append(f"- {statement} ([{fact.category.value}]({link}))\n")
    return lines[0] + "\n" + "".join(lines[1:])


# ---------------------------------------------------------------- IDENTITY.md

_HEADING = regex.compile(r"^#{1,6}\s")
_ITEM = regex.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s")
_RULE = regex.compile(
    r"\b(?:always|never|must|important|remember|prefer(?:s|red)?|rule)\b", regex.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class _Unit:
    position: int
    heading: str | None  # the section heading line it sits under
    text: str  # verbatim lines, without the trailing newline

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8")) + 2  # the unit plus its blank-line separator


def _units(text: str) -> tuple[str | None, list[str], list[_Unit]]:
    """(title line, section headings in order, units). The first ``# `` line is the title."""
    title: str | None = None
    headings: list[str] = []
    units: list[_Unit] = []
    heading: str | None = None
    current: list[str] = []

    def flush() -> None:
        if current:
            units.append(_Unit(len(units), heading, "\n".join(current).rstrip()))
            current.clear()

    for line in text.splitlines():
        if _HEADING.match(line):
            flush()
            if title is None and not units and not headings and line.startswith("# "):
                title = line.rstrip()
                continue
            heading = line.rstrip()
            if heading not in headings:
                headings.append(heading)
            continue
        if not line.strip():
            flush()
            continue
        if _ITEM.match(line) and current:
            flush()
        current.append(line.rstrip())
    flush()
    return title, headings, units


def _render_sections(title: str | None, headings: Sequence[str], units: Sequence[_Unit]) -> str:
    by_heading: dict[str | None, list[_Unit]] = {}
    for unit in sorted(units, key=lambda u: u.position):
        by_heading.setdefault(unit.heading, []).append(unit)
    blocks: list[str] = [title] if title else []
    for heading in [None, *headings]:
        members = by_heading.get(heading)
        if not members:
            continue
        if heading is not None:
            blocks.append(heading)
        blocks.append(_join(members))
    return "\n\n".join(blocks) + "\n"


def _join(units: Sequence[_Unit]) -> str:
    """List items stay a tight list; paragraphs are separated by a blank line."""
    out = units[0].text
    for prev, unit in zip(units, units[1:], strict=False):
        tight = _ITEM.match(prev.text) and _ITEM.match(unit.text)
        out += ("\n" if tight else "\n\n") + unit.text
    return out


def _normalized(text: str) -> str:
    return " ".join(w.casefold() for w in WORD.findall(text))


def consolidate_identity(ctx: Context) -> list[Change]:
    """The archive write and the IDENTITY.md rewrite, when IDENTITY.md is past the limit."""
    path = ctx.layout.identity_path
    limit = ctx.cfg.consolidate.identity_max_bytes
    text = read_text(path)
    if text is None or len(text.encode("utf-8")) <= limit:
        return []
    title, headings, units = _units(text)
    budget = int(limit * IDENTITY_KEEP_SHARE) - len((title or "").encode("utf-8"))
    # Latest occurrence of each statement wins; near-identical ones count as the same.
    newest_first = sorted(units, key=lambda u: -u.position)
    unique: list[_Unit] = []
    dropped: list[_Unit] = []
    seen_keys: set[str] = set()
    seen_tokens: list[frozenset[str]] = []
    for unit in newest_first:
        key = _normalized(unit.text)
        tokens = _tokens(unit.text)
        if key in seen_keys or any(_jaccard(tokens, t) >= 0.9 for t in seen_tokens[-200:]):
            dropped.append(unit)
            continue
        seen_keys.add(key)
        seen_tokens.append(tokens)
        unique.append(unit)
    priority = sorted(unique, key=lambda u: (_RULE.search(u.text) is None, -u.position))
    kept: list[_Unit] = []
    used = 0
    headed: set[str | None] = {None}
    for unit in priority:
        cost = unit.size
        if unit.heading not in headed:
            cost += len((unit.heading or "").encode("utf-8")) + 2
        if used + cost > budget:
            dropped.append(unit)
            continue
        used += cost
        headed.add(unit.heading)
        kept.append(unit)
    if not dropped:
        return []
    new_identity = _render_sections(title, headings, kept)
    day = ctx.now.strftime("%Y-%m-%d")
    archive_path = ctx.layout.inside(ctx.layout.archive_dir / f"IDENTITY-{day}.md")
    moved = _render_sections(None, headings, dropped)
    previous = read_text(archive_path)
    header = f"## Moved from IDENTITY.md on {day}\n\n"
    if previous:
        archive_text = previous.rstrip("\n") + "\n\n" + header + moved
    else:
        archive_text = f"# IDENTITY.md archive {day}\n\n" + header + moved
    reason = (
        f"IDENTITY.md is {len(text.encode('utf-8'))} bytes (> {limit}): kept {len(kept)} "
        f"unit(s), moved {len(dropped)} ({len(units) - len(unique)} duplicate(s)) to the archive"
    )
    return [
        FileWrite(archive_path, archive_text, "identity_archive", reason),
        FileWrite(path, new_identity, "identity", reason),
    ]
