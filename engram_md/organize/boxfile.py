"""One sealed box per markdown file: YAML frontmatter, a short summary, links to its facts.

The links are relative (``../../facts/2026-03-02/preference-090200-3f9c2a1b.md``) so editors
and git hosts can follow them. The bytes depend only on the box, so a replay writes the same
file and `git diff` stays quiet. The frontmatter is written and read by the fact file's YAML
rules (:mod:`engram_md.store.factfile`): the same formatting, and the same limits on what a broken
or hostile file may cost.

A box file also edits itself when its members change outside the structure stage: a forgotten
fact leaves it (:func:`drop_from_boxes`, the box deleted once empty), and doctor writes a
fact back into the box its ``boxId`` names (:func:`add_box_members`). Either way the summary,
goal and topics are made again from the members, as the seal made them.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import regex

from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.folder import markdown_files, read_file
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..store.factfile import _as_utc, _load, dump_yaml
from .boxes import Box, BoxMember, Summarizer, box_day, member_facts, ranked_topics

log = logging.getLogger(__name__)

MEMORIES_HEADING = "## Memories"
_LINK = regex.compile(r"^- \[(?P<text>(?:\\.|[^\]\\])*)\]\((?P<href>[^)]*)\)\s*$")
_ESCAPE = regex.compile(r"([\\\[\]])")
_UNESCAPE = regex.compile(r"\\(.)")
# Link text is a preview; the statement itself lives in the fact file.
LINK_TEXT_CHARS = 200


def box_rel_path(box: Box) -> str:
    """``boxes/YYYY-MM-DD/<id>.md``, relative to the memory folder; the day is the box's
    first memory's. Its links are written relative to this, and read back against it."""
    return f"boxes/{box_day(box.id, box.created_at)}/{box.id}.md"


def box_path(layout: MemoryLayout, box: Box) -> Path:
    """Where the box file lives: :func:`box_rel_path` under the memory folder."""
    return layout.inside(layout.memory_dir / box_rel_path(box))


def _link_href(box_file: str, target: str) -> str:
    """A link from one memory-relative file to another, relative to the first's folder."""
    return posixpath.relpath(target, posixpath.dirname(box_file) or ".")


def render_box(box: Box) -> str:
    """The exact bytes (as text) of a box file."""
    meta = {
        "id": box.id,
        "session": box.session,
        "createdAt": box.created_at,
        "sealedAt": box.sealed_at,
        "sealReason": box.seal_reason,
        "topics": list(box.topics),
        "memoryIds": list(box.memory_ids),
        "traceId": box.trace_id,
        "goal": box.goal,
        "outcome": box.outcome,
    }
    header = dump_yaml(meta)
    start, end = box.created_at, _last_time(box)
    span = f"{start:%Y-%m-%d %H:%M}" + (f"–{end:%H:%M}" if end and end > start else "")
    box_file = box_rel_path(box)
    # One line whatever the session holds: a line break would carry the rest of the title
    # into the summary (or a fake link) when the file is read back.
    lines = [f"# {' '.join(box.session.split())} · {span}", ""]
    if box.summary.strip():
        lines += [" ".join(box.summary.split()), ""]
    lines += [MEMORIES_HEADING, ""]
    for member in box.members:
        text = " ".join(member.statement.split())
        if len(text) > LINK_TEXT_CHARS:
            text = text[: LINK_TEXT_CHARS - 1].rstrip() + "…"
        text = _ESCAPE.sub(r"\\\1", text)
        lines.append(f"- [{text}]({_link_href(box_file, member.path)})")
    return f"---\n{header}---\n\n" + "\n".join(lines) + "\n"


def _last_time(box: Box) -> datetime | None:
    times = [m.created for m in box.members if m.created is not None]
    return max(times) if times else None


def _time(value: Any, field: str, path: str) -> datetime:
    try:
        return _as_utc(value)
    except ValueError as exc:
        # Out of range once moved to UTC (year 1 with a positive offset), or no time at all.
        raise MemoryFileError(path, f"invalid frontmatter: {field}: {exc}") from exc


def _str_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)


