"""Recall over a real LanceDB index in tmp_path, embedded by the real local model."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.app import make_recaller, open_reader
from engram_md.core.config import Config, RecallConfig
from engram_md.core.models import CandidateFact, Category, LifecycleState, Source
from engram_md.index.saidindex import said_row_id
from engram_md.index.table import IndexRow, MemoryIndex
from engram_md.ingest.pipeline import to_fact
from engram_md.recall.context import SaidOrder
from engram_md.recall.fusion import FusionWeights
from engram_md.recall.query import query_features
from engram_md.recall.recaller import Recaller, Weights, telling_words
from engram_md.recall.result import ScoreParts
from engram_md.recall.wire import RecallOptions
from engram_md.store.access import AccessLog, Standing
from engram_md.store.factfile import render_fact
from engram_md.store.said import SaidTurn, format_line
from engram_md.text.embeddings import LocalMiniLM
from engram_md.text.words import estimate_tokens

from .rows import index_row

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def row(id: str, content: str, **changes: object) -> IndexRow:
    return index_row(id, content, **{"created": T0, "updated": T0, **changes})


def recaller(
    tmp_path: Path, minilm: LocalMiniLM, rows: list[IndexRow], **weights: object
) -> Recaller:
    index = MemoryIndex.open(tmp_path / "index", minilm)
    index.upsert(rows)
    access = AccessLog(tmp_path / "access.jsonl")
    return Recaller(index, minilm, access, RecallConfig(), weights=Weights(**weights))  # type: ignore[arg-type]


FILLER = [
    row("f-tea", "Priya drinks green tea every morning before standup"),
    row("f-db", "The team moved the billing service to PostgreSQL"),
    row("f-bike", "Dana rides a bike to the office when it does not rain"),
    row("f-cat", "The office cat sleeps on the windowsill all afternoon"),
    row("f-trip", "Dana is planning a hiking trip to the Alps in the summer"),
]


# The relevance floor off: these tests count how memories unrelated to the query are cut.
EVERYTHING = {"relevance_floor": -1.0}


def test_the_budget_cuts_by_four_characters_a_token(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, FILLER, **EVERYTHING)
    full = r.recall("What does Dana do?", RecallOptions(budget_tokens=10_000, record_access=False))
    assert len(full.memories) == len(FILLER)
    assert full.tokens == sum(math.ceil(len(m.content) / 4) for m in full.memories)
    assert estimate_tokens("abcde") == 2 and estimate_tokens("abcd") == 1
    # A budget that fits the first memory and little else.
    first_cost = estimate_tokens(full.memories[0].content)
    cut = r.recall(
        "What does Dana do?", RecallOptions(budget_tokens=first_cost + 5, record_access=False)
    )
    assert 1 <= len(cut.memories) < len(FILLER)
    assert cut.tokens <= first_cost + 5
    assert cut.tokens == sum(estimate_tokens(m.content) for m in cut.memories)


@pytest.mark.parametrize("status", ["superseded", "invalidated", "merged", "archived"])
def test_inactive_memories_are_left_out_unless_asked(
    tmp_path: Path, minilm: LocalMiniLM, status: str
) -> None:
    old = row("f-old", "Dana rides the train to the office every day", status=status)
    r = recaller(tmp_path, minilm, [*FILLER, old])
    query = "How does Dana get to the office?"
    ids = [m.id for m in r.recall(query, RecallOptions(record_access=False)).memories]
    assert "f-old" not in ids
    with_inactive = r.recall(query, RecallOptions(include_inactive=True, record_access=False))
    assert "f-old" in [m.id for m in with_inactive.memories]
    explained = r.recall(query, RecallOptions(explain=True, record_access=False))
    reasons = {c.row.id: c.reason for c in explained.candidates}
    assert reasons["f-old"] == f"left out: status {status}"


def test_a_relevant_preference_goes_first(tmp_path: Path, minilm: LocalMiniLM) -> None:
    rows = [
        *FILLER,
        row("f-pip", "Dana installed numpy with pip for the data project yesterday"),
        row(
            "p-uv", "Dana prefers uv over pip for installing Python packages", category="preference"
        ),
        row("p-tabs", "Dana prefers dark themes in every editor", category="preference"),
    ]
    r = recaller(tmp_path, minilm, rows)
    result = r.recall(
        "How should Python packages be installed with pip?", RecallOptions(record_access=False)
    )
    ids = [m.id for m in result.memories]
    assert ids[0] == "p-uv"
    # The unrelated preference is not pushed ahead of relevant facts (nor recalled at all).
    assert "p-tabs" not in ids[: ids.index("f-pip") + 1]


def test_a_name_in_the_query_lifts_the_memory_that_carries_it(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    rows = [
        row("f-dana", "Dana adopted a rescue dog named Biscuit", speaker="dana"),
        row("f-omar", "Omar adopted a rescue dog named Pepper", speaker="omar"),
        *FILLER,
    ]
    r = recaller(tmp_path, minilm, rows)
    for name, expected in (("Omar", "f-omar"), ("Dana", "f-dana")):
        result = r.recall(
            f"What dog did {name} adopt?", RecallOptions(explain=True, record_access=False)
        )
        assert result.memories[0].id == expected
        parts = {c.row.id: c.parts for c in result.candidates}
        assert parts[expected].name_match == 1.0
        other = "f-dana" if expected == "f-omar" else "f-omar"
        assert parts[other].name_match == 0.0


def test_a_date_in_the_query_lifts_memories_from_that_time(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    may = datetime(2025, 5, 14, 10, 0, tzinfo=UTC)
    rows = [
        row("f-may", "Dana went to a concert in the park", created=may, updated=may),
        row("f-jan", "Dana went to a concert downtown", session="s-0"),
        *FILLER,
    ]
    features = query_features("Where did Dana go in May 2025?")
    assert features.ranges and features.ranges[0][0].month == 5
    r = recaller(tmp_path, minilm, rows, weight_factor=0.0, recency_factor=0.0)
    for query in ("What concert did Dana go to in May 2025?", "What concert did Dana go to?"):
        result = r.recall(query, RecallOptions(explain=True, record_access=False))
        parts = {c.row.id: c.parts for c in result.candidates}
        dated = "May" in query
        assert parts["f-may"].date_match == (1.0 if dated else 0.0)
        assert parts["f-jan"].date_match == 0.0
    result = r.recall(
        "What concert did Dana go to in May 2025?", RecallOptions(record_access=False)
    )
    assert result.memories[0].id == "f-may"


def test_neighbours_of_a_strong_hit_are_lifted(tmp_path: Path, minilm: LocalMiniLM) -> None:
    later = T0 + timedelta(minutes=2)
    far = T0 + timedelta(days=3)
    rows = [
        row("f-hit", "Dana painted a sunrise over the lake"),
        row("f-next", "That was last summer, on the first morning of the holiday", created=later),
        row("f-else", "That was last summer, on the first morning of the course", created=far),
        *[replace(f, session="s-2") for f in FILLER],
    ]
    r = recaller(tmp_path, minilm, rows)
    result = r.recall(
        "When did Dana paint a sunrise?", RecallOptions(explain=True, record_access=False)
    )
    parts = {c.row.id: c.parts for c in result.candidates}
    assert parts["f-next"].neighbour == pytest.approx(parts["f-hit"].relevance / 1.0, rel=0.2)
    assert parts["f-else"].neighbour == 0.0
    assert parts["f-next"].relevance > parts["f-else"].relevance


@pytest.mark.parametrize(
    ("other", "reason"),
    [
        (row("f-chunk", "Dana: I moved to Lisbon last year. Omar: nice!", source_turn_ids=("t7",)),
         "source turns"),
        (row("f-twin", "Dana moved to Lisbon in 2024.", source_turn_ids=("t9",)), "near-duplicate"),
    ],
)  # fmt: skip
def test_memories_that_repeat_kept_ones_are_left_out(
    tmp_path: Path, minilm: LocalMiniLM, other: IndexRow, reason: str
) -> None:
    fact = row("f-fact", "Dana moved to Lisbon in 2024", source_turn_ids=("t7",))
    r = recaller(tmp_path, minilm, [fact, other, *FILLER], **EVERYTHING)
    result = r.recall("Where did Dana move?", RecallOptions(explain=True, record_access=False))
    ids = [m.id for m in result.memories]
    pair = {"f-fact", other.id}
    kept = [i for i in ids if i in pair]
    assert len(kept) == 1
    assert len(ids) == len(FILLER) + 1
    left = (pair - set(kept)).pop()
    reasons = {c.row.id: c.reason for c in result.candidates}
    assert reasons[left].startswith("left out:") and reason in reasons[left]


def test_memories_without_source_turns_are_not_repeats(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, [replace(f, source_turn_ids=()) for f in FILLER], **EVERYTHING)
    result = r.recall("Dana", RecallOptions(budget_tokens=10_000, record_access=False))
    assert len(result.memories) == len(FILLER)


def test_explain_shows_every_part(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, FILLER)
    result = r.recall("What does Priya drink?", RecallOptions(explain=True, record_access=False))
    answer = result.answer(explain=True).to_json()
    names = {f.name for f in fields(ScoreParts)}
    assert {"cosine", "fts_rel", "name_match", "date_match", "neighbour", "relevance",
            "lifecycle", "importance", "rep_bonus", "access_bonus", "kind_bias", "tier_bias",
            "recency", "weight", "raw", "score"} <= names  # fmt: skip
    assert answer["budget"] == 1000
    assert len(answer["candidates"]) == len(FILLER)
    top = answer["candidates"][0]
    assert top["id"] == "f-tea" and top["kept"] is True
    assert set(top["parts"]) == names
    assert top["parts"]["score"] == pytest.approx(answer["memories"][0]["score"], abs=1e-4)
    assert "vector" in top["channels"] and "text" in top["channels"]


def test_json_contract(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, FILLER)
    result = r.recall("What does Priya drink?")
    answer = result.answer().to_json()
    assert set(answer) == {"query", "memories", "tokens"}
    assert answer["query"] == "What does Priya drink?"
    assert answer["tokens"] == result.tokens
    memory = answer["memories"][0]
    assert set(memory) == {
        "id", "path", "category", "memoryKind", "content", "score", "sourceTurnIds", "created",
        "eventDate",
    }  # fmt: skip
    assert memory["id"] == "f-tea"
    assert memory["sourceTurnIds"] == ["turn-f-tea"]
    assert memory["created"] == "2026-03-02T09:00:00Z"
    assert 0.0 < memory["score"] < 1.0
    # Recalled memories count as accessed.
    assert r.access.usage().recent["f-tea"] == 1


def test_recall_counts_and_lifecycle_states_come_from_state(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    # The index holds neither (nor do the fact files): state/access.jsonl does.
    r = recaller(tmp_path, minilm, FILLER)

    def parts() -> ScoreParts:
        result = r.recall(
            "What does Priya drink?", RecallOptions(explain=True, record_access=False)
        )
        return next(c.parts for c in result.candidates if c.row.id == "f-tea")

    unrated = parts()
    assert unrated.lifecycle == 1.0 and unrated.access_bonus == 0.0  # a candidate, never recalled
    r.access.fold({"f-tea": Standing(accesses=4, lifecycle=LifecycleState.STALE)}, 0)
    r.access.record(["f-tea"])
    rated = parts()
    assert rated.lifecycle == Weights().lifecycle["stale"]
    assert rated.access_bonus == pytest.approx(0.12 * math.log1p(5))  # folded 4 + 1 since
    assert rated.importance == pytest.approx(0.5 + 0.03)  # the boost of recalls not yet folded


def test_an_empty_query_recalls_nothing(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, FILLER)
    result = r.recall("   ")
    assert result.memories == () and result.tokens == 0


def test_a_facts_event_date_comes_back_from_recall(cfg: Config, minilm: LocalMiniLM) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    made = to_fact(
        CandidateFact(
            category=Category.MOMENT,
            content="Caroline went to an LGBTQ support group.",
            confidence=0.95,
            source_turn_ids=("t1",),
            session="s1",
            created=said,
            source=Source.MANUAL,
        )
    )
    assert made is not None
    text = render_fact(replace(made, valid_at=datetime(2023, 5, 7, tzinfo=UTC)))
    assert "\nvalidAt: 2023-05-07T00:00:00Z\n" in text  # the frontmatter key a person edits
    path = cfg.layout.fact_path(made.category.value, made.created, made.content_hash[:8])
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with open_reader(cfg, refresh_index=True, embedder=minilm) as parts:
        answer = make_recaller(parts).recall(
            "When did Caroline go to the support group?", RecallOptions(record_access=False)
        )
    assert [m.valid_at for m in answer.memories] == [datetime(2023, 5, 7, tzinfo=UTC)]
    assert answer.answer().to_json()["memories"][0]["eventDate"] == "2023-05-07"
    assert "\n[MOMENT 2023-05-08, event 2023-05-07] Caroline went" in answer.render()


@pytest.mark.parametrize("query", ["q1", "What is the capital of Mongolia?", "kubernetes ingress"])
def test_a_question_about_nothing_remembered_gets_an_empty_block(
    tmp_path: Path, minilm: LocalMiniLM, query: str
) -> None:
    r = recaller(tmp_path, minilm, FILLER)
    result = r.recall(query, RecallOptions(record_access=False, explain=True))
    assert result.memories == ()
    assert result.render() == "<memory>\n</memory>"
    assert all("relevance floor" in c.reason for c in result.candidates if c.row.status == "active")


def test_the_floor_keeps_what_the_question_is_about(tmp_path: Path, minilm: LocalMiniLM) -> None:
    r = recaller(tmp_path, minilm, FILLER)
    ids = [
        m.id
        for m in r.recall(
            "How does Dana get to the office?", RecallOptions(record_access=False)
        ).memories
    ]
    assert ids[0] == "f-bike"
    assert "f-cat" not in ids and "f-tea" not in ids


def test_what_was_said_in_a_topic_s_conversation_fills_the_rest_below_the_floor(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    """A short message answers in words that match the question poorly (cosine 0.18 here):
    once the folder clearly knows the topic, it fills what the budget has left. A note below
    the floor, a sentence below the fill's own floor, and a folder that does not know the
    topic get nothing of it."""
    adopted = said("t1", "Lee: we adopted a rescue ferret called Mosi")
    answer = said("t2", "Lee: three, give or take")
    unrelated = said("t3", "Lee: new job starts monday")  # cosine 0.10
    note = row("f-bridge", "Lee says the bridge was closed again")
    asked = RecallOptions(budget_tokens=1000, record_access=False)
    query = "How old is Mosi the ferret?"
    explained = replace(asked, explain=True)

    found = recaller(tmp_path / "knows", minilm, [adopted, answer, unrelated, note])
    ids = [m.id for m in found.recall(query, asked).memories]
    assert ids[0] == adopted.id and answer.id in ids
    assert unrelated.id not in ids and "f-bridge" not in ids
    # The answer is left out by the floor alone: with nothing that knows the topic, so is it.
    decided = {c.row.id: c.reason for c in found.recall(query, explained).candidates}
    assert decided[answer.id] == "kept"
    lost = recaller(tmp_path / "unknown", minilm, [answer, unrelated, note])
    assert answer.id not in [m.id for m in lost.recall(query, asked).memories]


def said(turn: str, content: str, n: int = 0) -> IndexRow:
    """A sentence of what was said, as the said index writes it."""
    return row(
        said_row_id("s-1", turn, n),
        content,
        kind="said",
        category="said",
        memory_kind="said",
        path="said/2026-03-02/s-1.md",
        source_turn_ids=(turn,),
        speaker="Lee",
    )


def moved_to_munich() -> list[IndexRow]:
    """Lee's words of a move, and the facts drawn from them: the Berlin one superseded."""
    return [
        said("t1", "Lee: I live in Berlin with my partner."),
        said("t2", "Lee: We moved to Munich last month."),
        said("t3", "Lee: The office cat sleeps all day."),
        row("f-berlin", "Lee lives in Berlin.", status="superseded", source_turn_ids=("t1",)),
        row("f-munich", "Lee lives in Munich.", source_turn_ids=("t2",)),
    ]


