"""The seen set: 16-byte digests in a sorted array plus a small recent set."""

from __future__ import annotations

import os

import pytest

from engram_md.ingest import seen_set
from engram_md.ingest.seen_set import SeenSet, key_digest


def test_membership_across_the_recent_set_and_the_sorted_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(seen_set, "MERGE_AFTER", 8)
    seen = SeenSet()
    # Digests with zero bytes at the end and in the middle: numpy's fixed-width bytes strip
    # trailing zeros when an element is read back, so membership must not compare elements.
    edge = [b"\0" * 16, b"\0" * 15 + b"\1", b"a\0b" + b"\0" * 13, b"\xff" * 16]
    digests = edge + [os.urandom(16) for _ in range(30)]
    for digest in digests:
        seen.add(digest)
        seen.add(digest)  # a repeat is not counted twice once merged
    assert all(d in seen for d in digests)
    assert not any(os.urandom(16) in seen for _ in range(200))
    assert b"a\0b" not in seen and "not bytes" not in seen
    packed = seen.packed()
    assert len(seen) == len(digests) and len(packed) == 16 * len(digests)
    assert packed == b"".join(sorted(digests))  # sorted in byte order


def test_packed_digests_round_trip_and_merge_without_repeats() -> None:
    first, second = SeenSet(), SeenSet()
    keys = [f"s\x1ft{n}\x1fabcd" for n in range(100)]
    for key in keys[:60]:
        first.add(key_digest(key))
    for key in keys[40:]:
        second.add(key_digest(key))
    first.add_packed(second.packed())
    assert len(first) == 100
    assert all(key_digest(k) in first for k in keys)


def test_wrong_lengths_are_refused() -> None:
    seen = SeenSet()
    with pytest.raises(ValueError):
        seen.add(b"short")
    with pytest.raises(ValueError):
        seen.add_packed(b"\0" * 17)


def test_the_digest_tells_keys_apart() -> None:
    assert key_digest("s1\x1ft1\x1fabc") != key_digest("s1\x1ft1\x1fabd")
    assert len(key_digest("")) == 16
