"""``state/read-cache.json``: what every fact file said when consolidation last read it, so
the next run parses only the files whose bytes changed.

Reading a fact file is mostly parsing and checking its YAML (~0.2 ms a file); a quiet folder
of 100k facts spent two thirds of its repeat run on it. The cache holds, for each file (by its
path under ``memory/``), a 64-bit xxh3 of its bytes and its frontmatter fields as parsed. A run
still reads every file, but a file whose bytes hash to what the cache holds for its path takes
its fields from the cache and its statement from its own bytes, split as a full read splits
them: no YAML, no validation. Anything else (a new or edited file, a different hash, an
unreadable cache) is parsed in full, so the cache can make a run faster, never different.

What is left out, so it is always parsed: a note a person wrote (its missing keys come from
its place and its file time, not from its bytes) and a file with keys engram-md does not know.
The cache holds no statement; ``forget`` and ``doctor --secrets --repair`` delete it all the
same, as it names entities and tags. It is tied to the code that parses: a hash of the
modules that read a fact file, so another version of engram-md never trusts this one's
reading. Only a real consolidation run writes it (a dry run writes nothing in ``state/``).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import xxhash

from ..core import folder, models
from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.folder import read_file
from ..core.models import (
    Category,
    ConfidenceTier,
    Fact,
    MemoryKind,
    PolicyClass,
    Source,
    Status,
    StatusChange,
    VerificationState,
)
from ..extract import normalize
from ..text import hashing
from ..text.hashing import content_hash
from . import factfile, links

log = logging.getLogger(__name__)

FORMAT = 1
FILE_NAME = "read-cache.json"

# One entry: the digest of the file's bytes, then its fields in the order :func:`encode`
# writes them. The statement is not there.
Entry = list[Any]


@cache
def code_stamp() -> str:
    """A hash of the source of every module that turns a file's bytes into a Fact or an
    entry, and of the versions of Python and of the libraries they parse with."""
    h = xxhash.xxh3_64()
    for module in (factfile, links, models, folder, normalize, hashing, sys.modules[__name__]):
        h.update(Path(module.__file__ or "").read_bytes())
    h.update(sys.version.encode())
    for library in ("pyyaml", "pydantic", "python-frontmatter", "regex"):
        h.update(version(library).encode())
    return h.hexdigest()


def cacheable(fact: Fact) -> bool:
    """Whether ``fact`` is read from its bytes alone: written whole by engram-md."""
    return fact.hand is None and not fact.extra


# ---------------------------------------------------------------- Fact <-> entry


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def encode(fact: Fact, file_digest: int) -> Entry:
    """The cache's entry for ``fact`` as read from bytes with ``file_digest``."""
    return [
        file_digest,
        fact.id,
        fact.category.value,
        _time(fact.created),
        _time(fact.updated),
        fact.source.value,
        fact.confidence,
        fact.confidence_tier.value,
        fact.importance,
        fact.memory_kind.value,
        fact.session,
        list(fact.source_turn_ids),
        fact.status.value,
        fact.verification_state.value,
        fact.policy_class.value,
        list(fact.tags),
        list(fact.entities),
        fact.box_id,
        _time(fact.expires_at),
        _time(fact.valid_at),
        fact.confirmations,
        _time(fact.last_confirmed),
        list(fact.supersedes),
        fact.superseded_by,
        list(fact.merged_from),
        [
            [_time(h.at), h.from_status.value, h.to_status.value, h.reason, h.by]
            for h in fact.status_history
        ],
    ]


def _members(kind: type[Any]) -> dict[str, Any]:
    return {member.value: member for member in kind}


# Enum members by value: a dict lookup is several times cheaper than calling the enum.
_CATEGORY = _members(Category)
_SOURCE = _members(Source)
_TIER = _members(ConfidenceTier)
_KIND = _members(MemoryKind)
_STATUS = _members(Status)
_VERIFICATION = _members(VerificationState)
_POLICY = _members(PolicyClass)


def decode(entry: Entry, content: str) -> Fact:
    """The Fact of ``entry`` with its statement ``content``. Raises on a malformed entry."""
    (
        _, fact_id, category, created, updated, source, confidence, tier, importance, kind,
        session, turns, status, verification, policy, tags, entities, box_id, expires, valid,
        confirmations, last_confirmed, supersedes, superseded_by, merged_from, history,
    ) = entry  # fmt: skip
    created_at = _parse_time(created)
    updated_at = _parse_time(updated)
    if created_at is None or updated_at is None:
        raise ValueError("an entry without its times")
    return Fact(
        id=str(fact_id),
        category=_CATEGORY[category],
        created=created_at,
        updated=updated_at,
        source=_SOURCE[source],
        confidence=float(confidence),
        confidence_tier=_TIER[tier],
        importance=float(importance),
        memory_kind=_KIND[kind],
        content=content,
        session=str(session),
        source_turn_ids=tuple(turns),
        status=_STATUS[status],
        verification_state=_VERIFICATION[verification],
        policy_class=_POLICY[policy],
        tags=tuple(tags),
        entities=tuple(entities),
        box_id=box_id,
        expires_at=_parse_time(expires),
        valid_at=_parse_time(valid),
        confirmations=int(confirmations),
        last_confirmed=_parse_time(last_confirmed),
        supersedes=tuple(supersedes),
        superseded_by=superseded_by,
        merged_from=tuple(merged_from),
        status_history=tuple(
            StatusChange(_parse_time(at) or created_at, _STATUS[old], _STATUS[new], reason, by)
            for at, old, new, reason, by in history
        ),
        content_hash=content_hash(content),
    )


