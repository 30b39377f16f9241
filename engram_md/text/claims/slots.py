"""Slots: what a statement claims about how its holder's life stands -- where they live,
where they work, their role, their relationship, their diet, how many of one kind of thing
they have -- each a :class:`Claim`; and a slot said to have changed with its value unsaid
("new job!", "we moved house")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import regex

from ..words import STOP_WORDS
from .clauses import (
    _ADDITIVE,
    _INTENT,
    _PAST,
    _WONDER,
    _clauses,
    _is_other,
    _negated,
    _without_speaker_label,
)
from .words import (
    _APOS,
    _GENERIC,
    _I,
    _MANY_WORDS,
    _NUM,
    _WORD,
    _number,
    _stem,
    pattern,
    salient,
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing a statement says: ``slot`` holds ``value``, or no longer does (``ended``)."""

    holder: str
    slot: str  # residence, employer, role, relationship, diet, count:<noun>, plan, done,
    #            ended, like, dislike, change, has
    value: frozenset[str]
    ended: bool = False
    number: int | None = None
    # What an ending is of, when its words say more than that ("our old pram"): the
    # last word, or a name in it -- "car seat" does not end "my car", "the Tucson house"
    # ends "we live in Tucson".
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


# A stay for a while, not a home: "staying with my parents for a week while the flat is
# painted", "in Porto for a couple of nights".
_TEMPORARY = regex.compile(
    r"\b(?:this\s+week|for\s+(?:work|a\s+conference|the\s+weekend|a\s+few\s+days)|visiting|"
    r"trip|vacation|holiday|on\s+a\s+(?:trip|visit)|layover|meeting|hotel|airport|"
    r"conference|tonight|today|for\s+(?:a|an|one|two|three|a\s+few|a\s+couple(?:\s+of)?|"
    r"\d+)\s+(?:more\s+)?(?:nights?|days?|weeks?|weekends?)|while\s+(?:the|our|my)\b)\b",
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
        rf"staying|crashing|raised|up|down|out|over|landlord|neighbou?rs?|"
        # "our first Christmas in Tromsø": a season or a year somewhere is lived there
        rf"first\s+(?:winter|year|christmas))\s+(?:[\w'’\-]+\s+){{0,3}}?"
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
    # where the way to work starts: "the commute from Harrow"
    regex.compile(
        rf"(?:\b(?:i|we)\s+commute|\b(?:my|our|the)\s+(?:daily\s+)?commute)\s+(?:in\s+)?from\s+"
        rf"{_PLACE}(?![^.!?]*\b(?:for|of)\s+(?:my|his|her|their)\b)",
        _I,
    ),
    # "unpacked in the Graz house", "settled into the Bath flat"
    regex.compile(
        r"\b(?:unpacked|moved|settled|living|live[sd]?)\s+(?:in|into)\s+(?:the|our|my)\s+"
        rf"(?:new\s+)?{_PLACE}\s+(?:house|flat|apartment|place|home)\b",
        _I,
    ),
    # a home of one's own, after living with others: "my first week in my own place"
    regex.compile(
        r"\b(?:in|into|got|have|found|bought)\s+(?:my|our)\s+(?:very\s+)?(?P<v>own)\s+"
        r"(?:place|flat|apartment|house|home)\b",
        _I,
    ),
    # "living at my parents' place", "staying with my sister"
    regex.compile(
        r"\b(?:live|lives|living|staying|crashing|moved\s+in)\s+(?:at|with|in)\s+"
        r"(?P<v>(?:my|our|a|an|\w+['’]s)\s+"
        r"[^,.;:!?()]{1,30}?)(?=\s*(?:$|[,.;:!?()]|\s(?:for|since|until|till|now|and|but|so)\b))",
        _I,
    ),
)


# "We relocated last month" says where they live when the statement names
# the place elsewhere: "Greetings from Lima!", "new city — Lima".
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


