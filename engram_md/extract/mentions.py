"""What a statement mentions: the people, projects and tools it names (entities), its topic
tags, and how salient it is (names, numbers, dates, tools) for an episode's importance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core.paths import safe_slug
from ..text.words import SPOKEN_WORD, STOP_WORDS
from .speakers import DEFAULT_NAMES
from .statements import APOSTROPHE, IRREGULAR_PAST, name_words

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


# ---------------------------------------------------------------- kinds

# The kinds an entity slug starts with (``<kind>-<name>``): the LLM prompt's types, and
# ``entity`` when the words around a name do not say what it is.
ENTITY_KINDS = frozenset({"person", "org", "project", "tool", "place", "other", "entity"})

# Animals people keep: "Dana's cat is called Miso", "our dog, Rex", "Miso the cat". A pet is
# named like a person and is not one.
_ANIMAL = (
    r"(?:cat|cats|kitten|kitty|dog|dogs|puppy|pup|pet|pets|hamster|rabbit|bunny|parrot|bird"
    r"|budgie|horse|pony|fish|goldfish|turtle|tortoise|snake|lizard|gecko|ferret|guinea\s+pig"
    r"|chinchilla|hedgehog|rat|mouse|cockatiel|canary|goat|pig|cow|chicken|hen)"
)
_OWNER = rf"(?:my|our|his|her|their|your|the|a|an|\w+{APOSTROPHE}s)"
_PET_BEFORE = re.compile(
    rf"\b{_OWNER}\s+(?:\w+\s+)?{_ANIMAL}\s*,?(?:\s+(?:is|was|'s|’s))?"
    r"(?:\s+(?:named|called))?\s*,?\s*$",
    re.IGNORECASE,
)
_PET_AFTER = re.compile(rf"^\s*,?\s*{_OWNER}\s+(?:\w+\s+)?{_ANIMAL}\b", re.IGNORECASE)

# The last word of an organization's name: "Acme Inc", "Initech GmbH", "Acme Robotics".
_ORG_SUFFIX = frozenset(
    """
    inc inc. incorporated ltd ltd. llc llp gmbh ag sa plc corp corp. corporation co co.
    company companies labs lab technologies technology tech systems group holdings partners
    ventures capital bank university college school institute foundation agency studio
    studios robotics software analytics consulting solutions networks media pharma
    pharmaceuticals motors airlines airways energy insurance hospital clinic
    """.split()
)
# Where someone works: "works at Acme", "an intern for Initech", "hired by Globex".
_ORG_BEFORE = re.compile(
    r"\b(?:work|works|worked|working|employed|intern|interns|interned|interning|job|jobs"
    r"|position|role|hired|internship|offer)\s+(?:\w+\s+){0,2}?(?:at|for|by|with)\s+$",
    re.IGNORECASE,
)
# What someone works on: "working on Atlas", "the Atlas project".
_PROJECT_BEFORE = re.compile(
    r"\b(?:work|works|worked|working|build|builds|building|built|ship|ships|shipping|shipped"
    r"|launch|launched|launching|lead|leads|leading|led)\s+on\s+(?:the\s+)?$"
    r"|\b(?:project|codename|code\s+name)\s+$",
    re.IGNORECASE,
)
_PROJECT_AFTER = re.compile(r"^\s+(?:project|initiative|rewrite|migration)\b", re.IGNORECASE)
# Software: what follows its name ("the Django framework"), or what one does with it.
_TOOL_AFTER = re.compile(
    r"^\s+(?:\d[\w.]*\s+)?(?:library|libraries|framework|database|db|language|editor|ide|cli"
    r"|sdk|api|app|apps|tool|tools|plugin|plugins|extension|package|packages|server|cluster"
    r"|engine|compiler|runtime|repo|repository|module|script|scripts|container|image"
    r"|driver|queue|cache|dashboard|pipeline|workflow|client|shell|terminal|browser)\b",
    re.IGNORECASE,
)
_TOOL_BEFORE = re.compile(
    r"\b(?:use|uses|used|using|install|installs|installed|installing|upgrade|upgrades"
    r"|upgraded|upgrading|downgrade|downgraded|migrate|migrates|migrated|migrating|switch"
    r"|switches|switched|switching|deploy|deploys|deployed|deploying|configure|configured"
    r"|run|runs|running|code|codes|coding|write|writes|writing|program|programming|debug"
    r"|debugging)\s+(?:(?:to|from|in|on|with)\s+)?$",
    re.IGNORECASE,
)
# A name with a version after it is software: "PostgreSQL 16", "Python 3.12".
_VERSIONED = re.compile(r"\s\d+(?:\.\d+)*$")
# Where someone is, goes or comes from: "lives in Lisbon", "moved to Munich", "is from Porto".
_PLACE_BEFORE = re.compile(
    r"\b(?:live|lives|lived|living|move|moves|moved|moving|relocate|relocated|relocating|born"
    r"|raised|grew\s+up|based|stay|stays|stayed|staying|travel|travels|traveled|travelled"
    r"|traveling|travelling|trip|trips|flight|flights|flew|fly|flies|flying|vacation"
    r"|vacationing|holiday|holidays|went|go|goes|going|gone|been|back|home|located|head"
    r"|heading|headed|drive|drove|driving|hike|hiked|hiking|visit|visits|visited|visiting"
    r"|arrive|arrived|arriving|land|landed)\s+(?:back\s+)?(?:to|in|from|at|near|around"
    r"|through|across)\s+$"
    r"|\b(?:am|is|are|was|were|be|come|comes|came|originally)\s+from\s+$",
    re.IGNORECASE,
)


def _kind(text: str, phrase: str, start: int, known: set[str]) -> str:
    """What the words around ``phrase`` (at ``start`` in ``text``) say it is; ``entity``
    when they say nothing. Rules run from the surest: a known person, a pet, a person's
    context, then an organization, a project, a tool and a place."""
    before = text[max(0, start - 60) : start]
    after = text[start + len(phrase) : start + len(phrase) + 40]
    if phrase.lower() in known:
        return "person"
    if _PET_BEFORE.search(before) or _PET_AFTER.search(after):
        return "entity"
    if _is_person_mention(text, phrase, start):
        return "person"
    last = phrase.split()[-1].lower()
    if (" " in phrase and last in _ORG_SUFFIX) or _ORG_BEFORE.search(before):
        return "org"
    if _PROJECT_BEFORE.search(before) or _PROJECT_AFTER.search(after):
        return "project"
    if _VERSIONED.search(phrase) or _TOOL_AFTER.search(after) or _TOOL_BEFORE.search(before):
        return "tool"
    if _PLACE_BEFORE.search(before):
        return "place"
    return "entity"


def _paired_kinds(text: str, found: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """ "from MySQL to PostgreSQL 16": when one side of a move is a tool or a place and the
    other is unknown, the other is one too."""
    out = list(found)
    for i, (phrase, start, kind) in enumerate(found[:-1]):
        nxt_phrase, nxt_start, nxt_kind = found[i + 1]
        between = text[start + len(phrase) : nxt_start]
        if not re.fullmatch(r"\s+to\s+", between) or not re.search(
            r"\bfrom\s+$", text[max(0, start - 10) : start], re.IGNORECASE
        ):
            continue
        kinds = {kind, nxt_kind}
        for shared in ("tool", "place"):
            if shared in kinds and kinds <= {shared, "entity"}:
                out[i] = (phrase, start, shared)
                out[i + 1] = (nxt_phrase, nxt_start, shared)
    return out


def statement_entities(
    text: str, speakers: Iterable[str], people: frozenset[str]
) -> tuple[str, ...]:
    """Entity slugs ``<kind>-<name>``: the speakers, then every name the statement holds,
    of the kind the words around it say (:func:`_kind`)."""
    out: list[str] = []
    for speaker in speakers:
        if speaker and not speaker.lower().startswith("the "):
            out.append(f"person-{safe_slug(speaker)}")
    known = {p.lower() for p in people}
    found = [
        (phrase, start, _kind(text, phrase, start, known))
        for phrase, start in _proper_nouns(text, people)
    ]
    for phrase, _, kind in _paired_kinds(text, found):
        out.append(f"{kind}-{safe_slug(phrase)}")
    return tuple(dict.fromkeys(out))[:MAX_ENTITIES]


# The parentheses dates.resolve_relative_dates adds: "(2026-03-01)", "(week of …)",
# "(February 2026)", "(2025)", "(a few weeks before …)".
_ADDED_DATE = re.compile(
    r"\((?:week of |weekend of |[a-z ]+ before )?\d{4}(?:-\d{2}-\d{2})?\)|\([A-Z][a-z]+ \d{4}\)"
)


def statement_tags(text: str, exclude: Iterable[str]) -> tuple[str, ...]:
    """A few keyword slugs: proper nouns, tool names, code-ish terms, numbers with units,
    then the longest remaining content words."""
    skip = {e.lower() for e in exclude} | {w.lower() for w in name_words(exclude)}
    # Dates we added in parentheses are metadata, not topics.
    plain = _ADDED_DATE.sub("", text)
    candidates: list[str] = [p for p, _ in _proper_nouns(plain, exclude)]
    candidates += [m.group(1) for m in _TOOL_OBJECT.finditer(plain)]
    candidates += [m.group(0).strip("`") for m in _CODEISH.finditer(plain)]
    candidates += [m.group(0) for m in _NUMBER_UNIT.finditer(plain) if _is_unit(m)]
    tags: list[str] = []
    for candidate in candidates:
        low = candidate.lower()
        if low in skip or low in STOPWORDS or low in _NOT_ENTITIES:
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
        rest = [w for w in spoken_content_words(plain, ignore=skip) if len(w) >= 5 and w.isalpha()]
        for word in sorted(dict.fromkeys(w.lower() for w in rest), key=lambda w: (-len(w), w)):
            if len(tags) >= MAX_TAGS:
                break
            if word in verbs or word in _NOT_ENTITIES or word in IRREGULAR_PAST:
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
    return unit in _UNITS or (unit.endswith("s") and unit not in STOPWORDS and len(unit) > 3)


def salience_of(text: str, speakers: Iterable[str], chunk_speakers: Iterable[str] = ()) -> float:
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


MAX_TAGS = 5


MAX_ENTITIES = 8


# Besides the function words: very common verbs, adjectives and chat words, and contractions
# as SPOKEN_WORD reads them without their apostrophe: never tags, never "content" on their own.
STOPWORDS = STOP_WORDS | frozenset(
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
PLEASANTRIES = frozenset(
    """
    ok okay k kk thanks thank thx ty you yes yeah yep yup sure no nope lol haha hah hehe lmao
    cool great nice good awesome perfect right alright fine got it noted understood hi hello
    hey bye cya see later cheers welcome np problem sounds makes sense wow oh ah hmm indeed
    agreed exactly true totally absolutely definitely love that so much very really glad
    happy to hear appreciate
    """.split()
)


_PREFERENCE_CUE = re.compile(
    rf"\bi\s+(?:really\s+|absolutely\s+)?(?:prefer|always|never|hate|love|like|enjoy"
    rf"|can{APOSTROPHE}?t\s+stand)\b|\bmy\s+fav(?:ou)?rite\b",
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


def spoken_words(text: str) -> list[str]:
    return SPOKEN_WORD.findall(text)


def spoken_content_words(text: str, ignore: Iterable[str] = ()) -> list[str]:
    skip = {w.lower() for w in ignore}
    out = []
    for word in spoken_words(text):
        low = word.lower().replace("’", "'").replace("'", "")
        if low in STOPWORDS or low in skip or low in PLEASANTRIES or len(low) < 2:
            continue
        out.append(word)
    return out


def is_trivial(text: str, ignore: Iterable[str] = ()) -> bool:
    """Acknowledgements and pleasantries only ("ok thanks", "Yes.", "lol"): no memory."""
    skip = {w.lower() for w in ignore}
    content = [
        w
        for w in spoken_words(text)
        if (low := w.lower().replace("’", "'").replace("'", "")) not in PLEASANTRIES
        and low not in STOPWORDS
        and low not in skip
    ]
    return len(content) < 3
