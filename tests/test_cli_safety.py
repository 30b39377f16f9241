"""The command is safe for the people who use it, on a real folder under git: a forget never
surprises, an OS error is one line that names the folder and loses nothing, a mistyped
folder is said so and never created, and a checkout that only changes mtimes is no problem.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram_md.cli import app

from .conftest import Cli, clean_env, sample

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dana",
    "GIT_AUTHOR_EMAIL": "dana@example.com",
    "GIT_COMMITTER_NAME": "Dana",
    "GIT_COMMITTER_EMAIL": "dana@example.com",
}


def changed_facts(cli: Cli) -> list[str]:
    """``git status`` of the fact files (a forget also rewrites or removes their boxes)."""
    return sorted(git(cli.root, "status", "--porcelain", "--", "memory/facts").splitlines())


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, check=True, env=clean_env(**GIT_ENV)
    )
    return done.stdout.decode()


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (git's own files left out), by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def fact_id(cli: Cli, rel: str) -> str:
    for line in (cli.memory / rel).read_text().splitlines():
        if line.startswith("id: "):
            return line.removeprefix("id: ").strip()
    raise AssertionError(rel)


def rel_holding(cli: Cli, words: str) -> str:
    """The fact file (relative to the memory folder) whose statement holds ``words``."""
    [rel] = [rel for rel, data in cli.fact_files().items() if words.encode() in data]
    return rel


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample conversation ingested offline with the real model, once for the module."""
    root = tmp_path_factory.mktemp("ingested")
    done = Cli(root)("ingest", str(sample("generic.jsonl")))
    assert done.returncode == 0, done.stderr.decode()
    return root


def copy_of(ingested: Path, root: Path) -> Cli:
    shutil.copytree(ingested, root, dirs_exist_ok=True)
    return Cli(root)


@pytest.fixture
def repo(ingested: Path, tmp_path: Path) -> Cli:
    """A copy of the ingested folder in a git repository (state/ ignored), all committed."""
    cli = copy_of(ingested, tmp_path / "notes")
    (cli.root / ".gitignore").write_text("state/\n")
    git(cli.root, "init", "-q")
    git(cli.root, "add", "-A")
    git(cli.root, "commit", "-q", "-m", "memories")
    return cli


# ---------------------------------------------------------------- forget


def test_forget_with_an_unrelated_query_deletes_nothing(repo: Cli) -> None:
    before = repo.fact_files()
    for flags in ((), ("--yes",), ("--all-matches",)):
        done = repo("forget", "Kubernetes ingress certificate", *flags)
        assert done.returncode == 1, flags
        said = done.stderr.decode()
        assert "no memory matches 'Kubernetes ingress certificate'" in said, said
        assert "nothing forgotten" in said and "Traceback" not in said
    assert repo.fact_files() == before
    assert git(repo.root, "status", "--porcelain") == ""
    assert not (repo.state / "forgotten.jsonl").exists()


def test_a_related_query_lists_its_match_with_its_score(repo: Cli) -> None:
    rel = rel_holding(repo, "uv instead of pip")
    wanted = fact_id(repo, rel)
    done = repo("forget", "uv instead of pip", "--all-matches", "--json")
    assert done.returncode == 0, done.stderr.decode()
    [first, _content] = done.stderr.decode().splitlines()  # --json: the listing on stderr
    assert first.startswith(f"1. {wanted}  (preference, score 0.") and first.endswith(rel)
    assert changed_facts(repo) == [f" D memory/{rel}"]


def test_forget_by_file_name_and_by_path_as_git_prints_it(repo: Cli) -> None:
    by_name = rel_holding(repo, "uv instead of pip")
    by_path = rel_holding(repo, "Acme Robotics")
    stem = Path(by_name).stem
    name_id = fact_id(repo, by_name)

    done = repo("forget", stem)
    assert done.returncode == 0, done.stderr.decode()
    assert f"forgot {name_id} ({by_name})" in done.stdout.decode()
    # git prints paths relative to the repository root, which is the working folder here.
    shown = f"memory/{by_path}"
    assert shown in git(repo.root, "ls-files")
    done = repo("forget", shown)
    assert done.returncode == 0, done.stderr.decode()

    assert changed_facts(repo) == sorted([f" D memory/{by_name}", f" D memory/{by_path}"])
    stones = (repo.state / "forgotten.jsonl").read_text()
    assert by_name in stones and by_path in stones

    # Named again, a forgotten memory is found by its tombstone: nothing is left to do.
    again = repo("forget", stem)
    assert again.returncode == 0 and "nothing left to remove" in again.stdout.decode()
    # A name that looks like a file but names none is never taken for a query.
    typo = stem[:-8] + "00000000"
    missing = repo("forget", typo)
    assert missing.returncode == 1, missing.stdout.decode()
    assert f"no memory named '{typo}'" in missing.stderr.decode()
    assert len(repo.fact_files()) == 4


