"""The crash loop: kill -9 at random points, restart on the same input, compare with a run
that was never interrupted.

    python -m bench.crashloop [--trials 50] [--turns 100] [--seed 0] [--workdir DIR]

A run is what a user's machine does: `engram-md run` on the input (LLM mode, fake server
without faults, so every run asks the same questions and gets the same answers; consolidating
every few extractions, so the daemon's consolidation is crashed too), then `engram-md forget`
of one fact. One uninterrupted run first, the baseline, counting how often each crash point
is reached. Then each trial, in a fresh folder:

1. runs it and kills it with SIGKILL at a chosen point — the n-th journal append, a torn
   journal line, just before or after an LLM call, between a temp file's write and its
   rename, an index upsert, a change consolidation applies, a step of the forget (n drawn at
   random from the baseline's count), or after a random delay;
2. sometimes kills the restart too, at another random point (a crash during recovery);
3. runs it again and lets it finish (the forget is simply asked for again: that finishes it);
4. checks that folder, hash index, search index and graph agree
   (:func:`bench.soak_data.consistency_problems`: ``engram_md.maintain.doctor`` plus the bench's own
   checks), that the fact files, box files, ``traces.json`` and the graph equal the
   baseline's, and that every turn is accounted for with no duplicated memory
   (:func:`bench.soak_data.audit`). What consolidation stamps from the wall clock and its
   schedule (lifecycle fields, edge decay; :data:`STAMPED_KEYS`) is compared apart and
   reported as drift, not as a failure.

Named points are the library's own ``crashpoint(...)`` calls (:mod:`engram_md.core.crashpoints`);
a point the baseline never reaches is reported (``unreached_points``) and fails the run, since
its trials could kill nothing. The daemon starts through this module (``python -m
bench.crashloop --child ...``) for the one point emulated here: the torn journal line, which
needs half a record written before dying.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_md.core.atomic import is_temp_file
from engram_md.store.factfile import read_fact

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

# Reached while the daemon runs, and while the forget after it runs.
DAEMON_POINTS = (
    "index.create",
    "journal.append",
    "llm.before",
    "llm.after",
    "file.rename",
    "index.upsert",
    "consolidate.apply",
)
FORGET_POINTS = ("forget.step",)
NAMED_POINTS = (*DAEMON_POINTS, *FORGET_POINTS)
POINTS = (*NAMED_POINTS, "journal.torn", "random")
# The default (50 extractions, 10 minutes apart) never consolidates in a 100-turn run.
CONSOLIDATE = {"consolidate": {"every_extractions": 5, "min_interval_minutes": 0}}
TORN_ENV = "ENGRAM_CRASH_TORN"  # bench-only: n-th journaled turn is written half, then SIGKILL
RUN_TIMEOUT = 900.0
REPO = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    """The daemon's environment; the child starts through this module, so it needs the
    repository on its path whatever folder it runs in."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return clean_env(PYTHONPATH=path, **extra)


# ---- the child: the real CLI, with the torn journal line emulated ----------------------------


def _install_torn(n: int) -> None:
    """The n-th journaled turn reaches the file only half written: a kill -9 mid-write."""
    from engram_md.ingest import journal

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
    torn = os.environ.get(TORN_ENV)
    if torn:
        _install_torn(int(torn))
    from engram_md.cli import main

    sys.argv = ["engram-md", *argv]
    main()


# ---- what a finished run must reproduce ------------------------------------------------------

# What consolidation stamps from the wall clock (its `now`) and from its run schedule: the
# lifecycle fields of fact files, the decay of graph edges. A restart shifts that schedule
# (a run killed part-way is done again after the next extraction, over more facts; a kill
# between a batch's "done" and its count loses one count), so these are reported as drift,
# apart from the differences that fail a trial.
STAMPED_KEYS = ("lifecycleState", "heatScore", "decayScore", "tier", "firstEpoch")
DECAY_KEYS = ("confidence", "decayWindows")
_STAMPED = re.compile(rf"^(?:{'|'.join(STAMPED_KEYS)}): .*\n", re.MULTILINE)
PARTS = ("facts", "boxes", "traces", "graph")


