"""One sealed box per markdown file: YAML frontmatter, a short summary, links to its facts.

The links are relative (``../../facts/2026-03-02/preference-090200-3f9c2a1b.md``) so editors
and git hosts can follow them. The bytes depend only on the box, so a replay writes the same
file and `git diff` stays quiet. The frontmatter is written and read by the fact file's YAML
rules (:mod:`engram_md.store.factfile`): the same formatting, and the same limits on what a broken
or hostile file may cost.
"""

from __future__ import annotations

import posixpath
from datetime import datetime
from pathlib import Path
from typing import Any

import regex
import yaml

from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.paths import MemoryLayout
from ..store.factfile import _as_utc, _Dumper, _load
from .boxes import Box, BoxMember, box_day

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
    header = yaml.dump(
        meta,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )
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
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
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
        if path.read_text(encoding="utf-8") == text:
            return path, False
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text, fsync=fsync)
    return path, True
