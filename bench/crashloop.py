"""The crash loop: kill -9 at random points, restart on the same input, compare with a run
that was never interrupted.

    python -m bench.crashloop [--trials 50] [--turns 100] [--seed 0] [--workdir DIR]

One uninterrupted baseline run first (LLM mode, fake server without faults, so every run
asks the same questions and gets the same answers), counting how often each crash point is
reached. Then each trial, in a fresh folder:

1. runs `engram-md run` on the input and kills it with SIGKILL at a chosen point — the n-th
   journal append, a torn journal line, just before or after an LLM call, between a temp
   file's write and its rename, an index upsert (n drawn at random from the baseline's
   count), or after a random delay;
2. sometimes kills the restart too, at another random point (a crash during recovery);
3. restarts with the same input and lets it finish;
4. checks that folder, hash index, search index and graph agree
   (:func:`bench.soak_data.consistency_problems`: ``engram_md.doctor`` when present, plus the
   bench's own checks), that the fact files equal the baseline's by name and content, and
   that every turn is accounted for with no duplicated memory (:func:`bench.soak_data.audit`).

Named points come from :mod:`engram_md.crashpoints`. Until the library calls
``crashpoint(...)`` at them itself, the daemon is started through this module
(``python -m bench.crashloop --child ...``), which wraps the same functions with the same
calls before handing over to the real CLI; a wrapper stands down for any function whose
source already calls ``crashpoint``, so nothing is counted twice once the call sites exist.
The torn journal line is emulated here only: it needs half a record written before dying.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .soak_data import (
    CountingFake,
    Folder,
    ReplayInput,
    audit,
    base_profile,
    clean_env,
    consistency_problems,
    llm_config_yaml,
)

NAMED_POINTS = ("journal.append", "llm.before", "llm.after", "file.rename", "index.upsert")
POINTS = (*NAMED_POINTS, "journal.torn", "random")
TORN_ENV = "ENGRAM_CRASH_TORN"  # bench-only: n-th journaled turn is written half, then SIGKILL
RUN_TIMEOUT = 900.0
REPO = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    """The daemon's environment; the child starts through this module, so it needs the
    repository on its path whatever folder it runs in."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return clean_env(PYTHONPATH=path, **extra)


# ---- the child: the real CLI with crash points wrapped around library functions -----------


def _wired(func: Any) -> bool:
    """True when the library already calls a crash point inside ``func``."""
    try:
        return "crashpoint(" in inspect.getsource(func)
    except (OSError, TypeError):
        return False


def install_hooks() -> list[str]:
    """Wrap the write-path functions with crash points; returns the points wrapped here."""
    import functools

    from engram_md import atomic, crashpoints, journal, llm_extractor
    from engram_md.index import MemoryIndex

    crash = crashpoints.crashpoint
    wrapped: list[str] = []

    if not _wired(journal.Journal._write):
        write = journal.Journal._write

        @functools.wraps(write)
        def journal_write(self: Any, record: dict[str, Any], fsync: bool) -> None:
            crash("journal.append")
            write(self, record, fsync)

        journal.Journal._write = journal_write  # type: ignore[method-assign]
        wrapped.append("journal.append")

    if not _wired(llm_extractor.LLMExtractor._call_with_retries):
        call = llm_extractor.LLMExtractor._call

        @functools.wraps(call)
        def llm_call(self: Any, system: str, user: str) -> Any:
            crash("llm.before")
            answer = call(self, system, user)
            crash("llm.after")
            return answer

        llm_extractor.LLMExtractor._call = llm_call  # type: ignore[method-assign]
        wrapped += ["llm.before", "llm.after"]

    if not _wired(atomic.atomic_write_bytes):

        class _Os:
            """``os`` for atomic.py only: a crash point between the temp write and rename."""

            def __getattr__(self, name: str) -> Any:
                return getattr(os, name)

            @staticmethod
            def replace(src: Any, dst: Any) -> None:
                crash("file.rename")
                os.replace(src, dst)

        atomic.os = _Os()  # type: ignore[assignment]
        wrapped.append("file.rename")

    if not _wired(MemoryIndex.upsert):
        upsert = MemoryIndex.upsert

        @functools.wraps(upsert)
        def index_upsert(self: Any, rows: Any) -> None:
            crash("index.upsert")
            upsert(self, rows)

        MemoryIndex.upsert = index_upsert  # type: ignore[method-assign]
        wrapped.append("index.upsert")

    torn = os.environ.get(TORN_ENV)
    if torn:
        _install_torn(int(torn))
    return wrapped


