"""Time the signal scan per turn on real conversation text.

    python -m bench.signal_bench [PATH]

PATH defaults to ``../shared/bench/locomo-dev.json`` relative to the repository (the LoCoMo
development split; see that folder's README). The file is not part of the project, so the
benchmark skips with a message when it is absent.

The goal is a median under 50 µs per turn: the scan runs on every turn, before buffering.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from engram_md.core.config import SignalConfig
from engram_md.core.models import Level
from engram_md.text.signals import SignalScanner

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev.json"
PASSES = 5


def load_turns(path: Path) -> list[str]:
    """The text of every dialogue turn, both speakers, in file order."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    for sample in data:
        conversation = sample.get("conversation", {})
        for key, value in conversation.items():
            # session_N holds the turns; session_N_date_time and the speaker names do not.
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(str(t.get("text", "")) for t in value if isinstance(t, dict))
    return turns


def _percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def run(turns: list[str], *, passes: int = PASSES) -> dict[str, Any]:
    """Scan every turn ``passes`` times; per-turn latency figures in microseconds."""
    scanner = SignalScanner(SignalConfig())
    for text in turns[:50]:  # warm caches before measuring
        scanner.scan(text)
    samples: list[float] = []
    levels: Counter[str] = Counter()
    started = time.perf_counter_ns()
    for n in range(passes):
        for text in turns:
            t0 = time.perf_counter_ns()
            signal = scanner.scan(text)
            samples.append((time.perf_counter_ns() - t0) / 1000)
            if n == 0:
                levels[Level(signal.level).name] += 1
    elapsed_s = (time.perf_counter_ns() - started) / 1e9
    samples.sort()
    return {
        "turns": len(turns),
        "passes": passes,
        "median_us": round(statistics.median(samples), 2) if samples else 0.0,
        "p95_us": round(_percentile(samples, 0.95), 2) if samples else 0.0,
        "max_us": round(samples[-1], 2) if samples else 0.0,
        "turns_per_s": round(len(samples) / elapsed_s) if elapsed_s > 0 else 0,
        "levels": dict(levels),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_DATA
    if not path.is_file():
        print(f"signal bench skipped: {path} not found")
        return 0
    turns = load_turns(path)
    result = run(turns)
    print(f"signal scan over {result['turns']} turns x {result['passes']} passes")
    print(
        f"  median {result['median_us']} us   p95 {result['p95_us']} us   max {result['max_us']} us"
    )
    print(f"  {result['turns_per_s']} turns/s")
    print("  levels: " + ", ".join(f"{k}={v}" for k, v in sorted(result["levels"].items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
