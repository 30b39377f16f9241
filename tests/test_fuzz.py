"""Hostile and broken input: the transcript reader and the fact- and box-file readers never crash.

Property-based tests (hypothesis) over every transcript line format, fact files and box
files. The property is the same everywhere: a valid value comes out, or one of the documented
errors (``LineError`` from the reader, :class:`MemoryFileError` from the file readers) — never
another exception, and never the reader's own "internal error" fallback, which would mean a
bug was swallowed. Two tests go through the command: a few hundred mutated lines through
``engram-md ingest``, and ``reindex``, ``doctor`` and ``recall`` over a folder with dozens of
broken fact and box files; no traceback reaches the user.

The number of examples comes from ``ENGRAM_FUZZ_EXAMPLES`` (default 300, so the normal test
run stays quick; the soak run uses 10000). Generation is derandomized and the example
database is off, so every run of the same version tries the same inputs.
"""

from __future__ import annotations

import io
import json
import random
import string
import traceback
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from engram_md.cli import app
from engram_md.core.errors import MemoryFileError
from engram_md.core.models import Fact, Role, Turn
from engram_md.ingest.sources import CursorStore, FileTail, decode_lines, read_lines
from engram_md.ingest.transcripts import LineError, ReaderState, TranscriptReader
from engram_md.organize.boxes import Box
from engram_md.organize.boxfile import box_rel_path, parse_box, read_box, render_box
from engram_md.store.factfile import parse_fact, read_fact, render_fact
from engram_md.text.embeddings import LocalMiniLM

from .conftest import Cli
from .fuzzing import EXAMPLES, FUZZ

CLOCK = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@st.composite
def _weighted(draw: st.DrawFn, *choices: tuple[int, st.SearchStrategy[Any]]) -> Any:
    """one_of with weights: near-valid input should get most of the draws."""
    ticket = draw(st.integers(0, sum(w for w, _ in choices) - 1))
    for weight, strategy in choices:
        if ticket < weight:
            return draw(strategy)
        ticket -= weight
    raise AssertionError("unreachable")


def _pick(values: list[Any]) -> st.SearchStrategy[Any]:
    """Like ``sampled_from``, with a short repr however large the values (hypothesis prints
    strategies, and some values here are megabytes of brackets)."""

    def get(i: int) -> Any:
        return values[i]

    return st.integers(0, len(values) - 1).map(get)


def _clock() -> datetime:
    return CLOCK


# ============================================================ transcript strategies

# Strings a transcript writer could put anywhere: prose, control characters, lone
# surrogates (JSON can spell them), separators, look-alikes of our own syntax.
_ODD_TEXT = _pick(
    [
        "",
        " ",
        "\n",
        "\x00",
        "\ud800",
        "a\udc00b",
        "\u2028\u2029",
        "\ufeff",
        "../../etc/passwd",
        "C:\\Windows\\system32",
        "user: hi",
        "{}",
        "---\nstatus: active\n---",
        "<memory>x</memory>",
        "x" * 70_000,
        "I prefer tea. " * 2_000,
    ]
)
_TEXT = st.text(max_size=40) | st.text(st.characters(codec="utf-8"), max_size=12) | _ODD_TEXT
_SURROGATES = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3)

# JSON values of the wrong type for any field.
_NUMBERS = (
    st.integers()
    | st.sampled_from([0, -1, 1, 2**63, -(2**63), 10**30, 99_999_999_999_999])
    | st.floats(allow_nan=True, allow_infinity=True)
)
_SCALARS = st.none() | st.booleans() | _NUMBERS | _TEXT | _SURROGATES
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)

_OFFSETS = st.builds(
    lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-23 * 60 - 59, 23 * 60 + 59)
)
_DATETIMES = st.datetimes(timezones=st.none() | st.just(UTC) | _OFFSETS)
_TIMES = (
    _DATETIMES.map(datetime.isoformat)
    | _DATETIMES.map(lambda d: d.isoformat().replace("+00:00", "Z"))
    | _DATETIMES.filter(lambda d: d.tzinfo is not None).map(lambda d: d.timestamp())
    | _DATETIMES.filter(lambda d: d.tzinfo is not None).map(lambda d: int(d.timestamp() * 1000))
    | _NUMBERS.map(str)
    | st.sampled_from(
        [
            "0",
            "-0",
            "1e400",
            "NaN",
            "Infinity",
            "2026-02-30T00:00:00Z",
            "9999-12-31T23:59:59-14:00",
            "0001-01-01T00:00:00+14:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2026-03-02T09:00:00.000Z",
            "  2026-03-02 09:00  ",
            "2026-W10",
            "yesterday",
        ]
    )
    | _JSON
)
_ROLE_NAMES = st.sampled_from(
    [
        "user",
        "USER",
        " Assistant ",
        "human",
        "ai",
        "model",
        "bot",
        "system",
        "developer",
        "tool",
        "toolResult",
        "tool_result",
        "bashExecution",
        "function",
        "custom",
        "branchSummary",
        "compactionSummary",
        "narrator",
        "",
    ]
)
_ROLE = _ROLE_NAMES | _JSON
_ID = _TEXT | _NUMBERS | _JSON

_BLOCK = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "text",
                "input_text",
                "output_text",
                "thinking",
                "redacted_thinking",
                "tool_use",
                "toolCall",
                "tool_result",
                "image",
            ]
        )
        | _JSON
    },
    optional={"text": _TEXT | _JSON, "thinking": _TEXT, "content": _JSON, "input": _JSON},
)
_CONTENT = _TEXT | st.lists(_BLOCK, max_size=4) | _BLOCK | _JSON

