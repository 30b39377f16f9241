"""One memory folder on two machines through git: each machine has its own state folder (its
own index), clones and pulls the folder, and its writer reconciles the index from the files.
Facts written on both sides at the same time are different files, so git merges them as
files and both machines recall both.

Real git repositories (a bare origin and two clones), real fact files, the real local model,
a real LanceDB index per machine.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.app import make_recaller, open_writer
from engram_md.core.config import Config, load_config
from engram_md.core.models import CandidateFact, Category, Source
from engram_md.index.opened import FolderParts
from engram_md.ingest.pipeline import to_fact
from engram_md.recall.wire import RecallOptions
from engram_md.text.embeddings import LocalMiniLM

from .conftest import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SHARED = "The team moved the staging database to PostgreSQL 16."
ON_A = "Dana prefers uv over pip for installing Python packages."
ON_B = "Priya reviews every pull request that touches billing."


def machine(root: Path) -> Config:
    return load_config(
        None, env={}, overrides={"memory_dir": root / "memory", "state_dir": root / "state"}
    )


def remember(parts: FolderParts, text: str, minute: int) -> None:
    """A fact file written and indexed the way the pipeline ends a batch."""
    assert parts.indexer is not None
    item = to_fact(
        CandidateFact(
            category=Category.PREFERENCE,
            content=text,
            confidence=0.95,
            source_turn_ids=(f"t{minute}",),
            session=f"s{minute}",
            created=T0 + timedelta(minutes=minute),
            source=Source.MANUAL,
        )
    )
    assert item is not None
    parts.indexer.upsert_fact(parts.store.write_new(item), item, new=True)
    parts.indexer.batch_done()


def recalled(cfg: Config, minilm: LocalMiniLM) -> set[str]:
    """What this machine's writer recalls of the three facts after reconciling at open."""
    with open_writer(cfg, embedder=minilm) as parts:
        recaller = make_recaller(parts)
        found: set[str] = set()
        for query in ("staging database", "Python package manager", "billing pull requests"):
            answer = recaller.recall(query, RecallOptions(record_access=False)).answer()
            found |= {m.content for m in answer.memories} & {SHARED, ON_A, ON_B}
    return found


def test_two_clones_add_facts_at_once_and_both_recall_both(
    tmp_path: Path, minilm: LocalMiniLM
) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "--bare", "-b", "main", str(origin))
    a, b = machine(tmp_path / "a"), machine(tmp_path / "b")

    # Machine A starts the folder and shares it.
    with open_writer(a, embedder=minilm) as parts:
        remember(parts, SHARED, 0)
    git(a.memory_dir, "init", "-b", "main")
    git(a.memory_dir, "add", "-A")
    git(a.memory_dir, "commit", "-m", "first fact")
    git(a.memory_dir, "remote", "add", "origin", str(origin))
    git(a.memory_dir, "push", "-u", "origin", "main")

    # Machine B clones it: a fresh state folder, its index built from the files at open.
    b.memory_dir.parent.mkdir(parents=True)
    git(b.memory_dir.parent, "clone", str(origin), b.memory_dir.name)
    assert recalled(b, minilm) == {SHARED}

    # Both remember something at the same time, each in its own file.
    with open_writer(a, embedder=minilm) as parts:
        remember(parts, ON_A, 1)
    with open_writer(b, embedder=minilm) as parts:
        remember(parts, ON_B, 2)
    git(a.memory_dir, "add", "-A")
    git(a.memory_dir, "commit", "-m", "a: uv")
    git(a.memory_dir, "push")
    git(b.memory_dir, "add", "-A")
    git(b.memory_dir, "commit", "-m", "b: billing")
    # B is behind: the pull merges A's new file beside its own, no conflict.
    git(b.memory_dir, "pull", "--no-rebase", "--no-edit")
    git(b.memory_dir, "push")
    git(a.memory_dir, "pull", "--no-rebase", "--no-edit")
    assert git(a.memory_dir, "status", "--porcelain") == ""
    assert git(b.memory_dir, "status", "--porcelain") == ""

    # Each daemon's reconcile at open picks up the facts the pull brought.
    assert recalled(a, minilm) == {SHARED, ON_A, ON_B}
    assert recalled(b, minilm) == {SHARED, ON_A, ON_B}
