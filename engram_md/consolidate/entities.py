"""Entity pages: one ``memory/entities/<type>-<slug>.md`` per person, project, tool, place…

Facts name entities inconsistently: ``person-dana`` (the LLM prompt's ``<type>-<name>``),
``Dana`` (a hand edit), ``entity-dana`` (the offline extractor), ``tool-postgresql`` next to
``postgres``. Names are merged by their topic key (:func:`engram_md.organize.topics.entity_topic`:
type prefix dropped, case, punctuation, versions and known aliases normalized). Within one
key, a specific type (person, org, project, tool, place) wins over a generic one (entity,
other, none); two different specific types under one key ("place-jordan", "person-jordan")
stay separate pages, and generic spellings join the most frequent specific one.

A page (:mod:`engram_md.store.entity_pages`: the format) is written for every merged entity
a fact names, even once: a fact file links to the page of each entity it names. Pages are
derived files: they carry no clock reading and are rewritten only when their text changes;
ranked by what the fact files say, not by recall counts or decay (both in state/), a page is
never rewritten by a recall or by another epoch.

A fact file links to the page named by its own spelling of the entity
(:func:`engram_md.store.links.entity_page`). Under each spelling that is not the merged
page's name (``entity-dana.md`` once ``person-dana`` exists, ``dana.md`` for a bare "Dana")
a short "merged into" note is written, so every such link resolves; a generated page left
there is replaced by the note, never deleted, and a page a person wrote is left alone.

Entity names inside fact files are not rewritten: the alias list of each page records the
spellings, and rewriting thousands of fact files for a spelling would bury real changes in
``git diff``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..core.folder import read_text
from ..core.models import Fact
from ..core.paths import safe_slug
from ..extract.mentions import ENTITY_KINDS
from ..organize.topics import entity_topic
from ..store.entity_pages import (
    EntityGroup,
    looks_generated,
    render_page,
    render_redirect,
    split_entity,
)
from ..store.links import entity_page
from .lifecycle import archive_predicate
from .plan import Change, Context, FileWrite

__all__ = ["group_entities", "plan_entities"]

GENERIC_TYPES = frozenset({"entity", "other"})
SPECIFIC_TYPES = ENTITY_KINDS - GENERIC_TYPES


def group_entities(facts: Sequence[tuple[Path, Fact]]) -> list[EntityGroup]:
    """Merge every entity spelling in ``facts`` into groups, in a stable order. O(n)."""
    cache: dict[str, tuple[str, str | None, str]] = {}
    # key -> type (None: generic) -> (names, aliases, fact indexes)
    mentions: dict[str, dict[str | None, tuple[Counter[str], set[str], list[int]]]] = {}
    generic_labels: dict[str, Counter[str]] = {}
    for index, (_, fact) in enumerate(facts):
        for raw in dict.fromkeys(fact.entities):
            if raw not in cache:
                kind, name = split_entity(raw)
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


# ---------------------------------------------------------------- the step


def plan_entities(ctx: Context) -> list[Change]:
    layout = ctx.layout
    in_archive = archive_predicate(layout)
    changes: list[Change] = []
    pages: dict[str, EntityGroup] = {}
    for group in group_entities(ctx.facts):
        slug = safe_slug(group.slug)
        if slug in pages:  # two keys that slug alike: the first (sorted) wins, stays stable
            continue
        pages[slug] = group
        path = layout.inside(layout.entities_dir / f"{slug}.md")
        text = render_page(group, layout, in_archive)
        if read_text(path) != text:
            reason = f"{len(group.facts)} fact(s), aliases: {', '.join(sorted(group.aliases))}"
            changes.append(FileWrite(path, text, "entity", reason))
    # The other spellings' pages: the ones fact files link to, and those of an earlier merge.
    claimed = {f"{slug}.md" for slug in pages}
    for slug, group in pages.items():
        linked: dict[str, bool] = {}  # file name -> whether a fact file links to it
        for raw in sorted(group.aliases):
            kind, name = split_entity(raw)
            earlier = f"{safe_slug(f'{kind or group.type}-{name}')}.md"
            linked[earlier] = linked.get(earlier, False)
            page = entity_page(raw)
            if page is not None:
                linked[page] = True
        for old, needed in linked.items():
            if old in claimed:
                continue
            claimed.add(old)
            path = layout.inside(layout.entities_dir / old)
            current = read_text(path)
            if path.is_symlink() or (path.exists() and not looks_generated(current)):
                continue  # a person's own page, or something that is no page: left alone
            if not needed and not path.exists():
                continue
            text = render_redirect(group)
            if current != text:
                changes.append(FileWrite(path, text, "entity_redirect", f"merged into {slug}"))
    return changes