@dataclass(frozen=True)
class Snapshot:
    """What a restart must reproduce byte for byte: fact files (without consolidation's
    stamps), box files, ``traces.json``, and the graph as a reader sees it (``"<file>:<key>"``
    -> the last line for that edge or node, without its decay); and, kept apart, the stamps
    and decay (``consolidation``)."""

    facts: dict[str, str]
    boxes: dict[str, bytes]
    traces: dict[str, bytes]
    graph: dict[str, str]
    consolidation: dict[str, str]

    @classmethod
    def of(cls, folder: Folder) -> Snapshot:
        boxes_dir = folder.memory / "boxes"
        boxes = sorted(boxes_dir.rglob("*.md")) if boxes_dir.is_dir() else []
        traces = folder.state / "traces.json"
        facts: dict[str, str] = {}
        stamps: dict[str, str] = {}
        for rel, data in folder.fact_files().items():
            facts[rel], stamps[rel] = _unstamped(data.decode("utf-8", "replace"))
        graph, decay = _graph_records(folder.state / "graphs")
        return cls(
            facts=facts,
            boxes={
                p.relative_to(folder.memory).as_posix(): p.read_bytes()
                for p in boxes
                if not is_temp_file(p)
            },
            traces={"traces.json": traces.read_bytes()} if traces.exists() else {},
            graph=graph,
            consolidation={**stamps, **decay},
        )

    def differences(self, expected: Snapshot) -> list[str]:
        """What differs from ``expected``, each prefixed by its part (``facts: ...``)."""
        out: list[str] = []
        for part in PARTS:
            got, want = getattr(self, part), getattr(expected, part)
            out += [f"{part}: {d}" for d in _compare(got, want)]
        return out

    def drift(self, expected: Snapshot) -> list[str]:
        """Where consolidation's stamps and decay differ from ``expected``'s."""
        return _compare(self.consolidation, expected.consolidation)


def _unstamped(text: str) -> tuple[str, str]:
    """A fact file without consolidation's stamp lines, and those lines."""
    cut = text.find("\n---\n") + 1  # the frontmatter, with its last line's newline
    head = text[:cut]
    return _STAMPED.sub("", head) + text[cut:], "".join(_STAMPED.findall(head))


