"""Entity pages: the format of ``memory/entities/<type>-<slug>.md``, and keeping the page of
each entity a new fact names in step between consolidations.

A page holds frontmatter (type, name, aliases, fact counts, first and last seen), a synthesis
paragraph (the most important *active* statements, by the importance their files give, told
in time order), then the facts, newest first: the current ones (active, not archived) under
``## Current``, the others (superseded, merged, archived, …) below under
``## No longer current``, struck through with their status. Every entry links to its fact
file relative to the page.
Pages are derived files with no clock reading in them, so the same facts give the same bytes.

Consolidation (:mod:`engram_md.consolidate.entities`) merges spellings and writes every page
whole. Between its runs, :class:`EntityPages` makes sure the page a fact file links to exists
(:func:`engram_md.store.links.entity_page`): once per batch it writes each touched page that
is missing, and adds the batch's new facts on top of the current ones of a page it wrote
before (counts and last-seen follow; the synthesis waits for the next consolidation). The
list keeps the bound a whole page has (MAX_LISTED entries, the oldest counted, not listed),
so a page's size, and the cost of rewriting it at each batch, stay level however many facts
name it: before, a page grew by every fact until the next consolidation, and an import
(which does not consolidate) rewrote pages of thousands of lines at each conversation. A
page a person wrote, and a "merged into" note, are left as they are: the link resolves
either way.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import regex
import yaml

from ..core.atomic import atomic_write_text
from ..core.folder import read_text
from ..core.models import Fact, Status
from ..core.paths import MemoryLayout, safe_slug
from ..extract.mentions import ENTITY_KINDS
from .factfile import format_time
from .links import entity_page

__all__ = [
    "CURRENT_HEADING",
    "EARLIER_HEADING",
    "EntityGroup",
    "EntityPages",
    "MAX_LISTED",
    "looks_generated",
    "render_page",
    "render_redirect",
    "split_entity",
]

SYNTHESIS_FACTS = 5
MAX_LISTED = 100  # the newest entries, current first; the rest are counted, not listed
CURRENT_HEADING = "## Current"
EARLIER_HEADING = "## No longer current"
_NO_CURRENT = "No current facts."
_UNLISTED = "*{} earlier fact(s) not listed.*"
# libyaml's parser where PyYAML has it: a page's frontmatter is read back at each batch that
# touches the page, and the pure-Python parser took 1.3 ms a page (9 s of a 25k-message import).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UNLISTED_LINE = regex.compile(r"\*(\d+) earlier fact\(s\) not listed\.\*\n?")


def split_entity(raw: str) -> tuple[str | None, str]:
    """(kind or None, name slug) of an entity as a fact spells it: ``person-dana`` →
    ``("person", "dana")``, ``Dana`` → ``(None, "dana")``."""
    slug = safe_slug(raw, fallback="")
    kind, sep, name = slug.partition("-")
    if sep and name and kind in ENTITY_KINDS:
        return kind, name
    return None, slug


@dataclass
class EntityGroup:
    """One entity: its type, how it is spelled, and the facts naming it."""

    type: str
    key: str  # the name it is known by (consolidation: the topic key it was merged on)
    names: Counter[str] = field(default_factory=Counter)  # name slugs (type dropped)
    aliases: set[str] = field(default_factory=set)  # raw spellings found in facts
    facts: list[tuple[Path, Fact]] = field(default_factory=list)  # oldest first

    @property
    def slug(self) -> str:
        """``<type>-<name>``: the canonical spelling when a fact used it, else the commonest."""
        if self.key in self.names:
            return f"{self.type}-{self.key}"
        name = min(self.names.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        return f"{self.type}-{name}"

    @property
    def display_name(self) -> str:
        """The most common spelling a person typed with capitals, else the slug titled."""
        typed = Counter(a for a in self.aliases if a != a.lower() and "-" not in a)
        if typed:
            return sorted(typed.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        return self.slug.split("-", 1)[1].replace("-", " ").title()


# ---------------------------------------------------------------- rendering


def _linker(layout: MemoryLayout) -> Callable[[Path], str]:
    """Links from a page in ``entities/`` to fact files: ``../facts/YYYY-MM-DD/<file>.md``.

    Text prefixes rather than ``Path.relative_to`` per fact: pages link thousands of facts.
    """
    prefixes = tuple(
        dict.fromkeys((f"{layout.memory_dir}{os.sep}", f"{layout.memory_dir.resolve()}{os.sep}"))
    )

    def link(path: Path) -> str:
        text = str(path)
        for prefix in prefixes:
            if text.startswith(prefix):
                return "../" + text[len(prefix) :].replace(os.sep, "/")
        return "../" + layout.relative(path)

    return link


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _frontmatter(values: Mapping[str, object]) -> str:
    """YAML frontmatter; strings are written as JSON strings, which YAML reads unchanged.

    Cheaper than a YAML emitter (thousands of pages per run) and just as exact: slugs and
    numbers plain, names and aliases quoted, timestamps as YAML timestamps.
    """
    lines = ["---"]
    for key, value in values.items():
        if isinstance(value, list):
            rendered = "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        elif isinstance(value, datetime):
            rendered = format_time(value)
        elif isinstance(value, str) and key not in _PLAIN_KEYS:
            rendered = json.dumps(value, ensure_ascii=False)
        else:
            rendered = str(value)
        lines.append(f"{key}: {rendered}")
    return "\n".join(lines) + "\n---\n"


# Values that are slugs or timestamps: safe and more readable unquoted.
_PLAIN_KEYS = frozenset({"type", "firstSeen", "lastSeen", "mergedInto"})


def _newest_first(entries: Iterable[tuple[Path, Fact]]) -> list[tuple[Path, Fact]]:
    # Ids break ties, so two facts of one second keep their order from run to run.
    return sorted(entries, key=lambda pf: (-pf[1].created.timestamp(), pf[1].id))


def _entry(path: Path, fact: Fact, link_to: Callable[[Path], str], state: str | None) -> str:
    """One listed fact: its day, its statement (struck through with ``state`` when it is no
    longer current), a link to its file."""
    day = fact.created.date().isoformat()
    text = " ".join(fact.content.split())
    link = f"[{fact.category.value}]({link_to(path)})"
    if state is None:
        return f"- {day} — {text} ({link})"
    return f"- {day} — ~~{text}~~ *({state})* ({link})"


def render_page(
    group: EntityGroup, layout: MemoryLayout, in_archive: Callable[[Path], bool]
) -> str:
    """The whole page of ``group``; ``in_archive`` says whether a fact file is archived."""
    link_to = _linker(layout)
    current = [(p, f) for p, f in group.facts if f.status is Status.ACTIVE and not in_archive(p)]
    earlier = [(p, f) for p, f in group.facts if f.status is not Status.ACTIVE or in_archive(p)]
    ranked = sorted(
        current, key=lambda pf: (-pf[1].importance, -pf[1].created.timestamp(), pf[1].id)
    )
    chosen: list[Fact] = []
    seen: set[str] = set()
    for _, fact in ranked:
        sentence = _sentence(fact.content).casefold()
        if sentence not in seen:
            seen.add(sentence)
            chosen.append(fact)
        if len(chosen) >= SYNTHESIS_FACTS:
            break
    # Told in time order: the paragraph reads as a story and changes only when the chosen
    # set changes, not each time two of them swap places in the ranking.
    chosen.sort(key=lambda f: (f.created, f.id))
    synthesis = [_sentence(f.content) for f in chosen]
    meta: dict[str, object] = {
        "type": group.type,
        "name": group.display_name,
        "aliases": sorted(group.aliases),
        "facts": len(group.facts),
        "activeFacts": len(current),
        "firstSeen": group.facts[0][1].created,
        "lastSeen": group.facts[-1][1].created,
    }
    lines = [_frontmatter(meta), f"# {group.display_name}", "", f"**Type:** {group.type}", ""]
    lines += ["## Synthesis", "", " ".join(synthesis) if synthesis else "No active facts.", ""]
    listed = 0
    lines += [CURRENT_HEADING, ""]
    for path, fact in _newest_first(current)[:MAX_LISTED]:
        lines.append(_entry(path, fact, link_to, None))
        listed += 1
    if not current:
        lines.append(_NO_CURRENT)
    lines.append("")
    shown_earlier = _newest_first(earlier)[: MAX_LISTED - listed]
    if shown_earlier:
        lines += [EARLIER_HEADING, ""]
        for path, fact in shown_earlier:
            state = "archived" if fact.status is Status.ACTIVE else fact.status.value
            lines.append(_entry(path, fact, link_to, state))
            listed += 1
        lines.append("")
    if len(group.facts) > listed:
        lines += [_UNLISTED.format(len(group.facts) - listed), ""]
    return "\n".join(lines)


def render_redirect(group: EntityGroup) -> str:
    """The note left under a spelling merged into ``group``'s page."""
    meta = {"type": group.type, "name": group.display_name, "mergedInto": group.slug}
    return (
        _frontmatter(meta)
        + f"# {group.display_name}\n\nMerged into [{group.slug}]({group.slug}.md).\n"
    )


