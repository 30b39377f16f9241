"""The index in memory: rows read by position, and the cache of built rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from engram_md.index import resident
from engram_md.index.resident import Resident
from engram_md.index.rows import row_schema, rows_to_arrow

from .rows import index_row

DIM = 8


def _resident(n: int) -> Resident:
    rows = [index_row(f"r{i}", f"statement number {i}") for i in range(n)]
    vectors = np.eye(n, DIM, dtype=np.float32) + 0.01
    return Resident(rows_to_arrow(rows, vectors, row_schema(DIM, "test")), DIM, 1)


def test_rows_come_back_in_the_order_asked_repeats_included() -> None:
    table = _resident(20)
    got = table.rows([5, 2, 5, 19])
    assert [row.id for row in got] == ["r5", "r2", "r5", "r19"]
    assert [row.content for row in table.rows([2])] == ["statement number 2"]


def test_a_full_cache_still_answers_the_rows_it_held(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache is cleared to make room for misses; rows asked for in the same call that it
    # held before must still come back (they raised KeyError, a recall's HTTP 500).
    monkeypatch.setattr(resident, "_ROW_CACHE_MAX", 4)
    table = _resident(20)
    table.rows([0, 1, 2])
    got = table.rows([0, 1, 7, 8])
    assert [row.id for row in got] == ["r0", "r1", "r7", "r8"]
    assert len(table.row_cache) <= 4


def test_a_read_of_every_row_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a reconcile asks for: built for the caller, then let go.
    monkeypatch.setattr(resident, "_ROW_CACHE_MAX", 8)
    table = _resident(30)
    table.rows([3])
    assert [row.id for row in table.rows(range(30))] == [f"r{i}" for i in range(30)]
    assert set(table.row_cache) == {3}


def test_vectors_of_a_table_in_several_sliced_chunks_land_in_row_order() -> None:
    rows = [index_row(f"r{i}", f"statement number {i}") for i in range(12)]
    vectors = np.arange(12 * DIM, dtype=np.float32).reshape(12, DIM)
    whole = rows_to_arrow(rows, vectors, row_schema(DIM, "test"))
    # Chunks that are slices of a larger array, as a read in batches gives them.
    parts = pa.concat_tables([whole.slice(0, 5), whole.slice(5, 4), whole.slice(9)])
    assert parts.column("vector").num_chunks == 3
    table = Resident(parts, DIM, 1)
    assert np.array_equal(table.vectors[:12], vectors)
    assert [row.id for row in table.rows([11, 0, 6])] == ["r11", "r0", "r6"]


def test_times_come_back_as_the_same_utc_instants_with_a_missing_one_kept_missing() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from engram_md.index.rows import rows_from_arrow

    early = datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=UTC)
    late = datetime(2026, 3, 2, 9, 2, 0, 999999, tzinfo=UTC)
    rows = [
        index_row("a", "one", created=early, updated=late, valid_at=None),
        index_row("b", "two", created=late, updated=late, valid_at=early),
    ]
    vectors = np.zeros((2, DIM), np.float32)
    back = rows_from_arrow(rows_to_arrow(rows, vectors, row_schema(DIM, "test")), vectors)
    assert [(r.created, r.updated, r.valid_at) for r in back] == [
        (early, late, None),
        (late, late, early),
    ]
    # Every other field comes back in its own place too (rows are built field by field).
    assert [replace(r, vector=None) for r in back] == [replace(r, vector=None) for r in rows]
    assert back[0].created.utcoffset() is not None and back[0].created.utcoffset().seconds == 0


@pytest.mark.parametrize("sliced_max", [32, 2])
@pytest.mark.parametrize("asked", [[3], [7, 0, 12, 7], list(range(14))[::-1]])
def test_rows_of_a_chunked_table_are_those_of_the_whole(
    asked: list[int], sliced_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes append chunks; a few rows are then cut out one by one, more are taken: both
    give exactly the rows of the same table in one chunk."""
    monkeypatch.setattr(resident, "_SLICED_MAX", sliced_max)
    split, whole = _resident(4), _resident(14)
    for i in range(4, 14):  # ten single-row writes: eleven chunks
        row = index_row(f"r{i}", f"statement number {i}")
        vector = (np.eye(14, DIM, dtype=np.float32) + 0.01)[i : i + 1]
        split.append(rows_to_arrow([row], vector, row_schema(DIM, "test")), vector)
    assert split.columns.column("id").num_chunks > 1
    got, expected = split.rows(asked), whole.rows(asked)
    assert [replace(r, vector=None) for r in got] == [replace(r, vector=None) for r in expected]
    assert all(np.array_equal(a.vector, b.vector) for a, b in zip(got, expected, strict=True))
