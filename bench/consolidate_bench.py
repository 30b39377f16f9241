"""Consolidation time at 10k / 100k facts, and LLM calls and tokens per 1,000 facts.

    python -m bench.consolidate_bench [--sizes 10000 100000] [--llm-facts 1000]

Offline, per size N: N synthetic fact files in the documented format (the generator of
:mod:`bench.latency_bench`: ``to_fact`` + ``render_fact`` at the store's paths), indexed with
``engram-md reindex``, then ``engram-md consolidate --json --force`` timed end to end (the
first run: every fact is new, so every fact is compared with its related ones), then a second
run (nothing new: what the daemon's periodic run costs on a quiet folder), and that run again
without the read cache (every file parsed, as before it). ``--force`` because
the synthetic statements repeat templates with other numbers, which the rules read as changed
values; the share that would have tripped the safety rail is reported.

Target: 100k facts consolidated in <= 60 s (the reference system stalled 15-71 s on its
full-folder scans at 10^4-10^5 files).

LLM mode: ``--llm-facts`` facts against the fake OpenAI-compatible server of the test suite
(tests/fake_openai.py) with a judge responder run inside this process: it answers every
stored fact of a cluster with ADD, or MERGE for the same normalized text. Calls and tokens
(4 characters a token, as the fake counts) are reported per 1,000 facts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.latency_bench import _check, _cli_argv, _env, _load, write_facts
from engram_md.text.hashing import normalize_text

_LINE = re.compile(r"^\[(?P<ref>N|E\d+)\] \([^)]*\) (?P<text>.*)$")


def judge_responder(prompt: str) -> str:
    """What a careful judge answers for a cluster: ADD, or MERGE for a verbatim repeat."""
    refs: dict[str, str] = {}
    for line in prompt.splitlines():
        match = _LINE.match(line)
        if match:
            refs[match["ref"]] = normalize_text(match["text"])
    new = refs.pop("N", "")
    if not refs:  # not a judge prompt (never happens here): the server's usual fake answer
        return json.dumps({"facts": []})
    decisions = [
        {"existing": ref, "action": "MERGE" if text == new else "ADD", "reason": "bench"}
        for ref, text in refs.items()
    ]
    return json.dumps({"decisions": decisions})


def _consolidate(root: Path, env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    result = subprocess.run(
        _cli_argv(root / "memory", root / "state", "consolidate", "--json", *args),
        capture_output=True,
        env=env,
    )
    elapsed = time.perf_counter() - t0
    _check(result, "consolidate")
    return elapsed, json.loads(result.stdout)


def _prepare(root: Path, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    out["files"] = write_facts(root / "memory", n)
    out["files_written_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    result = subprocess.run(
        _cli_argv(root / "memory", root / "state", "reindex"), capture_output=True, env=_env()
    )
    out["reindex_s"] = round(time.perf_counter() - t0, 2)
    _check(result, "reindex")
    return out


def run_offline(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="engram-consolidate-", dir="/tmp") as tmp:
        root = Path(tmp)
        out: dict[str, Any] = {"load_before": _load(), **_prepare(root, n)}
        first_s, first = _consolidate(root, _env(), "--force")
        summary = first["summary"]
        out["first_run_s"] = round(first_s, 2)
        out["first_run"] = {
            "new": summary["new"],
            "changes": summary["changes"],
            "applied": first["applied"],
            "by_action": summary["byAction"],
            "retiring": summary["retiring"],
            "retire_fraction": round(summary["retiring"] / max(1, summary["active"]), 3),
        }
        second_s, second = _consolidate(root, _env())
        out["second_run_s"] = round(second_s, 2)
        out["second_run"] = {
            "new": second["summary"]["new"],
            "changes": second["summary"]["changes"],
            "fact_changes": sum(
                1 for c in second["changes"] if c["kind"] in ("FactUpdate", "FactMove")
            ),
        }
        # The same quiet run without the read cache (state/read-cache.json): what parsing
        # every file again costs, measured back to back on the same folder.
        (root / "state" / "read-cache.json").unlink(missing_ok=True)
        uncached_s, _ = _consolidate(root, _env())
        out["second_run_without_read_cache_s"] = round(uncached_s, 2)
        out["load_after"] = _load()
        return out


def run_llm(n: int) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fake_openai import FakeOpenAI

    with (
        tempfile.TemporaryDirectory(prefix="engram-consolidate-llm-", dir="/tmp") as tmp,
        FakeOpenAI(responder=judge_responder) as server,
    ):
        root = Path(tmp)
        out: dict[str, Any] = _prepare(root, n)
        env = {**_env(), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        elapsed, result = _consolidate(root, env, "--force")
        requests = server.requests_to("chat/completions")
        usage = json.loads((root / "state" / "llm-usage.json").read_text())
        per = 1000 / max(1, out["files"])
        out.update(
            run_s=round(elapsed, 2),
            calls=len(requests),
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            calls_per_1000_facts=round(len(requests) * per, 1),
            tokens_per_1000_facts=round(
                (usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)) * per
            ),
            changes=result["summary"]["changes"],
            by_action=result["summary"]["byAction"],
        )
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--llm-facts", type=int, default=1000, help="0: skip LLM mode")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "offline": {}}
    for n in args.sizes:
        results["offline"][str(n)] = run_offline(n)
        print(f"consolidate bench, {n}: {json.dumps(results['offline'][str(n)])}", file=sys.stderr)
    if args.llm_facts:
        results["llm"] = run_llm(args.llm_facts)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
