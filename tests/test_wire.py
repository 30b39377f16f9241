"""The wire form of a recall answer: the DESIGN.md JSON shape, both ways."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from engram_md.organize.activation import Step
from engram_md.recall.wire import ExplainedCandidate, Memory, RecallAnswer, render_block

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
        "[FACT] Priya drinks green tea.\n"
        "[MOMENT] 2026-03-02: Dana went hiking.\n"
        "[TOPIC WINDOW] 2026-03-02: Tea and hikes.\n"
        "</memory>"
    )
    assert RecallAnswer("q", (), 0).render() == "<memory>\n</memory>"


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
        {"query": "q", "memories": [], "tokens": 0, "candidates": [{"id": "x"}]},
    ],
)
def test_a_malformed_answer_is_a_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        RecallAnswer.from_json(data)