_EMPLOYER_RULES = (
    _slot_rule(
        r"works?\s+(?:at|for)|working\s+(?:at|for)|employer\s+is|employed\s+(?:at|by)|"
        rf"(?:i{_APOS}m|i\s+am|is)\s+(?:now\s+)?at|(?:been|be)\s+at|"
        # "I'm over at Philips", not "over at Mum's"
        rf"(?:i{_APOS}m|i\s+am|is)\s+over\s+at(?=\s+(?-i:[A-Z])[\p{{L}}\-]+\b(?!{_APOS}s))|"
        r"joined(?=\s+(?:the\s+)?(?-i:[A-Z])|\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}"
        r"(?:company|firm|startup|consultancy|agency|bank|school|hospital|clinic|lab|studio|"
        r"practice|fintech|nonprofit|charity)\b)|"
        r"start(?:s|ed)?\s+at|"
        # "first shift at the depot done", not a first day at the gym or at school
        r"first\s+(?:day|week|month|shift)\s+(?:of\s+work\s+|on\s+the\s+job\s+)?at(?!\s+"
        r"(?:the\s+)?(?:new\s+)?(?:gym|school|uni|university|college|camp|nursery|daycare|pool|"
        r"club|class|beach)\b)|"
        rf"job\s+at|(?:i{_APOS}ve|has)\s+moved\s+to|now\s+at|teach(?:es)?\s+at|"
        rf"(?:contractor|consultant|accountant|accounting|volunteer)\s+for|team\s+at|"
        rf"(?:i{_APOS}m|i\s+am)\s+with"
    ),
    # Gig work for a named firm: "I drive for Lyft", "doing deliveries for Deliveroo".
    regex.compile(
        r"\b(?:drive[sn]?|driving|deliver(?:s|ing)?|ride[sn]?|riding|(?:do|does|doing)\s+"
        rf"(?:deliveries|delivery|shifts|gigs)|write[sn]?|writing|freelanc(?:e|es|ing))\s+for\s+"
        rf"{_A}(?=(?-i:[A-Z])){_VALUE}{_END}",
        _I,
    ),
)
# Working for oneself: "opened my own practice", "went freelance", "self-employed now".
_OWN_WORK = regex.compile(
    r"\b(?:opened|started|set\s+up|launched|founded|run|runs|running)\s+(?:my|our|\w+['’]s)\s+"
    r"own\s+(?:[\w\-]+\s+){0,2}?(?P<v>practice|business|company|firm|shop|studio|agency|"
    r"clinic|consultancy|bakery|cafe|café|restaurant|salon|store|startup)\b|"
    r"\b(?:went|gone|going|am|is|i['’]m)\s+(?P<v>freelance|self-employed)\b|"
    r"\bwork(?:ing)?\s+for\s+(?P<v>myself|ourselves)\b",
    _I,
)
# Who the holder works with says where: "my boss at Philips", "my colleagues at the bank".
_WORKMATES_AT = (
    r"(?:boss|manager|colleagues?|co-?workers?|office|workplace)\s+at\s+"
    rf"{_A}{_VALUE}{_END}"
)


# Out of work: every job and employer said before ends.
_JOBLESS = regex.compile(
    rf"\b(?:i{_APOS}m|i\s+am|i|we|(?-i:[A-Z])\w+\s+is|(?-i:[A-Z])\w+)\s+(?:\w+\s+)?(?:retired|"
    r"unemployed|jobless|between\s+jobs|out\s+of\s+work)\b(?!\s+(?:from|as)\b)|"
    # said with its subject left out: "been out of work since June"
    r"^\W*(?:been\s+|still\s+|currently\s+)?(?:unemployed|jobless|between\s+jobs|"
    r"out\s+of\s+work)\b|\b(?:got|was|been)\s+(?:laid\s+off|"
    rf"fired|made\s+redundant)\b(?!\s+from)|\blost\s+(?:my|\w+{_APOS}s)\s+job\b|"
    r"\blet\s+(?:me|us|\w+)\s+go\b(?=\s*(?:$|[,.;!]|\s+(?:last|this|yesterday|today|on|in)\b))",
    _I,
)


