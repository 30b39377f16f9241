"""Updates: a later statement that changes what an earlier one said about the same subject.

"Sam lives in Berlin" and, a week later, "we moved to Munich" are not a duplicate and not a
contradiction of words: the second *updates* the first, which stops being true. This module
reads, from the words of a statement, the **claims** it makes about its holder and decides
whether a newer statement's claims replace an older one's. The rules, each explainable:

* **A value changed.** Both make a claim about the same *slot* of one holder -- where they
  live, where they work, their role, their relationship, their diet, how many of one kind of
  thing they have, one thing of theirs and what it is ("my main browser is Firefox") -- with
  different values: "lives in Berlin" → "moved to Munich"; "two kids" → "a third kid";
  "single" → "engaged"; "my rent is 900" → "my rent is 1100 now". A slot can change with
  its value unsaid: "new job!", "got promoted", "we moved house", "I retired".
* **It ended.** The newer statement ends something ("left", "quit", "sold", "scrapped",
  "turned down", "came off", "ripped … out", "traded … in", "no longer", "done with it") or
  says it ended ("the Saab died", "the account is closed", "the wrist has healed", "the
  contract ended") and what it ends is what the older statement was about.
* **It was done.** The older statement is a plan or a to-do ("I need to call the bank") and
  the newer one says that work was done or called off ("finally called the bank"): the
  plan's own verb done, or a done-word, to the same thing -- not merely a shared verb.
* **It changed, in general words.** The newer statement says a change ("… now", "not …
  anymore", "switched", "these days", "instead", "went back to", "moved Mia to …") in a
  clause that names what the older statement was about -- a shared word, the same verb said
  of the holder ("I drive a Saab" → "I drive a Kona now"), a value of the same kind
  ("window seat" → "aisle"; "morning runs" → "an evening runner now"; renting → "we own our
  place now"), or someone close to the holder ("my daughter Mia is at Elm" → "we moved Mia
  to Oak"). A change that would replace many statements at once is about a whole topic of
  the holder's, not any one of them, and replaces none (:class:`ClaimBook`).
* **It turned around.** The newer statement likes what the older one disliked, or the
  reverse ("I hate coffee" → "coffee has grown on me"), or changes a decision in so many
  words ("change of plans", "scratch that", "after all", "went with green in the end").
* **Life moved on.** A birth ends a pregnancy, graduating ends studies, a job found ends a
  job search and being out of work.

What keeps a look-alike from counting (a wrong update hides a true memory, so the rules lean
to saying nothing): a different holder ("my sister moved to Munich", "a friend got a job at
…", another speaker); a clause that only wonders, asks or intends ("if we moved…", "should
I…", "I'd give it up", "planning to move…": a plan is a claim of its own, never a change of
state); one that adds ("I like coffee too", "a second laptop"); one set in the past ("back
when I lived in Rome", "had an interview yesterday"); the same value again ("still in
Berlin", "five years vegan now"); a change of a part or a place of the thing, not of the
holder ("my Pixel's battery is dying now", "my phone is on 5% now"); whom a message is said
to ("Thanks, Mel!"); and two events -- "ran a 5k", then "ran a 10k" -- which claim nothing
about a slot.

Everything here is words and rules, no model: deterministic and cheap enough to run on every
fact written (the :class:`ClaimBook` finds earlier statements by holder in a dictionary).
With an LLM configured, consolidation's judge decides the pairs these rules leave alone.
Measured by ``python -m bench.updates_bench`` (held-out pairs, and supersedes in real
conversations with ``--locomo``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import regex

from .words import STOP_WORDS

_I = regex.IGNORECASE
_APOS = "['’]"

# ---------------------------------------------------------------- words


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
_NUM = r"(?:\d+|no|zero|one|a|an|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"


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
    text = regex.sub(r"\b(\p{Lu}{2,})s\b", r"\1", text)  # "GPs" is "GP" more than once
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
    # Short words only: "VS Code" is "vscode", but "side projects" is not "sideprojects".
    stems.update(
        _stem(a + b)
        for a, b in zip(words, words[1:], strict=False)
        if len(a) <= 3 and a in kept and b in kept
    )
    return frozenset(stems)


_NUMERIC = regex.compile(r"\d+(?:st|nd|rd|th|am|pm|s|k)?|\d+[:.]\d+|\d[\d\-/]*")


# ---------------------------------------------------------------- clauses and holders


# A clause that wonders, asks or imagines claims nothing.
_WONDER = regex.compile(
    r"\b(?:if|would|wo?u?ld|might|maybe|perhaps|wonder(?:s|ing)?|whether|could|"
    r"should\s+(?:i|we|you)\b|"
    r"thinking\s+(?:about|of)|considering|in\s+theory|someday|one\s+day|daydream\w*|"
    r"wish(?:es)?|hypothetically|not\s+sure|probably|suppose|supposing|imagine|what\s+if|in\s+another\s+life)\b|(?<!\?)\?(?![?!])|"
    r"^\W*(?:how|what|why|where|who|which|do|does|did|is|are|can|any|anyone)\b[^.!]*\?",
    _I,
)
# "I'd give up surfing": would, unless what was agreed ("we agreed we'd host") or had been
# ("we'd settled on a retriever").
_WOULD = regex.compile(rf"\b(?:i|we|you|he|she|they){_APOS}d\s+(?!\w+ed\b|been\b)", _I)
# A clause that intends: a plan of its own, never a change of state.
_INTENT = regex.compile(
    r"\b(?:planning|plans?\s+(?:is|are|to|for|on)|(?:the|my|our)\s+plan\b|going\s+to|gonna|will|(?:need|needs|have|has)\s+"
    rf"to|gotta|must|should|set\s+on|(?:said|agreed|decided|promised)\s+(?:we|i){_APOS}d|booked\s+(?:\S+\s+){{0,3}}?for|learning\s+to|studying\s+for|preparing\s+for|"
    rf"want(?:s)?\s+to|hop(?:e|es|ing)\s+to|todo|to-do|remind\s+me|promised?|{_APOS}ll|"
    r"supposed\s+to|meant\s+to|due|deadline|decided|decision|settled\s+on|agreed|chose|"
    r"picked|went\s+with|going\s+with|putting\s+off|on\s+my\s+(?:list|plate)|got\s+to|"
    r"(?:is|are)\s+(?:booked|scheduled|planned|set)\s+for|"
    r"by\s+(?:friday|monday|tomorrow|the\s+end)|expecting|"
    rf"(?:is|are|am|{_APOS}re|{_APOS}m)\s+(?:launching|releasing|hosting|moving|starting|"
    r"leaving|switching|getting|hiring|buying|selling|adopting|booking)|interview|applied|"
    r"meaning\s+to|applying|interviewing|hoping\s+for|"
    r"going\s+for|next\s+(?:week|month|year|summer|spring|"
    r"fall|autumn|winter))\b",
    _I,
)
# The work a plan names: the verb after "need to", "gotta", "going to".
_TODO = regex.compile(
    rf"(?:\bto|\bgotta|\bgonna|\bmust|{_APOS}ll|\bwill)\s+(?:\p{{L}}+ly\s+)?(?!be\b)"
    r"(?P<verb>\p{L}{3,})",
    _I,
)
# "Get my tooth fixed": a participle that is the work to do, not work done.
_CAUSATIVE = regex.compile(
    r"\b(?:get|getting|have|having)\s+(?:my|our|the|a|an|it|them|his|her)\s+(?:[\w\-]+\s+){0,2}?"
    r"\p{L}+ed\b",
    _I,
)
# "Had an interview yesterday": an intent word, told of as past; a story, not a plan.
_PAST_TIME = regex.compile(
    r"\b(?:yesterday|last\s+(?:night|week|month|year|\p{L}+day)|\w+\s+ago|earlier\s+today)\b", _I
)
_FUTURE = regex.compile(
    rf"\b(?:going\s+to|gonna|will|{_APOS}ll|plan\w*|need\s+to|have\s+to|want\w*\s+to|"
    r"hop\w+\s+to|next|tomorrow|soon)\b",
    _I,
)


def _TOLD(clause: str) -> bool:
    return _PAST_TIME.search(clause) is not None and _FUTURE.search(clause) is None


# A clause set in the past tells a story; it does not say how things are now.
_PAST = regex.compile(
    r"\b(?:when\s+(?:i|we|he|she|they)\b|back\s+when|back\s+then|as\s+a\s+(?:kid|child|teen"
    r"(?:ager)?|student)|years\s+ago|in\s+(?:college|school|high\s+school|university)|"
    r"at\s+(?:uni|school|college)|my\s+ex\b|growing\s+up|grew\s+up|used\s+to\s+be|"
    r"(?:was|were)\s+born\s+(?:in|and)|originally\s+from|in\s+my\s+(?:teens|twenties|thirties|youth))",
    _I,
)
# A statement of what someone has, uses or is doing: "I use VS Code", "my bank is Barclays".
_HAS = regex.compile(
    rf"\b(?:use|uses|using|have|has|{_APOS}ve\s+got|own|owns|drive|drives|run|runs|write|"
    rf"writes|play|plays|practi[cs]e|practi[cs]es|practi[cs]ing|teach|teaches|is\s+my|"
    rf"are\s+my|my\s+\w+\s+(?:is|are)|goes\s+to|go\s+to|(?<=(?:i{_APOS}m|i\s+am|"
    rf"we{_APOS}re|we\s+are|(?-i:[A-Z])\w+\s+is)\s+)(?:a|an)|(?:i{_APOS}m|i\s+am|we{_APOS}re|"
    rf"we\s+are|[A-Z]\w+\s+is)\s+(?:\w+\s+)?(?:doing|learning|training|teaching|writing|"
    rf"working\s+on|in|on|at|taking|studying|renting))\b",
    _I,
)
# A clause that tells of an event rather than how things stand.
_EVENT = regex.compile(
    r"\b(?:(?!(?:married|engaged|divorced|separated|retired|based|called|named|interested|"
    r"obsessed|excited|tired|supposed|located|employed|qualified|vaccinated|allergic)\b)\w{3,}ed|"
    r"went|had|was|were|got|did|saw|ran|made|took|came|met|bought|sold|left|"
    r"told|said|found|lost|won|ate|drank|gave|began|spent|tried|yesterday|tonight|today|ago)\b",
    _I,
)
# "Too" that adds ("I like coffee too"), not one that says how much ("too pricey").
_TOO = (
    r"too(?=\s*(?:$|[^\p{L}\s]|\s+(?:now|lol|honestly|haha|btw|tbh|though|tho|actually|"
    r"these|lately|then|at|in|on|for|with|and|but|so)\b))"
)
_ADDITIVE = regex.compile(
    rf"\b(?:{_TOO}|also|as\s+well|another|in\s+addition|besides|on\s+the\s+side|on\s+top\s+of)\b",
    _I,
)
# "handed the team over to another coach" ends something; "I also quit X" adds an ending.
_ADDS_TO = regex.compile(rf"\b(?:{_TOO}|also|as\s+well|on\s+top\s+of|in\s+addition)\b", _I)
_STILL = regex.compile(r"\b(?:still|as\s+usual|as\s+always|yep|same\s+as)\b", _I)

# Who a clause is about, when it is not the speaker: "my sister", "my husband", "Ren".
_PEOPLE = (
    r"(?:sister|brother|mom|mum|mother|dad|father|husband|wife|partner|boyfriend|girlfriend|"
    r"son|daughter|kid|friend|coworker|co-worker|colleague|boss|manager|roommate|flatmate|"
    r"neighbou?r|cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|fianc[ée]e?|"
    r"ex|parents?|in-laws|niece|nephew|teammate)"
)
_OTHER_PERSON = regex.compile(
    rf"\b(?:my|our|his|her|their|\w+{_APOS}s)\s+(?:(?:older|younger|little|big|best|new|old)\s+)?"
    rf"{_PEOPLE}\b|\b(?:a|one\s+of\s+my|some)\s+(?:\w+\s+)?(?:friend|mate|colleague|coworker|"
    r"co-worker|neighbou?r|guy|girl|woman|man|person)\b|^\W*(?:someone|somebody|everyone|"
    r"everybody|nobody|no\s+one|people|all\s+my\s+friends)\b",
    _I,
)


# The end of a sentence, not of "Dr." or "St." before a name.
_STOP = r"(?<=[.!?;])(?<!\b(?:[Dd]r|[Mm]rs?|[Mm]s|[Ss]t|[Pp]rof|etc|vs|approx)\.)"


def _clauses(text: str) -> Iterator[str]:
    """A statement's clauses: a "?" or an "if" in one does not cancel the plain one beside it."""
    breaks = rf"{_STOP}\s+|\s+(?:but|so|and then|though)\s+|,\s+|\s+[—–]\s+"
    for part in regex.split(breaks, text):
        if part.strip():
            yield part.strip()


