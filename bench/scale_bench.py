"""Scale curve: indexing rate, recall latency and the daemon's size from 1k to 100k memories.

    python -m bench.scale_bench [--sizes 1000 10000 100000] [--queries 500] [--repeats 3]
                                [--keep DIR [--reuse]] [--svg docs/scale.svg] [--out FILE]
                                [--no-breakdown]

For each size N (the folders of :mod:`bench.latency_bench`: N synthetic fact files in the
documented format, templates over small vocabularies, fixed seed):

* **indexing** — ``engram-md reindex`` with an empty embedding cache (every statement
  through MiniLM), then again into a state folder that holds only the embedding cache the
  first run left (parsing, the index writes and the full-text index, no model work). Each is
  a child process timed whole, start-up included; the rate is fact files per second.
* **recall through the daemon** — ``engram-md run`` over the folder, 10 warm-up questions,
  then ``--queries`` questions over loopback (``RecallClient``), one at a time: wall p50 and
  p99 per answer, and the daemon's own CPU per answer: p50 and p99 from its threads' run
  time around each answer (``/proc/<pid>/task/*/schedstat``, nanoseconds), and the mean from
  its user + system time over all the answers (``/proc/<pid>/stat``); the daemon's CPU while
  idle, measured just before, is reported beside it.
* **the daemon's size** — ``/proc/<pid>/status`` when it advertises recall (before its
  model is loaded), after the warm-up and after the questions: VmRSS (with its anonymous and
  file-backed parts) and VmHWM, the peak.
* **where the size goes** (the largest size, unless ``--no-breakdown``) — the daemon's own
  code run in a child process with its resident size recorded around each step of its
  start (hash index, index open and reconcile, the resident copy of the table, the model,
  structure, the first recall), then the sizes of what it holds (the resident matrix and
  columns, Arrow's allocations, the row cache), the largest memory mappings, and in a second
  child the Python heap by source line (tracemalloc).

Recall and size are measured on ``--repeats`` daemons one after the other; each figure is
the median over them (each daemon's own figures are kept under ``runs``).

With ``--keep DIR`` the folders are built under ``DIR/<size>`` and left there, with their
indexing figures in ``build.json``; ``--reuse`` measures such folders again without
rebuilding them (the indexing figures are then the ones recorded when they were built). The
embedding cache and the access log are put back as the build left them before each daemon,
so a repeated question never finds its vector cached from an earlier run.

1M memories are not measured by default: MiniLM would take about an hour on the 2 cores
this runs on to embed a million statements (the cold reindex of 100k takes ~10 min), and
writing the million files ~25 min more. ``--sizes 1000000`` runs it all the same.

Goals drawn on the chart (issue 20): recall p50 <= 10 ms of CPU and p99 <= 50 ms; the
daemon's RSS <= 250 MB at 10k memories and <= 400 MB at 100k; reindex of 10k fact files
<= 60 s (latency_bench's goal, 167 files/s).

The machine is small and shared: sizes run one after the other, never side by side, each
figure is a median or a percentile over many questions, and the one-minute load average is
recorded before and after each part.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from . import latency_bench
from .pipeline_bench import _cli

REPO = Path(__file__).resolve().parents[1]
BUILD_FILE = "build.json"
DEFAULT_SIZES = (1_000, 10_000, 100_000)
UNMEASURED_1M = (
    "1M not measured: embedding a million statements with MiniLM takes ~1 h on these 2 "
    "shared cores (and writing the files ~25 min); run --sizes 1000000 to measure it"
)
# Goals (issue 20).
GOAL_P50_CPU_MS = 10.0
GOAL_P99_MS = 50.0
GOAL_RSS_MB = {10_000: 250.0, 100_000: 400.0}
GOAL_REINDEX_10K_PER_S = 10_000 / 60
IDLE_S = 3.0
STATUS_FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


# ---------------------------------------------------------------- building a folder


def build(root: Path, n: int) -> dict[str, Any]:
    """Write ``n`` fact files under ``root/memory`` and index them twice; the figures.

    First ``engram-md reindex`` with an empty embedding cache, then again into a state folder
    holding only the embedding cache the first run left. The figures are also written to
    ``root/build.json``, with the sizes of the embedding cache's files (see :func:`_reset`).
    """
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    memory_dir, state_dir = root / "memory", root / "state"
    out: dict[str, Any] = {"load_before": latency_bench._load()}
    t0 = time.perf_counter()
    out["files"] = latency_bench.write_facts(memory_dir, n)
    out["files_written_s"] = round(time.perf_counter() - t0, 2)

    result, wall, rss = _cli(root, "reindex")
    latency_bench._check(result, "reindex")
    out["reindex_cold_s"] = round(wall, 2)
    out["reindex_cold_per_s"] = round(out["files"] / wall, 1)
    out["reindex_cold_peak_rss_mb"] = rss
    out["load_after_cold"] = latency_bench._load()

    # The cached run gets a state folder of its own; the cold one is put back afterwards.
    cold = root / "state-cold"
    state_dir.rename(cold)
    try:
        shutil.copytree(cold / "embeddings", state_dir / "embeddings")
        result, wall, rss = _cli(root, "reindex")
        latency_bench._check(result, "reindex (cached vectors)")
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        cold.rename(state_dir)
    out["reindex_cached_s"] = round(wall, 2)
    out["reindex_cached_per_s"] = round(out["files"] / wall, 1)
    out["reindex_cached_peak_rss_mb"] = rss
    out["load_after"] = latency_bench._load()
    cache = state_dir / "embeddings"
    out["embedding_cache_bytes"] = {p.name: p.stat().st_size for p in sorted(cache.iterdir())}
    (root / BUILD_FILE).write_text(json.dumps(out, indent=2) + "\n")
    return out


def _reset(root: Path, built: dict[str, Any]) -> None:
    """Put the state the daemon changes back as the build left it.

    The embedding cache files are append-only, so cutting them to their size after the build
    drops exactly the vectors later runs added (the questions'); the access log and a stale
    endpoint file go.
    """
    state_dir = root / "state"
    sizes: dict[str, int] = built.get("embedding_cache_bytes", {})
    cache = state_dir / "embeddings"
    for path in cache.iterdir() if cache.is_dir() else ():
        if path.name in sizes:
            os.truncate(path, sizes[path.name])
        else:
            path.unlink()
    for name in ("access.jsonl", "daemon.json"):
        (state_dir / name).unlink(missing_ok=True)


# ---------------------------------------------------------------- the daemon


def _status(pid: int) -> dict[str, float | None]:
    return {f: latency_bench._status_mb(pid, f) for f in STATUS_FIELDS}


def _threads_cpu_s(pid: int) -> float:
    """CPU seconds a process's live threads have run, to the nanosecond (the first field of
    each ``/proc/<pid>/task/<tid>/schedstat``): fine enough to time one answer, which
    ``/proc/<pid>/stat``'s clock ticks (10 ms) are not. A thread that ended takes its time
    with it; the daemon's threads live as long as it does."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def measure(root: Path, queries: int) -> dict[str, Any]:
    """Recall latency, CPU per answer and the size of a daemon over ``root``'s folder."""
    from engram_md.recall.server import RecallClient

    pool = latency_bench.make_queries(latency_bench.WARMUP + queries)
    warmup, timed = pool[: latency_bench.WARMUP], pool[latency_bench.WARMUP :]
    memory_dir, state_dir = root / "memory", root / "state"
    out: dict[str, Any] = {"load_before": latency_bench._load()}
    with latency_bench.running_daemon(root, memory_dir, state_dir) as (proc, endpoint, ready):
        out["daemon_ready_s"] = round(ready, 2)
        out["rss_ready_mb"] = _status(proc.pid)
        with RecallClient(endpoint, timeout=60.0) as client:
            for query in warmup:
                client.recall(query)
            out["rss_warm_mb"] = _status(proc.pid)
            # What the daemon spends doing nothing (its loops and watchers): the context for
            # the CPU per answer below, which includes it.
            cpu0 = latency_bench._cpu_s(proc.pid)
            time.sleep(IDLE_S)
            out["idle_cpu_ms_per_s"] = round(
                (latency_bench._cpu_s(proc.pid) - cpu0) * 1000 / IDLE_S, 2
            )
            samples, cpu_samples = [], []
            cpu0, t_start = latency_bench._cpu_s(proc.pid), time.perf_counter()
            for query in timed:
                c0 = _threads_cpu_s(proc.pid)
                t0 = time.perf_counter()
                client.recall(query)
                samples.append(time.perf_counter() - t0)
                cpu_samples.append(_threads_cpu_s(proc.pid) - c0)
            cpu = latency_bench._cpu_s(proc.pid) - cpu0
            elapsed = time.perf_counter() - t_start
        out["recall_ms"] = latency_bench._ms_stats(samples)
        cpu_ms = latency_bench._ms_stats(cpu_samples)
        out["recall_ms"]["cpu_p50"] = cpu_ms["p50"]
        out["recall_ms"]["cpu_p99"] = cpu_ms["p99"]
        out["recall_ms"]["cpu_per_query"] = round(cpu * 1000 / len(timed), 2)
        # The CPU the daemon would have spent idle over the same time, taken off.
        idle = out["idle_cpu_ms_per_s"] * elapsed / len(timed)
        out["recall_ms"]["cpu_per_query_less_idle"] = round(
            max(0.0, out["recall_ms"]["cpu_per_query"] - idle), 2
        )
        out["rss_after_mb"] = _status(proc.pid)
    out["load_after"] = latency_bench._load()
    return out


