"""`engram-md status`: what is in the memory folder and how the pipeline is doing.

Read-only: it takes no lock, so it works while the daemon runs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ..core.config import Config
from ..core.errors import MemoryFileError
from ..core.statefile import load_json
from ..ingest.journal import pending_count
from ..store.dedup import HashIndex
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact


def collect_status(cfg: Config) -> dict[str, Any]:
    layout = cfg.layout
    store = MemoryStore(layout, HashIndex(layout.hashes_path, {}))
    by_category: dict[str, Counter[str]] = defaultdict(Counter)
    by_kind: Counter[str] = Counter()
    broken: list[str] = []
    for path in store.fact_paths():
        try:
            fact = read_fact(path)
        except MemoryFileError as exc:
            broken.append(str(exc))
            continue
        by_category[fact.category.value][fact.status.value] += 1
        by_kind[fact.memory_kind.value] += 1
    run_state = load_json(layout.run_state_path, {})
    return {
        "memoryDir": str(layout.memory_dir),
        "byCategory": {k: dict(v) for k, v in by_category.items()},
        "byKind": dict(by_kind),
        "total": sum(by_kind.values()),
        "bufferDepth": pending_count(layout.journal_path),
        "extractions": run_state.get("extractions", 0),
        "lastExtraction": run_state.get("lastExtraction"),
        "llm": load_json(layout.usage_path, {}),
        "broken": broken,
    }
