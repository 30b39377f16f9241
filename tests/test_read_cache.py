"""The read cache (state/read-cache.json) lets a consolidation run skip parsing the fact files
whose bytes the last run saw, and never changes what a run reads or plans: an edited file is
read in full however its size and time look, files the run wrote are known as the next read
parses them, a person's note is always parsed, and a broken or foreign cache is ignored.
`forget` and a secrets repair delete it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engram_md.consolidate.planner import load_facts
from engram_md.consolidate.run import Result, consolidate
from engram_md.consolidate.vectors import Vectors
from engram_md.core.config import Config
from engram_md.core.models import Fact
from engram_md.store import factfile, read_cache
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact
from engram_md.store.read_cache import ReadCache, decode

from .consolidate_folder import NOW, plant
from .test_forget import build_folder, forget_in


def _run(cfg: Config, *, dry_run: bool = False) -> Result:
    store = MemoryStore.open(cfg.layout)
    return consolidate(
        cfg, cfg.layout, store, now=NOW, vectors=Vectors(None, None), dry_run=dry_run
    )


def _cache_path(cfg: Config) -> Path:
    return cfg.layout.state_dir / read_cache.FILE_NAME


def _entries(cfg: Config) -> dict[str, list[object]]:
    files: dict[str, list[object]] = json.loads(_cache_path(cfg).read_text())["files"]
    return files


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files parsed in full from here on (a small folder is read in this process)."""
    seen: list[Path] = []
    real = factfile.parse_bytes

    def counting(raw: bytes, path: Path) -> Fact:
        seen.append(path)
        return real(raw, path)

    monkeypatch.setattr(factfile, "parse_bytes", counting)
    return seen


def _loaded(cfg: Config, cache: ReadCache | None) -> list[tuple[Path, Fact]]:
    return load_facts(MemoryStore.open(cfg.layout), cache=cache).facts


def test_a_run_after_a_run_parses_no_file_and_reads_what_a_full_read_reads(
    cfg: Config, parses: list[Path]
) -> None:
    plant(cfg.layout)
    first = _run(cfg)
    assert first.applied > 0  # the run wrote files: they are known as written
    parses.clear()
    cache = ReadCache.load(cfg.layout.state_dir, cfg.layout.memory_dir)
    cached = _loaded(cfg, cache)
    assert parses == []
    assert cached == _loaded(cfg, None)
    assert [f.content for _, f in cached] == [read_fact(p).content for p, _ in cached]
    # And a run from the cache plans what a run without one plans.
    with_cache = _run(cfg, dry_run=True)
    _cache_path(cfg).unlink()
    without = _run(cfg, dry_run=True)
    assert with_cache.plan.changes == without.plan.changes
    assert not _cache_path(cfg).exists()  # a dry run writes no cache


def test_every_entry_is_what_a_read_of_the_file_gives(cfg: Config) -> None:
    plant(cfg.layout)
    _run(cfg)
    entries = _entries(cfg)
    paths = {p.relative_to(cfg.layout.memory_dir).as_posix(): p for p, _ in _loaded(cfg, None)}
    assert set(entries) == set(paths)
    for key, entry in entries.items():
        raw = paths[key].read_bytes()
        assert entry[0] == factfile.file_digest(raw)
        content = factfile.statement_of_bytes(raw)
        assert content is not None and decode(entry, content) == read_fact(paths[key])


def test_an_edit_that_keeps_the_size_and_the_time_is_read(cfg: Config, parses: list[Path]) -> None:
    plant(cfg.layout)
    _run(cfg)
    path, fact = _loaded(cfg, None)[0]
    raw = path.read_bytes()
    before = os.stat(path)
    old = fact.content[:4].encode()
    new = old.swapcase() if old.swapcase() != old else old[::-1]
    head, rule, body = raw.partition(b"\n---\n")
    path.write_bytes(head + rule + body.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    parses.clear()
    cache = ReadCache.load(cfg.layout.state_dir, cfg.layout.memory_dir)
    by_path = dict(_loaded(cfg, cache))
    assert parses == [path]
    assert by_path[path].content.startswith(new.decode())


def test_a_note_written_by_hand_is_never_taken_from_the_cache(
    cfg: Config, parses: list[Path]
) -> None:
    plant(cfg.layout)
    note = cfg.layout.facts_dir / "2026-02-20" / "dentist.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Dana is allergic to shellfish.\n")
    _run(cfg)
    assert "facts/2026-02-20/dentist.md" not in _entries(cfg)
    parses.clear()
    cache = ReadCache.load(cfg.layout.state_dir, cfg.layout.memory_dir)
    by_path = dict(_loaded(cfg, cache))
    assert parses == [note] and by_path[note].content == "Dana is allergic to shellfish."
    assert note.read_text() == "Dana is allergic to shellfish.\n"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: "[]",
        lambda text: text.replace('"format":1', '"format":99'),
        lambda text: text.replace('"code":"', '"code":"other-'),  # another version's reading
    ],
)
def test_a_broken_or_foreign_cache_is_ignored_and_replaced(
    cfg: Config, parses: list[Path], damage: object
) -> None:
    plant(cfg.layout)
    _run(cfg)
    path = _cache_path(cfg)
    assert callable(damage)
    path.write_text(damage(path.read_text()))
    parses.clear()
    cache = ReadCache.load(cfg.layout.state_dir, cfg.layout.memory_dir)
    facts = _loaded(cfg, cache)
    assert len(parses) == len(facts) and facts == _loaded(cfg, None)
    _run(cfg)
    assert len(_entries(cfg)) == len(facts)


def test_a_malformed_entry_is_read_from_the_file(cfg: Config, parses: list[Path]) -> None:
    plant(cfg.layout)
    _run(cfg)
    data = json.loads(_cache_path(cfg).read_text())
    key = sorted(data["files"])[0]
    data["files"][key][2] = "no such category"
    _cache_path(cfg).write_text(json.dumps(data))
    parses.clear()
    cache = ReadCache.load(cfg.layout.state_dir, cfg.layout.memory_dir)
    assert _loaded(cfg, cache) == _loaded(cfg, None)
    assert [p.relative_to(cfg.layout.memory_dir).as_posix() for p in parses][0] == key


def test_forget_deletes_the_cache(tmp_path: Path) -> None:
    folder = build_folder(tmp_path)
    store = MemoryStore.open(folder.layout)
    consolidate(folder.cfg, folder.layout, store, now=NOW, vectors=Vectors(None, None))
    path = folder.layout.state_dir / read_cache.FILE_NAME
    assert path.is_file()
    target = next(iter(folder.facts.values()))
    report = forget_in(folder, [target.id])
    assert not path.exists() and read_cache.FILE_NAME in report.scrubbed