def looks_generated(text: str | None) -> bool:
    """Whether a page's text is one engram-md wrote (a person's own page is left alone)."""
    return text is not None and text.startswith("---\ntype: ")


# ---------------------------------------------------------------- between consolidations


def _add_current(
    text: str,
    entries: Sequence[tuple[Path, Fact]],
    spellings: Iterable[str],
    link_to: Callable[[Path], str],
) -> str | None:
    """``text`` (a full page) with ``entries`` (current facts) added on top of its current
    facts; None when it is no full page of ours (a "merged into" note, an older layout)."""
    head, sep, body = text[4:].partition("\n---\n")
    marker = f"\n{CURRENT_HEADING}\n\n"
    if not sep or marker not in body:
        return None
    try:
        meta: Any = yaml.load(head, Loader=_LOADER)
    except yaml.YAMLError:
        return None
    if not isinstance(meta, dict) or "mergedInto" in meta:
        return None
    before, _, rest = body.partition(marker)
    listed, gap, after = rest.partition("\n\n")
    lines = [ln for ln in listed.splitlines() if ln != _NO_CURRENT]
    earlier, unlisted, tail = _after_current(after)
    # A fact older than every listed one on a page that leaves some out was listed before
    # and dropped for newer ones (a confirmation notes it again): it is counted already.
    oldest = lines[-1][:_DAY_LEN] if unlisted and lines else ""
    new = [(p, f) for p, f in entries if f"]({link_to(p)})" not in body and _day_of(f) >= oldest]
    if not new:
        return text
    for path, fact in new:
        # Newest first to the day (entries carry no time): before the first of that day.
        day = _day_of(fact)
        at = next((i for i, ln in enumerate(lines) if ln[: len(day)] <= day), len(lines))
        lines.insert(at, _entry(path, fact, link_to, None))
    over = len(lines) + len(earlier) - MAX_LISTED
    if over > 0:
        # As a whole page lists them: current first, the oldest left out and counted.
        dropped_earlier = min(over, len(earlier))
        earlier = earlier[: len(earlier) - dropped_earlier]
        lines = lines[: len(lines) - (over - dropped_earlier)]
        after = _after_text(earlier, unlisted + over, tail)
        gap = "\n\n"
    meta["facts"] = int(meta.get("facts", 0)) + len(new)
    meta["activeFacts"] = int(meta.get("activeFacts", 0)) + len(new)
    meta["aliases"] = sorted({*map(str, meta.get("aliases", [])), *spellings})
    times = [f.created for _, f in new] + [
        t for t in (meta.get("firstSeen"), meta.get("lastSeen")) if isinstance(t, datetime)
    ]
    meta["firstSeen"], meta["lastSeen"] = min(times), max(times)
    # The current list ends at a blank line, or with the page (then with its line break).
    return _frontmatter(meta) + before + marker + "\n".join(lines) + (gap or "\n") + after


