"""Transcript lines in, turns out. The format is detected line by line.

Four line formats are accepted (DESIGN.md, "Transcript lines accepted"):

- generic JSON: ``{"role", "content", "timestamp"?, "id"?, "session"?, "name"?}``;
- OpenClaw session format v3: a ``session`` header, ``message`` entries and bookkeeping
  entries (``model_change``, ``compaction``, ``custom``, ``custom_message`` …);
- Claude Code: ``{"type": "user"|"assistant", "message": {...}, "sessionId", "uuid", ...}``
  plus bookkeeping lines (``summary``, ``file-history-snapshot``, ``system``, ``progress``,
  ``queue-operation`` …);
- plain text: ``user: Hi``.

Only what a person or the assistant *said* becomes a :class:`Turn`: text blocks. Thinking,
tool calls and tool results are machine traffic. Tool output is also the easiest path for a
prompt injection to pose as a user fact, so it never becomes a turn.

Nor does what the harness writes in the user's name (``harness.py``): Claude Code's
sidechain lines (a subagent's conversation, flagged ``isSidechain`` and written under
``<session>/subagents/``), meta lines, compaction summaries, tool-injected lines and
harness-marked text; OpenClaw's envelopes, startup and heartbeat prompts and messages whose
input provenance is not an external user. An OpenClaw envelope still names the sender and
dates the message, so those become the turn's speaker and time.

Each line of a transcript is read on its own, so a reader can resume in the middle of a file.
The little that carries over from line to line (the session named by an OpenClaw header, the
last timestamp seen) is kept in a :class:`ReaderState` that the caller persists next to its
file cursor.

:meth:`TranscriptReader.feed` never raises. One bad line must not stop the daemon, so
anything it cannot read comes back as a :class:`LineError` that the caller reports and skips.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePath
from typing import Any

import regex

from ..core.errors import InputError
from ..core.models import Role, Turn
from .harness import claude_code_words, openclaw_inbound

# Lines up to this size are parsed (a pasted log can be a few MB); longer ones are refused
# before decoding, so a runaway writer cannot make us hold or parse arbitrary amounts of text.
MAX_LINE_BYTES = 8 * 1024 * 1024

# Role names as they appear in the formats we read, folded to lower case. None marks roles
# that are recognized but never become a turn: tool traffic and generated summaries.
_ROLES: dict[str, Role | None] = {
    "user": Role.USER,
    "human": Role.USER,
    "assistant": Role.ASSISTANT,
    "ai": Role.ASSISTANT,
    "model": Role.ASSISTANT,
    "bot": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "tool": None,
    "function": None,
    "ipython": None,
    "toolresult": None,
    "tool_result": None,
    "bashexecution": None,
    "custom": None,
    "branchsummary": None,
    "compactionsummary": None,
}

# OpenClaw entries that carry no conversation text (the session header is handled apart).
_OPENCLAW_BOOKKEEPING = frozenset(
    {
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# Claude Code lines that carry no conversation text. Any other line with Claude Code's
# "sessionId" and a type that is not a message counts as bookkeeping too: new versions add
# types ("custom-title", …), and none of them is something a person said.
_CLAUDE_BOOKKEEPING = frozenset(
    {"summary", "file-history-snapshot", "system", "progress", "queue-operation"}
)
# Claude Code flags on lines the harness writes (or, for a sidechain, a subagent's
# conversation): none of them is the person's. A line carrying a tool's result
# (``toolUseResult``) or injected by a tool call (``sourceToolUseID``) is not either.
_CLAUDE_NOT_SAID = ("isSidechain", "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")
_CLAUDE_TOOL_FIELDS = ("toolUseResult", "sourceToolUseID")
# OpenClaw's input provenance of a user message that a person sent; other kinds are another
# session's or OpenClaw's own input.
_EXTERNAL_USER = "external_user"
# An envelope time within this of the entry's time is the same moment; the entry's is more
# precise (seconds), the envelope's only wins when they differ (a queued message).
_SAME_MOMENT = timedelta(minutes=1)
# Content block types whose text is something said (the last two are OpenAI's Responses API).
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})

# Plain text is only accepted with a role prefix: "Dana: hello" could be a speaker or the
# first words of a sentence, so a bare name is not enough to call it a turn.
_PLAIN = regex.compile(r"(user|assistant|system|human|ai)[ \t]*:(.*)", regex.IGNORECASE)
# C0 controls except tab: JSON writers escape them and prose has none, so they mean binary.
_CONTROL = regex.compile(r"[\x00-\x08\x0a-\x1f]")
# Plain text has no escaping at all, so DEL and C1 controls there are noise as well.
_PLAIN_CONTROL = regex.compile(r"[\x7f-\x9f]")
# JSON may spell a lone surrogate (``"\ud800"``); such a string cannot be written as UTF-8.
_SURROGATE = regex.compile(r"[\ud800-\udfff]")
_NUMBER = regex.compile(r"[+-]?\d+(?:\.\d+)?")
# Epoch values above this are milliseconds (1e11 seconds is the year 5138).
_MS_THRESHOLD = 1e11
# Transcript times outside this range are typos or garbage, not when a message was written;
# refusing them keeps date arithmetic downstream ("next Friday", expiry after 90 days)
# far from datetime's limits (years 1 and 9999).
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LineError:
    """A line that is none of the accepted formats, or cannot be read at all."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ReaderState:
    """What a reader carries from one line to the next; persisted with the file cursor."""

    session: str | None = None  # set by an OpenClaw session header
    last_timestamp: str | None = None  # ISO-8601 UTC, the last transcript time seen

    def to_dict(self) -> dict[str, str | None]:
        return {"session": self.session, "last_timestamp": self.last_timestamp}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReaderState:
        """Rebuild from :meth:`to_dict` output; unknown or mistyped values are dropped."""
        session = d.get("session")
        last = d.get("last_timestamp")
        # The file may have been edited by hand: a lone surrogate escape in the session
        # would make every turn of this file unwritable to the journal, and two of them in
        # either value read back as one other character (JSON pairs them), so the state
        # would not survive its own round trip.
        return cls(
            session=_clean(session) if isinstance(session, str) and session else None,
            last_timestamp=_clean(last) if isinstance(last, str) and last else None,
        )


