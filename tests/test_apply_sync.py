"""Durability of a consolidation's writes: a run writing a few files syncs each as it is
written; a large run syncs once at the end (an fsync pair per file dominated large runs, and
one sync of the whole machine cost a quiet run over a second when others had written much)."""

from __future__ import annotations

import os

import pytest

from engram_md.consolidate import apply
from engram_md.consolidate.run import consolidate
from engram_md.consolidate.vectors import Vectors
from engram_md.core import atomic
from engram_md.core.config import Config
from engram_md.store.fact_store import MemoryStore

from .consolidate_folder import NOW, plant


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counted = {"fsync": 0, "sync": 0}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        counted["fsync"] += 1
        real_fsync(fd)

    def sync() -> None:
        counted["sync"] += 1

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(apply.os, "sync", sync)
    return counted


def _run(cfg: Config) -> int:
    store = MemoryStore.open(cfg.layout, fsync=True)
    return consolidate(cfg, cfg.layout, store, now=NOW, vectors=Vectors(None, None)).applied


def test_a_run_of_few_changes_syncs_each_file_and_not_the_machine(
    cfg: Config, syncs: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(cfg.layout)
    monkeypatch.setattr(apply, "SYNC_EACH_UP_TO", 10_000)
    applied = _run(cfg)
    assert applied > 0 and syncs["sync"] == 0
    assert syncs["fsync"] >= 2 * applied  # each file and its folder


def test_a_large_run_syncs_once_at_the_end(
    cfg: Config, syncs: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(cfg.layout)
    monkeypatch.setattr(apply, "SYNC_EACH_UP_TO", 0)
    applied = _run(cfg)
    assert applied > 0 and syncs["sync"] == 1
    assert syncs["fsync"] < applied  # not one per file
