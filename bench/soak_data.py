"""The soak's input and its audit: what went into a memory folder, and where each turn went.

Input: the LoCoMo dev turns (:mod:`bench.locomo`) replayed as many times as needed, each
replay shifted by the span of the data plus a day and given its own session and turn ids, so
every line is a new turn to the daemon while the text, and therefore the extraction work,
stays realistic. Ids are ``<conversation>.r<replay>.<dia_id>``, unique across the stream,
because a fact's ``sourceTurnIds`` carry turn ids without their session.

Audit: every turn sent is put in the first of these places that holds it —

* ``confirmed``  — it re-stated a stored fact: an ``update_note`` confirmation in
  ``state/memory-actions.jsonl`` names it (the fact's ``sourceTurnIds`` gain it too, among
  the latest it keeps);
* ``fact``       — named in some fact file's ``sourceTurnIds`` (live or archived), or in the
  ``store_*`` action that wrote a fact whose file is there (a fact keeps the first 16 turns
  it came from, so a longer list is complete only in the action log);
* ``discarded``  — a ``discard`` action in the telemetry names it, with a reason;
* ``no_memory``  — the journal marks it ``done`` (its batch was extracted, or needed no
  extraction) and nothing was worth remembering in it;
* ``pending``    — journaled but not done yet: kept for retry, not lost;
* ``empty``      — nothing left after sanitizing, so never journaled (checked independently);
* ``lost``       — none of the above. Must be zero.

The journal is the ground truth for "done": the pipeline writes ``done`` for a batch only
after its memories are written (``engram_md/pipeline.py``), and compaction folds done keys
into one ``seen`` record of 16-byte key digests (``engram_md/journal.py``): a turn folded
there is found by its journal key, which :meth:`ReplayInput.journal_keys` derives from the
text the same way the daemon does. Independently, ``yield_missing`` counts
turns the fake LLM *would* extract something from but that reached neither a fact, a
confirmation nor a discard — a finer check that extraction results were not dropped silently.

Consistency: fact files, the hash index, the LanceDB index and the graph must agree.
:func:`consistency_problems` runs ``engram_md.maintain.doctor.examine`` and adds its own checks.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import locomo
from engram_md.app import open_reader
from engram_md.core.atomic import is_temp_file
from engram_md.core.config import Config, SanitizeConfig, load_config
from engram_md.core.errors import MemoryFileError
from engram_md.core.models import Role, Status
from engram_md.core.models import Turn as EngramTurn
from engram_md.core.paths import MemoryLayout
from engram_md.ingest.journal import turn_key
from engram_md.ingest.sanitize import sanitize_turn
from engram_md.ingest.seen_set import SeenSet, decode, key_digest
from engram_md.ingest.transcripts import LineError, TranscriptReader
from engram_md.maintain.doctor import examine
from engram_md.store.factfile import read_fact
from engram_md.text.hashing import content_hash
from tests.fake_openai import FakeOpenAI, RecordedRequest, fake_extract, is_judge_prompt

# ---- input -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayInput:
    """A replayed LoCoMo stream of ``turns`` lines; the base turns are loaded once."""

    base: tuple[locomo.Turn, ...]
    turns: int

    @classmethod
    def load(cls, turns: int, path: Path = locomo.DATA) -> ReplayInput:
        base = tuple(locomo.turns(locomo.load(path)))
        if not base:
            raise ValueError(f"no turns in {path}")
        return cls(base, turns)

    @property
    def shift(self) -> timedelta:
        """How far each replay moves in time: the span of the data plus a day."""
        stamps = [t.timestamp for t in self.base]
        return max(stamps) - min(stamps) + timedelta(days=1)

    def replayed(self) -> Iterator[tuple[int, locomo.Turn, locomo.Turn]]:
        """(base index, base turn, replayed turn) for every line of the stream, in order."""
        shift = self.shift
        sent = 0
        replay = 0
        while sent < self.turns:
            for i, turn in enumerate(self.base):
                if sent >= self.turns:
                    return
                session = f"{turn.conversation}.r{replay}"
                yield (
                    i,
                    turn,
                    replace(
                        turn,
                        conversation=session,
                        dia_id=f"{session}.{turn.dia_id}",
                        timestamp=turn.timestamp + shift * replay,
                    ),
                )
                sent += 1
            replay += 1

    def lines(self) -> Iterator[str]:
        """The transcript lines (generic JSONL), generated lazily: 100k lines never sit in
        memory at once."""
        for _, _, turn in self.replayed():
            yield locomo.jsonl_lines([turn])[0]

    def ids(self) -> dict[str, int]:
        """Turn id -> index of its base turn, for every line sent."""
        return {turn.dia_id: i for i, _, turn in self.replayed()}

    def data(self) -> bytes:
        return ("\n".join(self.lines()) + "\n").encode()

    def journal_keys(self, sanitize: SanitizeConfig) -> dict[str, str]:
        """Turn id -> the key the daemon's journal gives it: each line read by the daemon's
        own transcript reader and sanitized as it is, then keyed. Lines empty after
        sanitizing are never journaled and have no key."""
        reader = TranscriptReader("soak.jsonl")
        keys: dict[str, str] = {}
        for lineno, line in enumerate(self.lines(), start=1):
            turns = reader.feed(line, lineno)
            if isinstance(turns, LineError):
                raise ValueError(f"the soak input does not read: {turns}")
            for turn in turns:
                clean = sanitize_turn(turn, sanitize)
                if clean is not None:
                    keys[clean.id] = turn_key(clean)
        return keys


def _as_engram_turn(turn: locomo.Turn) -> EngramTurn:
    return EngramTurn(
        id=turn.dia_id,
        session=turn.conversation,
        role=Role.USER,
        content=turn.text,
        timestamp=turn.timestamp,
        speaker=turn.speaker,
    )


def base_profile(
    base: Sequence[locomo.Turn], sanitize: SanitizeConfig
) -> tuple[set[int], set[int]]:
    """(base turns empty after sanitizing, base turns the fake LLM extracts something from).

    Computed from the text alone, the same way the daemon sees it, so the audit has an
    expectation that does not come from the folder it is checking.
    """
    empty: set[int] = set()
    yields: set[int] = set()
    for i, turn in enumerate(base):
        clean = sanitize_turn(_as_engram_turn(turn), sanitize)
        if clean is None:
            empty.add(i)
            continue
        # One continuation-indented rendered line, as the prompt renders turns.
        body = clean.content.replace("\n", "\n    ")
        line = f"[{turn.dia_id}] 2000-01-01T00:00:00Z {turn.speaker} (user): {body}"
        if fake_extract(line)["facts"]:
            yields.add(i)
    return empty, yields


# ---- audit -----------------------------------------------------------------------------------

OUTCOMES = ("confirmed", "fact", "discarded", "no_memory", "pending", "empty", "lost")


@dataclass
class Audit:
    """Where every sent turn went, and whether any memory exists twice."""

    sent: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    discard_reasons: Counter[str] = field(default_factory=Counter)
    fact_files: int = 0
    active_facts: int = 0
    unreadable_files: list[str] = field(default_factory=list)
    duplicate_hashes: list[str] = field(default_factory=list)  # active facts sharing a hash
    expected_yield: int = 0  # turns the fake LLM extracts something from
    yield_missing: int = 0  # ... that reached no fact, confirmation or discard
    lost_examples: list[str] = field(default_factory=list)
    yield_missing_examples: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.outcomes["lost"]

    @property
    def duplicated(self) -> int:
        return len(self.duplicate_hashes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "outcomes": {k: self.outcomes[k] for k in OUTCOMES},
            "discard_reasons": dict(self.discard_reasons),
            "fact_files": self.fact_files,
            "active_facts": self.active_facts,
            "unreadable_files": self.unreadable_files,
            "duplicate_hashes": self.duplicate_hashes,
            "expected_yield": self.expected_yield,
            "yield_missing": self.yield_missing,
            "lost_examples": self.lost_examples,
            "yield_missing_examples": self.yield_missing_examples,
        }


@dataclass
class JournalState:
    done_ids: set[str]  # turn ids named by a ``done`` record or an old ``seen`` key list
    done_digests: SeenSet  # turns folded into a compacted ``seen`` record
    pending: frozenset[str]  # turn ids journaled but not done
    torn: int  # unreadable records (a torn last line after kill -9)

    def done(self, turn_id: str, key: str | None) -> bool:
        return turn_id in self.done_ids or (
            key is not None and key_digest(key) in self.done_digests
        )


def read_journal(path: Path) -> JournalState:
    """The journal's view of every turn (keys are ``session\\x1fid\\x1fhash``)."""
    pending: dict[str, str] = {}
    done: set[str] = set()
    digests = SeenSet()
    torn = 0
    if path.exists():
        with open(path, "rb") as handle:
            for raw in handle:
                try:
                    record = json.loads(raw)
                    op = record["op"]
                    if op == "turn":
                        pending[record["key"]] = record["turn"]["id"]
                    elif op == "seen" and "digests" in record:
                        digests.add_packed(decode(record["digests"]))
                    elif op in ("done", "seen"):
                        for key in record["keys"]:
                            pending.pop(key, None)
                            done.add(key.split("\x1f")[1])
                except (ValueError, KeyError, TypeError, IndexError):
                    torn += 1
    still = frozenset(i for k, i in pending.items() if key_digest(k) not in digests)
    return JournalState(done, digests, still, torn)


