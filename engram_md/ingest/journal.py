"""The durable buffer journal: a turn counts as received only once it is on disk here.

``state/buffer-journal.jsonl`` is append-only while the daemon runs:

    {"op": "turn", "key": ..., "turn": {...}}     a sanitized turn, received
    {"op": "done", "keys": [...]}                 those turns' memories are written
    {"op": "seen", "digests": "..."}              (after compaction) turns already done

At start the journal is replayed: turns without a ``done`` are pending and go back into the
buffer; every turn ever journaled is "seen", so the same input fed again after a restart is
not processed twice. A torn last line (kill -9 mid-write) is ignored. Compaction rewrites the
file atomically as one ``seen`` record (the 16-byte digests of every done turn key, sorted,
concatenated, base64; see seen_set.py) plus the pending turns. A ``seen`` record with
``"keys"`` (the turn keys themselves, written before digests) is still read. Forget compacts
it too (:func:`compact_journal`), so the text of turns already turned into memories leaves
the disk.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import xxhash

from ..core.atomic import atomic_write_text
from ..core.crashpoints import crashpoint
from ..core.models import Role, Turn
from .seen_set import SeenSet, decode, encode, key_digest

log = logging.getLogger(__name__)

COMPACT_AFTER_RECORDS = 5000


def turn_key(turn: Turn) -> str:
    """Identity across restarts: session, id and a hash of what was said.

    The content hash keeps two different inputs whose ids were derived from line numbers
    (``stdin-L3``) from being mistaken for each other.
    """
    digest = xxhash.xxh64_hexdigest(f"{turn.role}\x1f{turn.content}".encode())[:8]
    return f"{turn.session}\x1f{turn.id}\x1f{digest}"


def turn_to_dict(turn: Turn) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": turn.id,
        "session": turn.session,
        "role": turn.role.value,
        "content": turn.content,
        "timestamp": turn.timestamp.isoformat(),
    }
    if turn.speaker:
        data["speaker"] = turn.speaker
    if turn.origin:
        data["origin"] = turn.origin
    return data


def turn_from_dict(data: dict[str, Any]) -> Turn:
    return Turn(
        id=str(data["id"]),
        session=str(data["session"]),
        role=Role(data["role"]),
        content=str(data["content"]),
        timestamp=datetime.fromisoformat(data["timestamp"]),
        speaker=data.get("speaker"),
        origin=data.get("origin", ""),
    )


class Journal:
    def __init__(self, path: Path, *, fsync_each: bool = True) -> None:
        self.path = path
        self.fsync_each = fsync_each
        self._pending: dict[str, Turn] = {}  # insertion order = arrival order
        self._done = SeenSet()  # turns whose memories are written (pending ones are not)
        self._records = 0
        self._fd: int | None = None

    # ------------------------------------------------------------ open / replay
    def open(self) -> list[Turn]:
        """Replay the journal; returns the pending turns in arrival order."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = 0
        if self.path.exists():
            with open(self.path, "rb") as handle:
                for raw in handle:
                    try:
                        record = json.loads(raw)
                        self._apply(record)
                    except (ValueError, KeyError, TypeError):
                        torn += 1
                        continue
                    self._records += 1
        if torn:
            log.warning("journal %s: skipped %d unreadable record(s)", self.path, torn)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # A write cut short by a crash leaves no final newline: start the next record on a
        # fresh line, or it would be glued to (and lost with) the torn one.
        if not _ends_with_newline(self.path):
            os.write(self._fd, b"\n")
        return list(self._pending.values())

    def _apply(self, record: dict[str, Any]) -> None:
        op = record["op"]
        if op == "turn":
            key = record["key"]
            turn = turn_from_dict(record["turn"])
            if key_digest(key) not in self._done:
                self._pending[key] = turn
        elif op == "done":
            for key in record["keys"]:
                self._pending.pop(key, None)
                self._done.add(key_digest(key))
        elif op == "seen":
            if "digests" in record:
                self._done.add_packed(decode(record["digests"]))
            else:
                for key in record["keys"]:
                    self._done.add(key_digest(key))
        else:
            raise KeyError(op)

    # ------------------------------------------------------------ writes
    def seen(self, turn: Turn) -> bool:
        return self._seen_key(turn_key(turn))

    def _seen_key(self, key: str) -> bool:
        return key in self._pending or key_digest(key) in self._done

    def append(self, turn: Turn) -> bool:
        """Journal a turn. False when it was already received (a replayed input)."""
        key = turn_key(turn)
        if self._seen_key(key):
            return False
        self._write({"op": "turn", "key": key, "turn": turn_to_dict(turn)}, self.fsync_each)
        self._pending[key] = turn
        return True

    def mark_done(self, turns: Iterable[Turn]) -> None:
        keys = [turn_key(t) for t in turns]
        keys = [k for k in keys if k in self._pending]
        if not keys:
            return
        self._write({"op": "done", "keys": keys}, True)
        for key in keys:
            self._pending.pop(key, None)
            self._done.add(key_digest(key))
        if self._records > COMPACT_AFTER_RECORDS:
            self.compact()

    def sync(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def _write(self, record: dict[str, Any], fsync: bool) -> None:
        if self._fd is None:
            raise RuntimeError("journal is not open")
        crashpoint("journal.append")
        os.write(self._fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        if fsync:
            os.fsync(self._fd)
        self._records += 1

    def compact(self) -> None:
        """Rewrite as one ``seen`` record plus the pending turns (atomic)."""
        lines = [json.dumps({"op": "seen", "digests": encode(self._done.packed())})]
        lines += [
            json.dumps({"op": "turn", "key": k, "turn": turn_to_dict(t)}, ensure_ascii=False)
            for k, t in self._pending.items()
        ]
        atomic_write_text(self.path, "\n".join(lines) + "\n")
        if self._fd is not None:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._records = len(lines)

    def scrub_pending(self, scrub: Callable[[str], str]) -> None:
        """Apply ``scrub`` to the text of the pending turns, in memory; :meth:`compact`
        writes them. The keys stay those the turns were received under."""
        for key, turn in self._pending.items():
            text = scrub(turn.content)
            if text != turn.content:
                self._pending[key] = replace(turn, content=text)

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------ reads
    @property
    def pending(self) -> list[Turn]:
        return list(self._pending.values())

    @property
    def seen_count(self) -> int:
        return len(self._done) + len(self._pending)


def compact_journal(
    path: Path,
    finish: Collection[tuple[str, str]] = (),
    *,
    scrub: Callable[[str], str] | None = None,
) -> list[Turn]:
    """Compact the journal at ``path`` (when there is one), from outside the daemon: only
    digests of done turns and the pending turns are left. Pending turns named in ``finish``
    ((session, turn id): a forgotten fact's sources, journaled by a batch that crashed before
    it was marked done) are marked done first, or a restart would extract them again and
    write the fact back. ``scrub`` rewrites the text of the pending turns (doctor --secrets
    redacting what an older sanitizer let through); their keys stay, so each turn keeps its
    identity. Returns the finished turns."""
    if not path.exists():
        return []
    journal = Journal(path, fsync_each=False)
    journal.open()
    try:
        finished = [t for t in journal.pending if (t.session, t.id) in finish]
        journal.mark_done(finished)
        if scrub is not None:
            journal.scrub_pending(scrub)
        journal.compact()
    finally:
        journal.close()
    return finished


def pending_count(path: Path) -> int:
    """Depth of the buffer without opening the journal for writing (for `status`)."""
    if not path.exists():
        return 0
    pending: dict[str, bool] = {}
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                record = json.loads(raw)
                if record["op"] == "turn":
                    pending[record["key"]] = True
                elif record["op"] == "done":
                    for key in record["keys"]:
                        pending.pop(key, None)
            except (ValueError, KeyError, TypeError):
                continue
    return len(pending)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
