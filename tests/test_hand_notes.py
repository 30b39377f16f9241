"""Notes a person writes by hand under memory/facts/ are memories: read with what their
place says (id from the path, time from the date folder or the mtime, category `fact`),
recalled like any other, and never rewritten by consolidate, doctor or reindex; a status
change adds only the keys it needs (docs/FORMAT.md)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.core.models import Category, Source, Status, StatusChange
from engram_md.store.factfile import read_fact, write_fact

from .conftest import Cli

DENTIST = "Dentist appointment moved to Thursday 14:00 at Dr. Okafor's practice.\n"
BIKE = (
    "---\ncategory: preference\ntags: [bike]\n---\n\n"
    "# Commute\n\nI prefer riding my bike to work when it does not rain.\n"
)
WIFI = (
    "---\nstatus: active\nmood: calm   # a key of my own\n---\n"
    "The cabin key hangs under the blue flowerpot by the door.\n"
)
TRANSCRIPT = [
    {"role": "user", "content": text, "timestamp": f"2026-03-04T09:0{i}:00Z", "id": f"t{i}",
     "session": "s1", "name": "Dana"}
    for i, text in enumerate([
        "I prefer green tea over coffee in the afternoon.",
        "We decided to move the billing service to Rust.",
        "My sister Maren lives in Utrecht.",
    ])
]  # fmt: skip
BIKE_TIME = datetime(2025, 7, 1, 6, 30, tzinfo=UTC)


def _write_notes(memory: Path) -> dict[str, Path]:
    paths = {
        "dentist": memory / "facts" / "2026-03-02" / "dentist.md",
        "bike": memory / "facts" / "notes" / "bike.md",
        "wifi": memory / "facts" / "2026-03-05" / "wifi.md",
    }
    for name, text in (("dentist", DENTIST), ("bike", BIKE), ("wifi", WIFI)):
        paths[name].parent.mkdir(parents=True, exist_ok=True)
        paths[name].write_text(text, encoding="utf-8")
    stamp = BIKE_TIME.timestamp()
    os.utime(paths["bike"], (stamp, stamp))
    return paths


@pytest.fixture
def folder(cli: Cli) -> dict[str, Path]:
    transcript = cli.root / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(r) for r in TRANSCRIPT) + "\n")
    assert cli("ingest", str(transcript)).returncode == 0
    return _write_notes(cli.memory)


def _bytes(paths: dict[str, Path]) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in paths.items()}


def test_hand_notes_are_read_with_what_their_place_says(tmp_path: Path) -> None:
    paths = _write_notes(tmp_path / "memory")
    dentist = read_fact(paths["dentist"])
    assert dentist.id == "2026-03-02-dentist"
    assert dentist.category is Category.FACT and dentist.source is Source.MANUAL
    assert dentist.created == datetime(2026, 3, 2, tzinfo=UTC)
    assert dentist.content == DENTIST.strip()
    bike = read_fact(paths["bike"])
    assert bike.id == "notes-bike" and bike.category is Category.PREFERENCE
    assert bike.created == BIKE_TIME and bike.tags == ("bike",)
    wifi = read_fact(paths["wifi"])
    assert wifi.id == "2026-03-05-wifi" and wifi.extra == {"mood": "calm"}


def test_hand_notes_are_recalled(cli: Cli, folder: dict[str, Path]) -> None:
    result = cli("recall", "--json", "when is the dentist appointment?")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    found = {m["id"]: m for m in json.loads(result.stdout)["memories"]}
    assert "2026-03-02-dentist" in found
    assert found["2026-03-02-dentist"]["path"] == "facts/2026-03-02/dentist.md"
    assert "Dr. Okafor" in found["2026-03-02-dentist"]["content"]
    bike = json.loads(cli("recall", "--json", "how does Dana commute by bike?").stdout)
    assert any(m["id"] == "notes-bike" for m in bike["memories"])


def test_consolidate_doctor_and_reindex_leave_hand_notes_as_written(
    cli: Cli, folder: dict[str, Path]
) -> None:
    before = _bytes(folder)
    for command in (("consolidate",), ("doctor", "--repair"), ("reindex",), ("consolidate",)):
        result = cli(*command)
        assert result.returncode == 0, (command, result.stderr.decode()[-2000:])
        assert _bytes(folder) == before, command
    doctor = cli("doctor")
    assert doctor.returncode == 0, doctor.stdout.decode() + doctor.stderr.decode()
    assert b"not indexed" not in doctor.stdout + doctor.stderr
    assert b"frontmatter" not in doctor.stdout + doctor.stderr


def test_a_status_change_adds_only_what_it_needs(tmp_path: Path) -> None:
    paths = _write_notes(tmp_path / "memory")
    at = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
    for name in ("dentist", "bike"):
        note = read_fact(paths[name])
        assert write_fact(paths[name], note) is False  # never filled in
        retired = note.with_changes(
            status=Status.SUPERSEDED,
            superseded_by="fact-20260401-080000-0badc0de",
            updated=at,
            status_history=(StatusChange(at, Status.ACTIVE, Status.SUPERSEDED, "newer fact"),),
        )
        assert write_fact(paths[name], retired) is True
    dentist = paths["dentist"].read_text()
    assert dentist.startswith("---\nupdated: 2026-04-01T08:00:00Z\nstatus: superseded\n")
    assert "id:" not in dentist and "category:" not in dentist and "created:" not in dentist
    assert "confidence" not in dentist and "sourceTurnIds" not in dentist
    assert dentist.endswith("---\n\n" + DENTIST)
    again = read_fact(paths["dentist"])
    assert again.id == "2026-03-02-dentist" and again.status is Status.SUPERSEDED
    # The bike note's time came from its mtime, which the rewrite moved: it is written down.
    bike = paths["bike"].read_text()
    assert "created: 2025-07-01T06:30:00Z" in bike and "tags: [bike]" in bike
    assert "confidence" not in bike and "id:" not in bike
    assert read_fact(paths["bike"]).created == BIKE_TIME
