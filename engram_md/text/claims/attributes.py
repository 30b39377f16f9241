"""Attributes: one thing of the holder's and what it is -- "my main browser is Firefox",
"Firefox is my browser now", "cut the food budget to 350" -- and whether the statement says
it changed."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import regex

from .clauses import _PEOPLE
from .slots import Claim
from .words import _APOS, _I, _numbers, _stem, pattern, salient


# One thing of the holder's and what it is: "my main browser is Firefox", "Firefox is my
# browser now", "Kai's commute is 90 minutes".
@lru_cache(maxsize=256)
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
                if pattern(_PEOPLE, _I).fullmatch(thing) or _NOT_A_VALUE.search(said):
                    continue
                value = salient(said, holder.split()) | _numbers(said)
                if value:
                    core = frozenset({"changed"}) if changed else frozenset()
                    yield Claim(holder, f"attr:{_stem(thing)}", value, core=core, said=said)
