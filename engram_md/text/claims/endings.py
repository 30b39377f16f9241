"""Endings: what a statement says ended ("left Shopify", "the Volvo died"), was done
("finally called the bank"), was put right ("passport renewed") or found ("got the job"), and
how life moved on (a birth, a graduation, a job found, back from leave)."""

from __future__ import annotations

from collections.abc import Iterator

import regex

from .clauses import _PEOPLE
from .slots import _A, Claim
from .words import _ADVERB, _APOS, _I, _LEMMA, _WORD, _stem, pattern, salient

# Cues that end what follows them ("left Shopify", "scrapped Angular", "bye verizon").
_ENDING = regex.compile(
    r"\b(?:left|leaving\s+(?!for\b)|quit|quitting|dropped(?:\s+out\s+of)?|ditched|scrapped|"
    r"turned\s+down|declined|passed\s+on|said\s+no\s+to|accepted\s+an\s+offer\s+(?:on|for)|f[ae]ll(?:ing)?\s+out\s+with|"
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
# The same, with what ends first: "Ember is out", "the old Pixel finally died", "the cast is gone".
_ENDED_SUBJECT = regex.compile(
    r"(?:^|[,.;:!?]\s*|\b(?:the|my|our)\s+)(?P<v>[\p{L}\p{N}][\p{L}\p{N}'’\-]*"
    r"(?:\s+[\p{L}\p{N}][\p{L}\p{N}'’\-]*){0,2})(?:\s+|(?=['’]s\s))"
    rf"(?:(?:is|are|has\s+been|got|(?<=\w){_APOS}s)\s+(?:finally\s+|officially\s+|now\s+|\p{{L}}+ly\s+|"
    r"all\s+)?"
    # "off to the recycling centre", "in a cupboard": out of use, in so many words
    r"(?:gone\s+to\s+(?:the\s+)?(?:scrap\w*|junk\w*|tip|dump|crusher|breakers?|"
    r"\w+\s+in\s+the\s+sky)|in\s+(?:a|the)\s+drawer|in\s+storage|(?:gathering|collecting)\s+"
    r"dust|out|gone|over|dead|history|cancell?ed|off\s+the\s+table|for\s+sale|no\s+more|closed|"
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


_PRONOUN = regex.compile(r"it|that|this|them|those|these", _I)
# "Ripping Firebase out of the project": what is torn out ends.
_TORN_OUT = regex.compile(
    r"\b(?:(?:rip|rips|ripp(?:ed|ing)|yank(?:s|ed|ing)?|tore|tear(?:s|ing)?|cut|cutting)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+out|(?:traded|trading|trade)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+in|(?:sold|gave)\s+(?:the\s+|my\s+|"
    r"our\s+)?(?P<v>[^,.;:!?()]{1,40}?)\s+(?:off|away))\b",
    _I,
)
# Nouns that name what holds the point rather than the point ("the bakery idea").
_CONTAINERS = frozenset(
    _stem(w)
    for w in """program programme course class degree plan idea thing job role app application
    subscription membership account service project lessons training contract""".split()
)


def _ended(who: str, phrase: str, ignore: list[str], *, whole: bool = False) -> Iterator[Claim]:
    """An ending of ``phrase``; ``whole`` when the phrase is a clause an "it" stood for, whose
    every word may name what ended."""
    # "knee is fully (healed)": the knee, not how it healed
    phrase = _ADVERB.sub(
        "", pattern(r"\s+(?:is|are|was|were|has|have|got)\b.*$", 0).sub("", phrase)
    )
    value = salient(phrase, ignore)
    if not value:
        return
    words = [w for w in _WORD.findall(phrase) if _stem(w) in value]
    core = {_stem(w) for w in words if w[0].isupper()}
    if words:
        core.add(_stem(words[-1]))
        if len(words) > 1 and _stem(words[-1]) in _CONTAINERS:  # "the night course"
            core.add(_stem(words[-2]))
    if whole:
        core.update(value)
    yield Claim(who, "ended", value, ended=True, core=frozenset(core), said=phrase.strip())


# Cues that the work of a plan was done or called off, wherever they stand in the clause.
_DONE = regex.compile(
    r"\b(?:finished|completed|done|submitted|shipped|sent|delivered|handed\s+in|turned\s+in|"
    r"went\s+in|achieved|booked(?!\s+(?:\S+\s+){0,3}?for\b)|ordered|installed|repaired|set\s+up|picked\s+up|returned|"
    r"filed|published|launched|released|wrapped\s+up|went\s+live|is\s+live|migrated|renewed|"
    rf"paid(?:\s+off)?|cancell?ed|called\s+off|scrapped|is\s+off|{_APOS}s\s+off|"
    rf"didn{_APOS}?t\s+end\s+up|not\s+happening|defended|passed|signed|got\s+back|"
    # a thing arrived, not a person: "mum arrived for the weekend" does no work
    rf"(?<!\b{_PEOPLE}\s+(?:(?:has|have|finally|just)\s+)?)arrived|"
    r"sorted|fixed|postponed\s+indefinitely|went\s+out|went\s+(?:really\s+)?well|"
    r"cancel|had\s+(?:his|her|their)|"
    # called off in other words: "the Friday demo got axed", "the plan was shelved"
    r"got\s+(?:killed|axed|canned|nixed|shelved|reversed|dropped)|"
    # "hallway's tiled", "the tap is fixed": done, said of the work itself
    rf"(?:is|{_APOS}s|are|was|were)\s+(?:been\s+)?(?:all\s+|finally\s+|now\s+)?(?:[a-z]+ed|done)(?=\W|$)"
    r"(?!\s+(?:for|to|until|till)\b)"  # "is booked for April" is still to come
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


_EMPLOYED = regex.compile(
    r"\b(?:start(?:s|ed|ing)?|begin(?:s|ning)?|began)\s+(?:my\s+|a\s+|the\s+)?(?:new\s+)?"
    r"(?:job|role|position)\b|\bgot\s+(?:a|the)\s+job\b|\b(?:got|was|been)\s+hired\b|"
    r"\blanded\s+a\s+job\b|\bback\s+in\s+work\b|"
    # "a month into the new job", not "the new job search"
    r"\b(?:the|my)\s+new\s+job\b(?!\s+(?:search|hunt|interview|offer|application|posting))",
    _I,
)
# The end of studies: "I finished my degree", "defended my thesis".
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
        pattern(
            rf"\b(?:his|her|their|\w+{_APOS}s)\s+(?:\w+\s+)?(?:baby|son|daughter|twins)\b", _I
        ).search(clause)
        is not None
    )


_BORN = regex.compile(
    # "born at 6:40 this morning", "born on Tuesday": a birth told as news, not "born in 1990"
    r"^\W*born\s+(?:(?:at|on)\b|\d|yesterday|today|this|last|early|late|just)|"
    rf"\b(?:was|were|got)\s+born\b|\bgave\s+birth\b|\bbaby(?:{_APOS}s|\s+is|\s+has)\s+"
    r"(?:here|arrived)\b|\b(?:baby|son|daughter|twins|boy|girl)\s+(?:[\w\-]+\s+){0,2}"
    r"(?:arrived|was\s+born|were\s+born)\b|\blost\s+the\s+baby\b|\bmiscarr\w+|"
    # "Noa is 10 days old": a birth told by the age it gives
    r"\b(?:(?-i:[A-Z])\w+|she|he|(?:the|our|my)\s+(?:baby|son|daughter|boy|girl|little\s+one))\s+"
    r"(?:is|turns?|turned)\s+(?:\d+|one|two|three|four|five|six)\s+(?:days?|weeks?)\s+old\b",
    _I,
)
_ON_LEAVE = regex.compile(
    r"\b(?:off\s+(?:work|sick)|signed\s+off|on\s+(?:\w+\s+)?leave|on\s+sick\s+leave|"
    r"stay-at-home|furlough\w*)\b",
    _I,
)
# Back from a leave: "back at work as of Monday", "back in the office after paternity leave".
_BACK_FROM_LEAVE = regex.compile(
    r"\bback\s+(?:at|in|to)\s+(?:the\s+|my\s+)?(?:work|office|job|desk)\b|"
    r"\bcleared\s+(?:me\s+)?(?:to|for)\s+(?:return|work|go\s+back)\b",
    _I,
)


# What was taken on, and can be dropped or declined: "signed up for the bootcamp" is ended by
# "dropped out of the pottery course", "accepted the offer at Leiden" by "declined Leiden".
_TAKEN_ON = regex.compile(
    r"\b(?:signed\s+up\s+(?:for|to)|enrolled\s+(?:in|on|at|for)|registered\s+(?:for|with)|"
    r"accepted\s+(?:the|an|a|their)\s+(?:offer|place|spot|position)\s+(?:at|from|with|on)|"
    r"committed\s+to)\s+" + _A + r"(?P<v>[^,.;:!?()]{1,40}?)(?=\s*(?:$|[,.;:!?()]|\s(?:and|but|"
    r"so|because|starting|starts|from|in|on|for|last|this|yesterday|today|next)\b))",
    _I,
)
# A short clause that is only a thing and its end: "cast off", "exams over".
_HEADLINE_END = regex.compile(
    r"^\W*(?:the\s+|my\s+|our\s+)?(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)\s+(?:returned|"
    r"removed|gone|healed|sold|cancell?ed|scrapped|binned|handed\s+back|given\s+back|over)"
    r"\W*$",
    _I,
)
# Ill now, and well again: "I've got the flu" → "finally feeling fine again".
_ILLNESS = (
    r"covid|flu|(?:a|the|bad|heavy)\s+cold|chest\s+infection|pneumonia|bronchitis|tonsillitis|"
    r"strep|a\s+virus|food\s+poisoning|norovirus|stomach\s+bug|fever|shingles|chickenpox|"
    r"glandular\s+fever|mono"
)
_ILL = regex.compile(
    rf"\b(?:i{_APOS}ve\s+got|i\s+have|i{_APOS}m\s+(?:down|sick|off|laid\s+up)\s+with|"
    rf"(?:came|come)\s+down\s+with|tested\s+positive\s+for|got)\s+(?:the\s+)?(?:{_ILLNESS})\b|"
    rf"\b(?:i{_APOS}m|i\s+am)\s+(?:\w+\s+)?(?:sick|ill|poorly|unwell|bedridden)\b|"
    r"\btested\s+positive\b|"
    # an injury that keeps one from things: "broke my wrist", "on crutches"
    r"\b(?:broke|broken|fractured|sprained|tore|torn|busted)\s+(?:my\s+)?(?:left\s+|right\s+)?"
    r"(?:wrist|arm|leg|ankle|foot|hand|finger|toe|collarbone|ribs?|knee|hip|shoulder|acl)\b|"
    r"\b(?:in\s+a\s+cast|on\s+crutches)\b",
    _I,
)
_RECOVERED = regex.compile(
    r"\b(?:feeling\s+(?:\w+\s+)?(?:better|human|normal|myself|like\s+myself)"
    r"(?!\s+(?:about|that|with)\b)|back\s+on\s+my\s+feet|recovered|all\s+better|"
    rf"over\s+the\s+(?:worst|{_ILLNESS}|bug|virus)|tested\s+negative|"
    r"no\s+longer\s+(?:sick|ill|contagious|poorly)|"
    rf"cast\s+(?:is\s+|{_APOS}s\s+|came\s+|finally\s+)?off|out\s+of\s+(?:the|my)\s+cast|"
    r"off\s+(?:the\s+)?crutches)\b",
    _I,
)
# Someone named, gone: "we buried Rolo on Sunday", "since Ana passed away". Said in the
# past as a rule, and what it ends -- a pet counted, a marriage -- named them.
_LOSS = regex.compile(
    rf"\b(?:lost|buried)\s+(?:(?:our|my)\s+(?:\w+\s+)?)?(?P<v>(?-i:[A-Z])\p{{L}}+)\b(?!{_APOS}s)|"
    # a first name alone ("Whitney Houston died" is news, not a loss); passed, not "passed the
    # test" or "passed on the offer"; not years ago
    r"(?<!(?-i:[A-Z])\p{L}+\s)\b(?P<v>(?-i:[A-Z])\p{L}+)\s+(?:(?:has|had|sadly)\s+)?"
    r"(?:passed\s+away|died(?!\s+(?:the|a|an|my|our|his|her|their|it|of\s+laughing)\b)|"
    r"passed(?=\s*(?:$|[,.;!?]|\s+(?:last|this|yesterday|today|in|peacefully|suddenly|"
    r"recently|overnight)\b)))"
    r"(?![^.!?]*\b(?:years|decades)\s+ago\b)",
    _I,
)
# Papers that allow a stay or work are one kind: waiting on a visa is ended by a permit.
_PAPERS = frozenset(_stem(w) for w in "visa permit residency".split())
_GRANTED = regex.compile(
    r"(?P<v>[\p{L}\-]+(?:\s+[\p{L}\-]+)?)\s+(?:(?:is|was|has\s+been|got|finally)\s+)*"
    r"(?:approved|granted|came\s+through|issued)\b",
    _I,
)
# Something a plan would get, come: "new passport came in the post" does "renew my passport".
_ARRIVED = regex.compile(
    r"(?P<v>[\p{L}\-]+)\s+(?:(?:has|have|finally)\s+)*(?:arrived|came\s+in\s+the\s+(?:mail|post)|"
    r"came\s+through|turned\s+up\s+in\s+the\s+(?:mail|post)|(?:got|was|were)\s+delivered)\b",
    _I,
)
_GETTING = frozenset(_stem(w) for w in "renew get order buy replace apply request collect".split())


def _as_papers(value: frozenset[str]) -> frozenset[str]:
    """A visa, a permit or residency, said as the one kind of paper they are."""
    return value | _PAPERS if value & _PAPERS else value
