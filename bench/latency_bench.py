"""Recall latency and reindex time at 10k and 100k memories.

    python -m bench.latency_bench [--sizes 10000 100000] [--queries 200]

For each size N: N synthetic fact files are written in the documented format (through
``render_fact``, at the path the store would choose) into a fresh memory folder under /tmp;
``engram-md reindex`` indexes them with an empty embedding cache (the reindex figure); then
recall is timed in-process (``RecallSession``) and through a running daemon (``RecallClient``
over loopback), and the CLI end to end once for a single query and once for a batch.

Targets: recall through the daemon p50 <= 20 ms at 100k memories; reindex of 10k fact files
<= 60 s. The machine this runs on is small and shared, so every figure is a median (or p95)
over many runs, and the parts run one after the other, never side by side.

Statements and queries come from templates over small vocabularies (people, tools, places,
hobbies, numbers) with a fixed random seed, so a run is repeatable and the queries read like
questions an agent would ask without repeating any stored sentence.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engram_md.core.models import CandidateFact, Category, Source
from engram_md.core.paths import MemoryLayout
from engram_md.ingest.pipeline import to_fact
from engram_md.store.factfile import render_fact

SEED = 20260302
WARMUP = 10
BATCH_QUERIES = 100
DAEMON_DEADLINE_S = 600.0
# Created times are spread over two years ending here (a fixed end keeps runs repeatable).
SPAN_END = datetime(2026, 3, 1, tzinfo=UTC)
SPAN = timedelta(days=730)

# ---------------------------------------------------------------- vocabularies

PEOPLE = (
    "Dana Priya Marco Lena Tomas Aiko Rahul Sofia Jonas Mei Carlos Nadia Ethan Yuki Omar "
    "Greta Luis Hana Felix Amara Kenji Ines Viktor Zoe Arjun Clara Mateo Sana Oskar Leila "
    "Hugo Nora Ravi Elena Jin Maya Pablo Freya Samir Ivy Bruno Aisha Theo Lucia Malik Eva "
    "Diego Rosa Anton Keiko Idris Alma Niko Farah Emil Tara Sven Lina Kofi Vera"
).split()
TOOLS = (
    "uv pip poetry conda ruff black mypy pytest tox nox docker podman kubernetes terraform "
    "ansible nginx postgres sqlite redis kafka rabbitmq grafana prometheus sentry vim neovim "
    "emacs vscode pycharm tmux zsh fish git mercurial jenkins github-actions gitlab-ci "
    "rust go typescript deno bun node django flask fastapi react svelte vue pandas polars"
).split()
TASKS = (
    "dependency management", "formatting", "type checking", "local development",
    "deployments", "data pipelines", "code review", "note taking", "monitoring",
    "load testing", "prototyping", "database migrations", "scripting", "CI builds",
    "frontend work", "log analysis", "packaging", "backups", "profiling", "documentation",
)  # fmt: skip
PLACES = (
    "Lisbon Berlin Toronto Osaka Nairobi Austin Oslo Melbourne Porto Krakow Seattle Dublin "
    "Valencia Kyoto Montreal Denver Tallinn Bologna Seoul Utrecht Cape-Town Helsinki Lyon "
    "Boston Tbilisi Vienna Hanoi Zurich Glasgow Chicago Ljubljana Bergen Quito Lima Accra "
    "Marseille Gdansk Busan Edinburgh Sapporo"
).split()
HOBBIES = (
    "bouldering", "sourdough baking", "trail running", "chess", "watercolor painting",
    "birdwatching", "jazz piano", "woodworking", "salsa dancing", "film photography",
    "sailing", "pottery", "beekeeping", "cycling", "knitting", "calligraphy", "surfing",
    "board games", "gardening", "kayaking", "astronomy", "fencing", "origami", "yoga",
)  # fmt: skip
FOODS = (
    "ramen", "tacos", "falafel", "sushi", "pho", "risotto", "dumplings", "paella",
    "curry", "pierogi", "shakshuka", "bibimbap", "gnocchi", "ceviche", "tofu", "oysters",
    "mushrooms", "cilantro", "olives", "spicy food", "dairy", "gluten", "peanuts",
)  # fmt: skip
PROJECTS = (
    "Atlas Borealis Cobalt Dynamo Ember Falcon Granite Helix Indigo Juniper Kestrel Lumen "
    "Meridian Nimbus Onyx Pegasus Quasar Raven Sierra Tundra Umbra Vortex Willow Zephyr"
).split()
JOBS = (
    "data engineer", "nurse", "product manager", "site reliability engineer", "teacher",
    "architect", "accountant", "designer", "physiotherapist", "journalist", "chef",
    "researcher", "lawyer", "pharmacist", "backend developer", "translator",
)  # fmt: skip
RELATIONS = (
    "sister", "brother", "manager", "cousin", "mentor", "partner", "roommate", "neighbor",
    "colleague", "best friend", "former teacher", "business partner",
)  # fmt: skip
PETS = "Biscuit Pepper Miso Luna Otto Ziggy Mango Pixel Juno Waffles Nori Clementine".split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = (
    "January February March April May June July August September October November December"
).split()
TOPICS = (
    "the budget", "the hiring plan", "the roadmap", "the release notes", "the outage review",
    "the conference talk", "the vendor contract", "the onboarding guide", "the lease",
    "the holiday schedule", "the security audit", "the school trip",
)  # fmt: skip


def _place(rng: random.Random) -> str:
    return rng.choice(PLACES).replace("-", " ")


def _two(rng: random.Random, items: Sequence[str]) -> tuple[str, str]:
    a, b = rng.sample(items, 2)
    return a, b


@dataclass(frozen=True)
class _Template:
    category: Category
    make: Callable[[random.Random], tuple[str, tuple[str, ...], tuple[str, ...]]]
    # (statement, people named in it, tags)


def _statement_templates() -> tuple[_Template, ...]:
    """Statements of each category, the way an extractor writes them."""

    def pref_tool(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, (a, b), task = r.choice(PEOPLE), _two(r, TOOLS), r.choice(TASKS)
        return f"{p} prefers {a} over {b} for {task}.", (p,), ("tooling",)

    def pref_food(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, (a, b) = r.choice(PEOPLE), _two(r, FOODS)
        return f"{p} loves {a} but avoids {b}.", (p,), ("food",)

    def pref_time(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, n, day = r.choice(PEOPLE), r.randint(7, 11), r.choice(WEEKDAYS)
        return f"{p} likes to schedule deep work before {n} am on {day}s.", (p,), ("schedule",)

    def fact_home(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, place, n = r.choice(PEOPLE), _place(r), r.randint(1, 4)
        pets = "cat" if n == 1 else "cats"
        return f"{p} lives in {place} with {n} {pets}.", (p,), ("home",)

    def fact_job(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, job, place = r.choice(PEOPLE), r.choice(JOBS), _place(r)
        years = r.randint(1, 15)
        return f"{p} has worked as a {job} in {place} for {years} years.", (p,), ("work",)

    def fact_birthday(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, month, day = r.choice(PEOPLE), r.choice(MONTHS), r.randint(1, 28)
        return f"{p}'s birthday is on {month} {day}.", (p,), ("birthday",)

    def correction_place(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, (a, b) = r.choice(PEOPLE), _two(r, PLACES)
        a, b = a.replace("-", " "), b.replace("-", " ")
        return f"Correction: {p} moved to {a}, not {b}.", (p,), ("home",)

    def correction_tool(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, (a, b), task = r.choice(PEOPLE), _two(r, TOOLS), r.choice(TASKS)
        return f"{p} actually uses {a} for {task}, not {b}.", (p,), ("tooling",)

    def entity_project(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        proj, (p, q), tool = r.choice(PROJECTS), _two(r, PEOPLE), r.choice(TOOLS)
        n = r.randint(2, 40)
        text = f"{proj} is a {tool} service with {n} contributors, maintained by {p} and {q}."
        return text, (p, q), ("project",)

    def decision_migrate(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        proj, (a, b), month = r.choice(PROJECTS), _two(r, TOOLS), r.choice(MONTHS)
        p = r.choice(PEOPLE)
        text = f"{p} and the team decided to move {proj} from {b} to {a} by {month}."
        return text, (p,), ("decision",)

    def decision_offsite(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, place, month = r.choice(PEOPLE), _place(r), r.choice(MONTHS)
        n = r.randint(5, 60)
        return f"{p} chose {place} for the {month} offsite of {n} people.", (p,), ("travel",)

    def relationship(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        (p, q), rel = _two(r, PEOPLE), r.choice(RELATIONS)
        return f"{p} is {q}'s {rel}.", (p, q), ("family",)

    def friends(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        (p, q), year, place = _two(r, PEOPLE), r.randint(1995, 2024), _place(r)
        return (
            f"{p} and {q} have been friends since {year}, when both lived in {place}.",
            (
                p,
                q,
            ),
            ("friends",),
        )

    def principle(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, n, task = r.choice(PEOPLE), r.randint(2, 90), r.choice(TASKS)
        return (
            f"{p} believes {task} checks should finish in under {n} seconds.",
            (p,),
            ("principle",),
        )

    def principle_deploy(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        proj, day, p = r.choice(PROJECTS), r.choice(WEEKDAYS), r.choice(PEOPLE)
        return f"{p} insists {proj} is never deployed on a {day} afternoon.", (p,), ("rules",)

    def commitment(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, proj, day = r.choice(PEOPLE), r.choice(PROJECTS), r.choice(WEEKDAYS)
        return f"{p} promised to send the {proj} status report by {day}.", (p,), ("work",)

    def commitment_call(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        (p, q), topic, day = _two(r, PEOPLE), r.choice(TOPICS), r.choice(WEEKDAYS)
        return f"{p} will call {q} about {topic} on {day}.", (p, q), ("follow-up",)

    def moment_race(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, n, place = r.choice(PEOPLE), r.choice((5, 10, 21, 42)), _place(r)
        month, year = r.choice(MONTHS), r.randint(2023, 2026)
        return f"{p} ran a {n} km race in {place} in {month} {year}.", (p,), ("sport",)

    def moment_pet(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, pet, month = r.choice(PEOPLE), r.choice(PETS), r.choice(MONTHS)
        year = r.randint(2020, 2026)
        return f"{p} adopted a dog named {pet} in {month} {year}.", (p,), ("pets",)

    def skill_tool(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, tool, task = r.choice(PEOPLE), r.choice(TOOLS), r.choice(TASKS)
        return f"{p} knows how to set up {tool} for {task}.", (p,), ("skills",)

    def skill_hobby(r: random.Random) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        p, hobby, n = r.choice(PEOPLE), r.choice(HOBBIES), r.randint(1, 20)
        q = r.choice(PEOPLE)
        return f"{p} has practiced {hobby} for {n} years, first taught by {q}.", (p, q), ("hobby",)

    return (
        _Template(Category.PREFERENCE, pref_tool),
        _Template(Category.PREFERENCE, pref_food),
        _Template(Category.PREFERENCE, pref_time),
        _Template(Category.FACT, fact_home),
        _Template(Category.FACT, fact_job),
        _Template(Category.FACT, fact_birthday),
        _Template(Category.CORRECTION, correction_place),
        _Template(Category.CORRECTION, correction_tool),
        _Template(Category.ENTITY, entity_project),
        _Template(Category.DECISION, decision_migrate),
        _Template(Category.DECISION, decision_offsite),
        _Template(Category.RELATIONSHIP, relationship),
        _Template(Category.RELATIONSHIP, friends),
        _Template(Category.PRINCIPLE, principle),
        _Template(Category.PRINCIPLE, principle_deploy),
        _Template(Category.COMMITMENT, commitment),
        _Template(Category.COMMITMENT, commitment_call),
        _Template(Category.MOMENT, moment_race),
        _Template(Category.MOMENT, moment_pet),
        _Template(Category.SKILL, skill_tool),
        _Template(Category.SKILL, skill_hobby),
    )


def _query_templates() -> tuple[Callable[[random.Random], str], ...]:
    """Questions an agent would ask; worded unlike the stored statements."""
    return (
        lambda r: f"What does {r.choice(PEOPLE)} use for {r.choice(TASKS)}?",
        lambda r: f"Which package manager should I use with {r.choice(PEOPLE)}?",
        lambda r: f"Where does {r.choice(PEOPLE)} live these days?",
        lambda r: f"What food should I avoid when cooking for {r.choice(PEOPLE)}?",
        lambda r: f"Who is {r.choice(PEOPLE)}'s {r.choice(RELATIONS)}?",
        lambda r: f"When is {r.choice(PEOPLE)}'s birthday?",
        lambda r: f"What job does {r.choice(PEOPLE)} have?",
        lambda r: f"Who maintains the {r.choice(PROJECTS)} service?",
        lambda r: f"Is it ok to deploy {r.choice(PROJECTS)} on {r.choice(WEEKDAYS)}?",
        lambda r: f"When is the {r.choice(PROJECTS)} report due?",
        lambda r: f"What did we decide about {r.choice(PROJECTS)} and {r.choice(TOOLS)}?",
        lambda r: f"Who knows {r.choice(TOOLS)} well enough to help with {r.choice(TASKS)}?",
        lambda r: f"How long has {r.choice(PEOPLE)} been doing {r.choice(HOBBIES)}?",
        lambda r: f"Who took up {r.choice(HOBBIES)} recently?",
        lambda r: f"What races did {r.choice(PEOPLE)} run in {r.choice(MONTHS)}?",
        lambda r: f"What happened in {_place(r)} in {r.choice(MONTHS)} {r.randint(2024, 2026)}?",
        lambda r: f"Does {r.choice(PEOPLE)} have a dog?",
        lambda r: f"Where is the {r.choice(MONTHS)} offsite?",
        lambda r: f"Who should I ask about {r.choice(TOPICS)}?",
        lambda r: f"what editor does {r.choice(PEOPLE).lower()} like",
        lambda r: f"{r.choice(TOOLS)} vs {r.choice(TOOLS)} for {r.choice(TASKS)}",
    )


def make_queries(count: int, *, seed: int = SEED + 1) -> list[str]:
    """``count`` distinct queries, the same list for the same seed."""
    rng = random.Random(seed)
    templates = _query_templates()
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(rng.choice(templates)(rng), None)
    return list(seen)


# ---------------------------------------------------------------- the memory folder


def make_candidates(n: int, *, seed: int = SEED) -> list[CandidateFact]:
    """``n`` candidate facts with distinct statements, the same list for the same seed.

    Categories are spread evenly (each round picks the next category, then one of its
    templates); created times are spread over :data:`SPAN`.
    """
    rng = random.Random(seed)
    by_category: dict[Category, list[_Template]] = {}
    for template in _statement_templates():
        by_category.setdefault(template.category, []).append(template)
    categories = list(by_category)
    span_s = int(SPAN.total_seconds())
    seen: set[str] = set()
    out: list[CandidateFact] = []
    while len(out) < n:
        i = len(out)
        category = categories[i % len(categories)]
        content, people, tags = rng.choice(by_category[category]).make(rng)
        if content in seen:
            continue
        seen.add(content)
        out.append(
            CandidateFact(
                category=category,
                content=content,
                confidence=rng.choice((0.98, 0.96, 0.9, 0.8, 0.72, 0.55, 0.35)),
                source_turn_ids=(f"t{i}",),
                session=f"bench-{i // 40}",
                created=SPAN_END - timedelta(seconds=rng.randrange(span_s)),
                tags=tags,
                entities=tuple(f"person-{p.casefold()}" for p in people),
                source=Source.OFFLINE,
            )
        )
    return out


def _write_chunk(memory_dir: Path, candidates: Sequence[CandidateFact]) -> int:
    """Normalize, render and write some candidates; returns how many files were written."""
    layout = MemoryLayout(memory_dir, memory_dir.parent / "state")
    made_dirs: set[Path] = set()
    written = 0
    for candidate in candidates:
        fact = to_fact(candidate)
        if fact is None:
            continue
        path = layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
        if path.parent not in made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(path.parent)
        try:
            # "x": two statements whose short hashes meet in the same second keep the first.
            with open(path, "x", encoding="utf-8") as file:
                file.write(render_fact(fact))
        except FileExistsError:
            continue
        written += 1
    return written


def write_facts(memory_dir: Path, n: int, *, seed: int = SEED) -> int:
    """Write ``n`` fact files as the store would; returns how many were written.

    Facts go through ``to_fact`` (the pipeline's normalize stage) and ``render_fact``, so the
    files are exactly what ingestion produces. Rendering YAML costs ~1.5 ms a file, so the
    work is spread over one process per core; and the write skips the temp-file-and-fsync
    dance, which would only slow down setting up what we measure.
    """
    candidates = make_candidates(n, seed=seed)
    workers = max(1, min(os.cpu_count() or 1, 8))
    if workers == 1 or n < 2000:
        return _write_chunk(memory_dir, candidates)
    size = -(-len(candidates) // (workers * 4))
    chunks = [candidates[i : i + size] for i in range(0, len(candidates), size)]
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_write_chunk, [memory_dir] * len(chunks), chunks))


# ---------------------------------------------------------------- measuring


def _ms_stats(samples_s: Sequence[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)

    def nearest_rank(q: float) -> float:
        return ms[min(len(ms) - 1, max(0, round(q * (len(ms) - 1))))]

    return {
        "n": len(ms),
        "p50": round(statistics.median(ms), 2),
        "p95": round(nearest_rank(0.95), 2),
        "p99": round(nearest_rank(0.99), 2),
        "mean": round(statistics.fmean(ms), 2),
        "max": round(ms[-1], 2),
    }


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> float:
    """The one-minute load average: on a shared machine, the context every figure needs."""
    return round(os.getloadavg()[0], 2)


def _env() -> dict[str, str]:
    """The environment of every child: no LLM, no config file, no inherited folders."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}


def _cli_argv(memory_dir: Path, state_dir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "engram_md",
        "--memory-dir",
        str(memory_dir),
        "--state-dir",
        str(state_dir),
        *args,
    ]


def _check(result: subprocess.CompletedProcess[bytes], what: str) -> None:
    if result.returncode != 0:
        tail = result.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{what} exited with {result.returncode}: {tail}")


def _status_mb(pid: int, field: str) -> float | None:
    """A size from ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ``RssAnon``...) in MB."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def _peak_rss_mb(pid: int) -> float | None:
    return _status_mb(pid, "VmHWM")


def _in_process(
    memory_dir: Path, state_dir: Path, warmup: Sequence[str], queries: Sequence[str]
) -> tuple[dict[str, float], float]:
    """Recall latency in this process; also how long opening the session took."""
    from engram_md.app import RecallSession
    from engram_md.core.config import load_config
    from engram_md.recall.wire import RecallOptions

    cfg = load_config(None, env={}, overrides={"memory_dir": memory_dir, "state_dir": state_dir})
    uncounted = RecallOptions(record_access=False)
    started = time.perf_counter()
    session = RecallSession(cfg)
    opened = time.perf_counter() - started
    try:
        for query in warmup:
            session.recaller.recall(query, uncounted)
        samples, cpu = [], []
        for query in queries:
            c0, t0 = time.process_time(), time.perf_counter()
            session.recaller.recall(query, uncounted)
            samples.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    finally:
        del session
        gc.collect()
    stats = _ms_stats(samples)
    # CPU time of all this process's threads: less sensitive than wall time to other load.
    stats["cpu_p50"] = round(statistics.median(cpu) * 1000, 2)
    return stats, opened


def _wait_for_daemon(proc: subprocess.Popen[bytes], endpoint_path: Path, log: Path) -> Any:
    from engram_md.recall.server import find_daemon

    deadline = time.monotonic() + DAEMON_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the daemon exited with {proc.returncode}: {tail}")
        endpoint = find_daemon(endpoint_path)
        if endpoint is not None and endpoint.pid == proc.pid:
            return endpoint
        time.sleep(0.05)
    raise RuntimeError(f"the daemon did not advertise recall within {DAEMON_DEADLINE_S:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _through_daemon(
    root: Path,
    memory_dir: Path,
    state_dir: Path,
    warmup: Sequence[str],
    queries: Sequence[str],
    single: str,
    batch: Sequence[str],
) -> dict[str, Any]:
    from engram_md.recall.server import RecallClient

    out: dict[str, Any] = {}
    with running_daemon(root, memory_dir, state_dir) as (proc, endpoint, ready_s):
        out["daemon_ready_s"] = round(ready_s, 2)
        # The daemon records each answer's accesses (state/access.jsonl), as it does in
        # use; the in-process figures leave that out. One append per query: small.
        with RecallClient(endpoint, timeout=60.0) as client:
            for query in warmup:
                client.recall(query)
            samples = []
            cpu0 = _cpu_s(proc.pid)
            for query in queries:
                t0 = time.perf_counter()
                client.recall(query)
                samples.append(time.perf_counter() - t0)
            cpu = _cpu_s(proc.pid) - cpu0
        out["daemon_ms"] = _ms_stats(samples)
        # The daemon's own CPU per answer (clock-tick resolution, so a mean over all).
        out["daemon_ms"]["cpu_mean"] = round(cpu * 1000 / len(queries), 2)

        t0 = time.perf_counter()
        result = subprocess.run(
            _cli_argv(memory_dir, state_dir, "recall", single),
            capture_output=True,
            env=_env(),
        )
        out["cli_single_s"] = round(time.perf_counter() - t0, 3)
        _check(result, "recall")
        t0 = time.perf_counter()
        result = subprocess.run(
            _cli_argv(memory_dir, state_dir, "recall", "-", "--json"),
            input=("\n".join(batch) + "\n").encode(),
            capture_output=True,
            env=_env(),
        )
        batch_s = time.perf_counter() - t0
        _check(result, "recall -")
        answers = result.stdout.decode().splitlines()
        if len(answers) != len(batch):
            raise RuntimeError(f"recall - answered {len(answers)} of {len(batch)} queries")
        out["cli_batch_ms_per_query"] = round(batch_s * 1000 / len(batch), 2)
        # A fallback to in-process recall would say so on stderr; the figures would lie.
        out["cli_used_daemon"] = b"answering in-process" not in result.stderr
        out["daemon_peak_rss_mb"] = _peak_rss_mb(proc.pid)
    return out


@contextmanager
def running_daemon(
    root: Path, memory_dir: Path, state_dir: Path
) -> Iterator[tuple[subprocess.Popen[bytes], Any, float]]:
    """``engram-md run`` over the folder (watching an empty folder, no stdin) while the block
    runs: the process, the endpoint it advertised, and seconds from spawn to that endpoint.
    Its output goes to ``root/daemon.log``; it gets SIGTERM when the block ends."""
    empty = root / "no-transcripts"
    empty.mkdir(exist_ok=True)
    log = root / "daemon.log"
    endpoint_path = MemoryLayout(memory_dir, state_dir).daemon_endpoint_path
    with open(log, "wb") as log_file:
        started = time.perf_counter()
        proc = subprocess.Popen(
            _cli_argv(memory_dir, state_dir, "run", "--watch", str(empty), "--no-stdin"),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=_env(),
        )
        try:
            endpoint = _wait_for_daemon(proc, endpoint_path, log)
            yield proc, endpoint, time.perf_counter() - started
        finally:
            _stop(proc)


def run_size(
    n: int, queries: int = 200, *, keep: Path | None = None, reuse: bool = False
) -> dict[str, Any]:
    """Every figure for one folder size.

    The folders live in a temporary directory that is deleted afterwards, or under
    ``keep/<n>`` and left there (to profile against the same index later). With ``reuse``,
    a folder already built there is measured again without rewriting and reindexing it (the
    reindex figure is then absent).
    """
    pool = make_queries(WARMUP + queries + 1 + BATCH_QUERIES)
    warmup, timed = pool[:WARMUP], pool[WARMUP : WARMUP + queries]
    single, batch = pool[WARMUP + queries], pool[WARMUP + queries + 1 :]
    with tempfile.TemporaryDirectory(prefix="engram-latency-", dir="/tmp") as tmp:
        root = Path(tmp) if keep is None else keep / str(n)
        memory_dir, state_dir = root / "memory", root / "state"
        out: dict[str, Any] = {"load_before": _load()}
        if reuse and (state_dir / "index").is_dir():
            out["reused"] = str(root)
        else:
            if keep is not None:
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir(parents=True)
            t0 = time.perf_counter()
            written = write_facts(memory_dir, n)
            out["files_written_s"] = round(time.perf_counter() - t0, 2)
            out["files"] = written

            t0 = time.perf_counter()
            result = subprocess.run(
                _cli_argv(memory_dir, state_dir, "reindex"), capture_output=True, env=_env()
            )
            out["reindex_s"] = round(time.perf_counter() - t0, 2)
            _check(result, "reindex")

        # The in-process run caches its query vectors on disk; the daemon must start from the
        # cache reindex left, or its queries would skip embedding and look faster than they are.
        cache = MemoryLayout(memory_dir, state_dir).embedding_cache_dir
        cache_copy = root / "embeddings-after-reindex"
        if reuse and cache.is_dir():
            # A reused folder's cache may hold these very queries from an earlier run: start
            # from none (the index holds every memory's vector; the cache only saves work).
            shutil.rmtree(cache)
        if cache.is_dir():
            shutil.copytree(cache, cache_copy)

        in_process, opened = _in_process(memory_dir, state_dir, warmup, timed)
        out["in_process_ms"] = in_process
        out["session_open_s"] = round(opened, 2)

        shutil.rmtree(cache, ignore_errors=True)
        if cache_copy.is_dir():
            shutil.move(cache_copy, cache)
        out.update(_through_daemon(root, memory_dir, state_dir, warmup, timed, single, batch))
        out["load_after"] = _load()
        return out


def run(
    sizes: Sequence[int] = (10_000, 100_000),
    queries: int = 200,
    *,
    keep: Path | None = None,
    reuse: bool = False,
) -> dict[str, Any]:
    """Figures per folder size, keyed by the size as a string (JSON object keys).

    Per size: ``files_written_s``, ``reindex_s`` (the `reindex` subprocess, wall),
    ``in_process_ms`` and ``daemon_ms`` (p50/p95/mean/max wall per recall, plus CPU per recall:
    ``cpu_p50`` of this process, ``cpu_mean`` of the daemon), ``session_open_s``,
    ``daemon_ready_s`` (spawn to advertised endpoint), ``cli_single_s``,
    ``cli_batch_ms_per_query``, ``daemon_peak_rss_mb`` (VmHWM), and the one-minute load
    average before and after, without which a figure from a shared machine means little.
    """
    results: dict[str, Any] = {}
    for n in sizes:
        results[str(n)] = run_size(n, queries, keep=keep, reuse=reuse)
        print(f"latency bench, {n} memories: {json.dumps(results[str(n)])}", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--keep", type=Path, default=None, help="Build the folders under KEEP/<size>; keep them."
    )
    parser.add_argument(
        "--reuse", action="store_true", help="Measure folders already built under KEEP again."
    )
    args = parser.parse_args(argv)
    result = run(args.sizes, args.queries, keep=args.keep, reuse=args.reuse)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
