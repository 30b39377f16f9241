"""`engram-md import chatgpt`: a ChatGPT data export through the CLI, on export files written
in its shape (tests/data/exports/chatgpt/): a mapping tree per conversation with an edited
message, a regenerated answer, hidden context, a tool call and its output, browsing, an
image beside text, and a conversation that is not in the shape at all."""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_md.ingest.importers import ExportKind, Malformed, exports, open_export, read_export

from .conftest import Cli, clean_env

EXPORT = Path(__file__).parent / "data" / "exports" / "chatgpt"
CONVERSATIONS = EXPORT / "conversations.json"
# Words that appear only where no person said them: abandoned branches, hidden context,
# tool calls, tool output, browsing.
NEVER_SAID = (
    "Berlin",
    "REGENSECRET",
    "PROFILESECRET",
    "pirate",
    "TOOLSECRET",
    "TOOLOUTPUT",
    "anchovies",
    "BROWSECALL",
    "BROWSESECRET",
)


def _memory_text(cli: Cli) -> str:
    return "\n".join(p.read_text() for p in sorted(cli.memory.rglob("*.md")))


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _import(
    cli: Cli, path: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return cli("import", "chatgpt", str(path), *extra, env=env)


def test_only_the_kept_branch_and_the_persons_text_become_memories(cli: Cli) -> None:
    result = _import(cli, CONVERSATIONS)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    stderr = result.stderr.decode()
    assert "skipped conversation conv-broken: no message tree" in stderr
    assert "imported 2 conversations" in stderr and "1 malformed" in stderr
    text = _memory_text(cli)
    assert "Lisbon" in text and "Kyoto" in text and "PostgreSQL 16" in text
    for word in NEVER_SAID:
        assert word not in text, word
    # Nothing of what was left out reaches state/ either (journal, index, caches).
    for path in cli.state.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(word.encode() in data for word in NEVER_SAID), path


def test_memories_are_dated_by_the_export_not_the_import(cli: Cli) -> None:
    assert _import(cli, CONVERSATIONS).returncode == 0
    facts = cli.fact_files()
    days = {rel.split("/")[1] for rel in facts}
    assert days == {"2023-04-10", "2023-06-01"}
    lisbon = next(data.decode() for data in facts.values() if b"Lisbon" in data)
    assert "created: 2023-04-10T09:01:30Z" in lisbon
    said = "\n".join(p.read_text() for p in sorted((cli.memory / "said").rglob("*.md")))
    assert "- 09:01:30 · Maya · `u2` — I live in Lisbon" in said


def test_reimport_and_a_newer_export_change_nothing_already_there(cli: Cli, tmp_path: Path) -> None:
    assert _import(cli, CONVERSATIONS).returncode == 0
    before = _tree(cli.memory)
    again = _import(cli, CONVERSATIONS)
    assert again.returncode == 0
    assert "10 already imported; 0 memories written" in again.stderr.decode()
    assert _tree(cli.memory) == before
    # The same export as the zip ChatGPT mails, grown by a later conversation.
    newer = json.loads(CONVERSATIONS.read_text()) + json.loads(
        (EXPORT / "later-conversation.json").read_text()
    )
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("conversations.json", json.dumps(newer))
        zipped.write(EXPORT / "user.json", "user.json")
    assert _import(cli, archive).returncode == 0
    after = _tree(cli.memory)
    # Every file but the folder-wide ones the new conversation adds to stays as it was.
    kept = {rel for rel in before if rel.startswith(("facts/", "said/", "boxes/"))}
    assert {rel: after[rel] for rel in kept} == {rel: before[rel] for rel in kept}
    assert any(
        b"cello" in data for rel, data in after.items() if rel.startswith("facts/2023-10-02")
    )


def test_an_interrupted_import_is_finished_by_running_it_again(
    make_cli: Callable[[str], Cli],
) -> None:
    whole = make_cli("whole")
    assert _import(whole, CONVERSATIONS).returncode == 0
    cut = make_cli("cut")
    # Killed (SIGKILL, no cleanup) as it starts its second conversation.
    killed = _import(cut, CONVERSATIONS, env=clean_env(ENGRAM_CRASH_AT="import.conversation:2"))
    assert killed.returncode != 0
    assert len(cut.fact_files()) < len(whole.fact_files())
    resumed = _import(cut, CONVERSATIONS)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert "already imported" in resumed.stderr.decode()
    assert cut.fact_files() == whole.fact_files()
    assert _tree(cut.memory / "said") == _tree(whole.memory / "said")


def test_dry_run_counts_and_writes_nothing(cli: Cli) -> None:
    result = _import(cli, CONVERSATIONS, "--dry-run")
    assert result.returncode == 0
    line = result.stderr.decode()
    assert "would import 2 conversations; 10 turns (5 by the person)" in line
    assert "3 on abandoned branches" in line and "1 hidden" in line and "1 images" in line
    assert "4 tool calls and output" in line
    assert not cli.memory.exists() and not cli.state.exists()


def test_imported_memories_are_recalled(cli: Cli) -> None:
    assert _import(cli, CONVERSATIONS).returncode == 0
    result = cli("recall", "--json", "where does Maya live?")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    contents = [m["content"] for m in json.loads(result.stdout)["memories"]]
    assert any("Lisbon" in c for c in contents)
    assert not any("Berlin" in c for c in contents)


def test_the_reader_keeps_the_branch_and_counts_what_it_leaves_out() -> None:
    with open_export(CONVERSATIONS) as source:
        items = list(read_export(ExportKind.CHATGPT, source))
    cats, billing, broken = items
    assert isinstance(broken, Malformed) and broken.id == "conv-broken"
    assert not isinstance(cats, Malformed) and not isinstance(billing, Malformed)
    assert [t.id for t in cats.turns] == ["u1", "a1", "u2", "a2", "a3", "u3", "a4"]
    assert cats.turns[5].content.startswith("This photo is from my trip to Kyoto")
    assert dict(cats.skipped) == {
        "other_branch": 3,
        "system": 1,
        "hidden": 1,
        "tool": 2,
        "image": 1,
    }
    assert [t.id for t in billing.turns] == ["b1", "b4", "b5"]
    assert all(t.session == "chatgpt-conv-billing" for t in billing.turns)


@pytest.mark.parametrize(
    "text",
    ['{"not": "a list"}', "[", '[{"id": "x", "mapping": {}}, 5', '[{"id": "x"} {"id": "y"}]'],
)
def test_an_export_that_is_not_an_array_of_conversations_is_one_line(
    cli: Cli, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(text)
    result = _import(cli, path)
    assert result.returncode == 2
    assert result.stderr.decode().startswith("engram-md: ")
    assert "Traceback" not in result.stderr.decode()


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_the_export_is_read_one_conversation_at_a_time_across_chunk_ends(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(exports, "CHUNK_BYTES", chunk)
    read: list[int] = []
    with open(CONVERSATIONS, "rb") as stream:
        values = list(exports.iter_array(stream, read.append))
    assert values == json.loads(CONVERSATIONS.read_text())
    assert sum(read) == CONVERSATIONS.stat().st_size
