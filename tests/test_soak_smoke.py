"""The soak and the crash loop at toy size, so they keep working between full soak runs.

`make soak` runs them at full size (bench/soak.py); here ~150 turns through the real daemon
against a faulty fake LLM, and two kill -9 trials on a short input: between a temp file's
write and its rename (an orphan the restart must clear), and before an LLM call (a batch the
restart must extract again).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from bench import crashloop, locomo, soak

pytestmark = pytest.mark.skipif(not locomo.available(), reason="LoCoMo dev data not available")


def test_load_soak_loses_nothing_under_faults(tmp_path: Path) -> None:
    # A high fault rate so that even a short run meets every kind of trouble path.
    result = soak.run_load(150, tmp_path, fault_rate=0.3, sample_every=0.5, log=io.StringIO())
    assert result["exit_status"] == 0, result["daemon_summary"]
    assert result["faults_total"] > 0
    assert sum(result["audit"]["outcomes"].values()) == 150
    assert result["lost"] == 0
    assert result["duplicated"] == 0
    assert result["audit"]["outcomes"]["fact"] > 0
    assert result["consistency_problems"] == []
    assert result["rss"]["samples"] > 0 and result["rss"]["max_mb"] > 0
    assert result["turns_per_second"] > 0
    assert result["ok"], result


def test_crash_loop_restarts_to_the_uninterrupted_folder(tmp_path: Path) -> None:
    result = crashloop.run(
        trials=2,
        turns=24,
        workdir=tmp_path,
        seed=1,
        second_crash=0.0,
        points=("file.rename", "llm.before"),
        log=io.StringIO(),
    )
    assert result["trials"] == 2
    assert result["kills_by_point"] == {"file.rename": 1, "llm.before": 1}
    assert result["unreached_points"] == []
    assert result["baseline_fact_files"] > 0
    assert result["trials_equal"] == 2, result["failed_trials"]
    assert result["lost"] == 0 and result["duplicated"] == 0
    assert result["ok"], result["failed_trials"]


def test_rss_trend_is_measured_over_the_last_half() -> None:
    # Warm-up from 100 to 500 MB, then +1 MB per 10 s over the second half.
    samples = [
        {"t": float(t), "fed": 0, "done": t, "rss_mb": 100.0 + 40 * t if t < 10 else 490.0 + t}
        for t in range(0, 41)
    ]
    summary = soak.rss_summary(samples)
    assert summary["last_half_slope_mb_per_min"] == 60.0
    assert summary["last_half_rise_mb"] == 20.0
    assert summary["max_mb"] == 530.0
    assert soak.slope([(0, 1.0), (1, 1.0)]) == 0.0
    anon = [{**s, "anon_mb": s["rss_mb"] / 2} for s in samples]
    assert soak.rss_summary(anon, "anon_mb")["last_half_rise_mb"] == 10.0
    assert soak.rss_summary(samples, "anon_mb") == {}  # series not sampled


def test_rss_of_a_running_process_has_its_anonymous_part() -> None:
    sizes = soak.resident_kb(os.getpid())
    assert sizes is not None
    total, anonymous = sizes
    assert 0 < anonymous < total
    assert soak.resident_kb(4_194_303 + 1000) is None  # no such process
