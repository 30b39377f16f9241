"""The text comparisons behind the write-time near-duplicate test.

Cosine similarity alone does not separate a duplicate from a related fact, so a near-duplicate
must also share most content words and name the same numbers and names; these functions are
those two tests.
"""

from __future__ import annotations

import regex

from ..text.words import STOP_WORDS, WORD, content_words, words

_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+")


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of content words: the second test a near-duplicate must pass."""
    wa, wb = set(content_words(a)), set(content_words(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def specifics(text: str) -> set[str]:
    """The words that pin a statement down: numbers, dates, versions (any word with a digit)
    and names (a capitalized word that does not start its sentence), casefolded."""
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for position, word in enumerate(WORD.findall(sentence)):
            if any(ch.isdigit() for ch in word) or (position > 0 and word[0].isupper()):
                found.add(word.casefold())
    return found - STOP_WORDS


def same_specifics(a: str, b: str) -> bool:
    """Whether each statement's numbers and names all occur in the other.

    "The meeting is on Monday" and "... on Tuesday" share most words and embed almost alike,
    yet the second is news, not a confirmation of the first.
    """
    words_a, words_b = set(words(a)), set(words(b))
    return specifics(a) <= words_b and specifics(b) <= words_a
