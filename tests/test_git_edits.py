"""The folder as people use it, with the daemon running: an editor's save, a `git revert` and
a `git checkout` of the memory folder each reach the next recall through the daemon."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Cli, following_daemon, git, sample

QUERY = "which package manager should Dana use?"


@pytest.fixture
def daemon(cli: Cli, tmp_path: Path) -> Iterator[Cli]:
    """A filled folder under git (state/ ignored), and a daemon following it."""
    done = cli("run", input=sample("generic.jsonl").read_bytes())
    assert done.returncode == 0, done.stderr.decode()
    (cli.root / ".gitignore").write_text("state/\n")
    git(cli.root, "init", "-q")
    git(cli.root, "add", "-A")
    git(cli.root, "commit", "-q", "-m", "memories")
    with following_daemon(cli, tmp_path):
        yield cli


def _recalled(cli: Cli) -> list[str]:
    """The contents the daemon recalls for QUERY (--dry: no access is counted)."""
    done = cli("recall", QUERY, "--json", "--dry")
    assert done.returncode == 0, done.stderr.decode()
    assert b"in-process" not in done.stderr  # the daemon answered, not a fallback
    return [m["content"] for m in json.loads(done.stdout)["memories"]]


def _until(cli: Cli, wanted: str, gone: str) -> list[str]:
    """Recall until ``wanted`` is in a recalled memory and ``gone`` is in none (the daemon
    sees a change within its watcher's debounce), or fail with the last answer."""
    deadline = time.monotonic() + 30
    while True:
        found = _recalled(cli)
        if any(wanted in c for c in found) and not any(gone in c for c in found):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.5)


def test_an_editor_save_a_revert_and_a_checkout_reach_recall(daemon: Cli) -> None:
    cli = daemon
    name = next(n for n, data in cli.fact_files().items() if b"uv instead of pip" in data)
    path = cli.memory / name
    rel = str(path.relative_to(cli.root))
    _until(cli, "uv instead of pip", "poetry")

    # An editor's save: the new text written beside the file, then renamed over it.
    edited = path.read_text().replace("uv instead of pip", "poetry instead of pip")
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(edited)
    os.replace(temporary, path)
    _until(cli, "poetry instead of pip", "uv instead of pip")
    git(cli.root, "commit", "-q", "-am", "poetry")

    # git revert: the file goes back to what it said.
    git(cli.root, "revert", "--no-edit", "HEAD")
    _until(cli, "uv instead of pip", "poetry instead of pip")

    # git checkout of the edited version of that file.
    git(cli.root, "checkout", "HEAD~1", "--", rel)
    _until(cli, "poetry instead of pip", "uv instead of pip")
