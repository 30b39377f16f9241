"""The Claude.ai data export (Settings → Privacy → Export data): ``conversations.json`` and
``users.json``.

Each conversation holds ``uuid``, ``name``, ``created_at`` and ``chat_messages``, in order;
each message ``uuid``, ``sender`` (``human`` or ``assistant``), ``created_at`` (ISO-8601),
``content`` — blocks of ``type`` ``text``, ``thinking``, ``tool_use``, ``tool_result`` — (older
exports: ``text`` alone), ``attachments`` (``file_name``, ``extracted_content``) and ``files``.
When messages carry ``parent_message_uuid``, an edit or a retry left branches: the branch
kept ends at ``current_leaf_message_uuid`` when the conversation names it, else at its last
message.

Only text blocks are what someone said. Thinking, tool calls and tool results are not; an
attachment's extracted text is a document the person shared, not a statement of theirs, so
it never becomes a fact (it is counted and left out). The account's ``full_name`` from
``users.json`` names the human speaker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
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

SESSION_PREFIX = "claude-"
USERS = "users.json"

_ROLES = {"human": Role.USER, "assistant": Role.ASSISTANT}
_SKIPPED_BLOCKS = {"thinking": "thinking", "redacted_thinking": "thinking"}


def read_conversations(source: ExportSource) -> Iterator[Item]:
    """Every conversation of the export, or a :class:`Malformed` for one not in its shape."""
    names = account_names(source.json_file(USERS))
    return each_conversation(source, partial(read_conversation, names=names), ("uuid",))


def account_names(users: Any) -> dict[str, str]:
    """Account uuid → full name, from ``users.json`` (a list of accounts)."""
    if not isinstance(users, list):
        return {}
    out: dict[str, str] = {}
    for user in users:
        if isinstance(user, dict) and text_of(user.get("full_name")).strip():
            out[text_of(user.get("uuid"))] = " ".join(user["full_name"].split())
    return out


def read_conversation(raw: dict[str, Any], *, names: dict[str, str]) -> Conversation:
    conv_id = text_of(raw.get("uuid"))
    if not conv_id:
        raise BadShape("no conversation uuid")
    messages = raw.get("chat_messages")
    if not isinstance(messages, list):
        raise BadShape("no chat_messages list")
    if not all(isinstance(m, dict) for m in messages):
        raise BadShape("a message is not an object")
    account = raw.get("account")
    owner = text_of(account.get("uuid")) if isinstance(account, dict) else ""
    # One account in users.json names every conversation; several, the conversation's own.
    speaker = names.get(owner) or (next(iter(names.values())) if len(names) == 1 else None)
    kept = _branch(raw, messages)
    reading = Reading(SESSION_PREFIX + conv_id, f"claude:{conv_id}", _time(raw.get("created_at")))
    reading.skipped["other_branch"] = len(messages) - len(kept)
    for message in kept:
        role = _ROLES.get(text_of(message.get("sender")))
        reading.skipped["attachment"] += len(message.get("attachments") or [])
        reading.skipped["file"] += len(message.get("files") or [])
        if role is None:
            reading.skipped["system"] += 1
            continue
        reading.add(
            text_of(message.get("uuid")) or f"{conv_id}-{len(reading.turns)}",
            role,
            _text(message, reading.skipped),
            _time(message.get("created_at")),
            speaker if role is Role.USER else None,
        )
    return reading.done(conv_id, text_of(raw.get("name")))


def _branch(raw: dict[str, Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the branch kept, in order (all of them when there are no branches)."""
    if not any("parent_message_uuid" in m for m in messages) or not messages:
        return messages
    by_id = {text_of(m.get("uuid")): m for m in messages}
    parents: dict[str, str | None] = {
        key: text_of(m.get("parent_message_uuid")) or None for key, m in by_id.items()
    }
    leaf = text_of(raw.get("current_leaf_message_uuid"))
    if leaf not in by_id:
        leaf = text_of(messages[-1].get("uuid"))
    return [by_id[key] for key in active_path(parents, leaf)]


def _text(message: dict[str, Any], skipped: Counter[str]) -> str:
    blocks = message.get("content")
    if not blocks:
        return text_of(message.get("text"))  # older exports: the text alone
    if not isinstance(blocks, list):
        raise BadShape(f"message {message.get('uuid')}: content is not a list of blocks")
    texts: list[str] = []
    for block in blocks:
        kind = text_of(block.get("type"))
        if kind == "text":
            texts.append(text_of(block.get("text")))
        else:
            skipped[_SKIPPED_BLOCKS.get(kind, "tool")] += 1  # tool_use, tool_result, …
    return "\n\n".join(t for t in texts if t.strip())


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    utc = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return utc.replace(microsecond=0)
