"""`engram-md doctor --secrets`: secrets that reached the folder another way (here: ingested
with redaction turned off, as an older engram-md would have) are found in the folder, the
journal and the index, and ``--repair`` redacts them everywhere; a git commit of the folder
shows the change."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.core.models import Role, Turn
from engram_md.ingest.journal import Journal, compact_journal
from engram_md.ingest.sanitize import redact_secrets
from engram_md.store import read_cache

from .conftest import Cli
from .data.secrets import corpus

# One case of every kind of the corpus: provider tokens, keys known by their words,
# passwords, private keys, card numbers, national ids.
CASES = list({c.kind: c for c in corpus.secrets("tune")}.values())
_TERM = re.compile(r"[A-Za-z0-9]{12,}")


def _fragments(case: corpus.Secret) -> list[str]:
    # A short PIN turns up by chance in megabytes of vectors; the redaction tests cover it.
    return [
        f
        for value in case.values
        for f in corpus.fragments(value)
        if not (f.isdigit() and len(f) < 8)
    ]


def _stored(cli: Cli) -> tuple[str, str]:
    files = [
        p
        for root in (cli.memory, cli.state)
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    ]
    text = b"\n".join(p.read_bytes() for p in files).decode("utf-8", "replace")
    return text, text.casefold()


def _leaked(cli: Cli) -> list[str]:
    text, folded = _stored(cli)
    return [
        c.kind
        for c in CASES
        for f in _fragments(c)
        if f in text or any(t.casefold() in folded for t in _TERM.findall(f))
    ]


def _git(memory: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(memory), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def leaky_source(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """A folder written without redaction, committed to git, with a secret typed by hand
    into IDENTITY.md. Built once: each test works on a copy (:func:`leaky`)."""
    cli = Cli(tmp_path_factory.mktemp("leaky"))
    off = cli.root / "off.yaml"
    off.write_text("sanitize:\n  redact_secrets: false\n", encoding="utf-8")
    rows = [
        {"role": "user", "content": f"Remember for the deploy: {c.text}", "session": "leak",
         "timestamp": f"2026-03-02T{9 + i // 60:02d}:{i % 60:02d}:00Z", "id": f"t{i}"}
        for i, c in enumerate(CASES)
    ]  # fmt: skip
    transcript = cli.root / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = cli("--config", str(off), "ingest", str(transcript))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    transcript.unlink()
    (cli.memory / "IDENTITY.md").write_text(
        f"# Who I am\n\nI deploy with {CASES[0].text}\n", encoding="utf-8"
    )
    _git(cli.memory, "init", "-q")
    _git(cli.memory, "add", "-A")
    _git(cli.memory, "commit", "-qm", "before")
    assert _leaked(cli), "nothing leaked: the test would prove nothing"
    return cli


@pytest.fixture
def leaky(cli: Cli, leaky_source: Cli) -> Cli:
    for name in ("memory", "state"):
        shutil.copytree(leaky_source.root / name, cli.root / name, symlinks=True)
    return cli


def test_doctor_finds_secrets_without_printing_them(leaky: Cli) -> None:
    result = leaky("doctor", "--secrets")
    out = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 1, out
    places = {line.split()[1] for line in out.splitlines() if line.startswith("secret ")}
    assert {"memory", "state", "index"} <= places, out
    assert "IDENTITY.md" in out and "buffer-journal.jsonl" in out
    assert not [f for c in CASES for f in _fragments(c) if f in out]
    report = json.loads(leaky("doctor", "--secrets", "--json").stdout)
    assert report["ok"] is False
    kinds = {k for leak in report["found"] for k in leak["kinds"]}
    assert {"password", "private_key", "card_number", "national_id", "npm_token"} <= kinds


def test_repair_redacts_everywhere_and_git_shows_it(leaky: Cli) -> None:
    # What consolidation last read names entities and tags: the repair deletes it.
    cache = leaky.root / "state" / read_cache.FILE_NAME
    cache.write_text('{"format": 1, "files": {}}', encoding="utf-8")
    result = leaky("doctor", "--secrets", "--repair")
    out = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 0, out + result.stderr.decode()[-2000:]
    assert "no secrets found" in out and "redacted " in out
    assert _leaked(leaky) == [] and not cache.exists()
    # The folder's history shows what changed, and what it became.
    changed = _git(leaky.memory, "status", "--porcelain").splitlines()
    assert any("facts/" in line for line in changed) and any(
        "IDENTITY.md" in line for line in changed
    )
    diff = _git(leaky.memory, "diff")
    assert "+" in diff and "[REDACTED:" in diff
    # Everything else still agrees, and a second look finds nothing.
    doctor = leaky("doctor")
    assert doctor.returncode == 0, doctor.stdout.decode()[-2000:]
    assert leaky("doctor", "--secrets").returncode == 0
    recall = leaky("recall", "--json", "deploy")
    assert recall.returncode == 0 and json.loads(recall.stdout)["memories"]


def test_personal_data_is_left_when_the_policy_keeps_it(leaky: Cli) -> None:
    keep = leaky.root / "keep.yaml"
    keep.write_text("sanitize:\n  redact_personal_data: false\n", encoding="utf-8")
    report = json.loads(leaky("--config", str(keep), "doctor", "--secrets", "--json").stdout)
    kinds = {k for leak in report["found"] for k in leak["kinds"]}
    assert kinds and not kinds & {"card_number", "national_id", "iban"}


def test_the_journal_keeps_its_pending_turns_redacted(tmp_path: Path) -> None:
    """A turn journaled by an older sanitizer and never extracted: compaction with a scrub
    redacts its text and keeps its key, so it is still extracted once, and only once."""
    path = tmp_path / "journal.jsonl"
    case = next(c for c in CASES if c.kind == "npm")
    turn = Turn(
        id="t1",
        session="s",
        role=Role.USER,
        content=case.text,
        timestamp=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
    )
    journal = Journal(path)
    journal.open()
    journal.append(turn)
    journal.close()
    compact_journal(path, scrub=lambda text: redact_secrets(text)[0])
    assert case.values[0] not in path.read_text(encoding="utf-8")
    again = Journal(path)
    (pending,) = again.open()
    assert pending.content == redact_secrets(case.text)[0]
    assert again.seen(turn) and not again.append(turn)  # the same input is still known
    again.close()
