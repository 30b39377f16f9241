"""One fact per markdown file: YAML frontmatter + the statement as the body.

Writing goes through python-frontmatter and pyyaml (no hand-rolled YAML) with a fixed key order
and formatting, so the same fact always serializes to the same bytes and `git diff` shows only
real changes. Reading validates the frontmatter at this edge (pydantic) and keeps unknown keys
a person added, so a hand edit survives our rewrites.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import frontmatter
import regex
import xxhash
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from yaml.representer import SafeRepresenter

from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.folder import read_file
from ..core.models import (
    Category,
    ConfidenceTier,
    Fact,
    HandWritten,
    MemoryKind,
    PolicyClass,
    Source,
    Status,
    StatusChange,
    VerificationState,
)
from ..extract.normalize import confidence_tier
from ..text.hashing import content_hash
from .links import render_links, strip_links

_SURROGATE = regex.compile(r"[\ud800-\udfff]")

# The order keys are written in. Optional keys are written only when set.
KEY_ORDER = (
    "id",
    "category",
    "created",
    "updated",
    "source",
    "confidence",
    "confidenceTier",
    "importance",
    "memoryKind",
    "status",
    "verificationState",
    "policyClass",
    "tags",
    "entities",
    "session",
    "sourceTurnIds",
    "boxId",
    "expiresAt",
    "validAt",
    "confirmations",
    "lastConfirmed",
    "supersedes",
    "supersededBy",
    "mergedFrom",
    "statusHistory",
)

# The keys every file engram-md writes holds (fact_to_metadata). A file without one of them
# is a note a person wrote: read with what its place says, and never filled in.
ALWAYS_WRITTEN = frozenset(KEY_ORDER[:16])

# Recall counts and lifecycle scores (accessCount, firstEpoch, lifecycleState, heatScore,
# decayScore, tier) are not frontmatter: they live in state/ (store/access.py), so a recall
# never leads to a markdown change. Files an older version wrote still carry them; read as keys
# we do not know, they are written back untouched until the next consolidation moves them.


# ---------------------------------------------------------------- YAML formatting


class _Dumper(yaml.SafeDumper):
    """Short scalar lists in flow style (``tags: [a, b]``), mappings in block style."""

    def ignore_aliases(self, data: Any) -> bool:
        # Never write YAML anchors (&id001): equal timestamps must read as plain values.
        return True


class _FastDumper(yaml.CSafeDumper):
    """The same representation, emitted by libyaml: five times faster (a consolidation that
    rewrites tens of thousands of files spent half its time in the Python emitter)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_datetime(dumper: SafeRepresenter, value: datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_time(value))


