"""The fact graph: entity, time and causal edges between facts, with a confidence each.

Edge rules (simple on purpose, so `explain` can say why two facts are linked):

- **entity** — a new fact links to the most recent :data:`MAX_SIBLINGS` facts that name the
  same entity (entities normalized like topics: ``tool-postgres`` meets ``entity-postgresql``),
  at most :data:`MAX_ENTITY_EDGES` in all, those sharing the most entities first, then the
  most recent. One edge per pair; its label lists the shared entities.
- **time** — a new fact links from the previous fact of the same session.
- **causal** — a fact whose statement carries a causal marker ("because", "so that", "due to",
  "as a result", "led to", "therefore", …) links to the previous facts of its session (the last
  :data:`CAUSAL_LOOKBACK`) that share a content word or a non-person entity with it: the
  statement explains, or follows from, what was just said about the same thing.

A new edge starts at a per-kind base confidence times the lower confidence of its two facts
(a causal marker is weaker evidence than a shared name). Observing an edge again (a re-stated
fact re-links) adds ``cfg.reinforce``, capped at 1.0. Consolidation calls
:meth:`GraphStore.apply_decay`: ``cfg.decay`` off per ``decay_window_days`` after
``grace_days`` since last observed, never below ``cfg.floor``.

Storage: ``state/graphs/{entity,time,causal}.jsonl`` — one JSON object per line, the full state
of an edge; a later line for the same edge replaces an earlier one, so an update is an append.
``nodes.jsonl`` remembers what each fact contributes to the rules (session, entities, words).
Files are compacted when they hold twice as many lines as live edges, and on removal or decay.
A damaged line (a crash mid-append) is skipped with a warning; a writer rewrites the file clean
before appending again. Times are transcript times, so a replay writes the same edges.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import regex

from ..core.atomic import atomic_write_text
from ..core.config import GraphConfig
from ..core.models import Fact
from ..store.factfile import format_time
from ..text.words import LETTER_WORD, STOP_WORDS, content_words
from .activation import Adjacency
from .topics import entity_topic, normalize_topic

log = logging.getLogger(__name__)

KINDS = ("entity", "time", "causal")
BASE_CONFIDENCE = {"entity": 0.8, "time": 0.7, "causal": 0.6}
# Entity edges per new fact: per entity, and in all. A name every fact mentions (the user's)
# must not turn the graph into a clique: the edges would outnumber the facts a hundredfold
# and recall would load and walk them all.
MAX_SIBLINGS = 5
MAX_ENTITY_EDGES = 10
CAUSAL_LOOKBACK = 5
NODES_FILE = "nodes.jsonl"

CAUSAL_MARKER = regex.compile(
    r"\b(because(?:\s+of)?|so\s+that|due\s+to|as\s+a\s+result|led\s+to|leads\s+to|"
    r"therefore|thus|hence|caused(?:\s+by)?|causes|resulted\s+in|results\s+in|"
    r"owing\s+to|thanks\s+to|consequently|which\s+is\s+why|that'?s\s+why)\b",
    regex.IGNORECASE,
)
# Besides the function words: words too common in conversation to say that two statements
# are about the same thing, and the causal markers themselves (the rule that uses these words
# looks for a shared subject, not for the marker).
_STOP = STOP_WORDS | frozenset(
    """
    about above after again against all am any because before being below between both doing
    done down due during each few further having here hers how if into led let like made
    make many may might more most much must near need next nor now off once one only other
    ours out over own per result same since some such than theirs then there therefore
    through thus too under until up upon us via what when where which while who whom why
    within without yes yet yours yesterday today tomorrow week month year day days weeks
    months years want wants wanted always never
    """.split()
)


@dataclass(frozen=True, slots=True)
class Edge:
    kind: str
    source: str
    target: str
    confidence: float
    created_at: datetime  # transcript time of the first observation
    last_observed: datetime  # transcript time of the latest observation
    observations: int = 1
    label: str | None = None  # entity edges: the shared entities
    marker: str | None = None  # causal edges: the phrase that matched
    decay_windows: int = 0  # decay windows already applied since last observed

    @property
    def key(self) -> tuple[str, str, str]:
        if self.kind == "causal":
            return (self.kind, self.source, self.target)
        # Entity and time edges are symmetric facts about a pair: one edge per pair.
        a, b = sorted((self.source, self.target))
        return (self.kind, a, b)


@dataclass(frozen=True, slots=True)
class Node:
    """What a fact contributes to the edge rules."""

    id: str
    session: str
    created: datetime
    confidence: float
    entities: tuple[str, ...]  # normalized entity topics
    things: tuple[str, ...]  # the same without people (for the causal rule)
    words: tuple[str, ...]  # normalized content words of the statement


def node_words(text: str) -> tuple[str, ...]:
    """Content words normalized as topics (stop words, short words and numbers left out),
    sorted."""
    words = {normalize_topic(w) for w in content_words(text, _STOP, LETTER_WORD) if len(w) >= 3}
    words.discard("")
    return tuple(sorted(words))


def node_for(fact: Fact) -> Node:
    entities: dict[str, bool] = {}
    for raw in fact.entities:
        topic = entity_topic(raw)
        if topic:
            is_person = raw.casefold().startswith("person-")
            entities[topic] = entities.get(topic, False) or not is_person
    return Node(
        id=fact.id,
        session=fact.session,
        created=fact.created,
        confidence=fact.confidence,
        entities=tuple(sorted(entities)),
        things=tuple(sorted(t for t, thing in entities.items() if thing)),
        words=node_words(fact.content),
    )


def causal_marker(text: str) -> str | None:
    match = CAUSAL_MARKER.search(text)
    return None if match is None else " ".join(match.group(1).casefold().split())


# ---------------------------------------------------------------- decay (pure)


def decayed(
    confidence: float,
    age_days: float,
    applied_windows: int,
    *,
    decay: float,
    window_days: float,
    grace_days: float,
    floor: float,
) -> tuple[float, int]:
    """Confidence after decay, and the number of windows now applied.

    Idempotent: windows already applied (``applied_windows``) are not taken again, so running
    consolidation twice in a day changes nothing. A confidence already under the floor is
    left where it is (decay never raises it).
    """
    due = 0 if age_days <= grace_days else int((age_days - grace_days) // window_days)
    fresh = due - applied_windows
    if fresh <= 0:
        return confidence, max(applied_windows, due)
    if confidence <= floor:
        return confidence, due
    return max(floor, round(confidence - decay * fresh, 6)), due


def decay_edge(edge: Edge, now: datetime, cfg: GraphConfig) -> Edge:
    age = (now - edge.last_observed).total_seconds() / 86400
    confidence, windows = decayed(
        edge.confidence,
        age,
        edge.decay_windows,
        decay=cfg.decay,
        window_days=cfg.decay_window_days,
        grace_days=cfg.grace_days,
        floor=cfg.floor,
    )
    if confidence == edge.confidence and windows == edge.decay_windows:
        return edge
    return replace(edge, confidence=confidence, decay_windows=windows)


# ---------------------------------------------------------------- the store


class GraphStore:
    """Nodes and edges of ``state/graphs/``, in memory, persisted as append-only jsonl."""

    def __init__(self, folder: Path, cfg: GraphConfig, *, writable: bool = True) -> None:
        self.folder = folder
        self.cfg = cfg
        self.writable = writable
        self._edges: dict[tuple[str, str, str], Edge] = {}
        self._nodes: dict[str, Node] = {}  # in order of (last) registration
        self._lines = dict.fromkeys((*KINDS, "nodes"), 0)
        self._session_recent: dict[str, list[str]] = {}
        self._entity_recent: dict[str, list[str]] = {}
        self._adjacency: Adjacency | None = None
        self._files_ready = False
        # The daemon's recall thread reads (adjacency) while the pipeline thread links.
        self._lock = threading.RLock()
        self._load()

    @classmethod
    def load(cls, folder: Path, cfg: GraphConfig | None = None) -> GraphStore:
        """Read-only: never rewrites a file (recall reads while the daemon writes)."""
        return cls(folder, cfg or GraphConfig(), writable=False)

    # ------------------------------------------------------------ queries
    def has_node(self, fact_id: str) -> bool:
        return fact_id in self._nodes

    def nodes(self) -> list[Node]:
        with self._lock:
            return list(self._nodes.values())

    def edges(self, kind: str | None = None) -> list[Edge]:
        with self._lock:
            return [e for e in self._edges.values() if kind is None or e.kind == kind]

    def edges_of(self, fact_id: str) -> list[Edge]:
        with self._lock:
            return [e for e in self._edges.values() if fact_id in (e.source, e.target)]

    def adjacency(self) -> Adjacency:
        """The adjacency for spreading activation, built once per change."""
        with self._lock:
            if self._adjacency is None:
                self._adjacency = Adjacency(
                    (e.kind, e.source, e.target, e.confidence) for e in self._edges.values()
                )
            return self._adjacency

    # ------------------------------------------------------------ linking
    def link(self, fact: Fact, at: datetime | None = None) -> list[Edge]:
        """Register ``fact`` (again) as the latest of its session and observe its edges.

        A new fact gets new edges; a re-stated one re-observes (reinforces) the same edges.
        ``at`` is the transcript time of the observation (the fact's time by default).
        """
        with self._lock:
            return self._link(fact, at or fact.created)

    def _link(self, fact: Fact, when: datetime) -> list[Edge]:
        node = node_for(fact)
        changed: list[Edge] = []
        recent = [n for n in self._session_recent.get(node.session, []) if n != node.id]
        if recent:
            prev = self._nodes[recent[-1]]
            changed.append(self._observe("time", prev.id, node.id, when, _base("time", prev, node)))
        siblings: dict[str, list[str]] = {}
        for entity in node.entities:
            for sibling in self._entity_recent.get(entity, [])[-MAX_SIBLINGS:]:
                if sibling != node.id:
                    siblings.setdefault(sibling, []).append(entity)
        known = self._nodes
        # Most shared entities first, then the most recent (ids break ties: deterministic).
        ranked = sorted(
            siblings, key=lambda n: (-len(siblings[n]), -known[n].created.timestamp(), n)
        )
        strongest = sorted(ranked[:MAX_ENTITY_EDGES], key=lambda n: (known[n].created, n))
        for other_id in strongest:
            other = known[other_id]
            label = ",".join(sorted(siblings[other_id]))
            base = _base("entity", other, node)
            changed.append(self._observe("entity", node.id, other_id, when, base, label=label))
        marker = causal_marker(fact.content)
        if marker is not None:
            words, things = set(node.words), set(node.things)
            for other_id in recent[-CAUSAL_LOOKBACK:]:
                earlier = known[other_id]
                if words & set(earlier.words) or things & set(earlier.things):
                    base = _base("causal", earlier, node)
                    changed.append(
                        self._observe("causal", node.id, other_id, when, base, marker=marker)
                    )
        self._register(node)
        for kind in KINDS:
            lines = [_edge_to_json(e) for e in changed if e.kind == kind]
            if lines:
                self._append(kind, lines)
        # The node line last: it marks the fact as linked, so a crash before it makes a
        # replay link the fact again (re-observing an edge) rather than lose its edges.
        self._append("nodes", [_node_to_json(node)])
        self._maybe_compact()
        return changed

    def _observe(
        self,
        kind: str,
        source: str,
        target: str,
        at: datetime,
        confidence: float,
        *,
        label: str | None = None,
        marker: str | None = None,
    ) -> Edge:
        edge = Edge(kind, source, target, round(confidence, 3), at, at, label=label, marker=marker)
        known = self._edges.get(edge.key)
        if known is not None:
            edge = replace(
                known,
                confidence=round(min(1.0, known.confidence + self.cfg.reinforce), 3),
                last_observed=max(known.last_observed, at),
                observations=known.observations + 1,
                label=_merge_label(known.label, label),
                marker=known.marker or marker,
                decay_windows=0,
            )
        self._edges[edge.key] = edge
        self._adjacency = None
        return edge

    # ------------------------------------------------------------ maintenance
    def remove_nodes(self, ids: Iterable[str]) -> int:
        """Forget facts (deleted, forgotten, merged away) and every edge touching them."""
        with self._lock:
            return self._remove_nodes(set(ids))

    def _remove_nodes(self, gone: set[str]) -> int:
        before = len(self._edges)
        self._edges = {
            k: e for k, e in self._edges.items() if e.source not in gone and e.target not in gone
        }
        removed_nodes = [n for n in gone if n in self._nodes]
        for node_id in removed_nodes:
            del self._nodes[node_id]
        if before == len(self._edges) and not removed_nodes:
            return 0
        self._reindex()
        self._adjacency = None
        self.compact()
        return before - len(self._edges)

    def apply_decay(self, now: datetime) -> int:
        """Decay every edge as of ``now``; returns how many changed. Rewrites the files."""
        with self._lock:
            return self._apply_decay(now)

    def _apply_decay(self, now: datetime) -> int:
        changed = 0
        for key, edge in list(self._edges.items()):
            new = decay_edge(edge, now, self.cfg)
            if new is not edge:
                self._edges[key] = new
                changed += 1
        if changed:
            self._adjacency = None
            self.compact()
        return changed

    def compact(self) -> None:
        """Rewrite every file with one line per live edge / node (atomic per file)."""
        self._require_writable()
        self.folder.mkdir(parents=True, exist_ok=True)
        for kind in KINDS:
            lines = [_edge_to_json(e) for e in self._edges.values() if e.kind == kind]
            atomic_write_text(self.folder / f"{kind}.jsonl", "".join(lines), fsync=False)
            self._lines[kind] = len(lines)
        nodes = [_node_to_json(n) for n in self._nodes.values()]
        atomic_write_text(self.folder / NODES_FILE, "".join(nodes), fsync=False)
        self._lines["nodes"] = len(nodes)

    def ensure_files(self) -> None:
        """Create the edge files (empty) so a reader finds all three from the start."""
        self._require_writable()
        self.folder.mkdir(parents=True, exist_ok=True)
        for name in (*KINDS, "nodes"):
            path = self._path(name)
            if not path.exists():
                path.touch()

    # ------------------------------------------------------------ internals
    def _register(self, node: Node) -> None:
        self._nodes.pop(node.id, None)
        self._nodes[node.id] = node
        self._index(node)

    def _index(self, node: Node) -> None:
        keep = max(CAUSAL_LOOKBACK, 1)
        recent = [n for n in self._session_recent.get(node.session, []) if n != node.id]
        self._session_recent[node.session] = (recent + [node.id])[-keep:]
        for entity in node.entities:
            ids = [n for n in self._entity_recent.get(entity, []) if n != node.id]
            self._entity_recent[entity] = (ids + [node.id])[-MAX_SIBLINGS:]

    def _reindex(self) -> None:
        self._session_recent.clear()
        self._entity_recent.clear()
        for node in self._nodes.values():
            self._index(node)

    def _path(self, name: str) -> Path:
        return self.folder / (NODES_FILE if name == "nodes" else f"{name}.jsonl")

    def _require_writable(self) -> None:
        if not self.writable:
            raise RuntimeError("this graph store was loaded read-only")

    def _append(self, name: str, lines: Sequence[str]) -> None:
        if not self._files_ready:
            self.ensure_files()
            self._files_ready = True
        fd = os.open(self._path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(lines).encode("utf-8"))
        finally:
            os.close(fd)
        self._lines[name] += len(lines)

    def _maybe_compact(self) -> None:
        live = len(self._edges) + len(self._nodes)
        if sum(self._lines.values()) > 2 * live + 256:
            self.compact()

    def _load(self) -> None:
        damaged = False
        for name in ("nodes", *KINDS):
            records, broken = _read_records(self._path(name))
            damaged = damaged or broken
            self._lines[name] += len(records)
            for number, data in records:
                try:
                    if name == "nodes":
                        node = _node_from_json(data)
                        self._nodes.pop(node.id, None)
                        self._nodes[node.id] = node
                    else:
                        edge = _edge_from_json(data, name)
                        self._edges[edge.key] = edge
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    damaged = True
                    log.warning("%s:%d: damaged graph line skipped (%s)", name, number, exc)
        self._reindex()
        if damaged and self.writable:
            # Appending after a half-written line would glue two records together.
            self.compact()


def _read_records(path: Path) -> tuple[list[tuple[int, Any]], bool]:
    """(line number, parsed JSON) of every line of a jsonl file, and whether any was damaged.

    The whole file is parsed in one call when it is sound (several times faster than line by
    line); only a damaged file is read line by line to find and skip the bad lines.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], False
    except OSError as exc:
        log.warning("%s is unreadable (%s); its edges are ignored", path, exc)
        return [], True
    numbered = [(n, line) for n, line in enumerate(raw.split(b"\n"), 1) if line.strip()]
    damaged = bool(raw) and not raw.endswith(b"\n")
    if not damaged:
        try:
            parsed = json.loads(b"[" + b",".join(line for _, line in numbered) + b"]")
            return list(zip((n for n, _ in numbered), parsed, strict=True)), False
        except ValueError:
            pass
    records: list[tuple[int, Any]] = []
    for number, line in numbered:
        try:
            records.append((number, json.loads(line)))
        except ValueError as exc:
            damaged = True
            log.warning("%s:%d: damaged graph line skipped (%s)", path, number, exc)
    return records, damaged


