"""The box builder's decisions: when a fact joins, when it seals first, and why."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from engram_md.core.config import BoxConfig
from engram_md.core.models import Category, Fact
from engram_md.core.paths import MemoryLayout
from engram_md.organize.boxes import (
    MAX_BOX_TOPICS,
    BoxBuilder,
    BoxMember,
    Seal,
    SealReason,
    Summarizer,
    box_id_for,
    member_facts,
    ranked_topics,
)
from engram_md.store.factfile import write_fact

from .test_topics import T0, make_fact


def fact(i: int, tags: tuple[str, ...], minutes: float = 0, session: str = "s1", **kw: Any) -> Fact:
    return make_fact(
        tags=tags,
        id=f"fact-{i}",
        created=T0 + timedelta(minutes=minutes),
        content=f"Statement number {i}.",
        session=session,
        **kw,
    )


def builder(tmp_path: Path, **cfg: object) -> BoxBuilder:
    return BoxBuilder(BoxConfig(**cfg), tmp_path / "state" / "open-box.json")  # type: ignore[arg-type]


def feed(b: BoxBuilder, f: Fact) -> Seal | None:
    seal = b.check(f)
    if seal is not None:
        b.close(seal.box.id)
    b.join(f, f"facts/{f.id}.md")
    return seal


def test_facts_on_one_subject_share_a_box(tmp_path: Path) -> None:
    b = builder(tmp_path)
    assert feed(b, fact(1, ("postgres", "migration"))) is None
    assert feed(b, fact(2, ("PostgreSQL", "backup"), minutes=5)) is None
    box = b.open_box("s1")
    assert box is not None and [m.id for m in box.members] == ["fact-1", "fact-2"]
    assert box.id == box_id_for(fact(1, ()))
    assert box.last_activity == T0 + timedelta(minutes=5)


def test_a_new_subject_seals_with_topic_shift(tmp_path: Path) -> None:
    b = builder(tmp_path)
    feed(b, fact(1, ("postgres", "migration", "schema")))
    feed(b, fact(4, ("postgres", "schema")))
    # One fact off the subject joins the box; the second one on the same new subject seals.
    assert (
        feed(b, fact(2, ("holiday", "travel", "italy"), minutes=1, category=Category.MOMENT))
        is None
    )
    seal = b.check(fact(3, ("holiday", "italy", "flight"), minutes=2, category=Category.MOMENT))
    assert seal is not None and seal.reason is SealReason.TOPIC_SHIFT
    assert seal.at == T0 + timedelta(minutes=2)


def test_silence_longer_than_idle_minutes_seals_as_idle_even_on_topic(tmp_path: Path) -> None:
    b = builder(tmp_path, idle_minutes=30)
    feed(b, fact(1, ("postgres",)))
    assert b.check(fact(2, ("postgres",), minutes=30)) is None  # exactly 30: still the same talk
    seal = b.check(fact(3, ("postgres",), minutes=68))
    assert seal is not None and seal.reason is SealReason.IDLE


def test_a_full_box_seals_before_it_would_exceed_the_limit(tmp_path: Path) -> None:
    b = builder(tmp_path, max_memories=3)
    for i in range(3):
        assert feed(b, fact(i, ("postgres",), minutes=i)) is None
    seal = b.check(fact(9, ("postgres",), minutes=4))
    assert seal is not None and seal.reason is SealReason.MAX_MEMORIES
    assert len(seal.box.members) == 3


def test_sessions_have_their_own_boxes(tmp_path: Path) -> None:
    b = builder(tmp_path)
    feed(b, fact(1, ("postgres",), session="a"))
    # Another session on another subject neither seals nor joins the first one.
    assert b.check(fact(2, ("travel",), session="b")) is None
    feed(b, fact(2, ("travel",), session="b"))
    assert {box.session for box in b.open_boxes()} == {"a", "b"}
    assert b.target_id(fact(3, ("postgres",), session="a")) == b.open_box("a").id  # type: ignore[union-attr]


def test_open_boxes_survive_a_restart(tmp_path: Path) -> None:
    b = builder(tmp_path)
    feed(b, fact(1, ("postgres",)))
    feed(b, fact(2, ("postgres", "backup"), minutes=3))
    again = builder(tmp_path)
    assert again.open_boxes() == b.open_boxes()
    state = json.loads((tmp_path / "state" / "open-box.json").read_text())
    assert state["open"]["s1"]["topicCounts"]["postgresql"] == 2


def test_joining_twice_does_not_duplicate_a_member(tmp_path: Path) -> None:
    b = builder(tmp_path)
    f = fact(1, ("postgres",))
    b.join(f, "facts/a.md")
    b.join(f, "facts/a.md")
    assert len(b.open_box("s1").members) == 1  # type: ignore[union-attr]


def test_end_seals_use_the_last_activity(tmp_path: Path) -> None:
    b = builder(tmp_path)
    feed(b, fact(1, ("postgres",)))
    feed(b, fact(2, ("postgres",), minutes=7))
    [seal] = b.seals_at_end(SealReason.END_OF_INPUT)
    assert seal.at == T0 + timedelta(minutes=7) and seal.reason is SealReason.END_OF_INPUT


def test_a_broken_state_file_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "state" / "open-box.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"open": {"s1": {"id": 1}}}')
    assert builder(tmp_path).open_boxes() == []


def test_summary_takes_the_most_important_statements_in_order() -> None:
    members = tuple(
        BoxMember(f"m{i}", f"facts/m{i}.md", f"Statement {i}", category=cat, importance=imp)
        for i, (cat, imp) in enumerate(
            [("fact", 0.2), ("decision", 0.9), ("fact", 0.8), ("commitment", 0.1), ("fact", 0.7)]
        )
    )
    said = Summarizer().summarize(members)
    assert said.summary == "Statement 1. Statement 2. Statement 4."
    assert said.goal == "Statement 1"
    assert said.outcome == "unknown"


def test_drop_takes_facts_out_of_the_open_boxes(tmp_path: Path) -> None:
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    b = BoxBuilder(BoxConfig(), layout.open_box_path)
    kept = fact(1, ("postgresql",))
    gone = fact(2, ("postgresql", "billing"), minutes=1)
    alone = fact(3, ("hiking",), session="s2")
    for f in (kept, gone, alone):
        rel = f"facts/{f.id}.md"
        write_fact(layout.memory_dir / rel, f)  # topics are made again from the fact files
        b.join(f, rel)
    first = b.open_box("s1")
    second = b.open_box("s2")
    assert first is not None and second is not None and "billing" in first.topics

    hits = b.drop({gone.id, alone.id, "fact-unknown"}, layout)

    assert hits == {gone.id: first.id, alone.id: second.id}
    box = b.open_box("s1")
    assert box is not None and [m.id for m in box.members] == [kept.id]
    assert "billing" not in box.topics and box.last_activity == first.last_activity
    assert b.open_box("s2") is None  # emptied: it goes
    again = BoxBuilder(BoxConfig(), layout.open_box_path)  # saved
    assert again.open_boxes() == [box]
    saved = layout.open_box_path.read_bytes()
    assert b.drop({"fact-unknown"}, layout) == {}
    assert layout.open_box_path.read_bytes() == saved


def test_ranked_topics_and_member_facts(tmp_path: Path) -> None:
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    facts = [fact(i, ("postgresql", f"one-off-{i}")) for i in range(3)]
    topics = ranked_topics(facts)
    assert topics == tuple(sorted(topics)) and "postgresql" in topics
    assert len(ranked_topics(fact(i, (f"t{i:02}",)) for i in range(40))) == MAX_BOX_TOPICS
    write_fact(layout.memory_dir / "facts/a.md", facts[0])
    (layout.memory_dir / "facts/b.md").write_text("---\nid: [not a fact\n---\nx\n")
    members = [
        BoxMember(facts[0].id, "facts/a.md", ""),
        BoxMember(facts[1].id, "facts/b.md", ""),
        BoxMember(facts[2].id, "facts/missing.md", ""),
    ]
    found = member_facts(layout, members)
    assert list(found) == [facts[0].id] and found[facts[0].id].content == facts[0].content
