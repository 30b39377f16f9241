"""Content normalization and hashing: the identity of a fact is its normalized text."""

from __future__ import annotations

import regex
import xxhash

_NON_WORD = regex.compile(r"[^\p{L}\p{N}\s]+")
_SPACE = regex.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Lowercase, punctuation to spaces, whitespace collapsed: "Uses uv!" == "uses  uv"."""
    return _SPACE.sub(" ", _NON_WORD.sub(" ", text.casefold())).strip()


def content_hash(text: str) -> str:
    """64-bit xxhash of the normalized text, as 16 hex digits."""
    return xxhash.xxh64_hexdigest(normalize_text(text).encode("utf-8"))


def short_hash(text: str, length: int = 8) -> str:
    return xxhash.xxh64_hexdigest(text.encode("utf-8"))[:length]
