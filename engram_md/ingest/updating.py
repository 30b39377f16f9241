"""Updates applied when they are said: a new fact that changes an earlier one supersedes it.

The rules are :mod:`engram_md.text.claims`; this is their use while writing. Before a new
fact is written, the :class:`UpdateTracker` looks up the active facts about the same holder
and slot (its :class:`~engram_md.text.claims.ClaimBook`, filled once from the index and
kept current as facts are written and superseded) and asks the rules which of them the new
fact replaces. The new fact is written listing
them in ``supersedes``; then each older file gets status ``superseded``, ``supersededBy`` and
a ``statusHistory`` entry, and its index row follows. The older file stays where it is:
superseding hides a memory from recall, it does not delete it (``recall --include-inactive``
and ``history`` still show it).

Crash safety: the new fact is written first. A crash before the older file is rewritten leaves
the new fact saying what it supersedes; the batch is replayed from the journal, the new fact
is then found as already written, and :meth:`UpdateTracker.recover` finishes the job. A
consolidation run applies the same rules again over the whole folder.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.models import Fact, Status, StatusChange
from ..core.telemetry import ActionLog
from ..core.workers import map_spread
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact
from ..text.claims import DONE_TAG, ClaimBook, carried_out, claims_of, fact_claims

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Statement:
    """An active fact as the index holds it: enough to read its claims and find its file."""

    id: str
    path: str  # relative to the memory folder
    content: str
    entities: Sequence[str]
    created: datetime


class UpdateTracker:
    def __init__(
        self,
        store: MemoryStore,
        actions: ActionLog,
        statements: Callable[[], Iterable[Statement]],
        *,
        on_change: Callable[[Path, Fact], None] | None = None,
    ) -> None:
        self._store = store
        self._actions = actions
        self._statements = statements
        self._on_change = on_change
        self._book: ClaimBook | None = None
        self._paths: dict[str, str] = {}

    def _loaded(self) -> ClaimBook:
        if self._book is None:
            book = ClaimBook()
            items = list(self._statements())
            # A large folder's statements are read on all cores (100k: ~45 s on one).
            said = [(item.content, tuple(item.entities)) for item in items]
            for item, stated in zip(items, map_spread(claims_of, said), strict=True):
                if stated:
                    book.add(item.id, stated, item.created)
                    self._paths[item.id] = item.path
            self._book = book
        return self._book

    def updated_by(self, fact: Fact) -> list[tuple[str, str]]:
        """(older id, reason) for each active fact the new ``fact`` makes outdated."""
        stated = fact_claims(fact.content, fact.entities)
        if not stated:
            return []
        return self._loaded().updated_by(fact.id, stated, fact.created)

    def written(self, path: Path, fact: Fact, older: Sequence[tuple[str, str]]) -> None:
        """``fact`` was written at ``path``: supersede ``older`` and remember its claims."""
        book = self._loaded()
        for old_id, reason in older:
            self._supersede(old_id, fact, reason)
        stated = fact_claims(fact.content, fact.entities)
        if stated:
            book.add(fact.id, stated, fact.created)
            self._paths[fact.id] = self._store.layout.relative(path)

    def recover(self, fact: Fact) -> None:
        """A replayed fact that was already written: finish the supersedes it lists."""
        for old_id in fact.supersedes:
            self._supersede(old_id, fact, "replayed update")

    def _supersede(self, old_id: str, newer: Fact, reason: str) -> None:
        rel = self._paths.get(old_id)
        if rel is None:
            return
        path = self._store.layout.memory_dir / rel
        try:
            old = read_fact(path)
        except (MemoryFileError, OSError) as exc:
            log.warning("cannot mark %s superseded: %s", rel, exc)
            return
        if old.id != old_id or old.status is not Status.ACTIVE:
            self._forget(old_id)
            return  # moved, edited or already retired by hand: the folder wins
        change = StatusChange(
            newer.created, old.status, Status.SUPERSEDED, f"updated: {reason}", by="ingest"
        )
        tags = (
            (*old.tags, DONE_TAG) if carried_out(reason) and DONE_TAG not in old.tags else old.tags
        )
        updated = old.with_changes(
            tags=tags,
            status=Status.SUPERSEDED,
            superseded_by=newer.id,
            status_history=(*old.status_history, change),
            updated=max(old.updated, newer.created),
        )
        self._store.rewrite(path, updated)
        self._forget(old_id)
        self._actions.record(
            "update_note",
            "applied",
            f"superseded: {reason}",
            memory_id=old_id,
            path=rel,
            superseded_by=newer.id,
            session=newer.session,
        )
        if self._on_change is not None:
            self._on_change(path, updated)

    def _forget(self, fact_id: str) -> None:
        if self._book is not None:
            self._book.remove(fact_id)
        self._paths.pop(fact_id, None)
