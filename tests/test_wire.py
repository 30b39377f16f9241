"""The wire form of a recall: its request and its answer (the DESIGN.md JSON shape), both ways."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from engram_md.organize.activation import Step
from engram_md.recall.wire import (
    DEFAULT_OPTIONS,
    ExplainedCandidate,
    Memory,
    RecallAnswer,
    RecallOptions,
    read_request,
    render_block,
    request_json,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

TEA = Memory(
    "f-tea", "facts/2026-03-02/fact-tea.md", "fact", "note",
    "Priya drinks green tea.", 0.812345, ("t1", "t2"), T0,
)  # fmt: skip
HIKE = Memory(
    "m-hike", "facts/2026-03-02/moment-hike.md", "moment", "episode",
    "Dana went hiking.", 0.5, (), T0,
)  # fmt: skip
EXPLAINED = ExplainedCandidate(
    id="f-tea",
    path=TEA.path,
    status="active",
    content=TEA.content,
    kept=True,
    reason="kept",
    channels=("vector", "graph"),
    parts={"cosine": 0.71, "score": 0.8123},
    graph_path=(Step("entity", "f-old", "f-tea", 0.64),),
)


def _through_json(answer: RecallAnswer) -> RecallAnswer:
    return RecallAnswer.from_json(json.loads(json.dumps(answer.to_json())))


def test_a_recall_is_the_design_shape() -> None:
    data = RecallAnswer("what does Priya drink", (TEA,), 6).to_json()
    assert data == {
        "query": "what does Priya drink",
        "memories": [
            {
                "id": "f-tea",
                "path": "facts/2026-03-02/fact-tea.md",
                "category": "fact",
                "memoryKind": "note",
                "content": "Priya drinks green tea.",
                "score": 0.8123,
                "sourceTurnIds": ["t1", "t2"],
                "created": "2026-03-02T09:00:00Z",
                "eventDate": None,
            }
        ],
        "tokens": 6,
    }


def test_an_answer_reads_back_as_written_but_for_the_rounded_score() -> None:
    answer = RecallAnswer("q", (TEA, HIKE), 11)
    back = _through_json(answer)
    assert back.memories[0].score == 0.8123
    assert back == RecallAnswer("q", (replace(TEA, score=0.8123), HIKE), 11)
    assert back.render() == answer.render()


def test_an_explained_answer_carries_budget_and_candidates() -> None:
    answer = RecallAnswer("q", (TEA,), 6, budget=1000, candidates=(EXPLAINED,))
    data = answer.to_json()
    assert list(data) == ["query", "memories", "tokens", "budget", "candidates"]
    assert data["candidates"][0]["graphPath"] == [
        {"kind": "entity", "source": "f-old", "target": "f-tea", "confidence": 0.64}
    ]
    back = _through_json(answer)
    assert back.candidates == (EXPLAINED,)
    assert back.budget == 1000


def test_the_block_lists_each_memory_by_its_kind() -> None:
    box = Memory("box-1", "boxes/b.md", "topic", "box", "Tea and hikes.", 0.4, (), T0)
    assert render_block([TEA, HIKE, box]) == (
        "<memory>\n"
        "[FACT 2026-03-02] Priya drinks green tea.\n"
        "[MOMENT 2026-03-02] Dana went hiking.\n"
        "[TOPIC WINDOW 2026-03-02] Tea and hikes.\n"
        "</memory>"
    )
    assert RecallAnswer("q", (), 0).render() == "<memory>\n</memory>"


def test_every_line_carries_the_day_it_was_said_and_the_event_day_when_another() -> None:
    said = Memory(
        "said-1", "said/2023-05-08/s-1.md", "said", "said",
        "Caroline: I went to the support group yesterday.", 0.6, ("t9",),
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    )  # fmt: skip
    moment = replace(
        HIKE,
        created=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        valid_at=datetime(2023, 5, 7, tzinfo=UTC),
    )
    same_day = replace(TEA, valid_at=T0.replace(hour=7))
    assert render_block([said, moment, same_day]) == (
        "<memory>\n"
        "[SAID 2023-05-08] Caroline: I went to the support group yesterday.\n"
        "[MOMENT 2023-05-08, event 2023-05-07] Dana went hiking.\n"
        "[FACT 2026-03-02] Priya drinks green tea.\n"
        "</memory>"
    )


def test_the_event_date_goes_through_json_as_its_day() -> None:
    event = datetime(2023, 5, 7, tzinfo=UTC)
    answer = RecallAnswer("q", (replace(HIKE, valid_at=event), TEA), 11)
    data = json.loads(json.dumps(answer.to_json()))
    assert [m["eventDate"] for m in data["memories"]] == ["2023-05-07", None]
    assert RecallAnswer.from_json(data) == RecallAnswer(
        "q", (replace(HIKE, valid_at=event), replace(TEA, score=0.8123)), 11
    )
    late = replace(HIKE, valid_at=event.replace(hour=22, minute=30))
    assert Memory.from_json(late.to_json()).valid_at == event


def test_an_answer_without_event_dates_still_reads() -> None:
    data = RecallAnswer("q", (TEA, HIKE), 11).to_json()
    for memory in data["memories"]:
        del memory["eventDate"]
    back = RecallAnswer.from_json(data)
    assert [m.valid_at for m in back.memories] == [None, None]
    assert back.render() == RecallAnswer("q", (TEA, HIKE), 11).render()


def test_unknown_keys_are_ignored() -> None:
    data = {**RecallAnswer("q", (TEA,), 6).to_json(), "block": "<memory>…</memory>"}
    assert RecallAnswer.from_json(data).memories[0].id == "f-tea"


def _broken(change: dict[str, Any]) -> dict[str, Any]:
    data = RecallAnswer("q", (TEA,), 6).to_json()
    memory = {**data["memories"][0], **change}
    return {**data, "memories": [memory]}


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"query": "q", "memories": []},
        {"query": "q", "memories": {}, "tokens": 0},
        {"query": "q", "memories": [], "tokens": True},
        {"query": "q", "memories": [], "tokens": "6"},
        {"query": "q", "memories": [None], "tokens": 0},
        _broken({"score": "high"}),
        _broken({"sourceTurnIds": [1]}),
        _broken({"created": "yesterday"}),
        _broken({"eventDate": "last May"}),
        _broken({"eventDate": 20230507}),
        {"query": "q", "memories": [], "tokens": 0, "candidates": [{"id": "x"}]},
    ],
)
def test_a_malformed_answer_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        RecallAnswer.from_json(data)


def test_a_request_carries_the_query_and_every_option() -> None:
    options = RecallOptions(budget_tokens=300, top_k=4, include_inactive=True, explain=True)
    data = json.loads(json.dumps(request_json("what does Priya drink", options)))
    assert data == {
        "query": "what does Priya drink",
        "budget": 300,
        "top_k": 4,
        "include_inactive": True,
        "explain": True,
        "record_access": True,
    }
    assert read_request(data) == ("what does Priya drink", options)
    assert read_request(request_json("q", DEFAULT_OPTIONS)) == ("q", DEFAULT_OPTIONS)


def test_options_a_request_leaves_out_take_their_defaults() -> None:
    assert read_request({"query": "q"}) == ("q", DEFAULT_OPTIONS)
    assert read_request({"query": "q", "record_access": False}) == (
        "q",
        RecallOptions(record_access=False),
    )


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ([1, 2], "not an object"),
        ({"budget": 10}, "'query' is missing"),
        ({"query": 5}, "'query' is not a str"),
        ({"query": "q", "top_k": 0}, "'top_k' must be at least 1"),
        ({"query": "q", "budget": 2.5}, "'budget' is not a int"),
        ({"query": "q", "include_inactive": 1}, "'include_inactive' is not a bool"),
        ({"query": "q", "explain": None}, "'explain' is not a bool"),
        ({"query": "q", "dry_run": False}, "unknown option(s): 'dry_run'"),
    ],
)
def test_a_malformed_request_is_a_value_error(data: Any, complaint: str) -> None:
    with pytest.raises(ValueError) as raised:
        read_request(data)
    assert complaint in str(raised.value)
