"""Clauses and whose they are: a statement split into clauses and sentences, without the
speaker's label and bracketed asides; whether a clause is about the speaker or someone else;
and the guards that keep a clause from claiming how things stand -- it wonders, asks,
intends, tells of the past, adds, confirms, or is denied."""

from __future__ import annotations

from collections.abc import Iterator

import regex

from .words import _APOS, _I, pattern

# The end of a sentence, not of "Dr." or "St." before a name.
_STOP = r"(?<=[.!?;])(?<!\b(?:[Dd]r|[Mm]rs?|[Mm]s|[Ss]t|[Pp]rof|etc|vs|approx)\.)"


def _clauses(text: str) -> Iterator[str]:
    """A statement's clauses: a "?" or an "if" in one does not cancel the plain one beside it."""
    breaks = rf"{_STOP}\s+|\s+(?:but|so|and then|though)\s+|,\s+|\s+[—–]\s+"
    for part in pattern(breaks, 0).split(text):
        if part.strip():
            yield part.strip()


_SENTENCE = regex.compile(rf"{_STOP.replace(';', '')}\s+")


def _sentences_with(text: str, clause: str) -> list[str]:
    """The sentences of ``text`` that hold ``clause``."""
    return [s for s in _SENTENCE.split(text) if clause in s] or [clause]


def _sentence_after(text: str, sentence: str) -> str:
    """The sentence that follows ``sentence`` in ``text`` ("" if none)."""
    parts = _SENTENCE.split(text)
    for at, part in enumerate(parts[:-1]):
        if sentence in part:
            return parts[at + 1]
    return ""


def _without_speaker_label(text: str) -> str:
    """An episode reads "Name: what they said"; the label is not part of what was said, and
    a bracketed aside ("[shares an image: a photo of …]") is a caption, not a statement."""
    return without_asides(_LABEL.sub("", text, count=1))


# Words that head a note ("Note:", "Update:"), not a speaker's name before a colon.
_HEADING = (
    r"(?!(?i:todo|to-do|note|notes|update|reminder|fyi|ps|btw|edit|heads\s+up|list|goal|plan|"
    r"new\s+\w+)\s*:)"
)
_LABEL = regex.compile(
    rf"^{_HEADING}\p{{Lu}}[\p{{L}}.'\-]*(?:\s+\p{{Lu}}[\p{{L}}.'\-]*){{0,3}}:\s+"
)
_ASIDE = regex.compile(r"\s*\[[^\]]*\]")


def without_asides(text: str) -> str:
    """``text`` without its bracketed asides ("[shares an image: …]"): captions of something
    attached, not words anyone said."""
    return _ASIDE.sub("", text)


# "Dana: … Lee: …": an exchange between people, whose claims belong to more than one. A chat
# message often ends with no stop ("Lee: we packed all 40 boxes Dana: moving pros"), so a
# label counts after any space (not a heading, :data:`_HEADING`).
_SECOND_LABEL = regex.compile(rf"(?:^|\s){_HEADING}[\p{{Lu}}][\p{{L}}\-]{{1,30}}:\s")


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
    if holder and pattern(rf"\s*{regex.escape(holder)}\b(?!{_APOS})", _I).match(clause):
        return False  # "Dana coaches Dana's nephew's team": Dana's, not the nephew's
    if holder and pattern(rf"\band\s+{regex.escape(holder)}\b", _I).search(subject):
        return False
    if _HE_OR_SHE.match(subject) and not _SPEAKER_IN.search(clause):
        return True
    return _OTHER_PERSON.search(subject) is not None


# "she's with a bank in Lyon now": in a person's own words, he or she is never the speaker, unless
# the speaker is in the clause too ("she helped us move", "she's our second dog").
_HE_OR_SHE = regex.compile(rf"\W*(?:he|she)(?:{_APOS}s|{_APOS}d|{_APOS}ll)?\b", _I)
_SPEAKER_IN = regex.compile(r"\b(?:me|us|we|our|ours|my|mine|i)\b", _I)


# A clause that wonders, asks or imagines claims nothing.
_WONDER = regex.compile(
    r"\b(?:if|would|wo?u?ld|might|maybe|perhaps|wonder(?:s|ing)?|whether|could|"
    r"should\s+(?:i|we|you)\b|"
    r"thinking\s+(?:about|of)|considering|in\s+theory|someday|one\s+day|daydream\w*|"
    r"wish(?:es)?|hypothetically|not\s+sure|probably|suppose|supposing|imagine|what\s+if|in\s+another\s+life)\b|(?<!\?)\?(?![?!])|"
    r"^\W*(?:how|what|why|where|who|which|do|does|did|is|are|can|any|anyone)\b[^.!]*\?",
    _I,
)
# "I'd give up climbing": would, unless what was agreed ("we agreed we'd host") or had been
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
# A statement of what someone has, uses or is doing: "I use Vim", "my bank is Monzo".
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
# "Too" that adds ("I like tea too"), not one that says how much ("too pricey").
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


# Whom a message is said to ("Thanks, Mel!", "Hey Caroline,"): not what it is about.
_VOCATIVE = regex.compile(
    r"(?:\b(?:hey|hi|hello|thanks|thank\s+you|congrats|yeah|yes|wow|oh|sure|aw+|ok|okay|"
    r"so|sorry|good\s+(?:morning|night|luck))\W{0,3}\s*(?-i:\p{Lu}\p{L}+)\b|"
    r",\s*(?-i:\p{Lu}\p{L}+)(?=\s*[!?.]))",
    _I,
)


def _negated(clause: str, at: int) -> bool:
    """Whether the words just before ``at`` deny what follows ("I don't work at …")."""
    return _DENIED.search(clause[max(0, at - 24) : at]) is not None


_DENIED = regex.compile(
    rf"(?:n{_APOS}t|\b(?:dont|doesnt|didnt|wont|isnt|arent|havent|hasnt|cant|cannot|not|never)|"
    r"\bno\s+longer)\s+(?:\w+\s+)?$",
    _I,
)
