"""One sealed box per markdown file: YAML frontmatter, a short summary, links to its facts.

The links are relative (``../../facts/2026-03-02/preference-090200-3f9c2a1b.md``) so editors
and git hosts can follow them. The bytes depend only on the box, so a replay writes the same
file and `git diff` stays quiet.
"""

from __future__ import annotations

import posixpath
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import frontmatter
import regex
import yaml

from .atomic import atomic_write_text
from .boxes import Box, BoxMember, box_day
from .errors import MemoryFileError
from .factfile import format_time
from .paths import MemoryLayout

MEMORIES_HEADING = "## Memories"
_LINK = regex.compile(r"^- \[(?P<text>(?:\\.|[^\]\\])*)\]\((?P<href>[^)]*)\)\s*$")
_ESCAPE = regex.compile(r"([\\\[\]])")
_UNESCAPE = regex.compile(r"\\(.)")
# Link text is a preview; the statement itself lives in the fact file.
LINK_TEXT_CHARS = 200


class _Dumper(yaml.SafeDumper):
    """Flow-style scalar lists (``topics: [a, b]``), no anchors, times as ``...Z``."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_time(value))


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_Dumper.add_representer(datetime, _represent_datetime)
_Dumper.add_representer(list, _represent_list)


def box_path(layout: MemoryLayout, box: Box) -> Path:
    """``memory/boxes/YYYY-MM-DD/<id>.md``; the day is the box's first memory's."""
    day = box_day(box.id, box.created_at)
    return layout.inside(layout.boxes_dir / day / f"{box.id}.md")


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
    box_file = f"boxes/{box_day(box.id, box.created_at)}/{box.id}.md"
    lines = [f"# {box.session} · {span}", ""]
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
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise MemoryFileError(path, f"{field} is not a date-time: {value!r}") from exc
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _str_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)


def parse_box(text: str, *, path: str = "<box>", rel_path: str | None = None) -> Box:
    """Parse a box file. ``rel_path`` (the file relative to the memory folder) turns the
    links back into memory-relative fact paths; without it they are kept as written."""
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise MemoryFileError(path, "box frontmatter is not valid YAML") from exc
    meta = post.metadata
    if not meta or not meta.get("id"):
        raise MemoryFileError(path, "no box frontmatter with an id")
    body = post.content
    head, _, tail = body.partition(MEMORIES_HEADING)
    summary_lines = [ln for ln in head.strip().splitlines() if not ln.startswith("# ")]
    memory_ids = _str_list(meta.get("memoryIds"))
    members: list[BoxMember] = []
    for line in tail.splitlines():
        match = _LINK.match(line.strip())
        if match is None:
            continue
        href = match["href"]
        if rel_path is not None:
            href = posixpath.normpath(posixpath.join(posixpath.dirname(rel_path), href))
        index = len(members)
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
        summary=" ".join(" ".join(summary_lines).split()),
        members=tuple(members),
    )


def read_box(path: Path, layout: MemoryLayout | None = None) -> Box:
    """Read a box file; with ``layout``, member paths come back relative to the memory folder.

    Without a layout, a file under a ``boxes/`` folder is still resolved (the usual layout).
    """
    try:
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
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
