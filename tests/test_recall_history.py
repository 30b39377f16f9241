"""A fact no longer true whose words tell of an event: what happened stays true as history.

"I live in Porto" is hidden once "we moved to Lisbon"; "I lost my job at the bakery, so I'm
opening a cafe" is not hidden once "the cafe is open and I'm back at work": the job was
still lost. Such a fact still votes for its sentence (by ``history_vote``), its sentence is
weighed by ``history_factor``, and the fact itself is never recalled.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engram_md.index.table import IndexRow
from engram_md.recall.fusion import FusionWeights, outdated_weight
from engram_md.recall.recaller import votes
from engram_md.recall.wire import RecallOptions
from engram_md.text.claims import DONE_TAG, tells_event
from engram_md.text.embeddings import LocalMiniLM

from .test_recall import recaller, row, said


@pytest.mark.parametrize(
    "text",
    [
        "Ana: I lost my job at the bakery in March, so I'm opening a cafe.",
        "We sold the old camper van last spring.",
        "Back when I lived in Leeds I rowed every morning.",
        "Got a puppy from the shelter two weeks ago!",
        "I live in Porto, we went to the coast yesterday.",  # an event beside the state
    ],
)
def test_a_statement_of_something_that_happened_tells_an_event(text: str) -> None:
    assert tells_event(text)


@pytest.mark.parametrize(
    "text",
    [
        "Ana: I live in Porto with my brother.",
        "I'm a nurse at the county hospital.",
        "i love running my own pottery shop",
        "I'm so determined to make the shop work",
        "If we moved to the coast I'd surf more.",
        "I'm gonna open a cafe next year.",
        "We have three cats and a tortoise.",
        "My main editor is Emacs.",
    ],
)
def test_how_things_stand_or_what_is_meant_tells_none(text: str) -> None:
    assert not tells_event(text)


def test_an_outdated_event_sentence_is_weighed_by_the_history_factor() -> None:
    w = FusionWeights(outdated_factor=0.0, history_factor=0.4)
    assert outdated_weight("Ana: I lost my job at the bakery in March.", w) == 0.4
    assert outdated_weight("Ana: I live in Porto with my brother.", w) == 0.0


def test_which_facts_vote_for_their_sentences() -> None:
    active = row("f-a", "Ana lives in Lisbon.")
    state = row("f-s", "Ana lives in Porto.", status="superseded")
    event = row("f-e", "Ana lost her job at the bakery in March.", status="superseded")
    done = row("f-d", "Ana needs to renew her passport.", status="superseded", tags=(DONE_TAG,))
    merged = row("f-m", "Ana lost her job at the bakery in March.", status="merged")
    assert votes(active, asks_time=False, history=True)
    assert votes(event, asks_time=False, history=True)
    assert votes(done, asks_time=False, history=True)
    assert not votes(state, asks_time=False, history=True)
    assert votes(state, asks_time=True, history=True)  # a question about time asks for history
    assert not votes(merged, asks_time=True, history=True)
    assert not votes(event, asks_time=True, history=False)


def a_job_lost_and_a_move() -> list[IndexRow]:
    """Ana's words, and the facts drawn from them: a lost job and a home, both outdated."""
    rows = [
        said("t1", "Ana: I lost my job at the bakery in March, so I'm opening a cafe."),
        said("t2", "Ana: The cafe is open and I'm back at work, busier than ever."),
        said("t3", "Ana: I live in Porto with my brother."),
        said("t4", "Ana: We moved to Lisbon in June."),
        said("t5", "Ana: The office plants need water on Mondays."),
        row(
            "f-lost",
            "Ana lost her job at the bakery in March, so Ana is opening a cafe.",
            status="superseded",
            source_turn_ids=("t1",),
        ),
        row("f-back", "Ana is back at work, running her cafe.", source_turn_ids=("t2",)),
        row("f-porto", "Ana lives in Porto.", status="superseded", source_turn_ids=("t3",)),
        row("f-lisbon", "Ana lives in Lisbon.", source_turn_ids=("t4",)),
    ]
    return [replace(r, speaker="Ana") for r in rows]


LOST = "Ana: I lost my job at the bakery in March, so I'm opening a cafe."
PORTO = "Ana: I live in Porto with my brother."


def test_the_words_of_an_outdated_event_stay_recalled_and_a_state_does_not(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    asked = RecallOptions(record_access=False)
    r = recaller(tmp_path, minilm, a_job_lost_and_a_move())
    job = [m.content for m in r.recall("What happened to Ana's job at the bakery?", asked).memories]
    assert LOST in job  # still true as history
    assert "Ana lost her job at the bakery in March, so Ana is opening a cafe." not in job
    home = [m.content for m in r.recall("Where does Ana live?", asked).memories]
    assert PORTO not in home  # no longer true, and nothing happened in it
    assert "Ana: We moved to Lisbon in June." in home
    everything = RecallOptions(record_access=False, include_inactive=True)
    shown = [m.content for m in r.recall("Where does Ana live?", everything).memories]
    assert PORTO in shown  # asked for: the old words come back


def test_history_sinks_below_and_votes_less_when_weighed_so(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    asked = RecallOptions(record_access=False)
    query = "What happened to Ana's job at the bakery?"
    rows = a_job_lost_and_a_move()

    def score(name: str, fusion: FusionWeights) -> float:
        found = recaller(tmp_path / name, minilm, rows, fusion=fusion).recall(query, asked)
        return next(m.score for m in found.memories if m.content == LOST)

    level = score("level", FusionWeights(history_factor=1.0, history_vote=1.0))
    sunk = score("sunk", FusionWeights(history_factor=0.5, history_vote=1.0))
    unvoted = score("unvoted", FusionWeights(history_factor=1.0, history_vote=0.0))
    assert 0.0 < sunk < level
    assert 0.0 < unvoted < level
