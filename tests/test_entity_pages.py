"""Entity pages: the kind each name gets at extraction, the order a page lists its facts in,
and the pages kept in step between consolidations."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from engram_md.consolidate.entities import plan_entities
from engram_md.consolidate.plan import FileWrite
from engram_md.core.models import Fact, Status
from engram_md.core.paths import MemoryLayout
from engram_md.store.entity_pages import (
    CURRENT_HEADING,
    EARLIER_HEADING,
    MAX_LISTED,
    EntityPages,
)
from engram_md.store.factfile import write_fact

from .test_lifecycle import NOW, Folder, apply, make_fact
from .test_offline_extractor import extractor, facts_of, make_turns


def entities_of(text: str) -> tuple[str, ...]:
    """The entities the offline extractor gives the one fact it draws from ``text``."""
    found = facts_of(extractor().extract(make_turns([("user", text)]), {"t1": "Dana"}))
    assert len(found) == 1, found
    return found[0].entities


# ---------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("text", "expected", "not_expected"),
    [
        ("My cat is called Miso.", "entity-miso", "person-miso"),
        ("I really love my dog Rex.", "entity-rex", "person-rex"),
        ("We adopted a kitten named Pip.", "entity-pip", "person-pip"),
        ("My sister Maya lives in Berlin.", "person-maya", "entity-maya"),
        ("I'll send the migration plan to Priya by Friday.", "person-priya", "entity-priya"),
        ("I'm working on Atlas this quarter.", "project-atlas", "entity-atlas"),
        ("I decided to use Neovim for everything.", "tool-neovim", "entity-neovim"),
        ("We run PostgreSQL 16 in production now, remember that.", "tool-postgresql-16", None),
        ("We switched from Jenkins to Buildkite.", "tool-jenkins", "place-jenkins"),
        ("Remember that I work at Initech Labs now.", "org-initech-labs", None),
        ("I moved to Lisbon last month.", "place-lisbon", "entity-lisbon"),
    ],
)
def test_kinds_at_extraction(text: str, expected: str, not_expected: str | None) -> None:
    entities = entities_of(text)
    assert "person-dana" in entities  # the speaker
    assert expected in entities, entities
    assert not_expected is None or not_expected not in entities


def test_a_name_without_a_telling_word_stays_a_plain_entity() -> None:
    # "Please remember" is the signal that makes it a note ("is in June" is no residence).
    assert "entity-zorblax" in entities_of("Please remember that the Zorblax launch is in June.")


# ---------------------------------------------------------------- the page


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


def _listed(text: str, heading: str) -> list[str]:
    section = text.split(f"{heading}\n\n", 1)[1]
    return section.split("\n\n", 1)[0].splitlines()


def test_current_facts_on_top_newest_first_then_the_rest_marked(folder: Folder) -> None:
    day = timedelta(days=1)
    oldest = make_fact("Dana used Jenkins.", entities=("person-dana",), created=NOW - 9 * day)
    old = make_fact(
        "Dana leads the platform team.", entities=("person-dana",), created=NOW - 8 * day
    )
    replaced = make_fact(
        "Dana's team has 4 engineers.",
        entities=("person-dana",),
        created=NOW - 5 * day,
        status=Status.SUPERSEDED,
    )
    new = make_fact("Dana's team has 6 engineers.", entities=("person-dana",), created=NOW - day)
    paths = {f.id: folder.add(f) for f in (oldest, old, replaced, new)}
    gone = make_fact(
        "Dana was on call in 2024.",
        entities=("person-dana",),
        created=NOW - 7 * day,
        status=Status.ARCHIVED,
    )
    archived = folder.layout.archive_dir / "facts" / "2026-01-01" / "fact-gone.md"
    write_fact(archived, gone, fsync=False)
    changes = plan_entities(folder.ctx())
    page = next(c for c in changes if isinstance(c, FileWrite) and c.path.name == "person-dana.md")
    current = _listed(page.text, CURRENT_HEADING)
    assert [line.split(" — ", 1)[1].split(" (")[0] for line in current] == [
        "Dana's team has 6 engineers.",
        "Dana leads the platform team.",
        "Dana used Jenkins.",
    ]
    earlier = _listed(page.text, EARLIER_HEADING)
    assert earlier[0].startswith(f"- {replaced.created:%Y-%m-%d} — ~~Dana's team has 4")
    assert "*(superseded)*" in earlier[0]
    assert earlier[1].startswith(f"- {gone.created:%Y-%m-%d} — ~~Dana was on call")
    assert (
        "*(archived)*" in earlier[1] and "(../archive/facts/2026-01-01/fact-gone.md)" in earlier[1]
    )
    assert page.text.index(CURRENT_HEADING) < page.text.index(EARLIER_HEADING)
    rel = paths[new.id].relative_to(folder.layout.memory_dir).as_posix()
    assert current[0].endswith(f"([fact](../{rel}))")
    meta = yaml.safe_load(page.text.split("---\n", 2)[1])
    assert meta["facts"] == 5 and meta["activeFacts"] == 3
    apply(changes)
    assert plan_entities(folder.ctx()) == []


def test_one_mention_is_enough_for_a_page(folder: Folder) -> None:
    folder.add(make_fact("Dana visited Zanzibar.", entities=("place-zanzibar",)))
    names = {c.path.name for c in plan_entities(folder.ctx()) if isinstance(c, FileWrite)}
    assert names == {"place-zanzibar.md"}


# ---------------------------------------------------------------- between consolidations


def _write(layout: MemoryLayout, fact: Fact) -> Path:
    path = layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
    write_fact(path, fact, fsync=False)
    return path


def test_a_batch_writes_each_page_once_and_later_batches_add_on_top(tmp_path: Path) -> None:
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    pages = EntityPages(layout, fsync=False)
    day = timedelta(days=1)
    first = make_fact("Dana's cat is called Miso.", entities=("person-dana", "entity-miso"))
    second = make_fact("Dana works at Initech.", entities=("person-dana", "org-initech"))
    for fact in (first, second):
        pages.note(_write(layout, fact), fact)
    written = pages.flush()
    assert sorted(p.name for p in written) == [
        "entity-miso.md",
        "org-initech.md",
        "person-dana.md",
    ]  # one write per page for the batch, though two facts name Dana
    dana = layout.entities_dir / "person-dana.md"
    miso = (layout.entities_dir / "entity-miso.md").read_text(encoding="utf-8")
    assert "type: entity\n" in miso and 'name: "Miso"' in miso
    assert pages.flush() == []  # nothing touched since

    later = make_fact("Dana moved to Lisbon.", entities=("person-dana", "Dana"), created=NOW + day)
    pages.note(_write(layout, later), later)
    # The bare "Dana" names dana.md: a page of its own until consolidation merges the two.
    assert pages.flush() == [layout.entities_dir / "dana.md", dana]
    text = dana.read_text(encoding="utf-8")
    current = _listed(text, CURRENT_HEADING)
    assert current[0].startswith(f"- {later.created:%Y-%m-%d} — Dana moved to Lisbon.")
    assert len(current) == 3
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    assert meta["facts"] == 3 and meta["activeFacts"] == 3
    assert meta["lastSeen"] == later.created and meta["aliases"] == ["person-dana"]

    # A replay of the same batch changes nothing.
    pages.note(_write(layout, later), later)
    assert pages.flush() == []
    assert dana.read_text(encoding="utf-8") == text


def test_pages_not_ours_to_extend_are_left_alone(tmp_path: Path) -> None:
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    layout.entities_dir.mkdir(parents=True)
    own = layout.entities_dir / "person-dana.md"
    own.write_text("# Dana\n\nMy notes on Dana.\n", encoding="utf-8")
    note = layout.entities_dir / "entity-acme.md"
    redirect = '---\ntype: org\nname: "Acme"\nmergedInto: org-acme\n---\n# Acme\n'
    note.write_text(redirect, encoding="utf-8")
    fact = make_fact("Dana joined Acme.", entities=("person-dana", "entity-acme"))
    pages = EntityPages(layout, fsync=False)
    pages.note(_write(layout, fact), fact)
    assert pages.flush() == []
    assert own.read_text(encoding="utf-8") == "# Dana\n\nMy notes on Dana.\n"
    assert note.read_text(encoding="utf-8") == redirect


def test_a_consolidated_page_takes_new_facts_on_top(folder: Folder) -> None:
    folder.add(make_fact("Dana leads the platform team.", entities=("person-dana",)))
    apply(plan_entities(folder.ctx()))
    page = folder.layout.entities_dir / "person-dana.md"
    fresh = make_fact(
        "Dana's team has 6 engineers.", entities=("person-dana",), created=NOW + timedelta(hours=1)
    )
    pages = EntityPages(folder.layout, fsync=False)
    pages.note(folder.add(fresh), fresh)
    assert pages.flush() == [page]
    current = _listed(page.read_text(encoding="utf-8"), CURRENT_HEADING)
    assert [line.split(" — ", 1)[1].split(" (")[0] for line in current] == [
        "Dana's team has 6 engineers.",
        "Dana leads the platform team.",
    ]
    # The next consolidation writes the same list (and the synthesis with it).
    again = plan_entities(folder.ctx())
    assert [c.path.name for c in again] == ["person-dana.md"]
    assert _listed(again[0].text, CURRENT_HEADING) == current


def _meta(text: str) -> dict[str, object]:
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(meta, dict)
    return meta


def test_between_consolidations_a_page_lists_as_many_as_a_whole_page(tmp_path: Path) -> None:
    """Batch after batch, the list keeps MAX_LISTED entries, the newest, and counts the rest;
    it is the list a consolidation would write for the same facts."""
    layout = MemoryLayout(tmp_path / "memory", tmp_path / "state")
    pages = EntityPages(layout, fsync=False)
    total = MAX_LISTED + 30
    facts = [
        make_fact(
            f"Dana fixed bug {i}.", entities=("person-dana",), created=NOW + timedelta(hours=i)
        )
        for i in range(total)
    ]
    for start in range(0, total, 7):  # batches of seven
        for fact in facts[start : start + 7]:
            pages.note(_write(layout, fact), fact)
        pages.flush()
    text = (layout.entities_dir / "person-dana.md").read_text(encoding="utf-8")
    current = _listed(text, CURRENT_HEADING)
    assert len(current) == MAX_LISTED
    assert current[0].split(" — ", 1)[1].startswith(f"Dana fixed bug {total - 1}.")
    assert current[-1].split(" — ", 1)[1].startswith(f"Dana fixed bug {total - MAX_LISTED}.")
    assert text.endswith(f"\n\n*{total - MAX_LISTED} earlier fact(s) not listed.*\n")
    assert _meta(text)["facts"] == total and _meta(text)["activeFacts"] == total

    # An old fact confirmed again (noted once more) is neither listed nor counted again.
    pages.note(_write(layout, facts[0]), facts[0])
    assert pages.flush() == []

    folder = Folder(tmp_path)
    whole = next(c for c in plan_entities(folder.ctx()) if c.path.name == "person-dana.md")
    assert isinstance(whole, FileWrite)
    assert _listed(whole.text, CURRENT_HEADING) == current
    assert whole.text.endswith(text[text.index(f"{CURRENT_HEADING}\n") :])


def test_the_cap_leaves_out_what_is_no_longer_current_first(folder: Folder) -> None:
    """A consolidated page listing facts no longer current: new facts push those out before
    any current one, and the page's layout stays the one a consolidation writes."""
    hour = timedelta(hours=1)
    for i in range(MAX_LISTED - 5):
        folder.add(make_fact(f"Dana shipped release {i}.", entities=("person-dana",),
                             created=NOW - (200 - i) * hour))  # fmt: skip
    for i in range(10):
        old = make_fact(f"Dana used tool {i}.", entities=("person-dana",),
                        created=NOW - (400 - i) * hour, status=Status.SUPERSEDED)  # fmt: skip
        folder.add(old)
    apply(plan_entities(folder.ctx()))
    page = folder.layout.entities_dir / "person-dana.md"
    before = page.read_text(encoding="utf-8")
    assert len(_listed(before, EARLIER_HEADING)) == 5  # 95 current + 5 of the 10 earlier
    assert "*5 earlier fact(s) not listed.*" in before

    pages = EntityPages(folder.layout, fsync=False)
    for i in range(3):
        fresh = make_fact(f"Dana wrote doc {i}.", entities=("person-dana",), created=NOW + i * hour)
        pages.note(folder.add(fresh), fresh)
    assert pages.flush() == [page]
    text = page.read_text(encoding="utf-8")
    assert len(_listed(text, CURRENT_HEADING)) == MAX_LISTED - 2
    assert len(_listed(text, EARLIER_HEADING)) == 2
    assert text.endswith("\n\n*8 earlier fact(s) not listed.*\n")
    assert _meta(text)["facts"] == MAX_LISTED + 8
    again = next(c for c in plan_entities(folder.ctx()) if c.path.name == "person-dana.md")
    assert isinstance(again, FileWrite)
    assert again.text.endswith(text[text.index(f"{CURRENT_HEADING}\n") :])