def median_of(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each number the median of its values over the runs, key by key (nested dicts too)."""
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r[key] for r in runs if key in r]
        if isinstance(first, dict):
            out[key] = median_of(values)
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            out[key] = round(statistics.median(values), 2)
        else:
            out[key] = first
    return out


# ---------------------------------------------------------------- where the size goes


def _rss_parts() -> dict[str, float]:
    mb = {f: latency_bench._status_mb(os.getpid(), f) for f in ("VmRSS", "RssAnon", "RssFile")}
    return {k: v for k, v in mb.items() if v is not None}


def _smaps_top(limit: int = 12) -> list[dict[str, Any]]:
    """Resident size per mapped file or kind of anonymous mapping, largest first."""
    totals: dict[str, int] = {}
    name = "?"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            name = head[5] if len(head) == 6 else "[anonymous]"
            if "/" in name:
                name = name.rsplit("/", 2)[-2] + "/" + name.rsplit("/", 1)[-1]
        elif line.startswith("Rss:"):
            totals[name] = totals.get(name, 0) + int(line.split()[1])
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:limit]
    return [{"mapping": k, "rss_mb": round(v / 1024, 1)} for k, v in ranked]


def _breakdown_child(root: Path, queries: int, trace: bool) -> dict[str, Any]:
    """Run the daemon's own ``run`` command in this process, recording its size as it starts.

    The steps are found by wrapping the functions the daemon calls (nothing else changes);
    a side thread asks the questions once recall is advertised, measures, and ends the
    daemon with SIGTERM as the bench's daemons are ended.
    """
    import tracemalloc

    if trace:
        tracemalloc.start(1)
    steps: list[dict[str, Any]] = []
    started = time.perf_counter()

    def mark(step: str) -> None:
        pa = sys.modules.get("pyarrow")  # read, never imported early for this
        arrow = pa.total_allocated_bytes() / 2**20 if pa is not None else 0.0
        figures = {"step": step, "s": round(time.perf_counter() - started, 2), **_rss_parts()}
        steps.append({**figures, "arrow_allocated_mb": round(arrow, 1)})

    # What `engram-md run` does first, before anything starts a native thread pool.
    from engram_md.core.allocator import limit_arenas, release_free_memory, route_arrow_to_malloc

    limit_arenas()
    route_arrow_to_malloc()
    mark("python started, allocators set")
    import engram_md.cli as cli
    from engram_md.index import indexer, table
    from engram_md.organize import structure
    from engram_md.recall import recaller
    from engram_md.recall.server import RecallClient, find_daemon
    from engram_md.store import fact_store
    from engram_md.text import embeddings

    mark("engram_md imported")
    held: dict[str, Any] = {}

    def around(owner: Any, name: str, label: str, *, once: bool = False) -> None:
        """Mark the size before and after ``owner.name`` runs (its first call, with once)."""
        original = owner.__dict__[name]
        function = original.__func__ if isinstance(original, classmethod) else original
        calls: list[Any] = []

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            first = not calls
            calls.append(args[0])
            if first or not once:
                mark(f"before {label}")
            value = function(*args, **kwargs)
            if first or not once:
                mark(f"after {label}")
            # What it made (a classmethod's return) or the instance it ran on.
            held[label] = value if isinstance(original, classmethod) else args[0]
            return value

        setattr(owner, name, classmethod(wrapper) if isinstance(original, classmethod) else wrapper)

    around(fact_store.MemoryStore, "open", "the store (hash index)")
    around(indexer.Indexer, "open", "the index opened and reconciled with the folder")
    around(indexer.Indexer, "reconcile", "reconcile", once=True)
    around(table.MemoryIndex, "_current", "the first read of the whole table", once=True)
    original_resident = table.Resident

    def resident(*args: Any, **kwargs: Any) -> Any:
        mark("the table read into Arrow, before the resident copy")
        made = original_resident(*args, **kwargs)
        held["resident"] = made
        mark("after the resident copy")
        return made

    table.Resident = resident  # type: ignore[misc]
    around(embeddings.LocalMiniLM, "_load", "the model's session", once=True)
    around(structure.Structure, "__init__", "structure (boxes, graph)")
    around(recaller.Recaller, "recall", "the first recall", once=True)
    around(embeddings.CachedEmbedder, "_open_existing", "the embedding cache's keys", once=True)

    memory_dir, state_dir = root / "memory", root / "state"
    result: dict[str, Any] = {}
    pool = latency_bench.make_queries(latency_bench.WARMUP + queries)

    def ask() -> None:
        try:
            endpoint_path = state_dir / "daemon.json"
            deadline = time.monotonic() + latency_bench.DAEMON_DEADLINE_S
            while (endpoint := find_daemon(endpoint_path)) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("the daemon did not advertise recall")
                time.sleep(0.05)
            mark("recall advertised")
            with RecallClient(endpoint, timeout=60.0) as client:
                for query in pool[: latency_bench.WARMUP]:
                    client.recall(query)
                mark(f"after {latency_bench.WARMUP} warm-up questions")
                for query in pool[latency_bench.WARMUP :]:
                    client.recall(query)
                mark(f"after {queries} more questions")
            # The daemon trims every 30 s; what stays after a trim is what it really holds.
            release_free_memory()
            mark("after malloc_trim (free pages handed back)")
            result.update(_held_sizes(held))
            result["smaps_top"] = _smaps_top()
            if trace:
                snapshot = tracemalloc.take_snapshot()
                stats = snapshot.statistics("lineno")
                result["tracemalloc_total_mb"] = round(sum(s.size for s in stats) / 2**20, 1)
                result["tracemalloc_top"] = [
                    {
                        "where": f"{_short(s.traceback[0].filename)}:{s.traceback[0].lineno}",
                        "mb": round(s.size / 2**20, 1),
                        "blocks": s.count,
                    }
                    for s in stats[:15]
                ]
        except Exception as exc:  # noqa: BLE001 - reported in the result, the daemon still ends
            result["error"] = repr(exc)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=ask, daemon=True).start()
    empty = root / "no-transcripts"
    empty.mkdir(exist_ok=True)
    sys.argv = ["engram-md", "--memory-dir", str(memory_dir), "--state-dir", str(state_dir)]
    sys.argv += ["run", "--watch", str(empty), "--no-stdin"]
    try:
        cli.main()
    except SystemExit:
        pass
    result["steps"] = steps
    return result


def _short(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("engram_md", "site-packages"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + (anchor == "site-packages") :])
    return "/".join(parts[-2:])


def _held_sizes(held: dict[str, Any]) -> dict[str, Any]:
    """Sizes of what the daemon holds, read off the objects themselves."""
    import pyarrow as pa

    out: dict[str, Any] = {"arrow_allocated_mb": round(pa.total_allocated_bytes() / 2**20, 1)}
    cache = held.get("the embedding cache's keys")
    vector_file = getattr(cache, "_file", None)
    if vector_file is not None:
        out["embedding_cache_keys"] = len(vector_file.index)
    store = held.get("the store (hash index)")
    hashes = getattr(store, "hashes", None)
    if hashes is not None and hasattr(hashes, "__len__"):
        out["hash_index_entries"] = len(hashes)
    res = held.get("resident")
    if res is not None:
        masks = sum(m.nbytes for m in res.masks.values())
        out["resident"] = {
            "rows": res.n,
            "vectors_mb": round(res.vectors.nbytes / 2**20, 1),
            "vectors_used_mb": round(res.vectors[: res.n].nbytes / 2**20, 1),
            "columns_arrow_mb": round(res.columns.nbytes / 2**20, 1),
            "shortlist_mb": (
                round(res.shortlist.projected.nbytes / 2**20, 1) if res.shortlist else 0.0
            ),
            "masks_mb": round(masks / 2**20, 1),
            "row_cache_entries": len(res.row_cache),
            "id_positions": len(res.pos),
        }
    return out


# ---------------------------------------------------------------- the chart


def _nice_step(top: float) -> float:
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _fmt(value: float) -> str:
    return f"{value:g}" if value < 10_000 else f"{value / 1000:g}k"


_SIZE_LABEL = {1_000: "1k", 10_000: "10k", 100_000: "100k", 1_000_000: "1M"}


def _panel(
    x0: float,
    y0: float,
    title: str,
    unit: str,
    series: list[tuple[str, str, list[tuple[int, float]], bool]],
    goals: list[tuple[str, list[tuple[int, float]]]],
    unmeasured: Sequence[int],
) -> list[str]:
    """One small multiple: log x (memories, 1k-1M), linear y from 0; series are (name, colour,
    points, dashed); goals are (label, points) drawn as red dashed marks."""
    w, h = 300.0, 230.0
    lo, hi = 3.0, 6.0
    values = [v for _, _, pts, _ in series for _, v in pts] + [v for _, g in goals for _, v in g]
    top = max(values, default=1.0) * 1.08 or 1.0
    step = _nice_step(top)
    top = step * math.ceil(top / step)

    def px(n: float) -> float:
        return x0 + (math.log10(n) - lo) / (hi - lo) * w

    def py(v: float) -> float:
        return y0 + h - v / top * h

    out = [f'<g class="panel" data-title="{escape(title)}">']
    out.append(
        f'<text x="{x0 + w / 2:.1f}" y="{y0 - 28:.1f}" class="title" '
        f'text-anchor="middle">{escape(title)}</text>'
    )
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" class="frame"/>')
    for n in unmeasured:
        out.append(
            f'<rect x="{px(n) - 14:.1f}" y="{y0}" width="28" height="{h}" class="unmeasured"/>'
        )
        out.append(
            f'<text x="{px(n) - 4:.1f}" y="{y0 + h / 2:.1f}" class="small" text-anchor="middle" '
            f'transform="rotate(-90 {px(n) - 4:.1f} {y0 + h / 2:.1f})">not measured</text>'
        )
    tick = 0.0
    while tick <= top + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" class="grid"/>')
        out.append(
            f'<text x="{x0 - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_fmt(tick)}</text>'
        )
        tick += step
    for n, label in _SIZE_LABEL.items():
        x = px(n)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + h}" class="grid"/>')
        out.append(
            f'<text x="{x:.1f}" y="{y0 + h + 16}" class="tick" text-anchor="middle">{label}</text>'
        )
    out.append(
        f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 34}" class="axis" text-anchor="middle">'
        "memories (log scale)</text>"
    )
    out.append(
        f'<text x="{x0 - 44}" y="{y0 + h / 2:.1f}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 {x0 - 44} {y0 + h / 2:.1f})">{escape(unit)}</text>'
    )
    for label, points in goals:
        # A goal over the whole axis is a line labelled at its right end; a goal at one size
        # is a short mark labelled beside it.
        out.append(f'<g class="goal" data-goal="{escape(label)}">')
        if len(points) == 1:
            (n, v) = points[0]
            pts = f"{px(n) - 22:.1f},{py(v):.1f} {px(n) + 22:.1f},{py(v):.1f}"
            out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3" class="goal-dot"/>')
            tx, anchor = px(n) + 26, "start"
        else:
            pts = " ".join(f"{px(n):.1f},{py(v):.1f}" for n, v in points)
            tx, anchor = x0 + w - (34 if unmeasured else 4), "end"
        out.append(f'<polyline points="{pts}" class="goal-line"/>')
        out.append(
            f'<text x="{tx:.1f}" y="{py(points[-1][1]) - 4:.1f}" class="goal-text" '
            f'text-anchor="{anchor}">{escape(label)}</text>'
        )
        out.append("</g>")
    for i, (name, colour, points, dashed) in enumerate(series):
        out.append(f'<g class="series" data-series="{escape(name)}">')
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        if points:
            pts = " ".join(f"{px(n):.1f},{py(v):.1f}" for n, v in points)
            out.append(
                f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
            )
            for n, v in points:
                out.append(
                    f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3.5" fill="{colour}">'
                    f"<title>{escape(name)}: {_fmt(round(v, 1))} {escape(unit)} at {n:,}"
                    "</title></circle>"
                )
        # The legend sits under the panel, where no line can cross it.
        ly = y0 + h + 56 + 15 * i
        out.append(
            f'<line x1="{x0 + 8}" y1="{ly - 4}" x2="{x0 + 30}" y2="{ly - 4}" stroke="{colour}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{x0 + 36}" y="{ly}" class="legend">{escape(name)}</text>')
        out.append("</g>")
    out.append("</g>")
    return out


def _points(sizes: dict[str, Any], get: Callable[[dict[str, Any]], Any]) -> list[tuple[int, float]]:
    points = []
    for key, figures in sorted(sizes.items(), key=lambda kv: int(kv[0])):
        try:
            value = get(figures)
        except (KeyError, TypeError):
            continue
        if value is not None:
            points.append((int(key), float(value)))
    return points


def render_svg(result: dict[str, Any]) -> str:
    """The scale curve as a hand-written SVG: three small multiples (recall, size, indexing)
    over a log axis of memories, with the goals."""
    sizes: dict[str, Any] = result.get("sizes", {})
    unmeasured = [int(k) for k in result.get("not_measured", {})]
    recall = [
        ("p99 (wall)", "#d62728", _points(sizes, lambda f: f["recall_ms"]["p99"]), False),
        ("p50 (wall)", "#1f77b4", _points(sizes, lambda f: f["recall_ms"]["p50"]), False),
        (
            "p50 of the daemon's CPU per answer",
            "#2ca02c",
            _points(sizes, lambda f: f["recall_ms"]["cpu_p50"]),
            True,
        ),
    ]
    after, warm = "rss_after_mb", "rss_warm_mb"
    rss = [
        ("peak (VmHWM)", "#d62728", _points(sizes, lambda f: f[after]["VmHWM"]), True),
        ("after the questions", "#9467bd", _points(sizes, lambda f: f[after]["VmRSS"]), False),
        ("after warm-up", "#1f77b4", _points(sizes, lambda f: f[warm]["VmRSS"]), False),
    ]
    ingest = [
        (
            "cached vectors",
            "#ff7f0e",
            _points(sizes, lambda f: f["build"]["reindex_cached_per_s"]),
            False,
        ),
        (
            "empty cache (MiniLM)",
            "#1f77b4",
            _points(sizes, lambda f: f["build"]["reindex_cold_per_s"]),
            False,
        ),
    ]
    notes = _notes(result)
    width, height = 1140, 462 + 15 * len(notes)
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
        "<style>"
        ".title{font-size:14px;font-weight:bold;fill:#222}.axis{font-size:12px;fill:#333}"
        ".tick{font-size:11px;fill:#555}.legend{font-size:11px;fill:#222}"
        ".small{font-size:10px;fill:#777}.frame{fill:none;stroke:#999}"
        ".grid{stroke:#e4e4e4}.unmeasured{fill:#f0f0f0}"
        ".goal-line{fill:none;stroke:#c00;stroke-width:1.3;stroke-dasharray:2 3}"
        ".goal-dot{fill:#fff;stroke:#c00}"
        ".goal-text{font-size:10px;fill:#c00;stroke:#fff;stroke-width:3px;paint-order:stroke}"
        ".head{font-size:16px;font-weight:bold;fill:#111}.note{font-size:11px;fill:#444}"
        "</style>",
        '<rect width="100%" height="100%" fill="#fff"/>',
        f'<text x="20" y="26" class="head">{escape(_headline(result))}</text>',
    ]
    lines += _panel(
        70,
        84,
        "Recall through the daemon",
        "ms per question",
        recall,
        [
            (f"goal: p99 ≤ {GOAL_P99_MS:g} ms", [(1_000, GOAL_P99_MS), (1_000_000, GOAL_P99_MS)]),
            (
                f"goal: p50 ≤ {GOAL_P50_CPU_MS:g} ms of CPU",
                [(1_000, GOAL_P50_CPU_MS), (1_000_000, GOAL_P50_CPU_MS)],
            ),
        ],
        unmeasured,
    )
    lines += _panel(
        450,
        84,
        "Daemon resident size",
        "MB",
        rss,
        [(f"goal ≤ {mb:g} MB", [(n, mb)]) for n, mb in sorted(GOAL_RSS_MB.items())],
        unmeasured,
    )
    lines += _panel(
        830,
        84,
        "Indexing: engram-md reindex",
        "fact files per second",
        ingest,
        [("goal 10k in ≤ 60 s", [(10_000, GOAL_REINDEX_10K_PER_S)])],
        unmeasured,
    )
    for i, note in enumerate(notes):
        lines.append(f'<text x="20" y="{462 + 15 * i}" class="note">{escape(note)}</text>')
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def _headline(result: dict[str, Any]) -> str:
    day = str(result.get("started", ""))[:10]
    rev = str(result.get("revision") or "")[:7]
    return f"engram-md at scale: synthetic fact files, {day}" + (f", {rev}" if rev else "")


def _notes(result: dict[str, Any]) -> list[str]:
    loads = [
        f.get(k)
        for f in result.get("sizes", {}).values()
        for k in ("load_before", "load_after")
        if isinstance(f.get(k), int | float)
    ]
    load = f", load average {min(loads):g}–{max(loads):g}" if loads else ""
    queries, repeats = result.get("queries", "?"), result.get("repeats", 1)
    cpus = result.get("machine", {}).get("cpus", "?")
    notes = [
        f"{cpus} shared cores{load}. Recall: {queries} questions one at a time over loopback "
        f"after 10 warm-up questions; medians of {repeats} daemon(s) per size.",
        "CPU: the daemon's threads' run time per answer. Size: VmRSS after the warm-up and "
        "after the questions (by then the daemon's 30-s malloc_trim has run), VmHWM.",
        "Indexing: the `engram-md reindex` child process timed whole (start-up included), "
        "with an empty embedding cache and with every vector cached.",
    ]
    notes += list(result.get("not_measured", {}).values())
    return notes


# ---------------------------------------------------------------- running it


def _revision() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "engram_md"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def breakdown(root: Path, queries: int) -> dict[str, Any]:
    """Where the daemon's size goes, from two child processes (see the module docstring)."""
    built = json.loads((root / BUILD_FILE).read_text())
    out: dict[str, Any] = {}
    for mode in ("steps", "tracemalloc"):
        _reset(root, built)  # or the second child finds every question's vector cached
        argv = [sys.executable, "-m", "bench.scale_bench", "--breakdown-child", str(root)]
        argv += ["--queries", str(queries)] + (["--trace"] if mode == "tracemalloc" else [])
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=latency_bench._env(), cwd=REPO)
        latency_bench._check(done, f"breakdown ({mode})")
        figures = json.loads(done.stdout.decode().strip().splitlines()[-1])
        figures["bench_s"] = round(time.perf_counter() - t0, 1)
        out[mode] = figures
    return out


