"""Links an editor can follow: the footer of each fact file (box, entity pages), and every
relative link of a folder made through the real commands resolving to a file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

import pytest

from engram_md.core.models import Fact
from engram_md.store.factfile import parse_fact, read_fact, render_fact, write_fact
from engram_md.store.links import MARKER, render_links, strip_links
from engram_md.text.hashing import content_hash

from .conftest import REPO, SAMPLES, Cli, sample
from .test_lifecycle import make_fact

# A markdown link's target: ``[text](target)``, the text may hold escaped brackets.
_LINK = re.compile(r"\[(?:\\.|[^\]\\\n])*\]\(([^()\s]*)\)")


def _links(memory: Path) -> list[tuple[str, str]]:
    """(file relative to the folder, target) of every relative link in every markdown file."""
    found = []
    for path in sorted(memory.rglob("*.md")):
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            found.append((path.relative_to(memory).as_posix(), target))
    return found


def _broken(memory: Path) -> list[tuple[str, str]]:
    return [
        (rel, target)
        for rel, target in _links(memory)
        if not (memory / rel).parent.joinpath(unquote(target)).resolve().is_file()
    ]


@dataclass
class Made:
    cli: Cli
    broken_after_ingest: list[tuple[str, str]]
    links_after_ingest: int


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """The sample transcripts and the demo, ingested offline, then consolidated."""
    cli = Cli(tmp_path_factory.mktemp("links"))
    files = [sample(name) for name in SAMPLES] + [REPO / "examples" / "demo.jsonl"]
    ingested = cli("ingest", *map(str, files), timeout=600)
    assert ingested.returncode == 0, ingested.stderr.decode()[-3000:]
    broken, count = _broken(cli.memory), len(_links(cli.memory))
    consolidated = cli("consolidate", timeout=600)
    assert consolidated.returncode == 0, consolidated.stderr.decode()[-3000:]
    return Made(cli, broken, count)


def test_every_link_resolves_after_ingest(made: Made) -> None:
    assert made.links_after_ingest > 0
    assert made.broken_after_ingest == []


def test_every_link_resolves_after_consolidation(made: Made) -> None:
    memory = made.cli.memory
    links = _links(memory)
    kinds = {part for _, target in links for part in target.split("/")}
    # Fact files link to boxes and entity pages; boxes and pages link back to facts.
    assert {"entities", "boxes"} <= kinds
    assert any(rel.startswith("entities/") for rel, _ in links)
    assert _broken(memory) == []


def test_fact_files_link_their_box_and_each_entity(made: Made) -> None:
    memory = made.cli.memory
    facts = sorted((memory / "facts").rglob("*.md"))
    assert facts
    for path in facts:
        fact = read_fact(path)
        text = path.read_text(encoding="utf-8")
        assert MARKER not in fact.content and fact.content_hash == content_hash(fact.content)
        footer = text.split(MARKER, 1)[1]
        targets = _LINK.findall(footer)
        if fact.box_id is not None:
            assert any(t.endswith(f"/{fact.box_id}.md") for t in targets), path
        for entity in fact.entities:
            assert f"[{entity}](../../entities/" in footer, (path, entity)


# ---------------------------------------------------------------- the footer itself

T = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)


def _fact(
    content: str,
    *,
    entities: tuple[str, ...] = ("person-dana", "entity-miso"),
    box_id: str | None = "box-20260302-090005-1a2b3c4d",
) -> Fact:
    return make_fact(content, created=T, entities=entities, box_id=box_id)


def test_the_footer_links_relative_to_where_the_file_sits(tmp_path: Path) -> None:
    fact = _fact("Dana's cat is called Miso.")
    live = tmp_path / "memory" / "facts" / "2026-03-02" / "fact-090200-3f9c2a1b.md"
    archived = tmp_path / "memory" / "archive" / "facts" / "2026-03-02" / live.name
    assert render_links(fact, live) == (
        f"{MARKER}\n[box](../../boxes/2026-03-02/box-20260302-090005-1a2b3c4d.md)"
        " · [person-dana](../../entities/person-dana.md)"
        " · [entity-miso](../../entities/entity-miso.md)"
    )
    assert "(../../../entities/entity-miso.md)" in render_links(fact, archived)
    assert render_links(fact, tmp_path / "elsewhere.md") == ""  # outside the folder: none
    assert render_links(_fact("Dana.", entities=(), box_id=None), live) == ""


def test_reading_never_sees_the_footer(tmp_path: Path) -> None:
    fact = _fact("Dana's cat is called Miso.")
    path = tmp_path / "memory" / "facts" / "2026-03-02" / "fact-090200-3f9c2a1b.md"
    assert write_fact(path, fact, fsync=False)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("Miso.\n\n" + render_links(fact, path) + "\n")
    back = read_fact(path)
    assert back == fact and back.content_hash == fact.content_hash
    assert write_fact(path, back, fsync=False) is False  # a rewrite is a fixed point
    # A file from before the footer reads the same, and CRLF endings change nothing.
    assert parse_fact(render_fact(fact)) == fact
    assert parse_fact(text.replace("\n", "\r\n")) == fact


def test_only_the_exact_footer_is_taken_off() -> None:
    statement = f"Dana wrote {MARKER} into a note."
    assert strip_links(statement) == statement
    loose = f"Dana said this.\n\n{MARKER}\nand then a sentence of her own."
    assert strip_links(loose) == loose  # not a line of links: part of the statement
    footer = f"{MARKER}\n[a \\] b](../../entities/a-b.md)"
    assert strip_links(f"Dana said this.\n\n{footer}\n") == "Dana said this."


def test_odd_entity_spellings_stay_links(tmp_path: Path) -> None:
    fact = _fact("Dana met them.", entities=("Dana [the lead]", "!!!"), box_id="../x y")
    path = tmp_path / "memory" / "facts" / "2026-03-02" / "f.md"
    footer = render_links(fact, path)
    # Brackets escaped in the text, the page named by the slug; no page for "!!!", and a
    # box id that is no plain file name is not linked.
    assert footer == f"{MARKER}\n[Dana \\[the lead\\]](../../entities/dana-the-lead.md)"
    assert strip_links(f"Dana met them.\n\n{footer}") == "Dana met them."


def test_consolidation_does_not_rewrite_an_older_file_to_add_links(cli: Cli) -> None:
    fact = _fact("Dana's cat is called Miso.", box_id=None)
    path = cli.memory / "facts" / "2026-03-02" / "fact-090200-3f9c2a1b.md"
    path.parent.mkdir(parents=True)
    older = render_fact(fact)  # as written before fact files had links
    path.write_text(older, encoding="utf-8")
    done = cli("consolidate")
    assert done.returncode == 0, done.stderr.decode()
    assert path.read_text(encoding="utf-8") == older
    # Its entity pages are written all the same.
    assert (cli.memory / "entities" / "person-dana.md").is_file()
    assert (cli.memory / "entities" / "entity-miso.md").is_file()
