"""Embedders: the real local model, the on-disk cache, and the OpenAI-compatible client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram_md.core.config import EmbeddingConfig
from engram_md.core.errors import EmbeddingError
from engram_md.text.embeddings import (
    MINILM_DIM,
    MINILM_MODEL_ID,
    SCRUBBED_KEY,
    CachedEmbedder,
    LocalMiniLM,
    OpenAIEmbedder,
    l2_normalize,
    make_embedder,
)

from .conftest import HashEmbedder
from .fake_openai import FakeOpenAI, fake_embedding


def CountingFake(dim: int = 8, model_id: str = "fake-model") -> HashEmbedder:  # noqa: N802
    return HashEmbedder(model_id, dim)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# ---- LocalMiniLM


def test_minilm_gives_384_d_unit_float32_vectors(minilm: LocalMiniLM) -> None:
    vectors = minilm.embed(["The cat sits on the mat", "", "ünïcödé — 日本語のテキスト"])
    assert minilm.dim == MINILM_DIM == 384
    assert minilm.model_id == MINILM_MODEL_ID
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_puts_paraphrases_closer_than_unrelated_text(minilm: LocalMiniLM) -> None:
    cat, feline, stocks = minilm.embed(
        ["The cat sits on the mat", "A feline rests on a rug", "Stock markets fell sharply"]
    )
    assert cos(cat, feline) > cos(cat, stocks) + 0.2
    uv, pip_pref, weather = minilm.embed(
        [
            "Dana wants shell commands to use uv instead of pip",
            "Dana prefers uv over pip for installing Python packages",
            "It rained all afternoon in Lisbon",
        ]
    )
    assert cos(uv, pip_pref) > cos(uv, weather) + 0.2


def test_minilm_batching_by_length_keeps_the_input_order() -> None:
    # Lengths deliberately out of order and more texts than one batch (batch_size=4).
    minilm = LocalMiniLM(batch_size=4)
    texts = [
        "word " * 40,
        "short",
        "a medium length sentence about gardening",
        "x",
        "another long sentence " * 10,
        "tea",
        "the quarterly report is due on friday afternoon",
        "hi there",
        "z " * 100,
    ]
    together = minilm.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    # Padding within a batch is masked out, so each row matches the text embedded alone.
    np.testing.assert_allclose(together, alone, atol=1e-4)
    # And rows are really distinct (a swapped order would show up).
    sims = together @ together.T
    assert all(np.argmax(sims[i]) == i for i in range(len(texts)))


def test_minilm_truncates_long_text_instead_of_failing(minilm: LocalMiniLM) -> None:
    long = "memory " * 2000  # far past 256 tokens
    head = "memory " * 300
    a, b = minilm.embed([long, head])
    assert cos(a, b) > 0.999  # both see the same first 256 tokens


def test_make_embedder_picks_the_local_model_and_refuses_unknown_local_names(
    tmp_path: Path,
) -> None:
    plain = make_embedder(EmbeddingConfig(), None)
    assert isinstance(plain, LocalMiniLM)
    cached = make_embedder(EmbeddingConfig(), tmp_path / "cache")
    assert isinstance(cached, CachedEmbedder)
    assert cached.model_id == MINILM_MODEL_ID
    with pytest.raises(EmbeddingError, match="only runs all-MiniLM-L6-v2"):
        make_embedder(EmbeddingConfig(model="bge-large"), None)


# ---- CachedEmbedder


def test_cache_returns_identical_vectors_without_calling_the_inner_model(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbedder(inner, tmp_path / "cache")
    first = cache.embed(["alpha", "beta", "alpha"])
    assert inner.embedded == ["alpha", "beta"]  # a repeat within one call is computed once
    np.testing.assert_array_equal(first[0], first[2])

    second = cache.embed(["beta", "alpha"])
    assert len(inner.calls) == 1
    np.testing.assert_array_equal(second, first[[1, 0]])

    # A new process (a new wrapper over the same folder) reads the vectors back from disk.
    reopened_inner = CountingFake()
    reopened = CachedEmbedder(reopened_inner, tmp_path / "cache")
    np.testing.assert_array_equal(reopened.embed(["alpha", "beta"]), first[:2])
    assert reopened_inner.calls == []
    assert reopened.dim == 8


def test_cache_only_computes_the_misses_of_a_mixed_batch(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbedder(inner, tmp_path)
    cache.embed(["one", "two"])
    out = cache.embed(["two", "three", "one", "four"])
    assert inner.calls[-1] == ["three", "four"]
    expected = l2_normalize(
        np.array([fake_embedding(t, 8) for t in ["two", "three", "one", "four"]])
    )
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_cache_survives_a_truncated_tail(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbedder(inner, tmp_path)
    good = cache.embed(["kept", "torn"])
    (vecs,) = tmp_path.glob("*.f32")
    (keys,) = tmp_path.glob("*.keys")
    # A crash mid-append: half of the last vector and part of its key are on disk.
    vecs.write_bytes(vecs.read_bytes()[: -4 * 8 // 2])
    keys.write_bytes(keys.read_bytes()[:-3])

    inner2 = CountingFake()
    reopened = CachedEmbedder(inner2, tmp_path)
    again = reopened.embed(["kept", "torn", "new"])
    assert inner2.embedded == ["torn", "new"]  # the torn row is recomputed, the whole one kept
    np.testing.assert_array_equal(again[:2], good)
    # The partial record was cut away before appending, so the files are whole records again.
    assert vecs.stat().st_size == 3 * 4 * 8
    assert keys.stat().st_size == 3 * 8
    third = CachedEmbedder(CountingFake(), tmp_path)
    np.testing.assert_array_equal(third.embed(["kept", "torn", "new"]), again)


def test_cache_keeps_models_and_widths_apart(tmp_path: Path) -> None:
    small = CachedEmbedder(CountingFake(dim=8, model_id="model-a"), tmp_path)
    small.embed(["same text"])
    other_inner = CountingFake(dim=16, model_id="model-b")
    other = CachedEmbedder(other_inner, tmp_path)
    vector = other.embed(["same text"])
    assert other_inner.embedded == ["same text"]  # not served from model-a's file
    assert vector.shape == (1, 16)
    assert len(list(tmp_path.glob("*.keys"))) == 2


def test_cache_handles_many_entries_quickly(tmp_path: Path) -> None:
    import time

    inner = CountingFake(dim=32)
    texts = [f"memory number {i}" for i in range(20_000)]
    vectors = l2_normalize(np.random.default_rng(0).standard_normal((20_000, 32)))
    inner.embed = lambda batch: vectors[: len(batch)]  # type: ignore[method-assign]
    CachedEmbedder(inner, tmp_path).embed(texts)
    started = time.perf_counter()
    reopened = CachedEmbedder(CountingFake(dim=32), tmp_path)
    out = reopened.embed(texts[::-1])
    elapsed = time.perf_counter() - started
    np.testing.assert_array_equal(out, vectors[::-1])
    assert elapsed < 2.0


# ---- OpenAIEmbedder against the fake server


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dim=12, timeout_sleep=2.0) as fake:
        yield fake


def _cfg(server: FakeOpenAI, **values: object) -> EmbeddingConfig:
    return EmbeddingConfig(
        provider="openai",
        model="text-embedding-3-small",
        base_url=server.base_url,
        api_key="test-key",
        **values,  # type: ignore[arg-type]
    )


def test_openai_embedder_batches_and_normalizes(server: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(_cfg(server, batch_size=2))
    assert embedder.model_id == "openai:text-embedding-3-small"
    texts = ["alpha", "beta", "", "gamma", "delta"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (5, 12)
    assert vectors.dtype == np.float32
    assert embedder.dim == 12  # learned from the answer, no extra request
    requests = server.requests_to("embeddings")
    assert [r.body["input"] for r in requests] == [["alpha", "beta"], [" ", "gamma"], ["delta"]]
    assert all(r.body["model"] == "text-embedding-3-small" for r in requests)
    np.testing.assert_allclose(vectors[3], fake_embedding("gamma", 12), atol=1e-6)


def test_openai_embedder_dim_probes_once_when_asked_first(server: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(_cfg(server))
    assert embedder.dim == 12
    assert embedder.dim == 12
    assert len(server.requests_to("embeddings")) == 1


@pytest.mark.parametrize("fault", ["500", "malformed", "empty", "junk_schema"])
def test_openai_embedder_failures_become_embedding_errors(server: FakeOpenAI, fault: str) -> None:
    embedder = OpenAIEmbedder(_cfg(server), timeout=0.5, max_retries=0)
    server.script(fault, endpoint="embeddings")
    with pytest.raises(EmbeddingError):
        embedder.embed(["alpha"])


def test_openai_embedder_timeout_after_retries_is_an_embedding_error(server: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(_cfg(server), timeout=0.2, max_retries=1)
    server.script("timeout", "timeout", endpoint="embeddings")
    with pytest.raises(EmbeddingError, match="failed"):
        embedder.embed(["alpha"])
    assert len(server.requests_to("embeddings")) == 2  # the client's own retry happened


def test_openai_embedder_retries_a_transient_5xx(server: FakeOpenAI) -> None:
    embedder = OpenAIEmbedder(_cfg(server), timeout=1.0, max_retries=2)
    server.script("500", endpoint="embeddings")
    vectors = embedder.embed(["alpha"])
    np.testing.assert_allclose(vectors[0], fake_embedding("alpha", 12), atol=1e-6)


def test_openai_embedder_behind_the_cache(server: FakeOpenAI, tmp_path: Path) -> None:
    cached = make_embedder(_cfg(server), tmp_path)
    first = cached.embed(["alpha", "beta"])
    again = make_embedder(_cfg(server), tmp_path)
    np.testing.assert_array_equal(again.embed(["beta", "alpha"]), first[::-1])
    assert again.dim == 12
    assert len(server.requests_to("embeddings")) == 1  # the second wrapper never asked


def test_cache_scrub_forgets_a_text_where_its_record_is(tmp_path: Path) -> None:
    inner = CountingFake()
    cache = CachedEmbedder(inner, tmp_path)
    before = cache.embed(["kept", "forgotten", "other"])
    (keys,) = tmp_path.glob("*.keys")
    (vecs,) = tmp_path.glob("*.f32")
    sizes = (keys.stat().st_size, vecs.stat().st_size)

    assert cache.scrub(["forgotten", "never cached", ""]) == 1

    # The record keeps its place (readers address rows by position): key and vector blanked.
    assert (keys.stat().st_size, vecs.stat().st_size) == sizes
    stored = np.fromfile(keys, "<u8")
    assert stored[1] == SCRUBBED_KEY and cache.key("forgotten") not in set(stored.tolist())
    rows = np.fromfile(vecs, "<f4").reshape(3, 8)
    assert not rows[1].any()
    np.testing.assert_array_equal(rows[[0, 2]], before[[0, 2]])
    assert cache.scrub(["forgotten"]) == 0
    # Neither this wrapper nor a new one answers for the text from the cache any more.
    reopened_inner = CountingFake()
    reopened = CachedEmbedder(reopened_inner, tmp_path)
    np.testing.assert_array_equal(reopened.embed(["kept", "forgotten"]), before[:2])
    assert reopened_inner.embedded == ["forgotten"]
    cache.embed(["forgotten", "other"])
    assert inner.embedded[-1:] == ["forgotten"]
    assert CachedEmbedder(CountingFake(), tmp_path / "none").scrub(["kept"]) == 0
