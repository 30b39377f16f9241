"""Boxes group what belongs together: one talk on one subject is one box, named by what was
said; a new subject, a silence or the size limit seals it; traces follow a project across
sessions. Through the real CLI, offline, with the real MiniLM embeddings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram_md.core.config import BoxConfig
from engram_md.core.models import Category
from engram_md.core.paths import MemoryLayout
from engram_md.organize.boxes import Box, BoxBuilder, SealReason, box_day, box_id_for
from engram_md.organize.boxfile import box_files, read_box
from engram_md.store.factfile import read_fact
from engram_md.text.embeddings import LocalMiniLM

from .conftest import Cli
from .test_topics import make_fact

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.jsonl"
CATEGORY_NAMES = {c.value for c in Category}

MIGRATION = (
    "We decided to migrate the billing database from MySQL to PostgreSQL next month.",
    "The PostgreSQL migration needs a new schema for the invoices table.",
    "I will run the MySQL export and the PostgreSQL import on the staging database first.",
    "We chose pgloader to copy the MySQL tables into PostgreSQL.",
)
HOLIDAY = (
    "I booked a holiday trip to Italy with my family for the summer.",
    "We will fly to Rome and then take the train to Florence for the holiday.",
    "My kids want to visit the beaches near Naples during the trip.",
    "I reserved a hotel in Florence for the first week of the Italy trip.",
)
MIGRATION_LATER = (
    "The PostgreSQL schema for the billing database passed review.",
    "I will switch the billing service from MySQL to PostgreSQL on Thursday.",
)
CUTOVER = (
    "The billing database cutover from MySQL to PostgreSQL went fine last night.",
    "We still need to drop the old MySQL tables after the PostgreSQL migration.",
    "I will check the PostgreSQL replication lag on the billing database every morning.",
)


def _lines(session: str, start: datetime, texts: tuple[str, ...]) -> list[str]:
    return [
        json.dumps(
            {
                "role": "user",
                "content": text,
                "timestamp": (start + timedelta(minutes=2 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "id": f"{session}-{start:%d%H%M}-{i}",
                "session": session,
            }
        )
        for i, text in enumerate(texts)
    ]


def _ingest(cli: Cli, lines: list[str]) -> list[Box]:
    source = cli.root / "talk.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("ingest", str(source))
    assert result.returncode == 0, result.stderr.decode()
    layout = MemoryLayout(cli.memory, cli.state)
    return sorted((read_box(p, layout) for p in box_files(layout)), key=lambda b: b.created_at)


def _statements(cli: Cli, box: Box) -> list[str]:
    return [read_fact(cli.memory / m.path).content for m in box.members]


def test_the_demo_talk_is_one_box_named_by_what_was_said(cli: Cli) -> None:
    result = cli("run", input=DEMO.read_bytes())
    assert result.returncode == 0, result.stderr.decode()
    layout = MemoryLayout(cli.memory, cli.state)
    boxes = sorted((read_box(p, layout) for p in box_files(layout)), key=lambda b: b.created_at)
    # 09:00-09:07 is one talk about one migration; the deploy story comes after 68 minutes.
    talk = [b for b in boxes if b.created_at.hour == 9]
    assert 1 <= len(talk) <= 2
    assert sum(len(b.memory_ids) for b in talk) >= 4
    assert max(len(b.memory_ids) for b in talk) >= 3
    assert talk[0].seal_reason in {"idle", "topic_shift"}
    assert {"postgresql", "migration"} <= set(talk[0].topics)
    for box in boxes:
        assert box.topics, box.id
        assert not CATEGORY_NAMES & set(box.topics), box.topics
        assert "dana" not in box.topics  # the speaker is who, not what
    listed = cli("traces", "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    listed_ids = [b["id"] for t in json.loads(listed.stdout)["traces"] for b in t["boxes"]]
    assert sorted(listed_ids) == sorted(b.id for b in boxes)


def test_a_clear_topic_shift_seals_the_box(cli: Cli) -> None:
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    boxes = _ingest(cli, _lines("work-1", start, MIGRATION + HOLIDAY))
    assert len(boxes) == 2
    first, second = boxes
    assert first.seal_reason == "topic_shift"
    said_first = " ".join(_statements(cli, first))
    assert all(word in said_first for word in ("pgloader", "schema", "export"))
    # The trip begins in the migration's box at most once (its box is named when it is
    # written); everything after it is in the new box, and nothing of the migration is.
    assert sum("Italy" in s or "holiday" in s for s in _statements(cli, first)) <= 1
    assert not any("MySQL" in s or "PostgreSQL" in s for s in _statements(cli, second))
    assert len(second.memory_ids) >= 2
    assert {"mysql", "postgresql"} <= set(first.topics)
    assert not {"italy", "holiday"} & set(first.topics)
    assert "florence" in second.topics
    assert first.trace_id != second.trace_id


def test_an_idle_gap_seals_and_a_trace_follows_the_project_across_sessions(cli: Cli) -> None:
    monday = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    lines = (
        _lines("work-1", monday, MIGRATION)
        + _lines("work-1", monday + timedelta(hours=2), MIGRATION_LATER)
        + _lines("work-2", monday + timedelta(days=2), CUTOVER)
        + _lines("home-1", monday + timedelta(days=2, hours=10), HOLIDAY)
    )
    boxes = _ingest(cli, lines)
    by_session: dict[str, list[Box]] = {}
    for box in boxes:
        by_session.setdefault(box.session, []).append(box)
    morning, later = by_session["work-1"]
    assert morning.seal_reason == "idle"
    assert len(morning.memory_ids) == len(MIGRATION)
    [cutover] = by_session["work-2"]
    [trip] = by_session["home-1"]
    # One project, three boxes, two sessions: one trace. The trip is another thread.
    assert morning.trace_id == later.trace_id == cutover.trace_id
    assert trip.trace_id != morning.trace_id
    traces = json.loads((cli.state / "traces.json").read_text())["traces"]
    assert len(traces[morning.trace_id]["boxes"]) == 3
    assert {"mysql", "postgresql"} <= set(traces[morning.trace_id]["topics"])


def test_one_fact_off_the_subject_seals_nothing(tmp_path: Path, minilm: LocalMiniLM) -> None:
    b = BoxBuilder(BoxConfig(), tmp_path / "open-box.json", embedder=minilm)
    facts = [
        make_fact(id=f"fact-{i}", content=text, created=datetime(2026, 3, 2, 9, i, tzinfo=UTC))
        for i, text in enumerate(
            MIGRATION[:3]
            + ("Dana wants the assistant to always use uv instead of pip.",)
            + MIGRATION[3:]
        )
    ]
    drifts = []
    for f in facts:
        assert b.check(f) is None, f.content
        box = b.open_box("s1")
        assert b.target_id(f) == (box.id if box is not None else box_id_for(f))
        drifts.append(b.join(f, f"facts/{f.id}.md").drift)
    # The aside was off the subject and began no run with what came before; the talk came back.
    assert drifts[3] == 1 and drifts[-1] == 0
    [opened] = b.open_boxes()
    assert len(opened.members) == len(facts)
    # Two facts on a new subject seal it, and the second opens the next box.
    trip = [
        make_fact(id=f"trip-{i}", content=text, created=datetime(2026, 3, 2, 9, 10 + i, tzinfo=UTC))
        for i, text in enumerate(HOLIDAY[:2])
    ]
    assert b.check(trip[0]) is None
    b.join(trip[0], "facts/trip-0.md")
    seal = b.check(trip[1])
    assert seal is not None and seal.reason is SealReason.TOPIC_SHIFT
    # Asked before the seal is carried out: the box the fact opens, and where its file goes.
    assert b.target_id(trip[1]) == box_id_for(trip[1]) != opened.id
    assert box_day(b.target_id(trip[1]), trip[1].created) == "2026-03-02"