def _graph_records(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The graph's last line per edge and per node without decay, and the decay per edge.

    Not the files themselves: when they are compacted (every so many lines, and on loading a
    torn line) superseded lines go and the order changes, and a crash can move that moment
    without changing what the graph says.
    """
    records: dict[str, str] = {}
    decay: dict[str, str] = {}
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a torn line: doctor reports it
            key = f"{path.name}:{_graph_key(path.stem, data)}"
            if path.stem != "nodes":
                decay[f"graph {key}"] = json.dumps({k: data.pop(k, None) for k in DECAY_KEYS})
            records[key] = json.dumps(data)
    return records, decay


def _graph_key(kind: str, data: dict[str, Any]) -> str:
    if kind == "nodes":
        return str(data.get("id"))
    ends = [str(data.get("source")), str(data.get("target"))]
    # Entity and time edges are one per pair, whichever way round
    # (engram_md.organize.graph.Edge.key).
    return "->".join(ends if kind == "causal" else sorted(ends))


def _compare(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    out = [f"missing {name}" for name in sorted(set(expected) - set(got))]
    out += [f"extra {name}" for name in sorted(set(got) - set(expected))]
    out += [
        f"content differs: {name}"
        for name in sorted(set(got) & set(expected))
        if got[name] != expected[name]
    ]
    return out


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
    drift: list[str] = field(default_factory=list)  # consolidation's stamps (see STAMPED_KEYS)
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
            "drift": len(self.drift),
            "seconds": round(self.seconds, 1),
            "ok": self.ok,
        }


def _child_argv(folder: Folder, *args: str) -> list[str]:
    argv = folder.argv(*args, module="bench.crashloop")
    return [*argv[:3], "--child", *argv[3:]]


def _daemon(
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


def _forget(folder: Folder, fact_id: str, env: dict[str, str]) -> int:
    """`engram-md forget ID`; returns its exit status."""
    with open(folder.root / "daemon.stderr", "ab") as stderr:
        return subprocess.run(
            _child_argv(folder, "forget", fact_id),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            cwd=folder.root,
            timeout=RUN_TIMEOUT,
        ).returncode


def _forget_target(folder: Folder) -> str | None:
    """The fact every run forgets: the middle one of those in a box (so the forget rewrites a
    box and its trace too), None in a folder without facts."""
    facts = [read_fact(folder.memory / rel) for rel in folder.fact_files()]
    boxed = [f for f in facts if f.box_id] or facts
    return boxed[len(boxed) // 2].id if boxed else None


def _attempt(folder: Folder, data: bytes, target: str | None, kill: dict[str, Any]) -> bool:
    """One start of a run that is to be killed as ``kill`` says; True if it was."""
    env = _crash_env(kill)
    if kill["point"] in FORGET_POINTS:
        if target is None:
            return False
        _daemon(folder, data, _env())
        return _forget(folder, target, env) == -signal.SIGKILL
    status, _ = _daemon(folder, data, env, kill_after=kill.get("after_seconds"))
    return status == -signal.SIGKILL


def _finish(folder: Folder, data: bytes, target: str | None) -> int:
    """The run, uninterrupted: the daemon, then the forget (asked for again, if a kill cut it
    short). Returns the first failing exit status, else 0."""
    status, _ = _daemon(folder, data, _env())
    if status == 0 and target is not None:
        status = _forget(folder, target, _env())
    return status


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


@dataclass(frozen=True)
class Baseline:
    snapshot: Snapshot
    counts: dict[str, int]  # crash point -> how often the run reached it
    seconds: float  # the daemon's part
    target: str | None  # the fact forgotten


def _baseline(folder: Folder, data: bytes) -> Baseline:
    """The uninterrupted run, counting crash points (each process writes its own counts)."""
    daemon_counts = folder.root / "crashpoints.json"
    status, seconds = _daemon(folder, data, _env(ENGRAM_CRASH_COUNTS=str(daemon_counts)))
    if status != 0:
        raise RuntimeError(f"the uninterrupted run failed (exit {status}); see {folder.root}")
    counts: dict[str, int] = json.loads(daemon_counts.read_text(encoding="utf-8"))
    target = _forget_target(folder)
    if target is not None:
        forget_counts = folder.root / "crashpoints-forget.json"
        status = _forget(folder, target, _env(ENGRAM_CRASH_COUNTS=str(forget_counts)))
        if status != 0:
            raise RuntimeError(f"forgetting {target} failed (exit {status}); see {folder.root}")
        reached = json.loads(forget_counts.read_text(encoding="utf-8"))
        counts.update({p: n for p, n in reached.items() if p in FORGET_POINTS})
    return Baseline(Snapshot.of(folder), counts, seconds, target)


def run(
    *,
    trials: int = 50,
    turns: int = 100,
    workdir: Path,
    seed: int = 0,
    second_crash: float = 0.3,
    points: Sequence[str] = POINTS,
    log: Any = sys.stdout,
) -> dict[str, Any]:
    """``points``: the first kill of trial i is at ``points[i % len(points)]``."""
    rng = random.Random(seed)
    source = ReplayInput.load(turns)
    data = source.data()
    ids = source.ids()
    root = workdir / "crash"
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with CountingFake() as server:
        config = llm_config_yaml(server, extra=CONSOLIDATE)

        def fresh(name: str) -> Folder:
            folder = Folder(root / name)
            folder.root.mkdir(parents=True, exist_ok=True)
            folder.config_path.write_text(config, encoding="utf-8")
            return folder

        baseline_folder = fresh("baseline")
        base = _baseline(baseline_folder, data)
        counts = base.counts
        unreached = [p for p in points if p in NAMED_POINTS and not counts.get(p)]
        sanitize = baseline_folder.config().sanitize
        empty, _ = base_profile(source.base, sanitize)
        keys = source.journal_keys(sanitize)
        base_problems, checker = consistency_problems(baseline_folder.config())
        print(
            f"  baseline: {len(base.snapshot.facts)} fact files in {base.seconds:.1f} s; "
            f"forgets {base.target}; points {counts}"
            + (f"; never reached: {unreached}" if unreached else ""),
            file=log,
            flush=True,
        )

        results: list[Trial] = []
        for number in range(trials):
            trial = Trial(number)
            t0 = time.monotonic()
            folder = fresh(f"trial-{number:03d}")
            plan = [_choose(points[number % len(points)], counts, turns, base.seconds, rng)]
            if rng.random() < second_crash:
                plan.append(
                    _choose(rng.choice(points), counts, turns, base.seconds, rng, share=0.3)
                )
            for kill in plan:
                killed = _attempt(folder, data, base.target, kill)
                trial.kills.append({**kill, "killed": killed})
            trial.exit_status = _finish(folder, data, base.target)
            trial.problems, _ = consistency_problems(folder.config())
            snapshot = Snapshot.of(folder)
            trial.differences = snapshot.differences(base.snapshot)
            trial.drift = snapshot.drift(base.snapshot)
            trial.equal = not trial.differences
            result = audit(folder.layout, ids, keys=keys, empty_base=empty)
            trial.lost = result.lost
            trial.duplicated = result.duplicated
            trial.pending = result.outcomes["pending"]
            trial.seconds = time.monotonic() - t0
            results.append(trial)
            print(
                f"  trial {number}: "
                + ", ".join(_describe(k) for k in trial.kills)
                + f" -> {'ok' if trial.ok else 'FAILED'} ({trial.seconds:.0f} s)"
                + (f" [consolidation drift: {len(trial.drift)}]" if trial.drift else "")
                + ("" if trial.ok else f" {trial.differences[:3]} {trial.problems[:3]}"),
                file=log,
                flush=True,
            )
    kills = [k for t in results for k in t.kills if k["killed"]]
    return {
        "turns": turns,
        "trials": len(results),
        "baseline_fact_files": len(base.snapshot.facts),
        "baseline_box_files": len(base.snapshot.boxes),
        "baseline_seconds": round(base.seconds, 1),
        "baseline_problems": base_problems,
        "forgotten": base.target,
        "point_counts": counts,
        "unreached_points": unreached,
        "kills": len(kills),
        "kills_by_point": dict(Counter(k["point"] for k in kills)),
        "not_killed": sum(1 for t in results for k in t.kills if not k["killed"]),
        "trials_equal": sum(t.equal for t in results),
        # facts / boxes / traces / graph: in how many trials each part differed.
        "trials_differing_by_part": dict(
            Counter(part for t in results for part in {d.split(":", 1)[0] for d in t.differences})
        ),
        # Trials whose consolidation stamps or edge decay differ (not failures: STAMPED_KEYS).
        "trials_with_consolidation_drift": sum(bool(t.drift) for t in results),
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
        "ok": not base_problems and not unreached and all(t.ok for t in results),
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