_SUBJECT_END = regex.compile(
    rf"\b(?:\w+ing|\w+ed|is|are|am|was|were|has|have|had|got|lives?|works?|went|left|quit|"
    rf"took|made|sold|bought|married|teach(?:es)?|ride|rides|drive|drives|keep|keeps)\b|"
    rf"{_APOS}(?:m|re|ve)\b",
    _I,
)
_WITH_SELF = regex.compile(rf"\b(?:and\s+i|and\s+me|we|i|i{_APOS}m)\b", _I)


def _is_other(clause: str, holder: str) -> bool:
    """Whether the clause's subject is someone other than the speaker ("my sister moved"),
    not the speaker with someone ("my husband and I", "Dana's husband and Dana")."""
    end = _SUBJECT_END.search(clause)
    subject = clause[: end.start()] if end else clause
    if _WITH_SELF.search(subject):
        return False
    if holder and regex.match(rf"\s*{regex.escape(holder)}\b(?!{_APOS})", clause, flags=_I):
        return False  # "Dana coaches Dana's nephew's team": Dana's, not the nephew's
    if holder and regex.search(rf"\band\s+{regex.escape(holder)}\b", subject, flags=_I):
        return False
    return _OTHER_PERSON.search(subject) is not None


# ---------------------------------------------------------------- claims


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing a statement says: ``slot`` holds ``value``, or no longer does (``ended``)."""

    holder: str
    slot: str  # residence, employer, role, relationship, diet, count:<noun>, plan, done,
    #            ended, like, dislike, change, has
    value: frozenset[str]
    ended: bool = False
    number: int | None = None
    # What an ending is of, when its words say more than that ("our old car seat"): the
    # last word, or a name in it -- "car seat" does not end "my car", "the Denver house"
    # ends "we live in Denver".
    core: frozenset[str] = frozenset()
    said: str = field(default="", compare=False)  # the words as written, for reasons

    @property
    def key(self) -> str:
        return self.holder


_VALUE = r"(?P<v>[^,.;:!?()]{1,60}?)"
_END = (
    r"(?=\s*(?:$|[,.;:!?()]|\s(?:and|but|so|because|since|for|with|by|as|at|last|next|this|"
    r"after|before|until|now|again|anymore|yet|though|ago|instead|while|when|which|who|where|"
    r"these|up|near|to|on)\b))"
)
_A = r"(?:(?:the|a|an|my|our|his|her|their|some|this)\s+)?"


def _slot_rule(verbs: str) -> regex.Pattern[str]:
    return regex.compile(rf"\b(?:{verbs})\s+{_A}{_VALUE}{_END}", _I)


_TEMPORARY = regex.compile(
    r"\b(?:this\s+week|for\s+(?:work|a\s+conference|the\s+weekend|a\s+few\s+days)|visiting|"
    r"trip|vacation|holiday|on\s+a\s+(?:trip|visit)|layover|meeting|hotel|airport|"
    r"conference|tonight|today)\b",
    _I,
)
_PLACE = (
    r"(?!(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Christmas|Easter)\b)"
    r"(?P<v>(?-i:[A-Z][\p{L}\-]+)(?:\s+(?-i:[A-Z][\p{L}\-]+))?)(?![\p{L}'’])"
)
_RESIDENCE_RULES = (
    regex.compile(
        rf"\b(?:live[sd]?|living|moved(?:\s+back)?|move|relocated|relocating|emigrated|shifted|"
        rf"based(?:\s+out)?|"
        rf"settled(?:\s+down)?|(?:flat|apartment|house|place|home|condo|room|\d-bed|bedroom|"
        rf"studio|bungalow|cottage|terrace|semi)|home\s+(?:for\s+(?:me|us)\s+)?is|"
        rf"staying|crashing|raised|up|down|out|over)\s+(?:[\w'’\-]+\s+){{0,3}}?"
        rf"(?:in|to|at|into|outside|near|of)\s+(?:(?:central|north|south|east|west|downtown|"
        rf"inner|greater|outer)\s+)?{_PLACE}",
        _I,
    ),
    regex.compile(rf"\bhome\s+is\s+{_PLACE}|{_PLACE}\s+is\s+(?:now\s+)?home\b", _I),
    regex.compile(rf"{_PLACE}-based\b", _I),
    regex.compile(
        r"\b(?:live[sd]?|living)\s+(?:out\s+)?in\s+the\s+(?P<v>countryside|suburbs|city|"
        r"village|mountains|coast|country)\b",
        _I,
    ),
    regex.compile(
        rf"\b(?:i{_APOS}m|i\s+am|we{_APOS}re|we\s+are|[A-Z]\w+\s+is|\w+{_APOS}s\s+family\s+is|"
        rf"(?:i|we|[A-Z]\w+){_APOS}ve\s+been|(?:i|we)\s+have\s+been|[A-Z]\w+\s+has\s+been)"
        rf"\s+(?:now\s+|still\s+|currently\s+|back\s+|down\s+|up\s+|out\s+|over\s+)?"
        rf"(?:in|based\s+in)\s+{_PLACE}",
        _I,
    ),
    # "we're in a proper house now", "I'm in a studio flat"
    regex.compile(
        rf"\b(?:i{_APOS}m|i\s+am|we{_APOS}re|we\s+are)\s+(?:now\s+)?in\s+(?:a|an|our|my)\s+"
        r"(?:[\w\-]+\s+){0,2}?(?P<v>house|flat|apartment|bungalow|cottage|studio|houseboat|"
        r"dorm|halls|hostel|terrace|condo)\b",
        _I,
    ),
    regex.compile(rf"\bin\s+{_PLACE}\s+now\b", _I),
    # "living at my parents' place", "staying with my sister"
    regex.compile(
        r"\b(?:live|lives|living|staying|crashing)\s+(?:at|with|in)\s+(?P<v>(?:my|our|a|an)\s+"
        r"[^,.;:!?()]{1,30}?)(?=\s*(?:$|[,.;:!?()]|\s(?:for|since|until|till|now|and|but|so)\b))",
        _I,
    ),
)
_EMPLOYER_RULES = (
    _slot_rule(
        r"works?\s+(?:at|for)|working\s+(?:at|for)|employer\s+is|employed\s+(?:at|by)|"
        rf"(?:i{_APOS}m|i\s+am|is)\s+(?:now\s+)?at|(?:been|be)\s+at|"
        r"joined(?=\s+(?:the\s+)?(?-i:[A-Z])|\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}"
        r"(?:company|firm|startup|consultancy|agency|bank|school|hospital|clinic|lab|studio|"
        r"practice|fintech|nonprofit|charity)\b)|"
        r"start(?:s|ed)?\s+at|"
        rf"job\s+at|(?:i{_APOS}ve|has)\s+moved\s+to|now\s+at|teach(?:es)?\s+at|"
        rf"(?:contractor|consultant|accountant|accounting|volunteer)\s+for|team\s+at|"
        rf"(?:i{_APOS}m|i\s+am)\s+with"
    ),
)
_ROLE_WORDS = (
    r"(?:developer|dev|engineer|nurse|teacher|manager|lead|director|student|designer|analyst|"
    r"scientist|intern|consultant|principal|professor|doctor|dr|officer|assistant|associate|"
    r"architect|pm|chef|cook|clerk|accountant|lawyer|editor|writer|researcher|postdoc|"
    r"technician|administrator|admin|supervisor|coordinator|specialist|head|founder|ceo|cto|"
    r"vp|owner|partner|worker|ic|contractor|treasurer|chair|chairperson|secretary|president|"
    r"coach|sdet|trainee|apprentice|captain|freelancer|resident|fellow|librarian|barista|"
    r"cashier|driver|pilot|paramedic|firefighter|therapist|pharmacist|dentist|vet|mechanic|"
    r"electrician|plumber|programmer|tester|qa|sre|devops|recruiter|salesperson|rep|agent|"
    r"candidate|receptionist|cleaner|carer|caregiver|nanny|tutor|lecturer|surgeon|midwife|"
    r"solicitor|barrister|journalist|photographer|artist|musician|actor|baker|butcher|farmer|"
    r"gardener|builder|carpenter|decorator|waiter|waitress|bartender|server|courier|porter|"
    r"guard|soldier|paralegal|auditor|economist|statistician|chemist|biologist|physicist|"
    r"translator|interpreter|copywriter|marketer|strategist|planner|producer|animator|"
    r"illustrator|dietitian|physio|physiotherapist|optician|radiographer|headteacher|dean|"
    r"ta|ra|tutor|volunteer|leader|member|employee)"
)
_ROLE_RULES = (
    regex.compile(
        rf"(?:^|\b(?:i{_APOS}m|i\s+am|[A-Z]\w+\s+is|works?\s+as|working\s+as|promoted\s+to|"
        rf"made(?:\s+(?:me|him|her|(?-i:[A-Z])\w+))?|became|(?:bumped|moved|stepped)\s+up\s+(?:to|as)|role\s+is|title\s+is|(?:new\s+)?(?:role|"
        rf"job|position)\s+as|back\s+to\s+being|now|currently|as|into|(?:title|role|position)\s+"
        rf"(?:changed\s+to|is\s+now)))\s+(?:now\s+)?(?:(?:a|an|the)\s+)?"
        rf"(?P<v>(?:[\p{{L}}\-'’]+\s+){{0,3}}?{_ROLE_WORDS}s?)\b",
        _I,
    ),
)
_MOVED_UP = regex.compile(
    r"\b(?:promoted|made|became|bumped\s+up|moved\s+up|stepped\s+up|qualified)\b", _I
)
# A job said with its verb: "I teach 5th grade" is a teacher's role.
_ROLE_VERBS = regex.compile(
    r"\b(?:[Ii]|[A-Z]\w+)\s+(?P<verb>teach(?:es)?|coach(?:es)?|nurse[sd]?|manage[sd]?)\b(?!\s+to\b)"
)
_ROLE_OF_VERB = {"teach": "teacher", "coach": "coach", "nurse": "nurse", "manag": "manager"}
_PARTNERS = r"boyfriend|girlfriend|wife|husband|fianc[ée]e?"
_RELATIONSHIP = (
    (
        "single",
        r"single|on\s+my\s+own|broke\s+up|split\s+up|separated|separating|divorced|divorcing|"
        r"(?:going\s+through|getting)\s+a\s+divorce|"
        rf"(?:and\s+i|and\s+me)\s+(?:are|{_APOS}re)\s+(?:done|over|finished)\b|"
        r"called\s+it\s+quits|parted\s+ways|went\s+our\s+separate\s+ways|ended\s+things|"
        r"(?:no\s+longer|not)\s+together",
    ),
    ("widowed", r"widowed|widow|widower"),
    (
        "dating",
        r"dating|seeing\s+(?:someone|a\s+\w+)|boyfriend|girlfriend|together\s+\d+|"
        r"been\s+together|(?:live|living)\s+together|moved\s+in\s+together|in\s+a\s+relationship|"
        r"back\s+together",
    ),
    ("engaged", r"engaged|fianc[ée]e?|proposed"),
    (
        "married",
        r"married|remarried|eloped|tied\s+the\s+knot|got\s+hitched|wedding\s+was|honeymoon|my\s+(?:wife|husband)\b",
    ),
)
_DIET = (
    ("vegan", r"vegan"),
    ("vegetarian", rf"vegetarian|(?:do|does)(?:n{_APOS}?t|\s+not)\s+eat\s+meat|no\s+meat"),
    ("pescatarian", r"pescatarian|eat(?:ing)?\s+fish"),
    ("omnivore", r"eat(?:ing|s)?\s+meat(?:\s+again)?|eating\s+meat"),
)
_COUNT_RULES = (
    # "managing a team of six"
    regex.compile(
        rf"\b(?P<noun>team|staff|class|band|crew|household)\s+of\s+(?:about\s+|around\s+)?"
        rf"(?P<n>{_NUM})\b",
        _I,
    ),
    # "a four-piece now": the members of a band
    regex.compile(rf"\b(?P<n>{_NUM})-piece\s+(?:band\s+)?(?P<noun>now)\b", _I),
    regex.compile(
        rf"\b(?:have|has|had|got|own|owns|with|down\s+to|up\s+to|crossed|now|just|only)\s+"
        rf"(?:(?:about|around|roughly|like|the|just|only|exactly)\s+)*(?P<n>{_NUM})\s+"
        rf"(?:\w+\s+)?(?P<noun>[\p{{L}}]+)",
        _I,
    ),
    regex.compile(
        rf"\b(?P<n>{_NUM})\s+(?P<noun>kids|children|cats|dogs|cars|employees|people|"
        r"engineers|reports|pets)\s+now\b",
        _I,
    ),
    regex.compile(
        rf"\b(?P<noun>team|company|startup|department|group|class)(?:\s+(?:is|has|"
        rf"grew\s+to|went\s+(?:up|down)\s+to|(?:is|are)\s+(?:now\s+)?(?:down|up)\s+to)|"
        rf"{_APOS}s\s+(?:now\s+)?(?:down|up)\s+to)\s+(?:about\s+|around\s+)?(?P<n>{_NUM})\b",
        _I,
    ),
    regex.compile(rf"\b(?P<n>{_NUM})\s+of\s+(?P<noun>us)\b", _I),
    # "our second was born": the count of children it makes
    regex.compile(
        r"\b(?:our|my)\s+(?P<n>second|third|fourth|fifth)\s+(?:(?P<noun>baby|child|kid)\s+)?"
        r"(?:was\s+born|arrived|is\s+here)\b",
        _I,
    ),
    # "a third cat": the count it makes
    regex.compile(
        r"\b(?:a|our|my)\s+(?P<n>second|third|fourth|fifth|sixth)\s+(?:[\w\-]+\s+)?"
        r"(?P<noun>cat|dog|kid|child|baby|car|pet)\b",
        _I,
    ),
    # "a one-car family", "a two-dog household"
    regex.compile(
        rf"\b(?P<n>{_NUM})-(?P<noun>car|dog|cat|kid|child)\s+(?:family|household|home)\b", _I
    ),
    # "baby number three", "a four-piece (band)"
    regex.compile(rf"\b(?P<noun>baby|kid|child)\s+(?:number|no\.?|#)\s*(?P<n>{_NUM})\b", _I),
    regex.compile(
        rf"\b(?P<noun>reports|kids|employees|team)\s+went\s+(?:up|down)\s+to\s+"
        rf"(?P<n>{_NUM})\b",
        _I,
    ),
)
SOME = -1  # "we bought a car": at least one, after none
FEWER = -2  # "we lost our old dog": one fewer than before
_LOST_ONE = regex.compile(
    r"\bone\s+of\s+(?:our|my|the)\s+(?:\p{L}+\s+)?(?P<noun>\p{L}+?)s\s+(?:has\s+|have\s+)?"
    r"(?:passed\s+away|died|ran\s+away|got\s+(?:stolen|nicked|taken))\b|"
    r"\b(?:lost|killed|took|put\s+down|buried|rehomed|gave\s+away|sold)\s+(?:one\s+of\s+(?:our|my|the)\s+"
    r"(?:\p{L}+\s+)?(?P<noun>\p{L}+?)s\b|(?:our|my|the)\s+(?:old\s+|oldest\s+|youngest\s+)?"
    r"(?P<noun>cat|dog|pet|car|bike|chicken|hen|horse)\b)",
    _I,
)
_NONE_OF = regex.compile(
    rf"\b(?:do(?:n{_APOS}t|\s+not)|does(?:n{_APOS}t|\s+not))\s+(?:have|own)\s+(?:a|an|any)\s+"
    r"(?P<noun>[\p{L}]+)",
    _I,
)
_ACQUIRED = regex.compile(
    r"\b(?:bought|adopted|got)\s+(?:a|an|our\s+first|my\s+first)\s+(?:[\w-]+\s+)?(?P<noun>car|"
    r"house|dog|cat|bike|home|flat|apartment|puppy|kitten)\b",
    _I,
)
# A count said of how things stand now, not of an event ("had 2 beers").
_STATE_NOW = regex.compile(
    rf"\b(?:now|is|are|have|has|makes|left|total|down\s+to|up\s+to|going\s+forward|runs|"
    rf"keeps?|employs?|with)\b|"
    rf"{_APOS}(?:s|re|ve)\b",
    _I,
)
_MANY = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ANY_COUNT = regex.compile(
    rf"\b(?P<n>\d+|{_MANY})\s+(?P<after>[\p{{L}}\-']+(?:\s+[\p{{L}}\-']+)?)|"
    rf"\b(?P<noun>staff|household|team|family|crew|class|band|group)\s+of\s+(?P<n>\d+|{_NUM})\b",
    _I,
)
_UNITS = frozenset(
    """
    years year months month weeks week days day hours hour minutes minute times time miles
    mile km kilometers kilometres k cups cup percent dollars euros pounds bucks kg kilos lbs
    pounds grams meters metres feet inches episodes pages words chapters lessons sessions
    reps sets laps rounds goals points games matches shots drinks beers glasses coffees
    tries attempts nights ago more less other others things ones am pm
    """.split()
)
# Nouns counted as one kind: "two kids" and "baby number three … three kids now".
_COUNT_KIND = {
    "kid": "kid", "kids": "kid", "child": "kid", "children": "kid", "son": "kid", "sons": "kid",
    "daughter": "kid", "daughters": "kid", "baby": "kid", "babies": "kid",
    "employee": "people", "employees": "people", "people": "people", "engineer": "people",
    "engineers": "people", "team": "people", "company": "people", "staff": "people",
    "us": "people", "person": "people", "members": "people", "analysts": "people",
    "household": "people", "grandchildren": "grandkid", "grandkids": "grandkid",
    "cat": "cat", "cats": "cat", "dog": "dog", "dogs": "dog", "car": "car", "cars": "car",
    "report": "report", "reports": "report", "pet": "pet", "pets": "pet",
    "member": "people", "now": "people",  # "a four-piece now"
}  # fmt: skip

# Cues that end what follows them ("left Shopify", "scrapped React", "bye comcast").
_ENDING = regex.compile(
    r"\b(?:left|leaving\s+(?!for\b)|quit|quitting|dropped(?:\s+out\s+of)?|ditched|scrapped|"
    r"turned\s+down|accepted\s+an\s+offer\s+(?:on|for)|f[ae]ll(?:ing)?\s+out\s+with|"
    rf"(?:(?<=\b(?:finally|mostly|fully|just|now|i{_APOS}m|i\s+am)\s+)|^)(?:over|off)(?=\s+(?:the|my)\s)|"
    r"paid\s+off|"
    r"changed(?=\s+(?:my|our)\s+(?!minds?\b))|cut\s+out|(?:came|come|coming|got|getting|weaned)\s+"
    r"off|gave\s+away|donated|rehomed|recovered\s+from|got\s+over|"
    r"cancell?ed|called\s+off|sold|selling|traded\s+in|closed|shelved|gave\s+up(?:\s+on)?|"
    r"given\s+up(?:\s+on)?|stopped|moved\s+(?:off|out\s+of|away\s+from)|moving\s+off|"
    r"switched\s+(?:away\s+)?from|got\s+rid\s+of|stepped\s+down\s+(?:as|from)|"
    r"said\s+(?:good)?bye\s+to|bye(?=\s+(?-i:[a-z]))|"
    r"laid\s+off\s+(?:from|at|by)|last\s+day\s+at|fired\s+from|broke\s+up\s+with|"
    r"split\s+(?:up\s+)?with|retired\s+from|discharged\s+from|no\s+longer(?:\s+\w+)?|"
    r"not\s+going\s+back\s+to|done\s+with|finished\s+with|over\s+with|moved\s+on\s+from|"
    r"no\s+more|ended(?!\s+up)|un-?subscribed\s+from|deleted|uninstalled|replaced|withdrew|"
    r"backed\s+out\s+of|pulled\s+out\s+of|wiped|cancel|gave\s+up|handed\s+in\s+\S+\s+notice\s+"
    r"(?:at|to)|not\s+touching|handed|decommissioned|got\s+out\s+of|sold\s+off|"
    rf"(?:haven{_APOS}?t|have\s+not)\s+touched|(?:do|does)(?:n{_APOS}?t|\s+not)\s+(?:work|live)\s+"
    r"(?:at|in|for)|(?:switched|changed)(?=\s+[\p{L}]+s\b))\s+" + _A + r"(?P<v>"
    r"[^,.;:!?()]{1,50}?)(?=\s*(?:$|[,.;:!?()]|\s(?:and|but|so|because|since|for|after|into|from|"
    r"last|this|yesterday|today|in|on|at|to|with|again|over|now|anymore)\b))",
    _I,
)
# The same, with what ends first: "Flutter is out", "the S9 finally died", "crutches are gone".
_ENDED_SUBJECT = regex.compile(
    r"(?:^|[,.;:!?]\s*|\b(?:the|my|our)\s+)(?P<v>[\p{L}\p{N}][\p{L}\p{N}'’\-]*"
    r"(?:\s+[\p{L}\p{N}][\p{L}\p{N}'’\-]*){0,2})\s+"
    rf"(?:(?:is|are|has\s+been|got|{_APOS}s)\s+(?:finally\s+|officially\s+|now\s+|\p{{L}}+ly\s+|"
    r"all\s+)?"
    r"(?:out|gone|over|dead|history|cancell?ed|off\s+the\s+table|for\s+sale|no\s+more|closed|"
    r"retired|healed|approved|granted|fixed|sorted|resolved|switched\s+off|shut\s+down|off|"
    r"written\s+off|totall?ed|wrecked|stolen|scrapped|good\s+now|fine\s+now|better\s+now|"
    r"back\s+to\s+normal)|"
    r"(?:has\s+|have\s+)?(?:finally\s+)?(?:died|got\s+stolen|was\s+stolen|broke\s+down|healed|"
    r"ended|expired|fell\s+through|finished|complete|completed|passed\s+away|came\s+off|wrapped\s+up|shut\s+down|closed\s+down|went\s+bust|"
    r"folded|went\s+under))"
    r"(?=\s*(?:$|[,.;:!?(]|\s(?:and|but|so|because|now|today|yesterday|finally|at\s+last|"
    r"this\s+\w+|last\s+\w+|in|at|on|after|during|with)\b|\s*[^\p{L}\p{N}\s]))",
    _I,
)
# Cues that the work of a plan was done or called off, wherever they stand in the clause.
_DONE = regex.compile(
    r"\b(?:finished|completed|done|submitted|shipped|sent|delivered|handed\s+in|turned\s+in|"
    r"went\s+in|achieved|booked(?!\s+(?:\S+\s+){0,3}?for\b)|ordered|installed|repaired|set\s+up|picked\s+up|returned|"
    r"filed|published|launched|released|wrapped\s+up|went\s+live|is\s+live|migrated|renewed|"
    rf"paid(?:\s+off)?|cancell?ed|called\s+off|scrapped|is\s+off|{_APOS}s\s+off|"
    rf"didn{_APOS}?t\s+end\s+up|not\s+happening|defended|passed|signed|got\s+back|arrived|"
    r"sorted|fixed|postponed\s+indefinitely|went\s+out|went\s+(?:really\s+)?well|"
    r"cancel|had\s+(?:his|her|their)|"
    # "kitchen's painted", "the tap is fixed": done, said of the work itself
    rf"(?:is|{_APOS}s|are|was|were)\s+(?:been\s+)?(?:all\s+|finally\s+|now\s+)?(?:[a-z]+ed|done)(?=\W|$)"
    r"(?!\s+(?:for|to|until|till)\b)"  # "is booked for February" is still to come
    r"(?!\s+(?:me|us|him|her|them|you)\b))\b",
    _I,
)
# A past verb of the holder's: first in its clause ("finally called the bank") or right after
# them ("I called the bank") -- not "they helped me".
_PAST_VERB = regex.compile(
    rf"(?:^|\b(?:i|we|(?-i:[A-Z])\w+)\s+)(?:(?:finally|just|already|actually|also)\s+)?"
    rf"(?P<verb>\p{{L}}{{3,}}ed|{'|'.join(_LEMMA)})\b(?!\s+(?:to|by|\p{{L}}+ed|\p{{L}}+en)\b)",
    _I,
)
# Words that say only that something was done, whatever it was.
_DONE_WORDS = frozenset(
    """finished completed done submitted shipped sent delivered handed turned filed published
    launched released wrapped went live passed signed sorted fixed arrived got achieved""".split()
)
# A decision changed in so many words.
# Said of a decision, these change it even when they share one word with it.
_STRONG_CHANGE = regex.compile(
    r"\b(?:change\s+of\s+plans?|scratch\s+that|after\s+all|flipped\s+it|changed\s+(?:\S+\s+){0,3}?"
    r"minds?|backed\s+out|instead|swapped|decided\s+against|on\s+second\s+thoughts?|"
    r"reconsidered|rethought|not\s+going\s+ahead|in\s+the\s+end(?!\s+of)|postponed|"
    r"rescheduled|delayed|brought\s+forward|pushed\s+(?:the|our|my|it)\b(?:\s+\S+){0,3}?\s+"
    r"(?:back|to))\b",
    _I,
)
_CHOICE = regex.compile(
    r"\b(?:(?:went|going|gone)\s+with|chose|picked|opted|decided|settled|turned\s+down|"
    r"ended\s+up|bought|booked|switched|swapped|changed|moved)\b",
    _I,
)
_CHANGE = regex.compile(
    r"\b(?:change\s+of\s+plans?|scratch\s+that|after\s+all|flipped\s+it|changed\s+(?:our|my)\s+"
    r"minds?|instead|ended\s+up|switched\s+to|moved\s+(?:over\s+)?to|moved\s+to|going\s+with|"
    r"went\s+with|now\s+(?:going|using|use)|is\s+going\s+to\s+be|will\s+be\s+(?:at|in)|"
    r"no\s+longer|anymore|converted)\b",
    _I,
)
_LIKE = regex.compile(
    rf"\b(?:(?:now\s+)?(?:love|loves|loving|like|likes|prefer|prefers|enjoy|enjoys|enjoying)|(?<=(?:{_APOS}m|{_APOS}re|"
    rf"\bam|\bare|\bis|really|so|totally|very|big|getting|got|been)\s+)into|fan\s+of|"
    rf"(?:i{_APOS}m|i\s+am|[A-Z]\w+\s+is)\s+an?\s+(?P<lv>\w+)\s+(?:drinker|person|fan|lover|"
    rf"convert))\s+(?:the\s+)?(?P<v>[^,.;:!?()]{{1,40}}?)(?=\s*(?:$|[,.;:!?()]|\s(?:now|and|"
    rf"but|so|more|over|than|these)\b))",
    _I,
)
# "Jazz has grown on me", "running has clicked for me", "hooked on padel": liked now.
_GROWN_ON = regex.compile(
    r"(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)\s+(?:has|have|is|are|{_APOS}s)?\s*(?:really\s+|kind\s+of\s+)?"
    r"(?:(?:grown|growing|grew)\s+on|clicked\s+(?:for|with)|won)\s+(?:me|us|him|her)\b|"
    r"\b(?:hooked\s+on|obsessed\s+with|addicted\s+to)\s+(?:the\s+)?(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)".replace(
        "{_APOS}", _APOS
    ),
    _I,
)
_DISLIKE = regex.compile(
    rf"\b(?:hate|hates|dislike|dislikes|(?:do|does)(?:n{_APOS}t|\s+not)\s+(?:really\s+)?like|"
    rf"can{_APOS}?t\s+stand|(?:gone|went)\s+off|not\s+a\s+fan\s+of|sick\s+of|tired\s+of)\s+"
    rf"(?:the\s+)?(?P<v>[^,.;:!?()]{{1,40}}?)(?=\s*(?:$|[,.;:!?()]|\s(?:and|but|so|anymore|"
    rf"lately|now|these)\b))",
    _I,
)


# ---------------------------------------------------------------- a change in general words

# Words that say how things stand has changed, whatever it is about: "… now", "not …
# anymore", "switched", "these days", "instead", "became", "in the end". Alone they say
# nothing of what changed; said beside a word of an earlier statement of the same person
# ("the Saab died, a Kona is our car now" after "we drive a Saab") they replace it. A "now"
# that ends a length of time ("three years now") or means "at the moment" says no change.
# "Now" as a state's word: after a verb of being ("I'm now at Acme") or closing what is said
# ("a Kona is our car now"); not "now I get to…", "now that…", "three years now", "right now".
_NOW = (
    r"(?<!\b\p{L}+ing\s+)(?<!\b(?:right|just|for|by|until|till|ages|while|long)\s+)"
    r"(?<!\b(?:\d+|a\s+few|few|several|many|couple(?:\s+of)?|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|twenty|thirty)\s+(?:years?|months?|weeks?|days?|decades?)\s+)"
    r"(?<!\b(?:a|one)\s+(?:year|month|week|decade)\s+)"
    rf"(?:(?<=(?:\b(?:is|are|am|be|been)|{_APOS}(?:s|m|re))\s+)now\b|(?<=\w\S*\s+)now"
    r"(?=\s*(?:$|[,.;:!?)]|\s(?:and|but|so|lol|haha|tbh|honestly|though|instead)\b|\s+[^\p{L}\s])))"
)
_SHIFT = regex.compile(
    r"\b(?:anymore|any\s+more|no\s+longer|instead|nowadays|these\s+days|from\s+now\s+on|"
    r"as\s+of|switched|swapped|changed\s+(?:to|over|(?:my|our)\s+minds?)|upgraded|downgraded|"
    r"replaced|transferred|converted|"
    r"became|become|turned\s+into|(?:gone|went)\s+off|(?:come|came)\s+a?round\s+(?:on|to)|"
    r"caved|after\s+all|ended\s+up|turns\s+out|moved\s+(?:over|everything|"
    r"all|on)|(?:moved|switched|transferred)\s+(?!(?:to|into|in|out|on|over|back|up|down)\b)"
    r"(?:[\w'’\-]+,?\s+){1,3}?(?:to|into)|back\s+in\s+touch|talking\s+again|"
    r"(?:gone|went|going|switched)\s+back\s+to|since\s+(?:the\s+(?:move|change|switch)|moving)|"
    r"new\s+(?:[\w\-]+\s+)?(?:phone|laptop|computer|car|bike|job|role|position|boss|manager|"
    r"team|number|email|address|flat|apartment|house|place|school|doctor|gp|dentist|bank|"
    r"provider|landlord|editor|browser))\b|" + _NOW,
    _I,
)
# Said of the statement as a whole, these keep a change word from replacing anything: it adds
# ("… too"), it confirms ("still …"), it is for a while ("on a work trip").
_NOT_A_SHIFT = regex.compile(
    rf"\b(?:{_TOO}|also|as\s+well|alongside|on\s+top\s+of|in\s+addition|still|remains?|"
    r"second|spare|extra|backup|personal|another|"
    r"as\s+usual|as\s+always|for\s+the\s+(?:week|weekend|day|night)|trip|visiting)\b",
    _I,
)


# Whom a message is said to ("Thanks, Mel!", "Hey Caroline,"): not what it is about.
_VOCATIVE = regex.compile(
    r"(?:\b(?:hey|hi|hello|thanks|thank\s+you|congrats|yeah|yes|wow|oh|sure|aw+|ok|okay|"
    r"so|sorry|good\s+(?:morning|night|luck))\W{0,3}\s*(?-i:\p{Lu}\p{L}+)\b|"
    r",\s*(?-i:\p{Lu}\p{L}+)(?=\s*[!?.]))",
    _I,
)
# "Thankfully", "honestly": how something is said, not what it is about.
_ADVERB = regex.compile(
    r"\b(?!(?:family|supply|assembly|italy|july|rally|belly|jelly|reply|bully|daily|early|"
    r"only|holy|ugly)\b)\p{L}{3,}ly\b",
    _I,
)
# A name inside a sentence (not its first word): "Firefox", "St Columba's".
_NAME = regex.compile(r"(?<=\p{L}[,;:]?\s+)(?-i:\p{Lu}[\p{L}\p{N}'’\-]+)")
_SENTENCE = regex.compile(rf"{_STOP.replace(';', '')}\s+")


def _theirs(clause: str, holder: str, *, changed: bool = False) -> Iterator[Claim]:
    """What a clause says of someone close to the holder ("my daughter Zinnia is at
    Harbourside"): the holder's to change ("we moved Zinnia to Elmhurst"), if said of the
    same person -- ``core`` holds who they are (the kin words and names of the subject)."""
    end = _SUBJECT_END.search(clause)
    subject = clause[: end.start()] if end else clause
    own = rf"(?:my|our|{regex.escape(holder)}{_APOS}s)"
    if not regex.search(rf"\b{own}\s+(?:[\w\-]+\s+){{0,2}}?{_PEOPLE}\b", subject, flags=_I):
        return
    who = {_stem(w) for w in regex.findall(rf"\b{_PEOPLE}\b", subject, flags=_I)}
    who.update(_stem(n) for n in _NAME.findall(subject) if n.casefold() != holder)
    value = salient(clause, holder.split()) | _numbers(clause)
    yield Claim(holder, "theirs", value, core=frozenset(who), said=clause)
    for m in _ENDING.finditer(clause):  # "my daughter gave up violin"
        ended = salient(m.group("v"), holder.split())
        if ended and not _negated(clause, m.start()):
            yield Claim(holder, "their end", ended, core=frozenset(who), said=clause)
    if changed and (_SHIFT.search(clause) or _THEIR_MOVE.search(clause)):
        # "my son started at Hillcrest": what was said of him before is no longer so
        yield Claim(holder, "their change", value, core=frozenset(who), said=clause)


_THEIR_MOVE = regex.compile(
    r"\b(?:start(?:ed|s)\s+(?:at|in)|mov(?:ed|es)\s+(?:to|into)|switched\s+to|transferred\s+to|"
    r"changed\s+(?:schools?|jobs?|teams?))\b",
    _I,
)


def _nouns(phrase: str) -> frozenset[str]:
    """The stems of a short phrase's words, general ones included ("job")."""
    return frozenset(_stem(w) for w in _WORD.findall(phrase) if w.casefold() not in STOP_WORDS)


def _numbers(text: str) -> frozenset[str]:
    """The numbers a text says, in digits ("three days" → "3")."""
    found = set(regex.findall(r"\d+", text))
    for word in _WORD.findall(text.casefold()):
        if word in _NUMBER and word not in ("a", "an", "no", "just", "single", "couple"):
            found.add(str(_NUMBER[word]))
    return frozenset(found)


def _sentences_with(text: str, clause: str) -> list[str]:
    """The sentences of ``text`` that hold ``clause``."""
    return [s for s in _SENTENCE.split(text) if clause in s] or [clause]


def claims(text: str, holder: str = "") -> tuple[Claim, ...]:
    """The claims of a statement whose speaker is ``holder`` (their name, casefolded)."""
    holder = holder.casefold()
    out: list[Claim] = []
    if _SECOND_LABEL.search(_LABEL.sub("", text, count=1)):
        return ()  # an exchange, not one person's statement
    own: list[str] = []  # the clauses that say something of the holder, plainly
    shifted = False
    for clause in _clauses(_without_speaker_label(text)):
        if _WONDER.search(clause) or _WOULD.search(clause) and not _INTENT.search(clause):
            continue
        who = "other" if _is_other(clause, holder) else holder
        if who == "other" and holder and not _WONDER.search(clause):
            out.extend(_theirs(clause, holder, changed=not _NOT_A_SHIFT.search(text)))
        if who == holder and not _INTENT.search(clause) and not _PAST.search(clause):
            own.append(clause)
            shifted = shifted or _SHIFT.search(clause) is not None
        done_here = _DONE.search(clause) and not _CAUSATIVE.search(clause)
        if _INTENT.search(clause) and not done_here and not _TOLD(clause):
            todo = frozenset(_stem(m.group("verb")) for m in _TODO.finditer(clause))
            out.append(Claim(who, "plan", salient(clause, holder.split()), core=todo, said=clause))
            out.extend(_relationship(clause, who, holder))  # "my fiancé and I are planning…"
            # a decision that turns another around: "we went with green in the end"
            out.extend(c for c in _change_claims(clause, who, holder, text) if c.slot == "changed")
            continue
        if _PAST.search(clause):
            continue
        out.extend(_state_claims(clause, who, holder))
        out.extend(_change_claims(clause, who, holder, text))
        if _ON_LEAVE.search(clause):  # "off work with stress" ends when "back at work"
            out.append(Claim(who, "has", frozenset({_stem("leave")}), said=clause))
        if _HAS.search(clause) or not _EVENT.search(clause):
            out.append(Claim(who, "has", salient(clause, holder.split()), said=clause))
    if not any(c.slot == "residence" for c in out):
        out.extend(_relocation(text, holder))
    # "new job!", "got promoted", "we moved house": the slot changed, its value unsaid
    body = " ".join(own)
    moved_on = {
        slot
        for slot, said in _MOVED_ON.items()
        if said.search(body) and not any(c.slot == slot for c in out)
    }
    if moved_on and not _NOT_A_SHIFT.search(text):
        out.append(Claim(holder, "moved on", frozenset(moved_on)))
    if not _NOT_A_SHIFT.search(text):
        out.extend(_attributes(own, holder, changed=shifted))
    if shifted and not _NOT_A_SHIFT.search(text):
        # What changed is named in the clause that says so, or by name beside it in its
        # sentence ("I've moved over to Brave, Firefox kept eating my RAM").
        said = [c for c in own if _SHIFT.search(c)]
        beside = without_asides(text)  # names anywhere in it: "called Eustace … back in touch now"
        names = _NAME.findall(_VOCATIVE.sub("", beside))
        words = _ADVERB.sub("", _VOCATIVE.sub("", " ".join([*said, *names])))
        value = salient(words, holder.split())
        if value or _alternatives(words):
            out.append(Claim(holder, "shift", value, said=words))
    return tuple(dict.fromkeys(out))


# "We relocated at the start of the month" says where they live when the statement names
# the place elsewhere: "Writing to you from Oslo!", "new city — Quebec City".
_RELOCATED = regex.compile(
    r"\b(?:relocated|moved\s+(?:house|cities|countries|abroad|here|over|in)|the\s+move|"
    r"new\s+city|"
    r"we\s+moved|i\s+moved)\b(?!\s+(?:the|my|our|a)\b)",
    _I,
)
_NAMED_PLACE = regex.compile(rf"(?:\b(?:from|in|to|into)\s+|new\s+city\W+){_PLACE}", _I)


def _relocation(text: str, holder: str) -> Iterator[Claim]:
    body = _without_speaker_label(text)
    if not _RELOCATED.search(body) or _WONDER.search(body) or _INTENT.search(body):
        return
    if any(_is_other(clause, holder) for clause in _clauses(body) if _RELOCATED.search(clause)):
        return
    for clause in _clauses(body):
        if _PAST.search(clause) or _TEMPORARY.search(clause):
            continue  # "I grew up in Sheffield, moved here at 18": not where they live now
        for m in _NAMED_PLACE.finditer(clause):
            yield Claim(holder, "residence", salient(m.group("v")), said=m.group("v"))


def _without_speaker_label(text: str) -> str:
    """An episode reads "Name: what they said"; the label is not part of what was said, and
    a bracketed aside ("[shares an image: a photo of …]") is a caption, not a statement."""
    return without_asides(_LABEL.sub("", text, count=1))


_LABEL = regex.compile(
    r"^(?!(?i:todo|to-do|note|notes|update|reminder|fyi|ps|btw|edit|heads\s+up|list|goal|plan|"
    r"new\s+\w+)\s*:)\p{Lu}[\p{L}.'\-]*(?:\s+\p{Lu}[\p{L}.'\-]*){0,3}:\s+"
)
_ASIDE = regex.compile(r"\s*\[[^\]]*\]")


def without_asides(text: str) -> str:
    """``text`` without its bracketed asides ("[shares an image: …]"): captions of something
    attached, not words anyone said."""
    return _ASIDE.sub("", text)


# "Dana: … Lee: …": an exchange between people, whose claims belong to more than one.
_SECOND_LABEL = regex.compile(r"(?:^|[.!?]\s+)[\p{Lu}][\p{L}\-]{1,30}:\s")


def _relationship(clause: str, who: str, holder: str) -> Iterator[Claim]:
    """The speaker's relationship: "my girlfriend Sasha lives with me" says the speaker is
    dating, though the clause is about Sasha."""
    own = rf"(?:my|our|{regex.escape(holder)}{_APOS}s)" if holder else r"(?:my|our)"
    partner = regex.search(rf"\b{own}\s+(?P<p>{_PARTNERS})\b", clause, flags=_I)
    if partner is not None:
        who = holder
    for status, words in _RELATIONSHIP:
        if regex.search(rf"\b(?:{words})\b", clause, flags=_I):
            yield Claim(who, "relationship", frozenset({status}))


def _negated(clause: str, at: int) -> bool:
    """Whether the words just before ``at`` deny what follows ("I don't work at …")."""
    return _DENIED.search(clause[max(0, at - 24) : at]) is not None


_DENIED = regex.compile(
    rf"(?:n{_APOS}t|\b(?:dont|doesnt|didnt|wont|isnt|arent|havent|hasnt|cant|cannot|not|never)|"
    r"\bno\s+longer)\s+(?:\w+\s+)?$",
    _I,
)


def _state_claims(clause: str, who: str, holder: str) -> Iterator[Claim]:
    additive = _ADDITIVE.search(clause) is not None
    if not _TEMPORARY.search(clause):
        for rule in _RESIDENCE_RULES:
            for m in rule.finditer(clause):
                if not _negated(clause, m.start()):
                    yield Claim(who, "residence", salient(m.group("v")), said=m.group("v"))
    jobless = _JOBLESS.search(clause) is not None  # "lost my job at Acme" says no employer
    for rule in () if jobless else _EMPLOYER_RULES:
        for m in rule.finditer(clause):
            value = salient(m.group("v"))
            if value and not additive and not _negated(clause, m.start()):
                yield Claim(who, "employer", value, said=m.group("v").strip())
    for m in _ROLE_VERBS.finditer(clause):
        role = _ROLE_OF_VERB.get(_stem(m.group("verb")), "")
        if role:
            yield Claim(who, "role", frozenset({_stem(role)}), said=role)
    for rule in _ROLE_RULES:
        for m in rule.finditer(clause):
            said = m.group("v")
            # "promoted to senior lecturer": a new title even when it holds the old one's words
            up = frozenset({"up"}) if _MOVED_UP.search(m.group(0)) else frozenset()
            value = salient(said) or frozenset({said.casefold()})
            yield Claim(who, "role", value, core=up, said=said)
    yield from _relationship(clause, who, holder)
    for diet, words in _DIET:
        if regex.search(rf"\b(?:{words})\b", clause, flags=_I):
            yield Claim(who, "diet", frozenset({diet}))
            break
    if not additive and not regex.search(r"\bmore\b", clause, flags=_I):
        yield from _counts(clause, who)


def _counts(clause: str, who: str) -> Iterator[Claim]:
    """How many of one kind of thing: "two kids", "a staff of 12", "down to one car"."""
    found: dict[str, int] = {}
    for rule in _COUNT_RULES:
        for m in rule.finditer(clause):
            kind = _COUNT_KIND.get((m.group("noun") or "kid").casefold())
            n = _number(m.group("n"))
            if kind is not None and n is not None:
                found.setdefault(kind, n)
    if _NONE_OF.search(clause):
        for m in _NONE_OF.finditer(clause):
            found[_count_kind(m.group("noun"))] = 0
    if _STATE_NOW.search(clause):
        for m in _ANY_COUNT.finditer(clause):
            n = _number(m.group("n"))
            noun = _counted_noun(m.group("after")) if m.group("after") else m.group("noun")
            if n is not None and n > 1 and noun:
                found.setdefault(_count_kind(noun), n)
    for m in _ACQUIRED.finditer(clause):
        found.setdefault(_count_kind(m.group("noun")), SOME)
    for m in _LOST_ONE.finditer(clause):
        found.setdefault(_count_kind(m.group("noun")), FEWER)
    for kind, n in found.items():
        yield Claim(who, f"count:{kind}", frozenset({kind}), number=n)


def _counted_noun(after: str) -> str | None:
    """The noun a number counts, from the words after it: a plural among the next two
    ("three freelance clients"), else the first word that is not a stop word; none for a
    unit ("five years", "12 hours")."""
    words = [w.casefold() for w in _WORD.findall(after)][:2]
    if not words or words[0] in _UNITS:
        return None
    plural = [w for w in words if w.endswith("s") and w not in STOP_WORDS and w not in _GENERIC]
    if plural:
        return None if plural[0] in _UNITS else plural[0]
    for word in words:
        if word in _UNITS:
            return None
        if word not in STOP_WORDS and word not in _GENERIC:
            return word
    return None


def _count_kind(noun: str) -> str:
    noun = noun.casefold()
    return _COUNT_KIND.get(noun) or _stem(noun)


def _ended(who: str, phrase: str, ignore: list[str], *, whole: bool = False) -> Iterator[Claim]:
    """An ending of ``phrase``; ``whole`` when the phrase is a clause an "it" stood for, whose
    every word may name what ended."""
    # "knee is fully (healed)": the knee, not how it healed
    phrase = _ADVERB.sub("", regex.sub(r"\s+(?:is|are|was|were|has|have|got)\b.*$", "", phrase))
    value = salient(phrase, ignore)
    if not value:
        return
    words = [w for w in _WORD.findall(phrase) if _stem(w) in value]
    core = {_stem(w) for w in words if w[0].isupper()}
    if words:
        core.add(_stem(words[-1]))
        if len(words) > 1 and _stem(words[-1]) in _CONTAINERS:  # "the master's program"
            core.add(_stem(words[-2]))
    if whole:
        core.update(value)
    yield Claim(who, "ended", value, ended=True, core=frozenset(core), said=phrase.strip())


_PRONOUN = regex.compile(r"it|that|this|them|those|these", _I)
# "Ripping Firebase out of the project": what is torn out ends.
_TORN_OUT = regex.compile(
    r"\b(?:(?:rip|rips|ripp(?:ed|ing)|yank(?:s|ed|ing)?|tore|tear(?:s|ing)?|cut|cutting)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+out|(?:traded|trading|trade)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+in|(?:sold|gave)\s+(?:the\s+|my\s+|"
    r"our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+(?:off|away))\b",
    _I,
)
# Nouns that name what holds the point rather than the point ("the farm idea").
_CONTAINERS = frozenset(
    _stem(w)
    for w in """program programme course class degree plan idea thing job role app application
    subscription membership account service project lessons training contract""".split()
)
# A search, and its end: "I'm job hunting" → "got the job!!"
_SEEKING = regex.compile(
    r"\b(?:looking|searching|hunting|shopping|waiting|waiting\s+list)\s+(?:around\s+)?(?:for|on)\s+"
    r"(?:(?:a|an|the|my|our|some)\s+)?"
    r"(?:new\s+)?(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)|\b(?P<v>job|house|flat|apartment|home)"
    r"[\s\-]+hunting\b",
    _I,
)
_FOUND = regex.compile(
    r"(?P<v>[\p{L}\-]+)\s+(?:came\s+(?:back|through|in)|(?:have|has)\s+arrived|are\s+in)\b|"
    r"\b(?:found|got(?!\s+(?:\w+ed|\w+en|rid|back|over|off|out|up|into|to)\b)|landed|bought|"
    r"secured|signed\s+for|started)\s+(?:a|an|the|my|our)?\s*(?:new\s+)?"
    r"(?:[\p{L}\-]+\s+)??(?P<v>[\p{L}\-]+)",
    _I,
)
# Something wrong, and then put right: "my passport is expired" → "passport renewed".
_PROBLEM = regex.compile(
    r"\b(?:expired|broken|cracked|stolen|missing|pending|overdue|leaking|leaky|sprained|"
    r"injured|infected|stuck|faulty)\b",
    _I,
)
_RESOLVED = regex.compile(
    r"\b(?:renewed|fixed|repaired|replaced|approved|sorted|healed|recovered|resolved|"
    r"came\s+through|granted|working\s+again|back\s+up\s+and\s+running)\b",
    _I,
)
# Out of work: every job and employer said before ends.
_JOBLESS = regex.compile(
    rf"\b(?:i{_APOS}m|i\s+am|i|we|(?-i:[A-Z])\w+\s+is|(?-i:[A-Z])\w+)\s+(?:\w+\s+)?(?:retired|"
    r"unemployed|jobless|between\s+jobs)\b(?!\s+(?:from|as)\b)|\b(?:got|was|been)\s+(?:laid\s+off|"
    rf"fired|made\s+redundant)\b(?!\s+from)|\blost\s+(?:my|\w+{_APOS}s)\s+job\b|"
    r"\blet\s+(?:me|us|\w+)\s+go\b(?=\s*(?:$|[,.;!]|\s+(?:last|this|yesterday|today|on|in)\b))",
    _I,
)
_EMPLOYED = regex.compile(
    r"\b(?:start(?:s|ed|ing)?|begin(?:s|ning)?|began)\s+(?:my\s+|a\s+|the\s+)?(?:new\s+)?"
    r"(?:job|role|position)\b|\bgot\s+(?:a|the)\s+job\b|\b(?:got|was|been)\s+hired\b|"
    r"\blanded\s+a\s+job\b|\bback\s+in\s+work\b",
    _I,
)
# The end of studies: "I graduated", "defended my thesis".
_GRADUATED = regex.compile(
    rf"\b(?:graduated|defended|finished\s+(?:my|\w+{_APOS}s)\s+(?:degree|phd|masters?|studies|"
    r"course))\b",
    _I,
)
_STUDENT = frozenset(_stem(w) for w in "student phd candidate undergrad postgrad".split())


def _is_other_birth(clause: str) -> bool:
    """ "My sister's baby was born": someone else's, not the speaker's own (whose "our son
    arrived" reads as another person's clause)."""
    return (
        regex.search(
            rf"\b(?:his|her|their|\w+{_APOS}s)\s+(?:\w+\s+)?(?:baby|son|daughter|twins)\b",
            clause,
            flags=_I,
        )
        is not None
    )


_BORN = regex.compile(
    rf"\b(?:was|were|got)\s+born\b|\bgave\s+birth\b|\bbaby(?:{_APOS}s|\s+is|\s+has)\s+"
    r"(?:here|arrived)\b|\b(?:baby|son|daughter|twins|boy|girl)\s+(?:[\w\-]+\s+){0,2}"
    r"(?:arrived|was\s+born|were\s+born)\b|\blost\s+the\s+baby\b|\bmiscarr\w+",
    _I,
)
_ON_LEAVE = regex.compile(
    r"\b(?:off\s+(?:work|sick)|signed\s+off|on\s+(?:\w+\s+)?leave|on\s+sick\s+leave|"
    r"stay-at-home|furlough\w*)\b",
    _I,
)
# Back from a leave: "back at work as of Monday", "back in the office after paternity leave".
_BACK_FROM_LEAVE = regex.compile(
    r"\bback\s+(?:at|in|to)\s+(?:the\s+)?(?:work|office|job|desk)\b", _I
)


def _change_claims(clause: str, who: str, holder: str, whole: str) -> Iterator[Claim]:
    ignore = holder.split()
    if _ADDS_TO.search(clause):
        return
    for m in _ENDING.finditer(clause):
        if _negated(clause, m.start()):
            continue  # "won't quit", "never left"
        ended, told = m.group("v"), False
        if _PRONOUN.fullmatch(ended.strip()):  # "true crime makes me anxious, I'm done with it"
            before = [c for c in _clauses(whole[: whole.find(clause)]) if not _WONDER.search(c)]
            ended, told = (before[-1] if before else ""), True
        if ended and not regex.search(r"\b(?:you|your)\b", ended, flags=_I):
            yield from _ended(who, ended, ignore, whole=told)
    for m in _TORN_OUT.finditer(clause):
        yield from _ended(who, m.group("v"), ignore)
    for m in _SEEKING.finditer(clause):
        yield Claim(who, "seeking", _nouns(m.group("v")), said=m.group("v"))
    for m in _FOUND.finditer(clause):
        if not _negated(clause, m.start()):
            yield Claim(who, "found", _nouns(m.group("v")))
    if _PROBLEM.search(clause) and not _RESOLVED.search(clause):
        cue = salient(" ".join(m.group(0) for m in _PROBLEM.finditer(clause)))
        yield Claim(who, "problem", salient(clause, ignore) - cue)
    resolved = _RESOLVED.search(clause)
    if resolved and not _negated(clause, resolved.start()):
        cue = salient(" ".join(m.group(0) for m in _RESOLVED.finditer(clause)))
        sentence = " ".join(_sentences_with(whole, clause))
        yield Claim(who, "resolved", salient(_VOCATIVE.sub("", sentence), ignore) - cue)
    if _JOBLESS.search(clause):
        yield Claim(who, "jobless", frozenset({"job"}))
    if _EMPLOYED.search(clause) and not _negated(clause, _EMPLOYED.search(clause).start()):
        yield Claim(who, "employed", frozenset({"job"}))
    if _GRADUATED.search(clause):
        yield Claim(who, "graduated", frozenset({"study"}))
    if _BORN.search(clause) and not _is_other_birth(clause):  # a birth ends a pregnancy
        waiting = frozenset({_stem("pregnant"), _stem("expecting")})
        yield Claim(holder, "ended", waiting, ended=True, core=waiting)
    if _BACK_FROM_LEAVE.search(clause):
        leave = frozenset({_stem("leave")})
        yield Claim(who, "ended", leave, ended=True, core=leave)
    for m in _ENDED_SUBJECT.finditer(clause):
        yield from _ended(who, m.group("v"), ignore)
    did = {
        _stem(m.group("verb"))
        for m in _PAST_VERB.finditer(clause)
        if not _negated(clause, m.start()) and not _ADDS_TO.search(clause)
    }
    if did:  # "finally called the bank" did what "I have to call the bank" planned
        sentence = " ".join(_sentences_with(whole, clause))
        yield Claim(who, "did", salient(_VOCATIVE.sub("", sentence), ignore), core=frozenset(did))
    done = [m for m in _DONE.finditer(clause) if not _negated(clause, m.start())]
    if done:  # "I haven't done pottery yet" is not done
        sentence = " ".join(_sentences_with(whole, clause))
        # The done-word is not the work: "passed" does not tie "pass it on" to "passed a test".
        cue = salient(" ".join(w for m in done for w in m.group(0).split() if w in _DONE_WORDS))
        yield Claim(who, "done", salient(_VOCATIVE.sub("", sentence), ignore) - cue)
    strong = [m.group(0).casefold() for m in _STRONG_CHANGE.finditer(clause)]
    if any(not w.startswith("in") for w in strong) or strong and _CHOICE.search(clause):
        # "in the end" changes a decision said with a choice ("went with green in the end"),
        # not "it's all worth it in the end"
        yield Claim(who, "changed", salient(whole, ignore))
    elif _CHANGE.search(clause) and not _STILL.search(clause):
        yield Claim(who, "change", salient(clause, ignore))
    for m in _GROWN_ON.finditer(clause):
        yield Claim(who, "like", salient(m.group("v"), ignore))
    for m in _LIKE.finditer(clause):
        value = salient(m.group("v") + " " + (m.group("lv") or ""), ignore)
        if value and not _ADDITIVE.search(clause) and not _negated(clause, m.start()):
            yield Claim(who, "like", value)  # not "I don't really like sushi"
    for m in _DISLIKE.finditer(clause):
        value = salient(m.group("v"), ignore)
        if value:
            yield Claim(who, "dislike", value)


def _number(word: str) -> int | None:
    word = word.casefold()
    return int(word) if word.isdigit() else _NUMBER.get(word)


# ---------------------------------------------------------------- deciding


_STATES = ("residence", "employer", "role", "relationship", "diet")
# Kinds of workplace: "the public library" and "the university library" are two employers.
_ORG_NOUNS = frozenset(
    _stem(w)
    for w in """school library company firm agency store shop hospital clinic team group office
    department startup bank studio lab restaurant cafe council
    ministry""".split()
)


# Words that are values of one kind, so that a change from one to another needs no shared
# word: "I prefer morning runs" → "I'm an evening runner now"; "window seat" → "aisle".
_KINDS = {
    "time of day": "morning mornings=morning evening evenings=evening night nights=night "
    "afternoon afternoons=afternoon",
    "seat": "window aisle",
    "phone system": "android iphone ios=iphone",
    "computer system": "mac macos=mac macbook=mac imac=mac linux chromebook windows-os=windows",
    "milk": "oat soy almond dairy",
    "hours": "part-time=part full-time=full",
    "shifts": "nights=night days=day",
    "season": "summer winter spring autumn fall=autumn",
    "book format": "paper physical=paper print=paper paperback=paper paperbacks=paper "
    "hardback=paper ebook ebooks=ebook e-book=ebook e-books=ebook kindle=ebook e-reader=ebook "
    "audiobook=audio audiobooks=audio audible=audio",
    "commute": "bus buses=bus train=train trains=train tube=train metro=train subway=train "
    "cycle=bike cycling=bike bike=bike biking=bike walk=walk walking=walk drive=car driving=car",
    "home": "rent renting=rent rental=rent tenant=rent landlord=rent own=own owner=own "
    "homeowner=own homeowners=own mortgage=own",
}
_KIND_OF = {
    word: (kind, value or word)
    for kind, words in _KINDS.items()
    for word, _, value in (w.partition("=") for w in words.split())
}


# Kinds whose words mean the kind only in a context: "bike" is a way to work only said of
# going to work ("I cycle to work now"), not in "swapped my bike for an e-bike".
_KIND_CONTEXT = {
    "shifts": regex.compile(r"\b(?:on|work|working|doing)\s+(?:nights|days)\b", _I),
    "commute": regex.compile(
        r"\b(?:to|into|from)\s+(?:work|school|the\s+office|uni|college|the\s+city)\b|\bcommut", _I
    ),
}


def _alternatives(text: str) -> dict[str, frozenset[str]]:
    """The words of ``text`` that are values of a kind (:data:`_KINDS`), by kind."""
    found: dict[str, set[str]] = {}
    text = regex.sub(r"\bWindows\b", "windows-os", text)  # the system, not the panes
    for word in _WORD.findall(text.casefold()):
        if word in _KIND_OF:
            kind, value = _KIND_OF[word]
            found.setdefault(kind, set()).add(value)
    return {
        kind: frozenset(words)
        for kind, words in found.items()
        if kind not in _KIND_CONTEXT or _KIND_CONTEXT[kind].search(text)
    }


# What someone does, said right after them: "I drive a Saab", "everything I write is in Helix",
# "I'm reading on a Kobo" -- the verb (or the preposition of "I'm on Android").
_DOER = (
    rf"(?:\b(?:i|we){_APOS}(?:m|re|ve)|\b(?:i|we)\b)(?:\s+(?:am|is|are|have|has|do|been|now|just|"
    r"mostly|mainly|usually|always|actually|currently|finally|basically|only|all|mostly)\b)*"
    r"\s+(?P<verb>\p{L}+)"
)
# Verbs of anything, which tie nothing: "I have", "I got", "I'm not".
_ANY_VERB = frozenset(
    _stem(w)
    for w in """be am is are was were have has had get got go went do did make made like love
    want need think feel know say tell try take see look keep let hope guess mean can will would
    could should not no never also really so a an the my our this that just""".split()
)


def _frames(text: str, holder: str) -> frozenset[str]:
    """The verbs (or prepositions) said of the holder in ``text``."""
    doer = _DOER
    if holder:
        name = regex.escape(holder)
        doer = doer.replace(
            "(?:i|we)\\b)", f"(?:i|we|{name}|{name}{_APOS}s\\s+(?:team|family))\\b)"
        )
    found = {_stem(m.group("verb")) for m in regex.finditer(doer, text, flags=_I)}
    return frozenset(found - _ANY_VERB)


_MOVED_ON = {
    "residence": regex.compile(
        r"\b(?:moved\s+(?:house|home|out|away|cities|countries|abroad)|new\s+(?:flat|apartment|"
        r"house|home|address)|(?:i|we)\s+(?:just\s+|finally\s+)?(?:moved|relocated)(?=\s*(?:$|[,.;!]))"
        r")\b",
        _I,
    ),
    "employer": regex.compile(
        r"\b(?:new\s+job|changed\s+jobs|switched\s+jobs|changed\s+employers?|job\s+change)\b",
        _I,
    ),
    "role": regex.compile(
        r"\b(?:got\s+(?:a\s+|the\s+)?promot(?:ed|ion)|was\s+promoted|been\s+promoted|"
        r"new\s+(?:role|title|position))\b",
        _I,
    ),
}


# One thing of the holder's and what it is: "my main browser is Firefox", "Firefox is my
# browser now", "Kai's commute is 90 minutes".
def _attribute_rules(holder: str) -> tuple[regex.Pattern[str], ...]:
    own = rf"(?:my|our{'|' + regex.escape(holder) + _APOS + 's' if holder else ''})"
    noun = r"(?P<n>[\p{L}\-]{3,})"
    value = r"(?P<v>[^,.;:!?()]{1,40}?)"
    end = (
        r"(?=\s*(?:$|[,.;:!?()]|\s(?:now|these\s+days|and|but|so|since|as\s+of|for|on|at|in|"
        r"lol|tbh)\b))"
    )
    return (
        regex.compile(
            rf"\b{own}\s+(?:[\p{{L}}\-]+\s+){{0,2}}?{noun}\s+(?:is|are|{_APOS}s)\s+"
            rf"(?:now\s+|currently\s+)?{value}{end}",
            _I,
        ),
        regex.compile(
            rf"(?:^|[,.;:!?]\s*){value}\s+(?:is|are|{_APOS}s)\s+(?:now\s+)?{own}\s+"
            rf"(?:[\p{{L}}\-]+\s+){{0,2}}?{noun}{end}",
            _I,
        ),
    )


_SET_TO = regex.compile(
    r"\b(?:cut|raised|increased|reduced|lowered|dropped|changed|moved|upped|bumped|put|set|"
    r"switched)\s+(?:my|our|the)\s+(?:[\p{L}\-]+\s+)?(?P<n>[\p{L}\-]{3,})\s+(?:up\s+|down\s+)?"
    r"(?:to|from\s+[^,.;:!?()]{1,20}?\s+to)\s+(?P<v>[^,.;:!?()]{1,30}?)(?=\s*(?:$|[,.;:!?()]|"
    r"\s(?:now|and|but|so|because|since|as\s+of|from)\b))",
    _I,
)
_NOT_A_VALUE = regex.compile(
    r"^(?:so|very|really|too|not|still|also|just|always|getting|going|being|doing|a\s+bit|"
    r"kind\s+of|pretty|quite|super|in|on|at|with|for|the\s+best|the\s+worst)\b",
    _I,
)


def _attributes(clauses: list[str], holder: str, *, changed: bool) -> Iterator[Claim]:
    """``attr:<thing>`` claims: the value of one thing of the holder's, and in ``core``
    whether the statement says it changed ("now", "switched")."""
    for clause in clauses:  # "cut the food budget to 350": changed in so many words
        for m in _SET_TO.finditer(clause):
            value = salient(m.group("v"), holder.split()) | _numbers(m.group("v"))
            if value:
                thing = _stem(m.group("n"))
                yield Claim(holder, f"attr:{thing}", value, core=frozenset({"changed"}))
    for rule in _attribute_rules(holder):
        for clause in clauses:
            for m in rule.finditer(clause):
                said = m.group("v").strip()
                thing = m.group("n").casefold()
                if regex.fullmatch(_PEOPLE, thing, flags=_I) or _NOT_A_VALUE.search(said):
                    continue
                value = salient(said, holder.split()) | _numbers(said)
                if value:
                    core = frozenset({"changed"}) if changed else frozenset()
                    yield Claim(holder, f"attr:{_stem(thing)}", value, core=core, said=said)


# What a change said in general words can replace: how things stand, and what was liked.
_SHIFTABLE = frozenset({*_STATES, "has", "like", "dislike", "theirs"})


def update_between(old: tuple[Claim, ...], new: tuple[Claim, ...]) -> str | None:
    """Why the newer statement's claims replace the older one's, or None (module docstring)."""
    for n in new:
        if n.holder == "other":
            continue
        for o in old:
            if o.holder != n.holder:
                continue
            reason = _replaces(o, n)
            if reason is not None:
                return reason
    return None


# A plan carried out is no longer current, but what was said of it stays true: its words
# stay recallable (a superseded fact tagged DONE_TAG keeps its sentence in recall).
_DONE_PREFIX = "done: "
DONE_TAG = "done"


def carried_out(reason: str) -> bool:
    """Whether an update's reason says the older statement's plan was carried out."""
    return reason.startswith(_DONE_PREFIX)


def _replaces(o: Claim, n: Claim) -> str | None:
    if o.slot in _STATES and n.slot == o.slot:
        ov, nv = o.value - _ORG_NOUNS, n.value - _ORG_NOUNS
        if o.slot == "role":  # "staff nurse" → "charge nurse": a new title, sharing a word
            ov, nv = o.value, n.value
            changed = bool(ov and nv) and not (ov <= nv or nv <= ov)
            changed = changed or bool(n.core and ov and nv and ov != nv)
        else:
            changed = bool(ov and nv) and not (ov & nv)
        return f"{o.slot}: {_show(o)} → {_show(n)}" if changed else None
    if o.slot.startswith("count:") and n.slot == o.slot and o.number != n.number:
        if n.number == SOME and o.number != 0 or o.number in (SOME, FEWER):
            return None
        if n.number == FEWER and not (o.number and o.number > 0):
            return None
        shown = {SOME: "some", FEWER: "fewer"}.get(n.number or 0, n.number)
        return f"{o.slot[6:]} count: {o.number} → {shown}"
    stems = o.value | {_stem(v) for v in o.value} if o.slot in _STATES else o.value
    if n.slot == "ended" and o.slot in (*_STATES, "plan", "like", "has") and n.core & stems:
        return f"no longer {_show(n)}"
    if o.slot == "plan" and n.slot == "done" and _shares_work(o, n.value):
        return f"{_DONE_PREFIX}{_show(o)}"
    if o.slot == "like" and n.slot == "dislike" and o.value & n.value:
        return f"now dislikes {_show(n)}"
    if o.slot == "dislike" and n.slot == "like" and o.value & n.value:
        return f"now likes {_show(n)}"
    if o.slot == "problem" and n.slot == "resolved" and o.value & n.value:
        return f"put right: {' '.join(sorted(o.value & n.value))}"
    if o.slot == "seeking" and n.slot == "found" and o.value & n.value:
        return f"found: {_show(o)}"
    if o.slot == "plan" and n.slot == "did" and o.core & n.core:
        things = salient(_DOING.sub("", o.said)) - o.core if o.said else o.value - o.core
        if things & n.value:  # the work's own verb, done to the same thing
            return f"{_DONE_PREFIX}{_show(o)}"
    if o.slot == "theirs" and n.slot == "their end" and o.core & n.core and o.value & n.value:
        return f"no longer: {_show(o)}"
    if o.slot == "theirs" and n.slot == "their change" and o.core & n.core and n.value - o.value:
        return f"changed: {_show(o)}"
    if o.slot == "jobless" and n.slot in ("employed", "employer"):
        return "back in work"
    if o.slot.startswith("attr:") and n.slot == o.slot and n.core:
        numbers = {v for v in o.value if v.isdigit()}, {v for v in n.value if v.isdigit()}
        if (all(numbers) and numbers[0] != numbers[1]) or not o.value & n.value:
            return f"{o.slot[5:]}: {_show(o)} → {_show(n)}"
    if n.slot == "moved on" and o.slot in n.value:
        return f"new {o.slot}: no longer {_show(o)}"
    if n.slot == "jobless" and o.slot in ("employer", "role"):
        return f"no longer works: {_show(o)}"
    if n.slot == "graduated" and o.slot == "role" and o.value & _STUDENT:
        return f"no longer a student: {_show(o)}"
    if n.slot == "shift" and o.slot in _SHIFTABLE:
        # What the earlier statement is about, not what it was doing ("keep dreaming").
        things = (
            salient(_DOING.sub("", o.said), o.holder.split())
            if o.slot == "has" and o.said
            else o.value
        )
        if o.slot == "theirs":
            things = o.core  # said of the same person
        if things & n.value and not _of_the_thing(n.said, things, n.holder):
            return f"changed: {' '.join(sorted(things & n.value))}"
        if o.slot == "has" and o.said and n.said:
            same = _frames(o.said, o.holder) & _frames(n.said, n.holder)
            if same:  # "I drive a Saab" → "I drive a Kona now"
                return f"changed: what {o.holder} {'/'.join(sorted(same))}"
        if o.said and n.said:
            was, now = _alternatives(o.said), _alternatives(n.said)
            for kind, words in now.items():
                if kind in was and words - was[kind]:
                    return f"{kind}: {'/'.join(sorted(was[kind]))} → {'/'.join(sorted(words))}"
    if o.slot == "plan" and n.slot == "shift" and _shares_work(o, n.value, least=2):
        return f"{_DONE_PREFIX}{_show(o)}"  # "migrate to GitLab" → "everything's on GitLab now"
    if o.slot == "plan" and n.slot == "change" and _shares_work(o, n.value):
        return f"plan changed: {_show(o)}"
    if o.slot == "plan" and n.slot == "changed" and o.value & n.value:
        return f"plan changed: {_show(o)}"
    return None


_DOING = regex.compile(r"\b\p{L}+ing\b", _I)


def _of_the_thing(said: str, shared: frozenset[str], holder: str) -> bool:
    """Whether a change is said of a part or a property of the shared thing, not of the
    holder: "my Pixel's battery is dying now", "Oakfield has a new head teacher now"."""
    own = rf"\b(?:my|our|{regex.escape(holder)}{_APOS}s)\s+(?:\w+\s+)?{_PEOPLE}\b" if holder else ""
    if own and regex.search(own, said, flags=_I):
        return False  # "Amadou is my husband now": of the holder's own relationship
    for m in _PART_OF.finditer(said):
        part = (m.group("part") or "").casefold()
        if part in STOP_WORDS or part in _GENERIC:
            continue  # "not at St Columba's anymore"
        it = m.group("it").casefold()
        mod = (m.group("mod") or "").casefold() if m.group("where") is not None else ""
        if m.group("where") is not None and regex.search(
            rf"\b(?:my|our|{regex.escape(holder) if holder else 'my'}{_APOS}s)\b",
            m.group("rest") or "",
            flags=_I,
        ):
            continue  # "sushi is my favourite food now": the holder's, said of the thing
        if (m.group("part") is not None or m.group("where") is not None) and (
            _stem(it) in shared or mod and _stem(mod) in shared
        ):
            return True
        if (
            m.group("part") is None
            and m.group("where") is None
            and it
            not in (
                "i",
                "we",
                "they",
                *holder.split(),
            )
        ):
            return True  # "Oakfield has a new head", not "we have a new car"
    return False


_PART_OF = regex.compile(
    rf"(?:^|[,.;:!?]\s*)(?:the\s+|my\s+|our\s+)?(?P<it>[\p{{L}}\p{{N}}\-]+){_APOS}s\s+"
    r"(?P<part>\p{L}+)|"
    r"(?:^|[,.;:!?]\s*)(?:the\s+|my\s+|our\s+)?(?P<it>[\p{L}\p{N}\-]+)\s+(?:has|have)\s+"
    r"(?:a|an|some|new)\b|"
    # the thing itself is the subject: "my phone is on 5% now", "both kids have chickenpox
    # now", "Leeds uni is on strike now" -- said of the thing, not of the holder
    r"(?:^|[,.;:!?]\s*)(?:(?:the|my|our|both|all|his|her|their)\s+)?(?P<where>)"
    r"(?:(?P<mod>[\p{L}\p{N}\-]+)\s+)?(?P<it>[\p{L}\p{N}\-]+)\s+"
    rf"(?:is|are|was|were|has|have|had|{_APOS}s|{_APOS}re|keeps?|got)\b(?P<rest>[^,.;:!?]*)",
    _I,
)


def _shares_work(plan: Claim, done: frozenset[str], *, least: int = 1) -> bool:
    """What the work is about, shared: at least one word and half of the plan's shorter list."""
    shared = plan.value & done
    if len(shared) < max(least, 1) or len(shared) * 2 < min(len(plan.value), 4):
        return False
    # The doing alone is not the work: "finish painting the fence" is not done by "finished
    # painting my miniatures"; what is painted must be shared too.
    things = salient(_DOING.sub("", plan.said)) if plan.said else plan.value
    return bool(shared & things) or not things


def _show(claim: Claim) -> str:
    return claim.said or " ".join(sorted(claim.value))


# ---------------------------------------------------------------- finding earlier statements


_LOOSE = "changed: "  # the reason of a change said in general words (a "shift")
MAX_LOOSE = 2


class ClaimBook:
    """Active statements by holder, so a new statement finds the ones it may update in a
    dictionary lookup instead of a search over the folder. Each is kept with when it was
    said: only an earlier statement can be updated by a later one."""

    def __init__(self) -> None:
        self._by_holder: dict[str, dict[str, tuple[tuple[Claim, ...], datetime]]] = defaultdict(
            dict
        )
        self._holders_of: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._holders_of)

    def add(self, fact_id: str, stated: tuple[Claim, ...], said_at: datetime) -> None:
        holders = {c.holder for c in stated if c.holder != "other"}
        if not holders:
            return
        for holder in holders:
            self._by_holder[holder][fact_id] = (stated, said_at)
        self._holders_of[fact_id] = holders

    def remove(self, fact_id: str) -> None:
        for holder in self._holders_of.pop(fact_id, ()):
            bucket = self._by_holder.get(holder)
            if bucket is not None:
                bucket.pop(fact_id, None)
                if not bucket:
                    del self._by_holder[holder]

    def candidates(
        self, fact_id: str, stated: tuple[Claim, ...]
    ) -> dict[str, tuple[tuple[Claim, ...], datetime]]:
        """The other known statements about a holder of ``stated``, by id."""
        seen: dict[str, tuple[tuple[Claim, ...], datetime]] = {}
        for holder in {c.holder for c in stated if c.holder != "other"}:
            for other_id, entry in self._by_holder.get(holder, {}).items():
                if other_id != fact_id:
                    seen[other_id] = entry
        return seen

    def updated_by(
        self, fact_id: str, stated: tuple[Claim, ...], said_at: datetime
    ) -> list[tuple[str, str]]:
        """(older id, reason) for each earlier statement that ``stated`` updates."""
        found = []
        for other_id, (other, other_at) in sorted(self.candidates(fact_id, stated).items()):
            if other_at > said_at:
                continue  # a later statement is not undone by an earlier one said late
            reason = update_between(other, stated)
            if reason is not None:
                found.append((other_id, reason))
        # A change said in general words replaces one earlier statement, or two; one that
        # would replace many is about a whole topic of the holder's ("now my dance studio …"),
        # not an update of any of them.
        loose = [item for item in found if item[1].startswith(_LOOSE)]
        if len(loose) > MAX_LOOSE:
            found = [item for item in found if not item[1].startswith(_LOOSE)]
        return found


def default_holder(entities: Iterable[str]) -> str:
    """Who "the user" of a statement is: the first person it names (``person-dana-lee`` →
    ``dana lee``), as the extractor lists the speaker first."""
    for entity in entities:
        kind, _, slug = entity.partition("-")
        if kind == "person" and slug:
            return slug.replace("-", " ")
    return ""


def fact_claims(content: str, entities: Iterable[str]) -> tuple[Claim, ...]:
    """The claims of a stored statement."""
    return claims(content, default_holder(entities))


def states_something(text: str) -> bool:
    """Whether a sentence says how someone's life stands (where they live or work, their
    role, relationship, diet, how many of something): worth keeping as a fact, since a later
    statement may update it."""
    return any(c.slot in _STATES or c.slot.startswith("count:") for c in claims(text))


def update_reason(old_text: str, new_text: str, old_holder: str, new_holder: str) -> str | None:
    """Why the newer statement replaces the older one, or None when it does not."""
    return update_between(claims(old_text, old_holder), claims(new_text, new_holder))
