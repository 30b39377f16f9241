"""The exact-dedup hash index in state/fact-hashes.txt."""

from __future__ import annotations

from pathlib import Path

from engram_md.store.dedup import HashIndex
from engram_md.text.hashing import content_hash

H1 = content_hash("Dana uses uv instead of pip.")
H2 = content_hash("The service moves to PostgreSQL 16.")
H3 = content_hash("Priya leads the data team.")


def test_missing_file_means_rebuild(tmp_path: Path) -> None:
    assert HashIndex.load(tmp_path / "fact-hashes.txt") is None


def test_empty_file_is_an_empty_index_not_a_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "fact-hashes.txt"
    path.write_text("")
    index = HashIndex.load(path)
    assert index is not None and len(index) == 0


def test_rebuild_writes_a_sorted_file_that_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "state" / "fact-hashes.txt"
    pairs = [(H2, "facts/2026-03-02/decision-090110-b.md"), (H1, "facts/2026-03-02/pref-a.md")]
    index = HashIndex.rebuild(path, pairs)
    assert index.lookup(H1) == "facts/2026-03-02/pref-a.md"
    assert path.read_text().splitlines() == [f"{d} {r}" for d, r in sorted(pairs)]
    loaded = HashIndex.load(path)
    assert loaded is not None
    assert loaded.items() == sorted(pairs)


def test_add_appends_and_survives_reload(tmp_path: Path) -> None:
    path = tmp_path / "new" / "fact-hashes.txt"  # the folder does not exist yet
    index = HashIndex(path, {})
    index.add(H1, "facts/a.md")
    index.add(H2, "facts/b.md")
    index.add(H1, "facts/a.md")  # already there: not written twice
    assert path.read_text().count("\n") == 2
    loaded = HashIndex.load(path)
    assert loaded is not None
    assert loaded.lookup(H1) == "facts/a.md" and loaded.lookup(H2) == "facts/b.md"
    assert loaded.lookup(H3) is None


def test_add_with_a_new_path_wins_on_reload(tmp_path: Path) -> None:
    path = tmp_path / "fact-hashes.txt"
    index = HashIndex.rebuild(path, [(H1, "facts/old.md")])
    index.add(H1, "facts/new.md")
    assert index.lookup(H1) == "facts/new.md"
    loaded = HashIndex.load(path)
    assert loaded is not None and loaded.lookup(H1) == "facts/new.md"
    assert len(loaded) == 1


def test_remove_rewrites_the_file(tmp_path: Path) -> None:
    path = tmp_path / "fact-hashes.txt"
    index = HashIndex.rebuild(path, [(H1, "facts/a.md"), (H2, "facts/b.md")])
    index.remove(H1)
    index.remove(H3)  # absent: a no-op
    assert index.lookup(H1) is None
    loaded = HashIndex.load(path)
    assert loaded is not None and loaded.items() == [(H2, "facts/b.md")]
    assert [p.name for p in tmp_path.iterdir()] == ["fact-hashes.txt"]  # no temp left


def test_garbage_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "fact-hashes.txt"
    path.write_bytes(
        b"this is not an entry\n"
        + f"{H1} facts/a.md\n".encode()
        + b"\n"
        + b"abc facts/short-hash.md\n"
        + f"{H2}\n".encode()  # no path
        + b"\xff\xfe\x00 binary junk\n"
        + f"{H3} facts/with space.md\n".encode()
        + f"{H2} facts/b.md".encode()  # no trailing newline (torn append)
    )
    index = HashIndex.load(path)
    assert index is not None
    assert index.items() == sorted(
        [(H1, "facts/a.md"), (H3, "facts/with space.md"), (H2, "facts/b.md")]
    )


def test_rebuild_replaces_whatever_was_there(tmp_path: Path) -> None:
    path = tmp_path / "fact-hashes.txt"
    path.write_text(f"{H1} facts/stale.md\n")
    HashIndex.rebuild(path, [(H2, "facts/b.md")])
    loaded = HashIndex.load(path)
    assert loaded is not None and loaded.items() == [(H2, "facts/b.md")]