def _install_torn(n: int) -> None:
    """The n-th journaled turn reaches the file only half written: a kill -9 mid-write."""
    from engram_md import journal

    write = journal.Journal._write
    seen = [0]

    def torn_write(self: Any, record: dict[str, Any], fsync: bool) -> None:
        if record.get("op") == "turn":
            seen[0] += 1
            if seen[0] == n and self._fd is not None:
                data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
                os.write(self._fd, data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
        write(self, record, fsync)

    journal.Journal._write = torn_write  # type: ignore[method-assign]


def child_main(argv: list[str]) -> None:
    install_hooks()
    from engram_md.cli import main

    sys.argv = ["engram-md", *argv]
    main()


# ---- the loop --------------------------------------------------------------------------------


@dataclass
class Trial:
    number: int
    kills: list[dict[str, Any]] = field(default_factory=list)
    equal: bool = False
    lost: int = 0
    duplicated: int = 0
    pending: int = 0
    problems: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_status: int | None = None

    @property
    def ok(self) -> bool:
        return (
            self.equal
            and not self.lost
            and not self.duplicated
            and not self.pending
            and not self.problems
            and self.exit_status == 0
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.number,
            "kills": self.kills,
            "equal": self.equal,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "pending": self.pending,
            "problems": self.problems[:10],
            "differences": self.differences[:10],
            "seconds": round(self.seconds, 1),
            "ok": self.ok,
        }


def _child_argv(folder: Folder, *args: str) -> list[str]:
    argv = folder.argv(*args, module="bench.crashloop")
    return [*argv[:3], "--child", *argv[3:]]


def _run(
    folder: Folder, data: bytes, env: dict[str, str], *, kill_after: float | None = None
) -> tuple[int, float]:
    """Run the daemon on ``data``; SIGKILL it after ``kill_after`` seconds if given.
    Returns (exit status, seconds)."""
    started = time.monotonic()
    with open(folder.root / "daemon.stderr", "ab") as stderr:
        proc = subprocess.Popen(
            _child_argv(folder, "run"),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            cwd=folder.root,
        )
        assert proc.stdin is not None
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # killed at a crash point before it read everything
        try:
            proc.wait(timeout=kill_after if kill_after is not None else RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    return proc.returncode, time.monotonic() - started


def _compare(got: dict[str, bytes], expected: dict[str, bytes]) -> list[str]:
    out = [f"missing {name}" for name in sorted(set(expected) - set(got))]
    out += [f"extra {name}" for name in sorted(set(got) - set(expected))]
    out += [
        f"content differs: {name}"
        for name in sorted(set(got) & set(expected))
        if got[name] != expected[name]
    ]
    return out


def _choose(
    point: str,
    counts: dict[str, int],
    turns: int,
    seconds: float,
    rng: random.Random,
    *,
    share: float = 1.0,
) -> dict[str, Any]:
    """Where to kill: the n-th occurrence of a point, or a delay for a random-time kill.

    ``share`` scales the range for a kill during recovery: a restart only redoes what the
    first run left, so it reaches each point fewer times than the baseline did.
    """
    if point == "random":
        return {
            "point": point,
            "after_seconds": round(rng.uniform(0.5, max(1.0, seconds * share)), 2),
        }
    total = turns if point == "journal.torn" else counts.get(point, 1)
    return {"point": point, "n": rng.randint(1, max(1, int(total * share)))}


def _describe(kill: dict[str, Any]) -> str:
    where = f"#{kill['n']}" if "n" in kill else f"@{kill.get('after_seconds')}s"
    return f"{kill['point']}{where}{'' if kill['killed'] else ' (finished first)'}"


def _crash_env(kill: dict[str, Any]) -> dict[str, str]:
    if kill["point"] == "journal.torn":
        return _env(**{TORN_ENV: str(kill["n"])})
    if kill["point"] == "random":
        return _env()
    return _env(ENGRAM_CRASH_AT=f"{kill['point']}:{kill['n']}")


def run(
    *,
    trials: int = 50,
    turns: int = 100,
    workdir: Path,
    seed: int = 0,
    second_crash: float = 0.3,
    log: Any = sys.stdout,
) -> dict[str, Any]:
    rng = random.Random(seed)
    source = ReplayInput.load(turns)
    data = source.data()
    ids = source.ids()
    root = workdir / "crash"
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with CountingFake() as server:
        config = llm_config_yaml(server)

        def fresh(name: str) -> Folder:
            folder = Folder(root / name)
            folder.root.mkdir(parents=True, exist_ok=True)
            folder.config_path.write_text(config, encoding="utf-8")
            return folder

        baseline = fresh("baseline")
        counts_path = baseline.root / "crashpoints.json"
        status, base_seconds = _run(baseline, data, _env(ENGRAM_CRASH_COUNTS=str(counts_path)))
        if status != 0:
            raise RuntimeError(f"the uninterrupted run failed (exit {status}); see {baseline.root}")
        counts: dict[str, int] = json.loads(counts_path.read_text(encoding="utf-8"))
        expected = baseline.fact_files()
        empty, _ = base_profile(source.base, baseline.config().sanitize)
        base_problems, checker = consistency_problems(baseline.config())
        print(
            f"  baseline: {len(expected)} fact files in {base_seconds:.1f} s; points {counts}",
            file=log,
            flush=True,
        )

        results: list[Trial] = []
        for number in range(trials):
            trial = Trial(number)
            t0 = time.monotonic()
            folder = fresh(f"trial-{number:03d}")
            plan = [_choose(POINTS[number % len(POINTS)], counts, turns, base_seconds, rng)]
            if rng.random() < second_crash:
                plan.append(
                    _choose(rng.choice(POINTS), counts, turns, base_seconds, rng, share=0.3)
                )
            for kill in plan:
                status, _ = _run(
                    folder, data, _crash_env(kill), kill_after=kill.get("after_seconds")
                )
                trial.kills.append({**kill, "killed": status == -signal.SIGKILL})
            status, _ = _run(folder, data, _env())
            trial.exit_status = status
            trial.problems, _ = consistency_problems(folder.config())
            trial.differences = _compare(folder.fact_files(), expected)
            trial.equal = not trial.differences
            result = audit(folder.layout, ids, empty_base=empty)
            trial.lost = result.lost
            trial.duplicated = result.duplicated
            trial.pending = result.outcomes["pending"]
            trial.seconds = time.monotonic() - t0
            results.append(trial)
            print(
                f"  trial {number}: "
                + ", ".join(_describe(k) for k in trial.kills)
                + f" -> {'ok' if trial.ok else 'FAILED'} ({trial.seconds:.0f} s)"
                + ("" if trial.ok else f" {trial.differences[:3]} {trial.problems[:3]}"),
                file=log,
                flush=True,
            )
    kills = [k for t in results for k in t.kills if k["killed"]]
    return {
        "turns": turns,
        "trials": len(results),
        "baseline_fact_files": len(expected),
        "baseline_seconds": round(base_seconds, 1),
        "baseline_problems": base_problems,
        "point_counts": counts,
        "kills": len(kills),
        "kills_by_point": dict(Counter(k["point"] for k in kills)),
        "not_killed": sum(1 for t in results for k in t.kills if not k["killed"]),
        "trials_equal": sum(t.equal for t in results),
        "lost": sum(t.lost for t in results),
        "duplicated": sum(t.duplicated for t in results),
        "pending": sum(t.pending for t in results),
        "consistency_failures": sum(bool(t.problems) for t in results),
        # "doctor temp_file", "temp file left behind", ...: what the failures were about.
        "problem_kinds": dict(
            Counter(p.split(":", 1)[0] for t in results for p in dict.fromkeys(t.problems))
        ),
        "consistency_checker": checker,
        "failed_trials": [t.to_dict() for t in results if not t.ok],
        "trial_log": [t.to_dict() for t in results],
        "seconds": round(time.monotonic() - started, 1),
        "ok": not base_problems and all(t.ok for t in results),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.crashloop")
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="engram-crash-") as tmp:
        result = run(
            trials=args.trials, turns=args.turns, workdir=args.workdir or Path(tmp), seed=args.seed
        )
    summary = {k: v for k, v in result.items() if k != "trial_log"}
    print(json.dumps(summary, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
