"""What recall reads from a query (recall/query.py): whether it asks about time, and what a
time question changes in recall: the words of outdated statements come back for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram_md.recall.query import query_features
from engram_md.recall.wire import RecallOptions
from engram_md.text.embeddings import LocalMiniLM

from .test_recall import moved_to_munich, recaller


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
