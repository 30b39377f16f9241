"""Normalization rules for candidate facts: confidence tier, importance, memory kind, policy.

Pure functions over a fact's text and category, no I/O: the pipeline calls them after an
extractor proposes a fact and before dedup and writing. An extractor may already have set a
kind or an importance; these functions are the fallback and the offline extractor's scorer.

The rules follow the reference system (``shared/reference/remnic.md`` §2.4 and §2.6) so that
memory folders read the same whichever produced them. English only, like the signal scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import regex as _re

from ..core.models import Category, ConfidenceTier, MemoryKind, PolicyClass
from ..text.signal_patterns import TEMPORAL_MARKER
from ..text.words import words

__all__ = [
    "EPISODE_CATEGORIES",
    "NOTE_CATEGORIES",
    "PROTECTED_CATEGORIES",
    "SPECULATIVE_TTL_DAYS",
    "classify_kind",
    "confidence_tier",
    "expires_at",
    "has_temporal_marker",
    "importance_score",
    "policy_class",
]

_I = _re.IGNORECASE

# --- confidence --------------------------------------------------------------------------

EXPLICIT_MIN = 0.95
IMPLIED_MIN = 0.70
INFERRED_MIN = 0.40
SPECULATIVE_TTL_DAYS = 30


def confidence_tier(confidence: float) -> ConfidenceTier:
    """explicit ≥ 0.95, implied ≥ 0.70, inferred ≥ 0.40, else speculative (NaN included)."""
    if confidence >= EXPLICIT_MIN:
        return ConfidenceTier.EXPLICIT
    if confidence >= IMPLIED_MIN:
        return ConfidenceTier.IMPLIED
    if confidence >= INFERRED_MIN:
        return ConfidenceTier.INFERRED
    return ConfidenceTier.SPECULATIVE


def expires_at(tier: ConfidenceTier, created: datetime) -> datetime | None:
    """Speculative facts expire ``SPECULATIVE_TTL_DAYS`` after creation unless re-confirmed.

    ``created`` is the transcript time of the source turn, so a replayed transcript gives
    the same expiry as live ingestion did.
    """
    if tier is ConfidenceTier.SPECULATIVE:
        return created + timedelta(days=SPECULATIVE_TTL_DAYS)
    return None


# --- importance ----------------------------------------------------------------------------
# A local heuristic: base 0.5, nudged by markers in the text and by the category. Each tier
# of markers counts once, however many of its patterns hit, so long texts are not inflated.

_APOS = "['\u2019]"

_CRITICAL = _re.compile(
    r"\b(?:critical|crucial|essential|must|always|never|important|remember\s+this"
    rf"|don{_APOS}?t\s+forget)\b"
    r"|\bmy\s+(?:name\s+is|birthday|phone|email|address|password)\b"
    r"|\bi\s+(?:hate|love|despise|adore)\b|\b(?:hates|loves|despises|adores)\b"
    r"|\b(?:absolutely|definitely|certainly)\s+(?:not|must|should)\b"
    rf"|\b(?:actually|correction|let\s+me\s+correct|that{_APOS}?s\s+wrong)\b"
    r"|\bi\s+(?:said|meant|was\s+wrong)\b",
    _I,
)
_HIGH = _re.compile(
    r"\b(?:decided|decision|chose|choosing|picked|selected|agreed)\b"
    rf"|\bwe(?:{_APOS}ll|\s+will)\s+(?:go\s+with|use|implement)\b"
    rf"|\b(?:make\s+sure|ensure|always|never|avoid|don{_APOS}?t|do\s+not)\b"
    r"|\byou\s+(?:should|must|need\s+to)\b"
    r"|\bby\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|end\s+of|next)\b"
    r"|\b(?:deadline|due\s+(?:date|by)|tomorrow|next\s+week|this\s+week|today)\b"
    r"|\b(?:prefers?|preferred|likes|wants|needs|dislikes?)\b|\bi\s+(?:like|want|need)\b"
    r"|\bmy\s+(?:preference|style|approach|way)\b"
    rf"|\bi(?:{_APOS}ll|\s+will)\b|\b(?:promise[sd]?|commit(?:s|ted)?\s+to|guarantee)\b"
    r"|\b(?:scheduled|appointment|meeting)\b",
    _I,
)
_HEDGING = _re.compile(
    r"\b(?:maybe|perhaps|possibly|might|could\s+be|probably|likely|seems?\s+like"
    r"|i\s+think|i\s+guess|not\s+sure|uncertain|kind\s+of|sort\s+of|somewhat|a\s+bit"
    r"|in\s+a\s+way|to\s+some\s+extent)\b",
    _I,
)
_PERSONAL = _re.compile(r"\b(?:i|me|my|mine|myself|the\s+user)\b", _I)
_SPECIFIC = _re.compile(
    r"\b\d{2,}\b|\b\d+\.\d+\b|\bv\d|\b(?:version|api|config)\b",
    _I,
)
# A capitalised word that does not start a sentence: most likely a name (person, product…).
# ("I" never counts: a name needs a lower-case letter after its capital.)
_NAME = _re.compile(r"(?<=[\w,;:)\]]\s+)[A-Z][\w-]*[a-z][\w-]*")

# Acknowledgements and greetings: a text made only of these words carries nothing to keep.
_TRIVIAL_WORDS = frozenset(
    (
        "hi hello hey there yo sup greetings ok okay k kk sure yes no yep nope yeah yea nah thanks "
        "thank you thx ty cheers got it understood roger copy noted bye goodbye later see ya "
        "ttyl lol lmao rofl wow cool nice great awesome alright right so much very a lot "
        "good fine oh ah uh um hm"
    ).split()
)
_TRIVIAL_SOUND = _re.compile(r"(?:h+m+|(?:ha)+h?|(?:he)+h?|a+h+|u+h+|u+m+|e+r+m*|o+h+|m+h*)")
_TRIVIAL_MAX_CHARS = 10
_TRIVIAL_MAX_WORDS = 8
_TRIVIAL_SCORE = 0.1

_CATEGORY_BOOST: dict[Category, float] = {
    Category.CORRECTION: 0.15,
    Category.PRINCIPLE: 0.12,
    Category.PREFERENCE: 0.10,
    Category.COMMITMENT: 0.10,
    Category.DECISION: 0.08,
    Category.RELATIONSHIP: 0.05,
    Category.SKILL: 0.05,
    Category.MOMENT: 0.03,
    Category.ENTITY: 0.02,
    Category.FACT: 0.0,
}


def _is_trivial(content: str) -> bool:
    text = content.strip()
    if len(text) <= _TRIVIAL_MAX_CHARS:
        return True
    found = words(text)
    if not found:
        return True  # punctuation and emoji only
    if len(found) > _TRIVIAL_MAX_WORDS:
        return False
    return all(w in _TRIVIAL_WORDS or _TRIVIAL_SOUND.fullmatch(w) for w in found)


def importance_score(content: str, category: Category) -> float:
    """How much a fact matters, in [0, 1], two decimals.

    Base 0.5; critical markers +0.20; high markers +0.12; hedging −0.15; category boost
    (correction 0.15 … fact 0); length bonus up to +0.1 past 200 characters; a personal
    reference +0.05; specifics (numbers, versions, names) +0.03. Trivial content — greetings
    and acknowledgements, or 10 characters or fewer — scores 0.1 whatever else it holds.
    """
    if _is_trivial(content):
        return _TRIVIAL_SCORE
    score = 0.5
    if _CRITICAL.search(content):
        score += 0.20
    if _HIGH.search(content):
        score += 0.12
    if _HEDGING.search(content):
        score -= 0.15
    score += _CATEGORY_BOOST.get(category, 0.0)
    if len(content) > 200:
        score += min((len(content) - 200) / 1000, 0.1)
    if _PERSONAL.search(content):
        score += 0.05
    if _SPECIFIC.search(content) or _NAME.search(content):
        score += 0.03
    return round(min(1.0, max(0.0, score)), 2)


# --- memory kind ---------------------------------------------------------------------------

# Stable beliefs and states: reconsolidated when they conflict, rather than kept as-is.
NOTE_CATEGORIES = frozenset(
    {
        Category.PREFERENCE,
        Category.DECISION,
        Category.PRINCIPLE,
        Category.COMMITMENT,
        Category.RELATIONSHIP,
        Category.SKILL,
        Category.CORRECTION,
        Category.ENTITY,
    }
)
# Things that happened: kept with event fidelity.
EPISODE_CATEGORIES = frozenset({Category.MOMENT})
# Category.FACT is in neither: its kind comes from the text.

_NOTE_TAGS = frozenset(
    (
        "preference preferences decision decisions principle principles rule rules policy "
        "constraint constraints convention conventions standard standards guideline "
        "guidelines belief beliefs habit habits identity profile config configuration setup "
        "workflow style tooling requirement requirements goal goals commitment"
    ).split()
)
_EPISODE_TAGS = frozenset(
    (
        "event events incident incidents bug outage meeting deploy deployment release "
        "milestone trip travel moment episode log activity news update"
    ).split()
)

# A written date after "by/before/until/due" is a deadline, not when something happened.
_DEADLINE = r"(?<!\b(?:by|before|until|till|due)\s+(?:the\s+)?)"
_TEMPORAL = _re.compile(rf"\b{_DEADLINE}{TEMPORAL_MARKER}\b", _I)

_PAST_ACTION = _re.compile(
    r"\b(?:deployed|merged|fixed|shipped|failed|crashed|broke|released|launched|migrated"
    r"|reverted|rolled\s+back|pushed|resolved|completed|finished|started|upgraded|installed"
    r"|happened|occurred|went|visited|attended|traveled|travelled|met|moved|bought"
    r"|graduated|joined|left|quit|won|lost|celebrated|ran|took|gave|received|adopted"
    r"|reported|mentioned|said|told|asked)\b",
    _I,
)
_NOTE_KEYWORD = _re.compile(
    r"\b(?:prefer(?:s|red|ring)?|always|never|usually|typically|generally|must|should"
    r"|polic(?:y|ies)|rules?|constraints?|conventions?|standards?|guidelines?"
    r"|requir(?:e|es|ed|ement|ements)|goals?|want(?:s|ed)?|needs?|likes|dislikes?"
    r"|favou?rite|decid(?:e|es|ed|ing))\b"
    # Present-tense states about who someone is: stable until they change.
    r"|\b(?:works\s+(?:at|for|as|in|on)|lives\s+(?:in|at|near|with)|(?:is|are)\s+an?"
    r"|is\s+(?:based|allergic)|comes\s+from|owns|uses|speaks)\b",
    _I,
)


def has_temporal_marker(text: str) -> bool:
    """True when the text pins itself to a moment: "yesterday", "last Tuesday",
    "3 days ago", "on 2026-03-01", "May 7th", "in 2019" …

    Habitual forms ("on Mondays") and deadlines ("by 2026-03-06") do not count.
    """
    return _TEMPORAL.search(text) is not None


def _normal_tag(tag: str) -> str:
    return tag.strip().lstrip("#").casefold()


def classify_kind(content: str, category: Category, tags: Sequence[str] = ()) -> MemoryKind:
    """Note (stable) or episode (time-bound), by the first rule that decides:

    1. a temporal marker in the text → episode;
    2. a note category → note; an episode category (moment) → episode;
    3. tags: any note tag → note, else any episode tag → episode;
    4. a past-tense action verb ("deployed", "went", …) → episode;
    5. a note keyword ("prefers", "always", "must", "policy", …) or a present-tense state
       ("works at", "lives in", "is a", "uses", …) → note;
    6. otherwise → episode.

    Category FACT is decided by rules 1 and 3-6.
    """
    if has_temporal_marker(content):
        return MemoryKind.EPISODE
    if category in NOTE_CATEGORIES:
        return MemoryKind.NOTE
    if category in EPISODE_CATEGORIES:
        return MemoryKind.EPISODE
    normal_tags = {_normal_tag(t) for t in tags}
    if not normal_tags.isdisjoint(_NOTE_TAGS):
        return MemoryKind.NOTE
    if not normal_tags.isdisjoint(_EPISODE_TAGS):
        return MemoryKind.EPISODE
    if _PAST_ACTION.search(content):
        return MemoryKind.EPISODE
    if _NOTE_KEYWORD.search(content):
        return MemoryKind.NOTE
    return MemoryKind.EPISODE


# --- policy --------------------------------------------------------------------------------

# What a person told us to keep: never archived for being old and unvisited. These are the
# reference system's protected archival categories.
PROTECTED_CATEGORIES = frozenset(
    {Category.DECISION, Category.PRINCIPLE, Category.COMMITMENT, Category.PREFERENCE}
)


def policy_class(category: Category) -> PolicyClass:
    """protected for decisions, principles, commitments and preferences; durable otherwise.

    No category is ephemeral by itself: what is short-lived is decided by confidence
    (speculative facts get ``expires_at``), not by what a fact is about.
    """
    return PolicyClass.PROTECTED if category in PROTECTED_CATEGORIES else PolicyClass.DURABLE