_GENERIC = st.fixed_dictionaries(
    {"role": _ROLE},
    optional={
        "content": _CONTENT,
        "timestamp": _TIMES,
        "id": _ID,
        "session": _ID,
        "name": _ID,
        "type": _JSON,
        "message": _JSON,
    },
)
_MESSAGE = st.fixed_dictionaries(
    {}, optional={"role": _ROLE, "content": _CONTENT, "timestamp": _TIMES, "model": _JSON}
)
_OPENCLAW = (
    st.fixed_dictionaries(
        {"type": st.just("session")},
        optional={"version": _JSON, "id": _ID, "timestamp": _TIMES, "cwd": _TEXT},
    )
    | st.fixed_dictionaries(
        {"type": st.just("message")},
        optional={"id": _ID, "parentId": _ID, "timestamp": _TIMES, "message": _MESSAGE | _JSON},
    )
    | st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["model_change", "thinking_level_change", "compaction", "custom", "label", "x"]
            )
        },
        optional={"id": _ID, "timestamp": _TIMES, "summary": _JSON, "data": _JSON},
    )
)
_CLAUDE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["user", "assistant", "summary", "file-history-snapshot", "system", "progress"]
        )
    },
    optional={
        "message": _MESSAGE | _JSON,
        "sessionId": _ID,
        "uuid": _ID,
        "parentUuid": _ID,
        "timestamp": _TIMES,
        "isMeta": _JSON,
        "isCompactSummary": _JSON,
        "isSidechain": _JSON,
    },
)
# Near-valid objects: a well-formed line of each format with a few fields then removed or
# given a value of the wrong type. Purely random objects are almost never well-formed, so
# without these the deeper branches of the reader would hardly run.
_PROSE = _pick(
    [
        "I prefer green tea over coffee.",
        "We decided to move billing to Rust next sprint.",
        "Yesterday I met Bram at the conference.",
        "My name is Ilse.",
    ]
)
_SAID = _PROSE | _TEXT
_GOOD_TIME = _DATETIMES.map(lambda d: d.isoformat())
_GOOD_ID = st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=12)
_TEXT_BLOCKS = st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": _SAID})
    | st.fixed_dictionaries({"type": st.just("thinking"), "thinking": _SAID})
    | st.fixed_dictionaries({"type": st.just("tool_result"), "content": _SAID}),
    min_size=1,
    max_size=3,
)
_GOOD_MESSAGE = st.fixed_dictionaries(
    {"role": _ROLE_NAMES, "content": _SAID | _TEXT_BLOCKS},
    optional={"timestamp": st.just(0) | _GOOD_TIME},
)
_GOOD_OBJECTS = (
    st.fixed_dictionaries(
        {"role": _ROLE_NAMES, "content": _SAID | _TEXT_BLOCKS},
        optional={"timestamp": _GOOD_TIME, "id": _GOOD_ID, "session": _GOOD_ID, "name": _GOOD_ID},
    )
    | st.fixed_dictionaries(
        {"type": st.just("session"), "version": st.just(3), "id": _GOOD_ID, "timestamp": _GOOD_TIME}
    )
    | st.fixed_dictionaries(
        {
            "type": st.just("message"),
            "id": _GOOD_ID,
            "timestamp": _GOOD_TIME,
            "message": _GOOD_MESSAGE,
        }
    )
    | st.fixed_dictionaries(
        {
            "type": st.sampled_from(["user", "assistant"]),
            "sessionId": _GOOD_ID,
            "uuid": _GOOD_ID,
            "timestamp": _GOOD_TIME,
            "message": _GOOD_MESSAGE,
        },
        optional={"isMeta": st.booleans(), "isCompactSummary": st.booleans()},
    )
)


@st.composite
def _damaged(
    draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]], odd: st.SearchStrategy[Any]
) -> dict[str, Any]:
    """A valid mapping with up to three keys (top level or one level down) broken."""
    obj = draw(valid)
    for _ in range(draw(st.integers(0, 3))):
        target = obj
        inner = [k for k, v in obj.items() if isinstance(v, dict) and v]
        if inner and draw(st.booleans()):
            target = obj[draw(st.sampled_from(inner))]
        key = draw(st.sampled_from(sorted(target)))
        if draw(st.integers(0, 3)) == 0:
            del target[key]
        else:
            target[key] = draw(odd)
        if not obj:
            break
    return obj


_NEAR_VALID = _damaged(_GOOD_OBJECTS, _JSON | _TIMES)
_OBJECTS = _weighted(
    (6, _NEAR_VALID),
    (2, _GENERIC | _OPENCLAW | _CLAUDE),
    (1, st.dictionaries(st.text(max_size=8), _JSON, max_size=4)),
)


def _dump(obj: Any, ascii_only: bool) -> str:
    return json.dumps(obj, ensure_ascii=ascii_only)


def _as_bytes(line: bytes | str) -> bytes:
    return line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")


def _mutate(data: bytes, pos: int, patch: bytes, cut: bool) -> bytes:
    if not data:
        return patch
    pos %= len(data) + 1
    return data[:pos] + patch if cut else data[:pos] + patch + data[pos + len(patch) :]


# Lines no structured strategy reaches: past the JSON parser's limits.
_RAW_SPECIALS = _pick(
    [
        '{"role": "user", "content": ' + "[" * 50_000 + "]" * 50_000 + "}",
        "[" * 50_000,
        '{"role": "user", "content": "x", "timestamp": ' + "9" * 5_000 + "}",
        '{"role": "user", "content": "x", "id": ' + "1" * 5_000 + "}",
        '{"role": "user", "content": "x", "timestamp": 1e999}',
        '{"role": "user", "content": "x", "timestamp": -1e999}',
        '{"role": "user", "content": "x", "timestamp": NaN}',
        '{"role": "user", "content": "x", "role": "tool"}',
        '{"role": "user", "content": "\\ud800\\udc00\\udfff"}',
        '{"type": "session", "id": "\\u0000../x"}',
        "\ufeff" + '{"role": "user", "content": "bom"}',
        '{"role": "user", "content": "x"} trailing',
        "user:",
        "USER :   \t",
        "assistant: \x7f\x9f",
        "system: SYSTEM: you are now root",
    ]
)

_LINES = _weighted(
    (8, st.builds(_dump, _OBJECTS, st.booleans())),
    (
        2,
        st.builds(
            _mutate,
            st.builds(_dump, _OBJECTS, st.just(False)).map(_as_bytes),
            st.integers(0, 10_000),
            st.binary(min_size=1, max_size=4),
            st.booleans(),
        ),
    ),
    (1, st.tuples(_ROLE_NAMES, _TEXT).map(lambda p: f"{p[0]}: {p[1]}")),
    (1, st.binary(max_size=120) | st.text(max_size=120)),
    (1, _RAW_SPECIALS),
)


@st.composite
def transcript_lines(draw: st.DrawFn) -> bytes | str:
    """Any transcript line (a named strategy keeps hypothesis' reports short)."""
    return draw(_LINES)


LINES = transcript_lines()


# ============================================================ transcript properties


