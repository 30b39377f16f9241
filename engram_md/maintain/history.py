"""`engram-md history ID`: everything that happened to one fact.

Read-only, no lock: it works while the daemon runs. The story is put together from what is on
disk — the fact's own frontmatter (status history, confirmations, source turns, lineage),
the facts it links to (what it supersedes, what superseded it, what was merged into it) and
the action telemetry in ``state/memory-actions.jsonl``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from ..core.errors import MemoryFileError
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..store.factfile import format_time, read_fact

# "<category>-<YYYYMMDD>-<HHMMSS>-<hash8>", the id the pipeline gives a fact; its file is
# facts/YYYY-MM-DD/<category>-<HHMMSS>-<hash8>.md (or the same under archive/).
_PIPELINE_ID = regex.compile(r"^(?P<cat>[a-z]+)-(?P<d>\d{8})-(?P<t>\d{6})-(?P<h>[0-9a-z]+)$")
MAX_CHAIN = 50  # supersededBy links followed at most (a hand-made cycle must not hang us)


@dataclass(frozen=True)
class Found:
    path: Path
    fact: Fact


def _candidates(layout: MemoryLayout, fact_id: str) -> list[Path]:
    match = _PIPELINE_ID.match(fact_id)
    if match is None:
        return []
    d = match["d"]
    rel = (
        Path("facts") / f"{d[:4]}-{d[4:6]}-{d[6:]}" / f"{match['cat']}-{match['t']}-{match['h']}.md"
    )
    return [layout.memory_dir / rel, layout.archive_dir / rel]


def _fact_files(layout: MemoryLayout) -> list[Path]:
    out: list[Path] = []
    for root in (layout.facts_dir, layout.archive_dir / "facts"):
        if root.is_dir():
            out.extend(p for p in sorted(root.rglob("*.md")) if not p.name.startswith("."))
    return out


def find_fact(layout: MemoryLayout, fact_id: str) -> Found | None:
    """The file holding ``fact_id``: straight from the id when it is a pipeline id, else by
    scanning (only files that mention the id are parsed). Live files win over archived."""
    for path in _candidates(layout, fact_id):
        try:
            fact = read_fact(path)
        except MemoryFileError:
            continue
        if fact.id == fact_id:
            return Found(path, fact)
    needle = fact_id.encode("utf-8")
    for path in _fact_files(layout):
        try:
            if needle not in path.read_bytes():
                continue
            fact = read_fact(path)
        except (OSError, MemoryFileError):
            continue
        if fact.id == fact_id:
            return Found(path, fact)
    return None


def _brief(layout: MemoryLayout, fact_id: str) -> dict[str, Any]:
    found = find_fact(layout, fact_id)
    if found is None:
        return {"id": fact_id, "missing": True}
    return {
        "id": fact_id,
        "path": layout.relative(found.path),
        "status": found.fact.status.value,
        "created": format_time(found.fact.created),
        "content": found.fact.content,
    }


def _actions(layout: MemoryLayout, fact_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    needle = fact_id.encode("utf-8")
    try:
        with open(layout.actions_path, "rb") as handle:
            for raw in handle:
                if needle not in raw:
                    continue
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue  # a torn line after a crash
                if isinstance(event, dict) and event.get("memoryId") == fact_id:
                    out.append(event)
    except FileNotFoundError:
        pass
    return out


def fact_history(layout: MemoryLayout, fact_id: str) -> dict[str, Any] | None:
    """The history of one fact as JSON-ready data, or None when no file holds that id."""
    found = find_fact(layout, fact_id)
    if found is None:
        return None
    fact = found.fact
    chain: list[dict[str, Any]] = []
    seen = {fact.id}
    nxt = fact.superseded_by
    while nxt and nxt not in seen and len(chain) < MAX_CHAIN:
        seen.add(nxt)
        link = _brief(layout, nxt)
        chain.append(link)
        succ = find_fact(layout, nxt)
        nxt = succ.fact.superseded_by if succ is not None else None
    return {
        "id": fact.id,
        "path": layout.relative(found.path),
        "category": fact.category.value,
        "status": fact.status.value,
        "content": fact.content,
        "created": format_time(fact.created),
        "updated": format_time(fact.updated),
        "source": fact.source.value,
        "session": fact.session,
        "sourceTurnIds": list(fact.source_turn_ids),
        "confirmations": fact.confirmations,
        "lastConfirmed": format_time(fact.last_confirmed) if fact.last_confirmed else None,
        "statusHistory": [
            {
                "at": format_time(h.at),
                "from": h.from_status.value,
                "to": h.to_status.value,
                "reason": h.reason,
                "by": h.by,
            }
            for h in fact.status_history
        ],
        "supersededBy": chain,
        "supersedes": [_brief(layout, i) for i in fact.supersedes],
        "mergedFrom": [_brief(layout, i) for i in fact.merged_from],
        "actions": _actions(layout, fact.id),
    }


def render_history(data: dict[str, Any]) -> str:
    """The history as plain text, oldest event first within each part."""
    lines = [
        f"{data['id']}  [{data['status']}]  {data['path']}",
        f"  {data['content']}",
        f"  created {data['created']}, updated {data['updated']}, source {data['source']}, "
        f"session {data['session'] or '-'}",
        f"  source turns: {', '.join(data['sourceTurnIds']) or '-'}",
        f"  confirmations: {data['confirmations']}"
        + (f" (last {data['lastConfirmed']})" if data["lastConfirmed"] else ""),
    ]
    if data["statusHistory"]:
        lines.append("status changes:")
        for h in data["statusHistory"]:
            lines.append(f"  {h['at']}  {h['from']} -> {h['to']}  ({h['by']}) {h['reason']}")
    for title, key in (("supersedes", "supersedes"), ("merged from", "mergedFrom")):
        if data[key]:
            lines.append(f"{title}:")
            lines += [_link_line(item) for item in data[key]]
    if data["supersededBy"]:
        lines.append("superseded by (newest last):")
        lines += [_link_line(item) for item in data["supersededBy"]]
    if data["actions"]:
        lines.append("actions:")
        for event in data["actions"]:
            what = event.get("change") or event.get("action")
            lines.append(
                f"  {event.get('timestamp', '?')}  {what} {event.get('outcome', '')}: "
                f"{event.get('reason', '')}"
            )
    return "\n".join(lines)


def _link_line(item: dict[str, Any]) -> str:
    if item.get("missing"):
        return f"  {item['id']}  (no file holds this id any more)"
    return f"  {item['id']}  [{item['status']}]  {item['content']}"