@dataclass
class ActionTrail:
    """What ``state/memory-actions.jsonl`` says about turns."""

    confirmed: set[str] = field(default_factory=set)  # re-stated a stored fact
    discarded: set[str] = field(default_factory=set)
    reasons: Counter[str] = field(default_factory=Counter)  # discard reason -> turns
    stored: dict[str, set[str]] = field(default_factory=dict)  # turn id -> facts it wrote


def read_actions(path: Path) -> ActionTrail:
    trail = ActionTrail()
    if not path.exists():
        return trail
    with open(path, "rb") as handle:
        for raw in handle:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            turns = [str(t) for t in event.get("turns") or []]
            action, applied = event.get("action"), event.get("outcome") == "applied"
            if action == "update_note" and applied:
                trail.confirmed.update(turns)
            elif action in ("store_note", "store_episode") and applied:
                for turn in turns:
                    trail.stored.setdefault(turn, set()).add(str(event.get("memoryId")))
            elif action == "discard" and turns:
                trail.discarded.update(turns)
                trail.reasons[str(event.get("reason"))] += len(turns)
    return trail


def audit(
    layout: MemoryLayout,
    ids: dict[str, int],
    *,
    keys: Mapping[str, str] | None = None,
    empty_base: set[int] | None = None,
    yield_base: set[int] | None = None,
    examples: int = 10,
) -> Audit:
    """Account for every turn id in ``ids`` (id -> base index) against the folder.

    ``keys`` (id -> journal key, :meth:`ReplayInput.journal_keys`) finds the turns a compacted
    journal keeps only as digests; without it only ``done`` records not yet compacted count.
    """
    result = Audit(sent=len(ids))
    in_facts: set[str] = set()
    fact_ids: set[str] = set()
    active_by_hash: dict[str, list[str]] = {}
    for root in (layout.facts_dir, layout.archive_dir / "facts"):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.md")):
            if is_temp_file(path):
                continue
            result.fact_files += 1
            try:
                fact = read_fact(path)
            except MemoryFileError:
                result.unreadable_files.append(layout.relative(path))
                continue
            in_facts.update(fact.source_turn_ids)
            fact_ids.add(fact.id)
            if root == layout.facts_dir and fact.status is Status.ACTIVE:
                result.active_facts += 1
                digest = content_hash(fact.content)
                active_by_hash.setdefault(digest, []).append(layout.relative(path))
    result.duplicate_hashes = sorted(d for d, paths in active_by_hash.items() if len(paths) > 1)

    trail = read_actions(layout.actions_path)
    result.discard_reasons = trail.reasons
    journal = read_journal(layout.journal_path)
    empty_base = empty_base or set()
    for turn_id, base in ids.items():
        if turn_id in trail.confirmed:
            outcome = "confirmed"
        elif turn_id in in_facts or not trail.stored.get(turn_id, set()).isdisjoint(fact_ids):
            outcome = "fact"
        elif turn_id in trail.discarded:
            outcome = "discarded"
        elif journal.done(turn_id, keys.get(turn_id) if keys else None):
            outcome = "no_memory"
        elif turn_id in journal.pending:
            outcome = "pending"
        elif base in empty_base:
            outcome = "empty"
        else:
            outcome = "lost"
            if len(result.lost_examples) < examples:
                result.lost_examples.append(turn_id)
        result.outcomes[outcome] += 1
        if yield_base is not None and base in yield_base:
            result.expected_yield += 1
            if outcome not in ("fact", "confirmed", "discarded", "pending"):
                result.yield_missing += 1
                if len(result.yield_missing_examples) < examples:
                    result.yield_missing_examples.append(turn_id)
    return result


