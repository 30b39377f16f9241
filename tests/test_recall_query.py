"""What recall reads from a query (recall/query.py): whether it asks about time, and what a
time question changes in recall: the words of outdated statements come back for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engram_md.recall.query import query_features, respelled
from engram_md.recall.wire import RecallOptions
from engram_md.text.embeddings import LocalMiniLM

from .test_recall import moved_to_munich, recaller, said


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Lee move to Munich?", True),
        ("and when was that?", True),
        ("How long has Lee lived in Munich?", True),
        ("What year did Lee start the job?", True),
        ("how many weeks was the trip", True),
        ("Where does Lee live?", False),
        # A conjunction inside the question, not a question about time.
        ("What did Lee say when the office closed?", False),
        ("Who is Lee's partner?", False),
    ],
)
def test_a_question_about_time_is_told_apart(query: str, asks: bool) -> None:
    assert query_features(query).asks_time is asks


def test_a_question_about_time_gets_the_outdated_words_back(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    rows = moved_to_munich()
    r = recaller(tmp_path, minilm, rows)
    asked = RecallOptions(record_access=False)
    berlin = "Lee: I live in Berlin with my partner."
    now = [m.content for m in r.recall("Where does Lee live in Germany?", asked).memories]
    assert berlin not in now  # about the present: the outdated words stay out
    then = [m.content for m in r.recall("When did Lee live in Berlin?", asked).memories]
    assert berlin in then  # about time: what was said before the move is history
    # The superseded fact itself is still not recalled: only the words said.
    assert "Lee lives in Berlin." not in then


@pytest.mark.parametrize(
    ("query", "speakers", "read_as"),
    [
        ("What does John do on weekends?", ["Jon", "Gina"], "What does Jon do on weekends?"),
        ("Where did Sarah's sister move?", ["Sara"], "Where did Sara's sister move?"),
        ("Has Micheal called?", ["Michael", "michael"], "Has Michael called?"),
        # Letter for letter is another name as often as a typo: left as asked.
        ("What did Mary say?", ["Mark"], "What did Mary say?"),
        # Two speakers one slip away: no way to tell which was meant.
        ("Where is Dan?", ["Dana", "Dani"], "Where is Dan?"),
        # A name someone has is theirs, even with another one slip away.
        ("Where is Jon?", ["Jon", "John"], "Where is Jon?"),
        ("What did Gina say?", ["Jean"], "What did Gina say?"),
    ],
)
def test_a_name_one_slip_from_a_speaker_is_read_as_theirs(
    query: str, speakers: list[str], read_as: str
) -> None:
    assert respelled(query, speakers) == read_as


def test_a_misspelled_name_is_not_an_unknown_one(tmp_path: Path, minilm: LocalMiniLM) -> None:
    rows = [
        replace(said("t1", "Jon: I lost my banking job, so I am opening a dance studio."),
                speaker="Jon"),
        replace(said("t2", "Gina: My store sells clothes online now."), speaker="Gina"),
        replace(said("t3", "Jon: The studio floor arrives on Monday."), speaker="Jon"),
    ]  # fmt: skip
    r = recaller(tmp_path, minilm, rows)
    asked = RecallOptions(record_access=False)
    found = r.recall("What is John opening?", asked)
    assert found.query == "What is John opening?"  # the answer names the question as asked
    assert rows[0].content in [m.content for m in found.memories]
    # A name nobody in the folder has, nor is one slip from, still meets the stricter floor.
    assert r.recall("What is Priyanka opening?", asked).memories == ()


def test_the_speakers_recall_reads_names_against_follow_the_index(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    r = recaller(tmp_path, minilm, [replace(said("t1", "Jon: hi"), speaker="Jon")])
    assert r.index.speakers() == ("Jon",)
    r.index.upsert([replace(said("t2", "Gina: hello"), speaker="Gina")])
    assert r.index.speakers() == ("Gina", "Jon")  # rows written since are read too
