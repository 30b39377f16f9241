"""Fact files: deterministic bytes, a faithful round trip, readable errors for broken ones."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from engram_md.core.errors import MemoryFileError
from engram_md.core.models import (
    Category,
    ConfidenceTier,
    Fact,
    MemoryKind,
    PolicyClass,
    Source,
    Status,
    StatusChange,
    VerificationState,
)
from engram_md.store.factfile import KEY_ORDER, parse_fact, read_fact, render_fact, write_fact
from engram_md.text.hashing import content_hash

T = datetime(2026, 3, 2, 9, 2, 0, tzinfo=UTC)
BODY = "Dana wants shell commands to use uv instead of pip."

# The example of docs/FORMAT.md, byte for byte.
GOLDEN = """\
---
id: preference-20260302-090200-3f9c2a1b
category: preference
created: 2026-03-02T09:02:00Z
updated: 2026-03-02T09:02:00Z
source: offline
confidence: 0.95
confidenceTier: explicit
importance: 0.72
memoryKind: note
status: active
verificationState: unverified
policyClass: protected
tags: [uv, pip]
entities: [person-dana]
session: demo-1
sourceTurnIds: [t5]
---

Dana wants shell commands to use uv instead of pip.
"""


def t(**delta: float) -> datetime:
    """A fresh datetime object each call, so only the alias tests share one."""
    return datetime(2026, 3, 2, 9, 2, 0, tzinfo=UTC) + timedelta(**delta)


def basic(**changes: object) -> Fact:
    fact = Fact(
        id="preference-20260302-090200-3f9c2a1b",
        category=Category.PREFERENCE,
        created=t(),
        updated=t(),
        source=Source.OFFLINE,
        confidence=0.95,
        confidence_tier=ConfidenceTier.EXPLICIT,
        importance=0.72,
        memory_kind=MemoryKind.NOTE,
        content=BODY,
        session="demo-1",
        source_turn_ids=("t5",),
        policy_class=PolicyClass.PROTECTED,
        tags=("uv", "pip"),
        entities=("person-dana",),
        content_hash=content_hash(BODY),
    )
    return fact.with_changes(**changes) if changes else fact


def full() -> Fact:
    """A fact with every optional field set."""
    body = "The telemetry service moved from MySQL to PostgreSQL 16.\nIt happened on a Tuesday."
    return Fact(
        id="decision-20260302-090110-0a1b2c3d",
        category=Category.DECISION,
        created=t(),
        updated=t(days=3),
        source=Source.CONSOLIDATION,
        confidence=0.7,
        confidence_tier=ConfidenceTier.IMPLIED,
        importance=0.815,
        memory_kind=MemoryKind.EPISODE,
        content=body,
        session="b7300bff-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
        source_turn_ids=("m0000002", "m0000009"),
        status=Status.SUPERSEDED,
        verification_state=VerificationState.USER_CONFIRMED,
        policy_class=PolicyClass.EPHEMERAL,
        tags=("postgresql", "mysql", "yes", "null", "2026"),  # YAML-ish words stay strings
        entities=("entity-telemetry-service",),
        box_id="box-20260302-0001",
        expires_at=t(days=30),
        valid_at=datetime(2026, 3, 9, 0, 0, 0, tzinfo=UTC),
        confirmations=2,
        last_confirmed=t(days=2, hours=1),
        supersedes=("decision-20260201-100000-deadbeef",),
        superseded_by="decision-20260310-120000-cafef00d",
        merged_from=("fact-a", "fact-b"),
        status_history=(
            StatusChange(
                at=t(days=1),
                from_status=Status.ACTIVE,
                to_status=Status.CHALLENGED,
                reason="contradicted: 'we stay on MySQL'",
                by="consolidation",
            ),
            StatusChange(
                at=t(days=3),
                from_status=Status.CHALLENGED,
                to_status=Status.SUPERSEDED,
                reason="newer decision",
                by="dana",
            ),
        ),
        content_hash=content_hash(body),
    )


# ---------------------------------------------------------------- rendering


def test_render_matches_the_documented_format() -> None:
    assert render_fact(basic()) == GOLDEN


def test_render_is_deterministic_and_in_key_order() -> None:
    text = render_fact(full())
    assert text == render_fact(full())
    header = text.split("---\n")[1]
    keys = [line.split(":")[0] for line in header.splitlines() if not line.startswith(" ")]
    keys = [k for k in keys if not k.startswith("-")]
    assert keys == [k for k in KEY_ORDER if k in keys]
    assert set(keys) == set(KEY_ORDER)  # every optional key is written when set


def test_times_are_unquoted_utc_and_lists_flow_style() -> None:
    text = render_fact(full())
    assert "\ncreated: 2026-03-02T09:02:00Z\n" in text
    assert "\nexpiresAt: 2026-04-01T09:02:00Z\n" in text
    assert "\nsourceTurnIds: [m0000002, m0000009]\n" in text
    assert "'" not in text.split("\nstatusHistory:")[0].split("\ntags:")[0]
    # Mappings inside a list stay in block style, readable in a diff.
    assert "\nstatusHistory:\n- at: 2026-03-03T09:02:00Z\n" in text


def test_a_shared_time_object_is_not_written_as_a_yaml_alias() -> None:
    # A new fact has created and updated as one object; YAML must not write &id001 / *id001.
    fact = basic(created=T, updated=T)
    assert render_fact(fact) == GOLDEN


def test_a_file_without_updated_is_rewritten_without_aliases() -> None:
    # Read back, updated *is* created: the rewrite must still be two plain times.
    fact = parse_fact(GOLDEN.replace("updated: 2026-03-02T09:02:00Z\n", ""))
    assert render_fact(fact) == GOLDEN


def test_times_in_other_zones_are_written_in_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    text = render_fact(basic(created=datetime(2026, 3, 2, 11, 2, 0, tzinfo=plus_two)))
    assert "\ncreated: 2026-03-02T09:02:00Z\n" in text


def test_optional_keys_are_left_out_when_unset() -> None:
    text = render_fact(basic())
    for key in ("boxId", "expiresAt", "confirmations", "statusHistory"):
        assert f"\n{key}:" not in text
    # These are always there, even empty.
    text = render_fact(basic(tags=(), entities=(), session="", source_turn_ids=()))
    assert "\ntags: []\n" in text and "\nentities: []\n" in text
    assert "\nsession: ''\n" in text and "\nsourceTurnIds: []\n" in text


def test_body_is_stripped_and_ends_with_one_newline() -> None:
    text = render_fact(basic(content="\n\n  " + BODY + "  \n\n\n"))
    assert text.endswith("---\n\n" + BODY + "\n")


# ---------------------------------------------------------------- round trip


def test_round_trip_basic() -> None:
    assert parse_fact(render_fact(basic())) == basic()
    assert parse_fact(GOLDEN) == basic()


def test_round_trip_every_optional_field() -> None:
    fact = full()
    back = parse_fact(render_fact(fact))
    assert back == fact
    assert back.tags == ("postgresql", "mysql", "yes", "null", "2026")
    assert back.status_history[1].by == "dana"
    assert render_fact(back) == render_fact(fact)


def test_content_with_a_dashes_line_and_unicode_round_trips() -> None:
    body = "Zoë's plan — phase 1:\n---\nthen 東京 🚀"
    fact = basic(content=body, content_hash=content_hash(body), session="2026-03-02")
    back = parse_fact(render_fact(fact))
    assert back == fact
    assert back.session == "2026-03-02"  # a date-looking session stays a string


def test_unknown_keys_a_person_added_are_preserved() -> None:
    edited = GOLDEN.replace(
        "sourceTurnIds: [t5]\n",
        "sourceTurnIds: [t5]\nzReviewer: dana\nnotes: {why: asked twice, seen: 2}\naFlag: true\n",
    )
    fact = parse_fact(edited)
    assert fact.extra == {
        "zReviewer": "dana",
        "notes": {"why": "asked twice", "seen": 2},
        "aFlag": True,
    }
    # After a change of ours, the hand-added keys are still there, after ours, sorted.
    text = render_fact(fact.with_changes(status=Status.CHALLENGED))
    tail = text.split("sourceTurnIds: [t5]\n")[1].split("---\n")[0]
    assert tail == "aFlag: true\nnotes:\n  why: asked twice\n  seen: 2\nzReviewer: dana\n"
    assert parse_fact(text).extra == fact.extra


def test_counters_of_an_older_version_are_kept_as_unknown_keys_until_moved() -> None:
    # Recall counts and lifecycle scores live in state/ (store/access.py); a file an older
    # version wrote still has them: read as keys we do not know, they survive a rewrite
    # untouched, and only consolidation takes them out (after moving them to state/).
    older = GOLDEN.replace(
        "status: active\n", "status: active\nlifecycleState: validated\n"
    ).replace(
        "sourceTurnIds: [t5]\n",
        "sourceTurnIds: [t5]\naccessCount: 3\nheatScore: 0.6\ndecayScore: 0.25\ntier: hot\n"
        "firstEpoch: 2\n",
    )
    fact = parse_fact(older)
    assert fact.extra == {
        "lifecycleState": "validated",
        "accessCount": 3,
        "heatScore": 0.6,
        "decayScore": 0.25,
        "tier": "hot",
        "firstEpoch": 2,
    }
    assert parse_fact(render_fact(fact)).extra == fact.extra
    assert render_fact(fact.with_changes(extra={})) == GOLDEN
    for key in ("lifecycleState", "accessCount", "heatScore", "decayScore", "tier", "firstEpoch"):
        assert key not in KEY_ORDER


def test_hand_written_variations_are_read_leniently() -> None:
    text = """\
