"""How memories are grouped: boxes per session, memories per box, traces, box topics.

    python -m bench.boxes_bench [--keep DIR] [--only NAME ...] [--json]
    python -m bench.boxes_bench --sweep min_similarity=0.3,0.4,0.5

Each input goes through the real CLI, offline (``engram-md ingest FILE`` into a fresh memory
folder): the sample transcripts (``../shared/transcripts/*.jsonl``, ``examples/demo.jsonl``)
and the LoCoMo dev conversations (``../shared/bench``; skipped cleanly without them), fed the
way the recall bench feeds them: one engram session per conversation, each LoCoMo session at
its own date, so sessions are days apart.

A *session* here is what the data calls one: a transcript's session, or one LoCoMo session
(a box belongs to the session of its first memory's first turn). Reported per input: boxes per
session and memories per box (median, mean, max), the share of one-memory boxes, the seal
reasons, traces and boxes per trace, and the topics of a few boxes. Whether the cuts inside a
session are real: for each memory of a session cut into several boxes, its cosine with the
rest of its own box minus its cosine with the neighbouring box (:func:`separation`; MiniLM).

``--sweep`` runs one ``boxes`` setting at several values on conv-26 (the tuning conversation)
through ``--config``; the chosen value is the highest before the cuts stop separating (the
silhouette under 0.1) or one-memory boxes appear.

Goals: the samples' one talk about a database migration (09:00-09:07) in 1-2 boxes; on
LoCoMo, few boxes per session, few one-memory boxes, and traces that gather several boxes.
The box thresholds were tuned on conv-26; conv-30 is reported as the held-out check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engram_md.core.config import EmbeddingConfig
from engram_md.core.paths import MemoryLayout
from engram_md.organize.boxes import Box, member_facts
from engram_md.organize.boxfile import box_files, read_box
from engram_md.organize.traces import load_traces
from engram_md.text.embeddings import Embedder, make_embedder

from . import locomo

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT.parent / "shared" / "transcripts"
DEMO = ROOT / "examples" / "demo.jsonl"
TUNED_ON = "conv-26"
SHOWN_BOXES = 4  # topics printed per input
_DIA = re.compile(r"^D(\d+):\d+$")


def inputs() -> dict[str, Path | dict[str, Any]]:
    """Name -> a transcript file, or a LoCoMo conversation."""
    out: dict[str, Path | dict[str, Any]] = {"demo": DEMO}
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        out[path.stem] = path
    if locomo.available():
        for conv in locomo.load():
            out[str(conv["sample_id"])] = conv
    return out


def ingest(source: Path, root: Path, config: Path | None = None) -> float:
    """``engram-md ingest`` offline into ``root``; the seconds it took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}
    argv = [sys.executable, "-m", "engram_md", "--memory-dir", str(root / "memory"),
            "--state-dir", str(root / "state")]  # fmt: skip
    if config is not None:
        argv += ["--config", str(config)]
    argv += ["ingest", str(source)]
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.decode()[-2000:])
    return time.perf_counter() - start


def _session_of(layout: MemoryLayout, box: Box) -> str:
    """The data's session of a box: its first readable memory's first turn, read as a LoCoMo
    dialogue id ("D3:5" -> session 3), else the box's own session. (Consolidation during a
    long ingest may have moved a member's file.)"""
    for fact in member_facts(layout, box.members).values():
        for turn in fact.source_turn_ids:
            match = _DIA.match(turn)
            if match:
                return f"{box.session}:{int(match[1]):02d}"
    return box.session


