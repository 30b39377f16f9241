"""Turning a sentence a person said into a standalone statement about them.

The offline extractor keeps what was said, in the speaker's words, but a memory is read later
and out of context: "I work at Acme, you know" becomes "Dana works at Acme." Fillers and
vocatives go, first-person pronouns become the speaker's name with the verb agreeing, a request
("please always use uv") keeps its imperative form addressed to the assistant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

# An apostrophe as people type it: straight or curly.
APOSTROPHE = "['’]"


# Adverbs between a subject and its verb that verb agreement must skip ("I always use").
_ADVERBS = (
    r"(?:always|never|usually|really|also|just|still|often|sometimes|rarely|seldom|mostly"
    r"|only|actually|generally|normally|typically|totally|absolutely|definitely|truly"
    r"|seriously|honestly|currently|even|finally|literally|personally|strongly|mainly"
    r"|primarily|certainly|simply|constantly|occasionally|hardly|barely|basically|all|both"
    r"|kinda|kind\s+of|sort\s+of|now|already|recently|genuinely|especially|regularly|ever"
    r"|last|first|once|then|soon|slowly|gradually|probably|maybe)"
)


# Past forms that must not get a third-person "s" ("I went" → "Dana went").
IRREGULAR_PAST = frozenset(
    """
    was were had did said made got saw came took gave found thought told felt left kept began
    ran wrote bought brought caught taught sold sent spent built lost met paid read set cut
    let hit quit won ate drove flew forgot knew grew threw drew chose spoke broke woke wore
    sat stood understood heard held led fed fell slept swam sang rang drank became meant
    fought hung hid rode rose shook stole struck tore lent lit dealt bent bet bit shot shut
    sought spun split spread stuck stung swept swung wept wound went put hurt cost
    """.split()
)


# Present forms that end in "-ed" like a past tense.
_EED_VERBS = frozenset(
    "need feed bleed breed speed proceed exceed succeed heed seed weed shed embed".split()
)


# Words that follow a pronoun without being a verb: no agreement rewrite for these.
_NOT_VERBS = frozenset(
    """
    a an the to and or but so for of in on at by with from about as than then that this
    these those it its my your our their his her him them me us you we they i too guys all
    both two three here there very not no yes if when while because much again later soon
    back out up off today tomorrow
    """.split()
)


_MODALS_AND_PAST = frozenset(
    """
    will would can could shall should may might must did didn't didnt can't cant couldn't
    couldn't won't wont wouldn't shouldn't mustn't was wasn't had hadn't used ought
    """.split()
) | {"didn’t", "can’t", "couldn’t", "won’t", "wouldn’t", "shouldn’t", "wasn’t", "hadn’t"}


# Agreement for irregular present forms after a third-person subject.
_AGREEMENT = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "go": "goes",
    "be": "is",
    "don't": "doesn't",
    "don’t": "doesn’t",
    "dont": "doesn't",
    "haven't": "hasn't",
    "haven’t": "hasn’t",
    "aren't": "isn't",
    "aren’t": "isn’t",
    "weren't": "wasn't",
    "weren’t": "wasn’t",
}


# Leading discourse fillers, stripped repeatedly. The first group goes with or without
# punctuation ("Actually my team…"); the second only when punctuation follows ("Yes. …",
# "Right, …"), because "Right now" or "No meetings" are content.
_FILLER_FREE = (
    r"actually|and|but|also|anyway|anyways|btw|by\s+the\s+way|honestly|basically|um+|uh+"
    r"|hmm+|oh|ah|well|so|fyi|for\s+the\s+record|just\s+so\s+you\s+know|i\s+mean|hi|hello|hey"
)


_FILLER_PUNCT = (
    r"yes|yeah|yep|yup|no|nope|ok|okay|sure|right|alright|great|cool|thanks|thank\s+you"
    r"|sorry|wow|perfect|nice|got\s+it|understood|noted|oh\s+well|important|nb|correction"
)


# "Remember that I…" introduces a statement; "Remember to…" is a request and stays.
_FILLER_THAT = (
    rf"(?:please\s+)?(?:note|remember|keep\s+in\s+mind|don{APOSTROPHE}?t\s+forget)"
    r"(?:\s+that\b|\s*[:,])"
)


_LEADING_FILLER = re.compile(
    rf"^(?:(?:{_FILLER_THAT})\s*|(?:(?:{_FILLER_FREE})\b[\s,.!:;—–-]*)"
    rf"|(?:(?:{_FILLER_PUNCT})\b\s*[,.!:;—–-]+\s*))+",
    re.IGNORECASE,
)


TRAILING_FILLER = re.compile(
    r"[\s,]*\b(?:please|thanks|thank\s+you|lol|haha|thx)\s*[.!]*\s*$", re.IGNORECASE
)


_LEADING_PLEASE = re.compile(r"^please\b[\s,]*", re.IGNORECASE)


# "From now on, use uv" → the time phrase moves to the end of the request.
_LEADING_TIME_PHRASE = re.compile(
    r"^(from\s+now\s+on|going\s+forward|in\s+the\s+future|from\s+here\s+on)\s*,?\s*",
    re.IGNORECASE,
)


# Parenthetical fillers that would otherwise read as subject + verb ("you know").
_INLINE_FILLER = re.compile(r",\s*(?:you\s+know|i\s+mean|like)\s*,", re.IGNORECASE)


# An imperative addressed to the listener.
_IMPERATIVE_VERBS = (
    r"use|stop|avoid|keep|make|write|call|answer|reply|respond|remember|note|send|show|give"
    r"|tell|add|put|prefer|try|switch|format|include|ask|remind|skip|check|run|default|double"
    r"|explain|prioriti[sz]e|mention|list|sort|name|address|refer|treat|consider|assume"
)


_IMPERATIVE = re.compile(
    rf"^(?:(?P<neg>don{APOSTROPHE}?t|do\s+not|never)\s+(?P<neg_rest>\w)"
    rf"|(?P<adv>always)\s+\w"
    rf"|(?P<verb>(?:{_IMPERATIVE_VERBS})\b))",
    re.IGNORECASE,
)


# After "please", any lowercase word that is not a subject starts a request.
_PLEASE_SUBJECT = re.compile(
    r"^(?:i|i['’]\w+|we|we['’]\w+|my|our|you|your|it|this|that|the|he|she|they)\b",
    re.IGNORECASE,
)


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _AGREEMENT:
        return _AGREEMENT[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _takes_agreement(verb: str) -> bool:
    """True when ``verb`` looks like a plain present form a third-person subject changes."""
    low = verb.lower()
    if low in _AGREEMENT:
        return True
    if not verb.isalpha() or not verb.islower():
        return False
    if low in _NOT_VERBS or low in _MODALS_AND_PAST or low in IRREGULAR_PAST:
        return False
    if (low.endswith("ed") and low not in _EED_VERBS) or low.endswith("ly"):
        return False
    return True


_VERB_AFTER_SUBJECT = re.compile(
    rf"(?P<adv>(?:\s+{_ADVERBS}\b)*)\s+(?P<verb>[A-Za-z]+(?:{APOSTROPHE}t)?)(?P<not>\s+not\b)?"
)


# Subject and object pronouns, longest forms first. Contractions with an apostrophe carry the
# verb with them ("I'm" → "Dana is").
_PRONOUN = re.compile(
    rf"""
    \b(?:
        (?P<i_contr>[Ii]{APOSTROPHE}(?P<i_suffix>m|ve|ll|d))
      | (?P<i_am>[Ii]\s+am)\b
      | (?P<i>I(?!\.\w)|i(?![.'’]))
      | (?P<we_contr>[Ww]e{APOSTROPHE}(?P<we_suffix>re|ve|ll|d))
      | (?P<we>[Ww]e)
      | (?P<you_contr>[Yy]ou{APOSTROPHE}(?P<you_suffix>re|ve|ll|d))
      | (?P<you>[Yy]ou)
      | (?P<our_team>[Oo]ur\s+team)
      | (?P<obj>(?i:me|myself|mine|my|us|ourselves|ours|our|your|yours|yourself|yourselves))
    )\b
    """,
    re.VERBOSE,
)


# Words of home life: a "we" beside them is a family ("we have two kids", "we moved to
# Munich"), not the team "we" of work talk ("we deploy on Fridays").
_HOME_LIFE = re.compile(
    r"\b(?:kids?|children|child|baby|babies|sons?|daughters?|wife|husband|partner|married"
    r"|wedding|engaged|honeymoon|house|home|apartment|flat|neighbou?rhood"
    r"|(?:moved|moving|relocated)\s+(?:back\s+)?(?:to|into|out\s+of|from)\s+(?-i:[A-Z])"
    r"|dogs?|cats?|pets?|puppy|kitten|vacation|holiday|family|parents|grandkids|eloped|honeymoon)\b",
    re.IGNORECASE,
)


_CONTRACTION = {"m": "is", "re": "is", "ve": "has", "ll": "will", "d": "would"}


@dataclass(frozen=True, slots=True)
class StatementRewriter:
    """Rewrites one sentence so it names its speaker and its listener instead of pronouns."""

    name: str  # the speaker, as the statement should name them
    listener: str = "the assistant"
    household: bool = False  # "we" is the speaker's family, not a team at work

    @property
    def group(self) -> str:
        return f"{self.name}'s family" if self.household else f"{self.name}'s team"

    def _object(self, word: str) -> str:
        low = word.lower()
        if low in ("me", "myself"):
            return self.name if low == "me" else "themself"
        if low in ("my", "mine"):
            return f"{self.name}'s"
        if low in ("us", "ourselves"):
            return self.group
        if low in ("our", "ours"):
            return f"{self.group}'s"
        if low in ("your", "yours"):
            return f"{self.listener}'s"
        return self.listener  # yourself, yourselves

    def rewrite(self, text: str) -> str:
        """``text`` in the third person: "I'll send my plan" → "Dana will send Dana's plan"."""
        if not self.household and _HOME_LIFE.search(text):
            return replace(self, household=True).rewrite(text)
        text = _INLINE_FILLER.sub(",", text)
        out: list[str] = []
        pos = 0
        for match in _PRONOUN.finditer(text):
            if match.start() < pos:
                continue  # inside a verb we already rewrote
            out.append(text[pos : match.start()])
            pos = match.end()
            kind = match.lastgroup
            if kind in ("i_contr", "we_contr", "you_contr"):
                subject = {"i_contr": self.name, "we_contr": self.group}.get(kind, self.listener)
                suffix = match.group("i_suffix") or match.group("we_suffix") or ""
                suffix = suffix or match.group("you_suffix") or ""
                verb = _CONTRACTION[suffix.lower()]
                if verb == "would" and re.match(r"\s+been\b", text[pos:]):
                    verb = "had"
                out.append(f"{subject} {verb}")
            elif kind == "i_am":
                out.append(f"{self.name} is")
            elif kind in ("i", "we", "you"):
                subject = {"i": self.name, "we": self.group}.get(kind, self.listener)
                out.append(subject)
                before = text[: match.start()]
                if not _compound_subject(before) and not (kind == "you" and _is_object(before)):
                    pos = self._agree(text, pos, out)
            elif kind == "our_team":
                out.append(self.group)
            else:
                out.append(self._object(match.group(0)))
        out.append(text[pos:])
        return "".join(out)

    def _agree(self, text: str, pos: int, out: list[str]) -> int:
        """Rewrite the verb after a subject for third-person agreement; return the new pos."""
        verb_match = _VERB_AFTER_SUBJECT.match(text, pos)
        if verb_match is None:
            return pos
        verb = verb_match.group("verb")
        if not _takes_agreement(verb):
            return pos
        out.append(verb_match.group("adv"))
        space = text[verb_match.end("adv") : verb_match.start("verb")]
        out.append(space + _third_person(verb))
        if verb_match.group("not"):
            out.append(verb_match.group("not"))
        return verb_match.end()


def finish_statement(text: str) -> str:
    """Tidy spacing, capitalize the first letter, end with exactly one period."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    text = re.sub(r"[\s,;:—–-]+$", "", text)
    text = re.sub(r"(?:[.!]+|…)$", "", text).rstrip()
    if not text:
        return ""
    if not text.endswith("?"):
        text += "."
    return text[0].upper() + text[1:]


_CLAUSE_START = re.compile(r"[^,;:.!?\n—–]*$")


_SUBJECT_WORD = re.compile(
    rf"\b(?:i|i{APOSTROPHE}\w+|we|we{APOSTROPHE}\w+|you|you{APOSTROPHE}\w+|he|she|they|it|it{APOSTROPHE}s|there)\b",
    re.IGNORECASE,
)


def _compound_subject(before: str) -> bool:
    """True for "my wife and I" (one plural subject: no agreement), false for "I'm a
    vegetarian and I don't…" (a second clause with its own subject)."""
    if not re.search(r"\b(?:and|or|nor)\s+$", before):
        return False
    clause = _CLAUSE_START.search(before)
    segment = re.sub(r"\b(?:and|or|nor)\s+$", "", clause.group(0) if clause else before)
    words = segment.split()
    return 0 < len(words) <= 4 and not _SUBJECT_WORD.search(segment)


# Words after which "you" is an object ("I told you everything"), not a subject.
_OBJECT_CONTEXT = frozenset(
    """
    to for with at from about of by on in into tell told thank thanks ask asked give gave
    show showed see saw love miss help call let make want need send sent remind bring like
    hear heard meet met join trust owe pay get got teach taught text email ping hug know
    """.split()
)


def _is_object(before: str) -> bool:
    words = re.findall(r"[A-Za-z'’]+", before[-40:])
    if not words:
        return False
    last = words[-1].lower()
    return last in _OBJECT_CONTEXT or last in IRREGULAR_PAST or last.endswith("ed")


def name_words(names: Iterable[str]) -> list[str]:
    return [w for n in names for w in n.split()]


def strip_fillers(sentence: str) -> tuple[str, bool]:
    """The sentence without leading discourse fillers, and whether it said "please"."""
    body = sentence.strip()
    had_please = False
    for _ in range(4):
        before = body
        body = _LEADING_FILLER.sub("", body)
        stripped = _LEADING_PLEASE.sub("", body)
        if stripped != body:
            had_please = True
            body = stripped
        if body == before:
            break
    if re.search(r"\bplease\s*[.!]*$", body, re.IGNORECASE):
        had_please = True
    return body, had_please


_LEADING_VOCATIVE = re.compile(r"^([A-Z][a-z]+)\s*[,!]+\s*")


_TRAILING_VOCATIVE = re.compile(r",\s*([A-Z][a-z]+)\s*([.!]*)\s*$")


def _is_name_of(word: str, people: Iterable[str]) -> bool:
    """``word`` is one of ``people`` or a short form of one ("Mel" for "Melanie")."""
    low = word.lower()
    for person in people:
        first = person.split()[0].lower() if person.split() else ""
        if low == first or (len(low) >= 3 and first.startswith(low)):
            return True
    return False


def strip_vocatives(body: str, people: Iterable[str]) -> str:
    """Drop the listener's name used as address: "Caroline, my family…" / "…, Mel!"."""
    lead = _LEADING_VOCATIVE.match(body)
    if lead and _is_name_of(lead.group(1), people):
        body = strip_fillers(body[lead.end() :])[0]
    trail = _TRAILING_VOCATIVE.search(body)
    if trail and _is_name_of(trail.group(1), people):
        body = body[: trail.start()] + trail.group(2)
    return body


def imperative_request(body: str, had_please: bool) -> tuple[bool, str] | None:
    """(negated, the request after the verb's negation) when ``body`` asks the listener
    to do something; None for a statement."""
    time_phrase = ""
    lead = _LEADING_TIME_PHRASE.match(body)
    if lead:
        time_phrase = lead.group(1)
        body = body[lead.end() :]
    match = _IMPERATIVE.match(body)
    if match is None and not (
        had_please and body[:1].islower() and not _PLEASE_SUBJECT.match(body)
    ):
        return None
    negated = False
    request = body
    if match is not None and match.group("neg"):
        neg = match.group("neg").lower()
        if neg != "never":
            negated = True
            request = body[match.end("neg") :].lstrip()
    request = re.sub(r"[.!]+\s*$", "", request)
    request = TRAILING_FILLER.sub("", request)
    if time_phrase:
        request = f"{request} {time_phrase.lower()}"
    return negated, request[:1].lower() + request[1:]
