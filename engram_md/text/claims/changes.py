"""Changes: a change said in general words ("… now", "not … anymore", "switched") and what
ties it to an earlier statement (a shared word, the same verb, a value of the same kind); a
decision or a liking turned around; a change of someone close to the holder; and every change
a clause says (:func:`_change_claims`)."""

from __future__ import annotations

from collections.abc import Iterator

import regex

from ..words import STOP_WORDS
from .clauses import (
    _ADDITIVE,
    _ADDS_TO,
    _PEOPLE,
    _STILL,
    _SUBJECT_END,
    _TOO,
    _VOCATIVE,
    _WONDER,
    _clauses,
    _negated,
    _sentence_after,
    _sentences_with,
)
from .endings import (
    _ARRIVED,
    _BACK_FROM_LEAVE,
    _BORN,
    _DONE,
    _DONE_WORDS,
    _EMPLOYED,
    _ENDED_SUBJECT,
    _ENDING,
    _FOUND,
    _GRADUATED,
    _GRANTED,
    _HEADLINE_END,
    _ILL,
    _PAST_VERB,
    _PROBLEM,
    _PRONOUN,
    _RECOVERED,
    _RESOLVED,
    _SEEKING,
    _TAKEN_ON,
    _TORN_OUT,
    _as_papers,
    _ended,
    _is_other_birth,
)
from .slots import _JOBLESS, Claim
from .words import _APOS, _GENERIC, _I, _NAME, _WORD, _nouns, _numbers, _stem, pattern, salient

# Words that say how things stand has changed, whatever it is about: "… now", "not …
# anymore", "switched", "these days", "instead", "became", "in the end". Alone they say
# nothing of what changed; said beside a word of an earlier statement of the same person
# ("the Volvo died, a Kona is our car now" after "we drive a Volvo") they replace it. A "now"
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


# Words that are values of one kind, so that a change from one to another needs no shared
# word: "I prefer early swims" → "I'm a night swimmer now"; "window seat" → "aisle".
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
# going to work ("I walk to work now"), not in "swapped my bike for an e-bike".
_KIND_CONTEXT = {
    "shifts": regex.compile(r"\b(?:on|work|working|doing)\s+(?:nights|days)\b", _I),
    "commute": regex.compile(
        r"\b(?:to|into|from)\s+(?:work|school|the\s+office|uni|college|the\s+city)\b|\bcommut", _I
    ),
}


def _alternatives(text: str) -> dict[str, frozenset[str]]:
    """The words of ``text`` that are values of a kind (:data:`_KINDS`), by kind."""
    found: dict[str, set[str]] = {}
    text = pattern(r"\bWindows\b", 0).sub("windows-os", text)  # the system, not the panes
    for word in _WORD.findall(text.casefold()):
        if word in _KIND_OF:
            kind, value = _KIND_OF[word]
            found.setdefault(kind, set()).add(value)
    return {
        kind: frozenset(words)
        for kind, words in found.items()
        if kind not in _KIND_CONTEXT or _KIND_CONTEXT[kind].search(text)
    }


# What someone does, said right after them: "I drive a Volvo", "everything I write is in Helix",
# "I'm reading on a tablet" -- the verb (or the preposition of "I'm on a Pixel").
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
    found = {_stem(m.group("verb")) for m in pattern(doer, _I).finditer(text)}
    return frozenset(found - _ANY_VERB)


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


def _of_the_thing(said: str, shared: frozenset[str], holder: str) -> bool:
    """Whether a change is said of a part or a property of the shared thing, not of the
    holder: "my Pixel's battery is dying now", "Oakfield has a new head teacher now"."""
    own = rf"\b(?:my|our|{regex.escape(holder)}{_APOS}s)\s+(?:\w+\s+)?{_PEOPLE}\b" if holder else ""
    if own and pattern(own, _I).search(said):
        return False  # "Amadou is my husband now": of the holder's own relationship
    for m in _PART_OF.finditer(said):
        part = (m.group("part") or "").casefold()
        if part in STOP_WORDS or part in _GENERIC:
            continue  # "not at Ridgeway Primary anymore"
        it = m.group("it").casefold()
        mod = (m.group("mod") or "").casefold() if m.group("where") is not None else ""
        if m.group("where") is not None and pattern(
            rf"\b(?:my|our|{regex.escape(holder) if holder else 'my'}{_APOS}s)\b", _I
        ).search(m.group("rest") or ""):
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


