from __future__ import annotations

import time

import pytest

from engram_md.text.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   \n  ", []),
        ("One sentence without a stop", ["One sentence without a stop"]),
        ("Hi! I'm Dana.", ["Hi!", "I'm Dana."]),
        ("Really? Yes. Great!", ["Really?", "Yes.", "Great!"]),
        ("Version 3.5 is out. We upgraded.", ["Version 3.5 is out.", "We upgraded."]),
        ("It costs 4.99 dollars. Fine.", ["It costs 4.99 dollars.", "Fine."]),
        ("We moved in 2019. 2020 was worse.", ["We moved in 2019.", "2020 was worse."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("I said no (really!) That was it.", ["I said no (really!)", "That was it."]),
    ],
)
def test_basic_boundaries(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Use a tool, e.g. Ruff for linting.",
        "Use a tool, i.e. Ruff for linting.",
        "I saw Dr. Patel at the clinic.",
        "Mr. Smith and Mrs. Jones came.",
        "She moved to the U.S. In May she started.",  # dotted acronym, then a capital
        "It was written by J. R. Tolkien long ago.",
        "Wait... What happened there.",
        "Grab it from https://example.com/a.b?x=1 today.",
        "See No. 5 in the list.",
        "Python vs. Rust is a tired debate.",
    ],
)
def test_does_not_split_abbreviations_numbers_urls_ellipses(text: str) -> None:
    assert split_sentences(text) == [text]


def test_lowercase_after_stop_is_not_a_boundary() -> None:
    # Chat text often has no capital after "!"; splitting there would cut clauses apart.
    assert split_sentences("wow! that was fast") == ["wow! that was fast"]


def test_no_then_capital_is_a_sentence() -> None:
    assert split_sentences("No. I never said that.") == ["No.", "I never said that."]


def test_newlines_always_end_sentences() -> None:
    text = "first line without stop\nsecond line\n\n- a bullet\n- another bullet"
    assert split_sentences(text) == [
        "first line without stop",
        "second line",
        "- a bullet",
        "- another bullet",
    ]


def test_roundtrip_keeps_every_character_of_content() -> None:
    text = "Alpha one. Beta two! Gamma three? Delta e.g. four.\nEpsilon."
    joined = " ".join(split_sentences(text))
    assert joined.replace(" ", "") == text.replace(" ", "").replace("\n", "")


def test_fast_enough_for_every_turn() -> None:
    text = (
        "I work at Acme Robotics as a backend lead. We use PostgreSQL 16, e.g. for telemetry! " * 50
    )
    start = time.perf_counter()
    for _ in range(100):
        sentences = split_sentences(text)
    elapsed = time.perf_counter() - start
    assert len(sentences) == 100
    assert elapsed < 1.0  # 100 turns of ~4 KB each