@dataclass(frozen=True, slots=True)
class _Entry:
    """What one line says, before the reader fills the gaps from its state."""

    role: Role | None = None  # None: a recognized line that carries no turn
    text: str = ""
    turn_id: str | None = None
    session: str | None = None
    timestamp: datetime | None = None
    speaker: str | None = None
    starts_session: str | None = None  # an OpenClaw header names the session of what follows


def _utc_now() -> datetime:
    return datetime.now(UTC)


def is_sidechain_file(source: str | PurePath) -> bool:
    """A subagent's transcript: Claude Code writes them as ``<session>/subagents/*.jsonl``.

    Everything in one is a conversation between the harness and a subagent, so no line of
    it is read as a turn (and a watched folder does not read it at all).
    """
    return PurePath(source).parent.name == "subagents"


class TranscriptReader:
    """Turns the lines of one transcript source (a file or stdin) into :class:`Turn` values.

    ``source`` is a display name, used in ``Turn.origin`` and in errors; its file stem is the
    session of last resort and the prefix of ids made up for lines that have none. A source
    that is a subagent's transcript (:func:`is_sidechain_file`) yields no turns.
    """

    def __init__(
        self,
        source: str,
        *,
        default_session: str | None = None,
        state: ReaderState | None = None,
        fallback_time: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._source = source
        self._stem = PurePath(source).stem or "stdin"
        self._default_session = default_session or None
        self._state = state if state is not None else ReaderState()
        self._fallback_time = fallback_time
        self._sidechain = is_sidechain_file(source)

    @property
    def source(self) -> str:
        return self._source

    @property
    def state(self) -> ReaderState:
        return self._state

    def feed(self, raw: bytes | str, lineno: int) -> list[Turn] | LineError:
        """Read one line: its turns (often none), or why it cannot be read.

        The state only moves forward on a line that was understood.
        """
        try:
            entry = _parse_line(_decode(raw))
            turns, state = self._resolve(entry, lineno)
        except InputError as exc:
            return LineError(self._source, lineno, exc.reason)
        except Exception as exc:
            # Not expected; but a bug in here must cost one line, never the daemon.
            return LineError(
                self._source, lineno, f"internal error while reading ({type(exc).__name__})"
            )
        self._state = state
        return turns

    def _resolve(self, entry: _Entry, lineno: int) -> tuple[list[Turn], ReaderState]:
        previous = self._state
        state = previous
        if entry.starts_session is not None:
            state = replace(state, session=entry.starts_session)
        if entry.timestamp is not None:
            state = replace(state, last_timestamp=entry.timestamp.isoformat())
        if entry.role is None or not entry.text or self._sidechain:
            return [], state
        when = entry.timestamp or _from_state(previous.last_timestamp)
        if when is None:
            # Not stored in the state: a clock reading is no transcript time, and a later
            # line without a timestamp should get its own reading, not this one.
            when = _as_utc(self._fallback_time())
        turn = Turn(
            id=entry.turn_id or f"{self._stem}-L{lineno}",
            session=entry.session or state.session or self._default_session or self._stem,
            role=entry.role,
            content=entry.text,
            timestamp=when,
            speaker=entry.speaker,
            origin=f"{self._source}:{lineno}",
        )
        return [turn], state


# ---- decoding -------------------------------------------------------------------------------


def _decode(raw: bytes | str) -> str:
    if isinstance(raw, str):
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(f"unencodable character at position {exc.start}") from exc
    raw = raw.rstrip(b"\r\n")  # the line break is not part of the line, nor of its size
    if len(raw) > MAX_LINE_BYTES:
        raise InputError(f"line too long ({len(raw)} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte {exc.start}") from exc
    text = text.removeprefix("\ufeff")  # a byte order mark opens some files
    bad = _CONTROL.search(text)
    if bad is not None:
        raise InputError(
            f"control character U+{ord(bad.group()):04X} at column {bad.start() + 1} (binary data?)"
        )
    return text.strip()


# ---- format detection -----------------------------------------------------------------------


def _parse_line(line: str) -> _Entry:
    if not line:
        return _Entry()
    if line.startswith("{"):
        return _parse_object(_load_json(line))
    plain = _PLAIN.fullmatch(line)
    if plain is not None:
        bad = _PLAIN_CONTROL.search(line)
        if bad is not None:
            raise InputError(f"control character U+{ord(bad.group()):04X} in plain text")
        return _Entry(role=_ROLES[plain.group(1).casefold()], text=plain.group(2).strip())
    if line[0] in '["-0123456789tfn':
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            pass
        else:
            raise InputError(f"JSON {_json_kind(value)} is not an object")
    raise InputError(
        "not a transcript line: expected a JSON object or 'role: text'"
        " (role user, assistant, system, human or ai)"
    )


def _load_json(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    except RecursionError as exc:
        raise InputError("invalid JSON: nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"invalid JSON: {_brief(str(exc), 80)}") from exc
    if not isinstance(value, dict):
        raise InputError(f"JSON {_json_kind(value)} is not an object")
    return value


def _parse_object(obj: dict[str, Any]) -> _Entry:
    kind = obj.get("type")
    message = obj.get("message")
    has_role = "role" in obj
    if isinstance(message, dict):
        if kind == "message":
            return _openclaw_message(obj, message)
        if kind in ("user", "assistant"):
            return _claude_code(obj, message)
    if not has_role and isinstance(kind, str):
        if kind == "session":
            return _openclaw_header(obj)
        if kind in _OPENCLAW_BOOKKEEPING or kind in _CLAUDE_BOOKKEEPING:
            return _Entry()
        if "sessionId" in obj and kind not in ("message", "user", "assistant"):
            return _Entry()
    if has_role:
        return _generic(obj)
    if kind in ("message", "user", "assistant"):
        what = "missing" if message is None else f"not an object ({_json_kind(message)})"
        raise InputError(f"{kind!r} entry with 'message' {what}")
    if isinstance(kind, str):
        raise InputError(f"unknown entry type {_brief(kind)}")
    raise InputError("JSON object has neither 'role' nor a known 'type'")


def _generic(obj: dict[str, Any]) -> _Entry:
    role = _role(obj["role"])
    if "content" not in obj:
        raise InputError("missing 'content'")
    return _Entry(
        role=role,
        text=_text(obj["content"]),
        turn_id=_opt_str(obj, "id"),
        session=_opt_str(obj, "session"),
        timestamp=_first_time(obj.get("timestamp")),
        speaker=_opt_str(obj, "name"),
    )


def _openclaw_header(obj: dict[str, Any]) -> _Entry:
    return _Entry(starts_session=_opt_str(obj, "id"), timestamp=_first_time(obj.get("timestamp")))


def _openclaw_message(obj: dict[str, Any], message: dict[str, Any]) -> _Entry:
    if "role" not in message:
        raise InputError("message has no 'role'")
    role = _role(message["role"])
    # The entry's ISO time is the one OpenClaw writes reliably; message.timestamp (epoch ms)
    # is often 0 on user messages.
    when = _first_time(obj.get("timestamp"), message.get("timestamp"))
    text = _text(message.get("content"))
    speaker: str | None = None
    if role is Role.USER:
        provenance = message.get("provenance")
        kind = provenance.get("kind") if isinstance(provenance, dict) else None
        if kind is not None and kind != _EXTERNAL_USER:
            return _Entry(timestamp=when)
        inbound = openclaw_inbound(text)
        text, speaker = inbound.text, inbound.sender
        if inbound.sent_at is not None and (
            when is None or abs(inbound.sent_at - when) >= _SAME_MOMENT
        ):
            when = inbound.sent_at
    return _Entry(
        role=role, text=text, turn_id=_opt_str(obj, "id"), timestamp=when, speaker=speaker
    )


def _claude_code(obj: dict[str, Any], message: dict[str, Any]) -> _Entry:
    when = _first_time(obj.get("timestamp"))
    if any(obj.get(flag) is True for flag in _CLAUDE_NOT_SAID) or any(
        obj.get(field) is not None for field in _CLAUDE_TOOL_FIELDS
    ):
        return _Entry(timestamp=when)
    role = _role(message.get("role", obj["type"]))
    if role is Role.ASSISTANT and obj.get("isApiErrorMessage") is True:
        return _Entry(timestamp=when)  # an error notice the harness wrote, not a reply
    words = claude_code_words if role is Role.USER else None
    return _Entry(
        role=role,
        text=_text(message.get("content"), words),
        turn_id=_opt_str(obj, "uuid"),
        session=_opt_str(obj, "sessionId"),
        timestamp=when,
    )


# ---- fields ---------------------------------------------------------------------------------


def _role(value: object) -> Role | None:
    if not isinstance(value, str):
        raise InputError(f"'role' must be a string, not {_json_kind(value)}")
    key = value.strip().casefold()
    if key not in _ROLES:
        raise InputError(f"unknown role {_brief(value)}")
    return _ROLES[key]


def _text(content: object, words: Callable[[str], str] | None = None) -> str:
    """The said text of a message: a string, or the text blocks of a block list joined.

    ``words`` keeps what the person said of each text (see ``harness.py``).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        content = _clean(content).strip()
        return words(content) if words is not None else content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise InputError(f"'content' must be text or a list of blocks, not {_json_kind(content)}")
    # A block "type" can be any JSON value; an array or object is unhashable, so the
    # string check comes before the set lookup.
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and isinstance(block.get("type"), str)
        and block["type"] in _TEXT_BLOCKS
        and isinstance(block.get("text"), str)
    ]
    if words is not None:
        parts = [words(p) for p in parts]
    return _clean("\n".join(p.strip() for p in parts if p.strip()))


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    """An optional string field; numbers are accepted for ids, other types are an error."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, not {_json_kind(value)}")
    return _clean(value).strip() or None


def _first_time(*values: object) -> datetime | None:
    """The first usable timestamp among candidates, in order of preference.

    An absent value (None, "", 0) is skipped. A present value that is not a time is an error
    only if no other candidate works: a wrong time is worse than a reported line.
    """
    problem: str | None = None
    for value in values:
        try:
            when = _parse_time(value)
        except InputError as exc:
            problem = problem or exc.reason
            continue
        if when is not None:
            return when
    if problem is not None:
        raise InputError(problem)
    return None


def _parse_time(value: object) -> datetime | None:
    if value is None or value == "" or value == 0:  # False == 0 too: absent
        return None
    if isinstance(value, bool):
        raise InputError("invalid timestamp (a boolean)")
    if isinstance(value, int | float):
        return _from_epoch(value)
    if not isinstance(value, str):
        raise InputError(f"invalid timestamp ({_json_kind(value)})")
    text = value.strip()
    if _NUMBER.fullmatch(text):
        return _from_epoch(text)
    try:
        when = _as_utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError) as exc:
        raise InputError(f"invalid timestamp {_brief(value)}") from exc
    return _plausible(when, value)


def _from_epoch(value: int | float | str) -> datetime | None:
    try:
        seconds = float(value)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"invalid timestamp {_brief(value)}") from exc
    if seconds == 0:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        raise InputError(f"invalid timestamp {_brief(value)}")
    if seconds > _MS_THRESHOLD:
        seconds /= 1000
    try:
        when = datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise InputError(f"timestamp out of range {_brief(value)}") from exc
    return _plausible(when, value)


def _plausible(when: datetime, value: object) -> datetime:
    if not _EARLIEST <= when < _LATEST:
        raise InputError(f"timestamp out of range {_brief(value)}")
    return when


def _as_utc(when: datetime) -> datetime:
    """Naive times are taken as UTC; aware ones are converted."""
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def _from_state(iso: str | None) -> datetime | None:
    if iso is None:
        return None
    try:
        when = _as_utc(datetime.fromisoformat(iso))
    except (ValueError, OverflowError):
        return None  # a hand-edited cursor file: fall back to the clock
    return when if _EARLIEST <= when < _LATEST else None


def _clean(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _brief(value: object, limit: int = 40) -> str:
    """A short repr for error messages, whatever the size of the value."""
    try:
        text = repr(value[: limit + 1] if isinstance(value, str) else value)
    except ValueError:  # an integer too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
