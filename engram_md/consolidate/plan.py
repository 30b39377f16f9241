"""A consolidation plan: the changes a run would make, as values.

Every step of consolidation *plans* instead of writing: it returns changes, the orchestrator
prints them (``--dry-run``), checks the safety rail, then applies them one atomic file write at
a time. A run that is interrupted is finished by the next one, because each run plans from
what is on disk now.

:class:`Plan` is a whole run's plan: every change, combined to one per file, and the figures
the safety rail, the summary and the next run need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core.config import Config
from ..core.models import Fact, Status
from ..core.paths import MemoryLayout
from ..store.access import Standing


@dataclass(frozen=True, slots=True)
class FactUpdate:
    """Rewrite one fact file in place with new frontmatter (status, lineage)."""

    path: Path
    before: Fact
    after: Fact
    action: str  # e.g. "supersede", "merge", "invalidate", "retire", "migrate"
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
    # state/access.jsonl: the recalls logged since the last run, and each fact's standing as
    # the last run left it (recalls folded in, first epoch, lifecycle rating).
    access_counts: Mapping[str, int] = field(default_factory=dict)
    standings: Mapping[str, Standing] = field(default_factory=dict)


Step = Callable[[Context], list[Change]]  # one planning step: the folder in, changes out
Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class Plan:
    """Everything a run would do, and the figures the safety rail and the summary need."""

    changes: tuple[Change, ...]
    now: datetime
    epoch: int
    total: int  # readable fact files
    active: int  # active facts under facts/
    new: int  # facts new since the last run
    retiring: int  # active facts this plan retires (status change or archival move)
    allowed: int  # what the safety rail allows
    broken: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # steps that failed, conflicting changes that were dropped
    unjudged: tuple[str, ...] = ()
    seen: Mapping[str, str] = field(default_factory=dict)  # what the next run compares with
    # Every fact's standing after this run, and the bytes of state/access.jsonl it replaces
    # (the standings and recalls it was rated from).
    standings: Mapping[str, Standing] = field(default_factory=dict)
    access_length: int = 0

    @property
    def over_limit(self) -> bool:
        return self.retiring > self.allowed


def retire_allowance(active: int, fraction: float) -> int:
    """How many active facts one run may retire. One is always allowed, so a small folder can
    still fix its one contradiction."""
    return max(1, int(active * fraction))


def retiring(changes: Iterable[Change], original: Mapping[Path, Fact]) -> int:
    """Active facts that stop being active: what the safety rail counts."""
    count = 0
    for change in changes:
        if isinstance(change, FactUpdate) and change.retires:
            count += 1
        elif isinstance(change, FactMove):
            before = original.get(change.source)
            if before is not None and before.status is Status.ACTIVE:
                count += 1
    return count
