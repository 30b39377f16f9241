"""The LLM judge: prompt, strict parsing, fail-open transport, cluster formation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

import pytest

from engram_md.consolidate.contradictions import Relation
from engram_md.consolidate.judge import LLMJudge, build_prompt, judged_relations, parse_decisions
from engram_md.core.errors import LLMOutputError
from engram_md.core.models import Category, Fact
from engram_md.extract.llm_client import LLMClient, Usage

from .consolidate_folder import NOW, make_fact
from .fake_openai import FakeOpenAI, Reply

DAY = timedelta(days=1)
DANA = ("person-dana",)


def _cluster() -> tuple[Fact, list[Fact]]:
    new = make_fact("Dana's team has 6 engineers.", created=NOW, entities=DANA)
    old = [
        make_fact("Dana's team has 4 engineers.", created=NOW - 9 * DAY, entities=DANA),
        make_fact("Dana's team is remote.", created=NOW - 8 * DAY, entities=DANA),
        make_fact("Dana's team has six engineers.", created=NOW - 7 * DAY, entities=DANA),
    ]
    return new, old


def test_prompt_lists_every_fact_with_a_short_reference() -> None:
    new, old = _cluster()
    prompt = build_prompt(new, old)
    assert "[N] (fact, note, 2026-03-01) Dana's team has 6 engineers." in prompt
    assert "[E3] (fact, note, 2026-02-22) Dana's team has six engineers." in prompt


def test_parse_decisions_is_strict_per_item() -> None:
    new, old = _cluster()
    answer = {
        "decisions": [
            {"existing": "E1", "action": "UPDATE", "reason": "team grew"},
            {"existing": "E2", "action": "add", "reason": "different"},
            {"existing": "[E3]", "action": "MERGE", "reason": "same"},
            {"existing": "E9", "action": "INVALIDATE", "reason": "no such fact"},
            {"existing": "E2", "action": "DELETE", "reason": "not an action"},
            {"nonsense": True},
        ]
    }
    relations = parse_decisions(answer, new, old)
    assert relations == [
        Relation("supersede", old[0].id, new.id, "judge: team grew"),
        Relation("duplicate", old[2].id, new.id, "judge: same"),
    ]
    by_full_id = parse_decisions(
        [{"existing": old[1].id, "action": "INVALIDATE", "reason": "wrong"}], new, old
    )
    assert by_full_id == [Relation("invalidate", old[1].id, new.id, "judge: wrong")]
    with pytest.raises(LLMOutputError):
        parse_decisions({"items": []}, new, old)
    with pytest.raises(LLMOutputError):
        parse_decisions({"decisions": [{"text": "x"}]}, new, old)


def test_judge_through_the_real_client(fake_llm: FakeOpenAI) -> None:
    new, old = _cluster()
    reply = {"decisions": [{"existing": "E1", "action": "UPDATE", "reason": "grew"}]}
    fake_llm.script(Reply("```json\n" + json.dumps(reply) + "\n```"))
    usage = Usage()
    judge = LLMJudge(LLMClient(fake_llm.llm_config(api="chat"), usage, sleep=lambda s: None))
    try:
        assert judge.decide(new, old) == [Relation("supersede", old[0].id, new.id, "judge: grew")]
        assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
        prompt = fake_llm.requests_to("chat/completions")[0].prompt_text()
        assert "EXISTING:" in prompt and "Dana's team is remote." in prompt
        # Junk, then an outage: nothing is decided (fail open), failures are counted.
        fake_llm.script("junk_schema")
        assert judge.decide(new, old) is None
        fake_llm.script("500", "500", "500")
        assert judge.decide(new, old) is None
        assert judge.failures == 2 and usage.failed_calls >= 4
        assert judge.decide(new, []) == []  # nothing to compare: no call
        assert usage.calls == 5
    finally:
        judge.close()


def test_responses_api_uses_the_judge_schema(fake_llm: FakeOpenAI) -> None:
    new, old = _cluster()
    fake_llm.script(Reply(json.dumps({"decisions": []})))
    judge = LLMJudge(LLMClient(fake_llm.llm_config(api="responses"), sleep=lambda s: None))
    try:
        assert judge.decide(new, old) == []
    finally:
        judge.close()
    (request,) = fake_llm.requests_to("responses")
    assert request.body["text"]["format"]["name"] == "judge"
    assert "decisions" in request.body["text"]["format"]["schema"]["properties"]


class _Recorder:
    """A judge that merges whatever is shown as E1 and records every cluster."""

    def __init__(self, fail_for: str = "") -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_for = fail_for

    def decide(self, new: Fact, existing: Sequence[Fact]) -> list[Relation] | None:
        self.calls.append((new.id, [f.id for f in existing]))
        if new.id == self.fail_for:
            return None
        first = existing[0]
        return [Relation("supersede", first.id, new.id, "judge: test")]


def test_clusters_one_call_per_new_fact_each_pair_once() -> None:
    a = make_fact("Dana's team has 4 engineers.", created=NOW - 9 * DAY, entities=DANA)
    b = make_fact("Dana's team has 5 engineers.", created=NOW - 5 * DAY, entities=DANA)
    c = make_fact("Dana's team has 6 engineers.", created=NOW - DAY, entities=DANA)
    other = make_fact("Priya likes tea.", created=NOW, entities=("person-priya",))
    judge = _Recorder()
    relations, unjudged = judged_relations([a, b, c, other], [False, True, True, True], None, judge)
    # b's cluster: a and c; c's cluster: a only (b was already judged with c); a is retired
    # by b's decision, so c is left with nothing new; "other" has no related facts.
    assert judge.calls == [(b.id, [a.id, c.id])]
    assert relations == [Relation("supersede", a.id, b.id, "judge: test")]
    assert unjudged == []


def test_neighbours_from_the_index_join_the_cluster_and_failures_are_kept() -> None:
    a = make_fact("The deploy key rotates monthly.", created=NOW - 9 * DAY)
    b = make_fact("Keys for deployment are rotated every month.", created=NOW - DAY,
                  category=Category.FACT)  # fmt: skip
    judge = _Recorder(fail_for=b.id)
    relations, unjudged = judged_relations(
        [a, b], [False, True], None, judge, neighbours=lambda f: [(a.id, 0.9), ("gone", 0.99)]
    )
    assert judge.calls == [(b.id, [a.id])]
    assert relations == [] and unjudged == [b.id]
