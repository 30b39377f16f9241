"""What recall reads from a query: the names it mentions, the dates it names, and whether it
asks about time.

Names lift memories that carry them (as speaker, entity or word) and tell recall when a query
is about something the folder never mentions; a name one slip away from someone who speaks in
the folder ("John" for "Jon") is read as theirs; dates lift memories from the range named; a
question about time ("when…", "how long…") also wants what was said before it changed.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

import regex

from ..index.saidindex import SAID_KIND
from ..index.table import IndexRow
from ..text.dates import parse_absolute_dates

_NAME = regex.compile(r"\b\p{Lu}[\p{L}'’-]+\b")
# Words a question may open with, capitalized there only for that: a preposition or a
# conjunction is no name ("By how much…", "Apart from…").
_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were has have had "
    "can could would should will the a an in on at of i my we our you your it this that "
    "tell list name describe by for from with about after before since during to as if "
    "and but or so besides apart aside other between among according given compared".split()
)
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH_YEAR = regex.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?,?\s+(\d{4})\b",
    regex.IGNORECASE,
)
_YEAR = regex.compile(r"\b(19\d\d|20\d\d)\b")
# Interrogatives that ask for a time or a duration: "when" opening the question (inside one,
# "what did she say when…", it is a conjunction), the others anywhere. Plain English question
# words, nothing taken from a benchmark's questions.
_ASKS_TIME = regex.compile(
    r"^\W*(?:and\s+|so\s+)?when\b|\b(?:since when|how long|how many (?:years|months|weeks|"
    r"days)|what (?:year|month|day|date|time)|which (?:year|month|day))\b",
    regex.IGNORECASE,
)


@dataclass(frozen=True)
class QueryFeatures:
    names: tuple[str, ...]  # lowercased proper names in the query
    spellings: tuple[str, ...]  # the same names as the query writes them (capitalized)
    ranges: tuple[tuple[date, date], ...]  # date ranges the query names
    asks_time: bool = False  # a question about when or how long


# Pure and asked by several stages of one recall (and again for a repeated question).
@lru_cache(maxsize=1024)
def query_features(query: str) -> QueryFeatures:
    names: list[str] = []
    spellings: list[str] = []
    for match in _NAME.finditer(query):
        word = match.group(0).strip("'’-")
        lower = word.casefold()
        if lower in _QUESTION_WORDS or lower in _MONTHS:
            continue
        names.append(lower.removesuffix("'s").removesuffix("’s"))
        spellings.append(word.removesuffix("'s").removesuffix("’s"))
    ranges: list[tuple[date, date]] = []
    for day in parse_absolute_dates(query):
        ranges.append((day, day))
    for match in _MONTH_YEAR.finditer(query):
        month = _MONTHS[match.group(1).casefold()]
        year = int(match.group(2))
        last = calendar.monthrange(year, month)[1]
        ranges.append((date(year, month, 1), date(year, month, last)))
    if not ranges:
        for match in _YEAR.finditer(query):
            year = int(match.group(1))
            ranges.append((date(year, 1, 1), date(year, 12, 31)))
    return QueryFeatures(
        tuple(dict.fromkeys(names)),
        tuple(dict.fromkeys(spellings)),
        tuple(ranges),
        asks_time=bool(_ASKS_TIME.search(query)),
    )


@lru_cache(maxsize=1024)
def about_text(query: str, speakers: Sequence[str]) -> str:
    """What ``query`` asks about the speakers it names: the query with their names (and a
    possessive with its name) taken out ("What does Melanie's family give her?" -> "What
    does family give her?"). Only speakers' names: they are the ones every fact of theirs
    carries, and a capitalized word that names no speaker may be what is asked about
    ("Postgres settings for staging?"). The query itself when it names no speaker, or
    nothing but names."""
    known = {s.casefold() for s in speakers}
    spellings = [s for s in query_features(query).spellings if s.casefold() in known]
    if not spellings:
        return query
    alternatives = "|".join(regex.escape(s) for s in sorted(spellings, key=len, reverse=True))
    left = " ".join(regex.sub(rf"\b(?:{alternatives})(?:['’]s)?\b", " ", query).split())
    return left if regex.search(r"\w", left) else query


def name_pattern(names: Sequence[str]) -> regex.Pattern[str] | None:
    """One pattern for all of the query's names, compiled once per query."""
    if not names:
        return None
    alternatives = "|".join(regex.escape(n) for n in sorted(names, key=len, reverse=True))
    return regex.compile(rf"\b(?:{alternatives})\b")


def entity_names(row: IndexRow) -> set[str]:
    """The names of the entities a memory carries: ``person-dana`` -> ``dana``."""
    return {e.split("-", 1)[-1] for e in row.entities}


def name_match(row: IndexRow, names: Sequence[str], pattern: regex.Pattern[str] | None) -> float:
    """Share of the query's names the memory carries: as speaker, entity or in its words."""
    if not names or pattern is None:
        return 0.0
    carried = entity_names(row) | {row.speaker.casefold()}
    found = set(pattern.findall(row.content.casefold()))
    return sum(1 for n in names if n in carried or n in found) / len(names)


def date_match(row: IndexRow, ranges: Sequence[tuple[date, date]]) -> float:
    if not ranges:
        return 0.0
    created = row.created.date()
    for start, end in ranges:
        # An event is usually told within days of happening: allow a week of slack.
        if start - timedelta(days=1) <= created <= end + timedelta(days=7):
            return 1.0
        if any(start <= d <= end for d in parse_absolute_dates(row.content)):
            return 1.0
    return 0.0


def names_known(rows: Iterable[IndexRow], features: QueryFeatures) -> bool:
    """Whether ``rows`` know what the query names: one of its names is a speaker's (a
    question that names someone who speaks here is addressed to this memory), or most of its
    names are mentioned -- as speaker, as entity, or written as a name (capitalized) in the
    words. Most, not one: a question names the place, the event and the people of what it
    asks ("the Birchwood Green Clinic"), and one common capitalized word of it
    ("Green", "Day", "Easter") is in any folder. The case matters here, unlike in
    :func:`name_match`: "Door Dash" is not known from "the door". It matters only where the
    writer uses case, though: in a sentence typed all in lowercase ("going to quito w
    marta"), every name is written like any other word, and "Marta" is known from "marta"."""
    if not features.names:
        return True
    alternatives = "|".join(regex.escape(n) for n in features.spellings)
    written = regex.compile(rf"\b(?:{alternatives})\b")
    typed = regex.compile(rf"\b(?:{alternatives})\b", regex.IGNORECASE)
    wanted = set(features.names)
    known: set[str] = set()
    typed_in_lowercase: set[str] = set()
    for row in rows:
        speaker = row.speaker.casefold()
        if speaker in wanted:
            return True
        known |= wanted & entity_names(row)
        known.update(name.casefold() for name in written.findall(row.content))
        if known >= wanted:
            return True
        if row.kind == SAID_KIND and (found := typed.findall(row.content)):
            # (Whether the sentence has case is asked only of one that holds a name.)
            if uncased(row.content.removeprefix(f"{row.speaker}: ")):
                typed_in_lowercase.update(name.casefold() for name in found)
    # Typed without case, a name is also a word ("half" of "the Lakeside Half Marathon"): known
    # that way, every one of the query's names must be there.
    known &= wanted
    return 2 * len(known) > len(wanted) or known | typed_in_lowercase >= wanted


_FIRST_LETTER = regex.compile(r"\p{L}")
_CASED = regex.compile(r"\p{Lu}")
_PRONOUN_I = regex.compile(r"\bI(?:['’]\w+)?\b")


def uncased(said: str) -> bool:
    """Whether a sentence someone typed is written without case: it opens in lowercase and
    holds no capital but the pronoun "I" ("going to quito w marta"). Then case tells no name
    from a word. A sentence that opens with a capital is taken as written with case, names
    included: "I left the bag by the door." does not know "Door Dash"."""
    first = _FIRST_LETTER.search(said)
    if first is None or first.group(0).isupper():
        return False
    return _CASED.search(_PRONOUN_I.sub("", said)) is None


def respelled(query: str, speakers: Sequence[str]) -> str:
    """``query`` with each name that no speaker has, but exactly one speaker's name is one
    slip away from, written as that speaker writes it: "What did John say?" asked of a
    folder where Jon speaks. A slip is a letter added, dropped or swapped with its neighbour
    ("Jon"/"John", "Sarah"/"Sara", "Micheal"/"Michael"), never one letter for another, which
    makes another name as often as a typo ("Mark"/"Mary"). Without this, a query whose only
    names are unknown meets the stricter relevance floor and is answered with nothing."""
    names = query_features(query).spellings
    if not names or not speakers:
        return query
    known: dict[str, str] = {}
    for spelling in sorted(speakers):  # capitalized first: "Jon" is kept over "jon"
        known.setdefault(spelling.casefold(), spelling)
    for name in names:
        lower = name.casefold()
        if lower in known or len(lower) < 3:
            continue
        near = [spelling for k, spelling in known.items() if _one_slip(lower, k)]
        if len(near) == 1:
            query = regex.sub(rf"\b{regex.escape(name)}\b", near[0], query)
    return query


def _one_slip(a: str, b: str) -> bool:
    """One letter added or dropped, or two neighbours swapped; the longer has 4+ letters."""
    if max(len(a), len(b)) < 4 or min(len(a), len(b)) < 3:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) != 2 or diff[1] != diff[0] + 1:
            return False
        i, j = diff
        return a[i] == b[j] and a[j] == b[i]
    short, long = sorted((a, b), key=len)
    if len(long) - len(short) != 1:
        return False
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]
