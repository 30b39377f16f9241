"""The set of turns the journal has finished with, at 16 bytes a turn.

The journal must remember every turn it ever completed, so that the same input fed again
after a restart is not processed twice. Kept as Python strings that costs ~134 bytes a turn
and grows for as long as the daemon runs. Here each turn is its 128-bit digest (xxh3-128 of
the turn key) in one sorted numpy array, plus a small set of recent digests that is merged
into the array in bulk. A false "already seen" needs two different turn keys with the same
128-bit digest (about 1 in 10^20 after a billion turns).
"""

from __future__ import annotations

import base64

import numpy as np
import xxhash

DIGEST_BYTES = 16
# Recent digests wait in a Python set (cheap to add to) until there are this many; then one
# sorted insert moves them into the array. Bounds the set at ~0.3 MB.
MERGE_AFTER = 4096
_DTYPE = np.dtype(f"S{DIGEST_BYTES}")  # compares and sorts as raw bytes (memcmp order)


def key_digest(key: str) -> bytes:
    return xxhash.xxh3_128_digest(key.encode("utf-8"))


class SeenSet:
    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=_DTYPE)
        self._recent: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def __contains__(self, digest: object) -> bool:
        if digest in self._recent:
            return True
        if not isinstance(digest, bytes) or len(digest) != DIGEST_BYTES:
            return False
        return bool(_present(self._sorted, np.array([digest], dtype=_DTYPE))[0])

    def add(self, digest: bytes) -> None:
        if len(digest) != DIGEST_BYTES:
            raise ValueError(f"a turn digest is {DIGEST_BYTES} bytes, got {len(digest)}")
        if digest in self:
            return  # the recent set and the array never share a digest
        self._recent.add(digest)
        if len(self._recent) >= MERGE_AFTER:
            self._merge_recent()

    def add_packed(self, packed: bytes) -> None:
        """Add digests written by :meth:`packed` (raises ValueError on a wrong length)."""
        if len(packed) % DIGEST_BYTES:
            raise ValueError(f"packed turn digests are not a multiple of {DIGEST_BYTES} bytes")
        self._merge_recent()
        self._merge(np.frombuffer(packed, dtype=_DTYPE))

    def packed(self) -> bytes:
        """Every digest, sorted and concatenated (16 bytes each)."""
        self._merge_recent()
        return self._sorted.tobytes()

    def _merge_recent(self) -> None:
        if self._recent:
            self._merge(np.array(list(self._recent), dtype=_DTYPE))
            self._recent.clear()

    def _merge(self, digests: np.ndarray) -> None:
        new = np.unique(digests)  # sorted, without repeats
        new = new[~_present(self._sorted, new)]
        if len(new):
            # One O(n) insert per MERGE_AFTER turns; the array is never sorted whole again.
            self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, new), new)


def _present(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """For each needle, whether the sorted haystack holds it."""
    return np.searchsorted(haystack, needles, "left") != np.searchsorted(haystack, needles, "right")


def encode(packed: bytes) -> str:
    return base64.b64encode(packed).decode("ascii")


def decode(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)
