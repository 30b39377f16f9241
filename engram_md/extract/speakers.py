"""Who is who: display names for the people behind the turns, within and across sessions.

A fact must name its speaker to stand on its own ("Dana works at Acme", not "I work at Acme").
The name comes from the transcript when it gives one (``Turn.speaker``, always preferred);
otherwise from a self-introduction the user made earlier in the session ("I'm Dana", "my name
is Dana", "call me Dana", "this is Dana"); otherwise from earlier sessions: when every session
that named its user named the same person, a session that names nobody is taken to be that
person's too, so "my manager is Ruth" said in two sessions is one fact about Lee, not "the
user's manager" beside "Lee's manager". Sessions that named different people leave an
unnamed one with "the user": a wrong name is worse than none.

The book is small and JSON-friendly so the caller can persist it (``state/speakers.json``)
and keep names across restarts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.models import Role, Turn

__all__ = ["SpeakerBook", "introduced_name", "self_introduction"]

DEFAULT_NAMES: Mapping[Role, str] = {
    Role.USER: "the user",
    Role.ASSISTANT: "the assistant",
    Role.SYSTEM: "the system",
}

# Capitalized words that follow "I'm" without being a name: feelings, states, fillers, and
# words people capitalize for emphasis. A name must also not end in "-ing" ("I'm Going").
_NOT_NAMES = frozenset(
    """
    a an the i im not no yes so just here there back home done sure fine good great ok okay
    happy sad sorry glad tired busy ready excited afraid aware able new old free late early
    available back hungry sick well alive alright curious confused serious honest fine safe
    interested worried nervous proud grateful thankful lucky stuck lost open bored upset
    also still really very too only always never usually actually currently literally
    from at in on with for of to into about over under out up down off
    what who why how when where which that this it its
    monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight
    january february march april june july august september october november december
    english american british german french spanish italian chinese japanese indian
    male female gay straight single married divorced vegan vegetarian christian muslim jewish
    mr mrs ms dr prof sir madam
    """.split()
)

_APOS = "['’]"
_NAME = r"(?P<name>[A-Za-z][a-z]+(?:[-'][A-Z][a-z]+)?)"
_GREETING = r"(?:(?:hi|hello|hey|hiya|morning|good\s+(?:morning|afternoon|evening))\b[\s,!.]*)"
# Strong forms state a name outright; after "my name is" even a lowercase one ("dana").
_STRONG = rf"(?:my\s+name\s+is|my\s+name{_APOS}s|call\s+me)"
# Weak forms need a capitalized name that ends the clause, so "I'm Happy to help" is not an
# introduction. "this is X" also needs a greeting before it or "here"/"speaking" after it:
# "This is Python, which…" is not a person.
_WEAK_IM = rf"(?:i{_APOS}m|i\s+am)"
_WEAK_THIS = r"this\s+is"
_CLAUSE_END = r"(?=\s*(?:$|[,.!;:—–-]|\s(?:and|here|from|speaking)\b))"

_INTRO = re.compile(
    rf"(?:^|(?<=[\s,.!?;:]))(?P<greet>{_GREETING})?"
    rf"(?P<form>{_STRONG}|{_WEAK_IM}|{_WEAK_THIS})\s+{_NAME}(?P<clause_end>{_CLAUSE_END})?"
    r"(?P<here>\s+(?:here|speaking)\b)?",
    re.IGNORECASE,
)
# What may separate the introduction from the rest of its sentence.
_AFTER_INTRO = re.compile(r"\s*(?:[,;:—–-]+\s*(?:and\s+)?|\s+and\s+|[.!]+\s*|$)")
_LEADING_GREETING = re.compile(rf"^\s*{_GREETING}?", re.IGNORECASE)


def _acceptable(match: re.Match[str]) -> bool:
    name = match.group("name")
    parts = re.split(r"[-'’]", name.lower())
    if any(p in _NOT_NAMES or p.endswith("ing") for p in parts) or len(name) < 2:
        return False
    form = match.group("form").lower()
    if form.startswith("my"):
        return True  # "my name is dana": stated outright, any case
    if form.startswith("call"):
        return name[:1].isupper()  # "call me Sam", not "call me back/later/crazy"
    # Weak forms: every part capitalized, and the name ends its clause.
    if not all(p[:1].isupper() for p in re.split(r"[-'’]", name)):
        return False
    if match.group("clause_end") is None:
        return False
    if form.startswith("this"):
        return bool(match.group("greet") or match.group("here"))
    return True


def _title(word: str) -> str:
    return "-".join(part[:1].upper() + part[1:] for part in word.split("-"))


def introduced_name(text: str) -> str | None:
    """The name a speaker gives for themselves in ``text``, or None."""
    for match in _INTRO.finditer(text):
        if _acceptable(match):
            return _title(match.group("name"))
    return None


@dataclass(frozen=True, slots=True)
class Introduction:
    """A self-introduction clause at the start of a sentence."""

    name: str
    rest: str  # the sentence after the introduction ("I work at Acme…"); "" when bare


def self_introduction(sentence: str) -> Introduction | None:
    """The self-introduction that opens ``sentence`` ("Hi, I'm Dana, I work at …"), if any."""
    greeting = _LEADING_GREETING.match(sentence)
    # Past the greeting first; then with the greeting inside the match, so "this is" sees it.
    offsets = (greeting.end() if greeting else 0, 0)
    candidates = (_INTRO.match(sentence, offset) for offset in offsets)
    match = next((m for m in candidates if m is not None and _acceptable(m)), None)
    if match is None:
        return None
    after = _AFTER_INTRO.match(sentence, match.end())
    if after is None:
        return None
    rest = sentence[after.end() :].strip()
    return Introduction(_title(match.group("name")), rest)


def _key(session: str, role: Role) -> str:
    return f"{session}\x1f{role.value}"


_USER_SUFFIX = _key("", Role.USER)


@dataclass
class SpeakerBook:
    """Names learned per (session, role); mutable, persisted by the caller as JSON."""

    _names: dict[str, str] = field(default_factory=dict)
    # How many sessions name their user so, by case-folded name (the latest spelling kept):
    # one entry means every session that named its user agrees on that person.
    _users: dict[str, tuple[str, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for key, name in self._names.items():
            if key.endswith(_USER_SUFFIX):
                self._count_user(name, +1)

    def observe(self, turn: Turn) -> bool:
        """Learn from ``turn``: its explicit speaker, or a user's self-introduction.

        True when a session got its first name for that role: worth saving at once, since
        later sessions may rely on it (a later change is saved with the rest).
        """
        if turn.role is Role.SYSTEM:
            return False
        if turn.speaker:
            return self._learn(turn.session, turn.role, turn.speaker)
        if turn.role is not Role.USER:
            # Assistants introduce themselves by product name; that is not who the user is.
            return False
        name = introduced_name(turn.content)
        return name is not None and self._learn(turn.session, turn.role, name)

    def name_for(self, turn: Turn) -> str:
        """Display name for ``turn``'s speaker: explicit, learned in its session, agreed on
        by the other sessions (users only), or "the user"/"the assistant"."""
        if turn.speaker:
            return turn.speaker
        learned = self._names.get(_key(turn.session, turn.role))
        if learned is None and turn.role is Role.USER and len(self._users) == 1:
            learned = next(iter(self._users.values()))[0]
        return learned or DEFAULT_NAMES[turn.role]

    def _learn(self, session: str, role: Role, name: str) -> bool:
        key = _key(session, role)
        before = self._names.get(key)
        if before == name:
            return False
        self._names[key] = name
        if role is Role.USER:
            if before is not None:
                self._count_user(before, -1)
            self._count_user(name, +1)
        return before is None

    def _count_user(self, name: str, change: int) -> None:
        folded = name.casefold()
        count = self._users.get(folded, (name, 0))[1] + change
        if count > 0:
            self._users[folded] = (name, count)
        else:
            self._users.pop(folded, None)

    def to_dict(self) -> dict[str, Any]:
        sessions: dict[str, dict[str, str]] = {}
        for key in sorted(self._names):
            session, role = key.split("\x1f", 1)
            sessions.setdefault(session, {})[role] = self._names[key]
        return {"version": 1, "sessions": sessions}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SpeakerBook:
        """Tolerant: unknown roles and malformed entries are skipped, not fatal."""
        book = cls()
        sessions = d.get("sessions", {})
        if not isinstance(sessions, Mapping):
            return book
        for session, roles in sessions.items():
            if not isinstance(roles, Mapping):
                continue
            for role, name in roles.items():
                if role in Role._value2member_map_ and isinstance(name, str) and name:
                    book._learn(str(session), Role(role), name)
        return book