def _own_work(said: str) -> frozenset[str]:
    """Working for oneself is one employer, whatever the words: "freelance", "myself",
    "self-employed"; one's own practice is that practice, owned."""
    said = said.casefold()
    if said in ("freelance", "self-employed", "myself", "ourselves"):
        return frozenset({"self"})
    return frozenset({"own", _stem(said)})


_ROLE_WORDS = (
    r"(?:developer|dev|engineer|nurse|teacher|manager|lead|director|student|designer|analyst|"
    r"scientist|intern|consultant|principal|professor|doctor|dr|officer|assistant|associate|"
    r"architect|pm|chef|cook|clerk|accountant|lawyer|editor|writer|researcher|postdoc|"
    r"technician|administrator|admin|supervisor|coordinator|specialist|head|founder|ceo|cto|"
    r"vp|owner|partner|worker|ic|contractor|treasurer|chair|chairperson|chairman|chairwoman|"
    r"secretary|president|"
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
        rf"(?:^|\b(?:i{_APOS}m|i\s+am|(?-i:im)|[A-Z]\w+\s+is|works?\s+as|working\s+as|promoted\s+to|"
        rf"(?:made|makes?|making)(?:\s+(?:me|him|her|(?-i:[A-Z])\w+))?|became|(?:bumped|moved|stepped)\s+up\s+(?:to|as)|role\s+is|title\s+is|(?:new\s+)?(?:role|"
        rf"job|position)\s+as|back\s+to\s+being|now|currently|officially|as|into|"
        # a new title read off the things that carry it: "new lanyard says Team Lead"
        rf"(?:badge|title|card|signature|nameplate|lanyard)\s+(?:now\s+)?(?:says|reads)|"
        rf"(?:title|role|position)\s+"
        rf"(?:changed\s+to|is\s+now)))\s+(?:now\s+)?(?:(?:a|an|the)\s+)?"
        rf"(?P<v>(?:[\p{{L}}\-'’]+\s+){{0,3}}?{_ROLE_WORDS}s?)\b",
        _I,
    ),
)
_MOVED_UP = regex.compile(
    r"\b(?:promoted|made|became|bumped\s+up|moved\s+up|stepped\s+up|qualified)\b", _I
)
# A job said with its verb: "I teach year 3" is a teacher's role.
_ROLE_VERBS = regex.compile(
    r"\b(?:[Ii]|[A-Z]\w+)\s+(?P<verb>teach(?:es)?|coach(?:es)?|nurse[sd]?|manage[sd]?)\b(?!\s+to\b)"
)
_ROLE_OF_VERB = {"teach": "teacher", "coach": "coach", "nurse": "nurse", "manag": "manager"}
_PARTNERS = r"boyfriend|girlfriend|gf|bf|wife|husband|hubby|fianc[ée]e?"
# What a partner word says of the speaker: "my husband …" is said by someone married.
_STATUS_OF_PARTNER = {
    "wife": "married", "husband": "married", "hubby": "married", "boyfriend": "dating",
    "girlfriend": "dating", "gf": "dating", "bf": "dating",
}  # fmt: skip
_RELATIONSHIP = (
    (
        "single",
        r"(?<!\bevery\s)single(?!\s+(?:day|morning|night|week|time|one|thing|bit|person|"
        r"word|file|room|bed|cream|malt|use|market|mum|mom|dad|parent))|(?<!\bnot\s)on\s+my\s+own|"
        r"no\s+(?:partner|boyfriend|girlfriend|wife|husband)\b|broke\s+up|split\s+up|separated|"
        r"separating|divorced|divorcing|"
        r"(?:going\s+through|getting)\s+a\s+divorce|"
        # "we split last year", not "we split the bill" or "we split rent evenly": split with
        # nothing split after it
        r"split(?=\s*(?:$|[,.;!?)]|(?:up|with|in|last|this|after|before|for\s+good|a\s+while|"
        r"\d+\s+\w+\s+ago)\b))|"
        r"divorce\s+(?:is|was|went|got|has\s+been)\s+(?:\w+\s+)?(?:finali[sz]ed|final|through|"
        r"official|done)|"
        r"ex-(?:girlfriend|boyfriend|gf|bf|wife|husband|partner|fianc[ée]e?)\s+now|ex\s+now|"
        rf"(?:and\s+i|and\s+me)\s+(?:are|{_APOS}re)\s+(?:done|over|finished)\b|"
        r"called\s+it\s+quits|parted\s+ways|went\s+our\s+separate\s+ways|ended\s+things|"
        r"(?:no\s+longer|not)\s+together",
    ),
    ("widowed", r"widowed|widow|widower"),
    (
        # Something casual, not yet a couple: "seeing someone, it is casual".
        "seeing",
        r"seeing\s+(?:someone|somebody|a\s+(?:guy|girl|man|woman|boy|lad|bloke)\b)|"
        r"nothing\s+serious|casually\s+dating|talking\s+to\s+(?:someone|a\s+(?:guy|girl))",
    ),
    (
        "dating",
        r"(?<!casually\s+)dating|(?<!\b(?:first|old|former|last|previous|ex|school|childhood)"
        r"[\s\-])(?:boyfriend|girlfriend)|made\s+it\s+official|together\s+\d+|"
        r"been\s+together|(?:live|living)\s+together|moved\s+in\s+together|in\s+a\s+relationship|"
        r"back\s+together",
    ),
    ("engaged", r"engaged|fianc[ée]e?|proposed"),
    (
        "married",
        r"married|remarried|eloped|tied\s+the\s+knot|got\s+hitched|wedding\s+was|honeymoon|"
        r"my\s+(?:wife|husband)\b|(?:husband|man)\s+and\s+wife|wife\s+and\s+husband",
    ),
)


