"""The MiniLM graph prepared once per machine: its int8 weights turned into float32 ahead of time.

The shipped model stores its weights as int8 with a Cast and a scale before each MatMul.
onnxruntime folds those into float32 constants every time it opens the file, and pays for it
in memory: the session took 160 MB more than the process had before (285 MB at its peak while
folding), the largest single part of a daemon's or an ingest's size. Saving the folded graph
once, with its weights in a separate file (onnxruntime's external initializers), and opening
that instead costs 52 MB (130 MB peak) for the same vectors bit for bit and the same speed
(measured in the README's "Dependencies" section and benchmark table).

Where it lives: ``$ENGRAM_MD_MODEL_CACHE``, else ``$XDG_CACHE_HOME/engram-md/models``, else
``~/.cache/engram-md/models`` — one folder per model file and onnxruntime version (a graph
saved by one version is not promised to load in another). The folding itself runs in a child
process, so not even the first run of a machine carries its peak; a folder that cannot be
written or a child that fails leaves the caller with the shipped file, opened as before.
Deleting the cache is always safe.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import xxhash

log = logging.getLogger(__name__)

GRAPH_NAME = "model.onnx"
WEIGHTS_NAME = "model.data"
# A child that has not folded the graph in this long is given up (it takes ~2 s).
PREPARE_TIMEOUT_SECONDS = 120.0


def model_cache_dir() -> Path:
    """Where prepared models are kept on this machine."""
    explicit = os.environ.get("ENGRAM_MD_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "engram-md" / "models"


def prepared_dir(source: Path, runtime_version: str) -> Path:
    """The folder of the prepared form of ``source`` for this onnxruntime version."""
    digest = xxhash.xxh64_hexdigest(source.read_bytes())
    return model_cache_dir() / f"{source.stem}-{digest}-ort{runtime_version}"


def prepared_model(source: Path, runtime_version: str) -> Path | None:
    """The prepared graph of ``source``, made now if this machine has none; None when it
    cannot be had (the caller then opens ``source`` itself)."""
    try:
        folder = prepared_dir(source, runtime_version)
    except OSError as exc:
        log.warning("cannot read the embedding model %s: %s", source, exc)
        return None
    graph = folder / GRAPH_NAME
    if graph.is_file() and (folder / WEIGHTS_NAME).is_file():
        return graph
    try:
        result = subprocess.run(
            [sys.executable, "-m", __name__, str(source), str(folder)],
            capture_output=True,
            timeout=PREPARE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("could not prepare the embedding model (%s); using the shipped file", exc)
        return None
    if result.returncode != 0 or not graph.is_file():
        reason = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        log.warning("could not prepare the embedding model (%s); using the shipped file", reason[0])
        return None
    return graph


def prepare(source: Path, folder: Path) -> None:
    """Fold the graph of ``source`` into ``folder`` (graph + weights), atomically: the files
    are written into a temporary folder beside it, which is then renamed into place."""
    import onnxruntime as ort  # the child's only work; the parent imported it already

    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # Basic optimizations only (constant folding among them): what they produce runs on
        # any CPU; the layout-specific ones are applied each time the prepared graph opens.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(work / GRAPH_NAME)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", WEIGHTS_NAME
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        for name in (GRAPH_NAME, WEIGHTS_NAME):
            with open(work / name, "rb") as handle:
                os.fsync(handle.fileno())
        try:
            os.replace(work, folder)
        except OSError:
            if not (folder / GRAPH_NAME).is_file():
                raise
            # Another process prepared it first: theirs stands.
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    prepare(Path(sys.argv[1]), Path(sys.argv[2]))