---
id: fact-1
category: fact
created: 2026-03-02 10:02:00+01:00
confidence: 0.5
tags: single-tag
entities:
sessions_typo_kept: yes
---
A person wrote this by hand.
"""
    fact = parse_fact(text)
    assert fact.created == T and fact.created.utcoffset() == timedelta(0)
    assert fact.updated == fact.created  # missing updated: same as created
    assert fact.confidence_tier is ConfidenceTier.INFERRED  # derived from 0.5
    assert fact.source is Source.MANUAL
    assert fact.tags == ("single-tag",) and fact.entities == ()
    assert fact.content_hash == content_hash("A person wrote this by hand.")
    assert fact.extra == {"sessions_typo_kept": True}


def test_a_date_without_time_is_midnight_utc() -> None:
    fact = parse_fact("---\nid: f\ncategory: moment\ncreated: 2026-03-02\n---\nBody.\n")
    assert fact.created == datetime(2026, 3, 2, tzinfo=UTC)


# ---------------------------------------------------------------- broken files


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nid: [unclosed\ncategory: fact\n---\nBody\n", "not valid YAML"),
        ("---\nid: x\n  category: fact\n bad: indent\n---\nBody\n", "not valid YAML"),
        # The reason names the problem and its line in the file, not PyYAML's "while ..." context.
        ("---\nid: x\ntags: *nope\n---\nBody\n", "found undefined alias at line 3"),
        ("---\nid: x\ncategory: fact\ncreated: 2026-13-45\n---\nBody\n", "not valid YAML"),
        ("---\ncategory: fact\ncreated: 2026-03-02T09:02:00Z\n---\nBody\n", "id"),
        ("---\nid: x\ncategory: gossip\ncreated: 2026-03-02T09:02:00Z\n---\nBody\n", "category"),
        ("---\nid: x\ncategory: fact\n---\nBody\n", "created"),
        ("---\nid: x\ncategory: fact\ncreated: soon\n---\nBody\n", "created"),
        (
            "---\nid: x\ncategory: fact\ncreated: 2026-03-02\nconfidence: 1.5\n---\nB\n",
            "confidence",
        ),
        ("---\nid: x\ncategory: fact\ncreated: 2026-03-02\nstatus: gone\n---\nB\n", "status"),
        ("---\nid: x\ncategory: fact\ncreated: 2026-03-02\n---\n\n   \n", "empty body"),
        ("Just some notes, no frontmatter.\n", "no frontmatter"),
        ("---\n- a\n- b\n---\nBody\n", "frontmatter"),
    ],
)
def test_broken_frontmatter_is_a_memory_file_error(text: str, reason: str) -> None:
    with pytest.raises(MemoryFileError) as info:
        parse_fact(text, path="facts/x.md")
    assert info.value.path == "facts/x.md"
    assert reason in info.value.reason
    assert str(info.value).startswith("facts/x.md: ")
    assert "\n" not in info.value.reason.strip()  # one readable line, not a traceback


@pytest.mark.parametrize("id_line", ["id:", "id: ''", "id: '  '"])
def test_empty_id_is_reported(id_line: str) -> None:
    with pytest.raises(MemoryFileError, match="id"):
        parse_fact(f"---\n{id_line}\ncategory: fact\ncreated: 2026-03-02\n---\nBody\n")


def test_non_utf8_file_is_a_memory_file_error(tmp_path: Path) -> None:
    path = tmp_path / "fact.md"
    path.write_bytes(GOLDEN.encode("utf-8").replace(b"Dana wants", b"Dana \xe9 wants"))
    with pytest.raises(MemoryFileError) as info:
        read_fact(path)
    assert "not UTF-8" in info.value.reason
    assert info.value.path == str(path)


def test_missing_file_is_a_memory_file_error(tmp_path: Path) -> None:
    with pytest.raises(MemoryFileError, match="cannot read"):
        read_fact(tmp_path / "gone.md")


def test_a_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "fact.md"
    path.write_bytes(b"\xef\xbb\xbf" + GOLDEN.encode("utf-8"))
    assert read_fact(path) == basic()


# ---------------------------------------------------------------- writing


def test_write_then_read(tmp_path: Path) -> None:
    path = tmp_path / "facts" / "2026-03-02" / "preference-090200-3f9c2a1b.md"
    assert write_fact(path, full(), fsync=False) is True
    assert read_fact(path) == full()
    assert path.read_text(encoding="utf-8") == render_fact(full(), path)
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temp file left


def test_write_returns_false_and_leaves_the_file_alone_when_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    assert write_fact(path, basic()) is True
    before = path.stat()
    assert write_fact(path, basic()) is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # A real change is written.
    assert write_fact(path, basic(status=Status.ARCHIVED)) is True
    assert read_fact(path).status is Status.ARCHIVED


def test_write_replaces_a_broken_or_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(b"\xff\xfe garbage")
    assert write_fact(path, basic()) is True
    assert read_fact(path) == basic()
