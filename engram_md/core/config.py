"""Configuration: read once at the entry point (CLI / daemon), then passed down explicitly.

Precedence, lowest to highest: built-in defaults < the YAML file < environment variables <
command-line flags. ``config.example.yaml`` documents every key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .paths import MemoryLayout


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMConfig(_Section):
    api_key: str | None = None
    base_url: str | None = None
    model: str = "gpt-4.1-mini"
    # auto: the Responses API with structured output when talking to OpenAI itself,
    # chat completions in JSON mode when base_url points at another compatible server.
    api: Literal["auto", "responses", "chat"] = "auto"
    timeout_seconds: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    backoff_seconds: float = Field(default=1.0, ge=0)
    # Bounds a runaway answer, not a full batch: ten turns of two people talking can hold more
    # than 12 memories, and on the LoCoMo dev conversations a cap of 12 dropped 12% of the
    # facts once batches grew from 5 turns to 10 (bench/pipeline_bench.py, fake server).
    max_facts_per_call: int = Field(default=30, ge=1)
    temperature: float | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.api_key or self.base_url)


LLM_BATCH_TURNS = 10
OFFLINE_BATCH_TURNS = 5


class BufferConfig(_Section):
    # Turns per batch; unset: 10 when an LLM extracts (each batch is a call), 5 offline, where
    # a batch costs nothing and smaller ones keep the offline extractor's episodes on one
    # subject (offline at 10, LoCoMo dev evidence recall at 500 tokens fell 0.850 -> 0.846).
    max_turns: int | None = Field(default=None, ge=1)
    max_minutes: float = Field(default=15.0, gt=0)
    # A strong signal cuts its batch at once (with an LLM only an urgent one: a correction,
    # "remember that…", a standing rule; Signal.urgent), so a live agent's memory has it
    # within seconds. An import turns this off: its conversations are over, and each is
    # extracted in batches of max_turns (README, "Bring your history").
    high_signal_now: bool = True

    def batch_turns(self, *, llm: bool) -> int:
        """``max_turns``, or the default for the extractor in use (see above)."""
        if self.max_turns is not None:
            return self.max_turns
        return LLM_BATCH_TURNS if llm else OFFLINE_BATCH_TURNS

    # Wall clock: the daemon extracts a session that received nothing for this long (0: never).
    idle_flush_minutes: float = Field(default=15.0, ge=0)
    # ... and one holding a strong signal that is not urgent (a plan, a preference, a
    # decision) after this many seconds of quiet (0: it waits like the others).
    signal_idle_seconds: float = Field(default=60.0, ge=0)
    # fsync every journal append (survives an OS crash) or only at batch boundaries.
    fsync: Literal["always", "batch"] = "always"


class SignalConfig(_Section):
    high_patterns: list[str] = Field(default_factory=list)
    medium_patterns: list[str] = Field(default_factory=list)


class SanitizeConfig(_Section):
    max_turn_chars: int = Field(default=4000, ge=100)
    redact_secrets: bool = True
    # Card numbers, national ids (SSN, NINO, BSN, SIN, Aadhaar, DNI) and IBANs; false keeps them.
    redact_personal_data: bool = True


class SaidConfig(_Section):
    # Keep the person's own words in memory/said/ and search them at recall beside the facts.
    enabled: bool = True


class OfflineConfig(_Section):
    min_chunk_tokens: int = Field(default=50, ge=1)
    max_chunk_tokens: int = Field(default=300, ge=10)
    # Seed 004 drops chunks under 0.3; on the LoCoMo dev conversations that dropped 8% of the
    # turns later asked about (evidence recall 0.812 -> 0.836 at 0.15; 0.829 at 0.25).
    min_importance: float = Field(default=0.15, ge=0, le=1)


class EmbeddingConfig(_Section):
    provider: Literal["local", "openai"] = "local"
    model: str = "all-MiniLM-L6-v2"
    api_key: str | None = None
    base_url: str | None = None
    batch_size: int = Field(default=32, ge=1)


class DedupConfig(_Section):
    # Near-duplicate detection at write time (cosine on the index); see docs/ARCHITECTURE.md.
    near_duplicate: bool = True
    cosine_threshold: float = Field(default=0.92, ge=0, le=1)
    token_overlap_threshold: float = Field(default=0.6, ge=0, le=1)


class RecallConfig(_Section):
    budget_tokens: int = Field(default=1000, ge=1)
    # Sentences of what was said are ~20 tokens: 100 of them fill the default budget.
    top_k: int = Field(default=100, ge=1)
    include_inactive: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)  # 0: pick a free port, advertised in state/


class BoxConfig(_Section):
    # Memory boxes: facts that happened together in one session (docs/ARCHITECTURE.md).
    enabled: bool = True
    max_memories: int = Field(default=50, ge=1)  # seal before a box would exceed this many
    # A fact is on a box's subject when its vector's cosine with the subject's mean vector is
    # at least min_similarity (without an embedder: its topics overlap at least
    # min_topic_overlap); shift_after facts in a row off it, on one new subject, seal the box.
    min_similarity: float = Field(default=0.5, ge=-1, le=1)
    min_topic_overlap: float = Field(default=0.35, ge=0, le=1)
    shift_after: int = Field(default=2, ge=1)
    idle_minutes: float = Field(default=30.0, gt=0)  # seal after this much transcript silence


class TraceConfig(_Section):
    # Traces: sealed boxes about the same thread of work, linked over days. A sealed box
    # joins the trace of the box within window_days whose topics overlap its own most, at
    # least min_overlap (bench/boxes_bench.py).
    min_overlap: float = Field(default=0.2, ge=0, le=1)
    window_days: float = Field(default=14.0, gt=0)


class GraphConfig(_Section):
    # Entity, time and causal edges between facts (state/graphs/*.jsonl).
    enabled: bool = True
    reinforce: float = Field(default=0.05, ge=0, le=1)  # added when an edge is seen again
    decay: float = Field(default=0.1, ge=0, le=1)  # taken per decay window by consolidation
    decay_window_days: float = Field(default=90.0, gt=0)
    grace_days: float = Field(default=90.0, ge=0)  # no decay before this age
    floor: float = Field(default=0.1, ge=0, le=1)
    # Recall: spreading activation from the seeds, then PageRank, blended with the seed score.
    min_edge: float = Field(default=0.2, ge=0, le=1)  # weaker edges are ignored
    max_hops: int = Field(default=3, ge=0)
    hop_decay: float = Field(default=0.7, ge=0, le=1)
    pagerank_iterations: int = Field(default=8, ge=0)


class StorageOptions(_Section):
    # How to reach an s3:// index (an S3-compatible store); each may come from the usual AWS
    # environment variables instead (ENV_OVERRIDES), so secrets need not sit in the file.
    endpoint: str | None = None
    region: str | None = None
    allow_http: bool = False  # plain http, e.g. a store on this machine or a private network
    access_key_id: str | None = Field(default=None, repr=False)
    secret_access_key: str | None = Field(default=None, repr=False)


class IndexConfig(_Section):
    # Where the search index lives: None is state/index on this machine; s3://bucket/prefix
    # puts it in an object store, where read-only recall daemons on other machines follow it.
    uri: str | None = None
    storage_options: StorageOptions = StorageOptions()
    # A read-only daemon looks for a newer table version before a recall at most this often.
    refresh_seconds: float = Field(default=2.0, gt=0)


class ConsolidateConfig(_Section):
    every_extractions: int = Field(default=50, ge=0)  # the daemon consolidates this often; 0: never
    min_interval_minutes: float = Field(default=10.0, ge=0)  # ... and at most this often
    max_retire_fraction: float = Field(default=0.25, ge=0, le=1)  # safety rail, --force overrides
    resolved_commitment_days: float = Field(default=90.0, ge=0)
    archive_age_days: float = Field(default=90.0, ge=0)
    archive_max_importance: float = Field(default=0.3, ge=0, le=1)
    archive_max_access: int = Field(default=2, ge=0)
    protected_categories: list[str] = Field(
        default_factory=lambda: ["decision", "principle", "commitment", "preference"]
    )
    profile_max_lines: int = Field(default=60, ge=1)
    identity_max_bytes: int = Field(default=8192, ge=256)


class Config(_Section):
    memory_dir: Path = Path("memory")
    state_dir: Path = Path("state")
    llm: LLMConfig = LLMConfig()
    buffer: BufferConfig = BufferConfig()
    signals: SignalConfig = SignalConfig()
    sanitize: SanitizeConfig = SanitizeConfig()
    said: SaidConfig = SaidConfig()
    offline: OfflineConfig = OfflineConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    dedup: DedupConfig = DedupConfig()
    recall: RecallConfig = RecallConfig()
    boxes: BoxConfig = BoxConfig()
    traces: TraceConfig = TraceConfig()
    graph: GraphConfig = GraphConfig()
    consolidate: ConsolidateConfig = ConsolidateConfig()
    index: IndexConfig = IndexConfig()

    @property
    def layout(self) -> MemoryLayout:
        """Where every file of this folder lives: the one place a layout is made from config."""
        return MemoryLayout(self.memory_dir, self.state_dir)


# Environment variable -> dotted config key.
ENV_OVERRIDES = {
    "ENGRAM_MEMORY_DIR": "memory_dir",
    "ENGRAM_STATE_DIR": "state_dir",
    "OPENAI_API_KEY": "llm.api_key",
    "OPENAI_BASE_URL": "llm.base_url",
    "ENGRAM_LLM_MODEL": "llm.model",
    "AWS_ACCESS_KEY_ID": "index.storage_options.access_key_id",
    "AWS_SECRET_ACCESS_KEY": "index.storage_options.secret_access_key",
    "AWS_REGION": "index.storage_options.region",
    "AWS_ENDPOINT_URL": "index.storage_options.endpoint",
}


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def load_config(
    path: Path | None = None,
    *,
    env: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Config:
    """Build the configuration from a YAML file, the environment and explicit overrides.

    ``path`` may be None (defaults only); a path that is given must exist.
    ``overrides`` maps dotted keys (``"llm.model"``) to values; None values are ignored.
    """
    env = dict(os.environ) if env is None else env
    data: dict[str, Any] = {}
    if path is None and env.get("ENGRAM_CONFIG"):
        path = Path(env["ENGRAM_CONFIG"])
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data = loaded
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            _set_dotted(data, dotted, env[var])
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, dotted, value)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        where = f" in {path}" if path else ""
        raise ConfigError(f"invalid configuration{where}: {problems}") from exc
