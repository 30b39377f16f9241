"""Which memory a person names, and what a forget removes: the facts asked for by id, and
the retired copies that carry the same memory (their lineage).

A memory is named by its id, by the path of its file (as ``git status`` or an editor shows
it) or by the file's name (:func:`resolve`); ``forget`` and ``history`` take all three. A
fact asked for is found by its file, or, once a forget that was interrupted removed the file,
by its tombstone (:mod:`engram_md.maintain.tombstones`), which stands in for it: the re-run
works by id and path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

import regex

from ..core.errors import EngramError, MemoryFileError
from ..core.models import Fact, Status
from ..core.paths import MemoryLayout
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact

# The ids the pipeline writes: <category>-<YYYYMMDD>-<HHMMSS>-<hash8>. Such an id names its
# file directly (facts/YYYY-MM-DD/<category>-<HHMMSS>-<hash8>.md), so no folder scan is needed.
ID_SHAPE = regex.compile(r"^(?P<cat>[a-z_]+)-(?P<day>\d{8})-(?P<time>\d{6})-(?P<hash>[0-9a-f]{8})$")
# The name of such a file without its ".md": <category>-<HHMMSS>-<hash8>.
STEM_SHAPE = regex.compile(r"^[a-z_]+-\d{6}-[0-9a-f]{8}$")
# Where fact files live under the memory folder; a path is taken from here on (archive first:
# archived facts live in archive/facts/).
FACT_ANCHORS = ("archive", "facts")
# Retired facts: what consolidation merged away or replaced, kept as files with their text.
RETIRED = frozenset({Status.MERGED, Status.SUPERSEDED, Status.INVALIDATED, Status.ARCHIVED})


@dataclass(frozen=True)
class Target:
    """One fact to forget: where it is (or was), and what it said (None once its file is gone:
    a forget that is being finished from its tombstone)."""

    id: str
    path: str  # relative to the memory folder
    fact: Fact | None
    lineage_of: str | None = None  # the fact asked for, when this is a retired copy of it


def looks_like_name(text: str) -> bool:
    """Whether ``text`` has the shape of a memory's name: a pipeline fact id, or the name or
    path of a markdown file. A typo in one must not be taken for a search query."""
    text = text.strip()
    return (
        ID_SHAPE.match(text) is not None
        or STEM_SHAPE.match(text) is not None
        or text.endswith(".md")
    )


def resolve(store: MemoryStore, text: str, stones: Sequence[Target] = ()) -> str | None:
    """The id of the memory ``text`` names, or None when it names none.

    ``text`` is an id, the path of a fact file (absolute, relative to the working folder or
    to the memory folder, or as git prints it from a repository root elsewhere) or a fact
    file's name, with or without ``.md``. ``stones``: the tombstones, whose ids, paths and
    names count too (a forget to finish). A name two files with different ids share is
    refused (:class:`EngramError`): the person has to say which one.
    """
    text = text.strip()
    if not text:
        return None
    layout = store.layout
    rels = _rels_named(layout, text)
    for rel in rels:
        try:
            return read_fact(layout.memory_dir / rel).id
        except MemoryFileError:
            continue
    for stone in stones:
        if stone.path in rels:
            return stone.id
    if "/" in text:
        return None
    named = _by_file_name(store, text.removesuffix(".md"), stones)
    if named is not None or text.endswith(".md") or any(ch.isspace() for ch in text):
        return named  # an id has no space in it
    if find_fact_files(store, [text]) or any(stone.id == text for stone in stones):
        return text
    return None


def _rels_named(layout: MemoryLayout, text: str) -> list[str]:
    """The fact-file paths, relative to the memory folder, that ``text`` may be the path of."""
    if not text.endswith(".md"):
        return []
    raw = PurePath(text)
    tries = [Path(raw), layout.memory_dir / raw]
    if raw.parts[0].startswith("~"):
        try:
            tries.append(Path(text).expanduser())
        except RuntimeError:
            pass  # ~name of no such user
    for anchor in FACT_ANCHORS:
        if anchor in raw.parts:
            tries.append(layout.memory_dir.joinpath(*raw.parts[raw.parts.index(anchor) :]))
    roots = (layout.facts_dir.resolve(), (layout.archive_dir / "facts").resolve())
    rels: list[str] = []
    for path in tries:
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):
            continue  # a link loop, a name too long, a NUL: not the path of a fact file
        if any(root in resolved.parents for root in roots):
            rel = layout.relative(resolved)
            if rel not in rels:
                rels.append(rel)
    return rels


def _by_file_name(store: MemoryStore, stem: str, stones: Sequence[Target]) -> str | None:
    ids: dict[str, str] = {}  # id -> a file (or tombstone path) holding it
    for path in store.fact_paths():
        if path.stem == stem:
            try:
                ids.setdefault(read_fact(path).id, store.layout.relative(path))
            except MemoryFileError:
                continue
    for stone in stones:
        if PurePath(stone.path).stem == stem:
            ids.setdefault(stone.id, stone.path)
    if len(ids) > 1:
        paths = ", ".join(sorted(ids.values()))
        raise EngramError(f"{stem} names {len(ids)} memories ({paths}): give the path or the id")
    return next(iter(ids), None)


def _candidate_paths(store: MemoryStore, fact_id: str) -> list[Path]:
    match = ID_SHAPE.match(fact_id)
    if match is None:
        return []
    day = match["day"]
    name = f"{match['cat']}-{match['time']}-{match['hash']}.md"
    rel = f"{day[:4]}-{day[4:6]}-{day[6:]}/{name}"
    layout = store.layout
    return [layout.facts_dir / rel, layout.archive_dir / "facts" / rel]


def find_fact_files(store: MemoryStore, ids: Iterable[str]) -> dict[str, list[tuple[Path, Fact]]]:
    """Every readable fact file holding each id (two files may claim one id: both count).

    The file an id names is tried first; the folder is scanned only for ids not found there.
    """
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    found: dict[str, list[tuple[Path, Fact]]] = {}
    rest: set[str] = set()
    for fact_id in wanted:
        for path in _candidate_paths(store, fact_id):
            try:
                fact = read_fact(path)
            except MemoryFileError:
                continue
            if fact.id == fact_id:
                found.setdefault(fact_id, []).append((path, fact))
        if fact_id not in found:
            rest.add(fact_id)
    if rest:
        for path, read in store.scan():
            if isinstance(read, Fact) and read.id in rest:
                found.setdefault(read.id, []).append((path, read))
    return found


def find_targets(
    store: MemoryStore, ids: Sequence[str], stones: Mapping[str, Target]
) -> tuple[list[Target], list[str]]:
    """The facts asked for, then their lineage; ids found nowhere are returned apart.
    ``stones``: the tombstones, by id."""
    layout = store.layout
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    files = find_fact_files(store, wanted)
    targets: list[Target] = []
    missing: list[str] = []
    for fact_id in wanted:
        held = files.get(fact_id)
        if held:
            targets += [Target(fact_id, layout.relative(path), fact) for path, fact in held]
        elif fact_id in stones:
            targets.append(stones[fact_id])
        else:
            missing.append(fact_id)
    return targets + _lineage(store, targets, stones), missing


def _lineage(
    store: MemoryStore, targets: Sequence[Target], stones: Mapping[str, Target]
) -> list[Target]:
    """The retired facts that carry the same memory as ``targets``: the duplicates merged
    into one (``mergedFrom``) and the older versions it replaced (``supersedes``), and theirs
    in turn. Active facts are never followed: they are memories of their own.

    A target being finished from its tombstone has no file to read links from: the
    tombstones its first run wrote for its lineage stand in (the asked-for file is removed
    before its lineage's, so they exist whenever it is gone). A linked id with neither a
    file nor a tombstone of this lineage (deleted, or forgotten on its own) is done.
    """
    seen = {t.id for t in targets}
    found: list[Target] = []
    frontier = list(targets)
    while frontier:
        links: dict[str, str] = {}  # linked id -> the fact asked for
        for t in frontier:
            root = t.lineage_of or t.id
            if t.fact is None:
                linked = [s.id for s in stones.values() if s.lineage_of == t.id]
            else:
                linked = [*t.fact.merged_from, *t.fact.supersedes]
            for link in linked:
                if link not in seen:
                    links.setdefault(link, root)
        seen.update(links)
        files = find_fact_files(store, links)
        frontier = []
        for link, root in links.items():
            if link in files:
                frontier += [
                    Target(link, store.layout.relative(path), fact, root)
                    for path, fact in files[link]
                    if fact.status in RETIRED
                ]
            elif link in stones and stones[link].lineage_of == root:
                frontier.append(stones[link])
        found += frontier
    return found


def survivor_notes(store: MemoryStore, targets: Sequence[Target]) -> list[str]:
    """A retired fact asked for by itself lives on in the active fact it was merged into or
    replaced by, which is not forgotten with it (active facts are never lineage): say so."""
    gone = {t.id for t in targets}
    newer = {
        t.fact.superseded_by: t.id
        for t in targets
        if t.fact is not None and t.lineage_of is None and t.fact.superseded_by not in gone
    }
    notes = []
    for newer_id, held in find_fact_files(store, [i for i in newer if i]).items():
        if any(fact.status is Status.ACTIVE for _, fact in held):
            notes.append(
                f"{newer[newer_id]} was merged into or replaced by {newer_id}, which stays: "
                "forget that one too if it says the same"
            )
    return notes


def source_turns(targets: Iterable[Target]) -> set[tuple[str, str]]:
    """(session, turn id) of every turn the targets came from (those whose file is read)."""
    return {
        (t.fact.session, turn)
        for t in targets
        if t.fact is not None
        for turn in t.fact.source_turn_ids
    }
