"""`engram-md doctor --secrets`: find secrets already in the folder, the journal and the index,
and (``--repair``) redact them everywhere.

Turns are redacted before anything is durable (:mod:`engram_md.ingest.sanitize`), so a secret
turns up here only when it came another way: written by an older engram-md whose rules
missed it, typed into a file by hand, pasted into IDENTITY.md. The same rules find it
(credentials, and personal data unless ``sanitize.redact_personal_data`` is off). A finding
names the file or row and the kinds found, never the value.

Where it looks: the markdown files of ``memory/`` (facts, archive, boxes, entity pages, what
was said, ``profile.md``, ``IDENTITY.md``), the text files of ``state/`` (the journal, telemetry,
reports, open boxes, the graph…), and the index rows. The embedding cache holds hashes of
texts and vectors, nothing readable: it is scrubbed of the texts found, not searched.

The repair asks each store to do its part, in this order:

1. fact files: statement, ``statusHistory`` reasons and hand-added keys redacted, a tag or
   entity that held a secret dropped, written in place (a git diff of the folder shows it);
   their graph nodes and open-box entries go, to be made again from the redacted files;
2. box files that quote a secret are written again from their (redacted) members; other
   pages (entity pages, said files, ``profile.md``, ``IDENTITY.md``) are redacted as text;
3. the journal is compacted (done turns' text leaves) with its pending turns redacted;
   telemetry, reports and the compression guidelines are redacted;
4. the embedding cache forgets the vectors of the texts as they were;
5. the doctor repair (:func:`engram_md.maintain.doctor.repair`) brings the index, the hash
   index, the graph and the boxes in line with the files; then the index's older versions,
   which still hold the old rows, are purged.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import regex

from ..consolidate.planner import load_facts
from ..consolidate.report import scrub_reports
from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.folder import markdown_files, read_text
from ..core.models import Fact
from ..core.paths import MemoryLayout, safe_slug
from ..core.telemetry import ActionLog
from ..index.boxindex import box_text
from ..index.opened import FolderParts
from ..index.saidindex import rows_of_file
from ..ingest.journal import compact_journal
from ..ingest.sanitize import redact_secrets
from ..organize.boxes import BoxBuilder
from ..organize.boxfile import BoxEdit, add_box_members, box_files, read_box
from ..organize.graph import GraphStore
from ..organize.traces import update_traces
from ..store import read_cache
from ..store.entity_pages import looks_generated
from ..store.factfile import read_fact
from ..store.links import entity_page
from ..store.said import is_said_rel, said_files
from ..text.embeddings import CachedEmbedder
from ..text.hashing import content_hash
from .derived import refresh_topics
from .doctor import repair

# A marker as written, or as markdown escapes it in a box's list of members ("\[…\]").
_MARKER = regex.compile(r"\[REDACTED:([a-z_]+)\\?\]")
# Folders of state/ that hold no text: the LanceDB table (searched through its rows) and
# the embedding cache (hashes and vectors).
_BINARY_STATE = ("index", "embeddings")
# A tag this short ("key", "aws") is a word of the sentence, not a piece of the secret.
_MIN_NAME = 6

Redact = Callable[[str], str]


@dataclass(frozen=True)
class Leak:
    """Secrets found in one place: a file under ``memory/`` or ``state/``, or an index row."""

    place: str  # "memory", "state" or "index"
    subject: str  # path relative to its folder, or the row's path or id
    kinds: tuple[str, ...]  # what was found, by kind, e.g. ("aws_access_key", "password")

    @property
    def key(self) -> tuple[str, str]:
        return self.place, self.subject

    def to_json(self) -> dict[str, Any]:
        return {"place": self.place, "subject": self.subject, "kinds": list(self.kinds)}


@dataclass(frozen=True)
class SecretsReport:
    found: list[Leak]  # after a repair: what is still there
    repaired: list[Leak] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.found

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "found": [leak.to_json() for leak in self.found],
            "repaired": [leak.to_json() for leak in self.repaired],
            "notes": self.notes,
        }


def _redactor(parts: FolderParts) -> Redact:
    """The folder's redaction: credentials, and personal data unless configured off."""
    personal = parts.cfg.sanitize.redact_personal_data
    return lambda text: redact_secrets(text, personal=personal)[0]


