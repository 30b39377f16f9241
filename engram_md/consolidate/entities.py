"""Entity pages: one ``memory/entities/<type>-<slug>.md`` per person, project, tool, place…

Facts name entities inconsistently: ``person-dana`` (the LLM prompt's ``<type>-<name>``),
``Dana`` (a hand edit), ``entity-dana`` (the offline extractor), ``tool-postgresql`` next to
``postgres``. Names are merged by their topic key (:func:`engram_md.organize.topics.entity_topic`:
type prefix dropped, case, punctuation, versions and known aliases normalized). Within one
key, a specific type (person, org, project, tool, place) wins over a generic one (entity,
other, none); two different specific types under one key ("place-jordan", "person-jordan")
stay separate pages, and generic spellings join the most frequent specific one.

A page is written for every merged entity mentioned by at least :data:`MIN_FACTS` facts. It
holds frontmatter (type, name, aliases, fact counts, first and last seen), a synthesis
paragraph (extractive: the most important *active* statements, by the importance their
files give, told in time order), and a timeline of every fact, oldest first, linking to the
fact file relative to the page; facts that are no longer active are struck through with their
status. Pages are derived files: they carry no clock reading and are rewritten only when
their text changes; ranked by what the fact files say, not by recall counts or decay (both in
state/), a page is never rewritten by a recall or by another epoch. A page left behind under
an alias's old name (``entity-dana.md`` once ``person-dana`` exists) is replaced by a short
"merged into" note, never deleted.

Entity names inside fact files are not rewritten: the alias list of each page records the
spellings, and rewriting thousands of fact files for a spelling would bury real changes in
``git diff``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.folder import read_text
from ..core.models import Fact, Status
from ..core.paths import MemoryLayout, safe_slug
from ..organize.topics import ENTITY_TYPE_PREFIXES, entity_topic
from ..store.factfile import format_time
from .lifecycle import archive_predicate
from .plan import Change, Context, FileWrite

__all__ = ["MIN_FACTS", "EntityGroup", "group_entities", "plan_entities", "render_entity"]

MIN_FACTS = 2  # an entity named once is usually noise of the offline extractor
SYNTHESIS_FACTS = 5
MAX_TIMELINE = 100  # the most recent entries; older ones are counted, not listed
GENERIC_TYPES = frozenset({"entity", "other"})
SPECIFIC_TYPES = ENTITY_TYPE_PREFIXES - GENERIC_TYPES


@dataclass
class EntityGroup:
    """One merged entity: its page name, how it is spelled, and the facts naming it."""

    type: str
    key: str  # the topic key it was merged on
    names: Counter[str] = field(default_factory=Counter)  # name slugs (type dropped)
    aliases: set[str] = field(default_factory=set)  # raw spellings found in facts
    facts: list[tuple[Path, Fact]] = field(default_factory=list)

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


def _split(raw: str) -> tuple[str | None, str]:
    """(type or None, name slug) of a raw entity spelling."""
    slug = safe_slug(raw, fallback="")
    kind, sep, name = slug.partition("-")
    if sep and name and kind in ENTITY_TYPE_PREFIXES:
        return kind, name
    return None, slug


def group_entities(facts: Sequence[tuple[Path, Fact]]) -> list[EntityGroup]:
    """Merge every entity spelling in ``facts`` into groups, in a stable order. O(n)."""
    cache: dict[str, tuple[str, str | None, str]] = {}
    # key -> type (None: generic) -> (names, aliases, fact indexes)
    mentions: dict[str, dict[str | None, tuple[Counter[str], set[str], list[int]]]] = {}
    generic_labels: dict[str, Counter[str]] = {}
    for index, (_, fact) in enumerate(facts):
        for raw in dict.fromkeys(fact.entities):
            if raw not in cache:
                kind, name = _split(raw)
                cache[raw] = (entity_topic(raw), kind, name)
            key, kind, name = cache[raw]
            if not key or not name:
                continue
            bucket = kind if kind in SPECIFIC_TYPES else None
            if kind in GENERIC_TYPES:
                generic_labels.setdefault(key, Counter())[kind] += 1
            names, aliases, indexes = mentions.setdefault(key, {}).setdefault(
                bucket, (Counter(), set(), [])
            )
            names[name] += 1
            aliases.add(raw)
            if not indexes or indexes[-1] != index:
                indexes.append(index)
    groups: list[EntityGroup] = []
    for key in sorted(mentions):
        by_type = mentions[key]
        specific = sorted(
            (t for t in by_type if t is not None), key=lambda t: (-len(by_type[t][2]), t)
        )
        if specific:
            home = specific[0]
        else:
            labels = generic_labels.get(key, Counter())
            home = min(labels.items(), key=lambda kv: (-kv[1], kv[0]))[0] if labels else "other"
        local: dict[str, tuple[EntityGroup, set[int]]] = {}
        for kind in [*specific, None]:
            if kind not in by_type:
                continue
            target = home if kind is None else kind
            group, members = local.setdefault(target, (EntityGroup(target, key), set()))
            names, aliases, indexes = by_type[kind]
            group.names.update(names)
            group.aliases.update(aliases)
            members.update(indexes)
        for group, members in local.values():
            # Fact order is stable (ctx.facts order), so ties on (created, id) cannot flip.
            group.facts = sorted(
                (facts[i] for i in members), key=lambda pf: (pf[1].created, pf[1].id)
            )
            groups.append(group)
    return groups


# ---------------------------------------------------------------- rendering


def _linker(layout: MemoryLayout) -> Callable[[Path], str]:
    """Links from a page in ``entities/`` to fact files: ``../facts/YYYY-MM-DD/<file>.md``.

    Text prefixes rather than ``Path.relative_to`` per fact: timelines link thousands of facts.
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
        elif isinstance(value, str) and key not in _PLAIN_KEYS:
            rendered = json.dumps(value, ensure_ascii=False)
        else:
            rendered = str(value)
        lines.append(f"{key}: {rendered}")
    return "\n".join(lines) + "\n---\n"


