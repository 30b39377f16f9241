"""A hand-written memory folder with planted problems, shared by the consolidation tests.

Every fact is written the way the pipeline writes it (``render_fact`` at the store's path),
with fixed times, so tests can assert exact outcomes against ``NOW``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram_md.core.models import Category, Fact, MemoryKind, Source
from engram_md.core.paths import MemoryLayout
from engram_md.extract.normalize import confidence_tier, policy_class
from engram_md.ingest.pipeline import fact_id
from engram_md.store.factfile import render_fact
from engram_md.text.hashing import content_hash

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def make_fact(
    content: str,
    *,
    category: Category = Category.FACT,
    created: datetime,
    confidence: float = 0.9,
    importance: float = 0.6,
    kind: MemoryKind = MemoryKind.NOTE,
    entities: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    turn: str = "t1",
    **changes: object,
) -> Fact:
    digest = content_hash(content)
    fact = Fact(
        id=fact_id(category.value, created, digest),
        category=category,
        created=created,
        updated=created,
        source=Source.OFFLINE,
        confidence=confidence,
        confidence_tier=confidence_tier(confidence),
        importance=importance,
        memory_kind=kind,
        content=content,
        session="s1",
        source_turn_ids=(turn,),
        policy_class=policy_class(category),
        tags=tags,
        entities=entities,
        content_hash=digest,
    )
    return fact.with_changes(**changes) if changes else fact


def write(layout: MemoryLayout, fact: Fact) -> Path:
    path = layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_fact(fact), encoding="utf-8")
    return path


FILLERS = (
    "Priya maintains the Atlas deployment scripts.",
    "Marco runs the Thursday design review.",
    "Lena keeps the on-call rota in a shared spreadsheet.",
    "Tomas is learning Rust in the evenings.",
    "Aiko moved the staging cluster to Frankfurt.",
    "Rahul writes the weekly release notes.",
    "Sofia owns the billing service dashboards.",
    "Jonas reviews every database migration.",
    "Mei prefers pair programming for onboarding.",
    "Carlos plays bass in a jazz trio.",
    "Nadia organizes the quarterly hackathon.",
    "Ethan's laptop is a ten-year-old ThinkPad.",
    "Yuki translates the user guide into Japanese.",
    "Omar coaches the junior engineers on testing.",
)


@dataclass(frozen=True)
class Planted:
    old_team: Fact
    new_team: Fact
    pref_first: Fact
    pref_second: Fact
    speculative: Fact
    commitment: Fact
    trivial: Fact
    decision: Fact
    fillers: tuple[Fact, ...]

    def all(self) -> tuple[Fact, ...]:
        return (
            self.old_team,
            self.new_team,
            self.pref_first,
            self.pref_second,
            self.speculative,
            self.commitment,
            self.trivial,
            self.decision,
            *self.fillers,
        )


def plant(layout: MemoryLayout, *, fillers: int = len(FILLERS)) -> Planted:
    """Write the planted folder; ``fillers`` unrelated active facts keep the retire rail calm."""
    day = timedelta(days=1)
    dana = ("person-dana",)
    planted = Planted(
        old_team=make_fact(
            "Dana's team has 4 engineers.", created=NOW - 50 * day, entities=dana, turn="t10"
        ),
        new_team=make_fact(
            "Dana's team has 6 engineers, not 4.",
            category=Category.CORRECTION,
            created=NOW - 9 * day,
            entities=dana,
            turn="t90",
        ),
        pref_first=make_fact(
            "Dana prefers dark mode in every editor.",
            category=Category.PREFERENCE,
            created=NOW - 55 * day,
            entities=dana,
            turn="t5",
        ),
        pref_second=make_fact(
            "Dana prefers dark mode in all editors.",
            category=Category.PREFERENCE,
            created=NOW - 20 * day,
            entities=dana,
            confidence=0.96,
            turn="t70",
        ),
        speculative=make_fact(
            "Dana might move to Lisbon next year.",
            created=NOW - 60 * day,
            confidence=0.3,
            entities=dana,
            expires_at=NOW - 30 * day,
            turn="t3",
        ),
        commitment=make_fact(
            "Dana will send the Q3 budget report to Priya by Friday.",
            category=Category.COMMITMENT,
            created=NOW - 400 * day,
            entities=("person-dana", "person-priya"),
            tags=("fulfilled",),
            turn="t1",
        ),
        trivial=make_fact(
            "Dana grabbed coffee before the standup.",
            category=Category.MOMENT,
            kind=MemoryKind.EPISODE,
            created=NOW - 200 * day,
            importance=0.2,
            entities=dana,
            turn="t2",
        ),
        decision=make_fact(
            "Dana decided to use Postgres for the billing service.",
            category=Category.DECISION,
            created=NOW - 300 * day,
            importance=0.2,
            entities=dana,
            turn="t4",
        ),
        fillers=tuple(
            make_fact(text, created=NOW - (10 + i) * day, turn=f"f{i}")
            for i, text in enumerate(FILLERS[:fillers])
        ),
    )
    for fact in planted.all():
        write(layout, fact)
    return planted
