"""What was said: the person's own turns in ``memory/said/``, their sentences in the index.

Real files, a real LanceDB index and the real local model; the end-to-end tests ingest a
transcript through the command and forget a fact drawn from it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram_md.app import open_writer
from engram_md.cli import app
from engram_md.core.config import Config, load_config
from engram_md.core.errors import MemoryFileError
from engram_md.core.models import Fact, Role, Turn
from engram_md.core.paths import MemoryLayout
from engram_md.index.saidindex import (
    SAID_KIND,
    SaidSync,
    index_said_files,
    said_row_id,
    said_rows,
    sync_said,
)
from engram_md.index.table import IndexRow, MemoryIndex
from engram_md.maintain.forget import forget
from engram_md.store import said as said_mod
from engram_md.store.factfile import read_fact
from engram_md.store.said import SaidLog, SaidTurn, parse_file, read_said, said_files
from engram_md.text.embeddings import LocalMiniLM
from engram_md.text.hashing import short_hash

from .conftest import Cli
from .rows import index_row

T0 = datetime(2026, 3, 4, 9, 1, 12, tzinfo=UTC)
DAY = "2026-03-04"
HEADER = f"---\nsession: conv-abc\ndate: {DAY}\n---\n\n"


def turn(
    turn_id: str,
    text: str,
    *,
    session: str = "conv-abc",
    role: Role = Role.USER,
    seconds: int = 0,
) -> Turn:
    return Turn(turn_id, session, role, text, T0 + timedelta(seconds=seconds))


def said_path(layout: MemoryLayout, session: str, part: int = 1, day: str = DAY) -> Path:
    """Where the documented naming puts a session's said file: slug, then a hash of the name."""
    stem = f"{session.replace(' ', '-')}-{short_hash(session, 6)}"
    name = f"{stem}.md" if part == 1 else f"{stem}-{part}.md"
    return layout.memory_dir / "said" / day / name


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text("utf-8").splitlines() if line.startswith("- ")]


@pytest.fixture
def layout(cfg: Config) -> MemoryLayout:
    cfg.layout.ensure()
    return cfg.layout


@pytest.fixture
def index(layout: MemoryLayout, minilm: LocalMiniLM) -> MemoryIndex:
    return MemoryIndex.open(layout.index_dir, minilm)


# ---------------------------------------------------------------- the files


def test_record_writes_one_line_per_person_turn(layout: MemoryLayout) -> None:
    log = SaidLog(layout)
    turns = [
        turn("msg-17", "We moved to Munich last month.\nThe flat is small."),
        turn("msg-18", "Congratulations on the move!", role=Role.ASSISTANT, seconds=5),
        turn("msg-19", "  \n ", seconds=9),
        turn("msg-20", "It  has a balcony though.", seconds=61),
    ]

    changed = log.record(turns, {"msg-17": "Lee", "msg-18": "the assistant", "msg-20": "Lee"})

    path = said_path(layout, "conv-abc")
    assert changed == [path]
    assert path.read_text("utf-8") == HEADER + (
        "- 09:01:12 · Lee · `msg-17` — We moved to Munich last month. The flat is small.\n"
        "- 09:02:13 · Lee · `msg-20` — It has a balcony though.\n"
    )
    later = T0 + timedelta(seconds=61)
    assert read_said(path) == [
        SaidTurn(
            "msg-17", "conv-abc", "Lee", T0, "We moved to Munich last month. The flat is small."
        ),
        SaidTurn("msg-20", "conv-abc", "Lee", later, "It has a balcony though."),
    ]


def test_a_line_separator_of_any_kind_is_folded(layout: MemoryLayout) -> None:
    """Every character that splits a line when the file is read is folded into a space, so
    a turn stays one line: one row per sentence, and forget takes all of it out."""
    text = "Part one\x1cpart two\x1dthree\x1efour\u2028five\x85six\rseven."
    [path] = SaidLog(layout).record([turn("t1", text)], {})
    [said] = read_said(path)
    assert said.text == "Part one part two three four five six seven."
    assert len(lines_of(path)) == 1
    SaidLog(layout).remove_turns("conv-abc", ["t1"])
    assert path.read_text("utf-8") == HEADER


