"""Issue-2 figures: offline ingest speed and memory, and LLM calls/tokens per 100 turns.

Run through `make bench` (bench/run.py). Each measurement runs the real CLI in a subprocess
over the LoCoMo dev conversations written as generic JSONL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import locomo

REPO = Path(__file__).resolve().parents[1]


def _cli(
    root: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> tuple[subprocess.CompletedProcess[bytes], float, int]:
    """Run the CLI; returns (result, wall seconds, peak RSS of the child in MB)."""
    argv = [
        sys.executable,
        "-m",
        "engram_md",
        "--memory-dir",
        str(root / "memory"),
        "--state-dir",
        str(root / "state"),
        *args,
    ]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}
    base_env.update(env or {})
    # Peak RSS of this one child: run it under a tiny wrapper that reports its own rusage.
    wrapper = (
        "import resource, subprocess, sys, json;"
        "p = subprocess.run(sys.argv[1:], stdin=sys.stdin);"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
        "sys.stderr.write('\\n@@RSS ' + str(r) + '\\n'); sys.exit(p.returncode)"
    )
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", wrapper, *argv], input=stdin, capture_output=True, env=base_env
    )
    wall = time.perf_counter() - start
    rss_kb = 0
    for line in result.stderr.decode(errors="replace").splitlines():
        if line.startswith("@@RSS "):
            rss_kb = int(line.split()[1])
    return result, wall, rss_kb // 1024


def offline_ingest(workdir: Path) -> dict[str, Any]:
    data = locomo.load()
    results = []
    total_turns = 0
    total_wall = 0.0
    peak = 0
    for conv in data:
        items = locomo.turns([conv])
        path = workdir / f"{conv['sample_id']}.jsonl"
        path.write_text("\n".join(locomo.jsonl_lines(items)) + "\n")
        root = workdir / f"offline-{conv['sample_id']}"
        result, wall, rss = _cli(root, "ingest", str(path))
        if result.returncode != 0:
            raise RuntimeError(result.stderr.decode()[-2000:])
        facts = list((root / "memory" / "facts").rglob("*.md"))
        results.append(
            {
                "conversation": conv["sample_id"],
                "turns": len(items),
                "seconds": round(wall, 2),
                "memories": len(facts),
                "peak_rss_mb": rss,
            }
        )
        total_turns += len(items)
        total_wall += wall
        peak = max(peak, rss)
    return {
        "turns": total_turns,
        "seconds": round(total_wall, 2),
        "turns_per_second": round(total_turns / total_wall, 1),
        "peak_rss_mb": peak,
        "per_conversation": results,
    }


def llm_mode(workdir: Path) -> dict[str, Any]:
    """Smart buffer vs one call per turn, against the fake OpenAI-compatible server."""
    sys.path.insert(0, str(REPO))
    from tests.fake_openai import FakeOpenAI

    data = locomo.load()
    items = locomo.turns(data)
    out: dict[str, Any] = {}
    fact_sets: dict[str, set[str]] = {}
    # The daemon's scheduled consolidation asks the LLM judge too (every
    # consolidate.every_extractions extractions); the third run leaves it out, so the
    # extraction calls alone show.
    runs = (
        ("smart_buffer", ""),
        ("call_per_turn", "buffer:\n  max_turns: 1\n"),
        ("smart_buffer_extraction_only", "consolidate:\n  every_extractions: 0\n"),
    )
    for label, buffer_cfg in runs:
        calls = prompt_tokens = 0
        bodies: set[str] = set()
        with FakeOpenAI() as server:
            for conv in data:
                conv_items = [t for t in items if t.conversation == conv["sample_id"]]
                path = workdir / f"llm-{conv['sample_id']}.jsonl"
                path.write_text("\n".join(locomo.jsonl_lines(conv_items)) + "\n")
                root = workdir / f"{label}-{conv['sample_id']}"
                root.mkdir(parents=True, exist_ok=True)
                config = root / "config.yaml"
                config.write_text("llm:\n  api: chat\n" + buffer_cfg)
                env = {
                    "OPENAI_BASE_URL": server.base_url,
                    "OPENAI_API_KEY": "bench",
                    "ENGRAM_CONFIG": str(config),
                }
                result, _wall, _rss = _cli(root, "ingest", str(path), env=env)
                if result.returncode != 0:
                    raise RuntimeError(result.stderr.decode()[-2000:])
                usage = json.loads((root / "state" / "llm-usage.json").read_text())
                calls += usage["calls"]
                prompt_tokens += usage["prompt_tokens"]
                for f in (root / "memory" / "facts").rglob("*.md"):
                    bodies.add(f.read_text().split("---", 2)[2].strip())
        per100 = 100 / len(items)
        out[label] = {
            "calls_per_100_turns": round(calls * per100, 1),
            "prompt_tokens_per_100_turns": round(prompt_tokens * per100),
            "facts": len(bodies),
        }
        fact_sets[label] = bodies
    caught = fact_sets["call_per_turn"]
    out["facts_per_turn_also_caught_by_buffer"] = (
        round(len(caught & fact_sets["smart_buffer"]) / len(caught), 3) if caught else None
    )
    return out


def run() -> dict[str, Any]:
    if not locomo.available():
        return {"skipped": f"{locomo.DATA} not found"}
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        work = Path(tmp)
        return {"offline_ingest": offline_ingest(work), "llm_mode": llm_mode(work)}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
