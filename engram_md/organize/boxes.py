"""Memory boxes: the facts of one session that belong together, sealed when the talk moves on.

One box is open per session (``state/open-box.json``). Each new fact either joins its
session's open box or first seals it, for the first of these reasons, checked in this order:

1. ``idle`` — the fact came more than ``idle_minutes`` of *transcript* time after the box's last
   activity. Checked first because a long silence ends a conversation whatever its subject.
2. ``max_memories`` — the box would hold more than ``max_memories`` facts.
3. ``topic_shift`` — the talk has moved on: the fact is off the box's subject, and so were the
   ``shift_after - 1`` facts just before it, which are on one subject with it (a new one).

Whether a fact is on a subject is read from what it says. With an embedder (the writer always
has one) it is the cosine of the statement's vector with the mean vector of the facts that make
the subject, at least ``min_similarity``; the vectors are the ones near-duplicate detection
already asked for, so the check costs a cache lookup. Without one it is the overlap of the
fact's topics with theirs (:func:`~engram_md.organize.topics.topic_overlap`), at least
``min_topic_overlap``. A box's subject is its members before the current run of off-subject
facts (``OpenBox.drift``): one digression ("always use uv, by the way") joins the box and
seals nothing, and a run of unrelated digressions seals nothing either; only a run that holds
together (each fact on the run's subject by the same test) is a new subject.

The run's first facts stay in the box they joined: a fact's box is named in its file when it
is written (:meth:`BoxBuilder.target_id`), before the facts that would show the talk moved on.
With ``shift_after`` 2 a shift is placed one fact late; that is the price of never rewriting a
fact to move it.

Until a box's subject has ``shift_after`` facts it is not settled: every fact adds to it, since
one fact is too little to say what a box is about.

Measured with ``python -m bench.boxes_bench`` (offline extractor, MiniLM): the sample talk's
09:00-09:07 part about one migration is one box of five facts (at every ``min_similarity``
from 0.3 to 0.6), where a single fact off the subject sealing the box (the earlier rule) made
one box per fact. ``min_similarity`` was chosen on LoCoMo conv-26 (``--sweep
min_similarity=...``): 0.3 to 0.65 cut 1 to 14 of its 19 sessions, and the cuts stay real (a
memory is closer to its own box than to the neighbouring one by a mean cosine of 0.10-0.15)
up to 0.5 (10 sessions cut, 1.58 boxes a session, no one-memory box); from 0.6 that falls to
0.08 and one-memory boxes appear. On conv-30, held out: 1.58 boxes a session, 8 sessions cut,
0.04. Statements name their speaker ("<name> went...", "<name> loves..."), which makes their
vectors alike across subjects: that is why the threshold sits higher than a topic's cosine
alone would suggest.

``end_of_session`` and ``end_of_input`` seal from outside (a flush). The builder only decides
and remembers; writing the box file and weaving the trace is :mod:`engram_md.organize.structure`'s
job.

Everything here is derived from transcript data (fact ids, times, statements and their
vectors), never from the wall clock or randomness: replaying a transcript into a fresh folder
gives the same boxes.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..core.config import BoxConfig
from ..core.errors import MemoryFileError
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..core.statefile import load_json, save_json
from ..store.factfile import format_time, read_fact
from ..text.embeddings import Embedder
from ..text.hashing import short_hash
from .topics import subject_topics, topic_overlap

log = logging.getLogger(__name__)

# A sealed box lists at most this many topics (the most frequent among its facts): enough to
# say what it was about, few enough that trace matching is not swamped by one-off tags.
MAX_BOX_TOPICS = 16
STATE_VERSION = 1


class SealReason(enum.StrEnum):
    IDLE = "idle"
    MAX_MEMORIES = "max_memories"
    TOPIC_SHIFT = "topic_shift"
    END_OF_SESSION = "end_of_session"
    END_OF_INPUT = "end_of_input"


@dataclass(frozen=True, slots=True)
class BoxMember:
    """A fact as a box refers to it: enough to link to it and to summarize it."""

    id: str
    path: str  # relative to the memory folder, forward slashes
    statement: str
    category: str = ""
    importance: float = 0.0
    created: datetime | None = None
    # What the fact is about, while its box is open (the topic check without an embedder);
    # a box file does not keep it.
    topics: tuple[str, ...] = ()

    @classmethod
    def of(cls, fact: Fact, rel_path: str) -> BoxMember:
        return cls(
            id=fact.id,
            path=rel_path,
            statement=fact.content,
            category=fact.category.value,
            importance=fact.importance,
            created=fact.created,
        )


@dataclass(frozen=True, slots=True)
class OpenBox:
    id: str
    session: str
    created_at: datetime
    last_activity: datetime
    members: tuple[BoxMember, ...]
    topic_counts: tuple[tuple[str, int], ...]  # sorted by topic
    # How many of the last members were off the box's subject, one run on a subject of their
    # own; the members before them make the subject.
    drift: int = 0

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(topic for topic, _ in self.topic_counts)

    @property
    def subject(self) -> tuple[BoxMember, ...]:
        return self.members[: len(self.members) - self.drift]

    @property
    def digression(self) -> tuple[BoxMember, ...]:
        return self.members[len(self.members) - self.drift :]

    def has(self, fact_id: str) -> bool:
        return any(m.id == fact_id for m in self.members)


@dataclass(frozen=True, slots=True)
class Seal:
    """The builder's decision to close a box; :class:`~engram_md.organize.structure.Structure`
    acts."""

    box: OpenBox
    reason: SealReason
    at: datetime  # transcript time the seal was decided at

    @property
    def topics(self) -> tuple[str, ...]:
        """The sealed box's topics. A topic shift leaves out the run of facts that began the
        new subject: they stay members (their files name this box), but the box was not
        about them."""
        shifted = self.reason is SealReason.TOPIC_SHIFT
        members = self.box.subject if shifted else self.box.members
        return rank_topics((m.topics, m.importance) for m in members)


@dataclass(frozen=True, slots=True)
class Box:
    """A sealed box, as written to ``memory/boxes/YYYY-MM-DD/<id>.md``."""

    id: str
    session: str
    created_at: datetime
    sealed_at: datetime
    seal_reason: str
    topics: tuple[str, ...]
    memory_ids: tuple[str, ...]
    trace_id: str | None
    goal: str | None
    outcome: str
    summary: str
    members: tuple[BoxMember, ...]


def rank_topics(
    carriers: Iterable[tuple[Iterable[str], float]], limit: int = MAX_BOX_TOPICS
) -> tuple[str, ...]:
    """A box's topics from its facts' (topics, importance): the topics most facts share first,
    among those the ones its more important facts carry (what the box was about rather than
    a word said in passing), then alphabetical; the ``limit`` first, sorted for the file."""
    weight: dict[str, tuple[int, float]] = {}
    for topics, importance in carriers:
        for topic in topics:
            count, total = weight.get(topic, (0, 0.0))
            weight[topic] = (count + 1, total + importance)
    ranked = sorted(weight.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    return tuple(sorted(topic for topic, _ in ranked[:limit]))


def ranked_topics(facts: Iterable[Fact]) -> tuple[str, ...]:
    """A box's topics from its facts, ranked the way a sealed box ranks them."""
    return rank_topics((subject_topics(fact), fact.importance) for fact in facts)


