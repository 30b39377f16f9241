"""The trace weaver: boxes on one thread of work join one trace, within the time window."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from engram_md.core.config import TraceConfig
from engram_md.organize.boxfile import BoxEdit
from engram_md.organize.traces import TraceBox, TraceWeaver, load_traces, update_traces

from .test_boxfile import make_box
from .test_topics import T0


def tbox(name: str, topics: tuple[str, ...], days: float = 0, memories: int = 3) -> TraceBox:
    start = T0 + timedelta(days=days)
    return TraceBox(
        id=f"box-{name}",
        path=f"boxes/x/box-{name}.md",
        session="s1",
        created_at=start,
        sealed_at=start + timedelta(minutes=20),
        topics=topics,
        memories=memories,
    )


def weaver(tmp_path: Path, **cfg: object) -> TraceWeaver:
    return TraceWeaver(TraceConfig(**cfg), tmp_path / "traces.json")  # type: ignore[arg-type]


def test_overlapping_boxes_join_one_trace_others_start_their_own(tmp_path: Path) -> None:
    w = weaver(tmp_path)
    first = w.weave(tbox("a", ("postgresql", "migration", "schema")))
    assert w.weave(tbox("b", ("postgresql", "migration", "backup"), days=1)) == first
    other = w.weave(tbox("c", ("travel", "italy"), days=1))
    assert other != first
    by_id = {t.id: t for t in w.traces()}
    assert [b.id for b in by_id[first].boxes] == ["box-a", "box-b"]
    assert [b.id for b in by_id[other].boxes] == ["box-c"]


def test_an_old_trace_is_not_continued_after_the_window(tmp_path: Path) -> None:
    w = weaver(tmp_path, window_days=7)
    first = w.weave(tbox("a", ("postgresql", "migration")))
    assert w.weave(tbox("b", ("postgresql", "migration"), days=8)) != first
    w2 = weaver(tmp_path / "other", window_days=7)
    first = w2.weave(tbox("a", ("postgresql", "migration")))
    assert w2.weave(tbox("c", ("postgresql", "migration"), days=6.9)) == first


def test_the_best_overlap_wins(tmp_path: Path) -> None:
    w = weaver(tmp_path, min_overlap=0.4)
    loose = w.weave(tbox("a", ("postgresql", "travel", "x1", "x2", "x3")))
    tight = w.weave(tbox("b", ("postgresql", "backup", "restore", "y1", "y2")))
    assert loose != tight
    assert w.weave(tbox("c", ("postgresql", "backup", "restore"), days=1)) == tight


def test_weaving_the_same_box_again_keeps_its_trace(tmp_path: Path) -> None:
    w = weaver(tmp_path)
    first = w.weave(tbox("a", ("postgresql",)))
    w.weave(tbox("b", ("travel",)))
    assert w.weave(tbox("a", ("travel",))) == first  # a repeated seal after a crash
    assert sum(len(t.boxes) for t in w.traces()) == 2


def test_traces_survive_a_restart_and_the_file_is_stable(tmp_path: Path) -> None:
    w = weaver(tmp_path)
    w.weave(tbox("a", ("postgresql", "migration")))
    w.weave(tbox("b", ("postgresql",), days=2))
    w.save()
    text = (tmp_path / "traces.json").read_text()
    again = weaver(tmp_path)
    assert again.traces() == w.traces()
    assert again.trace_of("box-b") == w.trace_of("box-b")
    again.save()
    assert (tmp_path / "traces.json").read_text() == text
    data = json.loads(text)
    [trace] = data["traces"].values()
    assert [b["id"] for b in trace["boxes"]] == ["box-a", "box-b"]
    assert trace["lastSeen"] == "2026-03-04T09:20:00Z"
    assert load_traces(tmp_path / "traces.json") == w.traces()


def test_removing_boxes_drops_empty_traces(tmp_path: Path) -> None:
    w = weaver(tmp_path)
    keep = w.weave(tbox("a", ("postgresql",)))
    w.weave(tbox("b", ("postgresql",), days=1))
    gone = w.weave(tbox("c", ("travel",)))
    assert w.remove_boxes({"box-b", "box-c"}) == 2
    assert [t.id for t in w.traces()] == [keep]
    assert w.trace_of("box-c") is None and gone not in {t.id for t in w.traces()}
    assert w.traces()[0].last_seen == T0 + timedelta(minutes=20)


def test_a_trace_keeps_its_most_shared_topics(tmp_path: Path) -> None:
    w = weaver(tmp_path, min_overlap=0.0)
    for i in range(20):
        w.weave(tbox(f"b{i}", ("postgresql", f"one-off-{i}"), days=i * 0.1))
    [trace] = w.traces()
    assert "postgresql" in trace.topics and len(trace.topics) == 16


def test_boxes_rewritten_or_deleted_are_followed(tmp_path: Path) -> None:
    w = weaver(tmp_path, min_overlap=0.0)
    trace_id = w.weave(tbox("a", ("postgresql", "billing")))
    w.weave(tbox("b", ("postgresql",), days=1))
    w.weave(tbox("c", ("postgresql",), days=2))
    w.save()
    [before] = load_traces(w.path)
    later = T0 + timedelta(minutes=5)
    rewritten = make_box(id="box-a", topics=("postgresql",), memory_ids=("m1",), created_at=later)
    path = tmp_path / "box-a.md"

    update_traces(
        TraceConfig(),
        w.path,
        [BoxEdit("box-a", path, ("m2",), rewritten), BoxEdit("box-c", path, ("m3",), None)],
    )

    [trace] = load_traces(w.path)
    assert trace.id == trace_id and [b.id for b in trace.boxes] == ["box-a", "box-b"]
    entry = trace.boxes[0]
    assert (entry.memories, entry.topics, entry.created_at) == (1, ("postgresql",), later)
    assert entry.path == before.boxes[0].path and entry.sealed_at == before.boxes[0].sealed_at
    assert trace.topics == ("postgresql",) and dict(trace.topic_counts) == {"postgresql": 2}
    assert trace.created_at == before.created_at  # when the thread was active stays
    update_traces(TraceConfig(), tmp_path / "none.json", [BoxEdit("box-a", path, (), None)])
    assert not (tmp_path / "none.json").exists()


def test_the_file_is_the_whole_state_encoded_at_once_after_every_change(tmp_path: Path) -> None:
    """save() encodes only the traces that changed and puts the file together: it must be
    the bytes of encoding the whole state in one go, after weaves, a restart and removals."""
    from engram_md.core.statefile import save_json
    from engram_md.organize.traces import trace_to_json

    w = weaver(tmp_path, min_overlap=0.3)
    reference = tmp_path / "reference.json"

    def same() -> None:
        w.save()
        whole = {"version": 1, "traces": {t.id: trace_to_json(t) for t in w.traces()}}
        save_json(reference, whole, fsync=False, compact=True)
        assert w.path.read_bytes() == reference.read_bytes()

    same()  # no trace yet
    for i in range(12):
        topics = ("postgresql", f"t{i % 3}") if i % 2 else ("travel", "ünïcode", f"t{i % 3}")
        w.weave(tbox(f"b{i}", topics, days=i * 0.5))
        same()
    w = weaver(tmp_path, min_overlap=0.3)  # a restart reads the file back
    w.weave(tbox("late", ("postgresql", "t1"), days=7))
    same()
    w.remove_boxes({"box-b0", "box-b1", "box-late"})
    same()
    assert json.loads(w.path.read_text(encoding="utf-8"))["version"] == 1
