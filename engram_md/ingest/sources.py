"""Where turns come from: stdin and transcript files, read line by line.

Lines are read as bytes with a hard size limit, so a 5 GB line without a newline costs a
bounded amount of memory; decoding and format detection happen in the transcript reader.
Files are tailed with per-file cursors (byte offset, line number, reader state) kept in
``state/cursors.json`` so a restart neither re-reads nor skips.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..core.models import Turn
from ..core.statefile import load_json, save_json
from .transcripts import MAX_LINE_BYTES as TRANSCRIPT_MAX_LINE_BYTES
from .transcripts import LineError, ReaderState, TranscriptReader, is_sidechain_file

log = logging.getLogger("engram_md.input")

# Lines longer than this are reported and skipped (the reader also refuses them).
MAX_LINE_BYTES = TRANSCRIPT_MAX_LINE_BYTES
_CHUNK = 1024 * 1024
# Files a watched folder contributes.
TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".txt", ".log")


def is_watched_transcript(path: Path) -> bool:
    """A file a watched folder contributes: a transcript by its suffix, not hidden, and not a
    subagent's transcript (nothing in one is read as a turn, so it is not read at all)."""
    return (
        path.suffix in TRANSCRIPT_SUFFIXES
        and not path.name.startswith(".")
        and not is_sidechain_file(path)
    )


@dataclass(frozen=True, slots=True)
class RawLine:
    lineno: int
    data: bytes | None  # None: longer than MAX_LINE_BYTES, skipped
    size: int
    end_offset: int


def read_lines(
    stream: BinaryIO, *, start_lineno: int = 0, start_offset: int = 0, partial_tail: bool = True
) -> Iterator[RawLine]:
    """Lines of a binary stream, each at most MAX_LINE_BYTES (longer ones come back as None).

    With ``partial_tail=False`` a last line without a newline is left unread (a file that is
    still being written); offsets let the caller resume exactly there.
    """
    lineno = start_lineno
    offset = start_offset
    while True:
        piece = stream.readline(MAX_LINE_BYTES + 1)
        if not piece:
            return
        if len(piece) > MAX_LINE_BYTES and not piece.endswith(b"\n"):
            # Too long: skip to the end of this line without keeping it.
            size = len(piece)
            while True:
                more = stream.readline(_CHUNK)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    break
            if not more and not partial_tail:
                return  # still being written: come back to the start of this line later
            lineno += 1
            offset += size
            yield RawLine(lineno, None, size, offset)
            continue
        if not piece.endswith(b"\n") and not partial_tail:
            return
        lineno += 1
        offset += len(piece)
        yield RawLine(lineno, piece.rstrip(b"\r\n"), len(piece), offset)


def decode_lines(
    reader: TranscriptReader, lines: Iterator[RawLine], on_error: Callable[[LineError], None]
) -> Iterator[tuple[RawLine, list[Turn]]]:
    """Feed raw lines to a transcript reader; report bad ones and keep going."""
    for raw in lines:
        if raw.data is None:
            on_error(LineError(reader.source, raw.lineno, f"line too long ({raw.size} bytes)"))
            yield raw, []
            continue
        result = reader.feed(raw.data, raw.lineno)
        if isinstance(result, LineError):
            on_error(result)
            yield raw, []
        else:
            yield raw, result


def report_line_error(err: LineError) -> None:
    log.warning("%s", err)


# ---------------------------------------------------------------- cursors


@dataclass
class Cursor:
    offset: int = 0
    lineno: int = 0
    inode: int = 0
    reader: dict[str, Any] | None = None


def _cursor_from(value: object) -> Cursor | None:
    """A saved cursor, or None when it is not the shape :meth:`CursorStore.save` writes."""
    if not isinstance(value, dict):
        return None
    offset, lineno, inode = (value.get(name, 0) for name in ("offset", "lineno", "inode"))
    for number in (offset, lineno, inode):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            return None
    reader = value.get("reader")
    return Cursor(offset, lineno, inode, reader if isinstance(reader, dict) else None)


class CursorStore:
    """Per-file read positions, saved atomically after each batch of lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = load_json(path, {})
        self._cursors: dict[str, Cursor] = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                cursor = _cursor_from(value)
                if cursor is None:
                    # Hand-edited or damaged: reading that file again from the start is safe,
                    # the journal recognizes turns it has already seen.
                    log.warning("%s: ignoring an unreadable cursor for %r", path, key)
                    continue
                self._cursors[key] = cursor

    def get(self, path: Path) -> Cursor:
        return self._cursors.get(str(path.resolve()), Cursor())

    def set(self, path: Path, cursor: Cursor) -> None:
        self._cursors[str(path.resolve())] = cursor

    def save(self) -> None:
        save_json(
            self.path,
            {
                key: {
                    "offset": c.offset,
                    "lineno": c.lineno,
                    "inode": c.inode,
                    "reader": c.reader or {},
                }
                for key, c in sorted(self._cursors.items())
            },
            fsync=False,
        )


class FileTail:
    """Reads what is new in one transcript file since its cursor."""

    def __init__(self, path: Path, cursors: CursorStore) -> None:
        self.path = path
        self.cursors = cursors

    def read_new(
        self, on_error: Callable[[LineError], None], *, final: bool = False
    ) -> Iterator[list[Turn]]:
        """Yield the turns of each new complete line; the cursor advances as lines are consumed.

        The caller must consume a line's turns (journal them) before asking for the next, so
        the cursor never runs ahead of what was received.
        """
        try:
            stat = self.path.stat()
        except OSError:
            return
        cursor = self.cursors.get(self.path)
        # A cursor past the end (a truncated file, or a damaged cursor file, whose inode may
        # be missing) or on another inode starts over; the journal skips what it has seen.
        if cursor.offset > stat.st_size or (cursor.inode and cursor.inode != stat.st_ino):
            log.info("%s was replaced or truncated; reading it from the start", self.path)
            cursor = Cursor()
        if stat.st_size == cursor.offset and cursor.inode == stat.st_ino:
            return
        state = ReaderState.from_dict(cursor.reader) if cursor.reader else None
        reader = TranscriptReader(str(self.path), state=state)
        try:
            handle = open(self.path, "rb")
        except OSError as exc:
            log.warning("%s: cannot open (%s)", self.path, exc.strerror)
            return
        with handle:
            handle.seek(cursor.offset)
            lines = read_lines(
                handle,
                start_lineno=cursor.lineno,
                start_offset=cursor.offset,
                partial_tail=final,
            )
            for raw, turns in decode_lines(reader, lines, on_error):
                yield turns
                cursor = Cursor(raw.end_offset, raw.lineno, stat.st_ino, reader.state.to_dict())
                self.cursors.set(self.path, cursor)
        self.cursors.set(
            self.path, Cursor(cursor.offset, cursor.lineno, stat.st_ino, cursor.reader)
        )
        self.cursors.save()


def expand_watch_paths(paths: list[Path]) -> list[Path]:
    """Files named directly, plus transcript files inside named folders (recursively)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and is_watched_transcript(p))
            )
        else:
            found.append(path)
    return found


def stdin_binary() -> BinaryIO:
    return os.fdopen(os.dup(0), "rb", buffering=1024 * 64)
