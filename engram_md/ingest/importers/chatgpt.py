"""ChatGPT's data export (Settings → Data controls → Export data): ``conversations.json``.

Each conversation holds ``id`` (or ``conversation_id``), ``title``, ``create_time`` (epoch
seconds), ``mapping`` — node id → ``{message, parent, children}``, a tree — and
``current_node``, the leaf of the branch the conversation shows. Only that branch was said:
a message edited or an answer regenerated starts a sibling branch, and the abandoned one
is not what anyone ended up saying. Walking ``parent`` up from ``current_node`` gives it.

On the branch, a message is the words of its author only when its author is the user or
the assistant, it is shown (``metadata.is_visually_hidden_from_conversation`` unset), it is
addressed to the conversation (``recipient`` "all", not a tool) and it is text
(``content_type`` ``text`` or ``multimodal_text``). Everything else — system and hidden
context (custom instructions, memory), tool calls and their output (code, execution output,
browsing, quotes), reasoning — is counted and left out. Of a multimodal message the text
parts and voice transcriptions are kept; images and other media are skipped.

The export names no person (``user.json`` holds an e-mail), so the speaker book names the
user as it would in any transcript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ...core.models import Role
from .exports import (
    BadShape,
    Conversation,
    ExportSource,
    Item,
    Reading,
    active_path,
    each_conversation,
    text_of,
)

SESSION_PREFIX = "chatgpt-"

_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
_TEXT_TYPES = frozenset({"text", "multimodal_text"})
# Context the interface adds and never shows as a message.
_HIDDEN_TYPES = frozenset({"user_editable_context", "model_editable_context"})
_THINKING_TYPES = frozenset({"thoughts", "reasoning_recap"})


def read_conversations(source: ExportSource) -> Iterator[Item]:
    """Every conversation of the export, or a :class:`Malformed` for one not in its shape."""
    return each_conversation(source, read_conversation, ("conversation_id", "id"))


def read_conversation(raw: dict[str, Any]) -> Conversation:
    conv_id = text_of(raw.get("conversation_id")) or text_of(raw.get("id"))
    if not conv_id:
        raise BadShape("no conversation id")
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise BadShape("no message tree (mapping)")
    if not all(isinstance(node, dict) for node in mapping.values()):
        raise BadShape("a node of the message tree is not an object")
    parents = {key: node.get("parent") for key, node in mapping.items()}
    leaf = raw.get("current_node")
    if not isinstance(leaf, str) or leaf not in mapping:
        leaf = _newest_leaf(mapping)
    branch = active_path(parents, leaf)
    on_branch = set(branch)
    reading = Reading(SESSION_PREFIX + conv_id, f"chatgpt:{conv_id}", _time(raw.get("create_time")))
    reading.skipped["other_branch"] = sum(
        1 for key, node in mapping.items() if key not in on_branch and node.get("message")
    )
    for key in branch:
        message = mapping[key].get("message")
        if message is None:
            continue  # the tree's root
        if not isinstance(message, dict):
            raise BadShape(f"message {key} is not an object")
        reason = _left_out(message)
        if reason is not None:
            reading.skipped[reason] += 1
            continue
        reading.add(
            text_of(message.get("id")) or key,
            _ROLES[message["author"]["role"]],
            _text(message["content"], reading.skipped),
            _time(message.get("create_time")),
        )
    return reading.done(conv_id, text_of(raw.get("title")))


def _left_out(message: dict[str, Any]) -> str | None:
    """Why a message on the branch is not its author's words, or None when it is."""
    role = message["author"]["role"]
    metadata = message.get("metadata") or {}
    content_type = (message.get("content") or {}).get("content_type")
    if role == "system":
        return "system"
    if metadata.get("is_visually_hidden_from_conversation") or content_type in _HIDDEN_TYPES:
        return "hidden"
    if role not in _ROLES or message.get("recipient") not in (None, "all"):
        return "tool"  # a tool's output, or a call addressed to a tool
    if content_type in _THINKING_TYPES:
        return "thinking"
    if content_type not in _TEXT_TYPES:
        return "tool"  # code, execution output, browsing, quotes…
    return None


def _text(content: dict[str, Any], skipped: Counter[str]) -> str:
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise BadShape("a text message without parts")
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("content_type") == "audio_transcription":
            texts.append(text_of(part.get("text")))  # what the person said aloud
        elif isinstance(part, dict):
            kind = text_of(part.get("content_type"))
            skipped["image" if "image" in kind else "media"] += 1
    return "\n".join(t for t in texts if t.strip())


def _time(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(float(value), UTC).replace(microsecond=0)
    return None


def _newest_leaf(mapping: dict[str, Any]) -> str:
    """Without ``current_node``: the most recent leaf, the branch most likely kept."""
    leaves = [key for key, node in mapping.items() if not node.get("children")]
    if not leaves:
        raise BadShape("the message tree has no leaf")

    def created(key: str) -> float:
        message = mapping[key].get("message") or {}
        value = message.get("create_time") if isinstance(message, dict) else None
        return float(value) if isinstance(value, int | float) else 0.0

    return max(leaves, key=created)