def member_facts(layout: MemoryLayout, members: Iterable[BoxMember]) -> dict[str, Fact]:
    """The fact files of ``members`` that can be read, by member id. A box keeps its members'
    statements and links only: what ordering, topics and the summary need comes from these."""
    out: dict[str, Fact] = {}
    for member in members:
        try:
            fact = read_fact(layout.memory_dir / member.path)
        except (MemoryFileError, ValueError):
            continue
        out[member.id or fact.id] = fact
    return out


def box_id_for(fact: Fact) -> str:
    """The id of a box that this fact opens: its time plus a hash of session and fact id."""
    digest = short_hash(f"{fact.session}\x1f{fact.id}")
    return f"box-{fact.created.strftime('%Y%m%d-%H%M%S')}-{digest}"


def box_day(box_id: str, fallback: datetime) -> str:
    """The YYYY-MM-DD folder of a box (from its id when it has the usual form)."""
    parts = box_id.split("-")
    if len(parts) >= 2 and len(parts[1]) == 8 and parts[1].isdigit():
        return f"{parts[1][:4]}-{parts[1][4:6]}-{parts[1][6:]}"
    return fallback.strftime("%Y-%m-%d")


class BoxBuilder:
    """Decides box membership and seals; keeps the open boxes in ``state/open-box.json``."""

    def __init__(
        self,
        cfg: BoxConfig,
        path: Path,
        *,
        aliases: Mapping[str, str] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.cfg = cfg
        self.path = path
        self.aliases = aliases
        self.embedder = embedder
        self._open: dict[str, OpenBox] = {}
        self._vectors: dict[str, np.ndarray] = {}  # statement -> vector, for the open boxes
        self._load()

    # ------------------------------------------------------------ queries
    def open_box(self, session: str) -> OpenBox | None:
        return self._open.get(session)

    def open_boxes(self) -> list[OpenBox]:
        return [self._open[s] for s in sorted(self._open)]

    def topics_of(self, fact: Fact) -> frozenset[str]:
        return subject_topics(fact, self.aliases)

    # ------------------------------------------------------------ decisions
    def check(self, fact: Fact) -> Seal | None:
        """Would ``fact`` have to seal its session's open box first? Pure: changes nothing."""
        box = self._open.get(fact.session)
        if box is None:
            return None
        if fact.created - box.last_activity > timedelta(minutes=self.cfg.idle_minutes):
            return Seal(box, SealReason.IDLE, fact.created)
        if len(box.members) + 1 > self.cfg.max_memories:
            return Seal(box, SealReason.MAX_MEMORIES, fact.created)
        if self._drift_after(box, fact) >= self.cfg.shift_after:
            return Seal(box, SealReason.TOPIC_SHIFT, fact.created)
        return None

    def target_id(self, fact: Fact) -> str:
        """The id of the box ``fact`` will join: its session's open box, or the box it opens
        when there is none or :meth:`check` seals it. Pure, so it may be asked before the fact
        is written; the box file's path follows from the id (:func:`box_day`)."""
        box = self._open.get(fact.session)
        if box is None or self.check(fact) is not None:
            return box_id_for(fact)
        return box.id

    def seals_at_end(self, reason: SealReason, session: str | None = None) -> list[Seal]:
        """Seals for the open box of ``session`` (or every open box), at its last activity."""
        boxes = self.open_boxes() if session is None else [b for b in [self.open_box(session)] if b]
        return [Seal(box, reason, box.last_activity) for box in boxes]

    def _drift_after(self, box: OpenBox, fact: Fact) -> int:
        """The box's run of off-subject facts once ``fact`` joins: 0 when the fact is on the
        box's subject (or the subject is not settled yet), one more when it is on the run's,
        else 1 (a run of its own)."""
        if len(box.subject) < self.cfg.shift_after or self._near(fact, box.subject):
            return 0
        if box.drift and self._near(fact, box.digression):
            return box.drift + 1
        return 1

    def _near(self, fact: Fact, members: tuple[BoxMember, ...]) -> bool:
        """Is ``fact`` on the subject of ``members``?"""
        if not members:
            return True
        if self.embedder is None:
            seen = {topic for m in members for topic in m.topics}
            return topic_overlap(seen, self.topics_of(fact)) >= self.cfg.min_topic_overlap
        mean = np.mean([self._vector(m.statement) for m in members], axis=0)
        norm = float(np.linalg.norm(mean))
        if norm == 0.0:
            return True
        return float(self._vector(fact.content) @ mean) / norm >= self.cfg.min_similarity

    def _vector(self, text: str) -> np.ndarray:
        assert self.embedder is not None
        vector = self._vectors.get(text)
        if vector is None:
            # One text a call, as near-duplicate detection asks: the same vector from the
            # embedder's cache, and no batch padding to change a last digit between a run
            # and its replay.
            vector = self._vectors[text] = self.embedder.embed([text])[0]
        return vector

    # ------------------------------------------------------------ changes
    def join(self, fact: Fact, rel_path: str) -> OpenBox:
        """Add ``fact`` to its session's open box (opening one), and save the state."""
        box = self._open.get(fact.session)
        topics = self.topics_of(fact)
        member = replace(BoxMember.of(fact, rel_path), topics=tuple(sorted(topics)))
        counts = Counter(dict(box.topic_counts)) if box is not None else Counter[str]()
        counts.update(topics)
        topic_counts = tuple(sorted(counts.items()))
        if box is None:
            box = OpenBox(
                id=box_id_for(fact),
                session=fact.session,
                created_at=fact.created,
                last_activity=fact.created,
                members=(member,),
                topic_counts=topic_counts,
            )
        elif box.has(fact.id):
            return box
        else:
            box = replace(
                box,
                members=box.members + (member,),
                topic_counts=topic_counts,
                last_activity=max(box.last_activity, fact.created),
                created_at=min(box.created_at, fact.created),
                drift=self._drift_after(box, fact),
            )
        self._open[fact.session] = box
        self.save()
        return box

    def touch(self, session: str, at: datetime) -> None:
        """Activity in the session that adds no member (a re-stated fact of this box)."""
        box = self._open.get(session)
        if box is not None and at > box.last_activity:
            self._open[session] = replace(box, last_activity=at)
            self.save()

    def close(self, box_id: str) -> None:
        """Forget an open box once it is sealed and written."""
        for session, box in list(self._open.items()):
            if box.id == box_id:
                del self._open[session]
                self._forget_vectors(box.members)
                self.save()

    def drop(self, ids: set[str], layout: MemoryLayout) -> dict[str, str]:
        """Take the facts ``ids`` out of the open boxes (forgotten, or deleted by hand); an
        emptied box goes. The topic counts are made again from the members left (their fact
        files), so the box no longer carries the dropped facts' topics. Returns fact id -> the
        open box it was in."""
        hits: dict[str, str] = {}
        for session, box in list(self._open.items()):
            kept = tuple(m for m in box.members if m.id not in ids)
            if len(kept) == len(box.members):
                continue
            hits.update({m.id: box.id for m in box.members if m.id in ids})
            self._forget_vectors(box.members)
            if not kept:
                del self._open[session]
                continue
            counts: Counter[str] = Counter()
            for fact in member_facts(layout, kept).values():
                counts.update(self.topics_of(fact))
            # The run of off-subject facts loses its dropped members; the first member is
            # always the subject.
            drift = min(sum(1 for m in box.digression if m.id not in ids), len(kept) - 1)
            self._open[session] = replace(
                box, members=kept, topic_counts=tuple(sorted(counts.items())), drift=drift
            )
        if hits:
            self.save()
        return hits

    def _forget_vectors(self, members: Iterable[BoxMember]) -> None:
        for member in members:
            self._vectors.pop(member.statement, None)

    # ------------------------------------------------------------ state file
    def save(self) -> None:
        data = {
            "version": STATE_VERSION,
            "open": {session: _box_to_json(box) for session, box in sorted(self._open.items())},
        }
        save_json(self.path, data, fsync=False)

    def _load(self) -> None:
        data = load_json(self.path, {})
        boxes = data.get("open", {}) if isinstance(data, dict) else {}
        for session, raw in (boxes or {}).items():
            try:
                self._open[str(session)] = _box_from_json(raw)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s: open box of %s is unreadable (%s)", self.path, session, exc)


def _box_to_json(box: OpenBox) -> dict[str, Any]:
    return {
        "id": box.id,
        "session": box.session,
        "createdAt": format_time(box.created_at),
        "lastActivity": format_time(box.last_activity),
        "topicCounts": dict(box.topic_counts),
        "drift": box.drift,
        "members": [
            {
                "id": m.id,
                "path": m.path,
                "statement": m.statement,
                "category": m.category,
                "importance": m.importance,
                "created": format_time(m.created) if m.created else None,
                "topics": list(m.topics),
            }
            for m in box.members
        ],
    }


def _parse_time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _box_from_json(raw: Any) -> OpenBox:
    members = tuple(
        BoxMember(
            id=str(m["id"]),
            path=str(m["path"]),
            statement=str(m.get("statement", "")),
            category=str(m.get("category", "")),
            importance=float(m.get("importance", 0.0)),
            created=_parse_time(m["created"]) if m.get("created") else None,
            topics=tuple(str(t) for t in m.get("topics", [])),
        )
        for m in raw["members"]
    )
    counts: Iterable[tuple[str, int]] = (
        (str(k), int(v)) for k, v in dict(raw.get("topicCounts", {})).items()
    )
    return OpenBox(
        id=str(raw["id"]),
        session=str(raw["session"]),
        created_at=_parse_time(raw["createdAt"]),
        last_activity=_parse_time(raw["lastActivity"]),
        members=members,
        topic_counts=tuple(sorted(counts)),
        drift=min(max(int(raw.get("drift", 0)), 0), max(len(members) - 1, 0)),
    )


# ---------------------------------------------------------------- what a sealed box says


@dataclass(frozen=True, slots=True)
class Summary:
    summary: str
    goal: str | None
    outcome: str


class Summarizer:
    """Extractive and offline: the box's most important statements, in the order said.

    The seam for a smarter summarizer (an LLM) is this one method; the default must stay
    deterministic, because box files are compared byte for byte across replays.
    """

    max_sentences = 3
    goal_chars = 100
    # Categories that state an intention: the first of them is the box's goal.
    intent_categories = ("decision", "commitment")

    def summarize(self, members: tuple[BoxMember, ...]) -> Summary:
        order = {m.id: i for i, m in enumerate(members)}
        top = sorted(members, key=lambda m: (-m.importance, order[m.id]))[: self.max_sentences]
        chosen = sorted(top, key=lambda m: order[m.id])
        summary = " ".join(_sentence(m.statement) for m in chosen)
        goal = next((m.statement for m in members if m.category in self.intent_categories), None)
        if goal is not None and len(goal) > self.goal_chars:
            goal = goal[: self.goal_chars - 1].rstrip() + "…"
        # Whether the goal was reached is not something the statements say offline.
        return Summary(summary=summary, goal=goal, outcome="unknown")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "…")) else text + "."