def _spread(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"median": 0, "mean": 0, "max": 0}
    return {
        "median": float(statistics.median(values)),
        "mean": round(statistics.fmean(values), 2),
        "max": max(values),
    }


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def separation(embedder: Embedder, sessions: Mapping[str, Sequence[Box]]) -> dict[str, Any]:
    """Are the cuts inside a session real? For each memory of a session cut into several
    boxes: its cosine with the mean of the rest of its own box, minus its cosine with the mean
    of the neighbouring box it is closest to (a silhouette). Above 0, the memories sit closer
    to their own box than to the next one; a cut where the talk did not move on is near 0.
    Memories alone in their box are left out (no rest to compare with)."""
    scores: list[float] = []
    for boxes in sessions.values():
        if len(boxes) < 2:
            continue
        vectors = [embedder.embed([m.statement for m in box.members]) for box in boxes]
        means = [_unit(v.mean(axis=0)) for v in vectors]
        for i, v in enumerate(vectors):
            neighbours = [means[j] for j in (i - 1, i + 1) if 0 <= j < len(boxes)]
            for row in range(len(v)) if len(v) > 1 else ():
                rest = _unit(np.delete(v, row, axis=0).mean(axis=0))
                own = float(v[row] @ rest)
                scores.append(own - max(float(v[row] @ n) for n in neighbours))
    cut = sum(1 for boxes in sessions.values() if len(boxes) > 1)
    return {
        "sessions_cut": cut,
        "silhouette": round(statistics.fmean(scores), 3) if scores else None,
    }


def measure(root: Path, embedder: Embedder | None = None) -> dict[str, Any]:
    """The figures of one ingested folder (with ``embedder``, how well the cuts separate)."""
    layout = MemoryLayout(root / "memory", root / "state")
    boxes = sorted(
        (read_box(path, layout) for path in box_files(layout)), key=lambda b: (b.created_at, b.id)
    )
    traces = load_traces(layout.traces_path)
    sessions: dict[str, list[Box]] = {}
    for box in boxes:
        sessions.setdefault(_session_of(layout, box), []).append(box)
    per_session = Counter({name: len(found) for name, found in sessions.items()})
    sizes = [len(box.memory_ids) for box in boxes]
    cuts = separation(embedder, sessions) if embedder is not None else {}
    return {
        **cuts,
        "memories": sum(sizes),
        "sessions": len(per_session),
        "boxes": len(boxes),
        "boxes_per_session": _spread(list(per_session.values())),
        "memories_per_box": _spread(sizes),
        "one_memory_boxes": round(sum(1 for n in sizes if n == 1) / max(1, len(sizes)), 3),
        "seal_reasons": dict(sorted(Counter(box.seal_reason for box in boxes).items())),
        "traces": len(traces),
        "boxes_per_trace": _spread([len(trace.boxes) for trace in traces]),
        "example_boxes": [
            {
                "session": _session_of(layout, box),
                "from": box.created_at.strftime("%Y-%m-%d %H:%M"),
                "memories": len(box.memory_ids),
                "topics": list(box.topics),
            }
            for box in boxes[:SHOWN_BOXES]
        ],
    }


