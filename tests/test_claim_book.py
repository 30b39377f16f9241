"""The claim book finds the statements a new one may update by holder, slot and word. It may
hand over more than the rules replace, never less: every pair :func:`update_between`
replaces must be among its candidates, in both directions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.text.claims import ClaimBook, claims, update_between

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
# The sets the rules were written against; the held-out ones stay unread.
TUNING = ("dev", "second", "blind", "fourth")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _statements(name: str) -> list[str]:
    texts = []
    for line in (DATA / f"update_pairs_{name}.jsonl").read_text().splitlines():
        pair = json.loads(line)
        texts += [pair["old"], pair["new"]]
    return texts


@pytest.mark.parametrize("name", TUNING)
def test_every_update_the_rules_find_is_a_candidate(name: str) -> None:
    # One holder says everything, so each statement meets every other one of the set.
    stated = [claims(text, "dana") for text in _statements(name)]
    book = ClaimBook()
    for i, claimed in enumerate(stated):
        book.add(f"s{i:04d}", claimed, T0 + timedelta(minutes=i))
    updates = 0
    for i, old in enumerate(stated):
        if not old:
            continue
        later = book.later_candidates(f"s{i:04d}", old)
        for j, new in enumerate(stated):
            if i == j or not new or update_between(old, new) is None:
                continue
            updates += 1
            assert f"s{i:04d}" in book.earlier_candidates(f"s{j:04d}", new), (i, j)
            assert f"s{j:04d}" in later, (i, j)
    assert updates > 100  # the set holds many updates, across statements of every kind


def test_candidates_follow_removal_and_re_adding() -> None:
    book = ClaimBook()
    plan = claims("I'm planning to repaint the garden shed this spring", "dana")
    done = claims("I finally repainted the garden shed, it looks great", "dana")
    assert update_between(plan, done) is not None
    book.add("plan", plan, T0)
    book.add("done", done, T0 + timedelta(days=3))
    assert "plan" in book.earlier_candidates("done", done)
    assert [old for old, _ in book.updated_by("done", done, T0 + timedelta(days=3))] == ["plan"]
    book.remove("plan")
    assert book.updated_by("done", done, T0 + timedelta(days=3)) == []
    book.add("plan", plan, T0)
    assert [old for old, _ in book.updated_by("done", done, T0 + timedelta(days=3))] == ["plan"]
    assert len(book) == 2


def test_unrelated_statements_of_the_holder_are_not_candidates() -> None:
    book = ClaimBook()
    for i, text in enumerate(
        ["I love hiking in the Alps", "My sister plays the cello", "I'm planning a trip to Oslo"]
    ):
        book.add(f"f{i}", claims(text, "dana"), T0)
    done = claims("I finished knitting the scarf for my niece", "dana")
    assert book.earlier_candidates("new", done) == {}
