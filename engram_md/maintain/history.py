"""`engram-md history ID`: everything that happened to one fact.

Read-only, no lock: it works while the daemon runs. The fact is named by its id, its file's
path or its file's name (:func:`engram_md.maintain.targets.resolve`). The story is put
together from what is on disk — the fact's own frontmatter (status history, confirmations,
source turns, lineage), the facts it links to (what it supersedes, what superseded it, what
was merged into it) and the action telemetry in ``state/memory-actions.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..store.dedup import HashIndex
from ..store.fact_store import MemoryStore
from ..store.factfile import format_time
from .targets import find_fact_files, resolve

MAX_CHAIN = 50  # supersededBy links followed at most (a hand-made cycle must not hang us)


def _find(store: MemoryStore, fact_id: str) -> tuple[Path, Fact] | None:
    """The file holding ``fact_id``; a live file wins over an archived one."""
    held = find_fact_files(store, [fact_id]).get(fact_id)
    return held[0] if held else None


def _brief(store: MemoryStore, fact_id: str) -> dict[str, Any]:
    found = _find(store, fact_id)
    if found is None:
        return {"id": fact_id, "missing": True}
    path, fact = found
    return {
        "id": fact_id,
        "path": store.layout.relative(path),
        "status": fact.status.value,
        "created": format_time(fact.created),
        "content": fact.content,
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


def fact_history(layout: MemoryLayout, name: str) -> dict[str, Any] | None:
    """The history of one fact as JSON-ready data, or None when ``name`` (an id, a path, a
    file name) names no fact file."""
    # Read-only: the hash index is neither read nor written.
    store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
    fact_id = resolve(store, name)
    found = _find(store, fact_id) if fact_id is not None else None
    if found is None:
        return None
    path, fact = found
    chain: list[dict[str, Any]] = []
    seen = {fact.id}
    nxt = fact.superseded_by
    while nxt and nxt not in seen and len(chain) < MAX_CHAIN:
        seen.add(nxt)
        chain.append(_brief(store, nxt))
        succ = _find(store, nxt)
        nxt = succ[1].superseded_by if succ is not None else None
    return {
        "id": fact.id,
        "path": layout.relative(path),
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
        "supersedes": [_brief(store, i) for i in fact.supersedes],
        "mergedFrom": [_brief(store, i) for i in fact.merged_from],
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
