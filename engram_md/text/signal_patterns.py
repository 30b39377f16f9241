"""The built-in signal patterns: the vocabulary they share and the table itself.

Each pattern carries a level, a category hint for extractors and reports, and a *gate* (sets of
words at least one of which must occur in any text it can match; :mod:`.signals` checks the
gate before it searches). The families:

    HIGH    correction   "actually, I…", "no, that's wrong", "that's not right", "correction:"
            preference   "I always/never/prefer/hate/love/want/need", "don't use…",
                         "please always…", a standing rule "always/never <do something>"
            contrast     "…, not <the other one>" ("we deploy with fly, not heroku")
            decision     "we decided/agreed", "the decision is", "going forward", "from now on"
            identity     "my name/email/role is", "I work/live at/in", "I'm a <noun>", "I'm <Name>",
                         "I'm allergic to…"
            remember     "please remember/note", "important:", "fyi", "for the record"
            commitment   "I'll / I will / I won't / I'm going to", "I promise", "remind me to",
                         "by Friday"
    MEDIUM  principle    "I think/believe/feel", "… is important to me", "I value"
            habit        "usually", "typically"
            preference   "I like/dislike/enjoy", "I'm into / a big fan of"
            context      "my team/project/stack/setup"
            project      "we use/deploy/host/pin …", "the repo/tests/CI uses/runs/lives …"
            event        a past-tense verb within one clause of "yesterday / last week / 3 days
                         ago / on Monday…"; "we went/had/visited…"
            relationship "my wife/boss/friend…"
            skill        "I know how to / learned / can / am good at / am learning"

Matching is English only and case-insensitive. Typographic apostrophes (’) count as
apostrophes, since many chat clients substitute them. Unlike the reference system, "I am
at/in" alone is not an identity signal ("I am in a meeting" is not about who someone is).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex as _re

from ..core.models import Category, Level

PATTERN_FLAGS = _re.IGNORECASE

_WORD = _re.compile(r"\w+")
# For ASCII text, a byte table that lower-cases word characters and blanks everything else:
# the same split as ``\w+`` (ASCII ``\w`` is letters, digits and underscore), several times
# cheaper than a regex findall.
_ASCII_WORDS = bytes(
    ord(chr(c).lower()) if c < 128 and (chr(c).isalnum() or chr(c) == "_") else 32
    for c in range(256)
)


def words_of(text: str) -> frozenset[str]:
    """The distinct words of ``text``, case-folded: what pattern gates are checked against.

    Words are maximal runs of ``\\w`` — the same notion of word that ``\\b`` uses in the
    patterns — so a word a pattern needs between two ``\\b`` is always one of these.
    """
    if text.isascii():
        return frozenset(text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())
    return frozenset(_WORD.findall(text.casefold()))


@dataclass(frozen=True, slots=True)
class Pattern:
    """One named regex of the scan, with the level it signals and a category hint.

    ``gate`` is an optimisation with a contract: for every set in it, any text the regex
    matches contains at least one word of that set (see ``words_of``). An empty gate means
    "always search" — user patterns have none.
    """

    name: str
    level: Level
    regex: _re.Pattern[str]
    category: Category | None = None
    gate: tuple[frozenset[str], ...] = ()

    def could_match(self, words: frozenset[str]) -> bool:
        """False when the gate proves the regex cannot match a text with these words."""
        return all(not group.isdisjoint(words) for group in self.gate)


# --- shared vocabulary ---------------------------------------------------------------------

_A = "['\u2019]"  # straight or typographic apostrophe
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY_NUMBER = r"\d{1,2}(?:st|nd|rd|th)?(?!\d)"

# Relative time words as people say them in a conversation.
_SPOKEN_TIME = (
    r"(?:yesterday|today|tonight|recently|just\s+now|the\s+other\s+day"
    r"|this\s+(?:morning|afternoon|evening|past\s+week(?:end)?)"
    r"|last\s+(?:night|evening|week(?:end)?|month|year|time|" + _WEEKDAY + r")"
    r"|earlier\s+(?:today|this\s+week)|on\s+(?:the\s+)?"
    + _WEEKDAY
    + r"|(?:minutes?|hours?|days?|weeks?|months?|years?)\s+ago)"
)
# One word of every alternative of _SPOKEN_TIME: its gate.
_SPOKEN_TIME_WORDS = (
    "yesterday today tonight recently now other morning afternoon evening past last earlier ago "
    + " ".join(_WEEKDAYS)
)

# Words and phrases that pin a statement to a moment in time: the spoken forms, plus written
# dates ("May 7th", "2026-03-01", "in 2019") — extractors rewrite "yesterday" into those.
TEMPORAL_MARKER = (
    r"(?:" + _SPOKEN_TIME + r"|\d{4}-\d{2}-\d{2}"
    r"|"
    + _MONTH
    + r"\.?\s+"
    + _DAY_NUMBER
    + r"|"
    + _DAY_NUMBER
    + r"\s+(?:of\s+)?"
    + _MONTH
    + r"|(?:in|since|during)\s+(?:"
    + _MONTH
    + r"\s+)?(?:19[5-9]\d|20[0-3]\d))"
)

# Past-tense verbs of things that happen (incidents, releases, life events).
_EVENT_VERBS = (
    "failed broke crashed deployed shipped launched released merged fixed went visited started "
    "finished moved got had met bought joined left quit attended graduated adopted ran saw took "
    "won lost signed tried wrote found received celebrated traveled travelled came spent "
    "watched played hired fired upgraded migrated installed"
).split()
# The irregular ones listed above, or any regular "-ed" form (painted, visited, …). An "-ed"
# adjective ("excited") slips through too; for a MEDIUM hint that is an acceptable price.
_PAST_VERB = "(?:" + "|".join(_EVENT_VERBS) + r"|[a-z]{3,}ed)"
# "We went / I had …" — a narrower list, since "I + verb" carries the event on its own.
_DID_VERBS = (
    "had went visited started finished moved attended joined graduated bought adopted "
    "traveled travelled met launched shipped deployed"
).split()
# Within one clause: no sentence punctuation or line break in between, and not too far apart.
_GAP = r"[^.!?\n]{0,60}?"

_CONTEXT_NOUNS = "team project stack setup repo codebase workflow".split()
# What a team says it does with its code, present tense ("we deploy with fly").
_PROJECT_VERBS = (
    "use deploy host run build ship release store keep target support follow pin lint format "
    "package publish test vendor require rely"
).split()
_PROJECT_VERB_FORMS = [form for verb in _PROJECT_VERBS for form in (verb, verb + "s")]
# What a project is made of, and what it is said to do.
_PROJECT_NOUNS = (
    "project repo repository app service codebase api backend frontend test tests suite ci "
    "build pipeline database db server site"
).split()
_PROJECT_STATE_VERBS = "use run live need require target depend".split()
_PROJECT_STATES = [f for v in _PROJECT_STATE_VERBS for f in (v, v + "s")] + (
    "written deployed hosted built".split()
)
_RELATIONS = (
    "wife husband partner spouse girlfriend boyfriend fiance fiancee fianc\u00e9 fianc\u00e9e "
    "friend friends mom mum mother dad father parent parents sister sisters brother brothers "
    "sibling siblings son sons daughter daughters kid kids children child baby grandma grandpa "
    "grandmother grandfather grandparents aunt uncle cousin cousins family boss manager "
    "colleague colleagues coworker coworkers co-worker co-workers teammate teammates roommate "
    "roommates neighbor neighbors neighbour neighbours mentor"
).split()

# "I'm a bit tired" is a degree phrase, not an identity.
_NOT_A_NOUN = (
    r"(?:bit|little|lot|tad|few|couple|quick|moment|second|minute|sec|while"
    r"|(?:big\s+|huge\s+)?fan)"  # "I'm a big fan of …" is a preference, not an identity
)
# Capitalised words after "I'm" that are not names.
_NOT_A_NAME = r"(?:ok|okay|sorry|so|not|just|fine|good|glad|here|back|sure|very|really|also)"


# "I" as a gate word, with the forms case-insensitive matching also accepts for it: the
# dotted capital İ (case-folds to "i̇") and the dotless ı.
_I_WORDS = "i i\u0307 \u0131"


def _gate(groups: Iterable[str | Sequence[str]]) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(g.split() if isinstance(g, str) else g) for g in groups)


def _p(
    name: str,
    level: Level,
    source: str,
    category: Category | None,
    *gate: str | Sequence[str],
) -> Pattern:
    return Pattern(name, level, _re.compile(source, PATTERN_FLAGS), category, _gate(gate))


# The HIGH patterns that cut their batch at once when an LLM extracts (each batch is a call;
# offline every HIGH one does): the turn corrects what was said, asks for something to be
# remembered, or sets a rule the agent must follow from now on, and the next prompt may
# depend on it. The other HIGH ones (a preference, a plan or promise, a decision, who someone
# is) are worth extracting but wait for their batch: in two-person chat they are frequent
# (13% of the LoCoMo dev turns, where cutting at each made 103 of 222 extractions), and their
# batch comes within max_turns, after a minute of quiet, or when the daemon stops.
URGENT: frozenset[str] = frozenset(
    {
        "correction_actually",
        "correction_no",
        "correction_not_right",
        "correction_why_say",
        "correction_explicit",
        "preference_dont",
        "preference_please",
        "preference_standing",
        "decision_going_forward",
        "decision_from_now_on",
        "remember_request",
        "remember_label",
        "remember_record",
        "commitment_remind",
    }
)

_H = Level.HIGH
_M = Level.MEDIUM
_C = Category

BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    # --- HIGH: corrections ------------------------------------------------------------------
    _p(
        "correction_actually",
        _H,
        r"\bactually,?\s+(?:i|my|we)\b",
        _C.CORRECTION,
        "actually",
    ),
    _p(
        "correction_no",
        _H,
        rf"\bno,?\s+(?:i|my|we|that{_A}?s|it{_A}?s)\s+(?:not|wrong|incorrect)\b",
        _C.CORRECTION,
        "no",
        "not wrong incorrect",
    ),
    _p(
        "correction_not_right",
        _H,
        rf"\bthat{_A}?s\s+(?:not\s+(?:right|correct|true|what\s+i\s+(?:said|meant))"
        r"|wrong|incorrect)\b",
        _C.CORRECTION,
        "that thats",
        "not wrong incorrect",
    ),
    _p(
        "correction_why_say",
        _H,
        r"\bwhy\s+did\s+you\s+(?:say|think)\s+that\b",
        _C.CORRECTION,
        "why",
        "say think",
    ),
    _p(
        "correction_explicit",
        _H,
        r"\bcorrection\s*:|\blet\s+me\s+correct\b|\bto\s+correct\s+myself\b"
        r"|\bi\s+(?:meant\s+to\s+say|misspoke|stand\s+corrected|was\s+wrong\s+about)\b",
        _C.CORRECTION,
        "correction correct meant misspoke corrected wrong",
    ),
    # --- HIGH: preferences ------------------------------------------------------------------
    _p(
        "preference_strong",
        _H,
        rf"\bi(?:{_A}ve|\s+have)?\s+(?:(?:really|absolutely|strongly|much)\s+)?"
        r"(?:always|never|prefer|hate|love|want|need)\b"
        rf"|\bi(?:{_A}d|\s+would)\s+(?:much\s+)?(?:rather|prefer)\b",
        _C.PREFERENCE,
        "always never prefer hate love want need rather",
    ),
    _p(
        "preference_dont",
        _H,
        rf"\b(?:don{_A}?t|do\s+not)\s+(?:ever\s+)?(?:use|do|call|say|make)\b",
        _C.PREFERENCE,
        "don dont not",
        "use do call say make",
    ),
    _p(
        "preference_please",
        _H,
        rf"\bplease\s+(?:always|never|don{_A}?t|do\s+not|stop|avoid)\b",
        _C.PREFERENCE,
        "please",
    ),
    _p(
        "preference_favorite",
        _H,
        r"\bmy\s+(?:preference|favou?rite(?:\s+[a-z]+){0,2}?)\s+(?:is|are|was|would\s+be)\b",
        _C.PREFERENCE,
        "preference favorite favourite",
    ),
    _p(
        "preference_standing",
        _H,
        # A rule that opens its sentence: "Always run the tests with -x." ("Never mind" is not).
        r"(?:^|(?<=[.!?;:\n]))\s*(?:(?:and|but|so|also|ok(?:ay)?|yes|please)[\s,]+)*"
        r"(?:always|never)\s+(?!mind\b)[a-z]",
        _C.PREFERENCE,
        "always never",
    ),
    # --- HIGH: contrast ---------------------------------------------------------------------
    _p(
        "contrast_not",
        _H,
        # "…, not heroku": the other one named, at the end of its clause.
        r",\s*(?:and\s+|but\s+)?not\s+(?:(?:with|on|in|to|via|by|the)\s+)?[\w.+#/-]+"
        r"[ \t]*(?=$|[.!;)\n])",
        None,
        "not",
    ),
    # --- HIGH: decisions --------------------------------------------------------------------
    _p(
        "decision_made",
        _H,
        rf"\b(?:we|i)(?:{_A}ve|\s+have)?\s+(?:(?:finally|just|already)\s+)?"
        r"(?:decided|agreed|chose|picked(?!\s+up)|settled\s+on|opted)\b",
        _C.DECISION,
        "decided agreed chose picked settled opted",
    ),
    _p(
        "decision_statement",
        _H,
        rf"\bthe\s+decision\s+(?:is|was|has\s+been)\b|\blet{_A}?s\s+(?:go|stick)\s+with\b",
        _C.DECISION,
        "decision let lets",
    ),
    _p("decision_going_forward", _H, r"\bgoing\s+forward\b", _C.DECISION, "forward"),
    _p(
        "decision_from_now_on",
        _H,
        r"\bfrom\s+(?:now|here|this\s+point)\s+on\b",
        _C.DECISION,
        "from",
        "now here point",
    ),
    # --- HIGH: identity ---------------------------------------------------------------------
    _p(
        "identity_my",
        _H,
        r"\bmy\s+(?:name|e-?mail(?:\s+address)?|company|employer|role|title|job\s+title"
        r"|username|handle|pronouns|birthday|phone(?:\s+number)?|address|time\s*zone)"
        r"\s+(?:is|are)\b",
        _C.FACT,
        "my",
        "is are",
    ),
    _p(
        "identity_work_live",
        _H,
        r"\bi\s+(?:currently\s+)?(?:work|live)\s+(?:at|in|for|from|as|near|out\s+of)\b"
        r"|\bi\s+(?:grew\s+up|was\s+born)\s+in\b",
        _C.FACT,
        "work live grew born",
    ),
    _p(
        "identity_am",
        _H,
        rf"\bi(?:\s+am|{_A}m)\s+(?:(?:originally\s+)?from|based\s+(?:in|at|out\s+of))\b"
        rf"|\bi(?:\s+am|{_A}m)\s+an?\s+(?!{_NOT_A_NOUN}\b)[a-z]"
        rf"|\bi(?:\s+am|{_A}m)\s+(?:(?:very|severely|deathly|mildly)\s+)?"
        r"(?:allergic|intolerant)\s+to\b",
        _C.FACT,
        "am m",
    ),
    _p(
        "identity_name",
        _H,
        # Names are the one place where case matters: "I'm Dana", not "I'm done".
        rf"\b(?:i{_A}m|i\s+am|call\s+me)\s+(?!{_NOT_A_NAME}\b)(?-i:[A-Z][a-z]+)\b",
        _C.FACT,
        "am m call",
    ),
    # How someone's life stands: what changes and what a later update replaces ("we have
    # two kids", "I'm vegetarian", "we moved to Munich", "I got engaged", "I left Acme").
    _p(
        "identity_household",
        _H,
        rf"\b(?:we|i)(?:\s+(?:now|also|still|only))?(?:\s+have|{_A}ve\s+got|\s+own)\s+"
        r"(?:\d+|no|one|two|three|four|five|six|seven|eight|nine|ten|a|an)\s+(?:\w+\s+)?"
        r"(?:kids?|children|child|sons?|daughters?|cats?|dogs?|pets?|horses?|cars?|grandkids"
        r"|grandchildren|rabbits?|birds?|roommates?)\b",
        _C.FACT,
        "we i",
        "have ve own",
    ),
    _p(
        "identity_status",
        _H,
        rf"\b(?:i(?:\s+am|{_A}m)|we(?:\s+are|{_A}re))\s+(?:now\s+|officially\s+|finally\s+)?"
        r"(?:married|engaged|single|divorced|separated|vegetarian|vegan|pescatarian|pregnant"
        r"|retired|unemployed|self-employed)\b"
        r"|\b(?:i|we)\s+(?:just\s+|finally\s+|recently\s+)?(?:got\s+(?:married|engaged"
        r"|divorced|promoted|hired|laid\s+off)|broke\s+up|split\s+up)\b"
        r"|\b(?:i|we)\s+(?:just\s+|finally\s+|recently\s+|have\s+|{_A}ve\s+)?"
        r"(?:moved|relocated)\s+(?:back\s+)?(?:to|from|out\s+of)\b"
        r"|\bi\s+(?:just\s+|finally\s+|recently\s+)?(?:left|quit|joined)\s+(?-i:[A-Z])",
        _C.FACT,
        "am m are re i we",
        "married engaged single divorced separated vegetarian vegan pescatarian pregnant "
        "retired unemployed self got broke split moved relocated left quit joined",
    ),
    # --- HIGH: explicit "remember this" -----------------------------------------------------
    _p(
        "remember_request",
        _H,
        rf"\bplease\s+(?:remember|note|keep\s+in\s+mind)\b|\bdon{_A}?t\s+forget\b"
        r"|\bremember\s+this\b|\bmake\s+a\s+note\b",
        None,
        "please forget remember note",
    ),
    _p("remember_label", _H, r"\b(?:important|nb)\s*:", None, "important nb"),
    _p("remember_fyi", _H, r"\bfyi\b", None, "fyi"),
    _p(
        "remember_record",
        _H,
        r"\bfor\s+(?:the\s+)?record\b|\bjust\s+so\s+you\s+know\b",
        None,
        "record know",
    ),
    # --- HIGH: commitments ------------------------------------------------------------------
    _p(
        "commitment_will",
        _H,
        rf"\bi(?:{_A}ll|\s+will|\s+shall|\s+won{_A}?t|(?:\s+am|{_A}m)\s+(?:going\s+to|gonna))\b",
        _C.COMMITMENT,
        "ll will shall won wont going gonna",
    ),
    _p(
        "commitment_promise",
        _H,
        r"\bi\s+(?:promise|commit\s+to|pledge)\b",
        _C.COMMITMENT,
        "promise commit pledge",
    ),
    _p(
        "commitment_remind",
        _H,
        r"\bremind\s+me\s+(?:to|about|on|at|in|tomorrow|next)\b",
        _C.COMMITMENT,
        "remind",
    ),
    _p(
        "commitment_deadline",
        _H,
        rf"\bby\s+(?:(?:next|this)\s+)?(?:{_WEEKDAY}|tomorrow|tonight|noon|midnight"
        r"|next\s+(?:week|month)|(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month|quarter"
        r"|year|sprint)|eod|eow|cob)\b",
        _C.COMMITMENT,
        "by",
    ),
    # --- MEDIUM -----------------------------------------------------------------------------
    _p(
        "principle_think",
        _M,
        r"\bi\s+(?:(?:really|honestly|strongly|genuinely)\s+)?(?:think|believe|feel)\b",
        _C.PRINCIPLE,
        "think believe feel",
    ),
    _p(
        "principle_values",
        _M,
        r"\b(?:is|are)\s+(?:(?:really|very|so|super)\s+)?important\s+to\s+me\b"
        r"|\bmatters?\s+(?:(?:a\s+lot|so\s+much|most)\s+)?to\s+me\b|\bi\s+value\b",
        _C.PRINCIPLE,
        "important matters matter value",
    ),
    _p("habit_usually", _M, r"\busually\b", None, "usually"),
    _p("habit_typically", _M, r"\btypically\b", None, "typically"),
    _p(
        "preference_like",
        _M,
        r"\bi\s+(?:(?:really|also|just|kind\s+of|quite)\s+)?"
        rf"(?:like|dislike|enjoy|can{_A}?t\s+stand)\b"
        rf"|\bi(?:\s+am|{_A}m)\s+(?:(?:really|so|very)\s+)?(?:into|passionate\s+about"
        r"|obsessed\s+with|(?:a\s+)?(?:big|huge)\s+fan\s+of|not\s+a\s+fan\s+of)\b",
        _C.PREFERENCE,
        "like dislike enjoy stand into passionate obsessed fan",
    ),
    _p(
        "context_my",
        _M,
        r"\bmy\s+(?:" + "|".join(_CONTEXT_NOUNS) + r")\b",
        _C.FACT,
        _CONTEXT_NOUNS,
    ),
    _p(
        "project_we",
        _M,
        r"\b(?:we|our\s+(?:team|project|app|service|code(?:base)?|repo|ci|build|tests?|stack))"
        r"\s+(?:(?:always|usually|now|only|still|currently|mostly|normally|all)\s+)?"
        r"(?:" + "|".join(_PROJECT_VERBS) + r")s?\b",
        _C.FACT,
        _PROJECT_VERB_FORMS,
        "we our",
    ),
    _p(
        "project_uses",
        _M,
        r"\b(?:the|this|our)\s+(?:project|repo(?:sitory)?|app|service|codebase|api|backend"
        r"|frontend|tests?|test\s+suite|ci|build|pipeline|database|db|server|site)\s+"
        r"(?:(?:" + "|".join(_PROJECT_STATE_VERBS) + r")s?"
        r"|(?:is|are)\s+(?:written|deployed|hosted|built))\b",
        _C.FACT,
        _PROJECT_NOUNS,
        _PROJECT_STATES,
    ),
    _p(
        "event_recent",
        _M,
        # Anchored on the (rarer) time phrase; the verb may come after it or before it
        # (the lookbehind), within one clause either way.
        rf"(?=\b{_SPOKEN_TIME}\b)(?:(?<=\b{_PAST_VERB}\b[^.!?\n]{{0,60}})"
        rf"|\b{_SPOKEN_TIME}\b{_GAP}\b{_PAST_VERB}\b)",
        _C.MOMENT,
        _SPOKEN_TIME_WORDS,
    ),
    _p(
        "event_did",
        _M,
        r"\b(?:i|we)\s+(?:(?:just|finally|recently)\s+)?(?:" + "|".join(_DID_VERBS) + r")\b",
        _C.MOMENT,
        _DID_VERBS,
    ),
    _p(
        "relationship_my",
        _M,
        r"\bmy\s+(?:(?:best|close|old|new)\s+)?(?:" + "|".join(_RELATIONS) + r")\b",
        _C.RELATIONSHIP,
        [w for r in _RELATIONS for w in _re.split(r"\W+", r)],
    ),
    # What people say about themselves: "I'm expanding my studio", "I've been painting",
    # "I adopted a puppy", "My store is doing great". Each is one LOW hint; together with
    # the families above they turn first-person statements into speaker-named facts.
    _p(
        "self_ongoing",
        _M,
        rf"\bi(?:{_A}m|\s+am|{_A}ve\s+been|\s+have\s+been|\s+was|\s+had\s+been)\s+"
        r"(?:(?:just|also|really|still|currently|now|finally|actually|always)\s+)?"
        r"(?!going\b)[a-z]{2,}ing\b",
        _C.FACT,
        _I_WORDS,
    ),
    _p(
        "self_past",
        _M,
        r"\b(?:i|we)\s+(?:(?:just|also|recently|finally|actually|already|once)\s+)?"
        + _PAST_VERB
        + r"\b",
        _C.MOMENT,
        _I_WORDS + " we",
    ),
    _p(
        "self_have",
        _M,
        rf"\bi(?:\s+have|{_A}ve)\s+(?:got\s+)?(?:a|an|two|three|some|many|\d+)\s+\w+"
        r"|\bmy\s+(?!(?:"
        + "|".join(_RELATIONS)
        + r")\b)\w+(?:\s+\w+)?\s+(?:is|are|was|were|has|have)\b",
        _C.FACT,
        _I_WORDS + " my",
    ),
    _p(
        "skill",
        _M,
        rf"\bi\s+(?:know\s+how\s+to|can(?!{_A}?t\b|not\b)|am\s+learning)\b"
        rf"|\bi(?:{_A}ve|\s+have)?\s+(?:learned|learnt|taught\s+myself)\b"
        rf"|\bi(?:\s+am|{_A}m)\s+(?:good|great|skilled|fluent|proficient|experienced)"
        r"\s+(?:at|in|with)\b"
        rf"|\bi{_A}m\s+learning\b",
        _C.SKILL,
        "know can learning learned learnt taught good great skilled fluent proficient experienced",
    ),
)
