"""The running centroid of the stored facts' vectors, which the offline extractor's novelty
score compares new episodes against.

Two values are kept: a running sum over the vectors the index holds, kept exact by every
write (minus the old vector, plus the new one), and the snapshot published at the end of each
batch, which is what the extractor reads. The snapshot is saved under ``state/`` so a restart
scores the next batch as the last finished one left it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.atomic import atomic_write_bytes
from .table import MemoryIndex


class Centroid:
    """The running sum and its published snapshot. Not locked: its owner calls it under one
    lock (the Indexer's)."""

    def __init__(self, index: MemoryIndex, model_id: str, path: Path) -> None:
        self._index = index
        self._model_id = model_id
        self._path = path
        self._sum: np.ndarray | None = None
        self._count = 0
        self._sum_ready = False
        self._sum_changed = False
        self._snapshot: tuple[np.ndarray, int] | None = None
        self._snapshot_loaded = False

    def mean(self) -> np.ndarray | None:
        """Unit mean of the vectors as of the last published snapshot (None if none)."""
        self._load_snapshot()
        if self._snapshot is None:
            return None
        total, count = self._snapshot
        mean = total / count
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None

    def shift(self, *, minus: Sequence[np.ndarray], plus: Sequence[np.ndarray]) -> None:
        """Apply a write to the running sum (nothing to do until it has been computed)."""
        if not self._sum_ready or (not minus and not plus):
            return
        total = np.zeros(self._index.dim, dtype=np.float64) if self._sum is None else self._sum
        for vector in plus:
            total = total + np.asarray(vector, dtype=np.float64)
        for vector in minus:
            total = total - np.asarray(vector, dtype=np.float64)
        self._count += len(plus) - len(minus)
        # Back to nothing: drop the float residue of adding and subtracting the same vectors.
        self._sum = total if self._count > 0 else None
        self._count = max(0, self._count)
        self._sum_changed = True

    def publish(self) -> None:
        """A batch is finished: the running sum becomes the snapshot, if it changed."""
        self._load_snapshot()
        self._publish(force=False)

    def rederive(self) -> None:
        """The index was rebuilt: compute the sum anew from it and publish that."""
        self._sum_ready = False
        self._snapshot_loaded = True
        self._publish(force=True)

    def _ensure_sum(self) -> None:
        """The running sum, computed from the index the first time it is needed."""
        if self._sum_ready:
            return
        vectors = self._index.all_vectors()
        self._count = len(vectors)
        self._sum = vectors.astype(np.float64).sum(axis=0) if len(vectors) else None
        self._sum_ready = True
        self._sum_changed = True

    def _load_snapshot(self) -> None:
        """The published centroid: the saved one (as of the last finished batch) if there is
        one for this model, else the running sum."""
        if self._snapshot_loaded:
            return
        self._snapshot_loaded = True
        try:
            with np.load(self._path) as saved:
                total = saved["sum"].astype(np.float64)
                count = int(saved["count"][0])
                if (
                    str(saved["model"]) == self._model_id
                    and total.shape == (self._index.dim,)
                    and count > 0
                ):
                    self._snapshot = (total, count)
                    return
        except (OSError, KeyError, ValueError, IndexError):
            pass
        self._ensure_sum()
        if self._sum is not None and self._count:
            self._snapshot = (self._sum.copy(), self._count)

    def _publish(self, *, force: bool) -> None:
        self._ensure_sum()
        if not (self._sum_changed or force):
            return
        self._sum_changed = False
        if self._sum is None or not self._count:
            self._snapshot = None
            self._path.unlink(missing_ok=True)
            return
        self._snapshot = (self._sum.copy(), self._count)
        # Built in memory and written like every state file (temp file named for doctor and
        # the start-up sweep, fsync, rename), so a crash leaves no orphan they cannot see.
        data = io.BytesIO()
        np.savez(data, sum=self._sum, count=np.array([self._count]), model=self._model_id)
        atomic_write_bytes(self._path, data.getvalue())
