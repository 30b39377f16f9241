"""A small, fast English sentence splitter.

It runs on every turn (signal scan per sentence, offline extraction, chunking), so it is one
compiled regex plus a look at the word before each candidate boundary -- no model, no
tokenizer. A boundary is ``.``, ``!`` or ``?`` (optionally followed by closing quotes or
brackets), then whitespace, then something that can start a sentence: a capital, a digit, an
opening quote or bracket. A line break always ends a sentence, since chat messages use them
as paragraph and list breaks.

Not boundaries: abbreviations ("e.g.", "Dr.", "vs."), initials and dotted acronyms ("U.S.",
"J. R."), ellipses ("wait... What"), and anything without whitespace after the dot
("3.5", "example.com/a.b").
"""

from __future__ import annotations

import re

# Words that end with a dot without ending the sentence. Deliberately short: "etc." and "No."
# end sentences as often as not in chat, so they are not here.
_ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "prof",
        "sr",
        "st",
        "mt",
        "vs",
        "v",
        "cf",
        "approx",
        "dept",
        "est",
        "fig",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "aug",
        "sept",
        "sep",
        "oct",
        "nov",
        "dec",
        "gen",
        "gov",
        "rep",
        "sen",
        "rev",
        "hon",
        "capt",
        "lt",
        "sgt",
        "col",
        "ave",
        "blvd",
        "ph",
        "op",
        "ed",
        "eds",
        "vol",
        "no",  # only when a digit follows ("No. 5"); see _is_abbreviation
    }
)

# A candidate boundary: terminal punctuation, closing quotes/brackets, whitespace, and a
# lookahead for a sentence start. Group 1 is the punctuation run.
_BOUNDARY = re.compile(r"([.!?…]+)[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")

# The token right before a boundary's punctuation (letters, digits and inner dots: "e.g", "U.S").
_TAIL_TOKEN = re.compile(r"([A-Za-z0-9.]+)$")


def _is_abbreviation(before: str, after: str) -> bool:
    """True when the dot that ends ``before`` belongs to an abbreviation, not a sentence end."""
    match = _TAIL_TOKEN.search(before)
    if match is None:
        return False
    token = match.group(1)
    if "." in token:
        # Dotted forms: "e.g", "i.e", "U.S", "a.m" -- short letter groups joined by dots.
        parts = token.split(".")
        if all(len(p) <= 2 and p.isalpha() for p in parts if p):
            return True
        return False
    low = token.lower()
    if low == "no":
        return after[:1].isdigit()
    if low in _ABBREVIATIONS:
        return True
    # A single capital letter is an initial ("J. R. Tolkien"), except the pronoun "I".
    return len(token) == 1 and token.isupper() and token != "I"


def _split_line(line: str) -> list[str]:
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(line):
        punct = match.group(1)
        if punct == "." and _is_abbreviation(line[start : match.start(1)], line[match.end() :]):
            continue
        if "…" in punct or (punct.startswith("..") and set(punct) == {"."}):
            # An ellipsis trails off mid-thought more often than it ends a sentence.
            continue
        piece = line[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = line[start:].strip()
    if tail:
        out.append(tail)
    return out


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, in order, each stripped; empty input gives ``[]``."""
    sentences: list[str] = []
    for line in text.splitlines():
        if line.strip():
            sentences.extend(_split_line(line))
    return sentences