# ---- consistency -----------------------------------------------------------------------------


def consistency_problems(cfg: Config) -> tuple[list[str], str]:
    """Disagreements between the folder, hash index, search index and graph; and which
    checkers found them (``doctor`` and the bench's own)."""
    # As `engram-md doctor` examines: no lock, the index as it stands, no embedding cache.
    with open_reader(cfg, cache_embeddings=False) as parts:
        report = examine(parts)
    problems = [f"doctor {p.kind}: {p.subject}: {p.detail}" for p in report.problems]
    problems += bench_checks(cfg.layout)
    return problems, "doctor+bench"


def bench_checks(layout: MemoryLayout) -> list[str]:
    """The bench's own agreement checks (read-only; nothing is opened for writing)."""
    problems: list[str] = []
    facts: dict[str, tuple[str, str]] = {}  # id -> (rel path, content hash)
    for root in (layout.facts_dir, layout.archive_dir / "facts"):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.md")):
            if is_temp_file(path):
                continue
            rel = layout.relative(path)
            try:
                fact = read_fact(path)
            except MemoryFileError as exc:
                problems.append(f"unreadable fact file {rel}: {exc}")
                continue
            if fact.id in facts:
                problems.append(f"fact id {fact.id} in two files: {facts[fact.id][0]}, {rel}")
            facts[fact.id] = (rel, content_hash(fact.content))

    for root in (layout.memory_dir, layout.state_dir):
        leftovers = [p for p in root.rglob("*") if is_temp_file(p)] if root.exists() else []
        problems += [f"temp file left behind: {p}" for p in leftovers]

    # The exact-dedup hash index: every file's hash maps to it; no entry for a missing file.
    hashes: dict[str, str] = {}
    if layout.hashes_path.exists():
        for line in layout.hashes_path.read_text(encoding="utf-8").splitlines():
            digest, _, rel = line.partition(" ")
            if digest and rel:
                hashes[digest] = rel  # later lines win, as when the index loads
    by_rel = {rel: digest for rel, digest in facts.values()}
    for rel, digest in by_rel.items():
        if hashes.get(digest) is None:
            problems.append(f"hash index lacks {digest} ({rel})")
    for digest, rel in hashes.items():
        if rel not in by_rel:
            problems.append(f"hash index names a missing file: {digest} {rel}")

    problems += _index_problems(layout, facts)
    problems += _graph_problems(layout, set(facts))
    return problems