def _kinds(text: str, redact: Redact) -> tuple[str, ...]:
    """The kinds ``redact`` would take out of ``text`` (markers already there do not count)."""
    fresh = Counter(_MARKER.findall(redact(text))) - Counter(_MARKER.findall(text))
    return tuple(sorted(fresh))


# ---------------------------------------------------------------- finding


def _memory_files(layout: MemoryLayout) -> Iterator[Path]:
    """Every markdown file of the folder we or a person may have written."""
    for root in (layout.facts_dir, layout.archive_dir, layout.boxes_dir, layout.entities_dir):
        yield from markdown_files(root, base=layout.memory_dir)
    yield from said_files(layout)
    for page in (layout.profile_path, layout.identity_path):
        if page.is_file() and not page.is_symlink():
            yield page


def _state_files(layout: MemoryLayout) -> Iterator[Path]:
    if not layout.state_dir.is_dir():
        return
    for folder, dirs, files in os.walk(layout.state_dir):
        here = Path(folder)
        if here == layout.state_dir:
            dirs[:] = [d for d in dirs if d not in _BINARY_STATE]
        for name in sorted(files):
            path = here / name
            if path.is_file() and not path.is_symlink() and path != layout.lock_path:
                yield path


def _file_kinds(path: Path, redact: Redact) -> tuple[str, ...]:
    """The kinds in a state file, read line by line: the journal and telemetry grow large."""
    found: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                found.update(_kinds(line, redact))
    except OSError:
        return ()
    return tuple(sorted(found))


def find_secrets(parts: FolderParts) -> list[Leak]:
    """Every file and index row that holds what redaction would take out. Read-only."""
    layout, redact = parts.layout, _redactor(parts)
    leaks: list[Leak] = []
    for path in _memory_files(layout):
        text = read_text(path)
        kinds = _kinds(text, redact) if text is not None else ()
        if kinds:
            leaks.append(Leak("memory", layout.relative(path), kinds))
    for path in _state_files(layout):
        kinds = _file_kinds(path, redact)
        if kinds:
            leaks.append(Leak("state", path.relative_to(layout.state_dir).as_posix(), kinds))
    if parts.index is not None:
        rows = parts.index.get(list(parts.index.manifest()))
        for row_id, row in sorted(rows.items()):
            kinds = _kinds(row.content, redact)
            if kinds:
                leaks.append(Leak("index", row.path or row_id, kinds))
    return leaks


# ---------------------------------------------------------------- repairing


def _redact_value(value: Any, redact: Redact) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_value(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v, redact) for k, v in value.items()}
    return value


def _removed(text: str, clean: str) -> list[str]:
    """The pieces of ``text`` that redaction replaced by markers, as slugs (tags and entities
    are slugs). ``clean`` is ``text`` with some pieces replaced, so the parts between its
    markers are found in ``text`` in order, and what lies between them went."""
    kept = _MARKER.split(clean)[::2]  # split() also returns each marker's kind: skip them
    if len(kept) < 2:
        return []
    shape = "(.*?)".join(regex.escape(part) for part in kept)
    found = regex.fullmatch(shape, text, regex.DOTALL)
    if found is None:
        return []
    return [
        safe_slug(piece, max_len=len(piece), max_bytes=4 * len(piece)) for piece in found.groups()
    ]


def _names_a_secret(name: str, removed: list[str], redact: Redact) -> bool:
    """A tag or entity (``<type>-<slug>``) made from a secret: the extractor slugged it, so
    the rules may no longer see it; it is one when it lies within a piece redaction took out,
    or holds one ("bearer-<token>")."""
    if redact(name) != name:
        return True
    slugs = {name, name.partition("-")[2]}  # an entity's slug follows its type
    return any(
        (len(slug) >= _MIN_NAME and slug in piece) or (len(piece) >= _MIN_NAME and piece in slug)
        for piece in removed
        for slug in slugs
    )


def redact_fact(fact: Fact, redact: Redact) -> Fact:
    """``fact`` with every secret out: the statement, the audit trail's reasons and the keys a
    person added are redacted; a tag or an entity made from one is dropped."""
    content = redact(fact.content)
    removed = _removed(fact.content, content)
    return fact.with_changes(
        content=content,
        content_hash=content_hash(content),
        status_history=tuple(replace(h, reason=redact(h.reason)) for h in fact.status_history),
        tags=tuple(t for t in fact.tags if not _names_a_secret(t, removed, redact)),
        entities=tuple(e for e in fact.entities if not _names_a_secret(e, removed, redact)),
        extra={k: _redact_value(v, redact) for k, v in fact.extra.items()},
    )


