"""Extraction without an LLM: typed facts from signalled sentences, episodes from the rest.

The default extractor (DESIGN.md principle 4). Two outputs per batch of turns:

1. **Facts.** Each sentence a person said that hits a signal pattern becomes one candidate
   fact, rewritten into a standalone statement that names the speaker ("I work at Acme" →
   "Dana works at Acme."), with relative dates made absolute against the turn's timestamp.
   The category comes from the patterns' hints in the extraction priority order.
2. **Episodes.** Everything else a person said stays recallable: the remaining sentences,
   rendered "Name: text" one paragraph per turn, are chunked (seed 004 §1: paragraphs first,
   long ones split at sentences, short neighbours merged) and scored
   importance = novelty·0.6 + salience·0.4; chunks under ``min_importance`` and chunks made
   only of pleasantries are dropped. Requests for work addressed to the assistant ("start
   phoenix in background", ``text/requests.py``) are not part of it: done, not remembered.

Who counts as a person: a user turn, or any turn whose transcript names its speaker (in
two-person transcripts such as LoCoMo both sides are people). Pure assistant turns and system
turns never yield anything: what a model said is not a fact about the user.

All of it is deterministic -- same turns, same speakers, same centroid → same output -- so
replaying a transcript rebuilds the same memory folder.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import regex

from ..core.config import OfflineConfig
from ..core.errors import EmbeddingError
from ..core.models import CandidateFact, Category, Level, MemoryKind, Source, Turn
from ..text.claims import states_something
from ..text.dates import resolve_relative_dates
from ..text.embeddings import Embedder
from ..text.requests import is_request
from ..text.sentences import split_sentences
from ..text.signal_patterns import Pattern
from ..text.signals import SignalScanner
from ..text.words import estimate_tokens
from .extractor import Discard
from .mentions import (
    is_trivial,
    salience_of,
    spoken_content_words,
    statement_entities,
    statement_tags,
)
from .prompts import PRIORITY
from .speakers import self_introduction
from .statements import (
    APOSTROPHE,
    TRAILING_FILLER,
    StatementRewriter,
    finish_statement,
    imperative_request,
    name_words,
    strip_fillers,
    strip_vocatives,
)

__all__ = ["OfflineExtractor", "StatementRewriter"]

log = logging.getLogger(__name__)

EPISODE_CONFIDENCE = 0.6

# ---- vocabulary ------------------------------------------------------------------------------


_HEDGE = re.compile(
    r"\b(?:i\s+think|i\s+guess|i\s+believe|i\s+suppose|i\s+feel\s+like|maybe|probably"
    r"|perhaps|possibly|might|not\s+sure|kind\s+of|sort\s+of|i\s+reckon)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(
    rf"\b(?:i|i{APOSTROPHE}\w+|my|me|mine|we|we{APOSTROPHE}\w+|our|us)\b", re.IGNORECASE
)


# ---- first person → named third person ---------------------------------------------------


# ---- the extractor ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unit:
    """One paragraph (or a piece of a long one) of the episode text."""

    text: str
    turn_id: str
    timestamp: datetime
    speaker: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True, slots=True)
class _Chunk:
    units: tuple[_Unit, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(u.text for u in self.units)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def _states(matches: Sequence[Pattern]) -> bool:
    """A statement of how someone's life stands: one word says it ("I'm vegetarian")."""
    return any(m.name in ("identity_status", STATES_SOMETHING.name) for m in matches)


# The signal of a sentence no pattern hit that still states how someone's life stands.
STATES_SOMETHING = Pattern("states_something", Level.HIGH, regex.compile(r"(?!)"), Category.FACT)


def _level(matches: Sequence[Pattern]) -> Level:
    """Aggregate the hits like :meth:`SignalScanner.scan` does."""
    if any(p.level >= Level.HIGH for p in matches):
        return Level.HIGH
    medium = {p.name for p in matches if p.level == Level.MEDIUM}
    if len(medium) >= 2:
        return Level.MEDIUM
    return Level.LOW if matches else Level.NONE


