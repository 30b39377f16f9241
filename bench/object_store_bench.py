"""Recall latency with the index in an S3-compatible object store, beside the local one.

    python -m bench.object_store_bench [--size 10000] [--queries 200]

One memory folder of synthetic fact files (bench/latency_bench.py's statements) is indexed
twice by the writer: into a folder on disk, and into s3://engram-bench/index on moto's S3
server, started here on 127.0.0.1. Then a reader on a state folder of its own opens each
index and recall is timed through the Recaller in this process (p50/p95 over the same
queries, after a warm-up; access not recorded; the two readers take turns query by query).
Also reported: how long opening each reader took, the first recall included (the resident
copy is read from the store then), and how long the writer took to index the folder and
compact the table (for s3, with the embeddings the local pass computed).

The object store is on loopback, so the figures show what LanceDB's S3 path costs (requests,
no network); a store across a network adds its round trips to the text search, which LanceDB
answers from the store on every recall, and to each freshness check (index.refresh_seconds).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from engram_md.app import make_recaller, open_writer
from engram_md.app import open_reader as open_folder_reader
from engram_md.core.config import Config, load_config
from engram_md.recall.recaller import Recaller
from engram_md.recall.wire import RecallOptions

from .latency_bench import WARMUP, _ms_stats, _write_chunk, make_candidates, make_queries

BUCKET = "engram-bench"
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}


def _config(root: Path, memory_dir: Path, name: str, uri: str, endpoint: str) -> Config:
    """A machine's config: its own state folder, the index at ``uri`` (a folder or s3://)."""
    overrides = {
        "memory_dir": memory_dir,
        "state_dir": root / name,
        "index.uri": uri,
        "index.storage_options.endpoint": endpoint,
        "index.storage_options.allow_http": True,
        "index.storage_options.region": "us-east-1",
    }
    return load_config(None, env=dict(_CREDENTIALS), overrides=overrides)


def _recall_latency(readers: dict[str, Config], queries: Sequence[str]) -> dict[str, Any]:
    """Open a reader on each config's index, then time recall through each one's Recaller,
    the readers taking turns query by query (and in turn first), so a busy moment of the
    machine falls on both alike."""
    quiet = RecallOptions(record_access=False)
    with ExitStack() as stack:
        recallers: dict[str, Recaller] = {}
        out: dict[str, dict[str, Any]] = {}
        for name, cfg in readers.items():
            started = time.perf_counter()
            parts = stack.enter_context(open_folder_reader(cfg))
            recallers[name] = make_recaller(parts)
            recallers[name].recall(queries[0], quiet)  # loads the resident copy
            assert parts.index is not None
            out[name] = {
                "open_s": round(time.perf_counter() - started, 2),
                "rows": parts.index.count(),
            }
        for query in queries[:WARMUP]:
            for recaller in recallers.values():
                recaller.recall(query, quiet)
        samples: dict[str, list[float]] = {name: [] for name in recallers}
        order = list(recallers)
        for query in queries:
            for name in order:
                t0 = time.perf_counter()
                recallers[name].recall(query, quiet)
                samples[name].append(time.perf_counter() - t0)
            order.reverse()
    gc.collect()
    return {name: {**_ms_stats(samples[name]), **out[name]} for name in readers}


def run(size: int = 10_000, n_queries: int = 200) -> dict[str, Any]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs every request
    root = Path(tempfile.mkdtemp(prefix="engram-object-store-bench-"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)
        memory_dir = root / "memory"
        # In this process: LanceDB is loaded already, and forking a process pool after that
        # risks a deadlock in its runtime (LanceDB warns so).
        written = _write_chunk(memory_dir, make_candidates(size))
        queries = make_queries(n_queries)
        result: dict[str, Any] = {"facts": written, "queries": n_queries}
        readers: dict[str, Config] = {}
        indexing: dict[str, float] = {}
        for name, where in (("local", str(root / "index")), ("s3", f"s3://{BUCKET}/index")):
            writer = _config(root, memory_dir, f"writer-{name}", where, endpoint)
            if name == "s3":
                # The same vectors: the local writer's embedding cache spares a second pass.
                shutil.copytree(
                    root / "writer-local" / "embeddings",
                    writer.layout.embedding_cache_dir,
                    dirs_exist_ok=True,
                )
            started = time.perf_counter()
            with open_writer(writer) as parts:  # reconciles: indexes the whole folder
                assert parts.index is not None
                # As after any bulk load: rows written since the last compaction are scanned
                # one by one by text search, which from a store costs a read per recall.
                parts.index.optimize()
            index_s = round(time.perf_counter() - started, 1)
            readers[name] = _config(root, memory_dir, f"reader-{name}", where, endpoint)
            indexing[name] = index_s
        for name, figures in _recall_latency(readers, queries).items():
            result[name] = {**figures, "index_s": indexing[name]}
        result["load"] = round(os.getloadavg()[0], 2)
        result["note"] = "s3 index_s reuses the local writer's embeddings (its cache, copied)"
        return result
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.size, args.queries), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
