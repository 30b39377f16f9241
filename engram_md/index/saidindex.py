"""What was said, in the search index: one row of kind ``said`` per sentence of a said file.

A sentence is the unit that fills a token budget best (a question is usually answered by one
sentence of a turn, not the whole turn), so each line of ``memory/said/…`` becomes one row per
sentence, ``"Speaker: sentence"``, carrying its turn's id, session and time. Rows are kept in
step with the files the way box rows are: at every full reconcile, a file whose mtime differs
from its rows' is read again and its rows replaced, and rows whose file is gone are removed;
the daemon indexes the files a batch changed with that batch (``Indexer.upsert_said``).
These functions never touch fact or box rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.paths import MemoryLayout
from ..store.said import SaidTurn, read_said, said_files, sentence_texts
from ..text.hashing import content_hash, short_hash
from .table import IndexRow, MemoryIndex

log = logging.getLogger(__name__)

SAID_KIND = "said"


@dataclass(frozen=True)
class SaidSync:
    files: int = 0  # files (re)indexed
    rows: int = 0  # sentence rows written
    removed: int = 0  # rows of files that changed or are gone
    unreadable: int = 0  # files that could not be read (reported, left alone)


def said_row_id(session: str, turn_id: str, number: int) -> str:
    """The id of the row of sentence ``number`` (from 0) of a turn: derivable from the turn,
    so recall can find a turn's sentences without a search."""
    return f"said-{short_hash(chr(31).join((session, turn_id, str(number))), 16)}"


def said_rows(
    layout: MemoryLayout, path: Path, turns: Iterable[SaidTurn], mtime_ns: int
) -> list[IndexRow]:
    rel = layout.relative(path)
    rows: list[IndexRow] = []
    for turn in turns:
        # A sentence said twice in one turn is one row; the numbers stay 0, 1, 2… (recall
        # looks a turn's sentences up by them).
        for number, text in enumerate(sentence_texts(turn.speaker, turn.text)):
            rows.append(
                IndexRow(
                    id=said_row_id(turn.session, turn.id, number),
                    path=rel,
                    kind=SAID_KIND,
                    content=text,
                    category=SAID_KIND,
                    memory_kind=SAID_KIND,
                    status="active",
                    importance=0.5,
                    confidence=1.0,
                    created=turn.at,
                    updated=turn.at,
                    session=turn.session,
                    source_turn_ids=(turn.id,),
                    entities=(),
                    tags=(),
                    speaker=turn.speaker,
                    confirmations=0,
                    file_mtime_ns=mtime_ns,
                    content_hash=content_hash(text),
                )
            )
    # A turn listed twice (a line copied by hand) is one set of rows.
    return list({row.id: row for row in rows}.values())


def rows_of_file(layout: MemoryLayout, path: Path) -> list[IndexRow] | None:
    """The rows of one said file as it is now; None if it cannot be read (reported)."""
    try:
        mtime = path.stat().st_mtime_ns
        return said_rows(layout, path, read_said(path), mtime)
    except (OSError, MemoryFileError) as exc:
        log.warning("%s", exc)
        return None


def index_said_files(index: MemoryIndex, layout: MemoryLayout, paths: Iterable[Path]) -> SaidSync:
    """Bring the rows of these said files up to date: the daemon's own writes of a batch, and
    the paths a watcher saw change (costing a ``stat`` when the rows are current already)."""
    files: dict[str, tuple[Path, int]] = {}
    for path in paths:
        try:
            files[layout.relative(path)] = (path, path.stat().st_mtime_ns)
        except OSError:
            continue
    return _sync(index, layout, files, _stored(index, paths=list(files)), whole_folder=False)


def sync_said(index: MemoryIndex, layout: MemoryLayout) -> SaidSync:
    """Make the said rows match the said files: files whose mtime is not their newest row's are
    read again, rows of files that are gone are removed."""
    files: dict[str, tuple[Path, int]] = {}
    for path in said_files(layout):
        try:
            files[layout.relative(path)] = (path, path.stat().st_mtime_ns)
        except OSError:
            continue
    return _sync(index, layout, files, _stored(index), whole_folder=True)


@dataclass
class _Stored:
    """What the index holds of one said file: its rows' content hashes, its newest mtime."""

    hashes: dict[str, str]
    newest: int


def _stored(index: MemoryIndex, *, paths: list[str] | None = None) -> dict[str, _Stored]:
    columns = ["id", "path", "file_mtime_ns", "content_hash"]
    found = index.columns_of_kind(SAID_KIND, columns, paths=paths)
    out: dict[str, _Stored] = {}
    for row_id, rel, mtime, digest in zip(*(found[c] for c in columns), strict=True):
        held = out.setdefault(rel, _Stored({}, mtime))
        held.hashes[row_id] = digest
        held.newest = max(held.newest, mtime)
    return out


def _sync(
    index: MemoryIndex,
    layout: MemoryLayout,
    files: dict[str, tuple[Path, int]],
    stored: dict[str, _Stored],
    *,
    whole_folder: bool,
) -> SaidSync:
    # The newest row of an unchanged file holds its mtime; any other mtime (a later edit, or an
    # older one that a checkout or a copy put back) means: read it again. With the whole
    # folder listed, rows of a file that is not there are removed.
    changed = {
        rel: path
        for rel, (path, mtime) in files.items()
        if rel not in stored or stored[rel].newest != mtime
    }
    known = {
        row_id: digest
        for rel, held in stored.items()
        if rel in changed or (whole_folder and rel not in files)
        for row_id, digest in held.hashes.items()
    }
    return _update(index, layout, changed, known)


def _update(
    index: MemoryIndex, layout: MemoryLayout, files: dict[str, Path], known: dict[str, str]
) -> SaidSync:
    """Write the rows of ``files`` that are new or whose sentence changed, and delete the rows
    in ``known`` (id -> content hash) that the files no longer hold.

    A turn appended to a file leaves its other rows alone: rewriting every row of a day's file
    at every batch left the index a dead copy of each. A file's newest row carries its mtime;
    a file re-read with nothing to write (lines deleted by hand only) stamps one of its rows
    with the new mtime, so it is not read again.
    """
    fresh: list[IndexRow] = []
    present: set[str] = set()
    read = unreadable = 0
    for path in files.values():
        rows = rows_of_file(layout, path)
        if rows is None:
            unreadable += 1
            continue
        read += 1
        written = [row for row in rows if known.get(row.id) != row.content_hash]
        present.update(row.id for row in rows)
        if rows and not written:
            written = [rows[-1]]  # the stamp: same sentence, the file's new mtime
        fresh.extend(written)
    gone = [row_id for row_id in known if row_id not in present]
    if gone:
        index.delete(gone)
    if fresh:
        index.upsert(fresh)
    return SaidSync(read, len(fresh), len(gone), unreadable)
