"""`engram-md remember "TEXT"`: a statement the person wants kept is stored through the
pipeline (journaled, redacted, deduplicated) as theirs, now — even when no signal pattern
would have picked it out of a conversation."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from engram_md.app import open_engine
from engram_md.core.config import Config
from engram_md.ingest.remember import remember
from engram_md.text.signals import SignalScanner

from .conftest import Cli, HashEmbedder

# No signal pattern fires on it: a conversation would keep it only as an episode, if at all.
PLAIN = "The spare house key hangs on the hook behind the garage door."


def test_a_statement_without_a_signal_is_kept_and_recalled(cli: Cli, cfg: Config) -> None:
    assert SignalScanner(cfg.signals).scan(PLAIN).level.name in ("NONE", "LOW")
    result = cli("remember", PLAIN)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"remembered: facts/" in result.stdout
    facts = cli.fact_files()
    assert len(facts) == 1
    ((rel, data),) = facts.items()
    text = data.decode()
    assert "source: manual" in text and "confidenceTier: explicit" in text
    assert PLAIN in text
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert rel.startswith(f"facts/{today}/")  # said now
    said = "\n".join(p.read_text() for p in (cli.memory / "said").rglob("*.md"))
    assert PLAIN in said  # the person's own words, as for any turn
    recalled = cli("recall", "--json", "where is the spare key?")
    contents = [m["content"] for m in json.loads(recalled.stdout)["memories"]]
    assert any("garage door" in c for c in contents)


def test_stdin_secrets_redacted_and_a_repeat_confirms(cli: Cli) -> None:
    secret = "My staging API key is sk-proj-a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ0123456789ab"
    first = cli("remember", "-", input=secret.encode())
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    for root in (cli.memory, cli.state):
        for path in root.rglob("*"):
            if path.is_file():
                assert b"a1B2c3D4e5F6g7H8" not in path.read_bytes(), path
    assert any(b"[REDACTED:" in data for data in cli.fact_files().values())
    before = cli.fact_files()
    assert cli("remember", PLAIN).returncode == 0
    again = cli("remember", PLAIN)  # later, the same words: confirmed, no second file
    assert again.returncode == 0
    assert b"already remembered" in again.stdout
    assert len(cli.fact_files()) == len(before) + 1


def test_remember_is_a_function_over_an_opened_pipeline(cfg: Config) -> None:
    engine = open_engine(cfg, embedder=HashEmbedder())
    try:
        at = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
        done = remember(engine.pipeline, "I keep my passport in the desk drawer.", at=at,
                        speaker="Dana")  # fmt: skip
        same = remember(engine.pipeline, "I keep my passport in the desk drawer.", at=at,
                        speaker="Dana")  # fmt: skip
    finally:
        engine.close()
    assert done.received and len(done.written) == 1
    assert done.written[0].startswith("facts/2026-05-04/")
    assert not same.received and same.written == ()  # the same turn again: nothing
    text = (cfg.layout.memory_dir / done.written[0]).read_text()
    assert "Dana keeps Dana's passport in the desk drawer." in text
    assert "created: 2026-05-04T10:30:00Z" in text


def test_empty_text_is_refused(cli: Cli) -> None:
    result = cli("remember", "   ")
    assert result.returncode == 2
    assert b"nothing to remember" in result.stderr
