"""What doctor reports: one :class:`Problem` per disagreement, and what a repair does about it.

The kinds are listed in :mod:`engram_md.maintain.doctor`; the checks that find them are in
:mod:`engram_md.maintain.checks`, the repairs in :mod:`engram_md.maintain.repairs`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Problems a repair never touches: they need a person.
REPORT_ONLY = frozenset({"unreadable_fact", "duplicate_id", "unreadable_box"})
# What --repair does about each kind, so its report says what was done, not only what was
# wrong.
REPAIRS = {
    "temp_file": "deleted the temp file",
    "torn_line": "ended the line (kept if it is whole JSON, cut off if not)",
    "index_missing": "built the index from the files",
    "index_outdated": "rebuilt the index from the files",
    "index_unreadable": "moved the index aside (state/index/unreadable/) and rebuilt it",
    "index_incomplete": "created the missing search indices",
    "index_row_orphan": "dropped the index row",
    "index_row_missing": "indexed the file",
    "index_row_stale": "re-read the file into its row",
    "index_box_row_orphan": "dropped the box row",
    "index_box_row_missing": "indexed the box file",
    "index_box_row_stale": "re-read the box file into its row",
    "hashes_missing": "rebuilt the hash index from the files",
    "hash_entry_orphan": "rebuilt the hash index from the files",
    "hash_entry_missing": "rebuilt the hash index from the files",
    "graph_node_orphan": "removed the node and its edges",
    "graph_edge_orphan": "removed the edge",
    "graph_edge_dangling": "removed the edge",
    "graph_node_missing": "linked the fact into the graph",
    "box_member_missing": "removed the member from the box",
    "box_membership_mismatch": "added the fact to its box",
    "fact_box_missing": "cleared the fact's boxId",
    "trace_box_missing": "removed the box from its trace",
    "forget_unfinished": "finished the forget",
}


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str
    subject: str  # what it is about: a path, an id, a box id
    detail: str  # what is wrong, for a person

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "subject": self.subject, "detail": self.detail}

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.subject)

    @property
    def action(self) -> str:
        """What ``--repair`` does about it."""
        return REPAIRS.get(self.kind, "repaired")


@dataclass(frozen=True)
class DoctorReport:
    """``problems``: what is wrong now (after a repair: what is left); ``repaired``: what a
    repair fixed."""

    problems: list[Problem]
    repaired: list[Problem] = field(default_factory=list)
    writer_active: bool = False  # a writer held the folder while examining
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "writerActive": self.writer_active,
            "problems": [p.to_json() for p in self.problems],
            "repaired": [{**p.to_json(), "action": p.action} for p in self.repaired],
            "notes": list(self.notes),
        }


def problem_kinds(problems: Iterable[Problem]) -> dict[str, int]:
    """How many problems of each kind (for a one-line summary)."""
    counts: dict[str, int] = {}
    for p in problems:
        counts[p.kind] = counts.get(p.kind, 0) + 1
    return dict(sorted(counts.items()))
