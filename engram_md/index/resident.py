"""The index in memory: Arrow columns for the rows, one float32 matrix for the vectors.

Vector search and row reads are served from this copy (exact dot products over the matrix,
faster than LanceDB's own vector search at a memory folder's sizes; see :mod:`.table`), and
``where`` filters of the form ``col = 'v' AND ...`` are evaluated on its columns. Above
``_SHORTLIST_MIN_ROWS`` rows a projected-vector shortlist makes recall's first pass cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import regex

from .rows import TEXT_COLUMNS, Hit, IndexRow, copy_vectors, rows_from_arrow
from .textindex import TextIndex

_SLICED_MAX = 32  # rows taken one by one from a chunked table (see Resident._take)
# Row values kept built between queries: ~3 KB each with its vector, so ~25 MB. A read of
# more rows than this (a reconcile asking for every row) is built for the caller and not
# kept: keeping it held 290 MB of a 100k-memory daemon for good (bench/scale_bench.py).
_ROW_CACHE_MAX = 8_192


# Approximate first pass for vector search: used above this many rows, with this many
# principal directions, re-scoring this many times the requested hits (at least the floor).
_SHORTLIST_MIN_ROWS = 20_000


_SHORTLIST_DIM = 64


_SHORTLIST_FACTOR = 10


_SHORTLIST_FLOOR = 2000


_SHORTLIST_SAMPLE = 20_000


class Resident:
    """The table in memory: Arrow columns for the rows, one matrix for the vectors.

    Positions only grow: an updated row is appended and its old position marked dead, so a
    filter mask computed for earlier positions stays valid. ``compact`` drops dead rows when
    they pile up.
    """

    def __init__(self, data: pa.Table, dim: int, version: int) -> None:
        self.dim = dim
        self.version = version
        n = data.num_rows
        self.columns: pa.Table = data.drop_columns(["vector"]).combine_chunks()
        self.vectors = np.empty((max(64, n + n // 4), dim), dtype=np.float32)
        copy_vectors(data, dim, self.vectors)
        self.alive = np.zeros(len(self.vectors), dtype=bool)
        ids = self.columns.column("id").to_pylist()
        self.pos: dict[str, int] = dict(zip(ids, range(n), strict=True))
        self.alive[list(self.pos.values())] = True
        self.n = n
        self.dead = n - len(self.pos)
        self.masks: dict[str, np.ndarray] = {}
        # IndexRow values built so far, by position: recall asks for a few hundred rows per
        # query, and building them from Arrow is most of its cost. Positions are never reused
        # (an update appends), so an entry stays true until compaction renumbers them.
        self.row_cache: dict[int, IndexRow] = {}
        self.shortlist: Shortlist | None = None
        # Full-text postings by position, built at the first text search (a writer that is
        # never asked one, such as an import, never pays for it) and kept in step after.
        self.text: TextIndex | None = None
        # Bumped when compaction renumbers the positions (readers of a prefix start over).
        self.compactions = 0

    def append(self, data: pa.Table, vectors: np.ndarray) -> None:
        ids = data.column("id").to_pylist()
        for row_id in ids:
            old = self.pos.get(row_id)
            if old is not None:
                self.alive[old] = False
                self.dead += 1
        start, m = self.n, len(ids)
        if start + m > len(self.vectors):
            capacity = max(start + m, 2 * len(self.vectors))
            grown = np.empty((capacity, self.dim), dtype=np.float32)
            grown[:start] = self.vectors[:start]
            self.vectors = grown
            alive = np.zeros(capacity, dtype=bool)
            alive[:start] = self.alive[:start]
            self.alive = alive
            self.row_cache.clear()  # cached rows hold views of the old matrix: let it go
        self.vectors[start : start + m] = vectors
        self.alive[start : start + m] = True
        self.pos.update(zip(ids, range(start, start + m), strict=True))
        self.columns = pa.concat_tables([self.columns, data.drop_columns(["vector"])])
        self.n += m
        if self.shortlist is not None:
            self.shortlist.extend(self.vectors[: self.n])
        if self.text is not None:
            self.text.extend(data.column("content").to_pylist())
        self._tidy()

    def remove(self, ids: Sequence[str]) -> None:
        for row_id in ids:
            old = self.pos.pop(row_id, None)
            if old is not None:
                self.alive[old] = False
                self.dead += 1
        self._tidy()

    def _tidy(self) -> None:
        if self.dead > max(1024, self.n // 4):
            self._compact()
        elif self.columns.column("id").num_chunks > 32:
            # Many single-row writes make many chunks, and Arrow's take slows down with them.
            self.columns = self.columns.combine_chunks()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.columns = self.columns.take(pa.array(keep)).combine_chunks()
        vectors = np.empty((max(64, len(keep) + len(keep) // 4), self.dim), dtype=np.float32)
        vectors[: len(keep)] = self.vectors[keep]
        self.vectors = vectors
        self.alive = np.zeros(len(vectors), dtype=bool)
        self.alive[: len(keep)] = True
        # A mask covered a prefix of the old positions; keep is sorted, so the surviving
        # positions of that prefix are a prefix of the new positions.
        self.masks = {
            where: mask[keep[: int(np.searchsorted(keep, len(mask)))]]
            for where, mask in self.masks.items()
        }
        self.n = len(keep)
        self.row_cache = {}
        self.shortlist = None
        if self.text is not None:
            self.text = self.text.renumbered(keep)
        self.pos = dict(zip(self.columns.column("id").to_pylist(), range(self.n), strict=True))
        self.dead = 0
        self.compactions += 1

    def rows(self, positions: Sequence[int] | np.ndarray) -> list[IndexRow]:
        wanted = [int(p) for p in positions]
        cache = self.row_cache
        # The hits are taken before the cache may be cleared below for the misses.
        found = {p: cache[p] for p in wanted if p in cache}
        missing = [p for p in dict.fromkeys(wanted) if p not in found]
        if missing:
            built = rows_from_arrow(self._take(missing), self.vectors[missing])
            fresh = dict(zip(missing, built, strict=True))
            found.update(fresh)
            if len(missing) <= _ROW_CACHE_MAX:
                if len(cache) + len(missing) > _ROW_CACHE_MAX:
                    cache.clear()
                cache.update(fresh)
        return [found[p] for p in wanted]

    def _take(self, positions: list[int]) -> pa.Table:
        """The columns' rows at ``positions``. Arrow's take joins the chunks of a chunked
        table first: ~1 ms at 30k rows however few are taken, and writes leave up to 32
        chunks (_tidy). A few rows are cut out one by one instead (42 µs for 5, 148 µs for
        20; the near-duplicate check of every new fact takes 5)."""
        if len(positions) <= _SLICED_MAX and self.columns.column("id").num_chunks > 1:
            return pa.concat_tables([self.columns.slice(p, 1) for p in positions])
        return self.columns.take(pa.array(positions, pa.int64()))

    def text_index(self) -> TextIndex:
        if self.text is None:
            self.text = TextIndex.of(self.columns.column("content").to_pylist())
        return self.text

    def carry_text_from(self, old: Resident) -> int:
        """Take over the postings an earlier copy of the table had built, for the rows it
        held unchanged; returns how many rows were carried (the rest are read anew).

        A reader reloads the whole table after another process wrote, and reading every
        row's words again would cost seconds at 100k rows. LanceDB keeps rows in the order
        they were written, with a replaced row's new version written last, so the rows of
        the earlier copy still there lead the new one in the same order; only that case is
        carried over (anything else builds anew at the next text search).
        """
        text = old.text
        if text is None or self.n == 0:
            return 0
        new_ids = self.columns.column("id").to_pylist()
        positions = np.fromiter((old.pos.get(i, -1) for i in new_ids), np.int64, self.n)
        known = positions >= 0
        # The words themselves are compared: that is what the postings were read from.
        old_words = old.columns.column("content").take(pa.array(np.where(known, positions, 0)))
        same = pc.fill_null(pc.equal(self.columns.column("content"), old_words), False)
        valid = known & np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
        lead = self.n if bool(valid.all()) else int(np.argmin(valid))
        kept = positions[:lead]
        if lead == 0 or not bool(np.all(np.diff(kept) > 0)):
            return 0
        carried = text.renumbered(kept)
        carried.extend(self.columns.column("content").slice(lead).to_pylist())
        self.text = carried
        return lead

    def text_search(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[Hit]:
        """The ``k`` best BM25 matches of ``query`` among the ``allowed`` live rows."""
        positions, scores = self.text_index().search(query, k, self.alive, allowed)
        rows = self.rows(positions)
        return [Hit(row, float(s)) for row, s in zip(rows, scores, strict=True)]

    def shortlisted(self) -> Shortlist:
        if self.shortlist is None:
            self.shortlist = Shortlist.build(self.vectors[: self.n])
        return self.shortlist

    def search(self, query: np.ndarray, allowed: np.ndarray, k: int, *, exact: bool) -> list[Hit]:
        """The ``k`` allowed rows best by dot product with the unit ``query``, best first.

        ``exact=False`` lets a large copy shortlist by projected vectors first; the hits
        returned are still scored with the full vectors.
        """
        n = self.n
        candidates = int(np.count_nonzero(allowed))
        if candidates == 0 or k <= 0:
            return []
        if not exact and n >= _SHORTLIST_MIN_ROWS:
            want = max(_SHORTLIST_FLOOR, k * _SHORTLIST_FACTOR)
            short = self.shortlisted().candidates(query, allowed, want)
            exact_scores = self.vectors[short] @ query
            order = np.argsort(-exact_scores, kind="stable")[:k]
            rows = self.rows(short[order])
            return [Hit(row, float(s)) for row, s in zip(rows, exact_scores[order], strict=True)]
        scores = self.vectors[:n] @ query
        scores[~allowed] = -np.inf
        k = min(k, candidates)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")][:k]
        rows = self.rows(top)
        return [Hit(row, float(scores[p])) for row, p in zip(rows, top, strict=True)]


class Shortlist:
    """A cheap first pass for vector search over large tables: the vectors projected onto
    their top principal directions.

    Exact search reads every full vector per query (150 MB at 100k memories), which is
    bound by memory bandwidth. Scoring the projection (a sixth of the size) and re-scoring
    only the best few thousand with full vectors returns the same top hits in practice; the
    benchmark reports the overlap with exact search. Exactness matters for the near-duplicate
    check, which therefore never uses this.
    """

    def __init__(self, basis: np.ndarray, projected: np.ndarray, n: int) -> None:
        self.basis = basis  # (dim, k)
        self.projected = projected  # (capacity, k)
        self.n = n

    @classmethod
    def build(cls, vectors: np.ndarray) -> Shortlist:
        # A fixed, strided sample keeps the basis deterministic and cheap to compute.
        step = max(1, len(vectors) // _SHORTLIST_SAMPLE)
        sample = vectors[::step].astype(np.float64)
        # Uncentred: queries are scored by dot product, so keep the shared direction too.
        _, _, vt = np.linalg.svd(sample, full_matrices=False)
        basis = np.ascontiguousarray(vt[:_SHORTLIST_DIM].T, dtype=np.float32)
        capacity = max(64, len(vectors) + len(vectors) // 4)
        projected = np.empty((capacity, basis.shape[1]), np.float32)
        projected[: len(vectors)] = vectors @ basis
        return cls(basis, projected, len(vectors))

    def extend(self, vectors: np.ndarray) -> None:
        """Project rows appended since the last call (``vectors`` is the whole live prefix)."""
        n = len(vectors)
        if n <= self.n:
            return
        if n > len(self.projected):
            grown = np.empty((2 * n, self.projected.shape[1]), np.float32)
            grown[: self.n] = self.projected[: self.n]
            self.projected = grown
        self.projected[self.n : n] = vectors[self.n : n] @ self.basis
        self.n = n

    def candidates(self, query: np.ndarray, allowed: np.ndarray, want: int) -> np.ndarray:
        """Positions of the ``want`` best allowed rows by projected score (unordered)."""
        scores = self.projected[: self.n] @ (query @ self.basis)
        scores[~allowed[: self.n]] = -np.inf
        want = min(want, int(np.count_nonzero(allowed[: self.n])))
        if want <= 0:
            return np.empty(0, dtype=np.int64)
        if want >= self.n:
            return np.flatnonzero(allowed[: self.n])
        return np.argpartition(-scores, want - 1)[:want]


def is_in(values: pa.ChunkedArray | pa.Array, value_set: pa.Array) -> np.ndarray:
    result = pc.is_in(values, value_set=value_set)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


_EQUALITY = regex.compile(r"\s*(\w+)\s*=\s*'([^']*)'\s*")


def equality_pairs(where: str) -> list[tuple[str, str]] | None:
    """``col = 'v' AND col2 = 'w'`` on scalar text columns as pairs, else None (other SQL)."""
    pairs: list[tuple[str, str]] = []
    for part in regex.split(r"\bAND\b", where):
        match = _EQUALITY.fullmatch(part)
        if match is None or match.group(1) not in TEXT_COLUMNS:
            return None
        pairs.append((match.group(1), match.group(2)))
    return pairs


def equal_mask(columns: pa.Table, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Rows where every column equals its value (a null equals nothing, as in SQL)."""
    mask = np.ones(columns.num_rows, dtype=bool)
    for name, value in pairs:
        equal = pc.fill_null(pc.equal(columns.column(name), value), False)
        mask &= np.asarray(equal.to_numpy(zero_copy_only=False), dtype=bool)
    return mask
