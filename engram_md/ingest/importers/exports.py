"""What a chat export is once read: conversations of turns, and reading one from disk.

An export is a ``.zip`` holding ``conversations.json`` (and, from Claude.ai, ``users.json``)
or that JSON file itself. Its top level is one JSON array of conversations, hundreds of
megabytes for a long-time user: it is read one conversation at a time
(:func:`iter_array`), so memory holds one conversation, never the whole export.
"""

from __future__ import annotations

import codecs
import json
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ...core.errors import InputError
from ...core.models import Role, Turn

CONVERSATIONS = "conversations.json"
# Bytes read at a time; a conversation longer than this is read on until it is whole.
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of an export: the turns that were said, in order, and how many
    messages of each kind were left out (``other_branch``, ``hidden``, ``tool``, …)."""

    id: str
    title: str
    turns: tuple[Turn, ...]
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class Malformed:
    """A conversation that is not in the export's shape: reported by its id and skipped."""

    id: str
    reason: str


class Reading:
    """One conversation's turns as its messages are read, and what was left out."""

    def __init__(self, session: str, origin: str, start: datetime | None) -> None:
        self.session = session
        self.origin = origin
        self.last = start  # a message without a time takes the one before it
        self.turns: list[Turn] = []
        self.skipped: Counter[str] = Counter()

    def add(
        self, turn_id: str, role: Role, text: str, at: datetime | None, speaker: str | None = None
    ) -> None:
        if not text.strip():
            self.skipped["empty"] += 1
            return
        self.last = at or self.last
        if self.last is None:
            raise BadShape(f"message {turn_id} has no time, nor has the conversation")
        turn = Turn(turn_id, self.session, role, text, self.last, speaker, self.origin)
        self.turns.append(turn)

    def done(self, conv_id: str, title: str) -> Conversation:
        return Conversation(conv_id, title, tuple(self.turns), +self.skipped)


class BadShape(ValueError):
    """Raised while reading one conversation: it becomes a :class:`Malformed`."""


Item = Conversation | Malformed


@dataclass
class ExportSource:
    """An opened export: its conversations as a byte stream, their size and how far the
    reading got (for a progress bar), and its other small files by name."""

    stream: IO[bytes]
    size: int
    files: Callable[[str], bytes | None]
    read: int = 0

    def conversations(self) -> Iterator[dict[str, Any] | Malformed]:
        """Each element of the top-level array: a mapping, or a Malformed saying why not."""
        for index, value in enumerate(iter_array(self.stream, self._count)):
            if isinstance(value, dict):
                yield value
            else:
                yield Malformed(f"#{index + 1}", f"not a conversation ({type(value).__name__})")

    def _count(self, n: int) -> None:
        self.read += n

    def json_file(self, name: str) -> Any:
        """A small JSON file of the export (``users.json``), None when absent or unreadable."""
        raw = self.files(name)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None


@contextmanager
def open_export(path: Path) -> Iterator[ExportSource]:
    """Open an export: a zip with a ``conversations.json`` anywhere in it, or the JSON file
    (its sibling files are read from its folder)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = {PurePosixPath(info.filename).name: info for info in archive.infolist()}
            info = names.get(CONVERSATIONS)
            if info is None:
                raise InputError(f"no {CONVERSATIONS} in the archive", source=str(path))

            def member(name: str) -> bytes | None:
                found = names.get(name)
                return archive.read(found) if found is not None else None

            with archive.open(info) as stream:
                yield ExportSource(stream, info.file_size, member)
        return

    def sibling(name: str) -> bytes | None:
        try:
            return (path.parent / name).read_bytes()
        except OSError:
            return None

    with open(path, "rb") as stream:
        yield ExportSource(stream, path.stat().st_size, sibling)


def iter_array(stream: IO[bytes], counted: Callable[[int], None] = lambda n: None) -> Iterator[Any]:
    """The elements of the JSON array ``stream`` holds, decoded one at a time.

    ``counted`` hears how many bytes each read took (progress). A file that is not a JSON
    array raises :class:`InputError` with the position.
    """
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = ""
    pos = 0
    eof = False
    consumed = 0  # characters of the stream before ``text``

    def more() -> bool:
        nonlocal text, pos, eof, consumed
        if eof:
            return False
        try:
            raw = stream.read(CHUNK_BYTES)
        except (zipfile.BadZipFile, EOFError) as exc:  # a damaged or cut-off archive
            raise InputError(f"the archive cannot be read: {exc}") from exc
        counted(len(raw))
        eof = not raw
        consumed += pos
        text = text[pos:] + utf8.decode(raw, final=eof)
        pos = 0
        return True

    def skip_blank() -> None:
        nonlocal pos
        while True:
            while pos < len(text) and text[pos] in " \t\r\n\ufeff":
                pos += 1
            if pos < len(text) or not more():
                return

    skip_blank()
    if pos >= len(text) or text[pos] != "[":
        raise InputError("not a JSON array of conversations")
    pos += 1
    skip_blank()
    if text.startswith("]", pos):
        return
    while True:
        while True:
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                if more():
                    continue  # the element goes on past what is read so far
                where = consumed + exc.pos
                raise InputError(f"not valid JSON at character {where}: {exc.msg}") from None
            # A number or word cut at the chunk's end decodes early: read on until it stops.
            if end >= len(text) and not eof and more():
                continue
            break
        pos = end
        yield value
        skip_blank()
        if pos >= len(text):
            raise InputError("the JSON array ends early (a cut-off download?)")
        if text[pos] == "]":
            return
        if text[pos] != ",":
            where = consumed + pos
            raise InputError(f"not valid JSON at character {where}: expected ',' or ']'")
        pos += 1
        skip_blank()


# What reading a conversation of the wrong shape raises: it is reported and skipped.
_SHAPE_ERRORS = (BadShape, KeyError, TypeError, AttributeError, ValueError, OverflowError)


def each_conversation(
    source: ExportSource,
    read_one: Callable[[dict[str, Any]], Conversation],
    id_keys: tuple[str, ...],
) -> Iterator[Item]:
    """``read_one`` over every conversation of ``source``; one not in the export's shape
    becomes a :class:`Malformed` named by the first of ``id_keys`` it has."""
    for raw in source.conversations():
        if isinstance(raw, Malformed):
            yield raw
            continue
        try:
            yield read_one(raw)
        except _SHAPE_ERRORS as exc:
            conv_id = next((text_of(raw.get(k)) for k in id_keys if text_of(raw.get(k))), "")
            yield Malformed(conv_id or "(no id)", _reason(exc))


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"a message lacks {exc.args[0]!r}"
    if isinstance(exc, TypeError | AttributeError):
        return "a message is not in the export's shape"
    return str(exc) or type(exc).__name__


def text_of(value: Any) -> str:
    """A string field, or "" for anything else."""
    return value if isinstance(value, str) else ""


def active_path(parents: Mapping[str, str | None], leaf: str) -> list[str]:
    """The ids from the root down to ``leaf`` through ``parents``: the branch that was
    kept. A cycle or a missing parent ends the walk (the part read is the branch)."""
    path: list[str] = []
    seen: set[str] = set()
    node: str | None = leaf
    while node is not None and node in parents and node not in seen:
        seen.add(node)
        path.append(node)
        node = parents[node]
    path.reverse()
    return path
