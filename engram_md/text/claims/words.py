"""Words of the update rules: stems that let "renewal" meet "renew" and "paid" meet "pay",
what a piece of text is about (:func:`salient`), the numbers it says, and the words too
general to tie two statements to one subject."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import regex

from ..words import STOP_WORDS

_I = regex.IGNORECASE


@lru_cache(maxsize=1024)
def pattern(source: str, flags: int = 0) -> regex.Pattern[str]:
    """A pattern built at run time (most name the holder), compiled once. The regex module's
    own cache is looked up on every call, and that lookup cost more than the searches it
    served: a fifth of a consolidation's time over 10k facts went to it."""
    return regex.compile(source, flags)


_APOS = "['’]"


_WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}'’\-]*")
# Words too general to tie two statements to one subject: verbs of any statement, time words,
# cue words, intensifiers. What is left is mostly nouns and names ("grant", "proposal").
_GENERIC = frozenset(
    """
    now today tonight yesterday tomorrow week weeks month months year years day days time
    morning evening night weekend weekends monday tuesday wednesday thursday friday saturday
    sunday january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec spring summer autumn fall winter
    ago last next first new old good bad great
    big small little lot lots way really actually finally just still already also too very
    pretty quite basically honestly literally totally officially currently recently lately
    these those days anymore again ever never always usually full-time full part-time part
    one two three four five six seven eight nine ten thing things stuff everything anything
    something nothing all every some other another more most less much many few own same
    live lives living lived move moved moving work works working worked job use uses using
    used like likes liked love loves loved hate hates hated prefer prefers preferred want
    wants wanted need needs needed have has had having get gets got getting go goes going
    went gone make makes made making do does did doing done take takes took taking start
    starts started starting finish finished finishing left leaving quit stop stopped
    drop dropped switch switched back home place thanks lol haha ok okay yeah yep btw fyi
    tbh omg pls please sure maybe well even though though since because about around over
    happen happened happens help helps helped helping
    into onto out off up down end ended ending keep kept going plan plans planning decided
    decide team family now-ish bit kind sort said says say tell told think thought know
    knew feel felt try tried trying able sure real thing idea agree agreed decide settle
    settled pick picked choose chose putting booking i'm i've i'd i'll we're we've we'd we'll
    it's that's there's don't doesn't can't won't isn't wasn't didn't haven't havent he's
    she's they're you're let's im ive dont cant before after during until while within
    favourite favorite fave fav main usual go-to daily regular current primary preferred
    hey hi hello thanks thank congrats wow assistant must gotta gonna todo to-do meant supposed
    """.split()
)
_NUMBER = {
    "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "no": 0, "zero": 0, "one": 1, "a": 1, "an": 1, "single": 1, "just": 1, "two": 2,
    "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "couple": 2,
}  # fmt: skip
# The number words above one, for patterns that want a count of several.
_MANY_WORDS = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_NUM = rf"(?:\d+|no|zero|one|a|an|{_MANY_WORDS})"


# Past forms that do not start like their verb: "paid" is what "pay" planned.
_LEMMA = {
    "paid": "pay", "got": "get", "sold": "sell", "bought": "buy", "taught": "teach",
    "caught": "catch",
    "brought": "bring", "thought": "think", "sent": "send", "built": "build", "spent": "spend",
    "lent": "lend", "wrote": "write", "written": "write", "drove": "drive", "driven": "drive",
    "rode": "ride", "ran": "run", "began": "begin", "begun": "begin", "gave": "give",
    "given": "give", "took": "take", "taken": "take", "ate": "eat", "eaten": "eat",
    "flew": "fly", "flown": "fly", "grew": "grow", "grown": "grow", "won": "win",
    "swam": "swim", "sang": "sing", "fed": "feed", "met": "meet", "held": "hold",
}  # fmt: skip


def _stem(word: str) -> str:
    """A word's first letters: "renewal"/"renew", "migration"/"migrate" meet at 5 letters."""
    word = word.casefold().replace("’", "'").removesuffix("'s").removesuffix("'")
    word = _LEMMA.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    # "driving"/"drive", "filed"/"file", "running"/"runner"/"run": the verb's letters.
    if (
        len(word) > 5
        and word.endswith("ing")
        or len(word) > 4
        and word.endswith("ed")
        or len(word) > 5
        and word.endswith("er")
    ):
        word = word[:-3] if word.endswith("ing") else word[:-2]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouls":
            word = word[:-1]
    elif len(word) > 3 and word.endswith("e") and not word.endswith(("ee", "ie")):
        word = word[:-1]
    return word[:5] if len(word) > 5 else word


def salient(text: str, ignore: Iterable[str] = ()) -> frozenset[str]:
    """What a piece of text is about, as stems: its words less stop, generic and name words.
    Adjacent words also count squashed together, so "VS Code" meets "vscode"."""
    skip = {w.casefold() for w in ignore}
    text = pattern(r"\b(\p{Lu}{2,})s\b", 0).sub(r"\1", text)  # "GPs" is "GP" more than once
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(text)]
    words = [w[:-2] if w.endswith("'s") and w[:-2] in skip else w for w in words]
    kept = [
        w
        for w in words
        if w not in STOP_WORDS
        and w not in _GENERIC
        and w not in skip
        and len(w) > 1
        and not _NUMERIC.fullmatch(w)
    ]
    stems = {_stem(w) for w in kept}
    # A compound's head word too: an "e-bike" is a bike, a "co-founder" a founder; but an
    # "ex-manager" or a "non-smoker" is not what the head names.
    stems.update(
        _stem(head)
        for w in kept
        if "-" in w
        and not w.startswith(_NOT_A_KIND_OF)
        and len(head := w.rsplit("-", 1)[1]) > 2
        and head not in STOP_WORDS
        and head not in _GENERIC
    )
    # Short words only: "VS Code" is "vscode", but "side projects" is not "sideprojects".
    stems.update(
        _stem(a + b)
        for a, b in zip(words, words[1:], strict=False)
        if len(a) <= 3 and a in kept and b in kept
    )
    return frozenset(stems)


_NOT_A_KIND_OF = ("ex-", "non-", "anti-", "former-", "pseudo-", "faux-")


_NUMERIC = regex.compile(r"\d+(?:st|nd|rd|th|am|pm|s|k)?|\d+[:.]\d+|\d[\d\-/]*")


def _nouns(phrase: str) -> frozenset[str]:
    """The stems of a short phrase's words, general ones included ("job")."""
    return frozenset(_stem(w) for w in _WORD.findall(phrase) if w.casefold() not in STOP_WORDS)


def _numbers(text: str) -> frozenset[str]:
    """The numbers a text says, in digits ("three days" → "3")."""
    found = set(pattern(r"\d+", 0).findall(text))
    for word in _WORD.findall(text.casefold()):
        if word in _NUMBER and word not in ("a", "an", "no", "just", "single", "couple"):
            found.add(str(_NUMBER[word]))
    return frozenset(found)


def _number(word: str) -> int | None:
    word = word.casefold()
    return int(word) if word.isdigit() else _NUMBER.get(word)


# "Thankfully", "honestly": how something is said, not what it is about.
_ADVERB = regex.compile(
    r"\b(?!(?:family|supply|assembly|italy|july|rally|belly|jelly|reply|bully|daily|early|"
    r"only|holy|ugly)\b)\p{L}{3,}ly\b",
    _I,
)
# A name inside a sentence (not its first word): "Firefox", "Ridgeway Primary".
_NAME = regex.compile(r"(?<=\p{L}[,;:]?\s+)(?-i:\p{Lu}[\p{L}\p{N}'’\-]+)")
