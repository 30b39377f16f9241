"""The pipeline's own rules, with a fake extractor plugged into the seam."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.app import Engine, open_engine
from engram_md.core.config import load_config
from engram_md.core.errors import LLMOutputError
from engram_md.core.models import (
    FIRST_SOURCE_TURNS,
    LATEST_SOURCE_TURNS,
    CandidateFact,
    Category,
    Role,
    Source,
    Turn,
)
from engram_md.extract.extractor import Discard
from engram_md.index.saidindex import SAID_KIND
from engram_md.store.factfile import read_fact
from engram_md.text.embeddings import CachedEmbedder

from .conftest import HashEmbedder

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class ScriptedExtractor:
    """Turns every user turn into one candidate whose text is the turn's content."""

    name = "scripted"

    def __init__(self, confidence: float = 0.95) -> None:
        self.confidence = confidence
        self.calls: list[list[str]] = []
        self.fail_next = 0
        self.last_discarded: list[Discard] = []

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        self.calls.append([t.id for t in turns])
        if self.fail_next:
            self.fail_next -= 1
            raise LLMOutputError("junk answer")
        return [
            CandidateFact(
                category=Category.PREFERENCE,
                content=t.content,
                confidence=self.confidence,
                source_turn_ids=(t.id,),
                session=t.session,
                created=t.timestamp,
                source=Source.EXTRACTION,
            )
            for t in turns
            if t.role is Role.USER
        ]


def turn(i: int, text: str, minutes: int = 0) -> Turn:
    return Turn(f"t{i}", "s1", Role.USER, text, T0 + timedelta(minutes=minutes or i))


