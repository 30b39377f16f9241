"""How each memory is used and rated, kept in state/: never in the markdown.

``state/access.jsonl`` holds two kinds of lines:

* one **standing** per fact, written by consolidation: ``{"id", "accessCount", "firstEpoch",
  "lifecycleState", "heatScore", "decayScore", "tier"}`` (unset keys left out): the recalls
  folded in so far, the consolidation epoch the fact was first seen in, and how the last run
  rated it (:class:`Standing`);
* one ``{"at", "ids"}`` line per recall, appended after them.

A recall only appends a line (atomic on a local filesystem), so a daemon and an in-process
`recall` both record without a lock, and no recall ever changes a file under ``memory/``.
Consolidation rewrites the file in one atomic replace (:meth:`AccessLog.fold`): the new
standings, the recalls it read folded into them, then the recall lines appended since it read.
Folding and dropping the folded lines being one replace, a run killed before or after it
counts every recall exactly once. Forget drops the ids it forgets (:meth:`AccessLog.drop_ids`).

Everything here but the counts can be recomputed by the next consolidation (a lost file
restarts the counts, and the decay clock at the current epoch).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write_bytes
from ..core.models import LifecycleState

log = logging.getLogger(__name__)

# Seed 000: each recall lifts a memory's importance a little ("use it or lose it").
ACTIVATION_BOOST = 0.03

TIERS = frozenset({"hot", "cold"})


@dataclass(frozen=True, slots=True)
class Standing:
    """What engram-md keeps about one fact beyond its file."""

    accesses: int = 0  # recalls folded in by consolidation
    first_epoch: int | None = None  # the consolidation epoch it was first seen in
    lifecycle: LifecycleState | None = None  # None: never rated, a candidate
    heat: float | None = None
    decay: float | None = None
    tier: str | None = None  # "hot" | "cold"


@dataclass(frozen=True)
class Usage:
    """The file as read: every fact's standing and the recalls logged since the last fold."""

    standings: Mapping[str, Standing] = field(default_factory=dict)
    recent: Counter[str] = field(default_factory=Counter)
    length: int = 0  # bytes of whole lines read: what a fold of this reading replaces

    def accesses(self, fact_id: str) -> int:
        """Every recall of a fact: folded in, and logged since."""
        standing = self.standings.get(fact_id)
        return (standing.accesses if standing is not None else 0) + self.recent.get(fact_id, 0)


class AccessLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._usage: Usage | None = None
        self._stamp: tuple[int, int, int] | None = None

    def record(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        line = json.dumps({"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "ids": ids})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("cannot record recall access in %s (%s)", self.path, exc)
            return
        if self._usage is not None:
            self._usage.recent.update(ids)
            self._stamp = self._file_stamp()

    def usage(self) -> Usage:
        """The file as read, read again only when it changed (another process wrote)."""
        stamp = self._file_stamp()
        if self._usage is None or stamp != self._stamp:
            self._usage = self.read()
            self._stamp = stamp
        return self._usage

    def read(self) -> Usage:
        """Standings and recall counts from the file, and the byte length they were read from.

        Only whole lines count (a line without its newline is an append cut short, or one
        still being written); the length lets consolidation replace exactly what it read
        while recalls keep appending. A line that is neither kind (a torn line after a crash)
        is skipped; for a fact named twice, the last standing wins.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return Usage()
        end = data.rfind(b"\n") + 1
        standings: dict[str, bytes] = {}
        recent: Counter[str] = Counter()
        for raw in data[:end].splitlines():
            fact_id = _leading_id(raw)
            if fact_id is not None:
                standings[fact_id] = raw
                continue
            record = _json(raw)
            if not isinstance(record, dict):
                continue
            ids = record.get("ids")
            if isinstance(ids, list):
                recent.update(str(i) for i in ids)
            elif isinstance(record.get("id"), str):
                standings[record["id"]] = raw
        return Usage(_Standings(standings), recent, end)

    def read_counts(self) -> tuple[Counter[str], int]:
        """Recalls logged since the last fold, and the byte length they were read from."""
        usage = self.read()
        return usage.recent, usage.length

    def fold(self, standings: Mapping[str, Standing], length: int) -> None:
        """Replace the first ``length`` bytes (standings and recalls a consolidation read) with
        ``standings`` (those recalls folded in), keeping the recall lines appended since."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        head = b"".join(_standing_line(i, standings[i]) for i in sorted(standings))
        self._replace(head + data[length:])

    def drop_ids(self, ids: set[str]) -> int:
        """Remove ``ids`` from every record and their standings; returns how many mentions
        were removed. A recall record left with no id goes; a line that is neither kind (a
        torn line) is kept as it is.

        Recall appends without a lock; an append that lands between this read and the
        replace is lost. That costs at most one recall's access counts, never a memory.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        hits = 0
        lines: list[bytes] = []
        for line in raw.splitlines():
            data = _json(line)
            if isinstance(data, dict) and isinstance(data.get("ids"), list):
                named = [str(i) for i in data["ids"]]
                kept = [i for i in named if i not in ids]
                hits += len(named) - len(kept)
                if len(kept) == len(named):
                    lines.append(line)
                elif kept:
                    data["ids"] = kept
                    lines.append(json.dumps(data).encode())
            elif isinstance(data, dict) and data.get("id") in ids:
                hits += 1  # the standing of a forgotten fact
            else:
                lines.append(line)  # not ours to judge (a torn line: doctor's business)
        if hits:
            self._replace(b"\n".join(lines) + (b"\n" if lines else b""))
        return hits

    def _replace(self, data: bytes) -> None:
        atomic_write_bytes(self.path, data)
        self._usage = None  # read again on the next use

    def _file_stamp(self) -> tuple[int, int, int]:
        # The inode too: a fold replaces the file, possibly with one of the same size.
        try:
            st = self.path.stat()
        except OSError:
            return (0, 0, 0)
        return (st.st_ino, st.st_size, st.st_mtime_ns)


# ---------------------------------------------------------------- the standing line


class _Standings(Mapping[str, Standing]):
    """Standings by fact id, each line parsed when first asked for: a recall asks for the few
    hundred facts it scores, and parsing every line of a 10k-fact folder took 65 ms, more than
    the search itself; finding the ids takes 6 ms."""

    def __init__(self, lines: dict[str, bytes]) -> None:
        self._lines = lines
        self._parsed: dict[str, Standing] = {}

    def __getitem__(self, fact_id: str) -> Standing:
        found = self._parsed.get(fact_id)
        if found is None:
            record = _json(self._lines[fact_id])
            found = read_standing(record)[0] if isinstance(record, dict) else Standing()
            self._parsed[fact_id] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


_ID_PREFIX = b'{"id": "'


def _leading_id(line: bytes) -> str | None:
    """The fact id of a standing line as we write it (the id first, plainly), else None."""
    if not line.startswith(_ID_PREFIX):
        return None
    end = line.find(b'"', len(_ID_PREFIX))
    text = line[len(_ID_PREFIX) : end]
    if end < 0 or b"\\" in text:
        return None  # an escaped id: read the line whole
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


# A standing's keys in this file: the names older versions used for them in frontmatter.
STANDING_KEYS = ("accessCount", "firstEpoch", "lifecycleState", "heatScore", "decayScore", "tier")


def _standing_line(fact_id: str, standing: Standing) -> bytes:
    values = (
        standing.accesses or None,
        standing.first_epoch,
        None if standing.lifecycle is None else standing.lifecycle.value,
        standing.heat,
        standing.decay,
        standing.tier,
    )
    record = {"id": fact_id} | {
        k: v for k, v in zip(STANDING_KEYS, values, strict=True) if v is not None
    }
    return json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"


def read_standing(values: Mapping[str, Any]) -> tuple[Standing, tuple[str, ...]]:
    """A standing from a mapping with :data:`STANDING_KEYS` (a line of this file, or the
    frontmatter of a fact an older version wrote), and the keys that held a value as we write
    it. Lenient: any other value is left unset (in frontmatter, it is a person's key)."""
    read = (
        _count(values.get("accessCount")),
        _count(values.get("firstEpoch")),
        _lifecycle(values.get("lifecycleState")),
        _score(values.get("heatScore")),
        _score(values.get("decayScore")),
        _tier(values.get("tier")),
    )
    accesses, first_epoch, lifecycle, heat, decay, tier = read
    keys = tuple(key for key, value in zip(STANDING_KEYS, read, strict=True) if value is not None)
    return Standing(accesses or 0, first_epoch, lifecycle, heat, decay, tier), keys


def _count(value: Any) -> int | None:
    """A non-negative whole number, or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _score(value: Any) -> float | None:
    """A score in [0, 1], or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


def _lifecycle(value: Any) -> LifecycleState | None:
    try:
        return LifecycleState(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _tier(value: Any) -> str | None:
    return value if isinstance(value, str) and value in TIERS else None