def _category(matches: Sequence[Pattern]) -> Category:
    hints = {p.category for p in matches if p.category is not None}
    for category in PRIORITY:
        if category in hints:
            return category
    return Category.FACT


class OfflineExtractor:
    """Heuristic extraction: facts from signalled sentences, scored episodes from the rest."""

    name = "offline"

    def __init__(
        self,
        cfg: OfflineConfig,
        scanner: SignalScanner,
        embedder: Embedder | None,
        existing_centroid: Callable[[], np.ndarray | None] = lambda: None,
    ) -> None:
        self._cfg = cfg
        self._scanner = scanner
        self._embedder = embedder
        self._existing_centroid = existing_centroid
        self.last_discarded: list[Discard] = []

    # ---- public ----------------------------------------------------------------------

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        """Candidate facts, then episodes, for ``turns``; ``speakers`` maps turn id → name."""
        self.last_discarded = []
        people = [t for t in turns if t.from_person]
        known_people = self._known_people(turns, speakers)
        listeners = self._listeners(turns, speakers)
        facts: list[CandidateFact] = []
        units: list[tuple[str, _Unit]] = []  # (session, paragraph)
        for turn in people:
            name = self._speaker_name(turn, speakers)
            rewriter = StatementRewriter(name, listeners.get(turn.id, "the assistant"))
            leftover: list[str] = []
            asked: list[str] = []  # work requested of the assistant: done, not remembered
            for sentence in split_sentences(turn.content):
                fact = self._fact(sentence, turn, rewriter, known_people)
                if fact is not None:
                    facts.append(fact)
                elif turn.id not in listeners and is_request(sentence):
                    asked.append(sentence)
                else:
                    leftover.append(sentence)
            if asked and not leftover:
                self.last_discarded.append(Discard((turn.id,), "request", " ".join(asked)[:80]))
            if leftover:
                text = resolve_relative_dates(" ".join(leftover), turn.timestamp)
                if not is_trivial(text, ignore=name.split()):
                    units.append(
                        (turn.session, _Unit(f"{name}: {text}", turn.id, turn.timestamp, name))
                    )
                else:
                    self.last_discarded.append(Discard((turn.id,), "trivial", text[:80]))
        return facts + self._episodes(units, known_people)

    # ---- speakers --------------------------------------------------------------------

    @staticmethod
    def _speaker_name(turn: Turn, speakers: Mapping[str, str]) -> str:
        name = speakers.get(turn.id) or turn.speaker or "the user"
        if name.lower().startswith("the "):
            # The book had no name yet; a turn that introduces its speaker supplies one.
            for sentence in split_sentences(turn.content)[:2]:
                intro = self_introduction(strip_fillers(sentence)[0])
                if intro is not None:
                    return intro.name
        return name

    @staticmethod
    def _known_people(turns: Sequence[Turn], speakers: Mapping[str, str]) -> frozenset[str]:
        names = {t.speaker for t in turns if t.speaker}
        names |= {speakers[t.id] for t in turns if t.id in speakers and t.from_person}
        return frozenset(n for n in names if n and not n.lower().startswith("the "))

    @staticmethod
    def _listeners(turns: Sequence[Turn], speakers: Mapping[str, str]) -> dict[str, str]:
        """Who "you" is, per turn id: the one other named person of the session, else the
        assistant (a user turn without a speaker name talks to the assistant)."""
        named: dict[str, set[str]] = {}
        for t in turns:
            if t.speaker and t.from_person:
                named.setdefault(t.session, set()).add(speakers.get(t.id) or t.speaker)
        out: dict[str, str] = {}
        for t in turns:
            if not t.speaker:
                continue
            others = sorted(named.get(t.session, set()) - {speakers.get(t.id) or t.speaker})
            if len(others) == 1:
                out[t.id] = others[0]
        return out

    # ---- facts -----------------------------------------------------------------------

    def _fact(
        self, sentence: str, turn: Turn, rewriter: StatementRewriter, people: frozenset[str]
    ) -> CandidateFact | None:
        if sentence.rstrip().endswith("?"):
            return None  # a question asks; it states nothing
        matches = self._scanner.matches(sentence)
        body, had_please = strip_fillers(sentence)
        body = strip_vocatives(body, people)
        intro = self_introduction(body)
        if intro is not None:
            rest_matches = self._scanner.matches(intro.rest) if intro.rest else []
            if rest_matches:
                body, matches = intro.rest, rest_matches
                rewriter = StatementRewriter(
                    intro.name if rewriter.name.lower().startswith("the ") else rewriter.name,
                    rewriter.listener,
                )
            elif turn.speaker:
                return None  # the transcript already names this person
            else:
                content = f"The user's name is {intro.name}."
                return self._candidate(
                    content, Category.FACT, 0.95, turn, intro.name, people | {intro.name}
                )
        if not matches:
            if not states_something(body):
                return None
            matches = [STATES_SOMETHING]  # a later statement may update it: keep it whole
        body = resolve_relative_dates(body, turn.timestamp)
        imperative = imperative_request(body, had_please)
        if imperative is not None:
            negated, request = imperative
            request = rewriter.rewrite(request)
            link = "not to" if negated else "to"
            content = f"{rewriter.name} wants {rewriter.listener} {link} {request}"
        else:
            content = rewriter.rewrite(body)
        content = finish_statement(TRAILING_FILLER.sub("", content))
        ignore = rewriter.name.split() + rewriter.listener.split() + ["team"]
        if len(spoken_content_words(content, ignore=ignore)) < 2 and not _states(matches):
            return None  # "I love it!" → nothing to remember on its own
        category = _category(matches)
        confidence = self._confidence(matches, category, body, imperative is not None)
        return self._candidate(content, category, confidence, turn, rewriter.name, people)

    @staticmethod
    def _confidence(
        matches: Sequence[Pattern], category: Category, body: str, imperative: bool
    ) -> float:
        level = _level(matches)
        if level is Level.HIGH:
            if category is Category.COMMITMENT:
                value = 0.9
            elif imperative or _FIRST_PERSON.search(body):
                value = 0.95
            else:
                value = 0.85
        elif level is Level.MEDIUM:
            value = 0.75
        else:
            value = 0.6
        if _HEDGE.search(body):
            value -= 0.2
        return round(max(value, 0.1), 2)

    def _candidate(
        self,
        content: str,
        category: Category,
        confidence: float,
        turn: Turn,
        speaker: str,
        people: frozenset[str],
    ) -> CandidateFact:
        return CandidateFact(
            category=category,
            content=content,
            confidence=confidence,
            source_turn_ids=(turn.id,),
            session=turn.session,
            created=turn.timestamp,
            tags=statement_tags(content, {speaker} | people),
            entities=statement_entities(content, [speaker], people),
            source=Source.OFFLINE,
            speaker=speaker,
        )

    # ---- episodes --------------------------------------------------------------------

    def _episodes(
        self, units: Sequence[tuple[str, _Unit]], people: frozenset[str]
    ) -> list[CandidateFact]:
        chunks: list[tuple[str, _Chunk]] = []
        by_session: dict[str, list[_Unit]] = {}
        for session, unit in units:
            by_session.setdefault(session, []).append(unit)
        for session, session_units in by_session.items():
            pieces = [p for u in session_units for p in self._split_long(u)]
            chunks.extend((session, c) for c in self._merge_short(pieces))
        speaker_names = {u.speaker for _, u in units}
        kept_chunks = []
        for session, chunk in chunks:
            if is_trivial(chunk.text, ignore=name_words(speaker_names)):
                ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
                self.last_discarded.append(Discard(ids, "trivial", chunk.text[:80]))
            else:
                kept_chunks.append((session, chunk))
        chunks = kept_chunks
        if not chunks:
            return []
        novelty = self._novelty([c.text for _, c in chunks])
        out: list[CandidateFact] = []
        for (session, chunk), nov in zip(chunks, novelty, strict=True):
            speakers_in = sorted({u.speaker for u in chunk.units})
            salience = salience_of(chunk.text, speaker_names, speakers_in)
            importance = round(nov * 0.6 + salience * 0.4, 2)
            if importance < self._cfg.min_importance:
                ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
                reason = f"low_importance_{importance:.2f}"
                self.last_discarded.append(Discard(ids, reason, chunk.text[:80]))
                continue
            turn_ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
            out.append(
                CandidateFact(
                    category=Category.MOMENT,
                    content=chunk.text,
                    confidence=EPISODE_CONFIDENCE,
                    source_turn_ids=turn_ids,
                    session=session,
                    created=chunk.units[-1].timestamp,
                    tags=statement_tags(chunk.text, speaker_names | people),
                    entities=statement_entities(chunk.text, speakers_in, people),
                    source=Source.OFFLINE,
                    memory_kind=MemoryKind.EPISODE,
                    importance=importance,
                    speaker=speakers_in[0] if len(speakers_in) == 1 else None,
                )
            )
        return out

    def _split_long(self, unit: _Unit) -> list[_Unit]:
        """A paragraph over the token cap, cut at sentence boundaries (each piece keeps the
        speaker prefix so it still reads on its own)."""
        if unit.tokens <= self._cfg.max_chunk_tokens:
            return [unit]
        prefix = f"{unit.speaker}: "
        sentences = split_sentences(unit.text[len(prefix) :])
        pieces: list[_Unit] = []
        current: list[str] = []
        for sentence in sentences:
            candidate = prefix + " ".join([*current, sentence])
            if current and estimate_tokens(candidate) > self._cfg.max_chunk_tokens:
                pieces.append(
                    _Unit(prefix + " ".join(current), unit.turn_id, unit.timestamp, unit.speaker)
                )
                current = []
            current.append(sentence)
        if current:
            pieces.append(
                _Unit(prefix + " ".join(current), unit.turn_id, unit.timestamp, unit.speaker)
            )
        return pieces

    def _merge_short(self, units: Sequence[_Unit]) -> list[_Chunk]:
        """Adjacent pieces under the minimum merge with their neighbour, never past the cap."""
        lo, hi = self._cfg.min_chunk_tokens, self._cfg.max_chunk_tokens
        chunks: list[_Chunk] = []
        current: list[_Unit] = []
        for unit in units:
            if current:
                merged = _Chunk((*current, unit))
                short = _Chunk(tuple(current)).tokens < lo or unit.tokens < lo
                if short and merged.tokens <= hi:
                    current.append(unit)
                    continue
                chunks.append(_Chunk(tuple(current)))
            current = [unit]
        if current:
            last = _Chunk(tuple(current))
            if chunks and last.tokens < lo:
                merged = _Chunk((*chunks[-1].units, *current))
                if merged.tokens <= hi:
                    chunks[-1] = merged
                    return chunks
            chunks.append(last)
        return chunks

    def _novelty(self, texts: Sequence[str]) -> list[float]:
        """Cosine distance of each text from the existing memories' centroid, in [0, 1]."""
        if self._embedder is None:
            return [1.0] * len(texts)
        centroid = self._existing_centroid()
        if centroid is None:
            return [1.0] * len(texts)
        try:
            # As the episode's content will be written (whitespace collapsed, ingest's
            # to_fact): the model reads both alike, and the cache then answers the
            # near-duplicate check and the index row from this one run of a long text.
            collapsed = [" ".join(text.split()) for text in texts]
            vectors = np.asarray(self._embedder.embed(collapsed), dtype=np.float32)
        except EmbeddingError as exc:
            # Scoring must not hold turns hostage: without vectors every chunk counts as new.
            log.warning("episode novelty without embeddings: %s", exc)
            return [1.0] * len(texts)
        centre = np.asarray(centroid, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(centre))
        if vectors.ndim != 2 or vectors.shape[1] != centre.shape[0] or norm == 0.0:
            log.warning("centroid does not match the embeddings; novelty set to 1.0")
            return [1.0] * len(texts)
        row_norms = np.maximum(np.linalg.norm(vectors, axis=1), 1e-12)
        cosine = (vectors @ centre) / (row_norms * norm)
        return [float(min(1.0, max(0.0, 1.0 - c))) for c in cosine]


# ---- helpers ---------------------------------------------------------------------------------
