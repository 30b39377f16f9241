"""The chat-style rewrite of the recall bench: deterministic, and every message maps back to
the turn the evidence names."""

from __future__ import annotations

from typing import Any

from bench import locomo
from bench.chat_style import chat_style, turn_of


def conversation() -> list[dict[str, Any]]:
    turns = [
        {
            "speaker": "Ann",
            "dia_id": "D1:1",
            "text": "Hello Bob! I am going to Lisbon because of work.",
        },
        {
            "speaker": "Bob",
            "dia_id": "D1:2",
            "text": "Really nice. Send pictures please.",
            "blip_caption": "a photo of a tram",
        },
    ]
    return [
        {
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": turns,
            },
            "qa": [{"question": "Where is Ann going?", "evidence": ["D1:1"], "category": 4}],
        }
    ]


def test_turns_become_messages_that_map_back_to_their_turn() -> None:
    rewritten = chat_style(conversation(), seed=1)
    messages = rewritten[0]["conversation"]["session_1"]
    assert len(messages) == 4  # two sentences each
    assert {turn_of(m["dia_id"]) for m in messages} == {"D1:1", "D1:2"}
    assert messages[-1]["blip_caption"] == "a photo of a tram"  # the photo stays, with the last
    said = " ".join(m["text"] for m in messages).lower()
    assert "gonna" in said and "cuz" in said and "pls" in said
    assert "lisbon" in said  # the facts are still there
    # Questions and evidence are untouched; the harness reads the rewrite like the original.
    assert locomo.questions(rewritten) == locomo.questions(conversation())
    assert [t.dia_id for t in locomo.turns(rewritten)] == [m["dia_id"] for m in messages]


def test_the_rewrite_depends_only_on_the_seed() -> None:
    assert chat_style(conversation(), seed=3) == chat_style(conversation(), seed=3)