def test_replaying_the_same_turns_changes_nothing(layout: MemoryLayout) -> None:
    log = SaidLog(layout)
    turns = [
        turn("t1", "I started learning the cello."),
        turn("t2", "Lessons are on Fridays.", seconds=30),
    ]
    [path] = log.record(turns, {})
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns

    assert log.record(turns, {}) == []
    assert log.record(turns[1:], {"t2": "someone else"}) == []

    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    # A batch that repeats a turn and adds one writes only the new one.
    assert log.record([*turns, turn("t3", "My teacher is Ana.", seconds=60)], {}) == [path]
    assert [t.id for t in read_said(path)] == ["t1", "t2", "t3"]


def test_sessions_whose_names_slug_alike_get_separate_files(layout: MemoryLayout) -> None:
    log = SaidLog(layout)
    log.record([turn("t1", "I like tea.", session="a b")], {})
    log.record([turn("t1", "I like coffee.", session="a-b")], {})

    spaced, hyphened = said_path(layout, "a b"), said_path(layout, "a-b")
    assert spaced != hyphened
    assert [t.text for t in read_said(spaced)] == ["I like tea."]
    assert [t.text for t in read_said(hyphened)] == ["I like coffee."]
    assert [t.session for t in read_said(spaced)] == ["a b"]
    # A session whose slug begins with another's file name is not taken for one of its parts.
    longer = f"a b {short_hash('a b', 6)} 2"
    log.record([turn("t2", "I like juice.", session=longer)], {})
    assert log.record([turn("t2", "I like milk.", session="a b")], {}) == [spaced]
    assert [t.text for t in read_said(spaced)] == ["I like tea.", "I like milk."]
    assert log.remove_turns(longer, ["t2"]) == [said_path(layout, longer)]
    assert [t.id for t in read_said(spaced)] == ["t1", "t2"]