def parse_box(text: str, *, path: str = "<box>", rel_path: str | None = None) -> Box:
    """Parse a box file. ``rel_path`` (the file relative to the memory folder) turns the
    links back into memory-relative fact paths; without it they are kept as written."""
    # The fact reader's loader: the same limits, and every way PyYAML can fail on a broken
    # or hostile header (not only YAMLError) becomes a MemoryFileError with the reason.
    meta, body = _load(text.removeprefix("\ufeff"), path)
    if not meta.get("id"):
        raise MemoryFileError(path, "no box frontmatter with an id")
    lines = body.splitlines()
    # The heading is a line of its own; the same words inside the summary are summary. Only
    # the first line is the title, so a summary that starts with "# " survives a rewrite.
    split = next((i for i, ln in enumerate(lines) if ln.strip() == MEMORIES_HEADING), len(lines))
    head = [ln for ln in lines[:split] if ln.strip()]
    if head and head[0].startswith("# "):
        head = head[1:]
    memory_ids = _str_list(meta.get("memoryIds"))
    members: list[BoxMember] = []
    links = 0
    for line in lines[split + 1 :]:
        match = _LINK.match(line.strip())
        if match is None:
            continue
        index, links = links, links + 1
        href = match["href"]
        if rel_path is not None:
            href = posixpath.normpath(posixpath.join(posixpath.dirname(rel_path), href))
            if href == ".." or href.startswith(("/", "../")):
                # A hand edit pointing outside the memory folder: no fact lives there, and
                # readers join member paths to the folder (an absolute one would replace it).
                continue
        members.append(
            BoxMember(
                id=memory_ids[index] if index < len(memory_ids) else "",
                path=href,
                statement=_UNESCAPE.sub(r"\1", match["text"]),
            )
        )
    goal = meta.get("goal")
    trace = meta.get("traceId")
    return Box(
        id=str(meta["id"]),
        session=str(meta.get("session") or ""),
        created_at=_time(meta.get("createdAt"), "createdAt", path),
        sealed_at=_time(meta.get("sealedAt") or meta.get("createdAt"), "sealedAt", path),
        seal_reason=str(meta.get("sealReason") or ""),
        topics=_str_list(meta.get("topics")),
        memory_ids=memory_ids,
        trace_id=None if trace is None else str(trace),
        goal=None if goal is None else str(goal),
        outcome=str(meta.get("outcome") or "unknown"),
        summary=" ".join(" ".join(head).split()),
        members=tuple(members),
    )


def read_box(path: Path, layout: MemoryLayout | None = None) -> Box:
    """Read a box file; with ``layout``, member paths come back relative to the memory folder.

    Without a layout, a file under a ``boxes/`` folder is still resolved (the usual layout).
    """
    raw = read_file(path)  # never through a link, never a pipe or a huge file
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(str(path), f"cannot read box file ({exc})") from exc
    rel: str | None = None
    if layout is not None:
        rel = layout.relative(path)
    elif path.parent.parent.name == "boxes":
        rel = f"boxes/{path.parent.name}/{path.name}"
    return parse_box(text, path=str(path), rel_path=rel)


def write_box(layout: MemoryLayout, box: Box, *, fsync: bool = True) -> tuple[Path, bool]:
    """Write atomically; the bool says whether bytes changed (a replay writes nothing)."""
    path = box_path(layout, box)
    text = render_box(box)
    try:
        if read_file(path) == text.encode("utf-8"):
            return path, False
    except MemoryFileError:
        pass  # new, or odd (a link is replaced by the file, never written through)
    atomic_write_text(path, text, fsync=fsync)
    return path, True


def box_files(layout: MemoryLayout) -> list[Path]:
    """Every box file in the memory folder, in path order (odd entries reported and left
    out, see :func:`markdown_files`)."""
    return list(markdown_files(layout.boxes_dir, base=layout.memory_dir))


def boxes_listing(layout: MemoryLayout, ids: set[str]) -> list[Box]:
    """The readable box files that list any of ``ids`` (unreadable ones are skipped)."""
    found: list[Box] = []
    for path in box_files(layout):
        try:
            box = read_box(path, layout)
        except MemoryFileError:
            continue
        if ids.intersection(box.memory_ids) or any(m.id in ids for m in box.members):
            found.append(box)
    return found


