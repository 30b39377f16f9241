"""`make soak`: the reliability run — sustained load, kill -9 at random points, hostile input.

    python -m bench.soak [--parts load,crash,fuzz] [--turns 100000] [--trials 50]
                         [--fault-rate 0.1] [--fuzz-examples 10000] [--out FILE]

Three parts, each reported in ``bench/results/soak-<date>.json`` and summed up on stdout:

* **load** — ``--turns`` LoCoMo turns (replayed, see :mod:`bench.soak_data`) streamed through
  ``engram-md run`` on stdin in LLM mode against the fake OpenAI-compatible server, which
  injects timeouts, 429s, 500s and junk answers into ``--fault-rate`` of its calls. Measures
  turns per second and the daemon's RSS over time (``/proc/<pid>/status``), then accounts for
  every turn id and checks that no two active facts share a content hash and that folder,
  hash index, search index and graph agree.
* **crash** — :mod:`bench.crashloop`: ``--trials`` runs killed with SIGKILL at random points
  and restarted on the same input; each must end equal to an uninterrupted run.
* **fuzz** — the property-based input tests (``tests/test_fuzz.py``) with
  ``ENGRAM_FUZZ_EXAMPLES=--fuzz-examples``.

The exit status is non-zero when a part finds a lost turn, a duplicated memory, an
inconsistency, a folder that differs from the uninterrupted run, or a failing test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from . import locomo
from .soak_data import (
    FAKE_STALL,
    CountingFake,
    Folder,
    ReplayInput,
    audit,
    base_profile,
    clean_env,
    consistency_problems,
    llm_config_yaml,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
PARTS = ("load", "crash", "fuzz")
# The hostile-input tests: properties read ENGRAM_FUZZ_EXAMPLES; the corpora run whole.
FUZZ_TESTS = (
    "tests/test_fuzz.py",
    "tests/test_path_safety.py",
    "tests/test_sanitize.py",
    "tests/test_secret_corpus.py",
    "tests/test_injection.py",
)


# ---- load ------------------------------------------------------------------------------------


def resident_kb(pid: int) -> tuple[int, int] | None:
    """Resident set size of ``pid`` in kB, all of it and its anonymous part (VmRSS, RssAnon),
    or None once it has exited. The anonymous part is the process's own memory; the rest is
    file-backed (shared libraries, mapped files), whose resident share depends on the page
    cache, so only RssAnon levels compare between machines and checkouts."""
    fields: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name in ("VmRSS", "RssAnon"):
                    fields[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if "VmRSS" not in fields:
        return None
    return fields["VmRSS"], fields.get("RssAnon", fields["VmRSS"])


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x (0 with fewer than two distinct x)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def rss_summary(samples: list[dict[str, float]], key: str = "rss_mb") -> dict[str, Any]:
    """Warm-up is the first half of the run; the second half's trend says whether memory
    keeps growing. Reported as a fitted rise over that half, in MB and as a fraction.
    ``key`` picks the series: ``rss_mb`` (VmRSS) or ``anon_mb`` (RssAnon)."""
    samples = [s for s in samples if key in s]
    if not samples:
        return {}
    end = samples[-1]["t"]
    late = [(s["t"], s[key]) for s in samples if s["t"] >= end / 2]
    per_second = slope(late)
    span = (late[-1][0] - late[0][0]) if late else 0.0
    median = sorted(y for _, y in late)[len(late) // 2] if late else 0.0
    rise = per_second * span
    by_turn = [(s["done"], s[key]) for s in samples if s["t"] >= end / 2 and s["done"]]
    progress = [(s["t"], s["done"]) for s in samples if s["t"] >= end / 2 and s["done"]]
    return {
        "samples": len(samples),
        "first_mb": samples[0][key],
        "max_mb": max(s[key] for s in samples),
        "last_mb": samples[-1][key],
        "last_half_median_mb": round(median, 1),
        "last_half_slope_mb_per_min": round(per_second * 60, 3),
        "last_half_rise_mb": round(rise, 1),
        "last_half_rise_fraction": round(rise / median, 4) if median else 0.0,
        "last_half_slope_mb_per_10k_turns": round(slope(by_turn) * 10_000, 2),
        "last_half_turns_per_second": round(slope(progress), 2),
    }


def _feed(stdin: IO[bytes], source: ReplayInput, progress: list[int]) -> None:
    try:
        chunk: list[str] = []
        for line in source.lines():
            chunk.append(line)
            if len(chunk) == 50:
                stdin.write(("\n".join(chunk) + "\n").encode())
                progress[0] += len(chunk)
                chunk = []
        if chunk:
            stdin.write(("\n".join(chunk) + "\n").encode())
            progress[0] += len(chunk)
        stdin.close()
    except BrokenPipeError:
        pass  # the daemon died; the caller sees its exit status


def run_load(
    turns: int,
    workdir: Path,
    *,
    fault_rate: float = 0.1,
    seed: int = 0,
    sample_every: float = 3.0,
    log: IO[str] = sys.stdout,
) -> dict[str, Any]:
    """Stream ``turns`` turns through `engram-md run` against a faulty fake LLM; audit."""
    source = ReplayInput.load(turns)
    folder = Folder(workdir / "load")
    folder.root.mkdir(parents=True, exist_ok=True)
    samples: list[dict[str, float]] = []
    with CountingFake(timeout_sleep=FAKE_STALL) as server:
        server.fault_rate(fault_rate, seed=seed)
        folder.config_path.write_text(llm_config_yaml(server), encoding="utf-8")
        stderr_path = folder.root / "daemon.stderr"
        with open(stderr_path, "wb") as stderr:
            started = time.monotonic()
            proc = subprocess.Popen(
                folder.argv("run"),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=clean_env(),
                cwd=folder.root,
            )
            assert proc.stdin is not None
            progress = [0]
            feeder = threading.Thread(
                target=_feed, args=(proc.stdin, source, progress), daemon=True
            )
            feeder.start()
            next_report = started + 60
            position = {turn_id: n + 1 for n, turn_id in enumerate(source.ids())}
            while proc.poll() is None:
                sizes = resident_kb(proc.pid)
                now = time.monotonic()
                done = position.get(server.last_turn_id or "", 0)
                if sizes is not None:
                    samples.append(
                        {
                            "t": round(now - started, 2),
                            "fed": progress[0],
                            "done": done,
                            "rss_mb": sizes[0] / 1024,
                            "anon_mb": sizes[1] / 1024,
                        }
                    )
                if now >= next_report:
                    print(
                        f"  load: {done}/{turns} turns processed, "
                        f"{sizes[0] / 1024 if sizes else 0:.0f} MB RSS, {now - started:.0f} s",
                        file=log,
                        flush=True,
                    )
                    next_report = now + 60
                try:
                    proc.wait(timeout=sample_every)
                except subprocess.TimeoutExpired:
                    pass
            elapsed = time.monotonic() - started
            feeder.join(timeout=5)
        first_exit = proc.returncode
        # Turns still pending (an extraction that failed even at the final flush) wait in the
        # journal for the next start, as they would for a real daemon: start it once more.
        drains = 0
        ids = source.ids()
        sanitize = folder.config().sanitize
        empty, yields = base_profile(source.base, sanitize)
        keys = source.journal_keys(sanitize)
        result = audit(folder.layout, ids, keys=keys, empty_base=empty, yield_base=yields)
        while result.outcomes["pending"] and drains < 3:
            drains += 1
            subprocess.run(
                folder.argv("run"),
                input=b"",
                capture_output=True,
                env=clean_env(),
                cwd=folder.root,
                timeout=600,
            )
            result = audit(folder.layout, ids, keys=keys, empty_base=empty, yield_base=yields)
        faults = server.faults()
        calls = server.calls()
        judge_calls = server.judge_calls()
    problems, checker = consistency_problems(folder.config())
    usage = _read_json(folder.layout.usage_path)
    stderr_tail = stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()[-3:]
    return {
        "turns": turns,
        "seconds": round(elapsed, 1),
        "turns_per_second": round(turns / elapsed, 1) if elapsed else 0.0,
        "exit_status": first_exit,
        "drain_restarts": drains,
        "llm_calls": calls,
        "judge_calls": judge_calls,
        "faults_injected": faults,
        "faults_total": sum(faults.values()),
        "fault_rate": fault_rate,
        "llm_usage": usage,
        "rss": rss_summary(samples),
        "rss_anon": rss_summary(samples, "anon_mb"),
        "rss_series": _thin(samples, 60),
        "rss_svg": rss_svg(_thin(samples, 400), turns),
        "audit": result.to_dict(),
        "lost": result.lost,
        "duplicated": result.duplicated,
        "consistency_checker": checker,
        "consistency_problems": problems[:50],
        "daemon_summary": stderr_tail,
        "ok": first_exit == 0
        and result.lost == 0
        and result.duplicated == 0
        # Every turn the fake extracts something from must reach a fact, a confirmation or
        # a named discard (facts over the per-call cap are discarded by name too).
        and result.yield_missing == 0
        and not result.outcomes["pending"]
        and not problems,
    }


def rss_svg(samples: list[dict[str, float]], turns: int) -> str:
    """RSS (MB) and turns processed over time as a small SVG chart, for docs/RELIABILITY.md."""
    width, height, pad = 640, 240, 40
    end = max(samples[-1]["t"], 1.0) if samples else 1.0
    top = max((s["rss_mb"] for s in samples), default=1.0) * 1.1

    def x(t: float) -> float:
        return pad + (width - 2 * pad) * t / end

    def y(value: float, scale: float) -> float:
        return height - pad - (height - 2 * pad) * value / scale

    rss = " ".join(f"{x(s['t']):.1f},{y(s['rss_mb'], top):.1f}" for s in samples)
    done = " ".join(f"{x(s['t']):.1f},{y(s['done'], max(turns, 1)):.1f}" for s in samples)
    half = x(end / 2)
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            'font-family="sans-serif" font-size="11">',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<line x1="{half:.1f}" y1="{pad}" x2="{half:.1f}" y2="{height - pad}" '
            'stroke="#bbb" stroke-dasharray="4 3"/>',
            f'<text x="{half + 4:.1f}" y="{pad + 10}" fill="#888">warm-up | measured</text>',
            f'<polyline points="{done}" fill="none" stroke="#7a7" stroke-width="1.5"/>',
            f'<polyline points="{rss}" fill="none" stroke="#c33" stroke-width="2"/>',
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
            'stroke="#333"/>',
            f'<text x="{pad}" y="{pad - 8}" fill="#c33">RSS, MB (max {top / 1.1:.0f})</text>',
            f'<text x="{width - pad}" y="{pad - 8}" fill="#7a7" text-anchor="end">'
            f"turns processed (of {turns})</text>",
            f'<text x="{pad}" y="{y(0, top) + 14:.1f}">0</text>',
            f'<text x="{width - pad}" y="{height - pad + 14}" text-anchor="end">'
            f"{end / 60:.0f} min</text>",
            "</svg>",
        ]
    )


def _thin(samples: list[dict[str, float]], keep: int) -> list[dict[str, float]]:
    """At most ``keep`` evenly spaced samples (plus the last), rounded, for the JSON."""
    if not samples:
        return []
    step = max(1, len(samples) // keep)
    picked = samples[::step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    rounded = ("rss_mb", "anon_mb")
    return [{**s, **{k: round(s[k], 1) for k in rounded if k in s}} for s in picked]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---- fuzz ------------------------------------------------------------------------------------


def run_fuzz(examples: int, tests: tuple[str, ...] = FUZZ_TESTS) -> dict[str, Any]:
    """The property-based input tests at soak size, as a pytest subprocess."""
    missing = [t for t in tests if not (REPO / t).exists()]
    if missing:
        return {"skipped": f"missing {', '.join(missing)}", "ok": True}
    env = dict(os.environ, ENGRAM_FUZZ_EXAMPLES=str(examples))
    started = time.monotonic()
    proc = subprocess.run(
        # -rfE: one "FAILED test - reason" line per failure; -p no:logging keeps the
        # expected warnings of thousands of hostile inputs out of the captured output.
        [sys.executable, "-m", "pytest", "-rfE", "-p", "no:cacheprovider", "-p", "no:logging"]
        + list(tests),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    counts = [line for line in lines if " passed" in line or " failed" in line]
    return {
        "tests": list(tests),
        "examples_per_property": examples,
        "seconds": round(time.monotonic() - started, 1),
        "exit_status": proc.returncode,
        "summary": (counts or lines or [proc.stderr.strip()[-300:]])[-1].strip("= "),
        "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
        "falsifying": _falsifying(lines),
        "ok": proc.returncode == 0,
    }


def _falsifying(lines: list[str]) -> list[str]:
    """Each failing input hypothesis printed, whole: the call's first line and the argument
    lines after it (a derandomized run may still draw other inputs elsewhere, so the input
    itself is what reproduces a failure)."""
    found: list[str] = []
    for i, line in enumerate(lines):
        if not line.lstrip("E ").startswith(("Failing test case", "Falsifying example")):
            continue
        call = [line.strip()]
        for following in lines[i + 1 : i + 40]:
            if not following.startswith("E ") or not following[1:].strip():
                break
            call.append(following[1:].strip())
            if following[1:].strip() == ")":
                break
        found.append("\n".join(call))
    return found


# ---- entry point -----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return info


def summary_lines(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    load = results.get("load")
    if load and "turns" in load:
        rss = load["rss"]
        out.append(
            f"load : {load['turns']} turns in {load['seconds']} s = {load['turns_per_second']} "
            f"turns/s; {load['llm_calls']} LLM calls, {load['faults_total']} faults injected "
            f"{load['faults_injected']}"
        )
        out.append(
            f"       RSS {rss.get('first_mb', 0):.0f} -> {rss.get('last_mb', 0):.0f} MB "
            f"(max {rss.get('max_mb', 0):.0f}); last half {rss.get('last_half_slope_mb_per_min')}"
            f" MB/min, rise {rss.get('last_half_rise_mb')} MB "
            f"({100 * rss.get('last_half_rise_fraction', 0):.1f}%)"
        )
        anon = load.get("rss_anon", {})
        out.append(
            f"       of it anonymous (RssAnon) {anon.get('first_mb', 0):.0f} -> "
            f"{anon.get('last_mb', 0):.0f} MB; last half {anon.get('last_half_slope_mb_per_min')}"
            f" MB/min = {anon.get('last_half_slope_mb_per_10k_turns')} MB per 10k turns"
        )
        a = load["audit"]
        out.append(
            f"       turns: {a['outcomes']}; lost {load['lost']}, duplicated "
            f"{load['duplicated']}, expected-yield missing {a['yield_missing']}; "
            f"{len(load['consistency_problems'])} consistency problems "
            f"({load['consistency_checker']})"
        )
    crash = results.get("crash")
    if crash and "trials" in crash:
        out.append(
            f"crash: {crash['trials']} trials, {crash['kills']} kills {crash['kills_by_point']}; "
            f"{crash['trials_equal']} equal to the uninterrupted run; lost {crash['lost']}, "
            f"duplicated {crash['duplicated']}, {crash['consistency_failures']} "
            f"consistency failures ({crash['consistency_checker']}) "
            f"{crash.get('problem_kinds', {})}"
        )
    fuzz = results.get("fuzz")
    if fuzz:
        out.append(f"fuzz : {fuzz.get('summary') or fuzz.get('skipped')}")
    for part in PARTS:
        if part in results:
            out.append(f"{part}: {'ok' if results[part].get('ok') else 'FAILED'}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated: load,crash,fuzz")
    parser.add_argument("--turns", type=int, default=100_000, help="turns for the load part")
    parser.add_argument("--fault-rate", type=float, default=0.1, help="fraction of LLM calls")
    parser.add_argument("--sample-every", type=float, default=3.0, help="RSS sample period (s)")
    parser.add_argument("--trials", type=int, default=50, help="crash-loop trials")
    parser.add_argument("--crash-turns", type=int, default=100, help="input size per trial")
    parser.add_argument("--fuzz-examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, help="keep the folders here (default: temp)")
    parser.add_argument("--out", type=Path, help="results file (default bench/results/soak-…)")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    if ("load" in parts or "crash" in parts) and not locomo.available():
        parser.error(f"the LoCoMo dev data is needed for load and crash: {locomo.DATA}")

    started = datetime.now(UTC)
    results: dict[str, Any] = {
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m bench.soak " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "sizes": {
            "turns": args.turns,
            "fault_rate": args.fault_rate,
            "trials": args.trials,
            "crash_turns": args.crash_turns,
            "fuzz_examples": args.fuzz_examples,
        },
    }
    with tempfile.TemporaryDirectory(prefix="engram-soak-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if "load" in parts:
            print(f"load: {args.turns} turns, fault rate {args.fault_rate}", flush=True)
            results["load"] = run_load(
                args.turns,
                workdir,
                fault_rate=args.fault_rate,
                seed=args.seed,
                sample_every=args.sample_every,
            )
        if "crash" in parts:
            from . import crashloop

            print(f"crash: {args.trials} trials over {args.crash_turns} turns", flush=True)
            results["crash"] = crashloop.run(
                trials=args.trials, turns=args.crash_turns, workdir=workdir, seed=args.seed
            )
        if "fuzz" in parts:
            print(f"fuzz: {args.fuzz_examples} examples per property", flush=True)
            results["fuzz"] = run_fuzz(args.fuzz_examples)
    results["seconds"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    results["ok"] = all(results[p].get("ok") for p in parts)

    out = args.out or RESULTS / f"soak-{started:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    svg = results.get("load", {}).pop("rss_svg", None)
    if svg is not None:
        out.with_suffix(".rss.svg").write_text(svg + "\n", encoding="utf-8")
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print()
    for line in summary_lines(results):
        print(line)
    print(f"results: {out}")
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
