"""The turns said around a sentence, in the order of its said file.

In chat a thought is spread over several short messages, and the answer to a question is
often the message after the one that matches it ("why did you take the night shift?" matches
"took the night shift at the warehouse", and the answer is the next message, "rent went up
again"). Recall
lends a share of a strong sentence's score to the sentences of the turns just before and
after it (``FusionWeights.context_share``); this module says which turns those are.

The order is read from the said file itself (``memory/said/…``, one line per turn in the
order said), the truth the index is built from: turns of one session carry the same time
when a transcript gives only a date, so the index's times cannot order them. A file's order
is kept while its modification time is unchanged; the files most recently asked about are
kept, the rest read again when needed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from ..core.errors import MemoryFileError
from ..store.said import is_said_rel, read_said

# Said files whose order is kept between queries: a file of a day's turns is a few KB of ids.
FILES_KEPT = 256


class SaidOrder:
    """The order of the turns of each said file of one memory folder. Safe to share between
    threads."""

    def __init__(self, memory_dir: Path, files_kept: int = FILES_KEPT) -> None:
        self.memory_dir = memory_dir
        self.files_kept = files_kept
        self._orders: OrderedDict[str, tuple[int, tuple[str, ...], dict[str, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def around(self, rel_path: str, turn_id: str, reach: int) -> tuple[str, ...]:
        """The ids of the turns within ``reach`` lines of ``turn_id`` in the said file at
        ``rel_path`` (relative to the memory folder), nearest first, the turn itself left
        out; none when the file or the turn is not there."""
        # (The path comes from the index; one that would leave said/ is read from nowhere.)
        if reach <= 0 or not is_said_rel(rel_path) or ".." in Path(rel_path).parts:
            return ()
        found = self._order(rel_path)
        if found is None:
            return ()
        ids, position = found
        at = position.get(turn_id)
        if at is None:
            return ()
        out: list[str] = []
        for distance in range(1, reach + 1):
            for near in (at - distance, at + distance):
                if 0 <= near < len(ids):
                    out.append(ids[near])
        return tuple(out)

    def _order(self, rel_path: str) -> tuple[tuple[str, ...], dict[str, int]] | None:
        path = self.memory_dir / rel_path
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return None  # deleted since it was indexed: nothing around it to show
        with self._lock:
            kept = self._orders.get(rel_path)
            if kept is not None and kept[0] == mtime:
                self._orders.move_to_end(rel_path)
                return kept[1], kept[2]
        try:
            turns = read_said(path)
        except (OSError, MemoryFileError):
            return None  # reported by the reconcile that indexes it; recall goes on without
        ids = tuple(turn.id for turn in turns)
        # A turn listed twice (a line copied by hand) keeps its first place.
        position: dict[str, int] = {}
        for number, turn_id in enumerate(ids):
            position.setdefault(turn_id, number)
        with self._lock:
            self._orders[rel_path] = (mtime, ids, position)
            self._orders.move_to_end(rel_path)
            while len(self._orders) > self.files_kept:
                self._orders.popitem(last=False)
        return ids, position
