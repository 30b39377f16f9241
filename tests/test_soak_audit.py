"""The soak's audit on a folder written by the real pipeline: where each turn went."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from bench import locomo
from bench.soak_data import ReplayInput, audit, base_profile
from engram_md.app import open_engine
from engram_md.core.config import Config
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
from engram_md.ingest import journal
from engram_md.ingest.transcripts import TranscriptReader
from engram_md.store.factfile import read_fact

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
STATEMENT = "Dana keeps her notes in plain text files."


class OneFactPerBatch:
    """Every batch states the same fact, sourced from all of its turns."""

    name = "scripted"

    def __init__(self) -> None:
        self.last_discarded: list[Discard] = []

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        return [
            CandidateFact(
                Category.FACT,
                STATEMENT,
                0.9,
                tuple(t.id for t in turns),
                turns[0].session,
                turns[-1].timestamp,
                source=Source.EXTRACTION,
            )
        ]


def test_turns_past_what_a_fact_lists_are_found_through_the_action_log(cfg: Config) -> None:
    # One batch of 40 turns writes the fact, a second of 40 re-states it: the file then lists
    # 16 + 16 of the 80 turns, and the audit must still place all 80.
    cfg = cfg.model_copy(update={"buffer": cfg.buffer.model_copy(update={"max_turns": 40})})
    engine = open_engine(cfg, extractor=OneFactPerBatch(), with_index=False)
    try:
        ids = [f"t{i}" for i in range(80)]
        for i, turn_id in enumerate(ids):
            engine.pipeline.receive(
                Turn(turn_id, "s1", Role.USER, f"note {i}", T0 + timedelta(seconds=i))
            )
        engine.pipeline.flush()
        layout = engine.layout
    finally:
        engine.close()
    (path,) = layout.facts_dir.rglob("*.md")
    listed = read_fact(path).source_turn_ids
    assert len(listed) == FIRST_SOURCE_TURNS + LATEST_SOURCE_TURNS
    result = audit(layout, {turn_id: i for i, turn_id in enumerate(ids)})
    assert result.outcomes == {"fact": 40, "confirmed": 40}
    assert result.lost == 0 and result.duplicated == 0


class NothingToRemember:
    name = "scripted"

    def __init__(self) -> None:
        self.last_discarded: list[Discard] = []

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        return []


@pytest.mark.skipif(not locomo.available(), reason="LoCoMo dev data not available")
def test_turns_a_compacted_journal_keeps_as_digests_are_found_by_their_keys(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The soak's turns read by the daemon's own reader; the journal compacts every ~40
    # records, so almost every done turn survives only as a digest in a `seen` record.
    monkeypatch.setattr(journal, "COMPACT_AFTER_RECORDS", 40)
    source = ReplayInput.load(300)
    reader = TranscriptReader("soak.jsonl")
    engine = open_engine(cfg, extractor=NothingToRemember(), with_index=False)
    try:
        for lineno, line in enumerate(source.lines(), start=1):
            turns = reader.feed(line, lineno)
            assert isinstance(turns, list)
            for turn in turns:
                engine.pipeline.receive(turn)
        engine.pipeline.flush()
        layout = engine.layout
    finally:
        engine.close()
    assert "digests" in layout.journal_path.read_text().splitlines()[0]
    empty, _ = base_profile(source.base, cfg.sanitize)
    keys = source.journal_keys(cfg.sanitize)
    result = audit(layout, source.ids(), keys=keys, empty_base=empty)
    assert result.lost == 0, dict(result.outcomes)
    # Turns the pipeline drops before extraction are discarded with a reason; the rest were
    # extracted from and had nothing worth remembering.
    placed = result.outcomes["no_memory"] + result.outcomes["discarded"]
    assert placed == len(keys) and result.outcomes["no_memory"] > 150, dict(result.outcomes)
    assert placed + result.outcomes["empty"] == 300
    # Without the keys only the records written since the last compaction place a turn.
    assert audit(layout, source.ids(), empty_base=empty).lost > 200