def _relationship(clause: str, who: str, holder: str) -> Iterator[Claim]:
    """The speaker's relationship: "my girlfriend Sasha lives with me" says the speaker is
    dating, though the clause is about Sasha."""
    own = rf"(?:my|our|{regex.escape(holder)}{_APOS}s)" if holder else r"(?:my|our)"
    partner = pattern(rf"\b{own}\s+(?P<p>{_PARTNERS})\b", _I).search(clause)
    said: set[str] = set()
    if partner is not None:
        who = holder
        said.add(_STATUS_OF_PARTNER.get(partner.group("p").casefold(), "engaged"))
    for status, words in _RELATIONSHIP:
        if pattern(rf"\b(?:{words})\b", _I).search(clause):
            said.add(status)
    if "single" in said:
        said -= {"dating", "married"}  # "my ex-girlfriend now": no longer dating
    for status in sorted(said):
        yield Claim(who, "relationship", frozenset({status}))


_DIET = (
    ("vegan", r"vegan"),
    ("vegetarian", rf"vegetarian|(?:do|does)(?:n{_APOS}?t|\s+not)\s+eat\s+meat|no\s+meat"),
    ("pescatarian", r"pescatarian|eat(?:ing)?\s+fish"),
    ("omnivore", r"eat(?:ing|s)?\s+meat(?:\s+again)?|eating\s+meat"),
)


