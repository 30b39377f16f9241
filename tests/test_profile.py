"""profile.md from behavioral facts; IDENTITY.md consolidated past its limit, nothing lost."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram_md.consolidate.plan import FileWrite
from engram_md.consolidate.profile import plan_profile
from engram_md.core.config import ConsolidateConfig
from engram_md.core.models import Category, Status

from .test_lifecycle import NOW, Folder, apply, make_fact


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


def test_profile_ranks_dedups_links_and_caps(folder: Folder) -> None:
    folder.cfg = folder.cfg.model_copy(
        update={"consolidate": ConsolidateConfig(profile_max_lines=3)}
    )
    top = make_fact(
        "Dana wants shell commands to use uv.", category=Category.PREFERENCE, importance=0.9
    )
    twin = make_fact(
        "Dana wants shell commands to use uv!",
        category=Category.PREFERENCE,
        importance=0.8,
        created=NOW - timedelta(days=2),
    )
    principle = make_fact("Never push on Fridays.", category=Category.PRINCIPLE, importance=0.7)
    habit = make_fact("Runs every morning before work.", tags=("habit",), importance=0.6)
    skill = make_fact("Knows Rust well.", category=Category.SKILL, importance=0.5)
    plain = make_fact("The office is in Lisbon.", importance=1.0)
    old = make_fact(
        "Dana wants pip.", category=Category.PREFERENCE, importance=1.0, status=Status.SUPERSEDED
    )
    paths = {f.id: folder.add(f) for f in (top, twin, principle, habit, skill, plain, old)}
    changes = plan_profile(folder.ctx())
    assert len(changes) == 1 and isinstance(changes[0], FileWrite)
    assert changes[0].path == folder.layout.profile_path
    bullets = [ln for ln in changes[0].text.splitlines() if ln.startswith("- ")]
    assert len(bullets) == 3  # the cap
    assert bullets[0].startswith("- Dana wants shell commands to use uv.")
    assert "Never push on Fridays." in bullets[1] and "Runs every morning" in bullets[2]
    rel = paths[top.id].relative_to(folder.layout.memory_dir).as_posix()
    assert f"([preference]({rel}))" in bullets[0]
    text = changes[0].text
    assert "uv!" not in text and "Lisbon" not in text and "pip" not in text
    apply(changes)
    assert plan_profile(folder.ctx()) == []  # no date in the file: nothing to rewrite


def test_no_profile_without_behavioral_facts(folder: Folder) -> None:
    folder.add(make_fact("The office is in Lisbon."))
    assert plan_profile(folder.ctx()) == []


def identity_text(n_paragraphs: int) -> str:
    parts = ["# Identity", "", "## Reflections", ""]
    for i in range(n_paragraphs):
        parts += [f"Reflection {i}: the deploy of week {i} taught me to check queue depth {i}.", ""]
        if i % 10 == 0:
            parts += ["- I must always write the rollback plan first.", ""]
    parts += ["## Rules", "", "- Always cite the source file.", "- Keep answers short."]
    return "\n".join(parts) + "\n"


def test_identity_under_the_limit_is_left_alone(folder: Folder) -> None:
    folder.layout.identity_path.write_text(identity_text(5), encoding="utf-8")
    assert plan_profile(folder.ctx()) == []


def test_identity_past_the_limit_is_deduplicated_and_archived(folder: Folder) -> None:
    original = identity_text(200)
    folder.layout.identity_path.write_text(original, encoding="utf-8")
    limit = folder.cfg.consolidate.identity_max_bytes
    assert len(original.encode()) > limit
    changes = plan_profile(folder.ctx())
    assert [c.action for c in changes if isinstance(c, FileWrite)] == [
        "identity_archive",
        "identity",
    ]
    archive, identity = changes
    assert isinstance(archive, FileWrite) and isinstance(identity, FileWrite)
    assert archive.path == folder.layout.archive_dir / f"IDENTITY-{NOW:%Y-%m-%d}.md"
    new = identity.text
    assert len(new.encode()) <= limit
    assert new.startswith("# Identity\n")
    assert new.count("I must always write the rollback plan first.") == 1  # deduplicated
    assert "- Always cite the source file.\n- Keep answers short." in new  # rules kept, tight
    assert "Reflection 199:" in new and "Reflection 0:" not in new  # most recent kept
    assert new.index("## Reflections") < new.index("## Rules")  # sections keep their order
    # Nothing lost: every original line is in the new file or the archive.
    for line in original.splitlines():
        if line.strip():
            assert line in new or line in archive.text, line
    apply(changes)
    assert plan_profile(folder.ctx()) == []  # under the limit now: idempotent
    # A second pass the same day appends to the day's archive.
    grown = new + "\n" + "\n\n".join(f"Late note {i} about caching." for i in range(200)) + "\n"
    folder.layout.identity_path.write_text(grown, encoding="utf-8")
    second = plan_profile(folder.ctx())
    assert isinstance(second[0], FileWrite)
    assert second[0].text.startswith(archive.text.rstrip("\n"))
    assert second[0].text.count("## Moved from IDENTITY.md") == 2
