"""The links footer of a fact file: relative markdown links to its box and its entity pages.

Below the statement, every fact file that has a box or names an entity ends with a short
generated footer an editor or a git host can follow::

    Dana's cat is called Miso.

    <!-- engram-md:links -->
    [box](../../boxes/2026-03-02/box-….md) · [person-dana](../../entities/person-dana.md)

The footer is made from the frontmatter (``boxId``, ``entities``) and from where the file
sits (``facts/…`` or ``archive/facts/…``) each time the file is written, and taken off when
it is read (:func:`strip_links`): the statement, its hash and everything computed from the
text never see it, and a file without one (an older file, a hand-written one) reads the same.
Only the exact shape written here is taken off — the marker line, then one line of links,
at the very end — so a statement that merely contains the marker keeps every word.

An entity links to the page named by the fact's own spelling (``entities/<slug>.md``): the
page of that entity, or, once consolidation has merged spellings, a short note pointing to
the merged page. A box link names the box file the fact's box is sealed into.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from ..core.models import Fact
from ..core.paths import safe_slug

__all__ = ["MARKER", "box_file", "entity_page", "render_links", "strip_links", "to_memory_root"]

MARKER = "<!-- engram-md:links -->"
SEPARATOR = " · "

_LINK = r"\[(?:\\.|[^\]\\\n])*\]\([^()\s]*\)"
_FOOTER = re.compile(
    rf"\n*^{re.escape(MARKER)}[ \t]*\n{_LINK}(?:{SEPARATOR}{_LINK})*[ \t]*\n*\Z", re.M
)
_ESCAPE = re.compile(r"([\\\[\]])")
# The day in a box id as box files are named: ``box-YYYYMMDD-HHMMSS-<hash>``.
_BOX_DAY = re.compile(r"^box-(\d{4})(\d{2})(\d{2})-")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


def entity_page(raw: str) -> str | None:
    """The file name in ``entities/`` of the page of an entity as a fact spells it
    (``<slug>.md``); None when the spelling has no letter or digit to name a file by."""
    slug = safe_slug(raw, fallback="")
    return f"{slug}.md" if slug else None


def box_file(box_id: str, fallback: datetime) -> str | None:
    """``boxes/YYYY-MM-DD/<id>.md`` (relative to the memory folder), the day read from the id
    as box files are named (``fallback``'s when the id has another form); None for an id
    that is no plain file name (a hand edit)."""
    if not _FILE_NAME.fullmatch(box_id):
        return None
    match = _BOX_DAY.match(box_id)
    day = "-".join(match.groups()) if match else fallback.strftime("%Y-%m-%d")
    return f"boxes/{day}/{box_id}.md"


def to_memory_root(path: Path) -> str | None:
    """The ``../`` steps from a fact file's folder to the memory folder: the nearest folder
    named ``facts`` is ``facts/`` or ``archive/facts/``. None for a file outside both."""
    for steps, folder in enumerate(path.parents, start=1):
        if folder.name == "facts":
            return "../" * (steps + (folder.parent.name == "archive"))
    return None


def render_links(fact: Fact, path: Path) -> str:
    """The footer of ``fact`` written at ``path``: the marker line and one line of links, or
    "" when there is nothing to link (no box, no entity) or the file is outside the folder."""
    root = to_memory_root(path)
    if root is None:
        return ""
    links: list[str] = []
    box = box_file(fact.box_id, fact.created) if fact.box_id is not None else None
    if box is not None:
        links.append(f"[box]({quote(root + box)})")
    for raw in dict.fromkeys(fact.entities):
        page = entity_page(raw)
        if page is not None:
            text = _ESCAPE.sub(r"\\\1", " ".join(raw.split()))
            links.append(f"[{text}]({quote(f'{root}entities/{page}')})")
    if not links:
        return ""
    return f"{MARKER}\n{SEPARATOR.join(links)}"


def strip_links(body: str) -> str:
    """``body`` without its generated footer (line breaks already LF)."""
    return _FOOTER.sub("", body)