def _index_problems(layout: MemoryLayout, facts: dict[str, tuple[str, str]]) -> list[str]:
    """The LanceDB table holds exactly the fact files, with their paths and hashes."""
    import lancedb

    from engram_md.index.lance import TABLE_NAME

    if not layout.index_dir.exists():
        return ["no search index"] if facts else []
    db = lancedb.connect(str(layout.index_dir))
    if TABLE_NAME not in db.list_tables().tables:
        return ["search index has no table"] if facts else []
    table = db.open_table(TABLE_NAME).to_arrow().select(["id", "path", "content_hash"])
    rows = dict(
        zip(
            table.column("id").to_pylist(),
            zip(
                table.column("path").to_pylist(),
                table.column("content_hash").to_pylist(),
                strict=True,
            ),
            strict=True,
        )
    )
    problems: list[str] = []
    if len(rows) != table.num_rows:
        problems.append(f"search index has {table.num_rows - len(rows)} duplicate id row(s)")
    fact_rows = {i: r for i, r in rows.items() if _is_fact_path(r[0])}
    for fact_id, (rel, digest) in facts.items():
        row = fact_rows.get(fact_id)
        if row is None:
            problems.append(f"search index lacks {fact_id} ({rel})")
        elif row != (rel, digest):
            problems.append(f"search index row for {fact_id} is stale: {row} != {(rel, digest)}")
    for fact_id, (rel, _) in fact_rows.items():
        if fact_id not in facts:
            problems.append(f"search index has a row for a missing fact: {fact_id} ({rel})")
    return problems


