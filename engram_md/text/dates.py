"""Relative dates made absolute, against the turn's own timestamp.

A memory that says "yesterday" is useless a week later, and wrong if it is read against the
wrong day. Time comes from the transcript (DESIGN.md principle 5), so every expression is
resolved against the timestamp of the turn that contains it, never against the clock.

The original words stay; the absolute date is added in parentheses right after them
("yesterday (2026-03-01)"), so a statement stays readable and becomes exact. An expression
already followed by a parenthesis is left alone, which makes the rewrite idempotent.

Conventions (Monday starts a week; all dates are calendar dates of the anchor's UTC day):

- yesterday / last night → anchor − 1; today / tonight / this morning|afternoon|evening →
  anchor; tomorrow → anchor + 1; the day before yesterday / after tomorrow → ∓ 2.
- "by|until|before|this Friday" → the coming Friday ("this" may be today); "last Friday" → the
  previous one; "next Friday" → the Friday of next calendar week; "on Friday" and a bare
  "Friday" → the coming one, unless the sentence reads as past ("went", "-ed", "was") and has
  nothing pointing forward ("will", "going to", an infinitive), then the previous one.
- last/this/next week → "(week of <Monday>)"; weekend → "(weekend of <Saturday>)";
  month → "(February 2026)"; year → "(2025)"; "last|next|this May" → "(May 2025)".
- "N days|weeks ago" and "in N days|weeks" → a date; months and years → month or year;
  "a few weeks ago" → "(a few weeks before 2026-03-02)": vague, but anchored.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = [
    "DateSpan",
    "parse_absolute_dates",
    "relative_date_spans",
    "resolve_relative_dates",
]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "a couple": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

_WD = "|".join(_WEEKDAYS)
# Abbreviations count only after a relation word and capitalized ("last Tues", "on Fri."):
# "sat", "sun" and "wed" are words too.
_WD_ABBR = r"(?-i:Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)"
_ABBR_INDEX = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_MON = "|".join(_MONTHS)
# Spaces are written \s+ because the pattern below is compiled in verbose mode.
_NUM = (
    r"\d{1,3}|a\s+couple\s+of|a\s+couple|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve"
)
_UNIT = r"days?|weeks?|months?|years?"

# One alternation, longest phrases first so "the day before yesterday" wins over "yesterday".
# Each branch names its kind; the optional possessive ("today's") is part of the span so the
# annotation lands after it.
_RELATIVE = re.compile(
    rf"""
    (?<![\w-])(?:
        (?P<day2>the\s+day\s+(?:before\s+yesterday|after\s+tomorrow))
      | (?P<ago>(?P<ago_n>{_NUM})\s+(?P<ago_u>{_UNIT})\s+ago)
      | (?P<vague>(?P<vague_q>a\s+few|few|several|some)\s+(?P<vague_u>{_UNIT})\s+ago)
      | (?P<inn>in\s+(?P<in_n>{_NUM})\s+(?P<in_u>{_UNIT}))
      | (?P<lastnight>last\s+night)
      | (?P<daypart>this\s+(?:morning|afternoon|evening))
      | (?P<wk>(?P<wk_rel>last|next|this|coming)\s+(?P<wk_u>weekend|week|month|year))
      | (?P<mon>(?P<mon_rel>last|next|this)\s+(?P<mon_m>{_MON}))
      | (?P<wd>(?:(?P<wd_rel>last|next|this|coming|by|until|till|before|on)\s+)?(?P<wd_d>{_WD}))
      | (?P<wda>(?P<wda_rel>last|next|this|by|on)\s+(?P<wda_d>{_WD_ABBR}))
      | (?P<day1>yesterday|today|tonight|tomorrow)
    )(?:'s|’s)?(?![\w-])
    """,
    re.IGNORECASE | re.VERBOSE,
)

# Already annotated (by us or by the author): a parenthesis right after the expression.
_ANNOTATED = re.compile(r"\s*\(")

# Clues for the tense of the sentence around a bare or "on" weekday.
_FUTURE_CLUES = re.compile(
    r"(?i:\b(?:will|shall|gonna|going\s+to|plan(?:s|ning)?\s+to|wants?\s+to|needs?\s+to|"
    r"ha(?:ve|s)\s+to|hope\s+to|intend\s+to|next|upcoming|tomorrow)\b|['’]ll\b)"
    # An infinitive ("agreed to ship on Tuesday") points forward; "to the park" does not.
    r"|\b[Tt]o\s+(?!(?:the|a|an|my|our|your|his|her|their|its|this|that|me|him|them|us|you|it)\b)"
    r"[a-z]{2,}\b"
)
_PAST_CLUES = re.compile(
    r"\b(?:was|were|did|had|went|got|came|saw|made|took|gave|met|said|told|felt|found|left|"
    r"bought|brought|sent|spent|ran|wrote|ate|drove|flew|heard|held|kept|lost|paid|sat|"
    r"stood|thought|won|yesterday|ago|last)\b"
    r"|\b[a-z]{2,}(?<!need)(?<!feed)(?<!seed)(?<!speed)(?<!indeed)(?<!proceed)(?<!exceed)"
    r"(?<!succeed)(?<!embed)(?<!hundred)ed\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.!?;\n]")


@dataclass(frozen=True, slots=True)
class DateSpan:
    """One relative expression in a text: where it is and what it resolves to."""

    start: int
    end: int
    text: str
    resolved: str  # what goes inside the parentheses: "2026-03-01", "week of 2026-03-09", …


def _number(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + (day.month - 1) + months
    return index // 12, index % 12 + 1


def _month_label(year: int, month: int) -> str:
    return f"{calendar.month_name[month]} {year}"


def _sentence_around(text: str, start: int, end: int) -> str:
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    right_match = _CLAUSE_END.search(text, end)
    right = right_match.start() if right_match else len(text)
    return text[left:start] + " " + text[end:right]


def _reads_as_past(context: str) -> bool:
    return bool(_PAST_CLUES.search(context)) and not _FUTURE_CLUES.search(context)


def _resolve_weekday(rel: str, target: int, today: date, context: str) -> date:
    delta = (target - today.weekday()) % 7
    if rel == "last":
        return today - timedelta(days=(today.weekday() - target) % 7 or 7)
    if rel == "next":
        return _monday(today) + timedelta(days=7 + target)
    if rel == "this":
        return today + timedelta(days=delta)
    if rel in ("", "on") and _reads_as_past(context):
        return today - timedelta(days=(today.weekday() - target) % 7 or 7)
    return today + timedelta(days=delta or 7)


def _resolve_offset(n: int, unit: str, today: date, sign: int) -> str:
    unit = unit.lower().rstrip("s")
    if unit == "day":
        return (today + timedelta(days=sign * n)).isoformat()
    if unit == "week":
        return (today + timedelta(weeks=sign * n)).isoformat()
    if unit == "month":
        return _month_label(*_add_months(today, sign * n))
    return str(today.year + sign * n)


def _resolve(match: re.Match[str], today: date, text: str) -> str | None:
    g = match.groupdict()
    if g["day2"]:
        sign = -1 if "yesterday" in g["day2"].lower() else 1
        return (today + timedelta(days=2 * sign)).isoformat()
    if g["ago"]:
        return _resolve_offset(_number(g["ago_n"]), g["ago_u"], today, -1)
    if g["vague"]:
        # No exact date exists; say what is known, relative to a fixed day.
        quantity = " ".join(g["vague_q"].lower().split())
        return f"{quantity} {g['vague_u'].lower()} before {today.isoformat()}"
    if g["inn"]:
        return _resolve_offset(_number(g["in_n"]), g["in_u"], today, 1)
    if g["lastnight"]:
        return (today - timedelta(days=1)).isoformat()
    if g["daypart"]:
        return today.isoformat()
    if g["wk"]:
        rel = g["wk_rel"].lower()
        step = {"last": -1, "this": 0, "coming": 0, "next": 1}[rel]
        unit = g["wk_u"].lower()
        if unit == "week":
            return f"week of {(_monday(today) + timedelta(weeks=step)).isoformat()}"
        if unit == "weekend":
            # The weekend of the current week (Saturday), shifted by whole weeks.
            saturday = _monday(today) + timedelta(days=5, weeks=step)
            return f"weekend of {saturday.isoformat()}"
        if unit == "month":
            return _month_label(*_add_months(today, step))
        return str(today.year + step)
    if g["mon"]:
        rel = g["mon_rel"].lower()
        month = _MONTHS.index(g["mon_m"].lower()) + 1
        year = today.year
        if rel == "last" and month >= today.month:
            year -= 1
        elif rel == "next" and month <= today.month:
            year += 1
        return _month_label(year, month)
    if g["wda"]:
        rel = g["wda_rel"].lower()
        target = _ABBR_INDEX[g["wda_d"][:3].lower()]
        context = _sentence_around(text, match.start(), match.end())
        if rel == "by":
            return (today + timedelta(days=(target - today.weekday()) % 7 or 7)).isoformat()
        return _resolve_weekday(rel, target, today, context).isoformat()
    if g["wd"]:
        rel = (g["wd_rel"] or "").lower()
        rel = {"coming": "this", "until": "by", "till": "by", "before": "by"}.get(rel, rel)
        target = _WEEKDAYS.index(g["wd_d"].lower())
        context = _sentence_around(text, match.start(), match.end())
        if rel == "by":
            delta = (target - today.weekday()) % 7 or 7
            return (today + timedelta(days=delta)).isoformat()
        return _resolve_weekday(rel, target, today, context).isoformat()
    word = g["day1"].lower()
    offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[word]
    return (today + timedelta(days=offset)).isoformat()


def relative_date_spans(text: str, anchor: datetime) -> list[DateSpan]:
    """Every relative expression in ``text`` that is not annotated yet, resolved at ``anchor``."""
    today = anchor.date()
    spans: list[DateSpan] = []
    for match in _RELATIVE.finditer(text):
        if _ANNOTATED.match(text, match.end()):
            continue
        if g_wd := match.group("wd_d"):
            # "every Friday", "Fridays" and weekday names inside other words are habits, not
            # dates; a lowercase bare weekday is usually not a day reference either.
            before = text[max(0, match.start() - 6) : match.start()].lower()
            if before.endswith("every ") or (not match.group("wd_rel") and g_wd[0].islower()):
                continue
        resolved = _resolve(match, today, text)
        if resolved is not None:
            spans.append(DateSpan(match.start(), match.end(), match.group(0), resolved))
    return spans


def resolve_relative_dates(text: str, anchor: datetime) -> str:
    """``text`` with each relative date followed by its absolute form in parentheses."""
    spans = relative_date_spans(text, anchor)
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for span in spans:
        parts.append(text[last : span.end])
        parts.append(f" ({span.resolved})")
        last = span.end
    parts.append(text[last:])
    return "".join(parts)


# ---- absolute dates already written -------------------------------------------------------

_ISO = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")
_MON_ANY = r"(?:" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON_ANY}),?\s+(\d{{4}})\b", re.IGNORECASE
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b({_MON_ANY})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE
)


def _month_number(name: str) -> int:
    name = name.lower().rstrip(".")
    if name in _MONTHS:
        return _MONTHS.index(name) + 1
    return _MONTH_ABBR[name[:4] if name == "sept" else name[:3]]


def parse_absolute_dates(text: str) -> list[date]:
    """Calendar dates written out in ``text`` (ISO, "8 May 2023", "May 8, 2023").

    In order of appearance, each date once; impossible dates ("2023-02-30") are skipped.
    """
    found: list[tuple[int, date]] = []
    for match in _ISO.finditer(text):
        _append_date(found, match.start(), *(int(g) for g in match.groups()))
    for match in _DAY_MONTH_YEAR.finditer(text):
        day, month, year = match.groups()
        _append_date(found, match.start(), int(year), _month_number(month), int(day))
    for match in _MONTH_DAY_YEAR.finditer(text):
        month, day, year = match.groups()
        _append_date(found, match.start(), int(year), _month_number(month), int(day))
    found.sort(key=lambda item: item[0])
    out: list[date] = []
    for _, day_ in found:
        if day_ not in out:
            out.append(day_)
    return out


def _append_date(found: list[tuple[int, date]], pos: int, year: int, month: int, day: int) -> None:
    try:
        found.append((pos, date(year, month, day)))
    except ValueError:
        return
