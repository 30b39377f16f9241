"""LoCoMo dev data (read from ../shared/bench, never copied into the project).

Turns become generic JSONL lines: speaker ``name``, ``dia_id`` as ``id``, the session's date as
``timestamp``, the conversation id as ``session``. An image a speaker shared is kept as its
caption, since the conversation refers to it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Turn:
    conversation: str
    dia_id: str
    speaker: str
    text: str
    timestamp: datetime
    session_no: int


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]


def available() -> bool:
    return DATA.exists()


def load(path: Path = DATA) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(data: list[dict]) -> list[Turn]:  # type: ignore[type-arg]
    out: list[Turn] = []
    for conv in data:
        c = conv["conversation"]
        numbers = sorted(
            int(k.split("_")[1])
            for k in c
            if re.fullmatch(r"session_\d+", k) and isinstance(c[k], list)
        )
        for n in numbers:
            when = parse_session_date(c[f"session_{n}_date_time"])
            for t in c[f"session_{n}"]:
                text = t.get("text", "")
                caption = t.get("blip_caption")
                if caption:
                    text = f"{text} [shares an image: {caption}]".strip()
                out.append(Turn(conv["sample_id"], t["dia_id"], t["speaker"], text, when, n))
    return out


def questions(data: list[dict]) -> list[Question]:  # type: ignore[type-arg]
    out = []
    for conv in data:
        for qa in conv["qa"]:
            cat = int(qa.get("category", 0))
            if cat not in CATEGORIES:
                continue
            evidence = tuple(dict.fromkeys(_EVIDENCE.findall(" ".join(qa.get("evidence", [])))))
            if not evidence:
                continue  # a few items have no usable evidence ids
            out.append(Question(conv["sample_id"], qa["question"], cat, evidence))
    return out


def jsonl_lines(items: list[Turn]) -> list[str]:
    return [
        json.dumps(
            {
                "role": "user",
                "name": t.speaker,
                "content": t.text,
                "id": t.dia_id,
                "session": t.conversation,
                "timestamp": t.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        for t in items
    ]