def test_a_full_part_continues_in_the_next(
    layout: MemoryLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(said_mod, "PART_BYTES", 200)
    log = SaidLog(layout)
    first = [turn(f"t{i}", f"Sentence number {i} of the first batch.", seconds=i) for i in range(4)]
    [one] = log.record(first, {})
    assert one == said_path(layout, "conv-abc") and len(one.read_bytes()) > 200

    [two] = log.record([turn("t9", "The next batch goes on.", seconds=20)], {})

    assert two == said_path(layout, "conv-abc", part=2)
    assert two.read_text("utf-8").startswith(HEADER)
    assert [t.id for t in read_said(two)] == ["t9"]
    # A replay of either batch sees the turns of every part.
    before = {p: p.read_bytes() for p in (one, two)}
    assert log.record([*first, turn("t9", "The next batch goes on.", seconds=20)], {}) == []
    assert {p: p.read_bytes() for p in (one, two)} == before
    assert len(list(said_files(layout))) == 2


def test_a_hand_edited_line_that_no_longer_parses_is_skipped(
    layout: MemoryLayout, index: MemoryIndex
) -> None:
    [path] = SaidLog(layout).record(
        [turn("t1", "We adopted a dog."), turn("t2", "She is called Pixel.", seconds=3)], {}
    )
    text = path.read_text("utf-8")
    text = text.replace("· `t1` —", "`t1` —")  # a separator lost by hand
    text += "A note of my own, not a turn.\n"
    text += "- 25:61:00 · Lee · `t3` — An hour that does not exist.\n"
    path.write_text(text, encoding="utf-8")

    assert [t.id for t in read_said(path)] == ["t2"]
    assert parse_file("- 09:00:00 · Lee · `t1` — no header, no day") == []
    done = sync_said(index, layout)
    assert done.unreadable == 0 and done.files == 1
    assert [r.content for r in index.rows_of_kind(SAID_KIND)] == ["user: She is called Pixel."]


def test_a_part_that_is_not_utf8_is_reported_and_the_next_part_used(
    layout: MemoryLayout, index: MemoryIndex, caplog: pytest.LogCaptureFixture
) -> None:
    log = SaidLog(layout)
    [one] = log.record([turn("t1", "I play chess on Sundays.")], {})
    broken = one.read_bytes() + b"- 09:05:00 \xff\xfe broken\n"
    one.write_bytes(broken)

    with pytest.raises(MemoryFileError, match="not UTF-8"):
        read_said(one)
    with caplog.at_level(logging.WARNING):
        [two] = log.record([turn("t2", "Mostly online.", seconds=60)], {})

    assert two == said_path(layout, "conv-abc", part=2)
    assert one.read_bytes() == broken  # left for a person to see
    assert [t.id for t in read_said(two)] == ["t2"]
    assert any(one.name in record.getMessage() for record in caplog.records)
    done = sync_said(index, layout)
    assert done.unreadable == 1 and done.files == 1
    assert [r.content for r in index.rows_of_kind(SAID_KIND)] == ["user: Mostly online."]


def test_remove_turns_takes_out_only_that_session_s_lines(layout: MemoryLayout) -> None:
    """Turn ids are unique within a session only: ``t1`` of another session stays."""
    log = SaidLog(layout)
    log.record(
        [turn("t1", "My sister lives in Oslo."), turn("t2", "I visit her in May.", seconds=9)], {}
    )
    log.record([turn("t1", "I like tea.", session="a b")], {})
    log.record([turn("t1", "I like coffee.", session="a-b")], {})
    later = turn("t3", "Back from Oslo.", seconds=86400)
    [next_day] = log.record([later], {})
    others = {p: p.read_bytes() for p in (said_path(layout, "a b"), said_path(layout, "a-b"))}
    here = said_path(layout, "conv-abc")

    changed = log.remove_turns("conv-abc", ["t1", "t3", "t404"])

    assert sorted(changed) == sorted([here, next_day])
    assert [t.id for t in read_said(here)] == ["t2"]
    assert read_said(next_day) == [] and next_day.read_text("utf-8").startswith("---\n")
    assert {p: p.read_bytes() for p in others} == others
    assert log.remove_turns("conv-abc", ["t1"]) == []  # already gone: nothing written
    assert log.remove_turns("conv-abc", []) == []


# ---------------------------------------------------------------- the index


def test_said_rows_are_one_per_sentence_with_the_turn_s_id_and_time(layout: MemoryLayout) -> None:
    text = "We moved to Munich last month. The flat is small! We moved to Munich last month."
    [path] = SaidLog(layout).record([turn("msg-17", text)], {"msg-17": "Lee"})

    rows = said_rows(layout, path, read_said(path), 123)

    assert [r.content for r in rows] == [
        "Lee: We moved to Munich last month.",
        "Lee: The flat is small!",
    ]
    assert [r.id for r in rows] == [said_row_id("conv-abc", "msg-17", n) for n in (0, 1)]
    for row in rows:
        assert row.kind == SAID_KIND and row.path == f"said/{DAY}/{path.name}"
        assert row.source_turn_ids == ("msg-17",) and row.session == "conv-abc"
        assert row.created == T0 and row.speaker == "Lee" and row.file_mtime_ns == 123
    # Derivable from the turn, and apart per session.
    assert said_row_id("conv-abc", "msg-17", 0) != said_row_id("other", "msg-17", 0)


def _others(index: MemoryIndex) -> dict[str, tuple[str, str, int]]:
    return {
        i: (r.kind, r.content, r.file_mtime_ns)
        for i, r in index.get(list(index.manifest())).items()
        if r.kind != SAID_KIND
    }


def _said(index: MemoryIndex) -> dict[str, str]:
    return {r.id: r.content for r in index.rows_of_kind(SAID_KIND)}


def test_sync_said_follows_new_edited_and_deleted_files(
    layout: MemoryLayout, index: MemoryIndex
) -> None:
    index.upsert(
        [
            index_row("fact-1", "Lee moved to Munich."),
            index_row("box-1", "A box about moving.", kind="box", path="boxes/2026-03/box-1.md"),
        ]
    )
    before = _others(index)
    log = SaidLog(layout)
    [munich] = log.record([turn("t1", "We moved to Munich. It rains a lot.")], {"t1": "Lee"})
    [chess] = log.record([turn("t1", "I play chess.", session="s2")], {"t1": "Ana"})

    assert sync_said(index, layout) == SaidSync(files=2, rows=3)
    assert _said(index) == {
        said_row_id("conv-abc", "t1", 0): "Lee: We moved to Munich.",
        said_row_id("conv-abc", "t1", 1): "Lee: It rains a lot.",
        said_row_id("s2", "t1", 0): "Ana: I play chess.",
    }
    assert sync_said(index, layout) == SaidSync()  # nothing changed: nothing read

    # Edited by hand: the file's rows are replaced, the other file's stay.
    text = munich.read_text("utf-8").replace("It rains a lot.", "The summers are hot.")
    munich.write_text(text, encoding="utf-8")
    os.utime(munich, ns=(1, 1))  # an mtime no row holds, however coarse the clock
    # Only the sentence that changed is written again.
    assert sync_said(index, layout) == SaidSync(files=1, rows=1, removed=0)
    assert _said(index)[said_row_id("conv-abc", "t1", 1)] == "Lee: The summers are hot."
    munich.write_text(text.replace(" The summers are hot.", ""), encoding="utf-8")
    os.utime(munich, ns=(2, 2))
    assert sync_said(index, layout) == SaidSync(files=1, rows=1, removed=1)
    assert said_row_id("conv-abc", "t1", 1) not in _said(index)

    # Deleted by hand: its rows go.
    chess.unlink()
    assert sync_said(index, layout) == SaidSync(removed=1)
    assert _said(index) == {said_row_id("conv-abc", "t1", 0): "Lee: We moved to Munich."}
    assert _others(index) == before


# ---------------------------------------------------------------- end to end


SECRET_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_PASSWORD = "hunter2hunter"
TRANSCRIPT = [
    ("t1", "user", "Hi! I'm Dana, I work at Acme Robotics as a backend lead."),
    ("t2", "assistant", "Nice to meet you, Dana. What are you working on today?"),
    ("t3", "user", "Please always use uv instead of pip in the commands you give me."),
    ("t4", "assistant", "Understood: uv from now on."),
    ("t5", "user", f"The staging box uses key {SECRET_KEY} and my password is {SECRET_PASSWORD}."),
    ("t6", "user", "We decided to move the telemetry service to PostgreSQL next sprint."),
]
SESSION = "demo-1"


@pytest.fixture(scope="module")
def ingested_source(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """A folder the command wrote from a small transcript, offline. Built once: each test
    works on a copy (:func:`ingested`)."""
    cli = Cli(tmp_path_factory.mktemp("said"))
    rows = [
        {"role": role, "content": text, "session": SESSION, "id": turn_id,
         "timestamp": f"2026-03-02T09:0{i}:00Z"}
        for i, (turn_id, role, text) in enumerate(TRANSCRIPT)
    ]  # fmt: skip
    transcript = cli.root / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = cli("ingest", str(transcript))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    transcript.unlink()
    return cli


@pytest.fixture
def ingested(cli: Cli, ingested_source: Cli) -> Cli:
    for name in ("memory", "state"):
        shutil.copytree(ingested_source.root / name, cli.root / name, symlinks=True)
    return cli


def _layout(cli: Cli) -> MemoryLayout:
    return MemoryLayout(cli.memory, cli.state)


def _said_rows_of(index: MemoryIndex, turn_id: str) -> list[IndexRow]:
    return [
        r
        for r in index.rows_of_kind(SAID_KIND)
        if r.session == SESSION and turn_id in r.source_turn_ids
    ]


def _fact_from(cli: Cli, turn_id: str) -> Fact:
    facts = [read_fact(p) for p in sorted((cli.memory / "facts").rglob("*.md"))]
    return next(f for f in facts if f.session == SESSION and turn_id in f.source_turn_ids)


def test_ingest_keeps_what_the_person_said_redacted_and_indexed(
    ingested: Cli, minilm: LocalMiniLM
) -> None:
    [path] = said_files(_layout(ingested))
    assert path.parent.name == "2026-03-02" and path.name.startswith(f"{SESSION}-")
    text = path.read_text("utf-8")
    assert [t.id for t in read_said(path)] == ["t1", "t3", "t5", "t6"]
    assert "Nice to meet you" not in text and "uv from now on" not in text
    # Secrets said in prose were redacted before anything was written.
    assert SECRET_KEY not in text and SECRET_PASSWORD not in text
    assert "[REDACTED:aws_access_key]" in text and "[REDACTED:password]" in text

    index = MemoryIndex.open(ingested.state / "index", minilm)
    said = index.rows_of_kind(SAID_KIND)
    assert {t for r in said for t in r.source_turn_ids} == {"t1", "t3", "t5", "t6"}
    assert all(r.path == _layout(ingested).relative(path) for r in said)
    assert all(SECRET_KEY not in r.content and SECRET_PASSWORD not in r.content for r in said)
    [uv] = _said_rows_of(index, "t3")
    assert uv.id == said_row_id(SESSION, "t3", 0)
    assert uv.content.endswith(": Please always use uv instead of pip in the commands you give me.")


def test_forget_takes_the_fact_s_turn_out_of_the_said_file_and_the_index(
    ingested: Cli, minilm: LocalMiniLM
) -> None:
    fact = _fact_from(ingested, "t3")
    [path] = said_files(_layout(ingested))
    assert any("`t3`" in line for line in lines_of(path))

    args = ["--memory-dir", str(ingested.memory), "--state-dir", str(ingested.state)]
    done = CliRunner().invoke(app, [*args, "forget", fact.id])

    assert done.exit_code == 0, done.output
    assert "uv instead of pip" not in path.read_text("utf-8")
    assert [t.id for t in read_said(path)] == [
        t for t in ("t1", "t5", "t6") if t not in fact.source_turn_ids
    ]
    index = MemoryIndex.open(ingested.state / "index", minilm)
    assert _said_rows_of(index, "t3") == []
    assert said_row_id(SESSION, "t3", 0) not in index.get([said_row_id(SESSION, "t3", 0)])
    assert _said_rows_of(index, "t6")  # the other turns stay searchable


def test_a_forget_stopped_after_the_said_file_still_drops_the_rows(
    ingested: Cli, minilm: LocalMiniLM
) -> None:
    """The file already lost the line (a forget killed before its index step); running the
    forget again finds nothing to take out of the file, and still drops the rows."""
    layout = _layout(ingested)
    fact = _fact_from(ingested, "t6")
    SaidLog(layout).remove_turns(SESSION, fact.source_turn_ids)
    cfg = load_config(
        None, env={}, overrides={"memory_dir": layout.memory_dir, "state_dir": layout.state_dir}
    )
    with open_writer(cfg, embedder=minilm, reconcile=False) as parts:
        assert parts.index is not None and _said_rows_of(parts.index, "t6")

        report = forget(parts, [fact.id])

        assert [f.id for f in report.forgotten] == [fact.id]
        assert _said_rows_of(parts.index, "t6") == []
        assert _said_rows_of(parts.index, "t1")


def test_doctor_secrets_finds_and_redacts_a_secret_typed_into_a_said_file(
    ingested: Cli, minilm: LocalMiniLM
) -> None:
    layout = _layout(ingested)
    [path] = said_files(layout)
    rel = layout.relative(path)
    typed = f"- 09:09:00 · Dana · `t9` — the deploy key is {SECRET_KEY}\n"
    path.write_text(path.read_text("utf-8") + typed, encoding="utf-8")
    args = ["--memory-dir", str(ingested.memory), "--state-dir", str(ingested.state)]
    runner = CliRunner()
    assert runner.invoke(app, [*args, "reindex"]).exit_code == 0

    found = runner.invoke(app, [*args, "doctor", "--secrets", "--json"])

    assert found.exit_code == 1, found.output
    places = {(leak["place"], leak["subject"]) for leak in json.loads(found.output)["found"]}
    assert {("memory", rel), ("index", rel)} <= places
    repaired = runner.invoke(app, [*args, "doctor", "--secrets", "--repair"])
    assert repaired.exit_code == 0, repaired.output
    text = path.read_text("utf-8")
    assert SECRET_KEY not in text and "the deploy key is [REDACTED:aws_access_key]" in text
    index = MemoryIndex.open(ingested.state / "index", minilm)
    [row] = _said_rows_of(index, "t9")
    assert row.content.endswith("the deploy key is [REDACTED:aws_access_key]")


def test_a_batch_writes_only_the_sentences_it_added(
    layout: MemoryLayout, index: MemoryIndex
) -> None:
    log = SaidLog(layout)
    [path] = log.record([turn("t1", "We moved to Munich. It rains a lot.")], {"t1": "Lee"})
    assert index_said_files(index, layout, [path]) == SaidSync(files=1, rows=2)
    [same] = log.record([turn("t2", "The flat is small.")], {"t2": "Lee"})
    assert same == path
    # The day's file grew by one turn: one row written, the two before left alone (a rewrite
    # of every row at every batch left a dead copy of each in the index).
    assert index_said_files(index, layout, [path]) == SaidSync(files=1, rows=1)
    assert sorted(_said(index).values()) == [
        "Lee: It rains a lot.",
        "Lee: The flat is small.",
        "Lee: We moved to Munich.",
    ]
    assert sync_said(index, layout) == SaidSync()  # the newest row holds the file's mtime
