"""What was said: the person's own words, kept beside the facts drawn from them.

Extracted facts rewrite what was said, and a question's words often match the original
sentence better than any rewrite (on the LoCoMo dev conversations a plain sentence search
beat the facts alone; docs/ARCHITECTURE.md "Recall"). So every turn a person wrote is kept,
after secrets and personal data were redacted, in one markdown file per session and day::

    memory/said/2026-03-04/conv-abc-3f9a1c.md

    ---
    session: conv-abc
    date: 2026-03-04
    ---

    - 09:01:12 · Lee · `msg-17` — We moved to Munich last month.

One line per turn: time (UTC), speaker, the turn's id in backticks, then the words with line
breaks folded into spaces. The file is rewritten whole (atomically) when a batch adds turns,
and a turn already listed is never added twice, so replaying a batch after a crash changes
nothing. A file past :data:`PART_BYTES` is continued in ``…-2.md``, ``…-3.md``, so none
grows near the folder's read limit. The search index holds one row per sentence of these
files (:mod:`engram_md.index.saidindex`); `forget` removes the lines of forgotten turns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import regex

from ..core.atomic import atomic_write_text
from ..core.errors import MemoryFileError
from ..core.folder import markdown_files, read_file
from ..core.models import Turn
from ..core.paths import MemoryLayout, safe_slug
from ..text.hashing import short_hash
from ..text.sentences import split_sentences

log = logging.getLogger(__name__)

SAID_DIR = "said"
# A part this large is full: the next turns of the day go to the next part.
PART_BYTES = 512 * 1024

_LINE = regex.compile(
    r"^- (?P<time>\d\d:\d\d:\d\d) · (?P<speaker>[^·\n]*?) · `(?P<id>[^`\n]+)` — (?P<text>.*)$"
)
_HEAD_SESSION = regex.compile(r"^session: (?P<session>.*)$", regex.MULTILINE)
_HEAD_DATE = regex.compile(r"^date: (?P<date>\d{4}-\d\d-\d\d)$", regex.MULTILINE)
# Whitespace, and the separators str.splitlines() also breaks at: a turn stays one line.
_SPACE = regex.compile(r"[\s\x1c-\x1e]+")


@dataclass(frozen=True, slots=True)
class SaidTurn:
    """One line of a said file: a turn a person wrote."""

    id: str
    session: str
    speaker: str
    at: datetime
    text: str


def said_dir(layout: MemoryLayout) -> Path:
    return layout.memory_dir / SAID_DIR


def is_said_rel(rel: str) -> bool:
    """Whether a path relative to the memory folder is a said file."""
    return rel.startswith(f"{SAID_DIR}/") and rel.endswith(".md")


def said_files(layout: MemoryLayout) -> Iterator[Path]:
    """Every said file, in sorted order (odd entries reported and skipped)."""
    return markdown_files(said_dir(layout), base=layout.memory_dir)


def _file_stem(session: str) -> str:
    # The slug keeps the name readable; the hash keeps "a b" and "a-b" apart.
    return f"{safe_slug(session, fallback='session', max_len=40)}-{short_hash(session, 6)}"


def _one_line(text: str, limit: int = 200) -> str:
    return _SPACE.sub(" ", text).strip()[:limit]


def _listed_speaker(name: str) -> str:
    return _one_line(name.replace("·", " ").replace("`", "'"), 80) or "someone"


def _listed_text(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def format_line(turn: SaidTurn) -> str:
    speaker = _listed_speaker(turn.speaker)
    turn_id = _shown_id(turn.id)
    text = _listed_text(turn.text)
    return f"- {turn.at.astimezone(UTC):%H:%M:%S} · {speaker} · `{turn_id}` — {text}"


def sentence_texts(speaker: str, text: str) -> list[str]:
    """The search index's texts of a listed turn, one per sentence, each sentence once:
    ``"Speaker: sentence"`` (``index/saidindex.py``)."""
    return [f"{speaker}: {sentence}" for sentence in dict.fromkeys(split_sentences(text))]


def texts_to_come(turn: Turn, speaker: str) -> list[str]:
    """The index's texts of ``turn`` once it is listed under ``speaker`` and read back."""
    return sentence_texts(_listed_speaker(speaker), _listed_text(turn.content))


def parse_file(text: str, *, fallback_session: str = "") -> list[SaidTurn]:
    """The turns of one said file. Lines that are not turn lines (a person's own notes, a
    line broken by hand) are skipped: the file is for people too."""
    session_match = _HEAD_SESSION.search(text)
    date_match = _HEAD_DATE.search(text)
    session = session_match.group("session").strip() if session_match else fallback_session
    try:
        day = date.fromisoformat(date_match.group("date")) if date_match else None
    except ValueError:
        day = None
    out: list[SaidTurn] = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or day is None:
            continue
        hh, mm, ss = (int(part) for part in match.group("time").split(":"))
        if hh > 23 or mm > 59 or ss > 59:
            continue
        at = datetime(day.year, day.month, day.day, hh, mm, ss, tzinfo=UTC)
        out.append(
            SaidTurn(match.group("id"), session, match.group("speaker"), at, match.group("text"))
        )
    return out