def _repair_facts(parts: FolderParts, redact: Redact) -> tuple[set[str], list[str]]:
    """Rewrite the fact files that hold a secret; their ids, and their texts as they were.
    An entity that was a secret ("entity-<token>") loses its generated page: the page's name
    is the secret."""
    ids: set[str] = set()
    old_texts: list[str] = []
    dropped: set[str] = set()
    for path in parts.store.fact_paths():
        try:
            fact = read_fact(path)
        except MemoryFileError:
            continue  # unreadable: doctor reports it, a person fixes it
        clean = redact_fact(fact, redact)
        if clean != fact:
            parts.store.rewrite(path, clean)
            ids.add(fact.id)
            old_texts.append(fact.content)
            dropped.update(set(fact.entities) - set(clean.entities))
    for raw in sorted(dropped):
        name = entity_page(raw)
        page = parts.layout.entities_dir / name if name else None
        if page is not None and looks_generated(read_text(page)):
            page.unlink(missing_ok=True)
    return ids, old_texts


def _repair_pages(parts: FolderParts, redact: Redact, ids: set[str]) -> list[str]:
    """Boxes that quote a secret or list a repaired fact (``ids``: its tags are their
    topics) written again from their members; other pages redacted as text. Returns the box
    texts and said sentences as they were (for the embedding cache)."""
    layout = parts.layout
    old_texts: list[str] = []
    boxes = set(box_files(layout))
    edits: list[BoxEdit] = []
    for path in sorted(boxes):
        text = read_text(path)
        if text is None or not (_kinds(text, redact) or _lists_any(text, ids)):
            continue
        try:
            old_texts.append(box_text(read_box(path, layout)))
            # Written again from the redacted fact files: summary, member lines, topics.
            edits.append(add_box_members(layout, path, []))
        except MemoryFileError:
            continue
    update_traces(parts.cfg.traces, layout.traces_path, edits)  # the boxes' topics
    facts = set(parts.store.fact_paths())
    for path in _memory_files(layout):
        if path in boxes or path in facts:
            continue
        text = read_text(path)
        if text is not None and _kinds(text, redact):
            if is_said_rel(layout.relative(path)):
                old_texts += [row.content for row in rows_of_file(layout, path) or []]
            atomic_write_text(layout.inside(path), redact(text))
    return old_texts


def _lists_any(text: str, ids: set[str]) -> bool:
    return any(fact_id in text for fact_id in ids)


def repair_secrets(parts: FolderParts) -> SecretsReport:
    """Redact every secret :func:`find_secrets` finds, everywhere, on a writer's ``parts``;
    then look again: what is gone is reported as repaired."""
    if not parts.writer or parts.indexer is None:
        raise ValueError("a repair writes: it needs a writer's parts")
    layout, cfg, redact = parts.layout, parts.cfg, _redactor(parts)
    before = find_secrets(parts)
    if not before:
        return SecretsReport([])
    # What the last consolidation read, entities and tags included: the next run rebuilds it.
    read_cache.discard(layout.state_dir)
    ids, old_texts = _repair_facts(parts, redact)
    old_texts += _repair_pages(parts, redact, ids)
    if ids:
        # Made again from the redacted files by the doctor repair below.
        BoxBuilder(cfg.boxes, layout.open_box_path).drop(ids, layout)
        if layout.graphs_dir.is_dir():
            GraphStore(layout.graphs_dir, cfg.graph).remove_nodes(ids)
        # topics.json names the repaired facts under their tags as they were.
        refresh_topics(layout, load_facts(parts.store).facts, ids)
    compact_journal(layout.journal_path, scrub=redact)
    ActionLog(layout.actions_path).scrub(redact)
    scrub_reports(layout, redact)
    if isinstance(parts.embedder, CachedEmbedder):
        parts.embedder.scrub(old_texts)
    doctor = repair(parts)
    parts.indexer.index.purge_history()
    after = find_secrets(parts)
    left = {leak.key for leak in after}
    repaired = [leak for leak in before if leak.key not in left]
    notes = [f"doctor: {note}" for note in doctor.notes]
    if repaired:
        notes.append(
            "the old text stays in the folder's git history until that history is rewritten"
        )
    return SecretsReport(after, repaired, notes)
