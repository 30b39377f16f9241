"""Entity pages: merged spellings, extractive synthesis, timeline links, stable bytes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from engram_md.consolidate.entities import group_entities, plan_entities
from engram_md.consolidate.plan import FileWrite
from engram_md.core.models import Category, Status
from engram_md.store.factfile import write_fact

from .test_lifecycle import NOW, Folder, apply, make_fact


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


def frontmatter(text: str) -> dict[str, object]:
    _, head, _ = text.split("---\n", 2)
    data = yaml.safe_load(head)
    assert isinstance(data, dict)
    return data


def test_spellings_merge_into_one_page(folder: Folder) -> None:
    day = NOW - timedelta(days=10)
    a = make_fact(
        "Dana wants uv instead of pip.",
        category=Category.PREFERENCE,
        entities=("person-dana",),
        importance=0.9,
        created=day,
    )
    b = make_fact(
        "Dana joined the platform team.",
        entities=("Dana",),
        importance=0.6,
        created=day + timedelta(days=1),
    )
    c = make_fact(
        "Dana used pip before.",
        entities=("entity-dana",),
        importance=0.8,
        created=day - timedelta(days=5),
        status=Status.SUPERSEDED,
    )
    d = make_fact("We run Postgres 16.", entities=("tool-postgresql",), created=day)
    e = make_fact("The postgres replica lags.", entities=("postgres",), created=day)
    lone = make_fact("Mentioned Zanzibar once.", entities=("place-zanzibar",))
    paths = {f.id: folder.add(f) for f in (a, b, c, d, e, lone)}
    changes = plan_entities(folder.ctx())
    pages = {c.path.name: c for c in changes if isinstance(c, FileWrite)}
    # Every entity has a page, one mention is enough; the other spellings facts link by
    # ("Dana", "entity-dana", "postgres") get a note pointing at the merged page.
    assert set(pages) == {
        "person-dana.md",
        "tool-postgresql.md",
        "place-zanzibar.md",
        "dana.md",
        "entity-dana.md",
        "postgres.md",
    }
    assert {pages[n].action for n in ("dana.md", "entity-dana.md", "postgres.md")} == {
        "entity_redirect"
    }
    dana = pages["person-dana.md"].text
    meta = frontmatter(dana)
    assert meta["type"] == "person" and meta["name"] == "Dana"
    assert meta["aliases"] == ["Dana", "entity-dana", "person-dana"]
    assert meta["facts"] == 3 and meta["activeFacts"] == 2
    assert meta["firstSeen"] == c.created  # a YAML timestamp
    assert f"firstSeen: {c.created:%Y-%m-%dT%H:%M:%SZ}\n" in dana
    synthesis = dana.split("## Synthesis\n\n", 1)[1].split("\n\n## Current", 1)[0]
    # The most important active statements, told in time order; the superseded one left out.
    assert synthesis == "Dana wants uv instead of pip. Dana joined the platform team."
    # Current facts newest first, then the superseded ones, struck through.
    current = dana.split("## Current\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert current[0].startswith(f"- {b.created:%Y-%m-%d} — Dana joined the platform team.")
    earlier = dana.split("## No longer current\n\n", 1)[1].splitlines()
    assert earlier[0].startswith(
        f"- {c.created:%Y-%m-%d} — ~~Dana used pip before.~~ *(superseded)*"
    )
    rel = paths[a.id].relative_to(folder.layout.memory_dir).as_posix()
    assert f"([preference](../{rel}))" in current[1]
    link = folder.layout.entities_dir / f"../{rel}"
    assert link.resolve() == paths[a.id].resolve()  # the relative link really points at it
    pg = frontmatter(pages["tool-postgresql.md"].text)
    assert pg["aliases"] == ["postgres", "tool-postgresql"] and pg["type"] == "tool"
    apply(changes)
    assert plan_entities(folder.ctx()) == []  # same folder: same bytes, nothing to write


def test_different_specific_types_stay_apart(folder: Folder) -> None:
    facts = [
        make_fact("Jordan is our designer.", entities=("person-jordan",)),
        make_fact("Jordan reviewed the mockups.", entities=("person-jordan", "Jordan")),
        make_fact("We hiked in Jordan.", entities=("place-jordan",)),
        make_fact("Jordan has great food.", entities=("place-jordan",)),
    ]
    groups = {
        g.slug: g for g in group_entities([(Path(f"{i}.md"), f) for i, f in enumerate(facts)])
    }
    assert set(groups) == {"person-jordan", "place-jordan"}
    assert len(groups["person-jordan"].facts) == 2  # the bare "Jordan" joined the person
    assert "Jordan" in groups["person-jordan"].aliases


def test_old_alias_page_gets_a_merge_note(folder: Folder) -> None:
    for i in range(2):
        folder.add(make_fact(f"Acme ships widgets {i}.", entities=("org-acme", "entity-acme")))
    old = folder.layout.entities_dir / "entity-acme.md"
    old.parent.mkdir(parents=True)
    old.write_text("---\ntype: entity\nname: Acme\n---\n\n# Acme\n", encoding="utf-8")
    hand = folder.layout.entities_dir / "notes.md"
    hand.write_text("my notes", encoding="utf-8")
    changes = plan_entities(folder.ctx())
    by_name = {c.path.name: c for c in changes if isinstance(c, FileWrite)}
    assert set(by_name) == {"org-acme.md", "entity-acme.md"}
    assert "Merged into [org-acme](org-acme.md)." in by_name["entity-acme.md"].text
    apply(changes)
    assert plan_entities(folder.ctx()) == []
    assert hand.read_text(encoding="utf-8") == "my notes"


def test_timeline_is_capped_and_archived_facts_link_into_archive(folder: Folder) -> None:
    for i in range(105):
        folder.add(
            make_fact(
                f"Kafka note {i}.", entities=("tool-kafka",), created=NOW - timedelta(days=200 - i)
            )
        )
    archived = make_fact(
        "Kafka was once on version 2.",
        entities=("tool-kafka",),
        created=NOW - timedelta(days=300),
        status=Status.ARCHIVED,
    )
    target = folder.layout.archive_dir / "facts" / "2025-08-05" / "fact-kafka.md"
    write_fact(target, archived, fsync=False)
    page = plan_entities(folder.ctx())[0]
    assert isinstance(page, FileWrite)
    assert "*6 earlier fact(s) not listed.*" in page.text
    assert page.text.count("\n- ") == 100
    assert "Kafka note 104." in page.text and "Kafka note 4." not in page.text
    assert frontmatter(page.text)["facts"] == 106