def test_a_query_asks_for_each_memory(repo: Cli) -> None:
    """In a terminal, each match is its own question: no to the first, yes to the second
    forgets the second only."""
    before = {fact_id(repo, rel): rel for rel in repo.fact_files()}
    main, terminal = pty.openpty()
    try:
        os.write(main, b"n\ny\n")
        done = subprocess.run(
            repo.argv("forget", "Dana's team", "--limit", "2"),
            stdin=terminal,
            capture_output=True,
            env=clean_env(),
            cwd=repo.root,
            timeout=180,
        )
    finally:
        os.close(terminal)
        os.close(main)
    assert done.returncode == 0, done.stderr.decode()
    listing = done.stdout.decode().splitlines()
    assert listing[0].startswith("1. ") and listing[2].startswith("2. ")
    first, second = listing[0].split()[1], listing[2].split()[1]
    asked = done.stderr.decode()
    assert f"Forget 1. {first}?" in asked and f"Forget 2. {second}?" in asked
    assert f"forgot {second}" in done.stdout.decode()
    assert changed_facts(repo) == [f" D memory/{before[second]}"]
    assert (repo.memory / before[first]).exists()


# ---------------------------------------------------------------- a missing folder

READERS = [
    ("recall", "uv"),
    ("explain", "uv"),
    ("status",),
    ("doctor",),
    ("history", "preference-090200-768925a5"),
    ("traces",),
    ("forget", "uv instead of pip"),
]


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_a_missing_memory_folder_is_said_and_never_created(
    command: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for env in ({}, {"ENGRAM_MEMORY_DIR": str(tmp_path / "memroy")}):
        done = CliRunner().invoke(app, list(command), env=env)
        assert done.exit_code == 1, done.output
        where = tmp_path / ("memroy" if env else "memory")
        assert f"no memory folder at {where}" in done.output
        assert "--memory-dir" in done.output
    assert list(tmp_path.iterdir()) == []  # neither ./memory nor ./state


# ---------------------------------------------------------------- doctor


def test_doctor_is_clean_after_a_touch_and_a_checkout(repo: Cli) -> None:
    runner = CliRunner()
    args = ["--memory-dir", str(repo.memory), "--state-dir", str(repo.state)]
    rels = list(repo.fact_files())
    for path in repo.memory.rglob("*.md"):
        os.utime(path, ns=(1, 1))  # touch: every mtime changes, no content
    restored = repo.memory / rels[0]
    restored.unlink()
    git(repo.root, "checkout", "--", f"memory/{rels[0]}")  # a checkout writes the file anew
    assert restored.exists() and git(repo.root, "status", "--porcelain") == ""

    done = runner.invoke(app, [*args, "doctor"])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip().endswith("all good")


# ---------------------------------------------------------------- a read-only folder


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of our own (root only; skipped where mounting is not permitted)."""
    point = tmp_path / "mnt"
    point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(point)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], capture_output=True)


def remount(point: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(point)], check=True)


WRITERS = [
    ("ingest", "{plain}"),
    ("run",),
    ("consolidate", "--full"),
    ("forget", "{id}"),
    ("forget", "uv instead of pip", "--all-matches"),
    ("doctor", "--repair"),
]


def one_line(done: subprocess.CompletedProcess[bytes], folder: Path) -> str:
    said = done.stderr.decode()
    assert done.returncode == 5, said
    assert len(said.strip().splitlines()) == 1, said
    assert "Traceback" not in said and str(folder) in said and "read-only" in said, said
    return said


def test_a_read_only_folder_gives_one_line_and_loses_nothing(ingested: Path, mounted: Path) -> None:
    cli = copy_of(ingested, mounted)
    target = rel_holding(cli, "uv instead of pip")
    before = files(mounted)
    remount(mounted, "ro")
    turn = b'{"role": "user", "content": "I prefer green tea.", "id": "x1", "session": "s9"}\n'
    for command in WRITERS:
        args = [a.format(plain=sample("plain.txt"), id=fact_id(cli, target)) for a in command]
        one_line(cli(*args, input=turn if args[0] == "run" else None), cli.memory)
    assert files(mounted) == before

    # Reading still works, and nothing was lost: writable again, the same folder takes input.
    recalled = cli("recall", "uv instead of pip", "--no-daemon")
    assert recalled.returncode == 0 and b"uv instead of pip" in recalled.stdout
    remount(mounted, "rw")
    done = cli("run", input=turn)
    assert done.returncode == 0, done.stderr.decode()
    assert any(b"green tea" in data for data in cli.fact_files().values())


def test_a_forget_on_a_read_only_memory_folder_changes_no_state(
    ingested: Path, mounted: Path, tmp_path: Path
) -> None:
    """The memory folder read-only, the state writable: the forget is refused before its first
    change (no tombstone, no scrubbed state), and recall still has the memory."""
    cli = copy_of(ingested, mounted)
    state = tmp_path / "state"
    shutil.move(cli.state, state)
    args = ["--memory-dir", str(cli.memory), "--state-dir", str(state)]
    target = fact_id(cli, rel_holding(cli, "uv instead of pip"))
    remount(mounted, "ro")
    before = files(state)

    refused = subprocess.run(
        [sys.executable, "-m", "engram_md", *args, "forget", target],
        capture_output=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=180,
    )
    one_line(refused, cli.memory)
    assert files(state) == before
    recalled = subprocess.run(
        [sys.executable, "-m", "engram_md", *args, "recall", "uv instead of pip", "--json"],
        capture_output=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=180,
    )
    assert recalled.returncode == 0 and target.encode() in recalled.stdout