def test_what_was_said_is_recalled_beside_the_facts_and_outdated_words_are_left_out(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    rows = moved_to_munich()
    asked = RecallOptions(record_access=False)
    found = recaller(tmp_path, minilm, rows).recall("Where does Lee live?", asked)
    contents = [m.content for m in found.memories]
    assert "Lee: We moved to Munich last month." in contents  # the words, not the rewrite
    assert "Lee lives in Munich." not in contents  # its turn is shown already
    assert "Lee lives in Berlin." not in contents  # superseded: not recalled

    # The sentence a superseded fact was drawn from is left out by default; asked for, the
    # inactive memories come back; a factor between 0 and 1 only sinks it.
    berlin = "Lee: I live in Berlin with my partner."
    assert berlin not in contents
    everything = RecallOptions(record_access=False, include_inactive=True)
    level = recaller(tmp_path / "level", minilm, rows)
    shown = {m.content: m.score for m in level.recall("Where does Lee live?", everything).memories}
    assert berlin in shown
    sinking = FusionWeights(outdated_factor=0.5)
    sunk = recaller(tmp_path / "sunk", minilm, rows, fusion=sinking)
    assert set(sunk._outdated_turns()) == {("s-1", "t1")}
    sunk_scores = {m.content: m.score for m in sunk.recall("Where does Lee live?", asked).memories}
    even = recaller(tmp_path / "even", minilm, rows, fusion=FusionWeights(outdated_factor=1.0))
    scores = {m.content: m.score for m in even.recall("Where does Lee live?", asked).memories}
    assert 0.0 < sunk_scores[berlin] < scores[berlin]


def test_a_one_word_answer_is_a_memory_and_an_acknowledgment_is_not(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    """In chat an answer is often one word ("at 6am"); "Yes." and "ok thanks" tell nothing,
    though a question naming their speaker matches them, and shown they would stand for
    their whole turn."""
    yes = said("t1", "Lee: Yes.", 0)
    dentist = said("t1", "Lee: And book the dentist for Tuesday.", 1)
    thanks = said("t2", "Lee: ok thanks")
    shift = said("t3", "Lee: the pool needs a lifeguard on saturday")
    early = said("t4", "Lee: at 6am")
    assert [telling_words(r) for r in (yes, thanks, early, dentist)] == [0, 0, 1, 3]
    r = recaller(tmp_path, minilm, [yes, dentist, thanks, shift, early])
    found = [m.content for m in r.recall("Lee", RecallOptions(record_access=False)).memories]
    assert dentist.content in found  # the turn is shown by what it tells
    assert yes.content not in found and thanks.content not in found
    asked = r.recall("When does Lee lifeguard at the pool on Saturday?", RecallOptions())
    assert early.content in [m.content for m in asked.memories]


def test_the_message_after_the_one_a_question_matches_is_recalled_with_it(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    """In chat the answer is often a later message: "why did Lee take the night shift?"
    matches the message that tells of the shift, and the reason comes two messages on, in
    words the question does not use. The order comes from the said file."""
    lines = [
        ("t1", "Dana", "did you see the game"),
        ("t2", "Lee", "missed it, was working"),
        ("t3", "Lee", "took the night shift at the warehouse"),
        ("t4", "Dana", "whoa why"),
        ("t5", "Lee", "rent went up again lol"),
        ("t6", "Dana", "the cat knocked over my plant again"),
        ("t7", "Lee", "need new running shoes"),
        ("t8", "Dana", "what are you cooking tonight"),
        ("t9", "Lee", "the warehouse cafeteria is terrible at night"),
        ("t10", "Dana", "trying that ramen place on 5th"),
        ("t11", "Lee", "my sister works nights too"),
        ("t12", "Dana", "parking at the warehouse costs a fortune"),
        ("t13", "Lee", "rain all week apparently"),
        ("t14", "Dana", "the night bus is always late"),
        ("t15", "Lee", "bringing an umbrella"),
        ("t16", "Dana", "warehouse wifi is a joke"),
        ("t17", "Lee", "movie on friday?"),
    ]
    memory = tmp_path / "memory"
    rel = "said/2026-03-02/s-1.md"
    body = "\n".join(
        format_line(SaidTurn(turn, "s-1", speaker, T0 + timedelta(minutes=n), text))
        for n, (turn, speaker, text) in enumerate(lines)
    )
    (memory / rel).parent.mkdir(parents=True)
    (memory / rel).write_text(f"---\nsession: s-1\ndate: 2026-03-02\n---\n\n{body}\n")
    rows = [replace(said(t, f"{who}: {text}"), speaker=who) for t, who, text in lines]
    question = "Why did Lee take the night shift at the warehouse?"
    small = RecallOptions(budget_tokens=50, record_access=False)
    reason = "Lee: rent went up again lol"

    alone = recaller(tmp_path / "alone", minilm, rows)
    assert reason not in [m.content for m in alone.recall(question, small).memories]
    order = SaidOrder(memory)
    assert order.around(rel, "t3", 2) == ("t2", "t4", "t1", "t5")
    assert order.around(rel, "t17", 1) == ("t16",)
    assert order.around(rel, "t-unknown", 2) == ()
    assert order.around("facts/2026-03-02/x.md", "t1", 2) == ()
    with_context = recaller(tmp_path / "context", minilm, rows)
    with_context.said_order = order
    found = [m.content for m in with_context.recall(question, small).memories]
    assert found[0] == "Lee: took the night shift at the warehouse"
    assert reason in found

    # With a floor above the reason's cosine (it is far from the question in meaning), it
    # is left out alone whatever the budget; as the context of a sentence that passes the
    # floor, in a folder that clearly knows the topic, it passes with it.
    strict = {"relevance_floor": 0.3, "fill_floor": 0.3}
    nameless = "Why take the night shift at the warehouse?"
    roomy = RecallOptions(budget_tokens=1000, record_access=False)
    floored = recaller(tmp_path / "floored", minilm, rows, **strict)
    assert reason not in [m.content for m in floored.recall(nameless, roomy).memories]
    floored.said_order = order
    assert reason in [m.content for m in floored.recall(nameless, roomy).memories]


def test_a_statement_no_longer_true_is_not_brought_back_as_context(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    """ "I live in Berlin" was said just before "we moved to Munich": the move's sentence
    lends its neighbours a share of its score, and the outdated one must stay out."""
    rows = moved_to_munich()
    memory = tmp_path / "memory"
    said_rows = [r for r in rows if r.kind == "said"]
    body = "\n".join(
        format_line(SaidTurn(r.source_turn_ids[0], "s-1", "Lee", T0, r.content[5:]))
        for r in said_rows
    )
    (memory / said_rows[0].path).parent.mkdir(parents=True)
    (memory / said_rows[0].path).write_text(f"---\nsession: s-1\ndate: 2026-03-02\n---\n\n{body}\n")
    r = recaller(tmp_path / "index", minilm, rows)
    r.said_order = SaidOrder(memory)
    assert r.said_order.around(said_rows[1].path, "t2", 1) == ("t1", "t3")
    asked = RecallOptions(record_access=False, explain=True)
    found = r.recall("Where does Lee live?", asked)
    contents = [m.content for m in found.memories]
    assert "Lee: We moved to Munich last month." in contents
    assert "Lee: I live in Berlin with my partner." not in contents
    assert any("context" in c.channels for c in found.candidates)
