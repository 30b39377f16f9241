"""The in-memory full-text index reads words and ranks rows as LanceDB's BM25 index does."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS
from lancedb.query import FullTextOperator, MatchQuery

from engram_md.index.resident import Resident
from engram_md.index.table import IndexRow, MemoryIndex
from engram_md.index.textindex import TextIndex, terms

from .conftest import HashEmbedder
from .rows import index_row

TEXTS = [
    "Noor: I moved to Lisbon last spring and I love the light there.",
    "Tomas: My sister runs a bakery; she is running the whole shop alone.",
    "Noor: We decided to migrate the billing service to PostgreSQL.",
    "Tomas: The café near the station makes the best résumé-writing coffee.",
    "Noor: Running every morning keeps me sane, and I ran a half marathon once.",
    "Tomas: What do you think about the migration plan for billing?",
    "Noor: Lisbon, Lisbon, Lisbon: I cannot stop talking about Lisbon.",
    "Tomas: Did you ever try the naïve approach to caching?",
]
QUERIES = [
    "Where did Noor move?",
    "what does Tomas's sister run",
    "billing migration PostgreSQL",
    "cafe resume",
    "naive caching",
    "running running marathon",
    "what did you do",  # only stop words and one word that is not one
    "Lisbon light",
]


def _match(query: str) -> MatchQuery:
    # Any word may match, BM25 ranks: how the index queried LanceDB before it answered itself.
    return MatchQuery(
        query,
        "content",
        boost=1.0,
        fuzziness=0,
        max_expansions=50,
        operator=FullTextOperator.OR,
        prefix_length=0,
        document_granularity=None,
    )


def _lance_answers(tmp_path: Path) -> dict[str, list[tuple[int, float]]]:
    db = lancedb.connect(tmp_path / "lance")
    table = db.create_table(
        "t", pa.table({"id": [str(i) for i in range(len(TEXTS))], "content": TEXTS})
    )
    config = FTS(with_position=False, stem=True, remove_stop_words=True, ascii_folding=True)
    table.create_index("content", config=config, name="content_idx")
    out: dict[str, list[tuple[int, float]]] = {}
    for query in QUERIES:
        found = table.search(_match(query), query_type="fts").limit(20).to_arrow()
        ids = [int(i) for i in found.column("id").to_pylist()]
        out[query] = list(zip(ids, found.column("_score").to_pylist(), strict=True))
    return out


def test_same_rows_and_scores_as_lancedb(tmp_path: Path) -> None:
    index = TextIndex.of(TEXTS)
    alive = np.ones(len(TEXTS), dtype=bool)
    for query, expected in _lance_answers(tmp_path).items():
        positions, scores = index.search(query, 20, alive)
        got = dict(zip(positions.tolist(), scores.tolist(), strict=True))
        assert set(got) == {i for i, _ in expected}, query
        for i, score in expected:
            assert got[i] == pytest.approx(score, rel=1e-4), (query, i)


def test_words_are_stemmed_stop_words_dropped_after_stemming_accents_folded() -> None:
    assert terms("Running runs ran") == ["run", "run", "ran"]
    # A stop word is dropped by its stem: "having" goes, "does" (stem "doe") and "once"
    # ("onc") stay, as in LanceDB.
    assert terms("What does she do once, having") == ["doe", "onc"]
    assert terms("Café résumé naïve") == ["cafe", "resume", "naiv"]
    assert terms("x" * 41 + " ok") == ["ok"]
    assert terms("snake_case it's") == ["snake", "case"]


def test_a_word_repeated_in_the_query_counts_twice() -> None:
    index = TextIndex.of(["lisbon porto", "porto braga", "lisbon"])
    alive = np.ones(3, dtype=bool)
    _, once = index.search("lisbon", 3, alive)
    _, twice = index.search("lisbon lisbon", 3, alive)
    assert twice.tolist() == pytest.approx([2 * s for s in once.tolist()])


def test_dead_rows_are_not_found_and_not_counted() -> None:
    index = TextIndex.of(["red apples", "red cars", "green apples"])
    alive = np.array([True, False, True])
    positions, _ = index.search("red", 5, alive)
    assert positions.tolist() == [0]
    # The statistics are those of the live rows: the same as an index of those rows alone.
    _, live_scores = index.search("apples red", 5, alive)
    _, alone_scores = TextIndex.of(["red apples", "green apples"]).search(
        "apples red", 5, np.ones(2, dtype=bool)
    )
    assert live_scores.tolist() == pytest.approx(alone_scores.tolist())


def test_a_filter_applies_before_the_best_are_taken() -> None:
    texts = [f"tea note {i}" for i in range(30)] + ["tea tea tea said once"]
    index = TextIndex.of(texts)
    alive = np.ones(len(texts), dtype=bool)
    allowed = np.zeros(len(texts), dtype=bool)
    allowed[-1] = True
    positions, _ = index.search("tea", 3, alive, allowed)
    assert positions.tolist() == [30]


def test_ties_are_broken_by_position_and_k_bounds_the_answer() -> None:
    index = TextIndex.of(["plum"] * 5)
    positions, scores = index.search("plum", 3, np.ones(5, dtype=bool))
    assert positions.tolist() == [0, 1, 2]
    assert len(set(scores.tolist())) == 1
    assert index.search("plum", 0, np.ones(5, dtype=bool))[0].tolist() == []
    assert index.search("the of", 3, np.ones(5, dtype=bool))[0].tolist() == []


def test_renumbered_after_compaction_answers_like_a_fresh_index() -> None:
    texts = ["alpha beta", "beta gamma", "gamma delta", "delta alpha", "epsilon"]
    index = TextIndex.of(texts)
    index.extend(["beta beta zeta"])
    keep = np.array([1, 3, 5])
    renumbered = index.renumbered(keep)
    fresh = TextIndex.of([(texts + ["beta beta zeta"])[i] for i in keep])
    alive = np.ones(3, dtype=bool)
    for query in ["beta", "alpha delta", "zeta", "epsilon"]:
        a_pos, a_scores = renumbered.search(query, 5, alive)
        b_pos, b_scores = fresh.search(query, 5, alive)
        assert a_pos.tolist() == b_pos.tolist(), query
        assert a_scores.tolist() == pytest.approx(b_scores.tolist())
    assert renumbered.size == 3


def _row(row_id: str, content: str) -> IndexRow:
    return index_row(row_id, content, content_hash="same-for-every-row")  # words are compared


def _answers(index: MemoryIndex, query: str) -> list[tuple[str, float]]:
    return [(h.row.id, round(h.score, 4)) for h in index.text_search(query, 10)]


def test_a_reader_that_reloads_carries_the_postings_of_unchanged_rows_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index"
    writer = MemoryIndex.open(path, HashEmbedder("fake", 16))
    writer.upsert([_row(f"r{i}", text) for i, text in enumerate(TEXTS)])
    reader = MemoryIndex.open(path, HashEmbedder("fake", 16), may_rebuild=False, refresh_seconds=0)
    assert _answers(reader, "Lisbon")  # builds the reader's postings

    # Another process adds a row, rewrites one and deletes one.
    writer.upsert([_row("r1", "Tomas: my sister sold the bakery in Lisbon")])
    writer.upsert([_row("new", "Noor: the billing migration to PostgreSQL is done")])
    writer.delete(["r4"])
    carried = []
    original = Resident.carry_text_from

    def spy(self: Resident, old: Resident) -> int:
        carried.append(original(self, old))
        return carried[-1]

    Resident.carry_text_from = spy  # type: ignore[method-assign]
    try:
        answers = {q: _answers(reader, q) for q in QUERIES + ["bakery Lisbon", "done"]}
    finally:
        Resident.carry_text_from = original  # type: ignore[method-assign]
    assert carried and carried[0] > 0  # the unchanged rows were not read again

    fresh = MemoryIndex.open(path, HashEmbedder("fake", 16), may_rebuild=False)
    for query, found in answers.items():
        assert found == _answers(fresh, query), query
    assert all("r4" not in [i for i, _ in found] for found in answers.values())
    assert [i for i, _ in answers["done"]] == ["new"]