# Values that are slugs or timestamps: safe and more readable unquoted.
_PLAIN_KEYS = frozenset({"type", "firstSeen", "lastSeen", "mergedInto"})


def render_entity(group: EntityGroup, layout: MemoryLayout) -> str:
    in_archive = archive_predicate(layout)
    link_to = _linker(layout)
    active = [(p, f) for p, f in group.facts if f.status is Status.ACTIVE and not in_archive(p)]
    ranked = sorted(
        active, key=lambda pf: (-pf[1].importance, -pf[1].created.timestamp(), pf[1].id)
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
    # set changes, not each time decay reorders two of them.
    chosen.sort(key=lambda f: (f.created, f.id))
    synthesis = [_sentence(f.content) for f in chosen]
    meta: dict[str, object] = {
        "type": group.type,
        "name": group.display_name,
        "aliases": sorted(group.aliases),
        "facts": len(group.facts),
        "activeFacts": len(active),
        "firstSeen": format_time(group.facts[0][1].created),
        "lastSeen": format_time(group.facts[-1][1].created),
    }
    lines = [_frontmatter(meta), f"# {group.display_name}", "", f"**Type:** {group.type}", ""]
    lines += ["## Synthesis", "", " ".join(synthesis) if synthesis else "No active facts.", ""]
    lines += ["## Timeline", ""]
    shown = group.facts[-MAX_TIMELINE:]
    if len(group.facts) > len(shown):
        lines.append(f"*{len(group.facts) - len(shown)} earlier fact(s) not listed.*")
        lines.append("")
    for path, fact in shown:
        day = fact.created.date().isoformat()
        text = " ".join(fact.content.split())
        link = f"[{fact.category.value}]({link_to(path)})"
        if fact.status is Status.ACTIVE:
            lines.append(f"- {day} — {text} ({link})")
        else:
            lines.append(f"- {day} — ~~{text}~~ *({fact.status.value})* ({link})")
    return "\n".join(lines) + "\n"


def _redirect(group: EntityGroup) -> str:
    meta = {"type": group.type, "name": group.display_name, "mergedInto": group.slug}
    return (
        _frontmatter(meta)
        + f"# {group.display_name}\n\nMerged into [{group.slug}]({group.slug}.md).\n"
    )


def _looks_generated(path: Path) -> bool:
    text = read_text(path)  # never through a link: a planted one is simply not ours
    return text is not None and text.startswith("---\ntype: ")


# ---------------------------------------------------------------- the step


def plan_entities(ctx: Context) -> list[Change]:
    layout = ctx.layout
    changes: list[Change] = []
    pages: dict[str, EntityGroup] = {}
    for group in group_entities(ctx.facts):
        if len(group.facts) < MIN_FACTS:
            continue
        slug = safe_slug(group.slug)
        if slug in pages:  # two keys that slug alike: the first (sorted) wins, stays stable
            continue
        pages[slug] = group
        path = layout.inside(layout.entities_dir / f"{slug}.md")
        text = render_entity(group, layout)
        if read_text(path) != text:
            reason = f"{len(group.facts)} fact(s), aliases: {', '.join(sorted(group.aliases))}"
            changes.append(FileWrite(path, text, "entity", reason))
    # Pages under an alias's own name, from before the merge: point them at the merged page.
    for slug, group in pages.items():
        for raw in sorted(group.aliases):
            kind, name = _split(raw)
            old = safe_slug(f"{kind or group.type}-{name}")
            if old == slug or old in pages:
                continue
            path = layout.inside(layout.entities_dir / f"{old}.md")
            if not path.exists() or not _looks_generated(path):
                continue
            text = _redirect(group)
            if read_text(path) != text:
                changes.append(FileWrite(path, text, "entity_redirect", f"merged into {slug}"))
    return changes
