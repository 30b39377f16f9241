"""End to end, offline: the sample transcripts piped into `engram-md run`."""

from __future__ import annotations

import re

import frontmatter
import pytest

from engram_md.store.factfile import parse_fact

from .conftest import JSON_SAMPLES, SAMPLES, Cli, sample


def _facts(cli: Cli) -> list[frontmatter.Post]:
    return [frontmatter.loads(data.decode()) for data in cli.fact_files().values()]


def _by_category(posts: list[frontmatter.Post]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for post in posts:
        found.setdefault(str(post["category"]), []).append(post.content)
    return found


def _everything(cli: Cli) -> str:
    text = []
    for root in (cli.memory, cli.state):
        for path in root.rglob("*"):
            if path.is_file() and path.suffix in (".md", ".jsonl", ".json", ".txt"):
                text.append(path.read_text(errors="replace"))
    return "\n".join(text)


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_yields_the_listed_facts(cli: Cli, name: str) -> None:
    result = cli("run", input=sample(name).read_bytes())
    assert result.returncode == 0, result.stderr.decode()
    posts = _facts(cli)
    cats = _by_category(posts)
    joined = "\n".join(p.content for p in posts)

    # Dana works at Acme Robotics as backend lead.
    assert re.search(r"Dana .*Acme Robotics.*backend lead", joined)
    # The team decided to move telemetry from MySQL to PostgreSQL 16.
    assert any("MySQL" in c and "PostgreSQL 16" in c for c in cats["decision"])
    # Always use uv instead of pip.
    assert any("uv instead of pip" in c and "Dana" in c for c in cats["preference"])
    # The team is 6 people (a correction).
    assert any("6 people" in c for c in cats["correction"])
    # Dana will send the migration plan to Priya by Friday (a commitment).
    assert any("Priya" in c and "Friday" in c and "Dana will" in c for c in cats["commitment"])
    # The staging deploy failed because the disk was full (an episode).
    deploy = [p for p in posts if "staging deploy failed" in p.content]
    assert len(deploy) == 1 and deploy[0]["memoryKind"] == "episode"
    if name != "plain.txt":  # plain text carries no timestamps to resolve "yesterday" against
        assert "2026-03-01" in deploy[0].content
        assert any("2026-03-06" in c for c in cats["commitment"])

    # Nothing from the assistant, the tool result, or thinking blocks.
    everything = _everything(cli)
    assert "hunter2" not in everything
    assert "ignore previous instructions" not in everything.lower()
    assert "private reasoning" not in everything
    assert "checklist" not in joined.lower()
    for post in posts:
        assert post["sourceTurnIds"], post.content
        assert post["session"]


@pytest.mark.parametrize("name", SAMPLES)
def test_piping_again_writes_nothing_new(cli: Cli, name: str) -> None:
    data = sample(name).read_bytes()
    assert cli("run", input=data).returncode == 0
    first = cli.fact_files()
    assert first
    again = cli("run", input=data)
    assert again.returncode == 0, again.stderr.decode()
    assert cli.fact_files() == first  # same names, same bytes


def test_the_three_json_formats_give_the_same_fact_files(make_cli) -> None:  # type: ignore[no-untyped-def]
    statements = []
    for name in JSON_SAMPLES:
        cli = make_cli(name.split(".")[0])
        assert cli("run", input=sample(name).read_bytes()).returncode == 0
        statements.append(
            {
                rel: parse_fact(data.decode()).content  # the statement, not its links
                for rel, data in cli.fact_files().items()
            }
        )
    assert statements[0] and statements[0] == statements[1] == statements[2]


def test_ingest_matches_run(make_cli) -> None:  # type: ignore[no-untyped-def]
    path = sample("generic.jsonl")
    piped = make_cli("piped")
    assert piped("run", input=path.read_bytes()).returncode == 0
    ingested = make_cli("ingested")
    result = ingested("ingest", str(path))
    assert result.returncode == 0, result.stderr.decode()
    assert ingested.fact_files() == piped.fact_files()


def test_status_reports_counts(cli: Cli) -> None:
    assert cli("run", input=sample("generic.jsonl").read_bytes()).returncode == 0
    result = cli("status", "--json")
    assert result.returncode == 0, result.stderr.decode()
    import json

    report = json.loads(result.stdout)
    assert report["total"] == len(cli.fact_files())
    assert report["byCategory"]["decision"]["active"] >= 1
    assert report["bufferDepth"] == 0
    assert report["lastExtraction"]["extractor"] == "offline"