def load_adjacency(folder: Path) -> Adjacency:
    """The activation adjacency straight from ``state/graphs/``, without the full store.

    What recall needs at start-up: kind, ends and confidence of each live edge (the last line
    for an edge wins), with none of the bookkeeping a writer keeps.
    """
    live: dict[tuple[str, str, str], tuple[str, str, str, float]] = {}
    for kind in KINDS:
        records, _ = _read_records(folder / f"{kind}.jsonl")
        for _, data in records:
            try:
                source, target = str(data["source"]), str(data["target"])
                confidence = float(data.get("confidence", 1.0))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            a, b = (source, target) if kind == "causal" else tuple(sorted((source, target)))
            live[(kind, a, b)] = (kind, source, target, confidence)
    return Adjacency(live.values())


def _base(kind: str, a: Node, b: Node) -> float:
    return BASE_CONFIDENCE[kind] * min(a.confidence, b.confidence)


def _merge_label(old: str | None, new: str | None) -> str | None:
    parts = {p for text in (old, new) if text for p in text.split(",")}
    return ",".join(sorted(parts)) or None


def _edge_to_json(edge: Edge) -> str:
    data: dict[str, Any] = {
        "kind": edge.kind,
        "source": edge.source,
        "target": edge.target,
        "confidence": edge.confidence,
        "createdAt": format_time(edge.created_at),
        "lastObserved": format_time(edge.last_observed),
        "observations": edge.observations,
    }
    if edge.label:
        data["label"] = edge.label
    if edge.marker:
        data["marker"] = edge.marker
    if edge.decay_windows:
        data["decayWindows"] = edge.decay_windows
    return json.dumps(data, ensure_ascii=False) + "\n"


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value))  # Python 3.11 reads the "Z" suffix itself


