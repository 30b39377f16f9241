"""The evidence-recall harness and its baselines, on small synthetic conversations."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.baselines import (
    BM25,
    BM25Turns,
    DenseTurns,
    HybridSentences,
    build_baselines,
    rrf,
    tokenize,
)
from bench.evidence import (
    Unit,
    align,
    evaluate,
    evidence_recall,
    fill_budget,
    format_table,
    memoized,
    scoped,
    tokens,
)
from bench.locomo import Question, Turn
from bench.recall_bench import cross_check
from bench.recall_bench import format_table as format_recall_table
from engram_md.text.embeddings import LocalMiniLM

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turn(conversation: str, dia_id: str, speaker: str, text: str) -> Turn:
    return Turn(conversation, dia_id, speaker, text, WHEN, 1)


TURNS = [
    turn("c1", "D1:1", "Caroline", "Hey Mel! I went to a support group yesterday."),
    turn("c1", "D1:2", "Melanie", "That sounds brave. How was it? I painted a sunset at home."),
    turn("c1", "D1:3", "Caroline", "It was great. Then I adopted a puppy named Biscuit."),
    turn("c1", "D1:4", "Melanie", "Lovely! My kids and I went camping by the lake last week."),
    turn("c2", "D1:1", "Jon", "I lost my job at the bank, so I am opening a dance studio."),
    turn("c2", "D1:2", "Gina", "My clothing store opened online and sales are picking up."),
]


def unit(ids: tuple[str, ...], tokens_: int) -> Unit:
    return (ids, "x" * (4 * tokens_))


def test_tokens_is_four_characters_rounded_up() -> None:
    assert tokens("") == 0
    assert tokens("abcd") == 1
    assert tokens("abcde") == 2


def test_fill_budget_skips_a_too_big_unit_and_takes_a_later_smaller_one() -> None:
    a, big, small, last = unit(("a",), 10), unit(("b",), 100), unit(("c",), 5), unit(("d",), 6)
    assert fill_budget([a, big, small, last], 20) == [a, small]
    assert fill_budget([a, big, small, last], 200) == [a, big, small, last]
    assert fill_budget([big], 99) == []


def test_evidence_recall_counts_the_share_of_evidence_found() -> None:
    units = [(("D1:1", "D1:9"), "one"), (("D1:3",), "two")]
    assert evidence_recall(units, ("D1:1", "D1:2", "D1:3")) == pytest.approx(2 / 3)
    assert evidence_recall(units, ("D2:1",)) == 0.0
    assert evidence_recall([], ("D1:1",)) == 0.0


def test_evaluate_budget_recall_per_category_and_r_at_k(tmp_path: Path) -> None:
    ranked = [unit(("D1:1",), 30), unit(("D1:2",), 80), unit(("D1:3",), 10), unit(("D1:4",), 10)]
    questions = [
        Question("c1", "q-multi", 1, ("D1:2", "D1:3")),  # budget keeps D1:3 only -> 0.5
        Question("c1", "q-single", 4, ("D1:4",)),  # fits after skipping D1:2 -> 1.0
        Question("c1", "q-single-missed", 4, ("D9:9",)),  # never retrieved -> 0.0
    ]
    result = evaluate({"fixed": lambda q: ranked}, questions, budget=50, ks=(1, 3))
    # Plain JSON: the result can be written and read back unchanged.
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    result = json.loads(path.read_text())

    r = result["retrievers"]["fixed"]
    assert r["recall"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert r["per_category"] == {"multi-hop": pytest.approx(0.5), "single-hop": 0.5}
    assert result["per_category"] == {"multi-hop": 1, "single-hop": 2}
    assert r["tokens_used"] == 50  # 30 + 10 + 10; the 80-token unit was skipped
    # R@k ignores the budget: the first three units include D1:2 and D1:3.
    assert r["at_k"]["1"]["recall"] == 0.0
    assert r["at_k"]["3"]["recall"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)
    assert r["at_k"]["3"]["tokens"] == 120
    assert r["at_k"]["3"]["words"] == 3  # each synthetic unit is one "word"
    table = format_table(result)
    assert "fixed" in table and "multi-hop (1)" in table and "R@3" in table


def test_scoped_searches_only_the_questions_conversation() -> None:
    seen: list[str] = []

    def c1(query: str) -> list[Unit]:
        seen.append(query)
        return [(("D1:1",), "c1 unit")]

    retrieve = scoped({"c1": c1})
    assert retrieve(Question("c1", "hello", 4, ("D1:1",))) == [(("D1:1",), "c1 unit")]
    assert retrieve(Question("c2", "other", 4, ("D1:1",))) == []
    assert seen == ["hello"]


def test_memoized_asks_once_per_question() -> None:
    asked: list[str] = []

    def retrieve(question: Question) -> list[Unit]:
        asked.append(question.question)
        return [(("D1:1",), question.question)]

    cached = memoized(retrieve)
    first, second = Question("c1", "one", 4, ("D1:1",)), Question("c1", "two", 4, ("D1:1",))
    assert cached(first) == cached(first) == [(("D1:1",), "one")]
    cached(second)
    assert asked == ["one", "two"]


def test_align_puts_labels_left_and_figures_right_under_a_rule() -> None:
    lines = align([["scope", "name", "R"], ["c1", "bm25", "0.5"], ["", "x", "10.25"]], labels=2)
    assert lines == [
        "scope  name      R",
        "-----  ----  -----",
        "c1     bm25    0.5",
        "       x     10.25",
    ]


def test_cross_check_tunes_on_one_conversation_and_reports_the_other() -> None:
    scores = {
        "a": {"c1": 0.9, "c2": 0.6},
        "b": {"c1": 0.8, "c2": 0.7},
        "shipped": {"c1": 0.9, "c2": 0.65},
    }
    one, other = cross_check(scores, ["c1", "c2"], "shipped")
    # On c1, "a" and the default tie at 0.9: the default is kept.
    assert (one["tuned_on"], one["chosen"], one["held_out_on"]) == ("c1", "shipped", "c2")
    assert one["tuned"] == 0.9 and one["held_out"] == 0.65
    assert one["best_there"] == "b" and one["gap"] == pytest.approx(0.05)
    assert (other["chosen"], other["tuned"], other["held_out"]) == ("b", 0.7, 0.8)
    assert other["best_there"] == "shipped" and other["gap"] == pytest.approx(0.1)
    assert (other["default_tuned"], other["default_held_out"]) == (0.65, 0.9)


def test_recall_table_shows_every_scope_budget_and_part() -> None:
    questions = [Question("c1", "q", 1, ("D1:1",)), Question("c2", "q", 4, ("D1:2",))]
    ranked = [(("D1:1",), "x" * 40)]
    scopes = {"c1": questions[:1], "c2": questions[1:], "together": questions}
    result = {
        "budgets": [5, 10],
        "recall": {
            scope: {
                str(b): evaluate({"fixed": lambda q: ranked}, items, budget=b, ks=())
                for b in (5, 10)
            }
            for scope, items in scopes.items()
        },
        "cross_check": {
            "budget": 10,
            "default": "a",
            "grid": {"a": {"c1": 1.0, "c2": 0.0, "together": 0.5}},
            "directions": cross_check({"a": {"c1": 1.0, "c2": 0.0}}, ["c1", "c2"], "a"),
        },
        "relevance_floor": {
            "budget": 10,
            "under_tokens": 100,
            "measured_on": "rendered block",
            "directions": {"c1 -> c2": {"asked": 1, "empty": 1, "short": 1}},
            "asked": 1,
            "short_share": 1.0,
            "short_content_share": 1.0,
            "empty_share": 1.0,
            "own_empty_share": 0.0,
            "own_short_share": 0.0,
        },
        "latency_ms": {"c1": {"queries": 1, "p50": 12.5, "p95": 12.5, "index_rows": 3}},
    }
    table = format_recall_table(result)
    lines = table.splitlines()
    assert lines[1].split() == ["scope", "retriever", "R@5", "multi", "single", "tok",
                                "R@10", "multi", "single", "tok"]  # fmt: skip
    assert lines[3].split() == ["c1", "(questions)", "1", "1", "-"]
    # The 10-token unit does not fit 5 tokens: c1 finds its evidence only at 10; c2 has no
    # multi-hop question, so that cell is blank.
    assert lines[4].split() == ["fixed", "0.000", "0.000", "-", "0", "1.000", "1.000", "-", "10"]
    assert "a (shipped)" in table and "gap 0.000" in table
    assert "100.0% of 1" in table and "c1 -> c2: 1/1 under 100 tokens, 1 empty" in table
    assert "c1 p50 12.5 ms" in table and "(3 index rows)" in table


def test_tokenize_drops_stop_words_and_keeps_content() -> None:
    assert tokenize("What did Caroline adopt in 2023?") == ["caroline", "adopt", "2023"]


def test_bm25_ranks_the_exact_term_turn_first() -> None:
    search = BM25Turns([t for t in TURNS if t.conversation == "c1"])
    ranked = search("Who is Biscuit?")
    assert ranked[0] == (("D1:3",), "Caroline: It was great. Then I adopted a puppy named Biscuit.")
    assert len(ranked) == 1  # only turns sharing a term are returned
    assert search("what was it") == []  # stop words alone match nothing


def test_bm25_prefers_rarer_terms_and_shorter_documents() -> None:
    index = BM25(["lake lake camping", "lake " + "filler " * 20, "camping trip", "camping"])
    # "lake" is rarer than "camping": the document with it twice wins.
    assert index.rank("lake camping")[0] == 0
    # Equal term frequency, shorter document scores higher.
    scores = index.scores("camping")
    assert scores[3] > scores[2] > 0
    assert scores[1] == 0


def test_rrf_fuses_by_reciprocal_rank() -> None:
    # 3: 1/63 + 1/61 edges out 2: 1/62 + 1/62; 1 and 4 appear once each.
    assert rrf([[1, 2, 3], [3, 2, 4]]) == [3, 2, 1, 4]
    # Found second by both beats first in one; equal scores keep the order first seen.
    assert rrf([[7, 8], [9, 8]]) == [8, 7, 9]
    assert rrf([[5, 6]]) == [5, 6]
    assert rrf([]) == []


def test_dense_and_hybrid_rank_the_paraphrased_turn(minilm: LocalMiniLM) -> None:
    c1 = [t for t in TURNS if t.conversation == "c1"]
    dense = DenseTurns(c1, minilm)
    assert dense("Which outdoor trip did the family take?")[0][0] == ("D1:4",)
    assert len(dense("anything")) == len(c1)  # every turn, ranked

    hybrid = HybridSentences(c1, minilm)
    ranked = hybrid("What puppy did Caroline adopt?")
    # Units are single sentences, prefixed with the speaker, sourced from their turn.
    assert ranked[0] == (("D1:3",), "Caroline: Then I adopted a puppy named Biscuit.")
    assert all(text.split(": ", 1)[0] in {"Caroline", "Melanie"} for _, text in ranked)

    retrievers = build_baselines(TURNS, minilm)
    assert set(retrievers) == {"bm25-turns", "dense-turns", "hybrid-sentences"}
    question = Question("c2", "What business did Jon start after losing his job?", 4, ("D1:1",))
    for retrieve in retrievers.values():
        units = retrieve(question)
        assert units[0][0] == ("D1:1",)
        assert all("Caroline" not in text and "Melanie" not in text for _, text in units)
