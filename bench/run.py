"""`make bench`: every benchmark of the project, one after the other, results to JSON.

    python -m bench.run [--only NAME ...] [--out bench/results/latest.json]

Parts that need the LoCoMo dev data (../shared/bench/locomo-dev.json) are skipped cleanly
without it. The machine is small and noisy: each part reports medians and compares against a
baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import locomo

PARTS = (
    "signals",
    "secrets",
    "pipeline",
    "import",
    "sessions",
    "recall_quality",
    "recall_held_out",
    "recall_chat_style",
    "latency",
    "boxes",
    "hook",
    "updates",
    "object_store",
    "scale",
)


def _signals() -> dict[str, Any]:
    from . import signal_bench

    if not locomo.available():
        return {"skipped": "LoCoMo dev data not found"}
    texts = [t.text for t in locomo.turns(locomo.load())]
    return signal_bench.run(texts)


def _secrets() -> dict[str, Any]:
    from . import secrets_bench

    result = secrets_bench.run()
    print(secrets_bench.format_table(result), flush=True)
    return result


def _pipeline() -> dict[str, Any]:
    from . import pipeline_bench

    return pipeline_bench.run()


def _import() -> dict[str, Any]:
    from . import import_bench

    return import_bench.run()


def _sessions() -> dict[str, Any]:
    from . import sessions_bench

    return sessions_bench.run()


def _recall_quality() -> dict[str, Any]:
    from . import recall_bench

    result = recall_bench.run()
    if "recall" in result:
        print(recall_bench.format_table(result), flush=True)
    return result


def _recall_held_out() -> dict[str, Any]:
    from . import recall_bench

    # Conversations written for measuring only (bench/data/README-heldout.md); they ship with
    # the project, so this part never skips.
    result = recall_bench.run(data_files=recall_bench.HELD_OUT)
    print(recall_bench.format_table(result), flush=True)
    return result


def _recall_chat_style() -> dict[str, Any]:
    from . import chat_style

    result = chat_style.run()
    print(chat_style.format_result(result), flush=True)
    return result


def _latency() -> dict[str, Any]:
    from . import latency_bench

    return latency_bench.run()


def _boxes() -> dict[str, Any]:
    from . import boxes_bench

    result = boxes_bench.run()
    print(boxes_bench.format_result(result), flush=True)
    return result


def _hook() -> dict[str, Any]:
    from . import hook_bench

    return hook_bench.run()


def _updates() -> dict[str, Any]:
    from . import updates_bench

    return updates_bench.run()


def _object_store() -> dict[str, Any]:
    from . import object_store_bench

    return object_store_bench.run()


def _scale() -> dict[str, Any]:
    from . import scale_bench

    # Builds 1k, 10k and 100k memories (~20 min on 2 cores, most of it the 100k reindex);
    # the chart goes to docs/scale.svg, the run to bench/results/scale-<date>.json.
    result = scale_bench.run(repeats=3)
    out = scale_bench.write(result, None, scale_bench.REPO / "docs" / "scale.svg")
    print(f"scale curve written to {out} and docs/scale.svg", flush=True)
    return result


RUNNERS = {
    "signals": _signals,
    "secrets": _secrets,
    "pipeline": _pipeline,
    "import": _import,
    "sessions": _sessions,
    "recall_quality": _recall_quality,
    "recall_held_out": _recall_held_out,
    "recall_chat_style": _recall_chat_style,
    "latency": _latency,
    "boxes": _boxes,
    "hook": _hook,
    "updates": _updates,
    "object_store": _object_store,
    "scale": _scale,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=PARTS, default=list(PARTS))
    parser.add_argument("--out", type=Path, default=Path("bench/results/latest.json"))
    args = parser.parse_args()
    results: dict[str, Any] = {
        "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    for name in args.only:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        results[name] = RUNNERS[name]()
        results[name]["bench_seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(results[name], indent=2)[:4000], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
