"""Content normalization and hashing: the identity of a fact is its normalized text."""

from __future__ import annotations

import xxhash

from .words import words


def normalize_text(text: str) -> str:
    """Casefolded words joined by single spaces, punctuation dropped: "Uses uv!" == "uses  uv"."""
    return " ".join(words(text))


def content_hash(text: str) -> str:
    """64-bit xxhash of the normalized text, as 16 hex digits."""
    return xxhash.xxh64_hexdigest(normalize_text(text).encode("utf-8"))


def short_hash(text: str, length: int = 8) -> str:
    return xxhash.xxh64_hexdigest(text.encode("utf-8"))[:length]
