"""A search index a crash left unusable: set aside and rebuilt by the writer, refused with a
clear message to a reader, found and repaired by doctor.

Two states a kill -9 really leaves (both seen, not imagined): the table's directory without
any manifest yet (killed inside LanceDB's create_table: "Table 'memories' was not found"),
and a table whose text and id indices were never created (killed between the two steps).
A zero-byte newest manifest (a write cut short) stands for a damaged manifest.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import lancedb
import pytest
from lancedb.index import FTS

from engram_md.core.errors import IndexError_
from engram_md.index.lance import TABLE_NAME, UNREADABLE_DIR, search_indices_lacking
from engram_md.index.table import MemoryIndex

from .conftest import Cli, HashEmbedder, clean_env
from .rows import index_row
from .synthetic import conversation
from .test_doctor import repair_folder
from .test_forget import build_folder, examine_folder


def _cut_off_while_created(index_dir: Path) -> None:
    """The table replaced by what create_table leaves when killed before its first manifest:
    empty directories."""
    table = index_dir / f"{TABLE_NAME}.lance"
    shutil.rmtree(table)
    for sub in ("_versions", "data"):
        (table / sub).mkdir(parents=True, exist_ok=True)


def _newest_manifest_emptied(index_dir: Path) -> None:
    versions = index_dir / f"{TABLE_NAME}.lance" / "_versions"
    newest = min(versions.glob("*.manifest"))  # names count down: the first is the newest
    newest.write_bytes(b"")


DAMAGES: dict[str, Callable[[Path], None]] = {
    "cut off while created": _cut_off_while_created,
    "newest manifest empty": _newest_manifest_emptied,
}


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("damage", DAMAGES)
def test_an_unopenable_table_is_set_aside_and_rebuilt_by_the_writer_only(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "index"
    first = MemoryIndex.open(path, HashEmbedder())
    first.upsert([index_row("f-1", "Dana prefers uv over pip")])
    DAMAGES[damage](path)
    before = _tree(path)

    with pytest.raises(IndexError_, match="cannot be opened") as refused:
        MemoryIndex.open(path, HashEmbedder(), may_rebuild=False)
    assert "doctor --repair" in str(refused.value)
    assert _tree(path) == before  # a reader changes nothing

    writer = MemoryIndex.open(path, HashEmbedder())
    assert writer.needs_rebuild
    assert "could not be opened" in (writer.rebuild_reason or "")
    assert writer.count() == 0
    writer.upsert([index_row("f-2", "The billing service moved to PostgreSQL")])
    assert [h.row.id for h in writer.text_search("PostgreSQL", 5)] == ["f-2"]
    [kept] = (path / UNREADABLE_DIR).iterdir()
    assert kept.name.startswith(f"{TABLE_NAME}-") and kept.name.endswith(".lance")
    assert lancedb.connect(str(path)).list_tables().tables == [TABLE_NAME]  # not the kept one

    again = MemoryIndex.open(path, HashEmbedder())
    assert not again.needs_rebuild and again.count() == 1

    # A second breakage replaces the copy kept from the first: they never pile up.
    _newest_manifest_emptied(path)
    MemoryIndex.open(path, HashEmbedder())
    assert len(list((path / UNREADABLE_DIR).iterdir())) == 1


def test_a_table_without_its_indices_gets_them_from_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "index"
    path.mkdir()
    bare = lancedb.connect(str(path))
    schema_source = MemoryIndex.open(tmp_path / "template", HashEmbedder())
    bare.create_table(TABLE_NAME, schema=schema_source._table.schema)
    assert search_indices_lacking(bare.open_table(TABLE_NAME)) == {"id"}

    reader = MemoryIndex.open(path, HashEmbedder(), may_rebuild=False)
    assert search_indices_lacking(reader._table) == {"id"}  # a reader adds nothing

    writer = MemoryIndex.open(path, HashEmbedder())
    assert search_indices_lacking(writer._table) == set()
    writer.upsert([index_row("f-1", "Priya drinks green tea before standup")])
    assert [h.row.id for h in writer.text_search("green tea", 5)] == ["f-1"]


def test_the_full_text_index_of_earlier_versions_is_dropped_by_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "index"
    writer = MemoryIndex.open(path, HashEmbedder())
    writer.upsert([index_row("f-1", "Priya drinks green tea before standup")])
    writer.close()
    table = lancedb.connect(str(path)).open_table(TABLE_NAME)
    table.create_index("content", config=FTS(), name="content_idx")

    reader = MemoryIndex.open(path, HashEmbedder(), may_rebuild=False)
    assert "content_idx" in {i.name for i in reader._table.list_indices()}  # reads change nothing
    again = MemoryIndex.open(path, HashEmbedder())
    assert {i.name for i in again._table.list_indices()} == {"id_idx"}
    assert [h.row.id for h in again.text_search("green tea", 5)] == ["f-1"]


def test_a_kill_between_creating_the_table_and_its_indices_is_mended_by_the_next_run(
    tmp_path: Path,
) -> None:
    cli = Cli(tmp_path)
    data = ("\n".join(conversation(40, seed=3)) + "\n").encode()
    killed = cli("run", input=data, env=clean_env(ENGRAM_CRASH_AT="index.create:1"))
    assert killed.returncode == -9, killed.stderr.decode()
    table = lancedb.connect(str(cli.state / "index")).open_table(TABLE_NAME)
    assert search_indices_lacking(table) == {"id"}

    finished = cli("run", input=data)
    assert finished.returncode == 0, finished.stderr.decode()
    assert cli.fact_files()
    doctor = cli("doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout.decode()
    assert json.loads(doctor.stdout)["problems"] == []


@pytest.mark.parametrize("damage", DAMAGES)
def test_doctor_reports_an_unusable_index_and_repair_rebuilds_it(
    tmp_path: Path, damage: str
) -> None:
    folder = build_folder(tmp_path)
    index_dir = folder.layout.index_dir
    DAMAGES[damage](index_dir)
    before = _tree(index_dir)

    found = examine_folder(folder)
    assert [p.kind for p in found.problems] == ["index_unreadable"]
    assert "cannot be opened" in found.problems[0].detail
    assert _tree(index_dir) == before  # examining only reads

    fixed = repair_folder(folder, found)
    assert fixed.ok and [p.kind for p in fixed.repaired] == ["index_unreadable"]
    index = MemoryIndex.open(index_dir, folder.embedder(), may_rebuild=False)
    assert set(index.manifest()) >= {fact.id for fact in folder.facts.values()}
    assert examine_folder(folder).ok


def test_doctor_reports_missing_search_indices_and_repair_creates_them(tmp_path: Path) -> None:
    folder = build_folder(tmp_path)
    index_dir = folder.layout.index_dir
    table = lancedb.connect(str(index_dir)).open_table(TABLE_NAME)
    for name in [index.name for index in table.list_indices()]:
        table.drop_index(name)

    found = examine_folder(folder)
    assert [p.kind for p in found.problems] == ["index_incomplete"]
    assert "no id index" in found.problems[0].detail

    fixed = repair_folder(folder, found)
    assert fixed.ok and [p.kind for p in fixed.repaired] == ["index_incomplete"]
    assert search_indices_lacking(lancedb.connect(str(index_dir)).open_table(TABLE_NAME)) == set()
