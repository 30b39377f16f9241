"""state/access.jsonl: recall counts, the standings consolidation writes, the fold that joins
them, and the ids a forget drops."""

from __future__ import annotations

import json
from pathlib import Path

from engram_md.core.models import LifecycleState
from engram_md.store.access import AccessLog, Standing, read_standing


def _line(*ids: str) -> str:
    return json.dumps({"at": "2026-03-03T10:00:00Z", "ids": list(ids)}) + "\n"


RATED = Standing(3, 2, LifecycleState.VALIDATED, 0.6, 0.25, "hot")


def test_record_and_usage(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "state" / "access.jsonl")
    assert log.usage().recent == {}
    log.record(["a", "b"])
    log.record(["a"])
    log.record([])  # nothing recalled: nothing written
    assert log.usage().recent == {"a": 2, "b": 1}
    assert len(log.path.read_text().splitlines()) == 2
    # Another process appends: the count follows.
    with open(log.path, "a") as handle:
        handle.write(_line("b"))
    assert log.usage().recent["b"] == 2


def test_read_takes_whole_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "access.jsonl"
    torn = '{"at": "x", "ids": ["c"'
    path.write_text(_line("a", "b") + "not json\n" + _line("a") + torn)
    counts, length = AccessLog(path).read_counts()
    assert counts == {"a": 2, "b": 1}
    assert length == len(path.read_bytes()) - len(torn)
    assert AccessLog(tmp_path / "none.jsonl").read_counts() == ({}, 0)


def test_fold_writes_standings_and_keeps_later_recalls(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "access.jsonl")
    log.path.write_text(_line("a") + _line("b"))
    read = log.read()
    log.record(["c"])  # a recall after the fold read the file
    log.fold({"b": Standing(1), "a": RATED}, read.length)
    lines = log.path.read_text().splitlines()
    assert [json.loads(line).get("id") for line in lines] == [
        "a",
        "b",
        None,
    ]  # sorted, then recalls
    assert json.loads(lines[0]) == {
        "id": "a",
        "accessCount": 3,
        "firstEpoch": 2,
        "lifecycleState": "validated",
        "heatScore": 0.6,
        "decayScore": 0.25,
        "tier": "hot",
    }
    assert json.loads(lines[1]) == {"id": "b", "accessCount": 1}  # unset keys are left out
    usage = log.usage()
    assert usage.standings == {"a": RATED, "b": Standing(1)}
    assert usage.recent == {"c": 1}
    assert usage.accesses("a") == 3 and usage.accesses("c") == 1 and usage.accesses("z") == 0
    # Folding what was just read again changes nothing: exactly once.
    again = log.read()
    log.fold(again.standings, again.length)
    assert log.read().standings == usage.standings and log.read().recent == {}


def test_a_fold_replaces_the_file_and_the_cache_notices(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "access.jsonl")
    log.record(["a"])
    assert log.usage().recent == {"a": 1}
    other = AccessLog(log.path)  # consolidation in another process
    other.fold({"a": Standing(1)}, other.read().length)
    assert log.usage().recent == {} and log.usage().standings["a"].accesses == 1


def test_standings_are_read_leniently(tmp_path: Path) -> None:
    odd = {"accessCount": -1, "firstEpoch": True, "lifecycleState": "fresh", "heatScore": 2,
           "decayScore": "0.5", "tier": "warm"}  # fmt: skip
    assert read_standing(odd) == (Standing(), ())
    good = {"accessCount": 4, "heatScore": 1, "tier": "cold", "reviewer": "ana"}
    assert read_standing(good) == (
        Standing(accesses=4, heat=1.0, tier="cold"),
        ("accessCount", "heatScore", "tier"),
    )
    path = tmp_path / "access.jsonl"
    path.write_text(json.dumps({"id": "a", **odd}) + "\n" + json.dumps({"id": 7}) + "\n")
    assert AccessLog(path).read().standings == {"a": Standing()}
    # Written by hand or by another tool: keys in any order, an id that needs escaping.
    path.write_text(
        json.dumps({"tier": "hot", "id": "b"}) + "\n" + json.dumps({"id": 'say "hi"'}) + "\n"
    )
    assert AccessLog(path).read().standings == {"b": Standing(tier="hot"), 'say "hi"': Standing()}
    log = AccessLog(path)
    log.fold({'say "hi"': Standing(2)}, log.read().length)
    assert log.read().standings == {'say "hi"': Standing(2)}


def test_drop_ids(tmp_path: Path) -> None:
    log = AccessLog(tmp_path / "access.jsonl")
    log.path.write_text(_line("a", "b") + _line("a") + "torn{\n" + _line("c"))
    log.fold({"a": RATED, "c": Standing(1)}, 0)
    assert log.usage().recent == {"a": 2, "b": 1, "c": 1}
    assert log.drop_ids({"a"}) == 3  # two recalls and a standing
    assert log.usage().recent == {"b": 1, "c": 1}  # the cached counts follow the rewrite
    assert set(log.usage().standings) == {"c"}
    lines = log.path.read_text().splitlines()
    assert lines[2] == "torn{"  # not a record: kept as it was
    assert json.loads(lines[1])["ids"] == ["b"] and len(lines) == 4
    before = log.path.read_bytes()
    assert log.drop_ids({"zzz"}) == 0
    assert log.path.read_bytes() == before
    assert AccessLog(tmp_path / "none.jsonl").drop_ids({"a"}) == 0