def run(
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries: int = 500,
    *,
    repeats: int = 1,
    keep: Path | None = None,
    reuse: bool = False,
    with_breakdown: bool = True,
) -> dict[str, Any]:
    """Figures per size (``result["sizes"][str(n)]``): ``build`` (indexing), the daemon's
    ``recall_ms`` (p50/p95/p99/mean/max wall, ``cpu_per_query``), ``rss_ready_mb``,
    ``rss_warm_mb``, ``rss_after_mb`` (VmRSS, RssAnon, RssFile, VmHWM), ``daemon_ready_s``,
    ``idle_cpu_ms_per_s`` and the load average around each part, each the median over
    ``repeats`` daemons (their own figures under ``runs``); ``not_measured`` says why a size
    (1M) is absent; ``breakdown`` is the largest size's, when asked for."""
    result: dict[str, Any] = {
        "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "revision": _revision(),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "queries": queries,
        "repeats": repeats,
        "sizes": {},
    }
    if 1_000_000 not in sizes:
        result["not_measured"] = {"1000000": UNMEASURED_1M}
    with tempfile.TemporaryDirectory(prefix="engram-scale-", dir="/tmp") as tmp:
        base = keep if keep is not None else Path(tmp)
        for n in sorted(sizes):
            root = base / str(n)
            if reuse and (root / BUILD_FILE).is_file():
                built = json.loads((root / BUILD_FILE).read_text())
                built["reused"] = str(root)
            else:
                built = build(root, n)
            runs = []
            for _ in range(repeats):
                _reset(root, built)
                runs.append(measure(root, queries))
            figures = {"build": built, **median_of(runs)}
            if repeats > 1:
                figures["runs"] = runs
            result["sizes"][str(n)] = figures
            print(f"scale bench, {n} memories: {json.dumps(figures)}", file=sys.stderr, flush=True)
        if with_breakdown and sizes:
            root = base / str(max(sizes))
            result["breakdown"] = {"size": max(sizes), **breakdown(root, min(queries, 200))}
            _reset(root, json.loads((root / BUILD_FILE).read_text()))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3, help="Daemons per size (medians).")
    parser.add_argument("--keep", type=Path, default=None, help="Build under KEEP/<size>; keep.")
    parser.add_argument("--reuse", action="store_true", help="Measure folders under KEEP again.")
    parser.add_argument("--svg", type=Path, default=Path("docs/scale.svg"))
    parser.add_argument("--out", type=Path, default=None, help="bench/results/scale-<date>.json")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--breakdown-child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.breakdown_child is not None:
        figures = _breakdown_child(args.breakdown_child, args.queries, args.trace)
        print(json.dumps(figures), flush=True)
        return 0
    result = run(
        args.sizes,
        args.queries,
        repeats=args.repeats,
        keep=args.keep,
        reuse=args.reuse,
        with_breakdown=not args.no_breakdown,
    )
    write(result, args.out, args.svg)
    print(json.dumps(result, indent=2))
    return 0


def write(result: dict[str, Any], out: Path | None, svg: Path | None) -> Path:
    """The JSON to ``out`` (default ``bench/results/scale-<date>.json``), the chart to ``svg``."""
    out = out or REPO / "bench" / "results" / f"scale-{result['started'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if svg is not None:
        svg.parent.mkdir(parents=True, exist_ok=True)
        svg.write_text(render_svg(result), encoding="utf-8")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
