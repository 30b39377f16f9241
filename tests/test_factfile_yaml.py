"""Frontmatter YAML is emitted by libyaml where it writes the same bytes as the Python
emitter, and by the Python emitter where it would not: a file reads the same whichever wrote
it, and a rewrite by a newer version does not churn the bytes of an unchanged value."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime
from typing import Any

import yaml

from engram_md.store import factfile
from engram_md.store.factfile import dump_yaml


def _python_emitted(metadata: dict[str, Any]) -> str:
    return yaml.dump(
        metadata,
        Dumper=factfile._Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )


def _metadata(text: str) -> dict[str, Any]:
    return {
        "id": "f-1",
        "content": text,
        "tags": [text, "plain"],
        "statusHistory": [{"at": datetime(2026, 3, 1, 9, 30, tzinfo=UTC), "reason": text}],
        "confidence": 0.75,
        "pinned": False,
        "validUntil": None,
    }


_ALPHABET = (
    string.printable
    + "éü中ßñ"
    + "\x85\u2028\u2029\ufeff\x00\x07\x1b\xa0\u200b\ud7ff\ue000\ufffd\x7f"
    + "😀🎉𝔘"  # beyond the Basic Multilingual Plane: libyaml would escape these
    + " " * 12
)


def test_every_value_is_emitted_as_the_python_emitter_writes_it() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))
        meta = _metadata(text)
        assert dump_yaml(meta) == _python_emitted(meta), repr(text)


def test_long_values_with_escapes_fold_as_before() -> None:
    rng = random.Random(11)
    alphabet = string.ascii_letters + " " * 8 + "\n\t\x85"
    for _ in range(20):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(9_000, 14_000)))
        meta = {"content": text}
        assert dump_yaml(meta) == _python_emitted(meta)


def test_emoji_stay_readable_and_values_round_trip() -> None:
    meta = _metadata("Miso 🐈 likes the sofa — “really”")
    out = dump_yaml(meta)
    assert "🐈" in out and "\\U" not in out
    assert yaml.safe_load(out)["content"] == meta["content"]
    assert yaml.safe_load(out)["statusHistory"][0]["reason"] == meta["content"]


def test_plain_frontmatter_takes_the_libyaml_emitter() -> None:
    assert not factfile._python_emitter_needed(_metadata("I moved to Munich in May."))
    assert factfile._python_emitter_needed(_metadata("party 🎉"))
    assert factfile._python_emitter_needed({"nested": [{"deep": "x" * 9_000}]})
