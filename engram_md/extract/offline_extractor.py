"""Extraction without an LLM: typed facts from signalled sentences, episodes from the rest.

The default extractor (DESIGN.md principle 4). Two outputs per batch of turns:

1. **Facts.** Each sentence a person said that hits a signal pattern becomes one candidate
   fact, rewritten into a standalone statement that names the speaker ("I work at Acme" →
   "Dana works at Acme."), with relative dates made absolute against the turn's timestamp.
   The category comes from the patterns' hints in the extraction priority order.
2. **Episodes.** Everything else a person said stays recallable: the remaining sentences,
   rendered "Name: text" one paragraph per turn, are chunked (seed 004 §1: paragraphs first,
   long ones split at sentences, short neighbours merged) and scored
   importance = novelty·0.6 + salience·0.4; chunks under ``min_importance`` and chunks made
   only of pleasantries are dropped. Requests for work addressed to the assistant ("start
   phoenix in background", ``text/requests.py``) are not part of it: done, not remembered.

Who counts as a person: a user turn, or any turn whose transcript names its speaker (in
two-person transcripts such as LoCoMo both sides are people). Pure assistant turns and system
turns never yield anything: what a model said is not a fact about the user.

All of it is deterministic -- same turns, same speakers, same centroid → same output -- so
replaying a transcript rebuilds the same memory folder.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ..core.config import OfflineConfig
from ..core.errors import EmbeddingError
from ..core.models import CandidateFact, Category, Level, MemoryKind, Source, Turn
from ..core.paths import safe_slug
from ..text.dates import resolve_relative_dates
from ..text.embeddings import Embedder
from ..text.requests import is_request
from ..text.sentences import split_sentences
from ..text.signals import Pattern, SignalScanner
from ..text.words import SPOKEN_WORD, STOP_WORDS, estimate_tokens
from .extractor import Discard
from .prompts import PRIORITY
from .speakers import DEFAULT_NAMES, self_introduction

__all__ = ["OfflineExtractor", "StatementRewriter"]

log = logging.getLogger(__name__)

MAX_TAGS = 5
MAX_ENTITIES = 8
EPISODE_CONFIDENCE = 0.6
_A = "['’]"

# ---- vocabulary ------------------------------------------------------------------------------

# Besides the function words: very common verbs, adjectives and chat words, and contractions
# as SPOKEN_WORD reads them without their apostrophe: never tags, never "content" on their own.
_STOPWORDS = STOP_WORDS | frozenset(
    """
    about above after again against all almost although always am any anything around
    because before being below between both doing done down during each either else even
    ever every everything few further get gets getting got having here hers herself himself
    how however if into itself kind least less let lets like made make makes many may maybe
    might mine more most much must myself never nor nothing now off often once one only
    other others otherwise ours ourselves out over own per perhaps please quite rather
    really same since some something sometimes sort still such than theirs themselves then
    there thing things though through thus too under until up upon us usually want wants
    well what whatever when where whether which while who whom whose why within without yet
    yours yourself yourselves im ive ill id youre youve youll youd weve wed dont doesnt
    didnt cant couldnt wont wouldnt shouldnt isnt arent wasnt werent hasnt havent hadnt
    thats theres whats go goes going gone went come comes came say says said tell told think
    thinks thought know knows knew see sees saw seen look looks looked feel feels felt give
    gives gave take takes took use uses used need needs needed try tries tried keep keeps
    kept put puts way ways lot lots pretty good great nice cool fine sure okay ok yes yeah
    yep nope hi hello hey thanks thank bye lol haha hmm oh ah wow awesome right alright
    sorry glad happy sounds sound seems seem gonna wanna gotta instead assistant user team
    today tomorrow yesterday tonight week weeks month months year years day days time times
    """.split()
)

# Acknowledgements and pleasantries: a chunk made only of these is not worth a memory.
_PLEASANTRIES = frozenset(
    """
    ok okay k kk thanks thank thx ty you yes yeah yep yup sure no nope lol haha hah hehe lmao
    cool great nice good awesome perfect right alright fine got it noted understood hi hello
    hey bye cya see later cheers welcome np problem sounds makes sense wow oh ah hmm indeed
    agreed exactly true totally absolutely definitely love that so much very really glad
    happy to hear appreciate
    """.split()
)

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
_IRREGULAR_PAST = frozenset(
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
    rf"(?:please\s+)?(?:note|remember|keep\s+in\s+mind|don{_A}?t\s+forget)(?:\s+that\b|\s*[:,])"
)
_LEADING_FILLER = re.compile(
    rf"^(?:(?:{_FILLER_THAT})\s*|(?:(?:{_FILLER_FREE})\b[\s,.!:;—–-]*)"
    rf"|(?:(?:{_FILLER_PUNCT})\b\s*[,.!:;—–-]+\s*))+",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
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
    rf"^(?:(?P<neg>don{_A}?t|do\s+not|never)\s+(?P<neg_rest>\w)"
    rf"|(?P<adv>always)\s+\w"
    rf"|(?P<verb>(?:{_IMPERATIVE_VERBS})\b))",
    re.IGNORECASE,
)
# After "please", any lowercase word that is not a subject starts a request.
_PLEASE_SUBJECT = re.compile(
    r"^(?:i|i['’]\w+|we|we['’]\w+|my|our|you|your|it|this|that|the|he|she|they)\b",
    re.IGNORECASE,
)

_HEDGE = re.compile(
    r"\b(?:i\s+think|i\s+guess|i\s+believe|i\s+suppose|i\s+feel\s+like|maybe|probably"
    r"|perhaps|possibly|might|not\s+sure|kind\s+of|sort\s+of|i\s+reckon)\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(rf"\b(?:i|i{_A}\w+|my|me|mine|we|we{_A}\w+|our|us)\b", re.IGNORECASE)
_PREFERENCE_CUE = re.compile(
    rf"\bi\s+(?:really\s+|absolutely\s+)?(?:prefer|always|never|hate|love|like|enjoy"
    rf"|can{_A}?t\s+stand)\b|\bmy\s+fav(?:ou)?rite\b",
    re.IGNORECASE,
)
_NUMBER_OR_DATE = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october"
    r"|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|yesterday|tomorrow|today|tonight)\b",
    re.IGNORECASE,
)
# Code-ish tokens: paths, dotted names, snake_case, camelCase, version-like, ALLCAPS acronyms.
_CODEISH = re.compile(
    r"`[^`]+`|\b\w+(?:[._/:]\w+)+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[a-z]*\b"
    r"|\b[A-Za-z]+\d+[A-Za-z\d]*\b|\b\w{13,}\b"
)
# A number with a unit word right after it: "6 people", "10am", "300 ms".
_NUMBER_UNIT = re.compile(r"\b(\d+(?:\.\d+)?)\s?(%|[a-zA-Z]{1,10})\b")
# The object of a tool choice: "use uv", "instead of pip", "switch to Poetry".
_TOOL_OBJECT = re.compile(
    r"\b(?:use|using|uses|prefer|prefers|instead\s+of|rather\s+than|switch(?:ed)?\s+to"
    r"|move(?:d)?\s+to|migrate(?:d)?\s+to|from|over|with)\s+([A-Za-z][\w.+#-]*)",
    re.IGNORECASE,
)
# Contexts that make the next single capitalized word a person.
_PERSON_CONTEXT = re.compile(
    r"\b(?:told|tell|asked|ask|met|meet|called|emailed|texted|thanked|ping|pinged|cc"
    r"|introduced|friend|sister|brother|wife|husband|mom|mum|mother|dad|father|boss|manager"
    r"|colleague|coworker|co-worker|son|daughter|partner|girlfriend|boyfriend|cousin|aunt"
    r"|uncle|grandma|grandpa|teacher|neighbou?r|roommate|mentor|teammate|mr\.?|mrs\.?|ms\.?"
    r"|dr\.?)(?:\s+(?:is|was|named|called))?\s*,?\s*$",
    re.IGNORECASE,
)
_TO_CONTEXT = re.compile(r"\bto\s+$", re.IGNORECASE)
_TRANSFER_VERB = re.compile(
    r"\b(?:send|sends|sent|give|gives|gave|show|shows|showed|talk|talks|talked|speak|speaks"
    r"|spoke|write|writes|wrote|explain|explains|explained|mention|mentioned|report|reports"
    r"|reported|reply|replied|introduce|introduced|hand|handed|forward|forwarded|email"
    r"|emailed|say|said|hand\s+over|present|presented|pitch|pitched)\b",
    re.IGNORECASE,
)
_CAP_TOKEN = re.compile(r"[A-Z][\w+#&.'’-]*[\w+#]|[A-Z]|[a-z]+[A-Z][\w+#-]*")
_NOT_ENTITIES = frozenset(
    """
    i the a an my our your his her their this that these those it its we you he she they
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
    thursdays fridays saturdays sundays january february march april
    may june july august september october november december yesterday today tomorrow
    tonight ok okay yes no hi hello hey thanks mr mrs ms dr
    """.split()
)


def _words(text: str) -> list[str]:
    return SPOKEN_WORD.findall(text)


def _content_words(text: str, ignore: Iterable[str] = ()) -> list[str]:
    skip = {w.lower() for w in ignore}
    out = []
    for word in _words(text):
        low = word.lower().replace("’", "'").replace("'", "")
        if low in _STOPWORDS or low in skip or low in _PLEASANTRIES or len(low) < 2:
            continue
        out.append(word)
    return out


def _is_trivial(text: str, ignore: Iterable[str] = ()) -> bool:
    """Acknowledgements and pleasantries only ("ok thanks", "Yes.", "lol"): no memory."""
    skip = {w.lower() for w in ignore}
    content = [
        w
        for w in _words(text)
        if (low := w.lower().replace("’", "'").replace("'", "")) not in _PLEASANTRIES
        and low not in _STOPWORDS
        and low not in skip
    ]
    return len(content) < 3


# ---- first person → named third person ---------------------------------------------------


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
    if low in _NOT_VERBS or low in _MODALS_AND_PAST or low in _IRREGULAR_PAST:
        return False
    if (low.endswith("ed") and low not in _EED_VERBS) or low.endswith("ly"):
        return False
    return True


_VERB_AFTER_SUBJECT = re.compile(
    rf"(?P<adv>(?:\s+{_ADVERBS}\b)*)\s+(?P<verb>[A-Za-z]+(?:{_A}t)?)(?P<not>\s+not\b)?"
)

# Subject and object pronouns, longest forms first. Contractions with an apostrophe carry the
# verb with them ("I'm" → "Dana is").
_PRONOUN = re.compile(
    rf"""
    \b(?:
        (?P<i_contr>[Ii]{_A}(?P<i_suffix>m|ve|ll|d))
      | (?P<i_am>[Ii]\s+am)\b
      | (?P<i>I(?!\.\w)|i(?![.'’]))
      | (?P<we_contr>[Ww]e{_A}(?P<we_suffix>re|ve|ll|d))
      | (?P<we>[Ww]e)
      | (?P<you_contr>[Yy]ou{_A}(?P<you_suffix>re|ve|ll|d))
      | (?P<you>[Yy]ou)
      | (?P<our_team>[Oo]ur\s+team)
      | (?P<obj>(?i:me|myself|mine|my|us|ourselves|ours|our|your|yours|yourself|yourselves))
    )\b
    """,
    re.VERBOSE,
)
_CONTRACTION = {"m": "is", "re": "is", "ve": "has", "ll": "will", "d": "would"}


@dataclass(frozen=True, slots=True)
class StatementRewriter:
    """Rewrites one sentence so it names its speaker and its listener instead of pronouns."""

    name: str  # the speaker, as the statement should name them
    listener: str = "the assistant"

    @property
    def group(self) -> str:
        return f"{self.name}'s team"

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


# ---- the extractor ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unit:
    """One paragraph (or a piece of a long one) of the episode text."""

    text: str
    turn_id: str
    timestamp: datetime
    speaker: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True, slots=True)
class _Chunk:
    units: tuple[_Unit, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(u.text for u in self.units)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def _level(matches: Sequence[Pattern]) -> Level:
    """Aggregate the hits like :meth:`SignalScanner.scan` does."""
    if any(p.level >= Level.HIGH for p in matches):
        return Level.HIGH
    medium = {p.name for p in matches if p.level == Level.MEDIUM}
    if len(medium) >= 2:
        return Level.MEDIUM
    return Level.LOW if matches else Level.NONE


def _category(matches: Sequence[Pattern]) -> Category:
    hints = {p.category for p in matches if p.category is not None}
    for category in PRIORITY:
        if category in hints:
            return category
    return Category.FACT


def _finish(text: str) -> str:
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


class OfflineExtractor:
    """Heuristic extraction: facts from signalled sentences, scored episodes from the rest."""

    name = "offline"

    def __init__(
        self,
        cfg: OfflineConfig,
        scanner: SignalScanner,
        embedder: Embedder | None,
        existing_centroid: Callable[[], np.ndarray | None] = lambda: None,
    ) -> None:
        self._cfg = cfg
        self._scanner = scanner
        self._embedder = embedder
        self._existing_centroid = existing_centroid
        self.last_discarded: list[Discard] = []

    # ---- public ----------------------------------------------------------------------

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        """Candidate facts, then episodes, for ``turns``; ``speakers`` maps turn id → name."""
        self.last_discarded = []
        people = [t for t in turns if t.from_person]
        known_people = self._known_people(turns, speakers)
        listeners = self._listeners(turns, speakers)
        facts: list[CandidateFact] = []
        units: list[tuple[str, _Unit]] = []  # (session, paragraph)
        for turn in people:
            name = self._speaker_name(turn, speakers)
            rewriter = StatementRewriter(name, listeners.get(turn.id, "the assistant"))
            leftover: list[str] = []
            asked: list[str] = []  # work requested of the assistant: done, not remembered
            for sentence in split_sentences(turn.content):
                fact = self._fact(sentence, turn, rewriter, known_people)
                if fact is not None:
                    facts.append(fact)
                elif turn.id not in listeners and is_request(sentence):
                    asked.append(sentence)
                else:
                    leftover.append(sentence)
            if asked and not leftover:
                self.last_discarded.append(Discard((turn.id,), "request", " ".join(asked)[:80]))
            if leftover:
                text = resolve_relative_dates(" ".join(leftover), turn.timestamp)
                if not _is_trivial(text, ignore=name.split()):
                    units.append(
                        (turn.session, _Unit(f"{name}: {text}", turn.id, turn.timestamp, name))
                    )
                else:
                    self.last_discarded.append(Discard((turn.id,), "trivial", text[:80]))
        return facts + self._episodes(units, known_people)

    # ---- speakers --------------------------------------------------------------------

    @staticmethod
    def _speaker_name(turn: Turn, speakers: Mapping[str, str]) -> str:
        name = speakers.get(turn.id) or turn.speaker or "the user"
        if name.lower().startswith("the "):
            # The book had no name yet; a turn that introduces its speaker supplies one.
            for sentence in split_sentences(turn.content)[:2]:
                intro = self_introduction(_strip_fillers(sentence)[0])
                if intro is not None:
                    return intro.name
        return name

    @staticmethod
    def _known_people(turns: Sequence[Turn], speakers: Mapping[str, str]) -> frozenset[str]:
        names = {t.speaker for t in turns if t.speaker}
        names |= {speakers[t.id] for t in turns if t.id in speakers and t.from_person}
        return frozenset(n for n in names if n and not n.lower().startswith("the "))

    @staticmethod
    def _listeners(turns: Sequence[Turn], speakers: Mapping[str, str]) -> dict[str, str]:
        """Who "you" is, per turn id: the one other named person of the session, else the
        assistant (a user turn without a speaker name talks to the assistant)."""
        named: dict[str, set[str]] = {}
        for t in turns:
            if t.speaker and t.from_person:
                named.setdefault(t.session, set()).add(speakers.get(t.id) or t.speaker)
        out: dict[str, str] = {}
        for t in turns:
            if not t.speaker:
                continue
            others = sorted(named.get(t.session, set()) - {speakers.get(t.id) or t.speaker})
            if len(others) == 1:
                out[t.id] = others[0]
        return out

    # ---- facts -----------------------------------------------------------------------

    def _fact(
        self, sentence: str, turn: Turn, rewriter: StatementRewriter, people: frozenset[str]
    ) -> CandidateFact | None:
        if sentence.rstrip().endswith("?"):
            return None  # a question asks; it states nothing
        matches = self._scanner.matches(sentence)
        body, had_please = _strip_fillers(sentence)
        body = _strip_vocatives(body, people)
        intro = self_introduction(body)
        if intro is not None:
            rest_matches = self._scanner.matches(intro.rest) if intro.rest else []
            if rest_matches:
                body, matches = intro.rest, rest_matches
                rewriter = StatementRewriter(
                    intro.name if rewriter.name.lower().startswith("the ") else rewriter.name,
                    rewriter.listener,
                )
            elif turn.speaker:
                return None  # the transcript already names this person
            else:
                content = f"The user's name is {intro.name}."
                return self._candidate(
                    content, Category.FACT, 0.95, turn, intro.name, people | {intro.name}
                )
        if not matches:
            return None
        body = resolve_relative_dates(body, turn.timestamp)
        imperative = _imperative(body, had_please)
        if imperative is not None:
            negated, request = imperative
            request = rewriter.rewrite(request)
            link = "not to" if negated else "to"
            content = f"{rewriter.name} wants {rewriter.listener} {link} {request}"
        else:
            content = rewriter.rewrite(body)
        content = _finish(_TRAILING_FILLER.sub("", content))
        ignore = rewriter.name.split() + rewriter.listener.split() + ["team"]
        if len(_content_words(content, ignore=ignore)) < 2:
            return None  # "I love it!" → nothing to remember on its own
        category = _category(matches)
        confidence = self._confidence(matches, category, body, imperative is not None)
        return self._candidate(content, category, confidence, turn, rewriter.name, people)

    @staticmethod
    def _confidence(
        matches: Sequence[Pattern], category: Category, body: str, imperative: bool
    ) -> float:
        level = _level(matches)
        if level is Level.HIGH:
            if category is Category.COMMITMENT:
                value = 0.9
            elif imperative or _FIRST_PERSON.search(body):
                value = 0.95
            else:
                value = 0.85
        elif level is Level.MEDIUM:
            value = 0.75
        else:
            value = 0.6
        if _HEDGE.search(body):
            value -= 0.2
        return round(max(value, 0.1), 2)

    def _candidate(
        self,
        content: str,
        category: Category,
        confidence: float,
        turn: Turn,
        speaker: str,
        people: frozenset[str],
    ) -> CandidateFact:
        return CandidateFact(
            category=category,
            content=content,
            confidence=confidence,
            source_turn_ids=(turn.id,),
            session=turn.session,
            created=turn.timestamp,
            tags=_tags(content, {speaker} | people),
            entities=_entities(content, [speaker], people),
            source=Source.OFFLINE,
            speaker=speaker,
        )

    # ---- episodes --------------------------------------------------------------------

    def _episodes(
        self, units: Sequence[tuple[str, _Unit]], people: frozenset[str]
    ) -> list[CandidateFact]:
        chunks: list[tuple[str, _Chunk]] = []
        by_session: dict[str, list[_Unit]] = {}
        for session, unit in units:
            by_session.setdefault(session, []).append(unit)
        for session, session_units in by_session.items():
            pieces = [p for u in session_units for p in self._split_long(u)]
            chunks.extend((session, c) for c in self._merge_short(pieces))
        speaker_names = {u.speaker for _, u in units}
        kept_chunks = []
        for session, chunk in chunks:
            if _is_trivial(chunk.text, ignore=_name_words(speaker_names)):
                ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
                self.last_discarded.append(Discard(ids, "trivial", chunk.text[:80]))
            else:
                kept_chunks.append((session, chunk))
        chunks = kept_chunks
        if not chunks:
            return []
        novelty = self._novelty([c.text for _, c in chunks])
        out: list[CandidateFact] = []
        for (session, chunk), nov in zip(chunks, novelty, strict=True):
            speakers_in = sorted({u.speaker for u in chunk.units})
            salience = _salience(chunk.text, speaker_names, speakers_in)
            importance = round(nov * 0.6 + salience * 0.4, 2)
            if importance < self._cfg.min_importance:
                ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
                reason = f"low_importance_{importance:.2f}"
                self.last_discarded.append(Discard(ids, reason, chunk.text[:80]))
                continue
            turn_ids = tuple(dict.fromkeys(u.turn_id for u in chunk.units))
            out.append(
                CandidateFact(
                    category=Category.MOMENT,
                    content=chunk.text,
                    confidence=EPISODE_CONFIDENCE,
                    source_turn_ids=turn_ids,
                    session=session,
                    created=chunk.units[-1].timestamp,
                    tags=_tags(chunk.text, speaker_names | people),
                    entities=_entities(chunk.text, speakers_in, people),
                    source=Source.OFFLINE,
                    memory_kind=MemoryKind.EPISODE,
                    importance=importance,
                    speaker=speakers_in[0] if len(speakers_in) == 1 else None,
                )
            )
        return out

    def _split_long(self, unit: _Unit) -> list[_Unit]:
        """A paragraph over the token cap, cut at sentence boundaries (each piece keeps the
        speaker prefix so it still reads on its own)."""
        if unit.tokens <= self._cfg.max_chunk_tokens:
            return [unit]
        prefix = f"{unit.speaker}: "
        sentences = split_sentences(unit.text[len(prefix) :])
        pieces: list[_Unit] = []
        current: list[str] = []
        for sentence in sentences:
            candidate = prefix + " ".join([*current, sentence])
            if current and estimate_tokens(candidate) > self._cfg.max_chunk_tokens:
                pieces.append(
                    _Unit(prefix + " ".join(current), unit.turn_id, unit.timestamp, unit.speaker)
                )
                current = []
            current.append(sentence)
        if current:
            pieces.append(
                _Unit(prefix + " ".join(current), unit.turn_id, unit.timestamp, unit.speaker)
            )
        return pieces

    def _merge_short(self, units: Sequence[_Unit]) -> list[_Chunk]:
        """Adjacent pieces under the minimum merge with their neighbour, never past the cap."""
        lo, hi = self._cfg.min_chunk_tokens, self._cfg.max_chunk_tokens
        chunks: list[_Chunk] = []
        current: list[_Unit] = []
        for unit in units:
            if current:
                merged = _Chunk((*current, unit))
                short = _Chunk(tuple(current)).tokens < lo or unit.tokens < lo
                if short and merged.tokens <= hi:
                    current.append(unit)
                    continue
                chunks.append(_Chunk(tuple(current)))
            current = [unit]
        if current:
            last = _Chunk(tuple(current))
            if chunks and last.tokens < lo:
                merged = _Chunk((*chunks[-1].units, *current))
                if merged.tokens <= hi:
                    chunks[-1] = merged
                    return chunks
            chunks.append(last)
        return chunks

    def _novelty(self, texts: Sequence[str]) -> list[float]:
        """Cosine distance of each text from the existing memories' centroid, in [0, 1]."""
        if self._embedder is None:
            return [1.0] * len(texts)
        centroid = self._existing_centroid()
        if centroid is None:
            return [1.0] * len(texts)
        try:
            vectors = np.asarray(self._embedder.embed(list(texts)), dtype=np.float32)
        except EmbeddingError as exc:
            # Scoring must not hold turns hostage: without vectors every chunk counts as new.
            log.warning("episode novelty without embeddings: %s", exc)
            return [1.0] * len(texts)
        centre = np.asarray(centroid, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(centre))
        if vectors.ndim != 2 or vectors.shape[1] != centre.shape[0] or norm == 0.0:
            log.warning("centroid does not match the embeddings; novelty set to 1.0")
            return [1.0] * len(texts)
        row_norms = np.maximum(np.linalg.norm(vectors, axis=1), 1e-12)
        cosine = (vectors @ centre) / (row_norms * norm)
        return [float(min(1.0, max(0.0, 1.0 - c))) for c in cosine]


# ---- helpers ---------------------------------------------------------------------------------


_CLAUSE_START = re.compile(r"[^,;:.!?\n—–]*$")
_SUBJECT_WORD = re.compile(
    rf"\b(?:i|i{_A}\w+|we|we{_A}\w+|you|you{_A}\w+|he|she|they|it|it{_A}s|there)\b", re.IGNORECASE
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
    return last in _OBJECT_CONTEXT or last in _IRREGULAR_PAST or last.endswith("ed")


def _name_words(names: Iterable[str]) -> list[str]:
    return [w for n in names for w in n.split()]


def _strip_fillers(sentence: str) -> tuple[str, bool]:
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


def _strip_vocatives(body: str, people: Iterable[str]) -> str:
    """Drop the listener's name used as address: "Caroline, my family…" / "…, Mel!"."""
    lead = _LEADING_VOCATIVE.match(body)
    if lead and _is_name_of(lead.group(1), people):
        body = _strip_fillers(body[lead.end() :])[0]
    trail = _TRAILING_VOCATIVE.search(body)
    if trail and _is_name_of(trail.group(1), people):
        body = body[: trail.start()] + trail.group(2)
    return body


def _imperative(body: str, had_please: bool) -> tuple[bool, str] | None:
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
    request = _TRAILING_FILLER.sub("", request)
    if time_phrase:
        request = f"{request} {time_phrase.lower()}"
    return negated, request[:1].lower() + request[1:]


_PUNCT_EDGES = "\"'“”‘’()[],;:!?."


def _proper_nouns(text: str, known: Iterable[str] = ()) -> list[tuple[str, int]]:
    """Capitalized sequences ("Acme Robotics", "PostgreSQL 16") with their start offsets.

    The first word of a sentence is capitalized anyway, so it counts only when it is part of
    a longer sequence, written in mixed case, or a known person's name. Known names and
    possessives end a sequence ("Dana Danny" is two names; "Dana's Tesla" two things).
    """
    names = {k.lower() for k in known}
    found: list[tuple[str, int]] = []
    for sentence_match in re.finditer(r"[^.!?\n]+(?:[.!?]+|$)", text):
        base = sentence_match.start()
        tokens = list(re.finditer(r"\S+", sentence_match.group(0)))
        i = 0
        while i < len(tokens):
            word = tokens[i].group(0).strip(_PUNCT_EDGES)
            if not _is_cap(word):
                i += 1
                continue
            parts = [word]
            j = i + 1
            ends = _ends_sequence(tokens[i].group(0), word, names)
            while not ends and j < len(tokens):
                raw = tokens[j].group(0)
                nxt = raw.strip(_PUNCT_EDGES)
                number = re.fullmatch(r"\d+(?:\.\d+)*", nxt) is not None
                if not (_is_cap(nxt) or number) or _possessive_base(nxt).lower() in names:
                    break
                parts.append(nxt)
                j += 1
                ends = number or _ends_sequence(raw, nxt, names)
            phrase = _possessive_base(" ".join(parts))
            first_of_sentence = i == 0 or tokens[i - 1].group(0).endswith(":")
            mixed = any(c.isupper() for c in parts[0][1:])
            if first_of_sentence and len(parts) == 1 and not mixed and phrase.lower() not in names:
                i = j
                continue
            if phrase.lower() not in _NOT_ENTITIES and not phrase.isdigit():
                found.append((phrase, base + tokens[i].start()))
            i = j
    return found


def _possessive_base(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def _ends_sequence(raw: str, word: str, names: set[str]) -> bool:
    """Punctuation after the word, a possessive, or a known name ends a capitalized run."""
    return raw != word or word != _possessive_base(word) or word.lower() in names


def _is_cap(word: str) -> bool:
    if not word or word == "I" or word.lower() in ("i'm", "i’m", "i'll", "i've", "i'd"):
        return False
    return bool(_CAP_TOKEN.fullmatch(word)) and word.lower() not in _NOT_ENTITIES


def _is_person_mention(text: str, phrase: str, start: int) -> bool:
    if " " in phrase or not phrase[:1].isupper() or not phrase[1:].islower():
        return False
    before = text[max(0, start - 40) : start]
    if _PERSON_CONTEXT.search(before):
        return True
    return bool(_TO_CONTEXT.search(before) and _TRANSFER_VERB.search(text))


def _entities(text: str, speakers: Iterable[str], people: frozenset[str]) -> tuple[str, ...]:
    out: list[str] = []
    for speaker in speakers:
        if speaker and not speaker.lower().startswith("the "):
            out.append(f"person-{safe_slug(speaker)}")
    known = {p.lower() for p in people}
    for phrase, start in _proper_nouns(text, people):
        if phrase.lower() in known or _is_person_mention(text, phrase, start):
            out.append(f"person-{safe_slug(phrase)}")
        else:
            out.append(f"entity-{safe_slug(phrase)}")
    return tuple(dict.fromkeys(out))[:MAX_ENTITIES]


# The parentheses dates.resolve_relative_dates adds: "(2026-03-01)", "(week of …)",
# "(February 2026)", "(2025)", "(a few weeks before …)".
_ADDED_DATE = re.compile(
    r"\((?:week of |weekend of |[a-z ]+ before )?\d{4}(?:-\d{2}-\d{2})?\)|\([A-Z][a-z]+ \d{4}\)"
)


def _tags(text: str, exclude: Iterable[str]) -> tuple[str, ...]:
    """A few keyword slugs: proper nouns, tool names, code-ish terms, numbers with units,
    then the longest remaining content words."""
    skip = {e.lower() for e in exclude} | {w.lower() for w in _name_words(exclude)}
    # Dates we added in parentheses are metadata, not topics.
    plain = _ADDED_DATE.sub("", text)
    candidates: list[str] = [p for p, _ in _proper_nouns(plain, exclude)]
    candidates += [m.group(1) for m in _TOOL_OBJECT.finditer(plain)]
    candidates += [m.group(0).strip("`") for m in _CODEISH.finditer(plain)]
    candidates += [m.group(0) for m in _NUMBER_UNIT.finditer(plain) if _is_unit(m)]
    tags: list[str] = []
    for candidate in candidates:
        low = candidate.lower()
        if low in skip or low in _STOPWORDS or low in _NOT_ENTITIES:
            continue
        _add_tag(tags, safe_slug(candidate, fallback=""))
    if len(tags) < MAX_TAGS:
        # The verb right after a subject ("Dana works") is not a topic.
        subjects = "|".join(re.escape(s) for s in sorted(skip, key=len, reverse=True) if s)
        verbs = (
            {
                m.group(1).lower()
                for m in re.finditer(rf"(?i)\b(?:{subjects})(?:'s\s+team)?\s+(\w+)", plain)
            }
            if subjects
            else set()
        )
        rest = [w for w in _content_words(plain, ignore=skip) if len(w) >= 5 and w.isalpha()]
        for word in sorted(dict.fromkeys(w.lower() for w in rest), key=lambda w: (-len(w), w)):
            if len(tags) >= MAX_TAGS:
                break
            if word in verbs or word in _NOT_ENTITIES or word in _IRREGULAR_PAST:
                continue
            if word.endswith(("ly", "ed")):
                continue
            _add_tag(tags, word)
    return tuple(tags[:MAX_TAGS])


def _add_tag(tags: list[str], slug: str) -> None:
    """Add ``slug`` unless it is empty, a bare number, or already covered by a longer tag
    ("postgresql" next to "postgresql-16")."""
    if not slug or re.fullmatch(r"\d+", slug) or slug in tags:
        return
    parts = set(slug.split("-"))
    if any(parts <= set(t.split("-")) for t in tags):
        return
    tags.append(slug)


_UNITS = frozenset(
    """
    people persons users members engineers employees servers nodes cores gb mb kb tb ms
    km mi kg lbs min mins hours hrs days weeks months years percent dollars euros times
    """.split()
)


def _is_unit(match: re.Match[str]) -> bool:
    """A number's unit: attached ("10am", "16GB", "5%") or a plural noun after a space."""
    unit = match.group(2).lower()
    attached = match.group(0)[len(match.group(1)) :][:1] != " "
    if attached:
        return True
    return unit in _UNITS or (unit.endswith("s") and unit not in _STOPWORDS and len(unit) > 3)


def _salience(text: str, speakers: Iterable[str], chunk_speakers: Iterable[str] = ()) -> float:
    """Seed 004 §1.5: entity +0.3, number/date +0.2, preference +0.4, technical term +0.1.

    A chunk is rendered "Name: …": when the speaker is a named person (not "the user"),
    the chunk names a person, which counts as a named entity like any other.
    """
    known = {s.lower() for s in speakers}
    anonymous = set(DEFAULT_NAMES.values())
    named_speaker = any(s not in anonymous for s in chunk_speakers)
    score = 0.0
    if named_speaker or any(p.lower() not in known for p, _ in _proper_nouns(text, known)):
        score += 0.3
    if _NUMBER_OR_DATE.search(text):
        score += 0.2
    if _PREFERENCE_CUE.search(text):
        score += 0.4
    if _CODEISH.search(text):
        score += 0.1
    return min(score, 1.0)