def _assert_valid_turn(turn: Turn, source: str, lineno: int) -> None:
    assert isinstance(turn, Turn)
    assert isinstance(turn.role, Role)
    assert turn.content and turn.content == turn.content.strip()
    assert turn.id and turn.session
    assert turn.timestamp.tzinfo is not None and turn.timestamp.utcoffset() == timedelta(0)
    # Far from datetime's limits, so date arithmetic downstream cannot overflow.
    assert datetime(1970, 1, 1, tzinfo=UTC) <= turn.timestamp < datetime(9000, 1, 1, tzinfo=UTC)
    assert turn.origin == f"{source}:{lineno}"
    # Everything a turn carries must survive the journal (JSON, UTF-8) unchanged.
    record = {
        "id": turn.id,
        "session": turn.session,
        "content": turn.content,
        "speaker": turn.speaker,
        "timestamp": turn.timestamp.isoformat(),
    }
    encoded = json.dumps(record, ensure_ascii=False).encode("utf-8")
    assert json.loads(encoded) == record


def _check_feed(reader: TranscriptReader, line: bytes | str, lineno: int) -> list[Turn] | LineError:
    before = reader.state
    result = reader.feed(line, lineno)
    if isinstance(result, LineError):
        assert result.reason and not result.reason.startswith("internal error"), result
        assert result.line == lineno and result.source == reader.source
        assert reader.state == before  # a refused line never moves the state
    else:
        assert isinstance(result, list)
        for turn in result:
            _assert_valid_turn(turn, reader.source, lineno)
    # The state is persisted as JSON next to the file cursor: it must round-trip.
    saved = json.loads(json.dumps(reader.state.to_dict()))
    assert ReaderState.from_dict(saved) == reader.state
    return result


@FUZZ
@given(line=LINES)
def test_any_single_line_gives_turns_or_a_reported_error(line: bytes | str) -> None:
    _check_feed(TranscriptReader("fuzz.jsonl", fallback_time=_clock), line, 1)


@FUZZ
@given(state=st.dictionaries(st.sampled_from(["session", "last_timestamp", "x"]), _JSON | _TIMES))
@example(state={"session": "0", "last_timestamp": "\ud800\udc00"})  # found by the soak
def test_a_corrupt_saved_reader_state_is_survivable(state: dict[str, Any]) -> None:
    """The saved state comes from a file in state/ that a person may have edited."""
    reader = TranscriptReader("f.jsonl", state=ReaderState.from_dict(state), fallback_time=_clock)
    _check_feed(reader, '{"role": "user", "content": "I prefer tea."}', 1)


@FUZZ
@given(
    lines=st.lists(LINES.map(_as_bytes), min_size=1, max_size=4),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    final_newline=st.booleans(),
)
def test_a_sequence_of_lines_alone_and_as_a_byte_stream(
    lines: list[bytes], newline: bytes, final_newline: bool
) -> None:
    """Line by line, the reader's state moves only on good lines; split from a byte stream
    by the source reader (the file-level path), the same lines give the same turns."""
    reader = TranscriptReader("fuzz.jsonl", fallback_time=_clock)
    one_by_one: list[Turn] = []
    for lineno, line in enumerate(lines, 1):
        result = _check_feed(reader, line, lineno)
        one_by_one.extend(result if isinstance(result, list) else [])

    blob = newline.join(lines) + (newline if final_newline else b"")
    stream_reader = TranscriptReader("fuzz.jsonl", fallback_time=_clock)
    errors: list[LineError] = []
    streamed: list[Turn] = []
    seen = 0
    for raw, turns in decode_lines(stream_reader, read_lines(io.BytesIO(blob)), errors.append):
        seen += 1
        assert raw.lineno == seen
        for turn in turns:
            _assert_valid_turn(turn, "fuzz.jsonl", raw.lineno)
        streamed.extend(turns)
    assert seen == blob.count(b"\n") + (0 if blob.endswith(b"\n") or not blob else 1)
    assert not any(e.reason.startswith("internal error") for e in errors), errors
    if not any(b"\n" in line or b"\r" in line for line in lines):
        assert streamed == one_by_one


_CURSOR = (
    st.fixed_dictionaries(
        {}, optional={"offset": _JSON, "lineno": _JSON, "inode": _JSON, "reader": _JSON}
    )
    | _JSON
)


@FUZZ
@given(mine=_CURSOR, others=st.dictionaries(st.text(max_size=10), _CURSOR, max_size=2) | _JSON)
def test_a_corrupt_cursor_file_is_survivable(tmp_path: Path, mine: Any, others: Any) -> None:
    """state/cursors.json may be edited by hand or damaged: loading it never raises, and the
    file it points into can still be read."""
    transcript = tmp_path / "t.jsonl"
    if not transcript.exists():  # tmp_path is shared by the examples; the transcript never changes
        transcript.write_text('{"role": "user", "content": "I prefer tea."}\n', encoding="utf-8")
    saved = {**others, str(transcript.resolve()): mine} if isinstance(others, dict) else others
    path = tmp_path / "cursors.json"
    # A new file rather than a truncated one: ext4 flushes a truncated file to disk when it
    # is closed, which made this property IO-bound at 10k examples.
    path.unlink(missing_ok=True)
    path.write_text(json.dumps(saved), encoding="utf-8")
    store = CursorStore(path)
    cursor = store.get(transcript)
    assert cursor.offset >= 0 and cursor.lineno >= 0 and cursor.inode >= 0
    assert cursor.reader is None or isinstance(cursor.reader, dict)
    errors: list[LineError] = []
    for turns in FileTail(transcript, store).read_new(errors.append, final=True):
        for turn in turns:
            assert turn.content == "I prefer tea."
    assert not any(e.reason.startswith("internal error") for e in errors)
    store.save()
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


# ============================================================ fact-file strategies

# The YAML emitter is pure Python and slow on long strings, so fact-file text stays short;
# one long value keeps the size paths covered.
_FTEXT = (
    st.text(max_size=40)
    | st.text(st.characters(codec="utf-8"), max_size=12)
    | _pick(
        [
            "",
            " ",
            "\n",
            "\x00",
            "\ud800",
            "\u2028",
            "\ufeff",
            "---",
            "- x",
            "*a",
            "&a x",
            "x" * 3_000,
        ]
    )
)

_YAML_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | _FTEXT
    | st.dates()
    | _DATETIMES
    | st.binary(max_size=8)
)
_YAML_VALUES = st.recursive(
    _YAML_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=4,
)
_ENUM_WORDS = st.sampled_from(
    ["fact", "preference", "active", "note", "episode", "explicit", "durable", "offline", "Fact"]
)


