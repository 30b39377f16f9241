"""The soak's audit on a folder written by the real pipeline: where each turn went."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from bench.soak_data import audit
from engram_md.app import open_engine
from engram_md.config import Config
from engram_md.extractor import Discard
from engram_md.factfile import read_fact
from engram_md.models import (
    FIRST_SOURCE_TURNS,
    LATEST_SOURCE_TURNS,
    CandidateFact,
    Category,
    Role,
    Source,
    Turn,
)

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
