"""The pipeline: the one module that knows the stage order.

    turn -> sanitize -> signal scan -> journal -> smart buffer -> (trigger) -> extract
         -> normalize -> dedup (exact, then near) -> write -> boxes + traces -> graph edges
         -> index -> telemetry -> journal "done"

Stages don't call each other sideways; each is a small object handed in by the caller
(:func:`engram_md.app.open_pipeline` builds the real ones, tests build fakes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from ..core.config import Config
from ..core.errors import ExtractionError
from ..core.models import (
    CandidateFact,
    ConfidenceTier,
    Fact,
    Level,
    MemoryKind,
    Signal,
    Turn,
    add_source_turns,
)
from ..core.statefile import load_json, save_json
from ..core.telemetry import ActionLog
from ..extract import normalize
from ..extract.extractor import Extractor
from ..extract.speakers import SpeakerBook
from ..store.entity_pages import EntityPages
from ..store.fact_store import MemoryStore
from ..store.said import SaidLog, texts_to_come
from ..text.hashing import content_hash
from ..text.signals import SignalScanner
from .buffer import Batch, SmartBuffer, Trigger
from .journal import Journal
from .sanitize import sanitize_turn
from .updating import UpdateTracker

log = logging.getLogger(__name__)

# How many times a flush retries a failing extraction before leaving the turns in the journal.
FLUSH_ATTEMPTS = 3
# An LLM call sees at most this many turns; a backlog after an outage is split.
MAX_BATCH_TURNS = 40


class Indexer(Protocol):
    """What the pipeline needs from the search index (near-dup check + upsert)."""

    def embed_ahead(self, texts: Sequence[str]) -> None: ...

    def near_duplicate(self, fact: Fact) -> tuple[Path, Fact] | None: ...

    def upsert_fact(self, path: Path, fact: Fact, *, new: bool) -> None: ...

    def upsert_said(self, paths: Sequence[Path]) -> None: ...

    def batch_done(self) -> None: ...

    def idle(self) -> None: ...


class Organizer(Protocol):
    """What the pipeline needs from the structure stage (boxes, traces, graph edges);
    :class:`engram_md.organize.structure.Structure` is the real one."""

    def prepare(self, fact: Fact) -> Fact: ...

    def add(self, path: Path, fact: Fact) -> None: ...

    def confirm(self, path: Path, fact: Fact, at: datetime) -> None: ...

    def recover(self, path: Path, fact: Fact) -> None: ...

    def end_input(self) -> object: ...


@dataclass
class Stats:
    turns_received: int = 0
    turns_replayed: int = 0  # already journaled earlier: skipped
    turns_empty: int = 0  # nothing left after sanitizing
    secrets_redacted: int = 0
    extractions: int = 0
    extraction_failures: int = 0
    facts_written: int = 0
    facts_confirmed: int = 0
    facts_discarded: int = 0
    written_paths: list[str] = field(default_factory=list)


class Pipeline:
    def __init__(
        self,
        cfg: Config,
        *,
        extractor: Extractor,
        scanner: SignalScanner,
        store: MemoryStore,
        journal: Journal,
        actions: ActionLog,
        speakers: SpeakerBook,
        indexer: Indexer | None = None,
        structure: Organizer | None = None,
        said: SaidLog | None = None,
        updates: UpdateTracker | None = None,
        pages: EntityPages | None = None,
        on_extraction: Callable[[], None] | None = None,
        sleep: Callable[[float], None] | None = None,
        release_memory: Callable[[], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.extractor = extractor
        self.scanner = scanner
        self.store = store
        self.journal = journal
        self.actions = actions
        self.speakers = speakers
        self.indexer = indexer
        self.structure = structure
        self.said = said
        self.updates = updates
        self.pages = pages
        self.on_extraction = on_extraction
        self.buffer = SmartBuffer(cfg.buffer, llm=cfg.llm.enabled)
        self.stats = Stats()
        self._sleep = sleep
        # Called after each batch: hands the native heaps' free pages back now and then
        # (core/allocator.py), so a long ingest or import does not creep up in size.
        self._release_memory = release_memory
        layout = store.layout
        self._run_state_path = layout.run_state_path
        self._speakers_path = layout.speakers_path
        self._run_state = load_json(self._run_state_path, {})

    # ------------------------------------------------------------ lifecycle
    def start(self) -> int:
        """Replay the journal: pending turns go back into the buffer. Returns their count."""
        pending = self.journal.open()
        if pending:
            log.info("resuming with %d buffered turn(s) from the journal", len(pending))
        # Re-add them in arrival order so the triggers fire exactly as they would have:
        # a restarted run then cuts the same batches as one that never stopped.
        for turn in pending:
            self._buffer_turn(turn)
        return len(pending)

    def close(self) -> None:
        self.journal.close()

    # ------------------------------------------------------------ intake
    def receive(self, turn: Turn) -> None:
        self.receive_all([turn])

    def receive_all(self, turns: Sequence[Turn]) -> None:
        """Turns in arrival order, each handled as :meth:`receive` would. Read together (a
        file's next lines), the sentences the said log will hold of them are embedded first,
        in one model run: each batch then finds its own cached instead of embedding its few
        (runs of 32 texts cost ~1.9 ms a text on two cores, runs of 8 ~3.5 ms)."""
        cleaned = [sanitize_turn(turn, self.cfg.sanitize) for turn in turns]
        if len(cleaned) > 1:
            self._embed_said_ahead([clean for clean in cleaned if clean is not None])
        for clean in cleaned:
            if clean is None:
                self.stats.turns_empty += 1
            elif not self.journal.append(clean):
                self.stats.turns_replayed += 1
            else:
                self.stats.turns_received += 1
                self._buffer_turn(clean)

    def _embed_said_ahead(self, turns: Sequence[Turn]) -> None:
        if self.said is None or self.indexer is None:
            return
        # The speaker's name as the book knows it now: a name learned from these very turns
        # is missed, which costs only the embedding of a text no row will hold.
        texts = [
            text
            for turn in turns
            if turn.from_person
            for text in texts_to_come(turn, self.speakers.name_for(turn))
        ]
        self.indexer.embed_ahead(texts)

    def keep(self, turn: Turn, note: Callable[[Turn, str], CandidateFact]) -> bool:
        """A statement a person asked to keep (``ingest/remember.py``): sanitized and
        journaled like any turn, then extracted at once, on its own. When the extractor finds
        no note in it (no signal, only an episode, or it fails), ``note`` makes one from the
        clean turn and its speaker's name: it is kept all the same. False when nothing is
        left after sanitizing, or the same turn was received before."""
        clean = sanitize_turn(turn, self.cfg.sanitize)
        if clean is None:
            self.stats.turns_empty += 1
            return False
        if not self.journal.append(clean):
            self.stats.turns_replayed += 1
            return False
        self.stats.turns_received += 1
        if self.speakers.observe(clean):
            self._save_speakers()
        name = self.speakers.name_for(clean)
        try:
            found = self.extractor.extract([clean], {clean.id: name})
        except ExtractionError as exc:
            log.warning("extraction failed for a statement to keep (%s); kept as said", exc)
            found = []
        notes = [c for c in found if c.memory_kind is not MemoryKind.EPISODE]
        self._store_all(notes or [note(clean, name)])
        batch = Batch(clean.session, (clean,), Trigger.HIGH)
        self._done(batch)
        self._note_extraction(batch, len(notes) or 1)
        return True

    def _buffer_turn(self, turn: Turn) -> None:
        if self.speakers.observe(turn):
            # A name is rarely learned, and later sessions rely on it: keep it at once.
            self._save_speakers()
        signal = self.scanner.scan(turn.content) if turn.from_person else _NO_SIGNAL
        for batch in self.buffer.add(turn, signal):
            self._run(batch, final=False)

    def flush_idle(self) -> None:
        """Extract the sessions that went quiet (wall clock); the daemon calls this while it
        waits for input. A failure keeps the turns like any other batch's (`hold`). Index
        writes held back meanwhile are committed once their period is over."""
        for batch in self.buffer.idle_batches():
            self._run(batch, final=False)
        if self.indexer is not None:
            self.indexer.idle()

    def flush(self) -> bool:
        """Extract everything buffered (end of input, SIGTERM). False if turns remain pending."""
        self.journal.sync()
        ok = True
        for batch in self.buffer.flush_batches():
            ok = self._run(batch, final=True) and ok
        if self.structure is not None:
            self.structure.end_input()  # the end of the input closes every open box
        self._save_speakers()
        return ok

    # ------------------------------------------------------------ extraction
    def _run(self, batch: Batch, *, final: bool) -> bool:
        ok = True
        for part in _split(batch, MAX_BATCH_TURNS):
            ok = self._run_one(part, final=final) and ok
        return ok

    def _run_one(self, batch: Batch, *, final: bool) -> bool:
        if not any(t.from_person for t in batch.turns):
            # Only assistant/system text: nothing a user said, nothing to extract.
            self._done(batch)
            return True
        speakers = {t.id: self.speakers.name_for(t) for t in batch.turns}
        attempts = FLUSH_ATTEMPTS if final else 1
        for attempt in range(attempts):
            try:
                candidates = self.extractor.extract(batch.turns, speakers)
                break
            except ExtractionError as exc:
                self.stats.extraction_failures += 1
                log.warning(
                    "extraction failed for %d turn(s) of session %s (%s); turns kept for retry",
                    len(batch.turns),
                    batch.session,
                    exc,
                )
                if attempt + 1 < attempts and self._sleep is not None:
                    self._sleep(min(30.0, self.cfg.llm.backoff_seconds * 2 ** (attempt + 1)))
        else:
            self.buffer.hold(batch.session)
            return False
        self.stats.extractions += 1
        for dropped in self.extractor.last_discarded:
            self.stats.facts_discarded += 1
            self.actions.record(
                "discard",
                "applied",
                dropped.reason,
                turns=list(dropped.turn_ids),
                session=batch.session,
                preview=dropped.preview,
            )
        if not candidates and any(
            self.scanner.scan(t.content).level is Level.HIGH for t in batch.turns if t.from_person
        ):
            # A strong signal that produced nothing is worth seeing in the telemetry.
            self.actions.record(
                "discard",
                "skipped",
                "empty_extraction_on_high_signal",
                turns=[t.id for t in batch.turns],
                session=batch.session,
            )
        self._store_all(candidates)
        self._done(batch)
        self._note_extraction(batch, len(candidates))
        if self.on_extraction is not None:
            self.on_extraction()
        return True

    def _done(self, batch: Batch) -> None:
        if self.said is not None:
            # Before the journal lets go of the turns: a crash in between replays the batch,
            # and the said log skips turns it lists already.
            speakers = {t.id: self.speakers.name_for(t) for t in batch.turns}
            changed = self.said.record(batch.turns, speakers)
            if changed and self.indexer is not None:
                self.indexer.upsert_said(changed)
        if self.pages is not None:
            self.pages.flush()  # the entity pages the batch's fact files link to
        self.journal.mark_done(batch.turns)
        self.buffer.drop(batch)
        if self.indexer is not None:
            self.indexer.batch_done()
        if self._release_memory is not None:
            self._release_memory()

    def _note_extraction(self, batch: Batch, count: int) -> None:
        state = self._run_state
        state["extractions"] = int(state.get("extractions", 0)) + 1
        state["lastExtraction"] = {
            "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "transcriptTime": batch.turns[-1].timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "session": batch.session,
            "trigger": batch.trigger.value,
            "extractor": self.extractor.name,
            "turns": len(batch.turns),
            "candidates": count,
        }
        save_json(self._run_state_path, state, fsync=False)

    def _save_speakers(self) -> None:
        save_json(self._speakers_path, self.speakers.to_dict(), fsync=False)

    # ------------------------------------------------------------ normalize + dedup + write
    def _store_all(self, candidates: Sequence[CandidateFact]) -> None:
        facts = [(candidate, to_fact(candidate)) for candidate in candidates]
        if self.indexer is not None and len(facts) > 1:
            # The near-duplicate check embeds each new statement: one model run for the
            # batch's statements instead of one each (the check finds them cached).
            self.indexer.embed_ahead([fact.content for _, fact in facts if fact is not None])
        for candidate, fact in facts:
            self._store(candidate, fact)

    def _store(self, candidate: CandidateFact, fact: Fact | None) -> None:
        if fact is None:
            self.stats.facts_discarded += 1
            self.actions.record(
                "discard",
                "applied",
                "empty_statement",
                turns=list(candidate.source_turn_ids),
                session=candidate.session,
            )
            return
        existing = self.store.find(fact.content_hash)
        how = "exact"
        if existing is None and self.indexer is not None:
            existing = self.indexer.near_duplicate(fact)
            how = "near"
        if existing is not None:
            self._confirm(existing[0], existing[1], fact, how)
            return
        older = self.updates.updated_by(fact) if self.updates is not None else []
        if older:
            fact = fact.with_changes(supersedes=(*fact.supersedes, *(i for i, _ in older)))
        if self.structure is not None:
            fact = self.structure.prepare(fact)  # may seal a box; sets the fact's boxId
        path = self.store.write_new(fact)
        if self.updates is not None:
            self.updates.written(path, fact, older)
        if self.structure is not None:
            self.structure.add(path, fact)
        if self.pages is not None:
            self.pages.note(path, fact)
        rel = self.store.layout.relative(path)
        self.stats.facts_written += 1
        self.stats.written_paths.append(rel)
        action = "store_episode" if fact.memory_kind is MemoryKind.EPISODE else "store_note"
        self.actions.record(
            action,
            "applied",
            f"new_{fact.category.value}",
            memory_id=fact.id,
            path=rel,
            turns=list(fact.source_turn_ids),
            session=fact.session,
            confidence=fact.confidence,
            importance=fact.importance,
        )
        if self.indexer is not None:
            self.indexer.upsert_fact(path, fact, new=True)

    def _confirm(self, path: Path, existing: Fact, new: Fact, how: str) -> None:
        """A re-stated fact confirms the stored one instead of becoming a new file.

        Idempotent per turn: turns that already confirmed it (a replay after a crash)
        change nothing. The fact keeps its first and latest turns (``add_source_turns``);
        the log entry below names every one.
        """
        fresh = [t for t in new.source_turn_ids if t not in existing.source_turn_ids]
        rel = self.store.layout.relative(path)
        if self.pages is not None:
            # A replay, or an older file about to gain its links: its pages must exist.
            self.pages.note(path, existing)
        if not fresh:
            if self.structure is not None:
                # A replay after a crash: the box membership or edges may not have been saved.
                self.structure.recover(path, existing)
            if self.updates is not None:
                self.updates.recover(existing)
            self.actions.record(
                "update_note", "skipped", "already_confirmed_by_these_turns", memory_id=existing.id
            )
            return
        confidence = max(existing.confidence, new.confidence)
        tier = normalize.confidence_tier(confidence)
        updated = existing.with_changes(
            source_turn_ids=add_source_turns(existing.source_turn_ids, fresh),
            confirmations=existing.confirmations + 1,
            last_confirmed=max(new.created, existing.last_confirmed or new.created),
            updated=max(existing.updated, new.created),
            confidence=confidence,
            confidence_tier=tier,
            # A speculative fact that is said again stops expiring.
            expires_at=None,
        )
        self.store.rewrite(path, updated)
        if self.structure is not None:
            self.structure.confirm(path, updated, new.created)
        self.stats.facts_confirmed += 1
        self.actions.record(
            "update_note",
            "applied",
            f"confirmed_{how}_duplicate",
            memory_id=existing.id,
            path=rel,
            turns=list(fresh),
            session=new.session,
        )
        if self.indexer is not None:
            self.indexer.upsert_fact(path, updated, new=False)


_NO_SIGNAL = Signal(Level.NONE)


def _split(batch: Batch, size: int) -> Sequence[Batch]:
    if len(batch.turns) <= size:
        return [batch]
    return [
        Batch(batch.session, batch.turns[i : i + size], batch.trigger)
        for i in range(0, len(batch.turns), size)
    ]


def fact_id(category: str, created: datetime, digest: str) -> str:
    return f"{category}-{created.strftime('%Y%m%d-%H%M%S')}-{digest[:8]}"


def to_fact(candidate: CandidateFact) -> Fact | None:
    """The normalize stage: tier, importance, memory kind, policy, expiry, identity."""
    content = " ".join(candidate.content.split())
    if not content:
        return None
    digest = content_hash(content)
    created = candidate.created.astimezone(UTC).replace(microsecond=0)
    confidence = min(1.0, max(0.0, candidate.confidence))
    tier = normalize.confidence_tier(confidence)
    importance = (
        candidate.importance
        if candidate.importance is not None
        else normalize.importance_score(content, candidate.category)
    )
    kind = candidate.memory_kind or normalize.classify_kind(
        content, candidate.category, candidate.tags
    )
    return Fact(
        id=fact_id(candidate.category.value, created, digest),
        category=candidate.category,
        created=created,
        updated=created,
        source=candidate.source,
        confidence=round(confidence, 3),
        confidence_tier=tier,
        importance=round(min(1.0, max(0.0, importance)), 3),
        memory_kind=kind,
        content=content,
        session=candidate.session,
        source_turn_ids=tuple(dict.fromkeys(candidate.source_turn_ids)),
        policy_class=normalize.policy_class(candidate.category),
        tags=tuple(dict.fromkeys(candidate.tags)),
        entities=tuple(dict.fromkeys(candidate.entities)),
        expires_at=normalize.expires_at(tier, created)
        if tier is ConfidenceTier.SPECULATIVE
        else None,
        content_hash=digest,
    )