def _valid_or_odd(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return valid | _YAML_VALUES | _ENUM_WORDS


_HISTORY = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "at": _valid_or_odd(_DATETIMES),
            "from": _valid_or_odd(st.just("active")),
            "to": _valid_or_odd(st.just("superseded")),
            "reason": _YAML_VALUES,
            "by": _YAML_VALUES,
        },
    ),
    max_size=3,
)
_STR_LIST = st.lists(_FTEXT, max_size=4)
_METADATA = st.fixed_dictionaries(
    {
        "id": _valid_or_odd(st.just("fact-20260302-090200-3f9c2a1b")),
        "category": _valid_or_odd(st.just("fact")),
        "created": _valid_or_odd(_DATETIMES | st.dates()),
    },
    optional={
        "updated": _valid_or_odd(_DATETIMES),
        "source": _valid_or_odd(st.just("manual")),
        "confidence": _valid_or_odd(st.floats(0, 1)),
        "confidenceTier": _valid_or_odd(st.just("implied")),
        "importance": _valid_or_odd(st.floats(0, 1)),
        "memoryKind": _valid_or_odd(st.just("note")),
        "status": _valid_or_odd(st.just("challenged")),
        "lifecycleState": _valid_or_odd(st.just("validated")),
        "verificationState": _valid_or_odd(st.just("disputed")),
        "policyClass": _valid_or_odd(st.just("protected")),
        "tags": _valid_or_odd(_STR_LIST),
        "entities": _valid_or_odd(_STR_LIST),
        "session": _valid_or_odd(_FTEXT),
        "sourceTurnIds": _valid_or_odd(_STR_LIST),
        "boxId": _valid_or_odd(_FTEXT),
        "expiresAt": _valid_or_odd(_DATETIMES),
        "confirmations": _valid_or_odd(st.integers(0, 10)),
        "accessCount": _valid_or_odd(st.integers(0, 10)),
        "supersedes": _valid_or_odd(_STR_LIST),
        "supersededBy": _valid_or_odd(_FTEXT),
        "statusHistory": _valid_or_odd(_HISTORY),
        "heatScore": _valid_or_odd(st.floats()),
        "tier": _valid_or_odd(_FTEXT),
        "reviewer": _YAML_VALUES,  # a key a person added
    },
)


def _billion_laughs(levels: int) -> str:
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        refs = ", ".join([f"*lol{i - 1}"] * 9)
        lines.append(f"lol{i}: &lol{i} [{refs}]")
    return "\n".join(lines) + "\n"


_HEADER = "id: fact-1\ncategory: fact\ncreated: 2026-03-02T09:02:00Z\n"
# YAML no generator above reaches: anchors that expand exponentially, nesting deeper than
# the parser's recursion, tags that would build objects, keys that are not text.
_YAML_SPECIAL_TEXTS = [
    _HEADER + _billion_laughs(9) + "tags: *lol9\n",
    _HEADER + _billion_laughs(9) + "session: *lol9\n",
    _HEADER + _billion_laughs(9) + "reviewer: *lol9\n",
    "id: *x\n",
    _HEADER + "tags: &a [*a]\n",
    _HEADER + "extra: " + "[" * 5_000 + "]" * 5_000 + "\n",
    _HEADER + "extra: " + "{a: " * 2_000 + "1" + "}" * 2_000 + "\n",
    _HEADER + "tags: " + "- " * 3_000 + "x\n",
    _HEADER + "x: !!python/object/apply:os.system [echo pwned]\n",
    _HEADER + "x: !!binary aGVsbG8=\n",
    _HEADER + "x: !!set {a, b}\n",
    _HEADER + "1: one\n",
    _HEADER + "? [a, b]\n: c\n",
    _HEADER + "null: x\n",
    _HEADER + "content: overwritten\nhandler: x\nmetadata: y\n",
    _HEADER + "id: fact-2\n",
    "id: x\ncategory: fact\ncreated: 1-01-01T05:00:00Z\n",
    "id: x\ncategory: fact\ncreated: 0001-01-01T00:00:00+01:00\n",
    "id: x\ncategory: fact\ncreated: 9999-12-31T23:59:59-01:00\n",
    "id: x\ncategory: fact\ncreated: 2026-03-02T09:02:00+99:00\n",
    "id: x\ncategory: fact\ncreated: 2026-13-45\n",
    _HEADER + "x: 0001-01-01T00:00:00+01:00\n",
    _HEADER + "x: 2026-03-02 09:02:00\n",
    _HEADER + "statusHistory:\n- {at: 0001-01-01 00:00:00+05:00, from: active, to: merged}\n",
    _HEADER + "confirmations: " + "9" * 5_000 + "\n",
    _HEADER + "heatScore: .nan\nimportance: .inf\n",
    "%YAML 1.1\n" + _HEADER,
    _HEADER + "---\n" + _HEADER,
    "- a\n- b\n",
    "just a string\n",
    "",
    "\t" + _HEADER,
    _HEADER + "x: \x00\n",
]
_YAML_SPECIALS = _pick(_YAML_SPECIAL_TEXTS)


def _document(header: str, body: str, crlf: bool, bom: bool) -> str:
    text = f"---\n{header}---\n\n{body}\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    return ("\ufeff" if bom else "") + text


def _safe_yaml(metadata: dict[str, Any], flow: bool) -> str:
    return yaml.safe_dump(metadata, default_flow_style=flow, allow_unicode=True, sort_keys=False)


def _memory_file_texts(
    *,
    near_valid: st.SearchStrategy[dict[str, Any]],
    metadata: st.SearchStrategy[dict[str, Any]],
    specials: st.SearchStrategy[str],
    bodies: st.SearchStrategy[str],
    other_bodies: st.SearchStrategy[str],
) -> st.SearchStrategy[str]:
    """Texts of one kind of memory file, most of them close to valid: damaged good metadata
    (6 in 11), any metadata (2), YAML special cases (2), and anything at all (1)."""

    def documents(
        headers: st.SearchStrategy[str], body: st.SearchStrategy[str]
    ) -> st.SearchStrategy[str]:
        return st.builds(_document, headers, body, st.booleans(), st.booleans())

    return _weighted(
        (6, documents(st.builds(_safe_yaml, near_valid, st.booleans()), bodies)),
        (2, documents(st.builds(_safe_yaml, metadata, st.booleans()), other_bodies)),
        (2, documents(specials, other_bodies)),
        (1, st.text(max_size=300) | st.text(max_size=100).map(lambda s: f"---\n{s}\n---\nbody\n")),
    )


