from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from engram_md.text.dates import parse_absolute_dates, relative_date_spans, resolve_relative_dates

# Monday 2026-03-02, mid-morning UTC: the anchor of the sample transcripts.
MONDAY = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yesterday the deploy failed.", "Yesterday (2026-03-01) the deploy failed."),
        ("I fixed it today.", "I fixed it today (2026-03-02)."),
        ("I ran this morning.", "I ran this morning (2026-03-02)."),
        ("Dinner tonight?", "Dinner tonight (2026-03-02)?"),
        ("Ship it tomorrow.", "Ship it tomorrow (2026-03-03)."),
        ("Send it by Friday.", "Send it by Friday (2026-03-06)."),
        ("Let's meet on Friday.", "Let's meet on Friday (2026-03-06)."),
        ("This Friday works.", "This Friday (2026-03-06) works."),
        ("It broke last Friday.", "It broke last Friday (2026-02-27)."),
        ("Plan for next week.", "Plan for next week (week of 2026-03-09)."),
        ("As I said last week.", "As I said last week (week of 2026-02-23)."),
        ("Budget from last month.", "Budget from last month (February 2026)."),
        ("Budget for next month.", "Budget for next month (April 2026)."),
        ("We hired her last year.", "We hired her last year (2025)."),
        ("It failed 3 days ago.", "It failed 3 days ago (2026-02-27)."),
        ("It failed two weeks ago.", "It failed two weeks ago (2026-02-16)."),
        ("Due in 10 days.", "Due in 10 days (2026-03-12)."),
        ("Back in a week.", "Back in a week (2026-03-09)."),
        ("We met last night.", "We met last night (2026-03-01)."),
        ("Gone the day before yesterday.", "Gone the day before yesterday (2026-02-28)."),
        ("See you last weekend.", "See you last weekend (weekend of 2026-02-28)."),
        ("I moved 2 years ago.", "I moved 2 years ago (2024)."),
        ("We started 3 months ago.", "We started 3 months ago (December 2025)."),
        ("Trip last May.", "Trip last May (May 2025)."),
        ("It was a busy last Tues.", "It was a busy last Tues (2026-02-24)."),
        ("We met a few weeks ago.", "We met a few weeks ago (a few weeks before 2026-03-02)."),
    ],
)
def test_resolves_against_the_anchor(text: str, expected: str) -> None:
    assert resolve_relative_dates(text, MONDAY) == expected


def test_possessive_keeps_the_annotation_readable() -> None:
    assert (
        resolve_relative_dates("today's standup ran long", MONDAY)
        == "today's (2026-03-02) standup ran long"
    )


def test_idempotent() -> None:
    text = "Yesterday it failed; by Friday we fix it, and next week we ship."
    once = resolve_relative_dates(text, MONDAY)
    assert once != text
    assert resolve_relative_dates(once, MONDAY) == once
    # A second pass against another day must not re-annotate either.
    assert resolve_relative_dates(once, datetime(2027, 1, 1, tzinfo=UTC)) == once


def test_text_without_relative_dates_is_unchanged() -> None:
    text = "The friday_batch job and Sunday-school are not dates; neither is 2026."
    assert resolve_relative_dates("We like mondays.", MONDAY) == "We like mondays."
    assert resolve_relative_dates(text, MONDAY).count("(") == 0


def test_habits_are_not_dates() -> None:
    assert resolve_relative_dates("We deploy every Friday.", MONDAY) == "We deploy every Friday."


def test_weekday_tense_past_and_future() -> None:
    assert resolve_relative_dates("I went to the park on Sunday.", MONDAY).endswith(
        "on Sunday (2026-03-01)."
    )
    assert resolve_relative_dates("I will go to the park on Sunday.", MONDAY).endswith(
        "on Sunday (2026-03-08)."
    )
    # An infinitive points forward even after a past verb.
    assert "Tuesday (2026-03-03)" in resolve_relative_dates("We agreed to ship on Tuesday", MONDAY)


def test_same_weekday_as_anchor() -> None:
    assert "Monday (2026-03-09)" in resolve_relative_dates("Send it by Monday.", MONDAY)
    assert "Monday (2026-03-02)" in resolve_relative_dates("this Monday is busy", MONDAY)
    assert "Monday (2026-02-23)" in resolve_relative_dates("last Monday was fine", MONDAY)


def test_next_weekday_is_in_next_calendar_week() -> None:
    assert "Friday (2026-03-13)" in resolve_relative_dates("next Friday", MONDAY)


def test_anchor_time_zone_is_the_turns_day() -> None:
    late = datetime(2026, 3, 2, 23, 59, tzinfo=UTC)
    assert resolve_relative_dates("yesterday", late) == "yesterday (2026-03-01)"


def test_month_and_year_boundaries() -> None:
    jan = datetime(2026, 1, 1, tzinfo=UTC)
    assert resolve_relative_dates("last month", jan) == "last month (December 2025)"
    assert resolve_relative_dates("yesterday", jan) == "yesterday (2025-12-31)"
    assert resolve_relative_dates("next December", jan) == "next December (December 2026)"


def test_spans_report_positions() -> None:
    text = "Call me tomorrow, not today."
    spans = relative_date_spans(text, MONDAY)
    assert [(text[s.start : s.end], s.resolved) for s in spans] == [
        ("tomorrow", "2026-03-03"),
        ("today", "2026-03-02"),
    ]


def test_parse_absolute_dates_formats() -> None:
    text = (
        "Met on 8 May, 2023, again on May 9, 2023 and 2023-05-10; "
        "the 1st of June 2024 and Sept. 3 2021 too; 2023-02-30 is not a date."
    )
    assert parse_absolute_dates(text) == [
        date(2023, 5, 8),
        date(2023, 5, 9),
        date(2023, 5, 10),
        date(2024, 6, 1),
        date(2021, 9, 3),
    ]


def test_parse_absolute_dates_dedups_and_ignores_plain_text() -> None:
    assert parse_absolute_dates("2026-03-01 and March 1, 2026") == [date(2026, 3, 1)]
    assert parse_absolute_dates("When did Caroline go to the support group?") == []


def test_resolved_dates_are_parseable_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The recall side reads dates back out of stored facts; what we write must parse.
    path = tmp_path / "fact.md"
    path.write_text(resolve_relative_dates("Yesterday it broke.", MONDAY), encoding="utf-8")
    assert parse_absolute_dates(path.read_text(encoding="utf-8")) == [date(2026, 3, 1)]
