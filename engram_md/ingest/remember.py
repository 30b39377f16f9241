"""A statement a person asks to keep: `engram-md remember "TEXT"` (and, through the same
function, any other front end that takes one).

The statement goes through the pipeline like a turn — sanitized (secrets redacted), journaled,
deduplicated — as the person's own words, said now. Unlike a turn of a conversation it does
not wait for a signal: when the extractor makes no note of it, the statement itself becomes
one, because the person asked for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ..core.models import CandidateFact, Category, Role, Source, Turn
from ..extract.mentions import statement_entities, statement_tags
from ..extract.statements import StatementRewriter, finish_statement
from ..text.hashing import short_hash
from .pipeline import Pipeline

# The session statements to keep are filed under, unless the caller names another.
REMEMBER_SESSION = "remember"
# Said by the person and asked to be kept: as sure as a statement gets.
KEPT_CONFIDENCE = 1.0


@dataclass(frozen=True, slots=True)
class Remembered:
    """What one `remember` did: whether the statement was new, and the memories it wrote or
    confirmed (paths relative to the memory folder)."""

    received: bool
    written: tuple[str, ...]
    confirmed: int


def remember(
    pipeline: Pipeline,
    text: str,
    *,
    at: datetime | None = None,
    speaker: str | None = None,
    session: str = REMEMBER_SESSION,
) -> Remembered:
    """Keep ``text`` as something the person said at ``at`` (default: now, UTC).

    ``speaker`` names the person when the caller knows the name; otherwise the name the
    speaker book learned stands for them. The pipeline must be started (its journal open);
    the caller owns it and closes it. Asking twice with the same text and time changes
    nothing the second time; the same text at another time confirms the memory.
    """
    when = (at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    turn = Turn(
        id=f"remember-{when:%Y%m%dT%H%M%S}-{short_hash(text)}",
        session=session,
        role=Role.USER,
        content=text,
        timestamp=when,
        speaker=speaker,
    )
    stats = pipeline.stats
    written_before = len(stats.written_paths)
    confirmed_before = stats.facts_confirmed
    received = pipeline.keep(turn, as_note)
    return Remembered(
        received,
        tuple(stats.written_paths[written_before:]),
        stats.facts_confirmed - confirmed_before,
    )


def as_note(turn: Turn, name: str) -> CandidateFact:
    """The statement itself as a note of its speaker, in the third person when the speaker
    has a name ("I keep my passport in the desk" → "Dana keeps Dana's passport …")."""
    text = " ".join(turn.content.split())
    named = not name.lower().startswith("the ")
    content = finish_statement(StatementRewriter(name).rewrite(text)) if named else text
    people = frozenset({name}) if named else frozenset()
    return CandidateFact(
        category=Category.FACT,
        content=content,
        confidence=KEPT_CONFIDENCE,
        source_turn_ids=(turn.id,),
        session=turn.session,
        created=turn.timestamp,
        tags=statement_tags(content, people),
        entities=statement_entities(content, [name] if named else [], people),
        source=Source.MANUAL,
        speaker=name,
    )