def read_said(path: Path) -> list[SaidTurn]:
    """The turns of the said file at ``path``; :class:`MemoryFileError` if it cannot be read."""
    try:
        text = read_file(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(str(path), "not UTF-8 text") from exc
    return parse_file(text, fallback_session=path.stem)


class SaidLog:
    """Writes and edits the said files of one memory folder (the writer's lock is held)."""

    def __init__(self, layout: MemoryLayout) -> None:
        self.layout = layout

    def record(self, turns: Iterable[Turn], speakers: Mapping[str, str]) -> list[Path]:
        """Add the person's turns of a batch; returns the files that changed.

        ``speakers`` maps a turn id to the name to show (the speaker book's). Turns not
        written by a person, empty turns and turns already listed are left out.
        """
        groups: dict[tuple[str, date], list[SaidTurn]] = {}
        for turn in turns:
            if not turn.from_person or not turn.content.strip():
                continue
            at = turn.timestamp.astimezone(UTC)
            said = SaidTurn(turn.id, turn.session, speakers.get(turn.id, "user"), at, turn.content)
            groups.setdefault((turn.session, at.date()), []).append(said)
        changed: list[Path] = []
        for (session, day), group in groups.items():
            path = self._add(session, day, group)
            if path is not None:
                changed.append(path)
        return changed

    def _add(self, session: str, day: date, turns: list[SaidTurn]) -> Path | None:
        folder = self.layout.inside(said_dir(self.layout) / f"{day.year:04d}-{day:%m-%d}")
        stem = _file_stem(session)
        # Only "<stem>.md" and "<stem>-<n>.md": another session's slug may begin with this stem.
        numbered = {n: p for p in folder.glob(f"{stem}*.md") if (n := _part_number(p, stem))}
        parts = [numbered[n] for n in sorted(numbered)]
        listed: set[str] = set()
        for part in parts:
            try:
                listed.update(t.id for t in read_said(part))
            except MemoryFileError as exc:
                log.warning("%s", exc)
        fresh = {_shown_id(t.id): t for t in turns if _shown_id(t.id) not in listed}
        if not fresh:
            return None
        number = max(numbered, default=1)
        path = self._part(folder, stem, number)
        text = _header(session, day)
        if path.exists():
            try:
                text = read_file(path).decode("utf-8")
            except (MemoryFileError, UnicodeDecodeError) as exc:
                # A part broken by hand is left as it is for a person to see; go on in the next.
                log.warning("%s: %s; continuing in a new part", path, exc)
                text = ""
        if not text or len(text.encode("utf-8")) > PART_BYTES:
            path = self._part(folder, stem, number + 1)
            text = _header(session, day)
        if not text.endswith("\n"):
            text += "\n"  # a last line typed by hand without its newline
        text += "".join(format_line(t) + "\n" for t in fresh.values())
        atomic_write_text(path, text)
        return path

    def _part(self, folder: Path, stem: str, number: int) -> Path:
        name = f"{stem}.md" if number <= 1 else f"{stem}-{number}.md"
        return self.layout.inside(folder / name)

    def remove_turns(self, session: str, turn_ids: Iterable[str]) -> list[Path]:
        """Take the lines of these turns of ``session`` out of its said files (turn ids are
        unique within a session only); returns the files changed."""
        wanted = {_shown_id(turn_id) for turn_id in turn_ids}
        if not wanted:
            return []
        changed: list[Path] = []
        stem = _file_stem(session)
        for path in said_files(self.layout):
            if _part_number(path, stem) is None:
                continue
            try:
                text = read_file(path).decode("utf-8")
            except (MemoryFileError, UnicodeDecodeError) as exc:
                log.warning("%s: %s", path, exc)
                continue
            head = _HEAD_SESSION.search(text)
            if head is not None and head.group("session").strip() != _one_line(session):
                continue  # another session whose name slugs alike
            lines = text.splitlines(keepends=True)
            kept = [line for line in lines if _turn_id(line) not in wanted]
            if len(kept) != len(lines):
                atomic_write_text(path, "".join(kept))
                changed.append(path)
        return changed


def _part_number(path: Path, stem: str) -> int | None:
    """Which part of the file named ``stem`` ``path`` is (1, 2, …), or None."""
    if path.stem == stem:
        return 1
    rest = path.stem.removeprefix(f"{stem}-")
    return int(rest) if rest != path.stem and rest.isascii() and rest.isdigit() else None


def _shown_id(turn_id: str) -> str:
    """A turn id as a line shows it: on one line, without backticks."""
    return _one_line(turn_id.replace("`", "'"), 200)


def _turn_id(line: str) -> str | None:
    match = _LINE.match(line.rstrip("\n"))
    return match.group("id") if match else None


def _header(session: str, day: date) -> str:
    return f"---\nsession: {_one_line(session)}\ndate: {day.year:04d}-{day:%m-%d}\n---\n\n"