def _is_fact_path(rel: str) -> bool:
    return rel.startswith(("facts/", "archive/facts/"))


def _graph_problems(layout: MemoryLayout, fact_ids: set[str]) -> list[str]:
    """Graph nodes are facts that exist; edges join known nodes."""
    from engram_md.organize.graph import GraphStore

    if not layout.graphs_dir.exists():
        return []
    graph = GraphStore.load(layout.graphs_dir)
    nodes = {n.id for n in graph.nodes()}
    problems = [f"graph node for a missing fact: {n}" for n in sorted(nodes - fact_ids)]
    for edge in graph.edges():
        for end in (edge.source, edge.target):
            if end not in nodes:
                problems.append(f"graph {edge.kind} edge to an unknown node: {end}")
    return problems


# ---- the daemon under test -------------------------------------------------------------------


_PROMPT_IDS = re.compile(r"^\[([^\]\s]+)\] ", re.M)


class CountingFake(FakeOpenAI):
    """The fake LLM server, tallying requests and injected faults instead of keeping every
    request: 100k turns would otherwise hold tens of thousands of prompts in memory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tally: Counter[str] = Counter()
        # The newest turn id any prompt carried: how far the daemon has got, since the
        # feeder runs ahead of it by whatever its queue and the pipe hold.
        self.last_turn_id: str | None = None

    def __enter__(self) -> CountingFake:
        self.start()
        return self

    def _record(self, request: RecordedRequest) -> None:
        text = request.prompt_text()
        # Consolidation's judge calls name facts, not turns ([E1]): progress is extraction's.
        judge = is_judge_prompt(text)
        ids = [] if judge else _PROMPT_IDS.findall(text[-2000:])
        with self._lock:
            self.tally[request.path] += 1
            if judge:
                self.tally["judge"] += 1
            if request.fault is not None:
                self.tally[f"fault:{request.fault}"] += 1
            if ids:
                self.last_turn_id = ids[-1]

    def faults(self) -> dict[str, int]:
        with self._lock:
            return {k.removeprefix("fault:"): v for k, v in self.tally.items() if k[:6] == "fault:"}

    def calls(self, endpoint: str = "chat/completions") -> int:
        with self._lock:
            return self.tally[f"/v1/{endpoint}"]

    def judge_calls(self) -> int:
        with self._lock:
            return self.tally["judge"]


# Client timeout below the fake's stall, so a "timeout" fault is a real client timeout; a short
# backoff, so injected faults cost seconds, not minutes, over a long run.
LLM_TIMEOUT = 0.5
FAKE_STALL = 2.0


def llm_config_yaml(server: FakeOpenAI, *, extra: dict[str, Any] | None = None) -> str:
    """The daemon's config file: LLM mode against ``server``, everything else default."""
    data: dict[str, Any] = {
        "llm": {
            "base_url": server.base_url,
            "api_key": "soak",
            "model": server.model,
            "api": "chat",
            "timeout_seconds": LLM_TIMEOUT,
            "max_retries": 3,
            "backoff_seconds": 0.05,
        }
    }
    for key, value in (extra or {}).items():
        data.setdefault(key, {}).update(value)
    return json.dumps(data, indent=2)  # JSON is YAML


@dataclass(frozen=True)
class Folder:
    """One memory/state pair and the config file the daemon runs with."""

    root: Path

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    @property
    def layout(self) -> MemoryLayout:
        return MemoryLayout(self.memory, self.state)

    def config(self) -> Config:
        return load_config(
            self.config_path,
            env={},
            overrides={"memory_dir": self.memory, "state_dir": self.state},
        )

    def argv(self, *args: str, module: str = "engram_md") -> list[str]:
        return [
            sys.executable,
            "-m",
            module,
            "--memory-dir",
            str(self.memory),
            "--state-dir",
            str(self.state),
            "--config",
            str(self.config_path),
            *args,
        ]

    def fact_files(self) -> dict[str, bytes]:
        facts = self.memory / "facts"
        if not facts.exists():
            return {}
        return {
            p.relative_to(self.memory).as_posix(): p.read_bytes()
            for p in sorted(facts.rglob("*.md"))
            if not is_temp_file(p)
        }


def clean_env(**extra: str) -> dict[str, str]:
    """The daemon's environment: no LLM or engram settings leak in from the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env
