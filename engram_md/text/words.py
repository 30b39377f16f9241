"""Words: what counts as one, which say nothing, and what a text costs in tokens.

A word is a run of letters and digits in any script (:data:`WORD`): the identity of a
statement (:func:`engram_md.text.hashing.normalize_text`) and every comparison of two
statements' words read text this way. Two readings differ on purpose, each for one reason:

* :data:`LETTER_WORD` starts at a letter, so a number is never a topic ("2024", "10am" → "am")
  — for the words that link facts in the graph and tie a done-report to its commitment.
* :data:`SPOKEN_WORD` reads chat as people type it — contractions ("don't"), tool names
  ("c++", "gpt-4") and numbers with their unit ("3.5km", "10%") stay one word — for the offline
  extractor's tags, entities and the check that a sentence says something.

:data:`STOP_WORDS` are the function words every module leaves out. A module that needs more
adds its own on top, with its reason; it never keeps a copy of these.
"""

from __future__ import annotations

import math
import re

import regex

__all__ = [
    "LETTER_WORD",
    "SPOKEN_WORD",
    "STOP_WORDS",
    "WORD",
    "content_words",
    "estimate_tokens",
    "words",
]

WORD = regex.compile(r"[\p{L}\p{N}]+")
LETTER_WORD = regex.compile(r"\p{L}[\p{L}\p{N}]*")
# ASCII on purpose: the extractor's rules (verb agreement, names, units) are English.
SPOKEN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’+#-]*|\d+(?:[.,]\d+)?[A-Za-z%]*")

# Exactly the words the write-time near-duplicate test (index.similar.word_overlap) was tuned
# with: widening this list moves that test's Jaccard scores. With the consolidation rules'
# extras added here ("about", "all", "which", ...), ingesting the LoCoMo dev conversations
# merged other facts (3 more fact files written), so those extras stay where they are used.
STOP_WORDS = frozenset(
    """
    a an the and or but of to in on at for with by from is are was were be been it its this
    that these those as i you he she we they my your his her our their me him them not no so
    do does did has have had will would can could should just very also
    """.split()
)


def words(text: str) -> list[str]:
    """The words of ``text`` in order, casefolded: "Dana's uv!" → ["dana", "s", "uv"]."""
    return WORD.findall(text.casefold())


def content_words(
    text: str, stop: frozenset[str] = STOP_WORDS, pattern: regex.Pattern[str] = WORD
) -> list[str]:
    """The casefolded words of ``text`` in order, those in ``stop`` left out.

    ``stop`` is :data:`STOP_WORDS` or a module's superset of it; ``pattern`` is :data:`WORD`
    or :data:`LETTER_WORD`.
    """
    return [w for w in pattern.findall(text.casefold()) if w not in stop]


def estimate_tokens(text: str) -> int:
    """The one token estimate of the project: 4 characters of content a token, rounded up."""
    return math.ceil(len(text) / 4)
