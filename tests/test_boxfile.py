"""Box files: fixed bytes, readable back, links that resolve to the fact files."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import frontmatter
import pytest

from engram_md.core.errors import MemoryFileError
from engram_md.core.models import Fact
from engram_md.core.paths import MemoryLayout
from engram_md.organize.boxes import Box, BoxMember, Summarizer, ranked_topics
from engram_md.organize.boxfile import (
    add_box_members,
    box_files,
    box_path,
    box_rel_path,
    boxes_listing,
    drop_box_members,
    drop_from_boxes,
    parse_box,
    read_box,
    render_box,
    write_box,
)
from engram_md.store.factfile import write_fact

from .test_topics import T0, make_fact


def make_box(**kw: object) -> Box:
    members = (
        BoxMember(
            "preference-1",
            "facts/2026-03-02/preference-090200-3f9c2a1b.md",
            "Dana wants [uv] instead of pip.",
            created=T0,
        ),
        BoxMember(
            "decision-2",
            "facts/2026-03-03/decision-100000-aaaaaaaa.md",
            "We move to PostgreSQL 16.",
            created=T0 + timedelta(minutes=9),
        ),
    )
    values: dict[str, object] = dict(
        id="box-20260302-090000-abcdef12",
        session="demo-1",
        created_at=T0,
        sealed_at=T0 + timedelta(minutes=40),
        seal_reason="idle",
        topics=("postgresql", "uv"),
        memory_ids=tuple(m.id for m in members),
        trace_id="trace-20260302-12345678",
        goal="We move to PostgreSQL 16.",
        outcome="unknown",
        summary="Dana wants uv instead of pip. We move to PostgreSQL 16.",
        members=members,
    )
    values.update(kw)
    return Box(**values)  # type: ignore[arg-type]


def layout(tmp_path: Path) -> MemoryLayout:
    return MemoryLayout(tmp_path / "memory", tmp_path / "state")


def test_frontmatter_has_the_fields_in_order(tmp_path: Path) -> None:
    post = frontmatter.loads(render_box(make_box()))
    assert list(post.metadata) == [
        "id",
        "session",
        "createdAt",
        "sealedAt",
        "sealReason",
        "topics",
        "memoryIds",
        "traceId",
        "goal",
        "outcome",
    ]
    text = render_box(make_box())
    assert "createdAt: 2026-03-02T09:00:00Z" in text
    assert "topics: [postgresql, uv]" in text


def test_links_are_relative_and_resolve_to_the_facts(tmp_path: Path) -> None:
    lay = layout(tmp_path)
    box = make_box()
    for member in box.members:
        target = lay.memory_dir / member.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("fact")
    path, changed = write_box(lay, box)
    assert changed and path == lay.memory_dir / "boxes/2026-03-02/box-20260302-090000-abcdef12.md"
    text = path.read_text()
    assert "](../../facts/2026-03-02/preference-090200-3f9c2a1b.md)" in text
    for href in [line.split("](")[1].rstrip(")") for line in text.splitlines() if "](" in line]:
        assert (path.parent / href).resolve().is_file(), href


def test_read_gives_back_what_was_written(tmp_path: Path) -> None:
    lay = layout(tmp_path)
    box = make_box()
    path, _ = write_box(lay, box)
    back = read_box(path, lay)
    assert back.members == tuple(BoxMember(m.id, m.path, m.statement) for m in box.members)
    assert back.members[0].statement == "Dana wants [uv] instead of pip."  # escaped and back
    assert back.summary == box.summary
    assert (back.id, back.trace_id, back.topics, back.memory_ids) == (
        box.id,
        box.trace_id,
        box.topics,
        box.memory_ids,
    )
    assert back.sealed_at == box.sealed_at and back.goal == box.goal
    assert read_box(path).members == back.members  # the usual layout without a MemoryLayout


def test_writing_the_same_box_again_changes_nothing(tmp_path: Path) -> None:
    lay = layout(tmp_path)
    path, _ = write_box(lay, make_box())
    before = path.stat().st_mtime_ns, path.read_bytes()
    assert write_box(lay, make_box()) == (path, False)
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


def test_a_box_without_goal_or_trace_renders_null(tmp_path: Path) -> None:
    box = make_box(goal=None, trace_id=None, summary="")
    back = parse_box(render_box(box))
    assert back.goal is None and back.trace_id is None and back.summary == ""


def test_box_path_refuses_ids_that_escape(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        box_path(layout(tmp_path), make_box(id="../../../etc/x"))


def test_garbage_is_a_memory_file_error(tmp_path: Path) -> None:
    path = tmp_path / "box.md"
    path.write_text("no frontmatter here")
    with pytest.raises(MemoryFileError):
        read_box(path)
    path.write_text("---\nid: [unclosed\n---\nx\n")
    with pytest.raises(MemoryFileError):
        read_box(path)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("createdAt: 0001-01-01T00:00:00+01:00\n", "out of range"),  # was: OverflowError
        ("createdAt: !!timestamp 1-01-01T05:00:00Z\n", "YAML"),  # was: AttributeError
        ("createdAt: 2026-03-02T09:00:00Z\nsealedAt: soon\n", "sealedAt"),
        ("createdAt: 2026-03-02T09:00:00Z\ntopics: " + "[" * 5_000 + "]" * 5_000 + "\n", "nested"),
        ("createdAt: 2026-03-02T09:00:00Z\n1: one\n", "must be text"),
    ],
)
def test_hostile_frontmatter_is_a_memory_file_error(
    tmp_path: Path, header: str, reason: str
) -> None:
    """Every caller catches MemoryFileError only: anything else crashed the whole command."""
    text = f"---\nid: box-1\n{header}---\n\n## Memories\n"
    with pytest.raises(MemoryFileError, match=reason):
        parse_box(text)
    path = tmp_path / "box-1.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MemoryFileError, match=reason) as caught:
        read_box(path)
    assert caught.value.path == str(path)


def test_a_session_with_line_breaks_stays_in_the_title() -> None:
    """A session name comes from the transcript: on its own lines it became summary text
    (or a member link) when the file was read back."""
    box = make_box(session="s\n\nInjected summary.\n## Memories\n- [evil](../../x.md)")
    text = render_box(box)
    back = parse_box(text, rel_path=box_rel_path(box))
    assert back.summary == box.summary and back.session == box.session
    assert [m.path for m in back.members] == [m.path for m in box.members]


def test_summary_text_that_looks_like_markup_survives_a_rewrite() -> None:
    for summary in ("# Not a title.", "Ends with ## Memories in it."):
        box = make_box(summary=summary)
        back = parse_box(render_box(box), rel_path=box_rel_path(box))
        assert back.summary == summary and len(back.members) == len(box.members)


def test_links_that_leave_the_memory_folder_are_not_members() -> None:
    """Readers join a member path to the memory folder; an absolute one would replace it."""
    text = (
        "---\nid: box-1\ncreatedAt: 2026-03-02T09:00:00Z\nmemoryIds: [a, b, c, d]\n---\n\n"
        "## Memories\n\n- [a](/etc/passwd)\n- [b](../../../secret.md)\n- [c](../../..)\n"
        "- [d](../../facts/2026-03-02/d.md)\n"
    )
    box = parse_box(text, rel_path="boxes/2026-03-02/box-1.md")
    assert [(m.id, m.path) for m in box.members] == [("d", "facts/2026-03-02/d.md")]
    assert box.memory_ids == ("a", "b", "c", "d")


# ---------------------------------------------------------------- members changed


def _sealed(tmp_path: Path) -> tuple[MemoryLayout, Path, list[tuple[str, Fact]]]:
    """A box file written as its seal writes it, over three fact files."""
    lay = layout(tmp_path)
    said = [
        ("postgresql", "billing", "We decided to move billing to PostgreSQL."),
        ("postgresql", "mysql", "Dana prefers PostgreSQL over MySQL."),
        ("postgresql", "replicas", "The billing cluster has three replicas."),
    ]
    held: list[tuple[str, Fact]] = []
    for i, (a, b, text) in enumerate(said):
        fact = make_fact(
            tags=(a, b),
            id=f"fact-{i}",
            created=T0 + timedelta(minutes=i),
            content=text,
            importance=0.5 + i / 10,
        )
        rel = f"facts/2026-03-02/fact-{i}.md"
        write_fact(lay.memory_dir / rel, fact)
        held.append((rel, fact))
    members = tuple(BoxMember.of(fact, rel) for rel, fact in held)
    summary = Summarizer().summarize(members)
    box = make_box(
        members=members,
        memory_ids=tuple(m.id for m in members),
        topics=ranked_topics(f for _, f in held),
        summary=summary.summary,
        goal=summary.goal,
        created_at=T0,
        sealed_at=T0 + timedelta(minutes=30),
    )
    path, _ = write_box(lay, box)
    return lay, path, held


def test_box_files_and_the_boxes_listing_some_facts(tmp_path: Path) -> None:
    lay, path, held = _sealed(tmp_path)
    (path.parent / f".{path.name}.tmp-1").write_text("half a box")
    (path.parent / "box-broken.md").write_text("not a box")
    assert box_files(lay) == sorted([path, path.parent / "box-broken.md"])
    assert [b.id for b in boxes_listing(lay, {held[1][1].id, "other"})] == [read_box(path).id]
    assert boxes_listing(lay, {"other"}) == []
    assert box_files(layout(tmp_path / "empty")) == []


def test_dropping_a_member_rewrites_the_box_and_adding_it_back_restores_it(
    tmp_path: Path,
) -> None:
    lay, path, held = _sealed(tmp_path)
    before = path.read_bytes()
    (_, first), (rel, middle), (_, last) = held

    edit = drop_box_members(lay, path, {middle.id})

    assert edit is not None and edit.removed == (middle.id,) and not edit.deleted
    box = read_box(path, lay)
    assert edit.box is not None and edit.box.memory_ids == box.memory_ids
    assert box.memory_ids == (first.id, last.id)
    text = path.read_text()
    assert middle.content not in text and "MySQL" not in text and "mysql" not in box.topics
    assert drop_box_members(lay, path, {"other"}) is None

    added = add_box_members(lay, path, [(rel, middle)])

    assert added.removed == () and added.box is not None
    assert path.read_bytes() == before  # as its seal wrote it: order, summary, topics


def test_a_box_left_empty_is_deleted_and_unreadable_ones_are_skipped(tmp_path: Path) -> None:
    lay, path, held = _sealed(tmp_path)
    broken = path.parent / "box-broken.md"
    broken.write_text("not a box")
    box_id = read_box(path).id
    edits = drop_from_boxes(lay, {fact.id for _, fact in held})
    assert [(e.box_id, e.deleted, e.box) for e in edits] == [(box_id, True, None)]
    assert not path.exists() and broken.read_text() == "not a box"
