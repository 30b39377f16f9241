"""The scale bench: its chart from a made-up result, and one tiny run end to end."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench import scale_bench

SVG = "{http://www.w3.org/2000/svg}"


def _figures(p50: float, p99: float, cpu: float, rss: float, cold: float) -> dict[str, object]:
    status = {"VmRSS": rss, "RssAnon": rss - 40, "RssFile": 40.0, "VmHWM": rss + 30}
    return {
        "build": {"reindex_cold_per_s": cold, "reindex_cached_per_s": cold * 4},
        "recall_ms": {"p50": p50, "p99": p99, "cpu_p50": cpu, "cpu_per_query": cpu},
        "rss_warm_mb": status,
        "rss_after_mb": status,
        "load_before": 1.5,
        "load_after": 2.5,
    }


def _made_up() -> dict[str, object]:
    return {
        "started": "2026-11-27T22:00:00Z",
        "revision": "abcdef0123",
        "machine": {"cpus": 2},
        "queries": 500,
        "sizes": {
            "1000": _figures(5.0, 12.0, 4.0, 300.0, 250.0),
            "10000": _figures(8.0, 20.0, 6.0, 420.0, 260.0),
            "100000": _figures(18.0, 70.0, 15.0, 1400.0, 240.0),
        },
        "not_measured": {"1000000": scale_bench.UNMEASURED_1M},
    }


def test_chart_has_three_panels_every_series_and_the_goals() -> None:
    svg = scale_bench.render_svg(_made_up())
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    panels = [g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]
    assert [p.get("data-title") for p in panels] == [
        "Recall through the daemon",
        "Daemon resident size",
        "Indexing: engram-md reindex",
    ]
    series = {g.get("data-series"): g for g in root.iter(f"{SVG}g") if g.get("data-series")}
    assert set(series) == {
        "p50 (wall)",
        "p99 (wall)",
        "p50 of the daemon's CPU per answer",
        "after warm-up",
        "after the questions",
        "peak (VmHWM)",
        "empty cache (MiniLM)",
        "cached vectors",
    }
    for name, group in series.items():
        lines = group.findall(f"{SVG}polyline")
        assert len(lines) == 1, name
        assert len(lines[0].get("points", "").split()) == 3, name  # 1k, 10k, 100k
    # Larger folders are further right on the log axis.
    xs = [float(p.split(",")[0]) for p in series["p50 (wall)"][0].get("points", "").split()]
    assert xs == sorted(xs) and xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)
    goals = {g.get("data-goal") for g in root.iter(f"{SVG}g") if g.get("data-goal")}
    assert goals == {
        "goal: p99 ≤ 50 ms",
        "goal: p50 ≤ 10 ms of CPU",
        "goal ≤ 250 MB",
        "goal ≤ 400 MB",
        "goal 10k in ≤ 60 s",
    }
    assert "1M not measured" in svg


def test_chart_leaves_out_a_size_without_figures() -> None:
    result = _made_up()
    del result["sizes"]["100000"]["recall_ms"]  # type: ignore[index]
    root = ET.fromstring(scale_bench.render_svg(result))
    p50 = next(g for g in root.iter(f"{SVG}g") if g.get("data-series") == "p50 (wall)")
    assert len(p50[0].get("points", "").split()) == 2


def test_tiny_run_end_to_end(tmp_path: Path) -> None:
    result = scale_bench.run([200], queries=5, keep=tmp_path, with_breakdown=False)
    figures = result["sizes"]["200"]
    assert figures["build"]["files"] == 200
    assert figures["build"]["reindex_cold_per_s"] > 0
    assert figures["build"]["reindex_cached_per_s"] > 0
    assert figures["recall_ms"]["n"] == 5
    assert 0 < figures["recall_ms"]["p50"] <= figures["recall_ms"]["p99"]
    assert figures["rss_after_mb"]["VmRSS"] > 50
    assert "1000000" in result["not_measured"]
    # Measured again without a rebuild: the recorded indexing figures come back.
    again = scale_bench.run([200], queries=5, keep=tmp_path, reuse=True, with_breakdown=False)
    assert again["sizes"]["200"]["build"]["reindex_cold_s"] == figures["build"]["reindex_cold_s"]
    out = scale_bench.write(again, tmp_path / "scale.json", tmp_path / "scale.svg")
    assert json.loads(out.read_text())["sizes"]["200"]["recall_ms"]["n"] == 5
    ET.fromstring((tmp_path / "scale.svg").read_text())
