"""A consolidation plan: the changes a run would make, as values.

Every step of consolidation *plans* instead of writing: it returns changes, the orchestrator
prints them (``--dry-run``), checks the safety rail, then applies them one atomic file write at
a time. A run that is interrupted is finished by the next one, because each run plans from
what is on disk now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core.config import Config
from ..core.models import Fact
from ..core.paths import MemoryLayout


@dataclass(frozen=True, slots=True)
class FactUpdate:
    """Rewrite one fact file in place with new frontmatter (status, lineage, counters)."""

    path: Path
    before: Fact
    after: Fact
    action: str  # e.g. "supersede", "merge", "invalidate", "retire", "fold_access", "lifecycle"
    reason: str

    @property
    def retires(self) -> bool:
        """True when an active fact stops being active: what the safety rail counts."""
        return self.before.status.value == "active" and self.after.status.value != "active"


@dataclass(frozen=True, slots=True)
class FactCreate:
    """A new fact file written by consolidation (e.g. the merged statement of a cluster)."""

    path: Path
    fact: Fact
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class FactMove:
    """Move a fact file (archival), keeping its path relative to ``facts/``."""

    source: Path
    target: Path
    after: Fact  # the fact as written at ``target`` (status archived, history entry)
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class FileWrite:
    """Write a derived file whole: an entity page, profile.md, IDENTITY.md, a state index."""

    path: Path
    text: str
    action: str
    reason: str


Change = FactUpdate | FactCreate | FactMove | FileWrite


@dataclass(frozen=True)
class Context:
    """What every planning step sees: the folder as read at the start of the run.

    ``facts`` holds every readable fact file (live and archived, any status) in a stable
    order; unreadable files are reported by the orchestrator and never reach a step.
    """

    cfg: Config
    layout: MemoryLayout
    now: datetime  # UTC; injected so tests and replays are deterministic
    epoch: int  # consolidation epochs so far (state/consolidation.json), this run included
    facts: Sequence[tuple[Path, Fact]]
    access_counts: Mapping[str, int] = field(default_factory=dict)  # state/access.jsonl