def _edge_from_json(data: Any, kind: str) -> Edge:
    return Edge(
        kind=str(data.get("kind", kind)),
        source=str(data["source"]),
        target=str(data["target"]),
        # Edges written without a confidence (by hand, by an older version) count as sure.
        confidence=float(data.get("confidence", 1.0)),
        created_at=_time(data["createdAt"]),
        last_observed=_time(data.get("lastObserved", data["createdAt"])),
        observations=int(data.get("observations", 1)),
        label=data.get("label"),
        marker=data.get("marker"),
        decay_windows=int(data.get("decayWindows", 0)),
    )


def _node_to_json(node: Node) -> str:
    data = {
        "id": node.id,
        "session": node.session,
        "created": format_time(node.created),
        "confidence": node.confidence,
        "entities": list(node.entities),
        "things": list(node.things),
        "words": list(node.words),
    }
    return json.dumps(data, ensure_ascii=False) + "\n"


def _node_from_json(data: Any) -> Node:
    return Node(
        id=str(data["id"]),
        session=str(data.get("session", "")),
        created=_time(data["created"]),
        confidence=float(data.get("confidence", 1.0)),
        entities=tuple(str(e) for e in data.get("entities", [])),
        things=tuple(str(e) for e in data.get("things", [])),
        words=tuple(str(w) for w in data.get("words", [])),
    )