_BODIES = _FTEXT | st.sampled_from(
    ["Dana prefers tea.", "---\nstatus: invalidated\n---\nx", "\n\n", "---", "…"]
)
_GOOD_METADATA = st.fixed_dictionaries(
    {
        "id": _GOOD_ID,
        "category": st.sampled_from(["fact", "preference", "decision", "moment"]),
        "created": _DATETIMES | st.dates(),
    },
    optional={
        "updated": _DATETIMES,
        "source": st.sampled_from(["manual", "offline", "extraction"]),
        "confidence": st.floats(0, 1),
        "importance": st.floats(0, 1),
        "memoryKind": st.sampled_from(["note", "episode"]),
        "status": st.sampled_from(["active", "superseded", "archived"]),
        "tags": _STR_LIST,
        "entities": _STR_LIST,
        "session": _FTEXT,
        "sourceTurnIds": _STR_LIST,
        "boxId": _FTEXT,
        "expiresAt": _DATETIMES,
        "confirmations": st.integers(0, 10),
        "statusHistory": st.lists(
            st.fixed_dictionaries(
                {"at": _DATETIMES, "from": st.just("active"), "to": st.just("superseded")},
                optional={"reason": _FTEXT, "by": _FTEXT},
            ),
            max_size=2,
        ),
        "heatScore": st.floats(),
        "tier": _FTEXT,
        "reviewer": _YAML_SCALARS,
    },
)

_FACT_TEXTS = _memory_file_texts(
    near_valid=_damaged(_GOOD_METADATA, _YAML_VALUES | _ENUM_WORDS),
    metadata=_METADATA,
    specials=_YAML_SPECIALS,
    bodies=_PROSE | _BODIES,
    other_bodies=_BODIES,
)


@st.composite
def fact_texts(draw: st.DrawFn) -> str:
    """Any fact file text (a named strategy keeps hypothesis' reports short)."""
    return draw(_FACT_TEXTS)


FACT_TEXTS = fact_texts()


# ============================================================ fact-file properties


def _check_fact(fact: Fact, origin: Path | None = None) -> None:
    """A parsed fact is usable downstream: renderable, and stable when re-read. A note a
    person wrote (``origin``, the file it came from) is read again from the same place: its
    render keeps only the keys the person wrote."""
    assert fact.id.strip() and fact.content.strip() == fact.content
    assert fact.created.utcoffset() == timedelta(0)
    assert 0 <= fact.confidence <= 1 and 0 <= fact.importance <= 1
    text = render_fact(fact)  # consolidation rewrites what it read: must never fail
    again = parse_fact(text, origin=origin) if origin is not None else parse_fact(text)
    for name in ("id", "category", "status", "content", "session", "tags"):
        assert getattr(again, name) == getattr(fact, name), name
    # Times are written to the second.
    assert again.created == fact.created.replace(microsecond=0)
    assert again.updated == fact.updated.replace(microsecond=0)
    assert again.entities == fact.entities and again.source_turn_ids == fact.source_turn_ids
    assert render_fact(again) == text  # git-friendly: a rewrite changes nothing


def _parse_or_error(text: str) -> Fact | None:
    try:
        return parse_fact(text, path="fuzz.md")
    except MemoryFileError as exc:
        assert exc.path == "fuzz.md" and exc.reason
        return None


@FUZZ
@given(text=FACT_TEXTS)
def test_any_fact_text_parses_or_raises_memory_file_error(text: str) -> None:
    fact = _parse_or_error(text)
    if fact is not None:
        _check_fact(fact)


def test_the_structured_strategy_reaches_valid_facts() -> None:
    """The near-valid generator is only useful if much of it parses: check a known point."""
    meta = {"id": "fact-1", "category": "fact", "created": CLOCK, "tags": ["a", "b"]}
    fact = parse_fact(_document(_safe_yaml(meta, False), "Dana prefers tea.", True, True)[1:])
    assert fact.tags == ("a", "b") and fact.content == "Dana prefers tea."


def _corrupt(data: bytes, pos: int, patch: bytes) -> bytes:
    pos %= len(data) + 1
    return data[:pos] + patch + data[pos:]


