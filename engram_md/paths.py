"""Where everything lives. The one place that turns names into paths.

Every path built from input (categories, ids, session names) goes through :func:`safe_slug`
or :meth:`MemoryLayout.inside`, so no name from a transcript can place a file outside the
memory folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import regex

_SLUG_DROP = regex.compile(r"[^\p{L}\p{N}]+")


def safe_slug(name: str, *, fallback: str = "x", max_len: int = 64) -> str:
    """A file-name-safe slug: letters and digits joined by single hyphens, lowercase."""
    slug = _SLUG_DROP.sub("-", name.casefold()).strip("-")[:max_len].strip("-")
    return slug or fallback


@dataclass(frozen=True)
class MemoryLayout:
    memory_dir: Path
    state_dir: Path

    # ---- memory/ (the truth, reviewed with git)
    @property
    def facts_dir(self) -> Path:
        return self.memory_dir / "facts"

    @property
    def boxes_dir(self) -> Path:
        return self.memory_dir / "boxes"

    @property
    def entities_dir(self) -> Path:
        return self.memory_dir / "entities"

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / "archive"

    @property
    def profile_path(self) -> Path:
        return self.memory_dir / "profile.md"

    @property
    def identity_path(self) -> Path:
        return self.memory_dir / "IDENTITY.md"

    def fact_path(self, category: str, created: datetime, hash8: str) -> Path:
        day = created.strftime("%Y-%m-%d")
        name = f"{safe_slug(category)}-{created.strftime('%H%M%S')}-{safe_slug(hash8)}.md"
        return self.inside(self.facts_dir / day / name)

    def inside(self, path: Path) -> Path:
        """Refuse any path that would resolve outside the memory folder."""
        root = self.memory_dir.resolve()
        resolved = path.resolve()
        if resolved != root and root not in resolved.parents:
            raise ValueError(f"refusing to write outside the memory folder: {path}")
        return path

    def relative(self, path: Path) -> str:
        """Path relative to the memory folder, with forward slashes (ids in the index)."""
        return path.resolve().relative_to(self.memory_dir.resolve()).as_posix()

    # ---- state/ (machine-local, rebuildable except journal and telemetry)
    @property
    def journal_path(self) -> Path:
        return self.state_dir / "buffer-journal.jsonl"

    @property
    def hashes_path(self) -> Path:
        return self.state_dir / "fact-hashes.txt"

    @property
    def actions_path(self) -> Path:
        return self.state_dir / "memory-actions.jsonl"

    @property
    def cursors_path(self) -> Path:
        return self.state_dir / "cursors.json"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    @property
    def usage_path(self) -> Path:
        return self.state_dir / "llm-usage.json"

    @property
    def run_state_path(self) -> Path:
        return self.state_dir / "run-state.json"

    @property
    def speakers_path(self) -> Path:
        return self.state_dir / "speakers.json"

    @property
    def index_dir(self) -> Path:
        return self.state_dir / "index"

    @property
    def embedding_cache_dir(self) -> Path:
        return self.state_dir / "embeddings"

    @property
    def access_path(self) -> Path:
        return self.state_dir / "access.jsonl"

    @property
    def daemon_endpoint_path(self) -> Path:
        return self.state_dir / "daemon.json"

    @property
    def open_box_path(self) -> Path:
        return self.state_dir / "open-box.json"

    @property
    def traces_path(self) -> Path:
        return self.state_dir / "traces.json"

    @property
    def graphs_dir(self) -> Path:
        return self.state_dir / "graphs"

    @property
    def topics_path(self) -> Path:
        return self.state_dir / "topics.json"

    @property
    def compression_guidelines_path(self) -> Path:
        return self.state_dir / "compression-guidelines.md"

    @property
    def consolidation_state_path(self) -> Path:
        """The epoch counter and when consolidation last ran."""
        return self.state_dir / "consolidation.json"

    @property
    def reports_dir(self) -> Path:
        """One markdown report per consolidation run."""
        return self.state_dir / "reports"

    def ensure(self) -> None:
        self.memory_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