def _state_claims(clause: str, who: str, holder: str) -> Iterator[Claim]:
    additive = _ADDITIVE.search(clause) is not None
    if not _TEMPORARY.search(clause):
        for rule in _RESIDENCE_RULES:
            for m in rule.finditer(clause):
                if not _negated(clause, m.start()):
                    value = salient(m.group("v")) or frozenset({m.group("v").casefold()})
                    yield Claim(who, "residence", value, said=m.group("v"))
    jobless = _JOBLESS.search(clause) is not None  # "lost my job at Acme" says no employer
    for rule in () if jobless else _EMPLOYER_RULES:
        for m in rule.finditer(clause):
            value = salient(m.group("v"))
            if value and not additive and not _negated(clause, m.start()):
                yield Claim(who, "employer", value, said=m.group("v").strip())
    for m in _OWN_WORK.finditer(clause):
        if not additive and not _negated(clause, m.start()):
            yield Claim(who, "employer", _own_work(m.group("v")), said=m.group(0))
    own = rf"(?:my|our|{regex.escape(holder)}{_APOS}s)" if holder else r"(?:my|our)"
    for m in pattern(rf"\b{own}\s+{_WORKMATES_AT}", _I).finditer(clause):
        value = salient(m.group("v"), holder.split())
        if value and not additive and not jobless:
            yield Claim(holder, "employer", value, said=m.group("v").strip())
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
        if pattern(rf"\b(?:{words})\b", _I).search(clause):
            yield Claim(who, "diet", frozenset({diet}))
            break
    if not additive and not pattern(r"\bmore\b", _I).search(clause):
        yield from _counts(clause, who)


_COUNT_RULES = (
    # "managing a team of six"
    regex.compile(
        rf"\b(?P<noun>team|staff|class|band|crew|household)\s+of\s+(?:about\s+|around\s+)?"
        rf"(?P<n>{_NUM})\b",
        _I,
    ),
    # "a trio now": the members of a band
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
    # "baby number two", "a four-piece (band)"
    regex.compile(rf"\b(?P<noun>baby|kid|child)\s+(?:number|no\.?|#)\s*(?P<n>{_NUM})\b", _I),
    # "number two arrived": a child, by the count it makes
    regex.compile(
        rf"(?:^|[,.;:!?]\s*)(?:number|no\.?|#)\s*(?P<n>{_NUM})(?P<noun>)\s+(?:has\s+)?"
        r"(?:arrived|is\s+here|was\s+born|came\s+(?:early|along))\b",
        _I,
    ),
    regex.compile(
        rf"\b(?P<noun>reports|kids|employees|team)\s+went\s+(?:up|down)\s+to\s+"
        rf"(?P<n>{_NUM})\b",
        _I,
    ),
)
SOME = -1  # "we bought a van": at least one, after none
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
    rf"keeps?|employs?)\b|"
    # Only with a count right after: "a single dad with three kids" (not "took three kids to
    # the zoo with my sister": an outing counts who went, not who one has), and a milestone,
    # which is where things stand ("just crossed 60 staff").
    rf"\b(?:with|crossed|reached|topped|hit)\s+(?=(?:\d+|{_MANY_WORDS})\b)|"
    # "it's", "we're", "I've"; not a possessive ("the neighbour's")
    rf"\b(?:it|that|there|here|he|she|who|what|everything|everyone){_APOS}s\b|{_APOS}(?:re|ve)\b|"
    # "four children under ten, no sleep": a family counted in a phrase of its own, no verb
    r"^\W*(?:\d+|two|three|four|five|six|seven|eight)\s+(?:kids|children|boys|girls)\s+"
    r"under\s+(?:\d+|\w+)\b",
    _I,
)
_MANY = rf"(?:{_MANY_WORDS})"
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
# Nouns counted as one kind: "two kids" and "baby number two … three kids now".
_COUNT_KIND = {
    "kid": "kid", "kids": "kid", "child": "kid", "children": "kid", "son": "kid", "sons": "kid",
    "daughter": "kid", "daughters": "kid", "baby": "kid", "babies": "kid",
    "employee": "people", "employees": "people", "people": "people", "engineer": "people",
    "engineers": "people", "team": "people", "company": "people", "staff": "people",
    "us": "people", "person": "people", "members": "people", "analysts": "people",
    "household": "people", "grandchildren": "grandkid", "grandkids": "grandkid",
    "grandchild": "grandkid", "grandkid": "grandkid", "grandbabies": "grandkid",
    "grandbaby": "grandkid", "grandsons": "grandkid", "granddaughters": "grandkid",
    "cat": "cat", "cats": "cat", "dog": "dog", "dogs": "dog", "car": "car", "cars": "car",
    "report": "report", "reports": "report", "pet": "pet", "pets": "pet",
    "member": "people", "now": "people",  # "a trio now"
}  # fmt: skip


