"""Names from transcripts become file names only through safe_slug and MemoryLayout.inside."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.core.paths import MemoryLayout, RelativePaths, safe_slug

WHEN = datetime(2026, 3, 2, 9, 2, 0, tzinfo=UTC)


@pytest.fixture
def layout(tmp_path: Path) -> MemoryLayout:
    lay = MemoryLayout(memory_dir=tmp_path / "memory", state_dir=tmp_path / "state")
    lay.ensure()
    return lay


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Preference", "preference"),
        ("Dana Smith", "dana-smith"),
        ("  --a__b..c--  ", "a-b-c"),
        ("../../etc/passwd", "etc-passwd"),
        ("Zoë Ünal", "zoë-ünal"),
        ("Straße", "strasse"),  # casefold, not lower
        ("C:\\Windows\\system32", "c-windows-system32"),
    ],
)
def test_safe_slug_keeps_letters_and_digits_only(name: str, slug: str) -> None:
    assert safe_slug(name) == slug


@pytest.mark.parametrize("name", ["", "...", "///", "\x00\n\t", "---"])
def test_safe_slug_falls_back_when_nothing_is_left(name: str) -> None:
    assert safe_slug(name) == "x"
    assert safe_slug(name, fallback="unknown") == "unknown"


def test_safe_slug_is_capped_and_never_ends_in_a_hyphen() -> None:
    assert safe_slug("ab " * 100, max_len=10) == "ab-ab-ab-a"
    # The cut lands right after a separator: the dangling hyphen goes.
    assert safe_slug("ab " * 100, max_len=9) == "ab-ab-ab"
    assert len(safe_slug("x" * 500)) == 64


def test_safe_slug_never_contains_a_path_separator_or_dot() -> None:
    for name in ["a/b", "a\\b", "..", "a.md", "/abs/path", "~user"]:
        slug = safe_slug(name)
        assert "/" not in slug and "\\" not in slug and "." not in slug


def test_fact_path_layout(layout: MemoryLayout) -> None:
    path = layout.fact_path("preference", WHEN, "3f9c2a1b")
    assert path == layout.memory_dir / "facts" / "2026-03-02" / "preference-090200-3f9c2a1b.md"


@pytest.mark.parametrize(
    "category", ["../../etc", "/etc/passwd", "..", "a/../../../b", "..\\..\\x", "\x00"]
)
def test_hostile_category_cannot_escape_fact_path(layout: MemoryLayout, category: str) -> None:
    path = layout.fact_path(category, WHEN, "3f9c2a1b")
    assert path.resolve().parent == (layout.facts_dir / "2026-03-02").resolve()
    assert ".." not in path.relative_to(layout.memory_dir).parts


def test_hostile_hash_cannot_escape_fact_path(layout: MemoryLayout) -> None:
    path = layout.fact_path("fact", WHEN, "../../../../tmp/evil")
    assert path.resolve().parent == (layout.facts_dir / "2026-03-02").resolve()


def test_inside_accepts_paths_in_the_memory_folder(layout: MemoryLayout) -> None:
    inner = layout.memory_dir / "facts" / "2026-03-02" / "x.md"
    assert layout.inside(inner) == inner
    assert layout.inside(layout.memory_dir) == layout.memory_dir
    # A ../ that stays inside is fine: it is where the path ends up that counts.
    assert layout.inside(layout.memory_dir / "facts" / ".." / "boxes" / "b.md")


@pytest.mark.parametrize(
    "rel", ["../state/lock", "../../x.md", "facts/../../escape.md", "facts/../../../../etc/passwd"]
)
def test_inside_refuses_dotdot_escapes(layout: MemoryLayout, rel: str) -> None:
    with pytest.raises(ValueError, match="outside the memory folder"):
        layout.inside(layout.memory_dir / rel)


def test_inside_refuses_absolute_paths_outside(layout: MemoryLayout, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        layout.inside(Path("/etc/passwd"))
    with pytest.raises(ValueError):
        layout.inside(tmp_path / "elsewhere.md")
    # Joining an absolute path discards the root: still refused.
    with pytest.raises(ValueError):
        layout.inside(layout.memory_dir / "/etc/passwd")


def test_inside_is_not_fooled_by_a_sibling_with_the_same_prefix(
    layout: MemoryLayout, tmp_path: Path
) -> None:
    sibling = tmp_path / "memory-evil" / "x.md"  # starts with the same characters as memory/
    with pytest.raises(ValueError):
        layout.inside(sibling)


def test_inside_follows_symlinks_out_of_the_folder(layout: MemoryLayout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (layout.memory_dir / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError):
        layout.inside(layout.memory_dir / "link" / "x.md")


def test_relative_uses_forward_slashes(layout: MemoryLayout) -> None:
    path = layout.fact_path("fact", WHEN, "abcdef01")
    assert layout.relative(path) == "facts/2026-03-02/fact-090200-abcdef01.md"


def test_state_paths_live_under_the_state_dir(layout: MemoryLayout) -> None:
    for path in (
        layout.journal_path,
        layout.hashes_path,
        layout.actions_path,
        layout.cursors_path,
        layout.lock_path,
        layout.index_dir,
    ):
        assert path.parent == layout.state_dir
    assert layout.hashes_path.name == "fact-hashes.txt"
    assert layout.actions_path.name == "memory-actions.jsonl"


def test_ensure_creates_both_roots(tmp_path: Path) -> None:
    lay = MemoryLayout(memory_dir=tmp_path / "a" / "memory", state_dir=tmp_path / "b" / "state")
    lay.ensure()
    lay.ensure()  # idempotent
    assert lay.memory_dir.is_dir() and lay.state_dir.is_dir()


def test_relative_paths_of_a_run_equal_layout_relative_through_links(
    tmp_path: Path, layout: MemoryLayout
) -> None:
    # The memory folder reached through a link, a day folder that is a link to another one,
    # and a file that is a link: each named as layout.relative names it.
    linked_root = tmp_path / "linked-memory"
    linked_root.symlink_to(layout.memory_dir)
    via_link = MemoryLayout(memory_dir=linked_root, state_dir=layout.state_dir)
    day = layout.facts_dir / "2026-03-02"
    day.mkdir(parents=True)
    (day / "a.md").write_text("x")
    (layout.facts_dir / "2026-03-03").symlink_to(day)
    (day / "b.md").symlink_to(day / "a.md")
    paths = [
        linked_root / "facts" / "2026-03-02" / "a.md",
        linked_root / "facts" / "2026-03-03" / "a.md",
        linked_root / "facts" / "2026-03-02" / "b.md",
        linked_root / "facts" / "2026-03-02" / "not-yet-written.md",
    ]
    relative = RelativePaths(via_link)
    assert [relative(p) for p in paths] == [via_link.relative(p) for p in paths]
    assert relative(paths[1]) == "facts/2026-03-02/a.md"
    assert relative(paths[2]) == "facts/2026-03-02/a.md"
