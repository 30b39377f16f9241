"""Typed values that flow through the pipeline.

Frozen dataclasses and enums only: validation happens at the edges (transcript parsing,
LLM output, frontmatter, config), so everything in here is already trusted.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


class Level(enum.IntEnum):
    """How strongly a turn signals something worth remembering."""

    NONE = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3


class Category(enum.StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    CORRECTION = "correction"
    ENTITY = "entity"
    DECISION = "decision"
    RELATIONSHIP = "relationship"
    PRINCIPLE = "principle"
    COMMITMENT = "commitment"
    MOMENT = "moment"
    SKILL = "skill"


class MemoryKind(enum.StrEnum):
    NOTE = "note"  # stable: a belief, preference, decision
    EPISODE = "episode"  # time-bound: something that happened


class ConfidenceTier(enum.StrEnum):
    EXPLICIT = "explicit"  # >= 0.95
    IMPLIED = "implied"  # >= 0.70
    INFERRED = "inferred"  # >= 0.40
    SPECULATIVE = "speculative"  # below; expires unless re-confirmed


class Status(enum.StrEnum):
    ACTIVE = "active"
    CHALLENGED = "challenged"
    INVALIDATED = "invalidated"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


class LifecycleState(enum.StrEnum):
    CANDIDATE = "candidate"
    VALIDATED = "validated"
    ACTIVE = "active"
    STALE = "stale"
    ARCHIVED = "archived"


class VerificationState(enum.StrEnum):
    UNVERIFIED = "unverified"
    USER_CONFIRMED = "user_confirmed"
    SYSTEM_INFERRED = "system_inferred"
    DISPUTED = "disputed"


class PolicyClass(enum.StrEnum):
    EPHEMERAL = "ephemeral"
    DURABLE = "durable"
    PROTECTED = "protected"


class Source(enum.StrEnum):
    EXTRACTION = "extraction"  # an LLM extracted it
    OFFLINE = "offline"  # the offline extractor produced it
    MANUAL = "manual"  # a person wrote it
    CONSOLIDATION = "consolidation"  # consolidation produced it (merge, update)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as read from a transcript.

    ``id`` is the transcript's own id when it has one, otherwise one derived from where the
    line was read (stable across replays of the same input). ``timestamp`` is always UTC.
    """

    id: str
    session: str
    role: Role
    content: str
    timestamp: datetime
    speaker: str | None = None  # a person's name, when the transcript gives one
    origin: str = ""  # "file:line" the turn was read from, for reports

    def key(self) -> str:
        """Identity of the turn across restarts: replaying the same line gives the same key."""
        return f"{self.session}\x1f{self.id}"

    @property
    def from_person(self) -> bool:
        """Said by a person: the user, or a named speaker that is not the system (in a
        two-person transcript both sides are people). Only such turns become memories."""
        return self.role is Role.USER or (bool(self.speaker) and self.role is not Role.SYSTEM)


@dataclass(frozen=True, slots=True)
class Signal:
    """Result of the regex scan of one turn: a level and the names of the patterns that hit.

    ``urgent``: the turn corrects, asks to remember or sets a standing rule, so a live
    daemon extracts it at once instead of with its batch (``signal_patterns.URGENT``)."""

    level: Level
    reasons: tuple[str, ...] = ()
    urgent: bool = False


@dataclass(frozen=True, slots=True)
class CandidateFact:
    """What an extractor proposes, before normalization and dedup."""

    category: Category
    content: str
    confidence: float
    source_turn_ids: tuple[str, ...]
    session: str
    created: datetime  # the transcript time of the (last) source turn
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    source: Source = Source.OFFLINE
    memory_kind: MemoryKind | None = None  # an extractor may decide; else normalize does
    importance: float | None = None  # an extractor may score; else normalize does
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class StatusChange:
    """One entry of a fact's audit trail (``statusHistory``)."""

    at: datetime
    from_status: Status
    to_status: Status
    reason: str
    by: str = "consolidation"


# A fact lists the turns it was first written from and its latest re-statements, not every
# one: a statement repeated daily would otherwise grow its file, and the daemon's copy of its
# row, by an id a day for ever (the largest part of the daemon's growth in a 45k-turn run;
# docs/RELIABILITY.md). Every re-statement's turns stay in state/memory-actions.jsonl, and
# ``confirmations`` counts them. A replay after a crash is recognised by its turns being
# listed already, so the latest ones kept must cover a batch: 16 is three default batches.
FIRST_SOURCE_TURNS = 16
LATEST_SOURCE_TURNS = 16


def add_source_turns(ids: tuple[str, ...], extra: Iterable[str]) -> tuple[str, ...]:
    """``ids`` followed by those of ``extra`` not in it yet, keeping the first and latest."""
    merged = tuple(dict.fromkeys((*ids, *extra)))
    if len(merged) <= FIRST_SOURCE_TURNS + LATEST_SOURCE_TURNS:
        return merged
    return merged[:FIRST_SOURCE_TURNS] + merged[-LATEST_SOURCE_TURNS:]


@dataclass(frozen=True, slots=True)
class HandWritten:
    """What a fact file a person wrote holds, when it lacks keys engram-md always writes.

    ``keys``: the frontmatter keys of the file (none without a frontmatter block);
    ``as_read``: every key's value as first read, the missing ones taken from the file's path
    and time; ``content``: the statement as read; ``pinned``: keys to write with any change
    (a time read from the file's mtime, which the rewrite itself moves). A rewrite keeps to
    ``keys`` and adds only what a change sets, so a person's note is never filled in
    (docs/FORMAT.md).
    """

    keys: frozenset[str]
    as_read: Mapping[str, Any]
    content: str
    pinned: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Fact:
    """A memory as stored in one markdown file: frontmatter fields plus the body.

    Recall counts and lifecycle ratings are not here: they change on every recall and live in
    state/access.jsonl (:mod:`engram_md.store.access`).
    """

    id: str
    category: Category
    created: datetime
    updated: datetime
    source: Source
    confidence: float
    confidence_tier: ConfidenceTier
    importance: float
    memory_kind: MemoryKind
    content: str
    session: str
    source_turn_ids: tuple[str, ...]
    status: Status = Status.ACTIVE
    verification_state: VerificationState = VerificationState.UNVERIFIED
    policy_class: PolicyClass = PolicyClass.DURABLE
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    box_id: str | None = None
    expires_at: datetime | None = None
    valid_at: datetime | None = None
    confirmations: int = 0
    last_confirmed: datetime | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    merged_from: tuple[str, ...] = ()
    status_history: tuple[StatusChange, ...] = ()
    content_hash: str = ""
    # Fields a person added by hand that we do not know: kept and written back untouched.
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    # A note a person wrote without some of our keys; None for a file engram-md wrote whole.
    hand: HandWritten | None = field(default=None, compare=False)

    def with_changes(self, **changes: Any) -> Fact:
        return replace(self, **changes)
