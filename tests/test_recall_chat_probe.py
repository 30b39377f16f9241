"""The recall bench's chat probe cut at clauses (bench/chat_style.py ``--clauses``): shorter
messages than one per sentence, each still mapping back to the turn the evidence names."""

from __future__ import annotations

from bench import locomo
from bench.chat_style import chat_style, fragments, turn_of

from .test_bench_chat_style import conversation


def test_a_sentence_is_cut_at_its_clauses_and_short_pieces_stay_attached() -> None:
    assert fragments("I lost my job yesterday, so I am starting a business.") == [
        "I lost my job yesterday",
        "so I am starting a business.",
    ]
    # "Oh well" is too short to be sent alone: it goes with the next piece.
    assert fragments("Oh well, it was a long day - but fun.") == [
        "Oh well it was a long day but fun."
    ]
    assert fragments("No clause here at all.") == ["No clause here at all."]


def test_clause_messages_are_shorter_and_map_back_to_their_turn() -> None:
    data = conversation()
    by_sentence = locomo.turns(chat_style(data, seed=3))
    by_clause = locomo.turns(chat_style(data, seed=3, split_clauses=True))
    assert len(by_clause) > len(by_sentence)
    assert {turn_of(t.dia_id) for t in by_clause} == {"D1:1", "D1:2"}
    assert chat_style(data, seed=3, split_clauses=True) == chat_style(
        data, seed=3, split_clauses=True
    )