def _represent_list(dumper: SafeRepresenter, value: list[Any]) -> yaml.Node:
    flow = all(not isinstance(item, dict | list) for item in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


def _represent_str(dumper: SafeRepresenter, value: str) -> yaml.Node:
    # PyYAML writes NEL (U+0085) raw inside a single-quoted scalar and reads it back as a
    # folded line break, i.e. a space; double quotes escape it ("\N") and round-trip.
    if "\x85" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


for _dumper in (_Dumper, _FastDumper):
    _dumper.add_representer(datetime, _represent_datetime)
    _dumper.add_representer(str, _represent_str)
    _dumper.add_representer(list, _represent_list)

# Where libyaml writes other bytes than the Python emitter: it escapes characters beyond the
# Basic Multilingual Plane ("\U0001F600" for an emoji a person would rather read), and folds
# a double-quoted scalar longer than the line width elsewhere. Such values go the Python way,
# so a file reads the same whichever emitter wrote it (tests/test_factfile_yaml.py).
_LIBYAML_DIFFERS = regex.compile(r"[^\x00-\uffff]")
_LONG_SCALAR = 8_000


def _python_emitter_needed(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > _LONG_SCALAR or _LIBYAML_DIFFERS.search(value) is not None
    if isinstance(value, dict):
        return any(_python_emitter_needed(k) or _python_emitter_needed(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_python_emitter_needed(item) for item in value)
    return False


def dump_yaml(metadata: dict[str, Any]) -> str:
    """A frontmatter block's YAML: keys in the given order, short lists in flow style."""
    dumper = _Dumper if _python_emitter_needed(metadata) else _FastDumper
    return yaml.dump(
        metadata,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )


def format_time(value: datetime) -> str:
    """UTC, second precision, ``Z`` suffix: ``2026-03-02T09:02:00Z``.

    A naive value is taken as UTC (YAML's reading of a time without an offset). The year is
    always four digits: ``strftime`` writes year 1 as ``1``, which YAML no longer reads as a
    time. A value that leaves datetime's range once moved to UTC keeps its own offset.
    """
    try:
        utc = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        return value.isoformat(timespec="seconds")
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"


# ---------------------------------------------------------------- validation at the edge


def _as_utc(value: Any) -> datetime:
    try:
        if isinstance(value, datetime):
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, str):
            text = value.strip().replace("Z", "+00:00")
            parsed = datetime.fromisoformat(text)
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except OverflowError as exc:
        # Year 1 with a positive offset, year 9999 with a negative one: pydantic reports
        # a ValueError as a validation error, anything else would escape it.
        raise ValueError(f"date-time out of range: {value!r}") from exc
    raise ValueError(f"not a date-time: {value!r}")


def _as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value if item is not None]
    raise ValueError(f"expected a list, got {type(value).__name__}")


class _HistoryEntry(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    at: datetime
    from_status: Status = Field(alias="from")
    to_status: Status = Field(alias="to")
    reason: str = ""
    by: str = "consolidation"

    _utc = field_validator("at", mode="before")(_as_utc)


class _Frontmatter(BaseModel):
    """The frontmatter as read from disk. Lenient where a person might type loosely."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str
    category: Category
    created: datetime
    updated: datetime | None = None
    source: Source = Source.MANUAL
    confidence: float = Field(0.95, ge=0, le=1)
    confidenceTier: ConfidenceTier | None = None
    importance: float = Field(0.5, ge=0, le=1)
    memoryKind: MemoryKind = MemoryKind.NOTE
    status: Status = Status.ACTIVE
    verificationState: VerificationState = VerificationState.UNVERIFIED
    policyClass: PolicyClass = PolicyClass.DURABLE
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    session: str = ""
    sourceTurnIds: list[str] = Field(default_factory=list)
    boxId: str | None = None
    expiresAt: datetime | None = None
    validAt: datetime | None = None
    confirmations: int = Field(0, ge=0)
    lastConfirmed: datetime | None = None
    supersedes: list[str] = Field(default_factory=list)
    supersededBy: str | None = None
    mergedFrom: list[str] = Field(default_factory=list)
    statusHistory: list[_HistoryEntry] = Field(default_factory=list)

    _times = field_validator(
        "created", "updated", "expiresAt", "validAt", "lastConfirmed", mode="before"
    )(lambda v: None if v is None else _as_utc(v))
    _lists = field_validator(
        "tags", "entities", "sourceTurnIds", "supersedes", "mergedFrom", mode="before"
    )(_as_str_list)

    @field_validator("session", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> str:
        return "" if value is None else str(value)

    @field_validator("id", mode="before")
    @classmethod
    def _non_empty_id(cls, value: Any) -> str:
        text = "" if value is None else str(value).strip()
        if not text:
            raise ValueError("id is empty")
        return text


# ---------------------------------------------------------------- Fact <-> text


def fact_to_metadata(fact: Fact) -> dict[str, Any]:
    """Frontmatter mapping in :data:`KEY_ORDER`, optional keys only when set."""
    values: dict[str, Any] = {
        "id": fact.id,
        "category": fact.category.value,
        "created": fact.created,
        "updated": fact.updated,
        "source": fact.source.value,
        "confidence": round(fact.confidence, 3),
        "confidenceTier": fact.confidence_tier.value,
        "importance": round(fact.importance, 3),
        "memoryKind": fact.memory_kind.value,
        "status": fact.status.value,
        "verificationState": fact.verification_state.value,
        "policyClass": fact.policy_class.value,
        "tags": list(fact.tags),
        "entities": list(fact.entities),
        "session": fact.session,
        "sourceTurnIds": list(fact.source_turn_ids),
        "boxId": fact.box_id,
        "expiresAt": fact.expires_at,
        "validAt": fact.valid_at,
        "confirmations": fact.confirmations or None,
        "lastConfirmed": fact.last_confirmed,
        "supersedes": list(fact.supersedes) or None,
        "supersededBy": fact.superseded_by,
        "mergedFrom": list(fact.merged_from) or None,
        "statusHistory": [
            {
                "at": change.at,
                "from": change.from_status.value,
                "to": change.to_status.value,
                "reason": change.reason,
                "by": change.by,
            }
            for change in fact.status_history
        ]
        or None,
    }
    ordered = {key: values[key] for key in KEY_ORDER if values.get(key) is not None}
    # Required keys are always present, even when empty (tags: [] reads better than nothing).
    for key in ("tags", "entities", "session", "sourceTurnIds"):
        ordered.setdefault(key, values[key])
    ordered = {key: ordered[key] for key in KEY_ORDER if key in ordered}
    for key in sorted(fact.extra):
        if key not in ordered:
            ordered[key] = fact.extra[key]
    return ordered


def _hand_metadata(fact: Fact, hand: HandWritten) -> dict[str, Any]:
    """The keys a person's note is written back with: its own, those a change set (a status,
    its history), and the pinned ones; never the defaults it was read with."""
    metadata = fact_to_metadata(fact)
    changed = {
        key
        for key in metadata.keys() | hand.as_read.keys()
        if metadata.get(key) != hand.as_read.get(key)
    }
    keep = hand.keys | hand.pinned | changed
    return {key: value for key, value in metadata.items() if key in keep}


def _hand_changed(fact: Fact, hand: HandWritten) -> bool:
    return fact.content != hand.content or fact_to_metadata(fact) != dict(hand.as_read)


def render_fact(fact: Fact, path: Path | None = None) -> str:
    """The exact bytes of a fact file (as text); written at ``path`` in the memory folder, it
    ends with the links footer (:mod:`engram_md.store.links`)."""
    metadata = fact_to_metadata(fact) if fact.hand is None else _hand_metadata(fact, fact.hand)
    if not metadata:
        return f"{fact.content.strip()}\n"  # a note without frontmatter stays without
    header = dump_yaml(metadata)
    body = fact.content.strip()
    links = render_links(fact, path) if path is not None else ""
    footer = f"\n{links}\n" if links else ""
    return f"---\n{header}---\n\n{body}\n{footer}"


def parse_fact(text: str, *, path: str = "<memory>", origin: Path | None = None) -> Fact:
    """Parse a fact file. Raises :class:`MemoryFileError` with a readable reason.

    ``origin``: the file ``text`` was read from. A note a person wrote may then leave out the
    frontmatter block, or the keys its place gives (:func:`note_defaults`); without it every
    required key must be there.
    """
    # Editors may add a BOM.
    metadata, body = _load(text.removeprefix("\ufeff"), path, lenient=origin is not None)
    given = frozenset(metadata)
    hand = origin is not None and not ALWAYS_WRITTEN <= given
    pinned: frozenset[str] = frozenset()
    if origin is not None and hand:
        defaults, pinned = note_defaults(origin, given)
        metadata = {**defaults, **metadata}
    try:
        meta = _Frontmatter.model_validate(metadata)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:3]
        )
        raise MemoryFileError(path, f"invalid frontmatter: {problems}") from exc
    # python-frontmatter folds CRLF once; a lone or doubled CR would fold one step further
    # on every rewrite, so all line breaks become LF here and a rewrite is a fixed point.
    # The links footer is derived from the frontmatter, never part of the statement.
    content = _statement(body)
    if not content:
        raise MemoryFileError(path, "empty body (the fact's statement is missing)")
    extra = {k: v for k, v in (meta.model_extra or {}).items() if k not in KEY_ORDER}
    fact = Fact(
        id=meta.id,
        category=meta.category,
        created=meta.created,
        updated=meta.updated or meta.created,
        source=meta.source,
        confidence=meta.confidence,
        confidence_tier=meta.confidenceTier or confidence_tier(meta.confidence),
        importance=meta.importance,
        memory_kind=meta.memoryKind,
        content=content,
        session=meta.session,
        source_turn_ids=tuple(meta.sourceTurnIds),
        status=meta.status,
        verification_state=meta.verificationState,
        policy_class=meta.policyClass,
        tags=tuple(meta.tags),
        entities=tuple(meta.entities),
        box_id=meta.boxId,
        expires_at=meta.expiresAt,
        valid_at=meta.validAt,
        confirmations=meta.confirmations,
        last_confirmed=meta.lastConfirmed,
        supersedes=tuple(meta.supersedes),
        superseded_by=meta.supersededBy,
        merged_from=tuple(meta.mergedFrom),
        status_history=tuple(
            StatusChange(
                at=h.at, from_status=h.from_status, to_status=h.to_status, reason=h.reason, by=h.by
            )
            for h in meta.statusHistory
        ),
        content_hash=content_hash(content),
        extra=extra,
    )
    if not hand:
        return fact
    return replace(fact, hand=HandWritten(given, fact_to_metadata(fact), content, pinned))


_DAY_FOLDER = regex.compile(r"\d{4}-\d{2}-\d{2}")
_NOT_IN_ID = regex.compile(r"[^\w.-]+")


def note_defaults(origin: Path, given: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
    """What a person's note leaves out, from where it sits: the id is its path under
    ``facts/`` without ``.md`` (``facts/2026-03-02/dentist.md`` → ``2026-03-02-dentist``, the
    same once archived), the category ``fact``, the time its date folder's midnight (UTC) or,
    outside one, the file's mtime. Returns those values and the keys a rewrite must pin
    (a time from the mtime, which the rewrite would move)."""
    parts = origin.parts
    roots = [i for i, part in enumerate(parts[:-1]) if part == "facts"]
    under = parts[roots[-1] + 1 :] if roots else parts[-1:]
    stem = "-".join((*under[:-1], Path(under[-1]).stem))
    defaults: dict[str, Any] = {
        "id": _NOT_IN_ID.sub("-", stem).strip("-") or "note",
        "category": Category.FACT.value,
    }
    pinned: frozenset[str] = frozenset()
    if "created" not in given:
        day = next((_day(name) for name in reversed(under[:-1]) if _day(name)), None)
        if day is not None:
            defaults["created"] = datetime(day.year, day.month, day.day, tzinfo=UTC)
        else:
            try:
                mtime = os.stat(origin).st_mtime
            except OSError as exc:
                raise MemoryFileError(str(origin), f"cannot read: {exc.strerror}") from exc
            defaults["created"] = datetime.fromtimestamp(int(mtime), UTC)
            pinned = frozenset({"created"})
    return defaults, pinned


def _day(name: str) -> date | None:
    if not _DAY_FOLDER.fullmatch(name):
        return None
    try:
        return date.fromisoformat(name)
    except ValueError:
        return None


_YAML = frontmatter.YAMLHandler()

# Frontmatter we write is flat: scalars, short lists, a list of small mappings. These limits
# sit far above that and bound what a broken or hostile file can cost: YAML anchors that
# expand exponentially when walked ("billion laughs") and nesting thousands deep.
MAX_FRONTMATTER_NODES = 20_000
MAX_FRONTMATTER_DEPTH = 16


def _load(text: str, path: str, *, lenient: bool = False) -> tuple[dict[str, Any], str]:
    """The YAML mapping and the body of a fact file, or a MemoryFileError saying why not.
    ``lenient``: a file without a frontmatter block is all body (a note written by hand)."""
    # Only YAML between '---' lines at the very top is frontmatter. python-frontmatter would
    # also take JSON ("{") or TOML ("+++") headers, and its splitter alone ignores whatever
    # precedes the first '---'.
    if not _YAML.detect(text.strip()):
        if not lenient:
            raise MemoryFileError(path, "no frontmatter block (expected '---' lines around YAML)")
        metadata: dict[str, Any] = {}
        body = text
        if _SURROGATE.search(body):
            raise MemoryFileError(path, "the body holds a lone surrogate (not encodable text)")
        return metadata, body
    try:
        metadata, body = frontmatter.parse(text, handler=_YAML)
    except RecursionError as exc:
        raise MemoryFileError(path, "frontmatter is nested too deeply") from exc
    except Exception as exc:
        # PyYAML's constructors raise more than YAMLError on odd input (AttributeError for a
        # malformed timestamp, OverflowError for a date out of range, ValueError for a bad
        # offset); whatever it is, the file is unreadable, not the program broken.
        reason = f"frontmatter is not valid YAML ({_yaml_problem(exc)})"
        raise MemoryFileError(path, reason) from exc
    if not metadata and not lenient:
        raise MemoryFileError(path, "no frontmatter block (expected '---' lines around YAML)")
    metadata = metadata or {}
    if not all(isinstance(key, str) for key in metadata):
        raise MemoryFileError(path, "invalid frontmatter: every key must be text")
    problem = _shape_problem(metadata)
    if problem:
        raise MemoryFileError(path, f"invalid frontmatter: {problem}")
    if _SURROGATE.search(body):
        # Only reachable through parse_fact(str): such a fact could never be written back.
        raise MemoryFileError(path, "the body holds a lone surrogate (not encodable text)")
    return metadata, body


def _shape_problem(metadata: dict[str, Any]) -> str | None:
    """Why the loaded YAML is too large, too deep or not writable as UTF-8; None if fine.

    The walk counts every visit, so a shared (aliased) node counts once per reference, just
    as str() or a rewrite would expand it; it stops as soon as the budget is spent.
    """
    budget = MAX_FRONTMATTER_NODES
    stack: list[tuple[Any, int]] = [(metadata, 0)]
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            return f"more than {MAX_FRONTMATTER_NODES} values (YAML aliases expanding?)"
        if depth > MAX_FRONTMATTER_DEPTH:
            return f"nested deeper than {MAX_FRONTMATTER_DEPTH} levels"
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return "a lone surrogate escape (\\uD800-\\uDFFF) is not text"
        elif isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend((item, depth + 1) for item in value)
    return None


def _statement(body: str) -> str:
    """The statement of a file's body: every line break LF, the links footer left out."""
    return strip_links(body.replace("\r\n", "\n").replace("\r", "\n")).strip()


def statement_of_bytes(raw: bytes) -> str | None:
    """The statement of a fact file's bytes that were read whole before, split from its
    frontmatter as :func:`_load` splits it but without reading the YAML; None when the bytes
    hold no frontmatter block (store/read_cache.py)."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff").strip()
    except UnicodeDecodeError:
        return None
    if not _YAML.detect(text):
        return None
    try:
        _, body = _YAML.split(text)
    except ValueError:
        return None
    return _statement(body.strip())


def parse_bytes(raw: bytes, path: Path) -> Fact:
    """The fact of the bytes read from the file at ``path``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(str(path), f"not UTF-8 (byte {exc.start})") from exc
    return parse_fact(text, path=str(path), origin=path)


def read_fact(path: Path) -> Fact:
    # Never through a link, never a pipe or a huge file.
    return parse_bytes(read_file(path), path)


def file_digest(raw: bytes) -> int:
    """The 64-bit xxh3 of a fact file's bytes: whether they changed (store/read_cache.py)."""
    return xxhash.xxh3_64_intdigest(raw)


# What reading one file gives a worker's caller: its fact and the digest of its bytes, the
# reason it cannot be read (a MemoryFileError's message), or None when it is gone.
FactRead = tuple[Fact, int] | str | None


def read_facts(paths: list[Path]) -> list[FactRead]:
    """:func:`read_fact` over many files, for a worker process, each with the digest of its
    bytes (:data:`FactRead`)."""
    out: list[FactRead] = []
    for path in paths:
        try:
            raw = read_file(path)
            out.append((parse_bytes(raw, path), file_digest(raw)))
        except MemoryFileError as exc:
            out.append(str(exc))
        except OSError:
            out.append(None)
    return out


def write_fact(path: Path, fact: Fact, *, fsync: bool = True, text: str | None = None) -> bool:
    """Write atomically. Returns False (and writes nothing) when the bytes would not change,
    or when a person's note would change only in form (it is never rewritten to fill in).
    ``text``: the fact already rendered for ``path``."""
    hand = fact.hand
    if hand is not None and not _hand_changed(fact, hand) and path.is_file():
        return False
    if text is None:
        text = render_fact(fact, path)
    try:
        if read_file(path) == text.encode("utf-8"):
            return False
    except MemoryFileError:
        pass  # new, or odd (a link is replaced by the file, never written through)
    atomic_write_text(path, text, fsync=fsync)
    return True


def _yaml_problem(exc: Exception) -> str:
    """What went wrong, in one line: PyYAML's `problem` ("found undefined alias"), not its
    `context` ("while scanning..."), which is all the first line of str(exc) would say."""
    problem = getattr(exc, "problem", None)
    if isinstance(problem, str) and problem.strip():
        if "nesting depth" in problem:
            # libyaml (PyYAML >= 6.0.4) stops deep nesting itself; name it as RecursionError is.
            return "nested too deeply"
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return problem.strip().splitlines()[0] + where
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