def _day_of(fact: Fact) -> str:
    """How a fact's entry begins, "- YYYY-MM-DD ": entries compare by day on it."""
    return f"- {fact.created.date().isoformat()} "


_DAY_LEN = len("- 2000-01-01 ")  # of what _day_of returns


def _after_current(after: str) -> tuple[list[str], int, str]:
    """What follows a page's current list: the entries no longer current, how many facts
    are not listed, and any text after those (kept as it is)."""
    earlier: list[str] = []
    head = f"{EARLIER_HEADING}\n\n"
    if after.startswith(head):
        block, _, after = after[len(head) :].partition("\n\n")
        earlier = block.splitlines()
    found = _UNLISTED_LINE.match(after)
    if found is None:
        return earlier, 0, after
    return earlier, int(found.group(1)), after[found.end() :]


def _after_text(earlier: Sequence[str], unlisted: int, tail: str) -> str:
    """The inverse of :func:`_after_current`, laid out as :func:`render_page` lays it out."""
    parts = [f"{EARLIER_HEADING}\n\n" + "\n".join(earlier) + "\n"] if earlier else []
    if unlisted:
        parts.append(_UNLISTED.format(unlisted) + "\n")
    return "\n".join(parts) + tail


class EntityPages:
    """The pages the facts of one batch link to, written once per batch (:meth:`flush`)."""

    def __init__(self, layout: MemoryLayout, *, fsync: bool = True) -> None:
        self.layout = layout
        self.fsync = fsync
        self._touched: dict[str, dict[str, tuple[Path, Fact]]] = {}  # page -> id -> entry
        self._spelled: dict[str, set[str]] = {}  # page -> the spellings that name it

    def note(self, path: Path, fact: Fact) -> None:
        """A fact file was written: its entities' pages are touched."""
        for raw in fact.entities:
            page = entity_page(raw)
            if page is not None:
                self._touched.setdefault(page, {})[fact.id] = (path, fact)
                self._spelled.setdefault(page, set()).add(raw)

    def flush(self) -> list[Path]:
        """Write each touched page (one atomic write at most); returns those written."""
        written: list[Path] = []
        touched, spelled = self._touched, self._spelled
        self._touched, self._spelled = {}, {}
        for page, by_id in sorted(touched.items()):
            path = self.layout.inside(self.layout.entities_dir / page)
            entries = sorted(by_id.values(), key=lambda pf: (pf[1].created, pf[1].id))
            text = self._page_text(path, spelled[page], entries)
            if text is not None:
                atomic_write_text(path, text, fsync=self.fsync)
                written.append(path)
        return written

    def _page_text(
        self, path: Path, spellings: set[str], entries: Sequence[tuple[Path, Fact]]
    ) -> str | None:
        """The page's new text, or None to leave it (unchanged, or not ours to change)."""
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return None  # a planted link or pipe is not followed, nor replaced
        current = read_text(path)
        if current is None and not path.exists():
            kind, name = split_entity(min(spellings))
            group = EntityGroup(kind or "entity", name, Counter({name: 1}), spellings, [*entries])
            return render_page(group, self.layout, self._in_archive)
        if not looks_generated(current):
            return None
        assert current is not None
        live = [(p, f) for p, f in entries if f.status is Status.ACTIVE and not self._in_archive(p)]
        updated = _add_current(current, live, spellings, _linker(self.layout))
        return None if updated is None or updated == current else updated

    def _in_archive(self, path: Path) -> bool:
        return self.layout.relative(path).startswith("archive/")
