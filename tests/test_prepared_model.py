"""The MiniLM graph prepared once per machine, and how the model is run: same vectors, less
memory, and the shipped file whenever the prepared one cannot be had."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engram_md.core.allocator import PeriodicRelease, _glibc
from engram_md.text import embeddings
from engram_md.text.embeddings import MAX_RUN_TOKENS, LocalMiniLM, _runs
from engram_md.text.prepared_model import GRAPH_NAME, WEIGHTS_NAME

TEXTS = [
    "Dana moved to Munich last spring.",
    "We use PostgreSQL 16 for the orders service.",
    "ok",
    "Please always answer in short bullet points. " * 30,
]


def _shipped_vectors(monkeypatch: pytest.MonkeyPatch, texts: list[str]) -> np.ndarray:
    """Vectors from the shipped file, as before there was a prepared graph."""
    monkeypatch.setattr(embeddings, "prepared_model", lambda source, version: None)
    vectors = LocalMiniLM().embed(texts)
    monkeypatch.undo()
    return vectors


def test_the_prepared_graph_gives_the_shipped_files_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_MD_MODEL_CACHE", str(tmp_path / "models"))
    prepared = LocalMiniLM().embed(TEXTS)
    folders = list((tmp_path / "models").iterdir())
    assert len(folders) == 1
    assert {p.name for p in folders[0].iterdir()} == {GRAPH_NAME, WEIGHTS_NAME}
    # The weights are float32 now: four times the int8 file's 23 MB, less the graph.
    assert (folders[0] / WEIGHTS_NAME).stat().st_size > 80_000_000
    shipped = _shipped_vectors(monkeypatch, TEXTS)
    assert np.abs(prepared - shipped).max() < 1e-5
    # A second embedder finds it and prepares nothing.
    before = (folders[0] / GRAPH_NAME).stat().st_mtime_ns
    monkeypatch.setenv("ENGRAM_MD_MODEL_CACHE", str(tmp_path / "models"))
    LocalMiniLM().embed(["again"])
    assert (folders[0] / GRAPH_NAME).stat().st_mtime_ns == before


def test_a_cache_that_cannot_be_made_leaves_the_shipped_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("ENGRAM_MD_MODEL_CACHE", str(blocker / "models"))
    with caplog.at_level(logging.WARNING):
        vectors = LocalMiniLM().embed(TEXTS[:2])
    assert vectors.shape == (2, 384)
    assert "could not prepare the embedding model" in caplog.text
    assert blocker.is_file()


def test_a_damaged_prepared_graph_is_reported_and_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ENGRAM_MD_MODEL_CACHE", str(tmp_path / "models"))
    good = LocalMiniLM().embed(TEXTS[:2])
    (folder,) = (tmp_path / "models").iterdir()
    (folder / GRAPH_NAME).write_bytes(b"not a graph")
    with caplog.at_level(logging.WARNING):
        again = LocalMiniLM().embed(TEXTS[:2])
    assert "does not open" in caplog.text
    assert np.abs(good - again).max() < 1e-5


def test_runs_bound_texts_and_padded_tokens() -> None:
    lengths = [3, 250, 12, 40, 256, 7, 256, 100, 5, 60] * 7
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs = list(_runs(order, lengths, batch_size=8))
    assert [i for run in runs for i in run] == order  # each text once, in order
    for run in runs:
        assert len(run) <= 8
        # A run of one long text is allowed whatever its length; otherwise padded size fits.
        assert len(run) == 1 or len(run) * max(lengths[i] for i in run) <= MAX_RUN_TOKENS
    assert any(len(run) == 8 for run in runs)  # short texts still fill a batch


def test_periodic_release_waits_its_period(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    released: list[float] = []
    monkeypatch.setattr(
        "engram_md.core.allocator.release_free_memory", lambda: released.append(now[0])
    )
    release = PeriodicRelease(2.0, clock=lambda: now[0])
    for step in (0.5, 1.0, 1.0, 0.5, 1.5, 0.1):
        now[0] += step
        release()
    assert released == [102.5, 104.5]  # due at 102.0, then 2 s after the first


@pytest.mark.skipif(_glibc() is None, reason="the mmap threshold is glibc's")
@pytest.mark.parametrize("fixed", [True, False])
def test_freed_large_blocks_go_back_once_the_threshold_is_fixed(fixed: bool) -> None:
    # One large block freed first raises glibc's threshold (unless fixed); blocks of 2 MB
    # then come from the heap, under a smaller block still in use, and stay when freed.
    code = (
        "import gc\n"
        "from engram_md.core.allocator import fix_mmap_threshold\n"
        "def anon_mb():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('RssAnon:'):\n"
        "            return int(line.split()[1]) // 1024\n"
        f"{'fix_mmap_threshold()' if fixed else 'pass'}\n"
        "big = bytearray(16 << 20)\n"
        "del big\n"
        "blocks = [bytearray(2 << 20) for _ in range(50)]\n"
        "pinned = bytearray(512 << 10)\n"
        "before = anon_mb()\n"
        "del blocks\n"
        "gc.collect()\n"
        "print(before, anon_mb())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = map(int, done.stdout.split())
    if fixed:
        assert before - after >= 80, (before, after)  # of the 100 MB freed
    else:
        assert before - after < 50, (before, after)  # what the fix is for