# ---------------------------------------------------------------- reading


def recognized(path: Path, known: int) -> str | None:
    """The statement of the file at ``path`` when its bytes hash to ``known``; None when they
    do not, or it cannot be read (:func:`.factfile.read_facts` then says why)."""
    try:
        raw = read_file(path)
    except (MemoryFileError, OSError):
        return None
    if factfile.file_digest(raw) != known:
        return None
    return factfile.statement_of_bytes(raw)


# ---------------------------------------------------------------- the file


class ReadCache:
    """The cache as loaded: each file's entry by its path under ``memory/``."""

    def __init__(self, path: Path, memory_dir: Path, entries: dict[str, Entry]) -> None:
        self.path = path
        self._prefix = str(memory_dir) + "/"
        self.entries = entries  # as loaded: what the last run left
        self._now: dict[str, Entry] = {}  # what this run read and wrote, saved at its end

    @classmethod
    def load(cls, state_dir: Path, memory_dir: Path) -> ReadCache:
        """The cache in ``state_dir``; empty when missing, unreadable, of another format or
        written by other code."""
        path = state_dir / FILE_NAME
        entries: dict[str, Entry] = {}
        try:
            data = json.loads(path.read_bytes())
            if (
                isinstance(data, dict)
                and data.get("format") == FORMAT
                and data.get("code") == code_stamp()
                and isinstance(data.get("files"), dict)
            ):
                entries = data["files"]
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.warning("%s is unreadable (%s); every fact file is parsed", path, exc)
        return cls(path, memory_dir, entries)

    def key(self, path: Path) -> str:
        text = str(path)
        return text[len(self._prefix) :] if text.startswith(self._prefix) else text

    def digest_of(self, path: Path) -> int | None:
        entry = self.entries.get(self.key(path))
        if isinstance(entry, list) and entry and isinstance(entry[0], int):
            return int(entry[0])
        return None

    def known(self, path: Path, content: str) -> Fact | None:
        """The fact of a file :func:`recognized` (its statement ``content``), noted as read;
        None if its entry is malformed (the caller parses the file in full)."""
        key = self.key(path)
        try:
            entry = self.entries[key]
            fact = decode(entry, content)
        except (KeyError, ValueError, TypeError) as exc:
            log.debug("read cache entry of %s unusable: %s", path, exc)
            return None
        self._now[key] = entry
        return fact

    def read(self, path: Path, fact: Fact, file_digest: int) -> None:
        """Note a file as this run read it (or wrote it: ``fact`` as its bytes parse)."""
        if cacheable(fact):
            self._now[self.key(path)] = encode(fact, file_digest)
        else:
            self._now.pop(self.key(path), None)

    def gone(self, path: Path) -> None:
        """Note a file this run moved away."""
        self._now.pop(self.key(path), None)

    def save(self, *, fsync: bool) -> None:
        """Replace the file with what this run read and wrote (:meth:`read`)."""
        data = {"format": FORMAT, "code": code_stamp(), "files": self._now}
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        atomic_write_text(self.path, text, fsync=fsync)


def discard(state_dir: Path) -> bool:
    """Delete the cache (a command takes words out of the folder); whether there was one."""
    try:
        (state_dir / FILE_NAME).unlink()
    except FileNotFoundError:
        return False
    return True


def render_for_cache(items: list[tuple[Fact, Path]]) -> list[tuple[str, tuple[Fact, int] | None]]:
    """Each fact rendered for its path (:func:`.factfile.render_fact`) and, when the cache
    may hold it, the fact as a later read of those bytes will parse it, with their digest:
    times are written to the second, so the fact in hand is not always the one read back.
    For a worker process."""
    out: list[tuple[str, tuple[Fact, int] | None]] = []
    for fact, path in items:
        text = factfile.render_fact(fact, path)
        read_back: tuple[Fact, int] | None = None
        if cacheable(fact):
            raw = text.encode("utf-8")
            try:
                read_back = (factfile.parse_bytes(raw, path), factfile.file_digest(raw))
            except MemoryFileError:
                read_back = None
        out.append((text, read_back))
    return out