# The hours a week someone works: "I work 38 hours a week", "contract cut to 20 hrs", "a 30-hour
# week" -- a count that stands, unlike "slept 9 hours".
_WORK_HOURS = regex.compile(
    r"\b(?:to|at|work(?:s|ing)?|doing|on)\s+(?P<n>\d{1,2})\s*(?:h|hrs?|hours)\b|"
    r"\b(?P<n>\d{1,2})[\s-]*(?:h|hrs?|hours?)(?:\s+|-)?(?:a|per|each|/)\s*w(?:ee)?k\b|"
    r"\b(?P<n>\d{1,2})[\s-]*(?:h|hour)\s+weeks?\b",
    _I,
)
_WORK_WORD = regex.compile(
    r"\b(?:work\w*|job|shifts?|contract|overtime|weeks?|weekly|part[\s-]time|full[\s-]time)\b",
    _I,
)


# What someone weighs: "I'm 70 kg", "I weigh 11 stone", "the scales read 68.2 today".
_WEIGHT = regex.compile(
    rf"\b(?:(?:i{_APOS}m|i\s+am|down\s+to|up\s+to)\s+(?P<n>\d{{2,3}}(?:[.,]\d)?)\s*"
    r"(?:kg|kilos?|lbs?|pounds|stone)\b|"
    r"(?:i\s+weigh|weighed\s+in\s+at|scales?\s+(?:said|says|shows?|showed|read|reads))\s+"
    r"(?:(?:about|around|just|only)\s+)?(?P<n>\d{2,3}(?:[.,]\d)?)(?!\s*(?:%|percent|cm|m)\b))",
    _I,
)
# What someone earns: "my salary is 31k", "I earn 44k", "70k a year with the bonus".
_INCOME = regex.compile(
    rf"\b(?:(?:salary|base(?:\s+(?:salary|pay))?|income)(?:{_APOS}s|\s+is)?|"
    r"i\s+(?:make|earn)|(?:making|earning))\s+(?:now\s+)?(?:about\s+|around\s+)?[$£€]?\s?"
    r"(?P<n>\d{2,3}(?:[.,]\d)?)(?P<k>k)\b|"
    r"[$£€]?(?P<n>\d{2,3}(?:[.,]\d)?)(?P<k>k)\s+(?:a|per|/)\s*(?:year|yr)\b",
    _I,
)


def _counts(clause: str, who: str) -> Iterator[Claim]:
    """How many of one kind of thing: "two kids", "a staff of 9", "down to one bike"."""
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
    if _WORK_WORD.search(clause):
        for m in _WORK_HOURS.finditer(clause):
            found.setdefault("work hours", int(m.group("n")))
    for m in _WEIGHT.finditer(clause):
        found.setdefault("weight", round(float(m.group("n").replace(",", "."))))
    for m in _INCOME.finditer(clause):
        amount = float(m.group("n").replace(",", ""))
        found.setdefault("income", round(amount * (1000 if m.group("k") else 1)))
    for m in _ACQUIRED.finditer(clause):
        found.setdefault(_count_kind(m.group("noun")), SOME)
    for m in _LOST_ONE.finditer(clause):
        found.setdefault(_count_kind(m.group("noun")), FEWER)
    for kind, n in found.items():
        yield Claim(who, f"count:{kind}", frozenset({kind}), number=n)


def _counted_noun(after: str) -> str | None:
    """The noun a number counts, from the words after it: a plural among the next two
    ("two retainer clients"), else the first word that is not a stop word; none for a
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


# A slot said to have changed, its value unsaid: "new job!", "got promoted", "we moved house".
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