# ---------------------------------------------------------------- members changed


@dataclass(frozen=True)
class BoxEdit:
    """A box file rewritten with other members, or deleted (``box`` None: none was left)."""

    box_id: str
    path: Path
    removed: tuple[str, ...]  # member ids dropped
    box: Box | None

    @property
    def deleted(self) -> bool:
        return self.box is None


def drop_box_members(layout: MemoryLayout, path: Path, gone: set[str]) -> BoxEdit | None:
    """Rewrite the box at ``path`` without the members in ``gone`` (None if it has none of
    them). The summary, goal and topics are made again from the members left, so the box
    no longer quotes what was dropped; a box left empty is deleted."""
    box = read_box(path, layout)
    removed = tuple(i for i in box.memory_ids if i in gone)
    if not removed and not any(m.id in gone for m in box.members):
        return None
    memory_ids = tuple(i for i in box.memory_ids if i not in gone)
    kept = [m for m in box.members if m.id not in gone]
    if not memory_ids:
        path.unlink(missing_ok=True)
        return BoxEdit(box.id, path, removed, None)
    facts = member_facts(layout, kept)
    members = tuple(BoxMember.of(facts[m.id], m.path) if m.id in facts else m for m in kept)
    said = Summarizer().summarize(members)
    times = [m.created for m in members if m.created is not None]
    new = replace(
        box,
        memory_ids=memory_ids,
        members=members,
        topics=ranked_topics(facts.values()) if facts else box.topics,
        summary=said.summary,
        goal=said.goal,
        created_at=min(times) if times else box.created_at,
    )
    atomic_write_text(path, render_box(new), fsync=False)
    return BoxEdit(box.id, path, removed, new)


def drop_from_boxes(layout: MemoryLayout, gone: set[str]) -> list[BoxEdit]:
    """Drop ``gone`` from every box file that lists them (unreadable ones are skipped)."""
    edits: list[BoxEdit] = []
    for path in box_files(layout):
        try:
            edit = drop_box_members(layout, path, gone)
        except MemoryFileError as exc:
            log.warning("%s", exc)
            continue
        if edit is not None:
            edits.append(edit)
    return edits


def add_box_members(
    layout: MemoryLayout, path: Path, joining: Sequence[tuple[str, Fact]]
) -> BoxEdit:
    """Write the box at ``path`` again with ``joining`` (path relative to the memory folder,
    fact) among its members, as its seal would have written it: members in the order said,
    summary, goal and topics made from all of them (:func:`drop_box_members` in reverse)."""
    box = read_box(path, layout)
    found = member_facts(layout, box.members)
    members = [BoxMember.of(found[m.id], m.path) if m.id in found else m for m in box.members]
    # Members whose file cannot be read stay listed, and keep a fact of their id out.
    facts: dict[str, Fact | None] = {**dict.fromkeys(m.id for m in box.members), **found}
    for rel, fact in sorted(joining, key=lambda item: (item[1].created, item[1].id)):
        if fact.id not in facts:  # two files may hold one id
            facts[fact.id] = fact
            _insert_in_order(members, BoxMember.of(fact, rel))
    said = Summarizer().summarize(tuple(members))
    created = [f.created for _, f in joining]
    new = replace(
        box,
        memory_ids=tuple(m.id for m in members),
        members=tuple(members),
        topics=ranked_topics(f for f in facts.values() if f is not None),
        summary=said.summary,
        goal=said.goal,
        created_at=min([box.created_at, *created]),
        sealed_at=max([box.sealed_at, *created]),
    )
    atomic_write_text(path, render_box(new))
    return BoxEdit(box.id, path, (), new)


def _insert_in_order(members: list[BoxMember], member: BoxMember) -> None:
    """Before the first member said later: a box lists its facts in the order they joined,
    which is the order they were said."""
    said = member.created
    later = (
        i for i, m in enumerate(members) if said is not None and m.created and m.created > said
    )
    members.insert(next(later, len(members)), member)
