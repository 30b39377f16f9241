from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from engram_md.text.hashing import normalize_text
from engram_md.text.words import (
    LETTER_WORD,
    SPOKEN_WORD,
    STOP_WORDS,
    WORD,
    content_words,
    estimate_tokens,
    words,
)


def test_a_word_is_a_run_of_letters_and_digits_in_any_script() -> None:
    assert WORD.findall("Dana's PostgreSQL-15 snake_case, Zürich 東京 2024!") == [
        "Dana",
        "s",
        "PostgreSQL",
        "15",
        "snake",
        "case",
        "Zürich",
        "東京",
        "2024",
    ]


def test_words_are_casefolded_in_order() -> None:
    assert words("Straße UV uv") == ["strasse", "uv", "uv"]
    assert words("... !!") == []


def test_a_letter_word_leaves_numbers_out() -> None:
    assert LETTER_WORD.findall("2024 10am 3d v2 x") == ["am", "d", "v2", "x"]


def test_a_spoken_word_keeps_contractions_tool_names_and_units() -> None:
    text = "I don't use C++ or gpt-4; it's 3.5km and 10% off."
    assert SPOKEN_WORD.findall(text) == [
        "I",
        "don't",
        "use",
        "C++",
        "or",
        "gpt-4",
        "it's",
        "3.5km",
        "and",
        "10%",
        "off",
    ]


def test_content_words_leave_the_stop_words_out() -> None:
    assert {"the", "is", "not", "my", "very"} <= STOP_WORDS
    assert content_words("The deploy is NOT my problem, very clearly") == [
        "deploy",
        "problem",
        "clearly",
    ]


def test_content_words_take_a_wider_stop_list_and_another_pattern() -> None:
    stop = STOP_WORDS | {"deploy"}
    assert content_words("The deploy of v2 in 2024", stop) == ["v2", "2024"]
    assert content_words("The deploy of v2 in 2024", stop, LETTER_WORD) == ["v2"]


@given(st.text())
def test_content_words_are_the_words_minus_stop_words(text: str) -> None:
    assert content_words(text) == [w for w in words(text) if w not in STOP_WORDS]
    assert content_words(text, frozenset()) == words(text)


@given(st.text())
def test_normalized_text_is_its_words_joined(text: str) -> None:
    normal = normalize_text(text)
    assert normal == " ".join(words(text))
    assert normalize_text(normal) == normal


def test_a_token_is_four_characters_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 401) == math.ceil(401 / 4)