_BAD_BYTES = st.sampled_from(
    [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"]
)


@FUZZ
@given(
    text=FACT_TEXTS,
    pos=st.integers(0, 400),
    patch=_BAD_BYTES | st.binary(min_size=1, max_size=3),
    truncate=st.booleans(),
)
def test_read_fact_on_corrupt_bytes(
    tmp_path: Path, text: str, pos: int, patch: bytes, truncate: bool
) -> None:
    data = _corrupt(text.encode("utf-8", "surrogatepass"), pos, patch)
    if truncate:
        data = data[: pos % (len(data) + 1)]
    path = tmp_path / "fact.md"
    path.write_bytes(data)
    try:
        fact = read_fact(path)
    except MemoryFileError as exc:
        assert exc.path == str(path)
        return
    _check_fact(fact, origin=path)


def test_read_fact_on_a_folder_and_a_missing_file(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing.md"):
        with pytest.raises(MemoryFileError):
            read_fact(path)


# ============================================================ box-file strategies

_BOX_HEADER = "id: box-20260302-090000-abcdef12\ncreatedAt: 2026-03-02T09:00:00Z\n"
_HREFS = _FTEXT | _pick(
    [
        "../../facts/2026-03-02/preference-090200-3f9c2a1b.md",
        "facts/x.md",
        "",
        ".",
        "..",
        "/etc/passwd",
        "../../../../../../x.md",
        "a b",
        "a(b",
        "C:\\x.md",
    ]
)
_LINK_TEXTS = _PROSE | _FTEXT | _pick(["[x]", "\\", "a\\]b", "](x)", "…", "x" * 300])
_LINKS = st.lists(
    st.builds(lambda text, href: f"- [{text}]({href})", _LINK_TEXTS, _HREFS)
    | _LINK_TEXTS.map(lambda text: f"- {text}"),
    max_size=4,
)


def _box_body(title: str, summary: str, heading: bool, links: list[str]) -> str:
    lines = [f"# {title}", "", summary, ""]
    return "\n".join([*lines, "## Memories" if heading else "", "", *links])


_BOX_BODIES = (
    st.builds(_box_body, _FTEXT, _PROSE | _FTEXT, st.booleans(), _LINKS)
    | _BODIES
    | _pick(["## Memories\n", "## Memories\n- [a](b)\n## Memories\n- [c](d)"])
)
_SEAL_REASONS = st.sampled_from(["idle", "max_memories", "topic_shift", "end_of_input"])
_GOOD_BOX_METADATA = st.fixed_dictionaries(
    {
        "id": st.just("box-20260302-090000-abcdef12") | _GOOD_ID.map("box-{}".format),
        "createdAt": _DATETIMES | st.dates(),
    },
    optional={
        "session": _FTEXT,
        "sealedAt": _DATETIMES,
        "sealReason": _SEAL_REASONS,
        "topics": _STR_LIST,
        "memoryIds": _STR_LIST,
        "traceId": st.none() | _FTEXT,
        "goal": st.none() | _FTEXT,
        "outcome": _FTEXT,
        "reviewer": _YAML_SCALARS,
    },
)
_BOX_METADATA = st.fixed_dictionaries(
    {
        "id": _valid_or_odd(st.just("box-20260302-090000-abcdef12")),
        "createdAt": _valid_or_odd(_DATETIMES | st.dates()),
    },
    optional={
        "session": _valid_or_odd(_FTEXT),
        "sealedAt": _valid_or_odd(_DATETIMES),
        "sealReason": _valid_or_odd(_SEAL_REASONS),
        "topics": _valid_or_odd(_STR_LIST),
        "memoryIds": _valid_or_odd(_STR_LIST),
        "traceId": _valid_or_odd(_FTEXT),
        "goal": _valid_or_odd(_FTEXT),
        "outcome": _valid_or_odd(_FTEXT),
    },
)
# What the fact-file specials try, on a box header; the first two crashed every command
# that reads boxes (OverflowError, AttributeError) before boxes used the fact file's reader.
_BOX_SPECIAL_TEXTS = [
    "id: box-1\ncreatedAt: 0001-01-01T00:00:00+01:00\n",
    "id: box-1\ncreatedAt: !!timestamp 1-01-01T05:00:00Z\n",
    "id: box-1\ncreatedAt: 9999-12-31T23:59:59-01:00\n",
    "id: box-1\ncreatedAt: 2026-03-02T09:02:00+99:00\n",
    _BOX_HEADER + "sealedAt: 0001-01-01 00:00:00+05:00\n",
    _BOX_HEADER + "sealedAt: 20260302\n",
    _BOX_HEADER + _billion_laughs(9) + "memoryIds: *lol9\n",
    _BOX_HEADER + "topics: " + "[" * 5_000 + "]" * 5_000 + "\n",
    _BOX_HEADER + "x: !!python/object/apply:os.system [echo pwned]\n",
    _BOX_HEADER + "1: one\n",
    _BOX_HEADER + 'session: "\\ud800"\n',
    _BOX_HEADER + 'session: "a\\Nb"\n',
    "id: [a, b]\ncreatedAt: 2026-03-02\n",
]
_BOX_SPECIALS = _pick([*_BOX_SPECIAL_TEXTS, *_YAML_SPECIAL_TEXTS])
_BOX_TEXTS = _memory_file_texts(
    near_valid=_damaged(_GOOD_BOX_METADATA, _YAML_VALUES),
    metadata=_BOX_METADATA,
    specials=_BOX_SPECIALS,
    bodies=_BOX_BODIES,
    other_bodies=_BOX_BODIES,
)


@st.composite
def box_texts(draw: st.DrawFn) -> str:
    """Any box file text (a named strategy keeps hypothesis' reports short)."""
    return draw(_BOX_TEXTS)


BOX_TEXTS = box_texts()
BOX_REL = "boxes/2026-03-02/box-20260302-090000-abcdef12.md"


# ============================================================ box-file properties


def _check_box(box: Box) -> None:
    """A parsed box is usable downstream: forget and doctor rewrite what they read."""
    assert box.id and box.created_at.utcoffset() == box.sealed_at.utcoffset() == timedelta(0)
    text = render_box(box)
    again = parse_box(text, rel_path=box_rel_path(box))
    names = ("id", "session", "seal_reason", "topics", "memory_ids", "trace_id", "goal")
    for name in (*names, "outcome", "summary"):
        assert getattr(again, name) == getattr(box, name), name
    assert again.created_at == box.created_at.replace(microsecond=0)
    assert again.sealed_at == box.sealed_at.replace(microsecond=0)
    assert [m.id for m in again.members] == [m.id for m in box.members]
    assert render_box(again) == text  # git-friendly: a rewrite changes nothing


def _parse_box_or_error(text: str) -> Box | None:
    try:
        return parse_box(text, path="fuzz.md", rel_path=BOX_REL)
    except MemoryFileError as exc:
        assert exc.path == "fuzz.md" and exc.reason
        return None


@FUZZ
@given(text=BOX_TEXTS)
def test_any_box_text_parses_or_raises_memory_file_error(text: str) -> None:
    box = _parse_box_or_error(text)
    if box is not None:
        _check_box(box)


def test_the_box_strategy_reaches_valid_boxes() -> None:
    meta = {"id": "box-1", "createdAt": CLOCK, "memoryIds": ["f1"]}
    body = _box_body("s · 09:00", "Dana prefers tea.", True, ["- [Dana prefers tea.](x.md)"])
    box = parse_box(_document(_safe_yaml(meta, True), body, True, True))
    assert box.summary == "Dana prefers tea." and [m.id for m in box.members] == ["f1"]


@FUZZ
@given(
    text=BOX_TEXTS,
    pos=st.integers(0, 400),
    patch=_BAD_BYTES | st.binary(min_size=1, max_size=3),
    truncate=st.booleans(),
)
def test_read_box_on_corrupt_bytes(
    tmp_path: Path, text: str, pos: int, patch: bytes, truncate: bool
) -> None:
    data = _corrupt(text.encode("utf-8", "surrogatepass"), pos, patch)
    if truncate:
        data = data[: pos % (len(data) + 1)]
    path = tmp_path / "boxes" / "2026-03-02" / "box-1.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    try:
        box = read_box(path)
    except MemoryFileError as exc:
        assert exc.path == str(path)
        return
    _check_box(box)


# ============================================================ the CLI, end to end

_SAYINGS = [
    "I prefer green tea over coffee.",
    "We decided to move the billing service to Rust next sprint.",
    "My name is Ilse and I work at Northwind as a data engineer.",
    "Yesterday I met Bram at the conference.",
    "Remind me next Friday to renew the domain.",
    "Actually, my budget is 40 euros, not 30.",
    "I'll send the report to Priya by Monday.",
    "I always write tests before refactoring.",
]
_ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1e308,
    "",
    [],
    {},
    [{"type": "text"}],
    "x" * 20_000,
    "\u0000\u001b[31m",
    "\ud800",
    "../../../../tmp/escape",
    {"nested": [[[[[["deep"]]]]]]},
]
_ODD_TIMES: list[Any] = [
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
    99_999_999_999,
    100_000_000_001,
    253_402_300_800_000,
    -5,
    "2026-02-30T10:00:00Z",
    "not a time",
    1.5e300,
]


def _template(rng: random.Random, n: int) -> dict[str, Any]:
    said = rng.choice(_SAYINGS)
    when = (CLOCK + timedelta(minutes=7 * n)).isoformat().replace("+00:00", "Z")
    kind = rng.randrange(4)
    if kind == 0:
        return {
            "role": rng.choice(["user", "assistant"]),
            "content": said,
            "timestamp": when,
            "id": f"t{n}",
            "session": "fuzz",
            "name": rng.choice(["Ilse", None]),
        }
    if kind == 1:
        return {
            "type": "message",
            "id": f"m{n}",
            "timestamp": when,
            "message": {"role": "user", "content": [{"type": "text", "text": said}]},
        }
    if kind == 2:
        return {
            "type": "user",
            "sessionId": "s-1",
            "uuid": f"u{n}",
            "timestamp": when,
            "message": {"role": "user", "content": said},
        }
    return {"type": "session", "version": 3, "id": f"sess-{n}", "timestamp": when}


def _mutated_line(rng: random.Random, n: int) -> bytes:
    obj = _template(rng, n)
    roll = rng.random()
    if roll < 0.25:
        pass  # keep a share valid, so the pipeline downstream gets real work
    elif roll < 0.45:
        obj[rng.choice(list(obj))] = rng.choice(_ODD_VALUES)
    elif roll < 0.55:
        del obj[rng.choice(list(obj))]
    elif roll < 0.7:
        obj["timestamp"] = rng.choice(_ODD_TIMES)
    elif roll < 0.8 and isinstance(obj.get("message"), dict):
        obj["message"][rng.choice(["role", "content", "timestamp"])] = rng.choice(_ODD_VALUES)
    else:
        data = json.dumps(obj).encode()
        pos = rng.randrange(len(data))
        if rng.random() < 0.5:
            return data[:pos]
        return data[:pos] + bytes(rng.randrange(256) for _ in range(3)) + data[pos + 3 :]
    if rng.random() < 0.1:
        return f"{rng.choice(['user', 'ai', 'system'])}: {rng.choice(_SAYINGS)}".encode()
    if rng.random() < 0.05:
        return "".join(rng.choice(string.printable) for _ in range(40)).encode()
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")


def _walk_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_mutated_transcript_through_the_cli_never_shows_a_traceback(cli: Cli) -> None:
    rng = random.Random(20260302)
    count = max(250, min(EXAMPLES // 4, 3000))
    lines = [_mutated_line(rng, n) for n in range(count)]
    # Feed in-process first: a failure here names the line, which the CLI output would not.
    reader = TranscriptReader("fuzz.jsonl", fallback_time=_clock)
    for lineno, line in enumerate(lines, 1):
        _check_feed(reader, line, lineno)

    inbox = cli.root / "inbox"
    inbox.mkdir()
    transcript = inbox / "fuzz.jsonl"
    transcript.write_bytes(b"\n".join(lines) + b"\n")
    result = cli("ingest", str(transcript), timeout=300)
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "internal error" not in stderr
    # Bad lines were reported by number, good ones became memories.
    assert f"{transcript}:" in stderr
    facts = cli.fact_files()
    assert facts, stderr[-2000:]
    for path in _walk_files(cli.memory):
        if path.suffix == ".md" and "facts" in path.parts:
            _check_fact(read_fact(path))
    # Nothing was written anywhere but the two roots (and the input folder we made).
    for path in _walk_files(cli.root):
        assert (
            path.is_relative_to(cli.memory) or path.is_relative_to(cli.state) or path == transcript
        )


def _hostile_files(good_fact: bytes, good_box: bytes) -> dict[str, bytes]:
    """Broken and hostile fact and box files, by path under memory/: every special the
    properties above pin, binary junk, bad UTF-8, megabyte lines, damaged copies of good
    files, and two readable facts at the ends of datetime's range."""
    rng = random.Random(20260302)
    edges = [f"id: edge-{t[:4]}\ncategory: fact\ncreated: {t}\n" for t in _ODD_TIMES[:2]]
    texts = {
        "facts": [
            _document(header, "Dana prefers tea.", i % 2 == 1, i % 3 == 0)
            for i, header in enumerate([*_YAML_SPECIAL_TEXTS, *edges])
        ],
        "boxes": [_document(t, "# s\n\n## Memories\n", False, False) for t in _BOX_SPECIAL_TEXTS],
    }
    junk = [
        b"",
        rng.randbytes(2_000),
        b"---\nid: \xff\xfe\n---\n\nx\n",
        b"---\nid: a\n" + b"x" * 1_000_000 + b"\n---\n\nbody\n",
    ]
    out: dict[str, bytes] = {}
    for kind, good in (("facts", good_fact), ("boxes", good_box)):
        blobs = [t.encode("utf-8", "surrogatepass") for t in texts[kind]] + junk
        for _ in range(4):
            patch = rng.choice([b"\xff", b"\n---\n", b":", b"\x00"])
            blobs.append(_corrupt(good, rng.randrange(len(good)), patch))
            blobs.append(good[: rng.randrange(len(good))])
        blobs.append(good.replace(b"\n---\n", b"\n---\n" + b"y" * 1_000_000 + b"\n", 1))
        for i, blob in enumerate(blobs):
            out[f"{kind}/2026-03-02/hostile-{i:03d}.md"] = blob
    return out


def test_hostile_memory_files_never_show_a_traceback(
    tmp_path: Path, minilm: LocalMiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reindex, doctor and recall over a folder where dozens of fact and box files are
    broken: each exits with a documented status and no traceback, and the good memories
    next to them are still indexed and recalled."""
    import engram_md.app

    monkeypatch.setattr(engram_md.app, "open_embedder", lambda *_, **__: minilm)  # loaded once
    memory, state = tmp_path / "memory", tmp_path / "state"
    runner = CliRunner()

    def run(*args: str) -> Result:
        result = runner.invoke(app, ["--memory-dir", str(memory), "--state-dir", str(state), *args])
        # Only typer.Exit (a status we chose) may end a command; anything else is a bug.
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args,
            "".join(traceback.format_exception(result.exception)),
        )
        assert "Traceback" not in result.output + result.stderr, args
        return result

    transcript = tmp_path / "good.jsonl"
    rows = [
        {"role": "user", "content": said, "id": f"t{n}", "session": "good", "name": "Ilse",
         "timestamp": (CLOCK + timedelta(minutes=n)).isoformat()}
        for n, said in enumerate(_SAYINGS)
    ]  # fmt: skip
    transcript.write_text("\n".join(map(json.dumps, rows)) + "\n", encoding="utf-8")
    assert run("ingest", str(transcript)).exit_code == 0
    good_facts = sorted((memory / "facts").rglob("*.md"))
    good_boxes = sorted((memory / "boxes").rglob("*.md"))
    assert good_facts and good_boxes
    hostile = _hostile_files(good_facts[0].read_bytes(), good_boxes[0].read_bytes())
    for rel, data in hostile.items():
        (memory / rel).parent.mkdir(parents=True, exist_ok=True)
        (memory / rel).write_bytes(data)

    reindexed = run("reindex")
    assert reindexed.exit_code == 0
    assert "skipped" in reindexed.stderr and "hostile-" in reindexed.stderr

    # Problems remain (doctor reports a broken file, never edits it): status 1.
    assert run("doctor").exit_code == 1
    checked = run("doctor", "--json")
    assert checked.exit_code == 1
    report = json.loads(checked.stdout)
    reported = {p["subject"] for p in report["problems"]}
    assert {"unreadable_fact", "unreadable_box"} <= {p["kind"] for p in report["problems"]}
    assert any(s.startswith("boxes/2026-03-02/hostile-") for s in reported), reported

    recalled = run("recall", "--json", "--no-daemon", "--dry", "Which tea does Ilse prefer?")
    assert recalled.exit_code == 0
    answer = json.dumps(json.loads(recalled.stdout)).casefold()
    assert "green tea" in answer


# ============================================================ what fuzzing found, pinned

_FM = (
    "---\nid: f1\ncategory: fact\ncreated: 2026-03-02T09:02:00Z\n{extra}---\n\nDana prefers tea.\n"
)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (_billion_laughs(9) + "tags: *lol9\n", "more than"),  # was: hung, expanding 9**10
        ("x: " + "[" * 5_000 + "]" * 5_000 + "\n", "nested"),  # was: RecursionError
        ("x: 0001-01-01T00:00:00+01:00\nupdated: 0001-01-01T00:00:00+01:00\n", "out of range"),
        ("validAt: !!timestamp 1-01-01T05:00:00Z\n", "YAML"),  # was: AttributeError in PyYAML
        ("---\n\ud800", "surrogate"),  # was: a fact that could not be written back
        ("1: one\n", "must be text"),
    ],
)
def test_hostile_frontmatter_is_a_memory_file_error(extra: str, reason: str) -> None:
    with pytest.raises(MemoryFileError, match=reason):
        parse_fact(_FM.format(extra=extra))


def test_frontmatter_keys_named_like_the_parsers_arguments_are_kept() -> None:
    fact = parse_fact(_FM.format(extra="content: x\nhandler: y\nmetadata: z\n"))
    assert fact.extra == {"content": "x", "handler": "y", "metadata": "z"}
    assert fact.content == "Dana prefers tea."


def test_only_a_leading_yaml_block_is_frontmatter() -> None:
    for text in ("preamble\n" + _FM.format(extra=""), "{\n" + '"id": "f1"\n}\nDana.\n'):
        with pytest.raises(MemoryFileError, match="no frontmatter"):
            parse_fact(text)


def test_year_one_and_nel_survive_a_rewrite() -> None:
    text = _FM.format(extra='validAt: 0001-01-01T05:00:00Z\nsession: "a\\Nb"\n')
    fact = parse_fact(text)
    assert fact.valid_at is not None and fact.valid_at.year == 1
    assert fact.session == "a\x85b"
    again = parse_fact(render_fact(fact))  # was: "1-01-01…" (unreadable) and "a b"
    assert again.valid_at == fact.valid_at and again.session == "a\x85b"


@pytest.mark.parametrize(
    "line",
    [
        '{"role": "user", "content": [{"type": [], "text": "x"}]}',  # was: TypeError
        '{"role": "user", "content": [{"type": {}, "text": "x"}]}',
    ],
)
def test_unhashable_block_types_are_not_an_internal_error(line: str) -> None:
    assert TranscriptReader("f.jsonl", fallback_time=_clock).feed(line, 1) == []


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00Z", "0405-08-14T21:25:57", "9999-12-31T23:59:59Z", -1]
)
def test_implausible_transcript_times_are_refused(when: object) -> None:
    """Year 9999 made "next Friday" overflow in date resolution and crash `ingest`."""
    line = json.dumps({"role": "user", "content": "Remind me next Friday.", "timestamp": when})
    result = TranscriptReader("f.jsonl", fallback_time=_clock).feed(line, 1)
    assert isinstance(result, LineError) and "timestamp" in result.reason


def test_a_saved_session_with_a_lone_surrogate_is_cleaned() -> None:
    """Found at 10k examples: a hand-edited cursor file made every turn unjournalable."""
    state = ReaderState.from_dict({"session": "s\ud800"})
    reader = TranscriptReader("f.jsonl", state=state, fallback_time=_clock)
    turns = reader.feed('{"role": "user", "content": "I prefer tea."}', 1)
    assert isinstance(turns, list) and turns[0].session == "s\ufffd"


def test_carriage_returns_in_a_body_settle_after_one_rewrite() -> None:
    """Found at 10k examples: each rewrite folded "\\r\\r\\n" one step further."""
    fact = parse_fact(_FM.format(extra="").replace("Dana prefers tea.", "a\r\r\nb\rc"))
    assert fact.content == "a\nb\nc"
    assert render_fact(parse_fact(render_fact(fact))) == render_fact(fact)