# A decision changed in so many words.
# Said of a decision, these change it even when they share one word with it.
_STRONG_CHANGE = regex.compile(
    r"\b(?:change\s+of\s+plans?|scratch\s+that|after\s+all|flipped\s+it|changed\s+(?:\S+\s+){0,3}?"
    r"minds?|backed\s+out|instead|swapped|decided\s+against|on\s+second\s+thoughts?|"
    r"reconsidered|rethought|not\s+going\s+ahead|in\s+the\s+end(?!\s+of)|postponed|"
    r"rescheduled|delayed|brought\s+forward|pushed\s+(?:the|our|my|it)\b(?:\s+\S+){0,3}?\s+"
    r"(?:back|to)|(?:took|taken|taking|pulled)\s+(?:\S+\s+){1,3}?off\s+the\s+market|"
    r"(?:staying|stay|stayed)\s+put(?!\s+(?:this|that|for\s+the|tonight|today|over)\b))\b",
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
    rf"\b(?:(?:now\s+)?(?:love|loves|loving|(?<!\b(?:tastes?|looks?|feels?|sounds?|smells?|seems?)\s)like|"
    rf"likes|prefer|prefers|enjoy|enjoys|enjoying)|(?<=(?:{_APOS}m|{_APOS}re|"
    rf"\bam|\bare|\bis|really|so|totally|very|big|getting|got|been)\s+)into|fan\s+of)"
    rf"\s+(?:the\s+)?(?P<v>[^,.;:!?()]{{1,40}}?)(?=\s*(?:$|[,.;:!?()]|\s(?:now|and|"
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
# Gone off or come round, told by how it tastes or feels: "lager tastes like cardboard to me",
# "my old trackpad feels wrong", "gin does nothing for me", "fennel tastes great to me now".
_TURNED_AGAINST = regex.compile(
    r"(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)\s+(?:(?:tastes?|feels?|smells?|sounds?)\s+(?:like\s+"
    r"(?:soap|sadness|cardboard|dirt|garbage|trash|punishment|medicine)|awful|terrible|gross|"
    r"horrible|alien|wrong)|does\s+nothing\s+for\s+(?:me|(?-i:[A-Z])\w+)|"
    r"(?:is|are)\s+dead\s+to\s+me)\b",
    _I,
)
# "I'm a cider drinker", "Kai is a dog lover": a liking said of who one is.
_KIND_OF_PERSON = regex.compile(
    rf"\b(?:i{_APOS}m|i\s+am|(?-i:[A-Z])\w+\s+is)\s+an?\s+(?:(?:big|huge|real|total)\s+)?"
    r"(?P<v>\w+)\s+(?:drinker|person|fan|lover|convert)\b",
    _I,
)
_COME_ROUND = regex.compile(
    r"(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)\s+(?:tastes?|feels?|is|are)\s+(?:totally\s+|actually\s+)?"
    r"(?:fine|great|good|amazing|nice|easier|way\s+easier)\s+(?:to|for)\s+(?:me|(?-i:[A-Z])\w+)\s+"
    r"(?:now|lately|these\s+days)\b",
    _I,
)
_DISLIKE = regex.compile(
    rf"\b(?:hate|hates|dislike|dislikes|(?:do|does)(?:n{_APOS}t|\s+not)\s+(?:really\s+)?like|"
    rf"can{_APOS}?t\s+stand|(?:gone|went)\s+off|not\s+a\s+fan\s+of|sick\s+of|tired\s+of)\s+"
    rf"(?:the\s+)?(?P<v>[^,.;:!?()]{{1,40}}?)(?=\s*(?:$|[,.;:!?()]|\s(?:and|but|so|anymore|"
    rf"lately|now|these)\b))",
    _I,
)


def _theirs(clause: str, holder: str, *, changed: bool = False) -> Iterator[Claim]:
    """What a clause says of someone close to the holder ("my daughter Zinnia is at
    Harbourside"): the holder's to change ("we moved Zinnia to Elmhurst"), if said of the
    same person -- ``core`` holds who they are (the kin words and names of the subject)."""
    end = _SUBJECT_END.search(clause)
    subject = clause[: end.start()] if end else clause
    own = rf"(?:my|our|{regex.escape(holder)}{_APOS}s)"
    if not pattern(rf"\b{own}\s+(?:[\w\-]+\s+){{0,2}}?{_PEOPLE}\b", _I).search(subject):
        return
    who = {_stem(w) for w in pattern(rf"\b{_PEOPLE}\b", _I).findall(subject)}
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


# A loss given as the reason for something else tells the past, not how things stand: "it's
# been tough since I lost my job" says nothing of the job started since.
_AS_A_REASON = regex.compile(
    rf"(?:\b(?:since|because|after|ever\s+since)|{_APOS}cause)\s+(?:\S+\s+){{0,3}}?"
    r"(?:lost|got\s+laid\s+off|got\s+fired|was\s+(?:laid\s+off|fired|made\s+redundant))\b",
    _I,
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
        if ended and not pattern(r"\b(?:you|your)\b", _I).search(ended):
            yield from _ended(who, ended, ignore, whole=told)
    for m in _TORN_OUT.finditer(clause):
        yield from _ended(who, m.group("v"), ignore)
    for m in _HEADLINE_END.finditer(clause):
        yield from _ended(who, m.group("v"), ignore)
    for m in _TAKEN_ON.finditer(clause):
        if not _negated(clause, m.start()):
            yield Claim(who, "has", salient(m.group("v"), ignore), said=m.group("v"))
    for m in _SEEKING.finditer(clause):
        yield Claim(who, "seeking", _as_papers(_nouns(m.group("v"))), said=m.group("v"))
    for rule in (_FOUND, _GRANTED):
        for m in rule.finditer(clause):
            if not _negated(clause, m.start()):
                yield Claim(who, "found", _as_papers(_nouns(m.group("v"))))
    for m in _ARRIVED.finditer(clause):
        if not _negated(clause, m.start()):
            yield Claim(who, "arrived", _nouns(m.group("v")))
    ill = _ILL.search(clause)
    if ill and not _negated(clause, ill.start()):
        yield Claim(who, "ill", frozenset({"ill"}), said=ill.group(0))
    well = _RECOVERED.search(clause)
    if well and not _negated(clause, well.start()):
        yield Claim(who, "recovered", frozenset({"ill"}))
    if _PROBLEM.search(clause) and not _RESOLVED.search(clause):
        cue = salient(" ".join(m.group(0) for m in _PROBLEM.finditer(clause)))
        yield Claim(who, "problem", salient(clause, ignore) - cue)
    resolved = _RESOLVED.search(clause)
    if resolved and not _negated(clause, resolved.start()):
        cue = salient(" ".join(m.group(0) for m in _RESOLVED.finditer(clause)))
        sentence = " ".join(_sentences_with(whole, clause))
        yield Claim(who, "resolved", salient(_VOCATIVE.sub("", sentence), ignore) - cue)
    if _JOBLESS.search(clause) and not _AS_A_REASON.search(clause):
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
        cue = salient(
            " ".join(w for m in done for w in m.group(0).split() if w.casefold() in _DONE_WORDS)
        )
        value = salient(_VOCATIVE.sub("", sentence), ignore) - cue
        if not value:  # "FINISHED!! the mural is up": the work is named in the next sentence
            value = salient(_VOCATIVE.sub("", _sentence_after(whole, sentence)), ignore) - cue
        yield Claim(who, "done", value)
    strong = [m.group(0).casefold() for m in _STRONG_CHANGE.finditer(clause)]
    if any(not w.startswith("in the") for w in strong) or strong and _CHOICE.search(clause):
        # "in the end" changes a decision said with a choice ("went with green in the end"),
        # not "it's all worth it in the end"
        yield Claim(who, "changed", salient(whole, ignore))
    elif _CHANGE.search(clause) and not _STILL.search(clause):
        yield Claim(who, "change", salient(clause, ignore))
    for m in _GROWN_ON.finditer(clause):
        yield Claim(who, "like", salient(m.group("v"), ignore))
    for m in _LIKE.finditer(clause):
        value = salient(m.group("v"), ignore)
        if value and not _ADDITIVE.search(clause) and not _negated(clause, m.start()):
            yield Claim(who, "like", value)  # not "I don't really like sushi"
    for m in _TURNED_AGAINST.finditer(clause):
        if not _negated(clause, m.start()):
            yield Claim(who, "dislike", salient(m.group("v"), ignore))
    for m in _KIND_OF_PERSON.finditer(clause):
        if not _negated(clause, m.start()):
            yield Claim(who, "like", salient(m.group("v"), ignore))
    for m in _COME_ROUND.finditer(clause):
        yield Claim(who, "like", salient(m.group("v"), ignore))
    for m in _DISLIKE.finditer(clause):
        value = salient(m.group("v"), ignore)
        if value:
            yield Claim(who, "dislike", value)
