"""The embeddings a consolidation run compares facts by, and the index's nearest neighbours.

Only facts that share a subject with a new fact need a vector (:func:`involved`); each comes
from the index when its row holds the same statement, else from the embedder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import EngramError
from ..core.models import Fact
from ..index.table import MemoryIndex
from ..text.embeddings import Embedder, l2_normalize
from .contradictions import Profile, subjects
from .judge import Neighbours


class Vectors:
    """Embeddings of facts: from the index when its row holds the same statement, else
    computed (uncached in a dry run, so nothing under ``state/`` is written)."""

    def __init__(self, index: MemoryIndex | None, embedder: Embedder | None) -> None:
        self.index = index
        self.embedder = embedder

    def matrix(self, facts: Sequence[Fact], wanted: np.ndarray) -> np.ndarray | None:
        """Unit vectors, one row per fact; rows not ``wanted`` are left zero."""
        dim = self.index.dim if self.index is not None else None
        if dim is None and self.embedder is not None:
            dim = self.embedder.dim
        if dim is None:
            return None
        out = np.zeros((len(facts), dim), dtype=np.float32)
        positions = np.flatnonzero(wanted).tolist()
        missing: list[int] = []
        if self.index is not None:
            for start in range(0, len(positions), 8192):
                chunk = positions[start : start + 8192]
                rows = self.index.get([facts[i].id for i in chunk])
                for i in chunk:
                    row = rows.get(facts[i].id)
                    if (
                        row is not None
                        and row.vector is not None
                        and (row.content_hash == facts[i].content_hash)
                    ):
                        out[i] = row.vector
                    else:
                        missing.append(i)
        else:
            missing = positions
        if missing:
            if self.embedder is None:
                return None
            out[missing] = self.embedder.embed([facts[i].content for i in missing])
        return l2_normalize(out) if len(out) else out

    def neighbours(self, k: int = 8) -> Neighbours | None:
        """The index's nearest active facts of a fact, for the judge's clusters."""
        index = self.index
        if index is None:
            return None

        def near(fact: Fact) -> list[tuple[str, float]]:
            try:
                hits = index.nearest(
                    fact.content, k + 1, where="status = 'active' AND kind = 'fact'"
                )
            except EngramError:
                return []
            return [(hit.row.id, hit.score) for hit in hits if hit.row.id != fact.id]

        return near


def involved(facts: Sequence[Fact], new: Sequence[bool]) -> np.ndarray:
    """Facts that share a subject with a new fact: the only ones whose vectors are needed."""
    keys_of = [subjects(f, Profile(f.content)) for f in facts]
    hot: set[str] = set()
    for keys, is_new in zip(keys_of, new, strict=True):
        if is_new:
            hot.update(keys)
    return np.array([bool(keys & hot) for keys in keys_of], dtype=bool)
