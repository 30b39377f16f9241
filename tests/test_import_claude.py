"""`engram-md import claude`: a Claude.ai data export through the CLI, on export files written
in its shape (tests/data/exports/claude/): text, thinking, tool use and tool result blocks,
an attachment with extracted text, an edited message (branches by parent_message_uuid), an
older message with its text alone, users.json naming the account, and a conversation that
is not in the shape."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from engram_md.ingest.importers import ExportKind, Malformed, open_export, read_export

from .conftest import Cli

EXPORT = Path(__file__).parent / "data" / "exports" / "claude"
# Words no person said: an attachment's text, reasoning, tool calls and results, and the
# branch an edit abandoned.
NEVER_SAID = (
    "ATTACHSECRET",
    "durian",
    "Oslo",
    "THINKSECRET",
    "TOOLQUERY",
    "TOOLRESULT",
    "hate oat milk",
    "Globex",
)


def _zip(tmp_path: Path) -> Path:
    archive = tmp_path / "data-2024-04-01.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("conversations.json", "users.json"):
            zipped.write(EXPORT / name, f"data-2024-04-01/{name}")
    return archive


def _import(cli: Cli, path: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return cli("import", "claude", str(path), *extra)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_text_blocks_become_memories_named_for_the_account(cli: Cli, tmp_path: Path) -> None:
    result = _import(cli, _zip(tmp_path))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    stderr = result.stderr.decode()
    assert "skipped conversation claude-conv-broken: no chat_messages list" in stderr
    assert "1 attachments" in stderr and "1 reasoning" in stderr and "2 tool calls" in stderr
    facts = "\n".join(data.decode() for data in cli.fact_files().values())
    assert "Dana Whitlock prefers oat milk" in facts
    assert "Initech" in facts and "DuckDB" in facts  # DuckDB: an older message's text alone
    everything = "\n".join(p.read_text() for p in cli.memory.rglob("*.md"))
    for word in NEVER_SAID:
        assert word not in everything, word
    for path in cli.state.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(word.encode() in data for word in NEVER_SAID), path
    said = "\n".join(p.read_text() for p in (cli.memory / "said").rglob("*.md"))
    assert "· Dana Whitlock · `m1` — I prefer oat milk" in said


def test_memories_are_dated_by_the_export(cli: Cli) -> None:
    assert _import(cli, EXPORT / "conversations.json").returncode == 0
    days = {rel.split("/")[1] for rel in cli.fact_files()}
    assert days == {"2024-02-05", "2024-03-11"}
    initech = next(d.decode() for d in cli.fact_files().values() if b"Initech" in d)
    assert "created: 2024-03-11T12:01:00Z" in initech


def test_reimport_changes_no_file(cli: Cli, tmp_path: Path) -> None:
    assert _import(cli, EXPORT / "conversations.json").returncode == 0
    before = _tree(cli.memory)
    again = _import(cli, _zip(tmp_path))  # the same export, as the zip it came in
    assert again.returncode == 0
    assert "7 already imported; 0 memories written" in again.stderr.decode()
    assert _tree(cli.memory) == before


def test_without_users_json_the_speaker_is_named_as_in_any_transcript(
    cli: Cli, tmp_path: Path
) -> None:
    alone = tmp_path / "export"
    alone.mkdir()
    shutil.copy(EXPORT / "conversations.json", alone / "conversations.json")
    assert _import(cli, alone / "conversations.json").returncode == 0
    facts = "\n".join(d.decode() for d in cli.fact_files().values())
    assert "Dana Whitlock" not in facts and "oat milk" in facts


def test_dry_run_counts_and_writes_nothing(cli: Cli) -> None:
    result = _import(cli, EXPORT / "conversations.json", "--dry-run")
    assert result.returncode == 0
    assert "would import 2 conversations; 7 turns (4 by the person)" in result.stderr.decode()
    assert "2 on abandoned branches" in result.stderr.decode()
    assert not cli.memory.exists() and not cli.state.exists()


def test_the_reader_keeps_text_blocks_and_the_kept_branch() -> None:
    with open_export(EXPORT / "conversations.json") as source:
        milk, job, broken = read_export(ExportKind.CLAUDE, source)
    assert isinstance(broken, Malformed)
    assert not isinstance(milk, Malformed) and not isinstance(job, Malformed)
    assert [t.content for t in milk.turns][1] == "Noted: oat milk it is."
    assert {t.speaker for t in milk.turns if t.from_person} == {"Dana Whitlock"}
    assert [t.id for t in job.turns] == ["j3", "j4", "j5"]
    assert dict(milk.skipped) == {"attachment": 1, "file": 1, "thinking": 1, "tool": 2}


def test_recall_finds_an_imported_preference(cli: Cli) -> None:
    assert _import(cli, EXPORT / "conversations.json").returncode == 0
    result = cli("recall", "--json", "what milk does Dana take in coffee?")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    contents = [m["content"] for m in json.loads(result.stdout)["memories"]]
    assert any("oat milk" in c for c in contents)
    assert not any("durian" in c or "hate" in c for c in contents)