@pytest.fixture
def engine_for(tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    opened: list[Engine] = []

    def make(extractor: ScriptedExtractor) -> Engine:
        cfg = load_config(
            None,
            env={},
            overrides={"memory_dir": tmp_path / "memory", "state_dir": tmp_path / "state"},
        )
        engine = open_engine(cfg, extractor=extractor, with_index=False)
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        try:
            engine.close()
        except Exception:
            pass


def facts(engine: Engine) -> list[Path]:
    return sorted(engine.layout.facts_dir.rglob("*.md"))


def actions(engine: Engine) -> list[dict]:  # type: ignore[type-arg]
    path = engine.layout.actions_path
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_restated_fact_confirms_instead_of_writing_again(engine_for) -> None:  # type: ignore[no-untyped-def]
    engine = engine_for(ScriptedExtractor())
    engine.pipeline.receive(turn(1, "I prefer tea over coffee."))
    engine.pipeline.receive(turn(2, "I prefer  tea over coffee!"))  # same normalized text
    engine.pipeline.flush()
    (path,) = facts(engine)
    fact = read_fact(path)
    assert fact.confirmations == 1
    assert fact.source_turn_ids == ("t1", "t2")
    assert fact.last_confirmed == T0 + timedelta(minutes=2)
    assert [a["action"] for a in actions(engine)].count("update_note") == 1


def test_a_fact_said_again_and_again_keeps_its_first_and_latest_turns(engine_for) -> None:  # type: ignore[no-untyped-def]
    engine = engine_for(ScriptedExtractor())
    for i in range(1, 101):
        engine.pipeline.receive(turn(i, "I prefer tea over coffee."))
    engine.pipeline.flush()
    (path,) = facts(engine)
    fact = read_fact(path)
    assert fact.confirmations == 99  # every re-statement counts ...
    first, latest = FIRST_SOURCE_TURNS, LATEST_SOURCE_TURNS
    assert fact.source_turn_ids == tuple(
        [f"t{i}" for i in range(1, first + 1)] + [f"t{i}" for i in range(101 - latest, 101)]
    )  # ... but the file lists only the first and the latest turns
    confirmed = [
        t
        for a in actions(engine)
        if a["action"] == "update_note" and a["reason"].startswith("confirmed_")
        for t in a["turns"]
    ]
    assert confirmed == [f"t{i}" for i in range(2, 101)]  # the full trail is in the log
    # A replay of the latest batch (after a crash) is still recognised and changes nothing.
    before = path.read_bytes()
    for i in range(96, 101):
        engine.pipeline._store_all(
            [
                CandidateFact(
                    Category.PREFERENCE, "I prefer tea over coffee.", 0.95, (f"t{i}",), "s1", T0
                )
            ]
        )
    assert path.read_bytes() == before


def test_a_speculative_fact_expires_unless_confirmed(engine_for) -> None:  # type: ignore[no-untyped-def]
    engine = engine_for(ScriptedExtractor(confidence=0.3))
    engine.pipeline.receive(turn(1, "Maybe I like jazz."))
    engine.pipeline.flush()
    (path,) = facts(engine)
    first = read_fact(path)
    assert first.confidence_tier.value == "speculative"
    assert first.expires_at == first.created + timedelta(days=30)
    engine.pipeline.receive(turn(2, "Maybe I like jazz."))
    engine.pipeline.flush()
    again = read_fact(path)
    assert again.expires_at is None and again.confirmations == 1


def test_reprocessing_the_same_turns_changes_nothing(engine_for) -> None:  # type: ignore[no-untyped-def]
    engine = engine_for(ScriptedExtractor())
    engine.pipeline.receive(turn(1, "I always use tabs."))
    engine.pipeline.flush()
    (path,) = facts(engine)
    before = path.read_bytes()
    # The same candidate again from the same turn (a batch redone after a crash).
    engine.pipeline._store_all(
        [CandidateFact(Category.PREFERENCE, "I always use tabs.", 0.95, ("t1",), "s1", T0)]
    )
    assert path.read_bytes() == before


def test_a_failed_extraction_keeps_the_turns_and_the_flush_retries(engine_for) -> None:  # type: ignore[no-untyped-def]
    extractor = ScriptedExtractor()
    extractor.fail_next = 2
    engine = engine_for(extractor)
    engine.pipeline.receive(turn(1, "I never deploy on Fridays."))
    engine.pipeline.flush()  # attempt 1 and 2 fail, attempt 3 succeeds
    assert len(facts(engine)) == 1
    assert engine.pipeline.journal.pending == []


def test_turns_survive_an_extractor_that_keeps_failing(engine_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    extractor = ScriptedExtractor()
    extractor.fail_next = 100
    engine = engine_for(extractor)
    engine.pipeline.receive(turn(1, "I never deploy on Fridays."))
    assert engine.pipeline.flush() is False
    engine.close()
    # A new run picks the turn up from the journal.
    healthy = engine_for(ScriptedExtractor())
    healthy.pipeline.flush()
    assert len(facts(healthy)) == 1


def test_high_signal_extracts_at_once_and_low_ones_wait(engine_for) -> None:  # type: ignore[no-untyped-def]
    extractor = ScriptedExtractor()
    engine = engine_for(extractor)
    engine.pipeline.receive(turn(1, "The weather is mild."))
    assert extractor.calls == []
    engine.pipeline.receive(turn(2, "From now on, answer in French."))
    assert extractor.calls == [["t1", "t2"]]


def test_discards_are_recorded_with_their_reason(engine_for) -> None:  # type: ignore[no-untyped-def]
    extractor = ScriptedExtractor()
    extractor.last_discarded = [Discard(("t1",), "trivial", "ok")]
    engine = engine_for(extractor)
    engine.pipeline.receive(turn(1, "ok thanks"))
    engine.pipeline.flush()
    reasons = [a["reason"] for a in actions(engine) if a["action"] == "discard"]
    assert "trivial" in reasons


def test_secrets_never_reach_the_journal_or_the_folder(engine_for) -> None:  # type: ignore[no-untyped-def]
    engine = engine_for(ScriptedExtractor())
    secret = "sk-proj-" + "a1B2c3D4" * 6
    engine.pipeline.receive(turn(1, f"I always use the key {secret} for staging."))
    engine.pipeline.flush()
    journal = engine.layout.journal_path.read_text()
    folder = "".join(p.read_text() for p in facts(engine))
    assert secret not in journal and secret not in folder
    assert "[REDACTED" in folder


def engine_counting_embeddings(tmp_path: Path) -> tuple[Engine, HashEmbedder]:
    """An engine with an index, whose embedder keeps what it computed (as the composition
    root's does) in front of a model that records every text it was asked for."""
    model = HashEmbedder()
    cfg = load_config(
        None,
        env={},
        overrides={"memory_dir": tmp_path / "memory", "state_dir": tmp_path / "state"},
    )
    embedder = CachedEmbedder(model, tmp_path / "state" / "embeddings")
    return open_engine(cfg, extractor=ScriptedExtractor(), embedder=embedder), model


def test_a_batch_embeds_its_new_statements_in_one_model_run(tmp_path: Path) -> None:
    """The near-duplicate check of each new statement finds its vector cached: the model
    saw the batch's statements together, once each, not one run per statement."""
    engine, model = engine_counting_embeddings(tmp_path)
    try:
        # No strong signal among them, so the flush extracts them as one batch.
        said = ["The garden shed is green.", "Tuesday was rainy.", "The bus was late again."]
        for i, text in enumerate(said, 1):
            engine.pipeline.receive(turn(i, text))
        engine.pipeline.flush()
        assert len(facts(engine)) == 3
        written = [read_fact(p).content for p in facts(engine)]
        assert sorted(written) in [sorted(call) for call in model.calls]  # one run for all
        assert all(model.embedded.count(text) == 1 for text in written)
    finally:
        engine.close()


def test_a_file_read_ahead_embeds_the_sentences_said_in_one_model_run(tmp_path: Path) -> None:
    """A file's turns reach the pipeline together: every sentence the index then holds of
    them was embedded once, in the same model run, though strong signals cut the turns into
    several batches, each of which indexes its own."""
    engine, model = engine_counting_embeddings(tmp_path)
    lines = [
        {"role": "user", "name": "Dana", "content": "We got back from Lisbon. The food was great!"},
        {"role": "user", "name": "Dana", "content": "From now on, answer in Portuguese."},
        {"role": "assistant", "content": "Claro. Vou responder em português."},
        {"role": "user", "name": "Dana", "content": "The tram  was   packed.\nWorth it though."},
        {"role": "user", "name": "Dana", "content": "Remember that my flight home is on May 3."},
        {"role": "user", "name": "Dana", "content": "Lisbon is hilly. Lisbon is hilly."},
    ]
    source = tmp_path / "chat.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    try:
        engine.runner.ingest_file(source)
        engine.pipeline.flush()
        assert engine.pipeline.stats.extractions >= 2  # the signals cut several batches
        assert engine.indexer is not None
        held = [row.content for row in engine.indexer.index.rows_of_kind(SAID_KIND)]
        assert "Dana: The tram was packed." in held and "Dana: Lisbon is hilly." in held
        assert len(held) == 7
        first_run = model.calls[0]
        assert all(text in first_run for text in held)
        assert all(model.embedded.count(text) == 1 for text in held)
    finally:
        engine.close()
