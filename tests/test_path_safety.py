"""No name from input can place a file outside the memory folder.

Names come from transcripts (session ids, turn ids, speaker names), from extraction
(categories, entities, tags) and from fact files a person edited. They reach the disk only
through :func:`safe_slug`, :meth:`MemoryLayout.fact_path` and :meth:`MemoryLayout.inside`;
these tests attack each of them with "../", absolute paths, NUL, Windows separators,
look-alike characters, "." and "..", and very long names, in-process (hypothesis) and end to
end through ``engram-md ingest``.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from engram_md.core.models import Category, ConfidenceTier, Fact, MemoryKind, Source, Status
from engram_md.core.paths import MemoryLayout, safe_slug
from engram_md.store.fact_store import MemoryStore
from engram_md.store.factfile import read_fact, write_fact
from engram_md.text.hashing import content_hash

from .conftest import Cli
from .fuzzing import FUZZ

# Names an attacker (or an unlucky transcript) could choose.
HOSTILE = [
    "..",
    ".",
    "../../../../tmp/evil",
    "/etc/passwd",
    "/",
    "~",
    "~root/.ssh/authorized_keys",
    "$HOME/x",
    "..\\..\\Windows\\System32",
    "C:\\evil.md",
    "C:",
    "\\\\server\\share\\x",
    "CON",
    "nul.md",
    "a\x00b",
    "\x00",
    "line\nbreak",
    "tab\there",
    "%2e%2e%2f%2e%2e%2fetc",
    "．．／．．／etc",  # full-width dots and solidus: NFKC folds them to "../../"
    "\u2024\u2024/\u2024\u2024/x",  # one-dot leaders
    "..\u2215..\u2215x",  # division slash
    "..\u29f8..\u29f8x",  # big solidus
    "\u202e/dne/../cte",  # right-to-left override
    "dot.dot..dot...",
    "-rf",
    "--",
    "x" * 10_000,
    "𝒜" * 300,  # 4 bytes each in UTF-8
    "界" * 300,
    "Rene\u0301e",
    "İstanbul",
    "\ufeff\u200b\u200d",
    "",
    " ",
]
_NAMES = (
    st.sampled_from(HOSTILE)
    | st.text(max_size=80)
    | st.text(st.characters(codec="utf-8"), max_size=30)
)
_SLUG = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:-[\p{L}\p{N}\p{M}]+)*")
WHEN = datetime(2026, 3, 2, 9, 2, 0, tzinfo=UTC)
NAME_MAX = 255  # bytes per file name on ext4, XFS, APFS, NTFS (UTF-16 units there)


def _layout(root: Path) -> MemoryLayout:
    lay = MemoryLayout(memory_dir=root / "memory", state_dir=root / "state")
    lay.ensure()
    return lay


# ---------------------------------------------------------------- safe_slug


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_become_single_safe_components(name: str, tmp_path: Path) -> None:
    slug = safe_slug(name)
    assert slug == "x" or _SLUG.fullmatch(slug), slug
    target = tmp_path / slug
    assert target.parent == tmp_path and target.name == slug
    target.write_text("ok")  # the OS accepts it as a name
    assert [p.name for p in tmp_path.iterdir()] == [slug]


@FUZZ
@given(name=_NAMES, max_len=st.integers(1, 100), max_bytes=st.integers(4, 200))
def test_safe_slug_properties(name: str, max_len: int, max_bytes: int) -> None:
    slug = safe_slug(name, max_len=max_len, max_bytes=max_bytes)
    if slug == "x":
        return
    assert _SLUG.fullmatch(slug), slug
    assert len(slug) <= max_len and len(slug.encode("utf-8")) <= max_bytes
    assert not ({"/", "\\", "\x00", ".", ":"} & set(slug))
    assert slug not in (".", "..") and slug == slug.strip()
    assert safe_slug(slug, max_len=max_len, max_bytes=max_bytes) == slug  # idempotent


def test_look_alike_spellings_share_one_slug() -> None:
    assert safe_slug("Renée") == safe_slug("Rene\u0301e") == "renée"
    assert safe_slug("ＤＡＮＡ") == safe_slug("Dana") == "dana"
    assert safe_slug("𝒜𝒹𝒶") == "ada"
    assert safe_slug("．．／．．／etc") == "etc"
    # NFKC turns a spacing accent into a space and a combining mark: the mark is dropped,
    # never left as a slug of its own (found at 10k examples).
    assert safe_slug("´¸") == "x" and safe_slug("a ´b") == "a-b"


def test_a_slug_fits_in_a_file_name_whatever_the_script() -> None:
    for name in ("𝒜" * 300, "界" * 300, "\U0001f600a" * 300, "ﷺ" * 300):
        slug = safe_slug(name)
        assert len(f"person-{slug}.md".encode()) <= NAME_MAX


# ---------------------------------------------------------------- fact_path


_WHEN = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@FUZZ
@given(category=_NAMES, hash8=_NAMES, created=_WHEN)
def test_fact_path_stays_in_its_day_folder(
    tmp_path: Path, category: str, hash8: str, created: datetime
) -> None:
    lay = _layout(tmp_path)
    path = lay.fact_path(category, created, hash8)
    day = f"{created.year:04d}-{created:%m-%d}"
    assert path.parent == lay.facts_dir / day
    assert path.resolve().parent == (lay.facts_dir / day).resolve()
    assert path.suffix == ".md" and len(path.name.encode()) <= NAME_MAX
    assert lay.inside(path) == path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")  # creatable
    path.unlink()


# ---------------------------------------------------------------- inside


_PARTS = st.sampled_from(
    ["..", ".", "facts", "a", "memory", "state", "/", "/etc", "..\\..", "x.md", "\x00", "．．"]
)


def _oracle_inside(root: Path, rel: str) -> bool:
    """Lexical answer, valid because the test folders contain no symlinks."""
    joined = os.path.normpath(os.path.join(root, rel))
    return joined == str(root) or joined.startswith(str(root) + os.sep)


@FUZZ
@given(parts=st.lists(_PARTS, min_size=1, max_size=8))
def test_inside_agrees_with_a_lexical_oracle(tmp_path: Path, parts: list[str]) -> None:
    root = tmp_path.resolve()
    lay = _layout(root)
    rel = "/".join(parts)
    path = lay.memory_dir / rel
    if "\x00" in rel:
        with pytest.raises(ValueError):
            lay.inside(path)
        return
    if _oracle_inside(lay.memory_dir, rel):
        assert lay.inside(path) == path
    else:
        with pytest.raises(ValueError):
            lay.inside(path)


def test_inside_refuses_a_state_path(tmp_path: Path) -> None:
    lay = _layout(tmp_path)
    with pytest.raises(ValueError):
        lay.inside(lay.journal_path)


# ---------------------------------------------------------------- the store's write path


def _fact(**names: object) -> Fact:
    body = str(names.pop("content", "Dana prefers tea."))
    fact = Fact(
        id=str(names.pop("id", "fact-1")),
        category=Category.FACT,
        created=WHEN,
        updated=WHEN,
        source=Source.OFFLINE,
        confidence=0.9,
        confidence_tier=ConfidenceTier.IMPLIED,
        importance=0.5,
        memory_kind=MemoryKind.NOTE,
        content=body,
        session="s",
        source_turn_ids=("t1",),
        content_hash=content_hash(body),
    )
    return fact.with_changes(**names)


# The YAML emitter is pure Python and slow on long strings; the long names have their own
# test (test_hostile_names_become_single_safe_components) and go through the CLI below.
_SHORT_NAMES = (
    st.sampled_from([h for h in HOSTILE if len(h) < 100])
    | st.text(max_size=40)
    | st.text(st.characters(codec="utf-8"), max_size=20)
)
_NON_BLANK_NAMES = _SHORT_NAMES.filter(lambda s: s.strip() != "")


@FUZZ
@given(
    fact_id=_NON_BLANK_NAMES,
    session=_SHORT_NAMES,
    tag=_SHORT_NAMES,
    entity=_SHORT_NAMES,
    turn=_SHORT_NAMES,
    box=_SHORT_NAMES,
    body=_NON_BLANK_NAMES,
)
def test_store_writes_hostile_facts_only_into_facts(
    tmp_path: Path, fact_id: str, session: str, tag: str, entity: str, turn: str, box: str,
    body: str,
) -> None:  # fmt: skip
    # A fresh folder per example, left for pytest to clean up (removal is slow here).
    root = Path(tempfile.mkdtemp(dir=tmp_path)).resolve()
    lay = _layout(root)
    # The folder is new and empty: no hash index to rebuild (a rebuild saves with fsync,
    # which was most of this property's time).
    store = MemoryStore.open(lay, fsync=False, rebuild_missing=False)
    fact = _fact(
        id=fact_id,
        session=session,
        tags=(tag,),
        entities=(entity,),
        source_turn_ids=(turn,),
        box_id=box,
        content=f"{body} prefers tea.",
    )
    path = store.write_new(fact)
    assert path.parent == lay.facts_dir / "2026-03-02"
    files = sorted(p for p in root.rglob("*") if p.is_file())
    assert files == sorted([path, lay.hashes_path]) or files == [path]
    # The hostile names are data in the frontmatter, read back unchanged.
    back = read_fact(path)
    assert back.id == fact.id.strip() and back.session == fact.session
    assert back.tags == fact.tags and back.entities == fact.entities
    assert back.source_turn_ids == fact.source_turn_ids and back.box_id == fact.box_id


def test_store_refuses_to_rewrite_outside_the_memory_folder(tmp_path: Path) -> None:
    lay = _layout(tmp_path)
    store = MemoryStore.open(lay, fsync=False)
    for target in (
        tmp_path / "evil.md",
        lay.memory_dir / ".." / "evil.md",
        lay.state_dir / "lock.md",
        Path("/tmp") / f"engram-evil-{os.getpid()}.md",
    ):
        with pytest.raises(ValueError):
            store.rewrite(target, _fact())
        assert not target.exists()


# ---------------------------------------------------------------- end to end


def _hostile_transcripts(inbox: Path) -> list[Path]:
    """One file per format; every id, session and name field is hostile."""
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    said = [
        "I prefer green tea over coffee.",
        "We decided to move the billing service to Rust.",
        "My sister Maren lives in Utrecht.",
        "I always write tests before refactoring.",
    ]

    def at(i: int) -> str:
        return (start + timedelta(minutes=3 * i)).isoformat().replace("+00:00", "Z")

    # Each hostile name goes through one format in turn, in every field that format has.
    generic: list[dict[str, object]] = []
    openclaw: list[dict[str, object]] = []
    claude: list[dict[str, object]] = []
    for i, name in enumerate(HOSTILE):
        text = f"{said[i % len(said)]} ({i})"
        if i % 3 == 0:
            generic.append(
                {"role": "user", "content": text, "timestamp": at(i), "id": name,
                 "session": name, "name": name or None}
            )  # fmt: skip
        elif i % 3 == 1:
            openclaw.append({"type": "session", "version": 3, "id": name, "timestamp": at(i)})
            openclaw.append(
                {"type": "message", "id": name, "timestamp": at(i),
                 "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
            )  # fmt: skip
        else:
            claude.append(
                {"type": "user", "sessionId": name, "uuid": name, "timestamp": at(i),
                 "message": {"role": "user", "content": text}}
            )  # fmt: skip
    files = []
    # The file names are hostile too: a transcript's stem is the fallback session and the
    # prefix of made-up turn ids.
    for stem, rows in (("..generic", generic), ("-rf ..\\..", openclaw), ("%2e%2e", claude)):
        path = inbox / f"{stem}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        files.append(path)
    plain = inbox / "..txt"
    plain.write_text("user: I prefer window seats on trains.\n", encoding="utf-8")
    return [*files, plain]


# Entity names as a person might type them into a fact file: consolidation makes a page for
# each one that at least two facts name, and the page's file name is built from it.
HOSTILE_ENTITIES = (
    "person-../../../../tmp/evil",
    "../../etc/passwd",
    "org-/abs/olute",
    "tool-..\\..\\Windows\\x",
    "person-..",
    "place-CON",
    "person-" + "界" * 300,
    "\x00",
)


def _hand_written_facts(memory: Path) -> None:
    """Facts a person added by hand with hostile entities, sessions and box ids; one is
    archived by status, so consolidation moves it (a path built from its old one)."""
    day = memory / "facts" / "2026-03-02"
    for i, name in enumerate(["Zeeland trip", "Brussels move", "Gent visit"]):
        fact = _fact(
            id=f"fact-20260302-09020{i}-0000000{i}",
            content=f"Dana planned the {name}.",
            entities=HOSTILE_ENTITIES,
            session=HOSTILE[i + 2],
            box_id=HOSTILE[i + 5],
            status=Status.ARCHIVED if i == 2 else Status.ACTIVE,
        )
        write_fact(day / f"fact-09020{i}-0000000{i}.md", fact)


def _snapshot(root: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*") if p.is_file()}


def _written(cli: Cli, before: dict[Path, tuple[int, int]]) -> list[Path]:
    after = _snapshot(cli.root)
    return sorted(p for p, stamp in after.items() if before.get(p) != stamp)


def _outside(cli: Cli, paths: list[Path]) -> list[Path]:
    return [p for p in paths if not (p.is_relative_to(cli.memory) or p.is_relative_to(cli.state))]


def test_hostile_names_in_transcripts_write_only_under_memory_and_state(cli: Cli) -> None:
    inbox = cli.root / "inbox"
    inbox.mkdir()
    files = _hostile_transcripts(inbox)
    before = _snapshot(cli.root)
    escapes = [cli.root.parent / "evil", Path("/tmp/evil"), Path("/etc/passwd.md")]
    existed = [p.exists() for p in escapes]
    result = cli("ingest", *map(str, files))
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr

    created = _written(cli, before)
    assert created, "nothing was written"
    assert _outside(cli, created) == []
    # Nothing escaped into the filesystem around the test folder either.
    assert [p.exists() for p in escapes] == existed

    facts = cli.fact_files()
    assert len(facts) >= 4, stderr[-2000:]
    for rel in facts:
        parts = rel.split("/")
        assert parts[0] == "facts" and len(parts) == 3, rel
        assert regex.fullmatch(r"\d{4}-\d{2}-\d{2}", parts[1]), rel
        assert regex.fullmatch(r"[a-z]+-\d{6}-[0-9a-f]{8}\.md", parts[2]), rel
        fact = read_fact(cli.memory / rel)
        assert all(_SLUG.fullmatch(e.split("-", 1)[1]) for e in fact.entities), fact.entities
    # The hostile session names survive as data.
    sessions = {read_fact(cli.memory / rel).session for rel in facts}
    assert sessions & set(HOSTILE), sessions
    for path in cli.memory.rglob("*"):
        assert path.resolve().is_relative_to(cli.memory.resolve())

    # Consolidation builds more paths from names: entity pages, archive moves, reports.
    _hand_written_facts(cli.memory)
    before = _snapshot(cli.root)
    result = cli("consolidate", "--force")
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    written = _written(cli, before)
    assert _outside(cli, written) == []
    assert [p.exists() for p in escapes] == existed
    pages = sorted((cli.memory / "entities").glob("*.md"))
    assert len(pages) >= len(HOSTILE_ENTITIES) - 2, pages  # some slug alike, "\x00" to nothing
    for page in pages:
        # Written when the facts naming them were (ingest) or by consolidation.
        assert page.parent == cli.memory / "entities" and (page in written or page in created)
        assert _SLUG.fullmatch(page.stem.split("-", 1)[-1]), page.name
        assert len(page.name.encode()) <= NAME_MAX
    archived = cli.memory / "archive" / "facts" / "2026-03-02" / "fact-090202-00000002.md"
    assert archived in written and not (cli.memory / "facts" / archived.name).exists()
    for path in cli.memory.rglob("*"):
        assert path.resolve().is_relative_to(cli.memory.resolve())


def test_a_day_folder_linked_out_of_the_folder_is_refused_and_nothing_lost(cli: Cli) -> None:
    """A planted link in place of a day folder: the write that would go through it is
    refused with a message (no traceback), nothing lands outside, the turns stay in the
    journal; once the link is gone, the next run writes them."""
    outside = cli.root / "outside"
    outside.mkdir()
    (cli.memory / "facts").mkdir(parents=True)
    (cli.memory / "facts" / "2026-03-02").symlink_to(outside, target_is_directory=True)
    transcript = cli.root / "t.jsonl"
    row = {"role": "user", "content": "I prefer green tea over coffee.", "session": "s",
           "timestamp": "2026-03-02T09:00:00Z", "id": "t1"}  # fmt: skip
    transcript.write_text(json.dumps(row) + "\n", encoding="utf-8")
    refused = cli("ingest", str(transcript))
    stderr = refused.stderr.decode("utf-8", "replace")
    assert refused.returncode != 0 and "Traceback" not in stderr
    assert "refusing to write outside the memory folder" in stderr
    assert list(outside.iterdir()) == []
    (cli.memory / "facts" / "2026-03-02").unlink()
    again = cli("ingest", str(transcript))
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert [rel for rel in cli.fact_files() if rel.startswith("facts/2026-03-02/")]
