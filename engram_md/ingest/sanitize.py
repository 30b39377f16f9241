"""Clean a turn before anything reaches an LLM or the disk.

Three jobs, in this order:

1. strip ``<memory>`` blocks: they are our own recall output pasted into a prompt; reading them
   back as conversation would store memories of memories (a feedback loop);
2. redact secrets (API keys, tokens, passwords, private keys: :mod:`.credentials`) and, unless
   configured otherwise, personal data (card numbers, national ids: :mod:`.personal`) as
   ``[REDACTED:<kind>]``, because fact files are committed to git and an extraction prompt
   goes to a third party. Nothing is journaled before this, so the journal, the embedding
   cache and the index only ever see the redacted text;
3. cap the length, cut at a word boundary.

Terminal escape sequences and control characters go first: pasted shell output carries
them, and neither an LLM prompt nor a markdown file should.

Redaction comes before the cap so that a cut never splits a secret into a piece that no
longer looks like one.
"""

from __future__ import annotations

from dataclasses import replace

import regex

from ..core.config import SanitizeConfig
from ..core.models import Turn
from .credentials import marker, redact_credentials
from .personal import redact_personal

_FLAGS = regex.VERSION1

# ---- memory blocks --------------------------------------------------------------------------

# An unterminated block runs to the end of the text: whatever follows an opening tag that was
# never closed is recall output too, as far as we can tell. The blanks before a block go with
# it, so "a <memory>…</memory> b" becomes "a b".
_MEMORY_BLOCK = regex.compile(
    r"[ \t]*<memory(?:\s[^<>]*)?>.*?(?:</memory\s*>|\Z)",
    _FLAGS | regex.IGNORECASE | regex.DOTALL,
)
_STRAY_MEMORY_CLOSE = regex.compile(r"[ \t]*</memory\s*>", _FLAGS | regex.IGNORECASE)
_ANY_MEMORY_TAG = regex.compile(r"</?memory", _FLAGS | regex.IGNORECASE)
_MAX_STRIP_ROUNDS = 8
_BLANK_RUN = regex.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")

# ---- text hygiene ---------------------------------------------------------------------------

# Terminal colour and cursor sequences (pasted shell output), then the remaining C0 controls
# except tab and newline: nothing an LLM or a markdown file should see.
_ANSI = regex.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = regex.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def strip_memory_blocks(text: str) -> str:
    """Remove ``<memory>…</memory>`` blocks (any case, multi-line, unterminated to the end)."""
    if "<" not in text:
        return text
    stripped = text
    # Removing a block can join the pieces around it into a new tag ("<mem<memory>…</memory>
    # ory>"), so strip until nothing changes; past a few rounds the text is built to evade,
    # and everything from its first remaining tag on is dropped like an unterminated block.
    for _ in range(_MAX_STRIP_ROUNDS):
        again = _MEMORY_BLOCK.sub("", stripped)
        if again == stripped:
            # Stray closing tags go last: removed earlier, one could be the end of a block
            # that a later round assembles.
            again = _STRAY_MEMORY_CLOSE.sub("", stripped)
            if again == stripped:
                break
        stripped = again
    else:
        tag = _ANY_MEMORY_TAG.search(stripped)
        if tag is not None:
            stripped = stripped[: tag.start()]
    if stripped == text:
        return text
    return _BLANK_RUN.sub("\n\n", stripped).strip()


def redact_secrets(text: str, *, personal: bool = True) -> tuple[str, int]:
    """Replace credentials (and, with ``personal``, card numbers, national ids and IBANs)
    with ``[REDACTED:<kind>]``; return the new text and how many were replaced."""
    text, total = redact_credentials(text)
    if personal:
        text, n = redact_personal(text, marker)
        total += n
    return text, total


def _clean_controls(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ANSI.sub("", text))


def _cap(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary when one is near, then "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    # Only back up to a space in the last fifth: one very long word is cut where it stands.
    if space >= limit * 4 // 5:
        cut = cut[:space]
    return cut.rstrip() + "…"


def sanitize_turn(turn: Turn, cfg: SanitizeConfig) -> Turn | None:
    """The turn as it may be stored and sent on, or None if nothing meaningful is left."""
    # Whatever lies far past the cap is dropped anyway; cutting it first bounds the regex work
    # on a multi-megabyte paste. The margin keeps secrets around the cap whole and is far
    # larger than a recalled <memory> block.
    text = _clean_controls(turn.content[: 2 * cfg.max_turn_chars + 16384])
    text = strip_memory_blocks(text)
    if cfg.redact_secrets:
        text, _ = redact_secrets(text, personal=cfg.redact_personal_data)
    text = _cap(text.strip(), cfg.max_turn_chars)
    if not text.strip():
        return None
    if text == turn.content:
        return turn
    return replace(turn, content=text)
