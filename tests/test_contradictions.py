"""Offline duplicate/contradiction rules and the lineage they write."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_md.consolidate.contradictions import (
    Profile,
    Relation,
    candidate_pairs,
    exact_duplicates,
    lineage_changes,
    offline_relations,
    relate,
    subjects,
)
from engram_md.consolidate.plan import FactUpdate
from engram_md.core.models import (
    FIRST_SOURCE_TURNS,
    LATEST_SOURCE_TURNS,
    Category,
    ConfidenceTier,
    Fact,
    MemoryKind,
    Status,
)

from .consolidate_folder import NOW, make_fact

DAY = timedelta(days=1)
DANA = ("person-dana",)


def pair(old: str, new: str, **kw: Any) -> tuple[Fact, Fact]:
    a = make_fact(old, created=NOW - 10 * DAY, entities=DANA, **kw)
    b = make_fact(new, created=NOW - 2 * DAY, entities=DANA, **kw)
    return a, b


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("Dana's team has 4 engineers.", "Dana's team has 6 engineers, not 4.", "supersede"),
        ("Dana's team has 4 engineers.", "Dana's team has 6 engineers.", "supersede"),
        ("Dana prefers dark mode in every editor.", "Dana prefers dark mode in all editors.",
         "duplicate"),
        ("Dana uses uv for packaging.", "Dana uses uv for packaging!", "duplicate"),
        ("Dana likes cilantro.", "Dana does not like cilantro.", "supersede"),
        ("Dana's manager is Priya.", "Actually, Dana's manager is Marco, not Priya.", "supersede"),
        ("Dana works at Acme.", "Dana no longer works at Acme.", "supersede"),
        # Not related, or not sure enough: both stay.
        ("Dana prefers uv over pip for packaging.", "Dana prefers pip over uv for packaging.",
         None),
        ("Dana likes sushi.", "Dana now likes pizza.", None),
        ("Dana lives in Lisbon.", "Dana lives in Porto.", None),
        ("Dana is Priya's sister.", "Dana is Marco's sister.", None),
        ("Dana's team has 4 engineers.", "Dana's team has 6 designers.", None),
        ("The meeting is on Monday at 10.", "The meeting is on Monday at 11 with Priya.", None),
    ],
)  # fmt: skip
def test_rules(old: str, new: str, kind: str | None) -> None:
    a, b = pair(old, new)
    relation = relate(a, b)
    assert (relation.kind if relation else None) == kind
    if relation is not None:
        assert (relation.older, relation.newer) == (a.id, b.id)  # the newer one wins
        assert relate(b, a) == relation  # argument order does not matter


def test_episodes_keep_their_fidelity() -> None:
    a, b = pair(
        "Dana ran a 5 km race in Lisbon.",
        "Dana ran a 10 km race in Lisbon.",
        category=Category.MOMENT,
        kind=MemoryKind.EPISODE,
    )
    assert relate(a, b) is None
    notes = pair("Dana ran a 5 km race in Lisbon.", "Dana ran a 10 km race in Lisbon.")
    assert relate(*notes) is not None  # the same words as notes: a changed value


def test_subject_and_category_must_agree() -> None:
    a = make_fact("The team has 4 engineers.", created=NOW - 9 * DAY, entities=("person-dana",))
    b = make_fact("The team has 6 engineers.", created=NOW, entities=("person-priya",))
    assert relate(a, b) is None  # different people's teams
    c = make_fact("Dana has 4 engineers.", category=Category.SKILL, created=NOW - 9 * DAY)
    d = make_fact("Dana has 6 engineers.", category=Category.FACT, created=NOW)
    assert relate(c, d) is None
    e = make_fact("Dana has 6 engineers, not 4.", category=Category.CORRECTION, created=NOW)
    assert relate(c, e) is not None  # a correction may correct any category


def test_subjects() -> None:
    assert subjects(make_fact("x y", created=NOW, entities=("person-dana", "tool-uv"))) == {
        "dana",
        "uv",
    }
    assert subjects(make_fact("Dana's team met Priya.", created=NOW)) == {"dana", "priya"}
    assert subjects(make_fact("the build takes 4 minutes", created=NOW)) == {"build"}
    profile = Profile("Actually, Dana's team has 6 engineers, not 4.")
    assert profile.marker == "actually" and profile.negated
    assert profile.numbers == {"6", "4"} and profile.frame == {"dana", "team", "engineer"}


def test_candidate_pairs_need_a_new_member_a_subject_and_cosine() -> None:
    facts = [
        make_fact("Dana likes tea.", created=NOW - 3 * DAY, entities=DANA),
        make_fact("Dana likes green tea.", created=NOW - 2 * DAY, entities=DANA),
        make_fact("Dana drinks coffee.", created=NOW - DAY, entities=DANA),
        make_fact("Priya likes tea.", created=NOW, entities=("person-priya",)),
    ]
    profiles = [Profile(f.content) for f in facts]
    vectors = np.array([[1, 0], [0.8, 0.6], [0, 1], [1, 0]], dtype=np.float32)
    got = list(candidate_pairs(facts, [False, True, False, False], vectors, profiles))
    assert [(i, j) for i, j, _ in got] == [(0, 1), (1, 2)]  # 0.8 and 0.6, same subject only
    got = list(candidate_pairs(facts, [False, True, False, False], vectors, profiles,
                               min_cosine=0.7))  # fmt: skip
    assert [(i, j) for i, j, _ in got] == [(0, 1)]
    assert list(candidate_pairs(facts, [False] * 4, vectors, profiles)) == []
    # Both new: the pair is reported once.
    got = list(candidate_pairs(facts, [True, True, False, False], vectors, profiles))
    assert sorted((i, j) for i, j, _ in got) == [(0, 1), (1, 2)]


def test_exact_duplicates_need_no_subject() -> None:
    a = make_fact("the build takes four minutes", created=NOW - DAY)
    b = make_fact("The build takes four minutes!", created=NOW, category=Category.FACT)
    assert exact_duplicates([a, b], [False, True]) == [
        Relation("duplicate", a.id, b.id, "the same statement")
    ]
    assert exact_duplicates([a, b], [False, False]) == []
    assert offline_relations([a, b], [False, True], None)[0].kind == "duplicate"


def _facts(*facts: Fact) -> dict[str, tuple[Path, Fact]]:
    return {f.id: (Path(f"/m/facts/{f.id}.md"), f) for f in facts}


def test_supersede_lineage() -> None:
    old, new = pair("Dana's team has 4 engineers.", "Dana's team has 6 engineers, not 4.")
    changes = lineage_changes(
        offline_relations([old, new], [False, True], None), _facts(old, new), NOW
    )
    assert [c.action for c in changes] == ["supersede_newer", "supersede"]  # newer first
    newer, older = (c.after for c in changes if isinstance(c, FactUpdate))
    assert newer.supersedes == (old.id,) and newer.status is Status.ACTIVE
    assert older.status is Status.SUPERSEDED and older.superseded_by == new.id
    (entry,) = older.status_history
    assert (entry.from_status, entry.to_status, entry.at) == (Status.ACTIVE, Status.SUPERSEDED, NOW)
    assert "4 → 6" in entry.reason and older.updated == NOW
    assert older.content == old.content  # never rewritten, never deleted


def test_merge_keeps_the_earliest_and_its_lineage() -> None:
    first = make_fact("Dana prefers dark mode in every editor.", created=NOW - 9 * DAY,
                      category=Category.PREFERENCE, entities=DANA, turn="t1")  # fmt: skip
    second = make_fact("Dana prefers dark mode in all editors.", created=NOW - 5 * DAY,
                       category=Category.PREFERENCE, entities=DANA, turn="t2",
                       confidence=0.3, expires_at=NOW + DAY)  # fmt: skip
    third = make_fact("Dana prefers dark mode in all the editors.", created=NOW - DAY,
                      category=Category.PREFERENCE, entities=DANA, turn="t3",
                      confidence=0.97, confirmations=2)  # fmt: skip
    facts = _facts(first, second, third)
    relations = offline_relations([first, second, third], [False, True, True], None)
    changes = lineage_changes(relations, facts, NOW)
    by_id = {c.after.id: c.after for c in changes if isinstance(c, FactUpdate)}
    survivor = by_id[first.id]
    assert survivor.merged_from == (second.id, third.id)
    assert survivor.source_turn_ids == ("t1", "t2", "t3")
    assert survivor.confirmations == 1 + 3  # each merged fact plus its own confirmations
    assert survivor.confidence == 0.97 and survivor.confidence_tier is ConfidenceTier.EXPLICIT
    assert survivor.status is Status.ACTIVE
    # Merging facts each said many times keeps the survivor's first turns and the latest.
    many = [
        make_fact(f"Dana prefers dark mode in {n} editors.", created=NOW - DAY * (9 - i),
                  category=Category.PREFERENCE, entities=DANA, turn="x").with_changes(
            source_turn_ids=tuple(f"{n}{k}" for k in range(20))
        )
        for i, n in enumerate(("a", "b", "c"))
    ]  # fmt: skip
    merged = {
        c.after.id: c.after
        for c in lineage_changes(
            offline_relations(many, [False, True, True], None), _facts(*many), NOW
        )
        if isinstance(c, FactUpdate)
    }[many[0].id]
    assert merged.source_turn_ids == tuple(
        [f"a{k}" for k in range(FIRST_SOURCE_TURNS)]
        + [f"c{k}" for k in range(20 - LATEST_SOURCE_TURNS, 20)]
    )
    for loser in (second, third):
        assert by_id[loser.id].status is Status.MERGED
        assert by_id[loser.id].superseded_by == first.id
    # A run killed after the survivor was written: the next run only retires the others.
    facts[first.id] = (facts[first.id][0], survivor)
    again = lineage_changes(relations, facts, NOW)
    assert sorted(c.after.id for c in again if isinstance(c, FactUpdate)) == sorted(
        [second.id, third.id]
    )


def test_newest_correction_wins() -> None:
    old = make_fact("Dana's team has 4 engineers.", created=NOW - 9 * DAY, entities=DANA)
    mid = make_fact("Dana's team has 5 engineers.", created=NOW - 5 * DAY, entities=DANA)
    new = make_fact("Dana's team has 6 engineers.", created=NOW - DAY, entities=DANA)
    relations = offline_relations([old, mid, new], [True, True, True], None)
    changes = lineage_changes(relations, _facts(old, mid, new), NOW)
    after = {c.after.id: c.after for c in changes if isinstance(c, FactUpdate)}
    assert after[old.id].superseded_by == new.id
    assert after[mid.id].superseded_by == new.id
    assert set(after[new.id].supersedes) == {old.id, mid.id}


def test_each_new_fact_meets_only_its_nearest_per_subject() -> None:
    facts = [make_fact(f"Dana note {i}.", created=NOW - i * DAY, entities=DANA) for i in range(6)]
    profiles = [Profile(f.content) for f in facts]
    vectors = np.array([[1.0, 0.0]] + [[np.cos(a), np.sin(a)] for a in (0.1, 0.2, 0.3, 0.4, 0.5)])
    new = [True, False, False, False, False, False]
    got = list(candidate_pairs(facts, new, vectors.astype(np.float32), profiles, per_fact=2))
    assert sorted(j for _, j, _ in got) == [1, 2]  # the two nearest, not all five
