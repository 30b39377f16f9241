from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.core.models import Role, Turn
from engram_md.extract.speakers import SpeakerBook, introduced_name, self_introduction

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(
    content: str,
    *,
    role: Role = Role.USER,
    session: str = "s1",
    speaker: str | None = None,
    id: str = "t1",
) -> Turn:
    return Turn(id=id, session=session, role=role, content=content, timestamp=T0, speaker=speaker)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Hi! I'm Dana, I work at Acme Robotics.", "Dana"),
        ("i'm Dana and I love hiking", "Dana"),
        ("I am Priya.", "Priya"),
        ("my name is dana", "Dana"),
        ("My name's Jean-Luc, hello", "Jean-Luc"),
        ("Please call me Sam.", "Sam"),
        ("Hi, this is Ravi.", "Ravi"),
        ("This is Ravi here", "Ravi"),
        ("I’m Dana, with a curly apostrophe", "Dana"),
    ],
)
def test_introduced_name(text: str, name: str) -> None:
    assert introduced_name(text) == name


@pytest.mark.parametrize(
    "text",
    [
        "I'm Happy to help",
        "I'm Going home now",
        "I'm happy",
        "I'm Not sure",
        "I'm Sorry!",
        "I'm Dana's friend",  # a possessive is not a self-introduction
        "This is Python, which is fast",  # "this is" needs a greeting or "here"
        "I'm Monday-tired",
        "I'm Vegan.",
        "call me later",
        "call me crazy, but I like tabs",
        "",
    ],
)
def test_not_an_introduction(text: str) -> None:
    assert introduced_name(text) is None


def test_self_introduction_splits_the_clause_from_the_rest() -> None:
    intro = self_introduction("Hi! I'm Dana, I work at Acme Robotics as a backend lead.")
    assert intro is not None
    assert intro.name == "Dana"
    assert intro.rest == "I work at Acme Robotics as a backend lead."
    bare = self_introduction("I'm Dana.")
    assert bare is not None and bare.rest == ""
    assert self_introduction("I work at Acme.") is None


def test_learns_the_users_name_per_session() -> None:
    book = SpeakerBook()
    assert book.observe(turn("Hi! I'm Dana, I work at Acme."))
    later = turn("ok thanks", id="t9")
    assert book.name_for(later) == "Dana"
    assert book.name_for(turn("hi", role=Role.ASSISTANT)) == "the assistant"
    # Learned again: nothing new to save.
    assert not book.observe(turn("I'm Dana.", id="t10"))


def test_a_session_without_a_name_takes_the_one_earlier_sessions_agree_on() -> None:
    book = SpeakerBook()
    assert book.name_for(turn("hello", session="s2")) == "the user"
    book.observe(turn("Hi! I'm Lee.", session="s1"))
    book.observe(turn("this is Lee here", session="s3"))
    assert book.name_for(turn("hello", session="s2")) == "Lee"
    # Only the user: the assistant of an unnamed session stays the assistant.
    assert book.name_for(turn("hi", session="s2", role=Role.ASSISTANT)) == "the assistant"
    # The agreed name survives a round trip through the state file.
    loaded = SpeakerBook.from_dict(json.loads(json.dumps(book.to_dict())))
    assert loaded.name_for(turn("hello", session="s9")) == "Lee"


def test_sessions_that_named_different_people_name_nobody_else() -> None:
    book = SpeakerBook()
    book.observe(turn("I'm Lee.", session="s1"))
    book.observe(turn("hey", session="s2", speaker="Ruth"))  # e.g. an envelope's sender
    assert book.name_for(turn("hello", session="s3")) == "the user"
    # Each named session keeps its own person.
    assert book.name_for(turn("x", session="s1")) == "Lee"
    assert book.name_for(turn("x", session="s2")) == "Ruth"
    # A session's own correction replaces its name; the sessions then agree again.
    book.observe(turn("Sorry, my name is Lee actually.", session="s2", id="t2"))
    assert book.name_for(turn("hello", session="s3")) == "Lee"


def test_explicit_speaker_always_wins() -> None:
    book = SpeakerBook()
    book.observe(turn("I'm Dana."))
    named = turn("I'm Dana.", speaker="Caroline")
    assert book.name_for(named) == "Caroline"
    book.observe(named)
    # The explicit name also becomes what the session's user role is known as.
    assert book.name_for(turn("anything")) == "Caroline"


def test_common_words_are_not_learned() -> None:
    book = SpeakerBook()
    for text in ("I'm Happy with that", "I'm Going to try", "I'm Sorry, I'm Not sure"):
        book.observe(turn(text))
    assert book.name_for(turn("x")) == "the user"


def test_assistant_and_system_text_teach_nothing() -> None:
    book = SpeakerBook()
    book.observe(turn("Hi, I'm Claude.", role=Role.ASSISTANT))
    book.observe(turn("My name is Root.", role=Role.SYSTEM))
    assert book.name_for(turn("x", role=Role.ASSISTANT)) == "the assistant"
    assert book.name_for(turn("x")) == "the user"


def test_later_introduction_replaces_earlier() -> None:
    book = SpeakerBook()
    book.observe(turn("I'm Dana."))
    book.observe(turn("Sorry, my name is Dara actually."))
    assert book.name_for(turn("x")) == "Dara"


def test_json_roundtrip_through_a_file(tmp_path: Path) -> None:
    book = SpeakerBook()
    book.observe(turn("I'm Dana.", session="a"))
    book.observe(turn("call me Sam", session="b"))
    book.observe(turn("hey", session="c", role=Role.ASSISTANT, speaker="Melanie"))
    path = tmp_path / "speakers.json"
    path.write_text(json.dumps(book.to_dict(), sort_keys=True), encoding="utf-8")
    loaded = SpeakerBook.from_dict(json.loads(path.read_text(encoding="utf-8")))
    assert loaded.to_dict() == book.to_dict()
    assert loaded.name_for(turn("x", session="a")) == "Dana"
    assert loaded.name_for(turn("x", session="b")) == "Sam"
    assert loaded.name_for(turn("x", session="c", role=Role.ASSISTANT)) == "Melanie"


def test_to_dict_is_deterministic() -> None:
    a, b = SpeakerBook(), SpeakerBook()
    a.observe(turn("I'm Dana.", session="z"))
    a.observe(turn("I'm Sam.", session="a"))
    b.observe(turn("I'm Sam.", session="a"))
    b.observe(turn("I'm Dana.", session="z"))
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())


def test_from_dict_tolerates_junk() -> None:
    book = SpeakerBook.from_dict(
        {"sessions": {"s1": {"user": "Dana", "robot": "X", "assistant": 3}, "s2": "nope"}}
    )
    assert book.name_for(turn("x")) == "Dana"
    assert book.name_for(turn("x", role=Role.ASSISTANT)) == "the assistant"
    assert SpeakerBook.from_dict({}).to_dict() == {"version": 1, "sessions": {}}
    assert SpeakerBook.from_dict({"sessions": []}).to_dict()["sessions"] == {}
