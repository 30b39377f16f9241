"""Acceptance: a memory folder under git stays quiet. Recall never changes a file under
``memory/``, and consolidation changes one only when its meaning changes; recall counts and
lifecycle scores live in ``state/access.jsonl``. A folder an older version wrote (counters in
every fact's frontmatter) is relieved of them in one run, crash-safe, and then stays quiet.

Through the real CLI, offline, on a real git repository.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from engram_md.core.paths import MemoryLayout
from engram_md.store.access import AccessLog

from .conftest import Cli, clean_env, git
from .consolidate_folder import FILLERS, NOW, make_fact, write

TRANSCRIPT = [
    ("Hi, I'm Dana. I work at Acme Robotics as a backend engineer.", "09:00:00"),
    ("I prefer uv over pip for installing Python packages. Always use uv with me.", "09:01:00"),
    ("We decided to deploy the billing service on Fridays only.", "09:02:00"),
    ("My sister Priya lives in Berlin and she loves green tea.", "09:03:00"),
    ("Yesterday I went hiking in the Alps with Priya, it was amazing.", "09:04:00"),
    ("I always want tests written with pytest, never unittest.", "09:05:00"),
]
QUERIES = ("Dana", "What does Priya drink?", "How should Python packages be installed?")
COUNTERS = ("accessCount", "firstEpoch", "lifecycleState", "heatScore", "decayScore", "tier")


def commit(memory: Path, message: str) -> None:
    git(memory, "add", "-A")
    git(memory, "commit", "-q", "--allow-empty", "-m", message)


def run(
    cli: Cli, day: str, *args: str, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    done = cli(*args, input=input, env=clean_env(ENGRAM_NOW=f"{day}T12:00:00Z"))
    assert done.returncode == 0, done.stderr.decode()
    return done


def recall_then_consolidate(cli: Cli, day: str, *, all_answered: bool = True) -> None:
    asked = "".join(f"{q}\n" for q in QUERIES).encode()
    answers = run(cli, day, "recall", "-", "--json", input=asked).stdout.splitlines()
    assert len(answers) == len(QUERIES)
    answered = [bool(json.loads(answer)["memories"]) for answer in answers]
    assert all(answered) if all_answered else any(answered)
    run(cli, day, "consolidate")


def frontmatter(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("---\n")[1]


def test_recall_and_consolidate_leave_a_git_folder_quiet(cli: Cli) -> None:
    transcript = cli.root / "t.jsonl"
    transcript.write_text(
        "".join(
            json.dumps({"role": "user", "content": text, "timestamp": f"2026-03-02T{at}Z"}) + "\n"
            for text, at in TRANSCRIPT
        )
    )
    run(cli, "2026-03-02", "ingest", str(transcript))
    git(cli.memory, "init", "-q")
    commit(cli.memory, "ingested")
    facts = sorted((cli.memory / "facts").rglob("*.md"))
    assert len(facts) >= 5

    recall_then_consolidate(cli, "2026-03-03")
    # The first run adds or completes the pages it derives (profile.md; the entity pages
    # ingest began); no fact changes.
    status = git(cli.memory, "status", "--porcelain").splitlines()
    derived = ("entities/", "profile.md", "IDENTITY.md")
    assert status and all(line[3:].startswith(derived) for line in status), status
    commit(cli.memory, "first consolidation")

    for day in ("2026-03-04", "2026-04-20"):
        recall_then_consolidate(cli, day)
        assert git(cli.memory, "status", "--porcelain") == "", day

    # The recalls were counted and the facts rated, in state/.
    usage = AccessLog(MemoryLayout(cli.memory, cli.state).access_path).read()
    assert len(usage.standings) == len(facts)
    assert sum(usage.accesses(i) for i in usage.standings) >= 3 * len(QUERIES)
    assert all(s.first_epoch == 1 and s.lifecycle is not None for s in usage.standings.values())
    _no_counters_left(cli)


def _older_folder(cli: Cli) -> dict[str, int]:
    """Fact files as an older version left them: counters in every frontmatter. Returns the
    recall count each one carries."""
    layout = MemoryLayout(cli.memory, cli.state)
    counts: dict[str, int] = {}
    for n, text in enumerate(FILLERS[:6]):
        fact = make_fact(text, created=NOW - timedelta(days=n + 1), entities=("org-acme",))
        path = write(layout, fact)
        counts[fact.id] = n + 2
        older = path.read_text(encoding="utf-8").replace(
            "status: active\n", "status: active\nlifecycleState: validated\n"
        )
        head, body = older.split("\n---\n", 1)
        head += f"\naccessCount: {n + 2}\nheatScore: 0.6\ndecayScore: 0.1\ntier: hot\nfirstEpoch: 1"
        path.write_text(f"{head}\n---\n{body}", encoding="utf-8")
    git(cli.memory, "init", "-q")
    commit(cli.memory, "written by an older version")
    return counts


def _counts(cli: Cli) -> dict[str, int]:
    usage = AccessLog(MemoryLayout(cli.memory, cli.state).access_path).read()
    return {i: usage.accesses(i) for i in usage.standings}


def _no_counters_left(cli: Cli) -> None:
    for path in (cli.memory / "facts").rglob("*.md"):
        assert not any(f"\n{key}:" in "\n" + frontmatter(path) for key in COUNTERS), path


def test_an_older_folder_migrates_in_one_run_then_stays_quiet(cli: Cli) -> None:
    counts = _older_folder(cli)
    day = f"{NOW:%Y-%m-%d}"
    done = run(cli, day, "consolidate", "--json")
    payload = json.loads(done.stdout)
    assert any("older version" in note for note in payload["summary"]["notes"])
    assert "older version" in Path(payload["report"]).read_text(encoding="utf-8")
    migrated = [c for c in payload["changes"] if c["action"] == "migrate"]
    assert len(migrated) == len(counts)
    # One commit-sized change: every fact file loses exactly its counter lines and, being
    # written anyway, gains the links footer it lacked (docs/FORMAT.md); nothing else.
    diff = git(cli.memory, "diff", "--unified=0", "--", "facts")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    removed = [line for line in changed if line.startswith("-")]
    added = [line for line in changed if line.startswith("+")]
    assert len(removed) == len(counts) * len(COUNTERS)
    assert all(line[1:].split(":")[0] in COUNTERS for line in removed)
    footer = ("+", "+<!-- engram-md:links -->")
    assert all(line in footer or line.startswith("+[") for line in added), added
    _no_counters_left(cli)
    assert _counts(cli) == counts  # moved to state/, not lost
    commit(cli.memory, "counters moved to state/")

    # (The older folder holds none of the sample's memories: only some questions are about it.)
    recall_then_consolidate(cli, day, all_answered=False)
    assert git(cli.memory, "status", "--porcelain") == ""
    recall_then_consolidate(cli, day, all_answered=False)
    assert git(cli.memory, "status", "--porcelain") == ""
    grown = _counts(cli)
    assert sum(grown.values()) > sum(counts.values())  # recalls are still counted
    assert all(grown[i] >= n for i, n in counts.items())


def test_a_migration_killed_half_way_is_finished_without_counting_twice(cli: Cli) -> None:
    counts = _older_folder(cli)
    before = {p: p.read_bytes() for p in (cli.memory / "facts").rglob("*.md")}
    env = clean_env(ENGRAM_NOW=f"{NOW:%Y-%m-%d}T12:00:00Z", ENGRAM_CONSOLIDATE_PAUSE="1:120")
    proc = cli.popen("consolidate", env=env)
    deadline = time.monotonic() + 120
    while all(p.exists() and p.read_bytes() == data for p, data in before.items()):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the run never wrote a fact file"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    left = [p for p, data in before.items() if p.read_bytes() == data]
    assert left, "the run finished before it was killed"
    assert _counts(cli) == counts  # state/ first: the counts are safe before any file changes

    run(cli, f"{NOW:%Y-%m-%d}", "consolidate")
    _no_counters_left(cli)
    assert _counts(cli) == counts  # taken in twice, counted once