def run_one(
    name: str,
    item: Path | Mapping[str, Any],
    root: Path,
    embedder: Embedder,
    boxes: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Ingest one input into ``root`` (with ``boxes`` settings over the defaults) and measure."""
    root.mkdir(parents=True, exist_ok=True)
    if isinstance(item, Path):
        source = item
    else:
        source = root / "transcript.jsonl"
        lines = locomo.jsonl_lines(locomo.turns([dict(item)]))
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = None
    if boxes:
        config = root / "config.yaml"
        config.write_text(json.dumps({"boxes": dict(boxes)}), encoding="utf-8")  # JSON is YAML
    seconds = ingest(source, root, config)
    return {**measure(root, embedder), "ingest_seconds": round(seconds, 1)}


def run(*, keep: Path | None = None, only: Sequence[str] = ()) -> dict[str, Any]:
    chosen = {k: v for k, v in inputs().items() if not only or k in only}
    embedder = make_embedder(EmbeddingConfig(), None)
    with tempfile.TemporaryDirectory(prefix="engram-boxes-", dir="/tmp") as tmp:
        base = keep or Path(tmp)
        results = {
            name: run_one(name, item, base / name, embedder) for name, item in chosen.items()
        }
    if not locomo.available():
        results["locomo"] = {"skipped": "LoCoMo dev data not found"}
    return {"tuned_on": TUNED_ON, "inputs": results}


def sweep(key: str, values: Sequence[float], *, on: str = TUNED_ON) -> dict[str, Any]:
    """``boxes.<key>`` at each of ``values`` on one input: how the thresholds were chosen."""
    item = inputs().get(on)
    if item is None:
        return {"skipped": f"{on} not found"}
    embedder = make_embedder(EmbeddingConfig(), None)
    with tempfile.TemporaryDirectory(prefix="engram-boxes-sweep-", dir="/tmp") as tmp:
        return {
            "input": on,
            "key": f"boxes.{key}",
            "results": {
                str(value): run_one(on, item, Path(tmp) / str(value), embedder, {key: value})
                for value in values
            },
        }


def format_result(result: Mapping[str, Any]) -> str:
    head = f"{'input':<22}{'mem':>5}{'sess':>5}{'boxes':>6}{'box/sess med/mean/max':>23}"
    head += f"{'mem/box med/mean/max':>22}{'1-mem':>7}{'traces':>7}{'box/trace mean/max':>20}"
    head += f"{'cut':>5}{'silh.':>7}"
    lines = [head]
    for name, r in result["inputs"].items():
        if "skipped" in r:
            lines.append(f"{name:<22}skipped: {r['skipped']}")
            continue
        bps, mpb, bpt = r["boxes_per_session"], r["memories_per_box"], r["boxes_per_trace"]
        lines.append(
            f"{name:<22}{r['memories']:>5}{r['sessions']:>5}{r['boxes']:>6}"
            f"{bps['median']:>9.1f}/{bps['mean']:.2f}/{bps['max']:<4}"
            f"{mpb['median']:>9.1f}/{mpb['mean']:.2f}/{mpb['max']:<4}"
            f"{r['one_memory_boxes']:>7.0%}{r['traces']:>7}"
            f"{bpt['mean']:>13.2f}/{bpt['max']:<4}"
            f"{r['sessions_cut']:>5}{'-' if r['silhouette'] is None else r['silhouette']:>7}"
        )
    for name, r in result["inputs"].items():
        for box in r.get("example_boxes", []):
            topics = ", ".join(box["topics"])
            lines.append(f"  {name} {box['session']} {box['from']} ({box['memories']}): {topics}")
    return "\n".join(lines)


def format_sweep(swept: Mapping[str, Any]) -> str:
    if "skipped" in swept:
        return f"skipped: {swept['skipped']}"
    lines = [f"{swept['key']} on {swept['input']}"]
    lines.append(f"{'value':>8}{'boxes':>7}{'box/sess':>10}{'mem/box':>9}{'1-mem':>7}{'cut':>5}"
                 f"{'silhouette':>12}{'traces':>8}")  # fmt: skip
    for value, r in swept["results"].items():
        silhouette = "-" if r["silhouette"] is None else f"{r['silhouette']:.3f}"
        lines.append(
            f"{value:>8}{r['boxes']:>7}{r['boxes_per_session']['mean']:>10.2f}"
            f"{r['memories_per_box']['mean']:>9.2f}{r['one_memory_boxes']:>7.0%}"
            f"{r['sessions_cut']:>5}{silhouette:>12}{r['traces']:>8}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="ingest under KEEP/<input>; keep it")
    parser.add_argument("--only", nargs="*", default=[], help="inputs to run (default: all)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--sweep",
        metavar="KEY=V1,V2",
        help=f"a boxes setting at several values, on {TUNED_ON} (e.g. min_similarity=0.3,0.4)",
    )
    args = parser.parse_args(argv)
    if args.sweep:
        key, _, values = args.sweep.partition("=")
        swept = sweep(key, [float(v) for v in values.split(",")])
        print(json.dumps(swept, indent=2) if args.json else format_sweep(swept))
        return 0
    result = run(keep=args.keep, only=args.only)
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
