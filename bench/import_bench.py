"""Import speed: a generated ChatGPT export of 50,000 messages through `engram-md import`.

    python -m bench.import_bench [--messages 50000] [--keep DIR]

The export is written in ChatGPT's shape (a mapping tree per conversation, a regenerated
answer in one conversation of ten, tool calls in one of five), with user messages that
state preferences, decisions, people and plans among small talk, and longer answers. The
real CLI imports it offline in a subprocess; the figures are turns per second (turns fed
to the pipeline: the active branch's user and assistant messages) and the child's peak
RSS. Goal: >= 200 turns/s, <= 400 MB.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from .pipeline_bench import _cli

GOAL_TURNS_PER_SECOND = 200
GOAL_PEAK_RSS_MB = 400
MESSAGES_PER_CONVERSATION = 20

_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun"]
_PLACES = ["Lisbon", "Porto", "Utrecht", "Kyoto", "Oslo", "Denver", "Quito", "Perth"]
_TOOLS = ["PostgreSQL", "DuckDB", "Rust", "Kafka", "Redis", "Terraform", "Svelte", "Django"]
_FOODS = ["oat milk", "green tea", "espresso", "ramen", "dark chocolate", "kimchi"]
_STATEMENTS = [
    "I prefer {food} over anything else in the morning.",
    "We decided to move the {n}th service to {tool} next quarter.",
    "My sister {name} lives in {place} and works as a teacher.",
    "I will send the report on {tool} to {name} by Friday.",
    "I started learning the cello and practice {n} minutes every evening.",
    "Please always answer me in short bullet points about {tool}.",
    "Actually, the meeting with {name} moved to {place}, not the office.",
]
_SMALL_TALK = [
    "How would you explain the difference between {tool} and the old setup to a new hire?",
    "Thanks, that helps a lot.",
    "Can you give me an example with {n} items?",
    "What do people usually get wrong about {tool}?",
    "Interesting, tell me more about {place}.",
]
_ANSWER = (
    "Here is a longer answer about {tool}. It covers the main trade-offs, a few examples with "
    "{n} items, and what to watch for when {name} reviews the change. In short: start small, "
    "measure, and keep the old path until the new one has run for a week without surprises. "
)


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        food=rng.choice(_FOODS),
        n=rng.randint(2, 400),
        tool=rng.choice(_TOOLS),
        name=rng.choice(_NAMES),
        place=rng.choice(_PLACES),
    )


def _message(node_id: str, role: str, text: str, t: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": t,
        "content": {"content_type": "text", "parts": [text]},
        "status": "finished_successfully",
        "metadata": {},
        "recipient": "all",
        **extra,
    }


def conversation(index: int, rng: random.Random) -> tuple[dict[str, Any], int]:
    """One conversation in ChatGPT's shape; returns it and how many turns it holds."""
    conv_id = f"bench-{index:06d}"
    start = 1_672_531_200 + index * 3_600  # 2023-01-01, one conversation an hour
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None}}
    parent, turns, t = "root", 0, float(start)
    for i in range(MESSAGES_PER_CONVERSATION // 2):
        user = f"{conv_id}-u{i}"
        pool = _STATEMENTS if rng.random() < 0.35 else _SMALL_TALK
        mapping[user] = {"message": _message(user, "user", _fill(rng.choice(pool), rng), t)}
        mapping[user]["parent"] = parent
        answer = f"{conv_id}-a{i}"
        text = _fill(_ANSWER, rng) * rng.randint(1, 3)
        mapping[answer] = {"message": _message(answer, "assistant", text, t + 20)}
        mapping[answer]["parent"] = user
        if i == 0 and index % 10 == 0:  # a regenerated answer: the old one is off the branch
            old = f"{answer}-old"
            mapping[old] = {"message": _message(old, "assistant", "An older answer.", t + 10)}
            mapping[old]["parent"] = user
        parent, turns, t = answer, turns + 2, t + 60
    for key, node in mapping.items():
        node["id"] = key
        node["children"] = [k for k, n in mapping.items() if n.get("parent") == key]
    return {
        "id": conv_id,
        "conversation_id": conv_id,
        "title": f"Conversation {index}",
        "create_time": float(start),
        "mapping": mapping,
        "current_node": parent,
    }, turns


def write_export(path: Path, messages: int, seed: int = 7) -> int:
    """Write an export of about ``messages`` active-branch messages; returns the turns."""
    rng = random.Random(seed)
    turns = 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("[")
        for index in range(max(1, messages // MESSAGES_PER_CONVERSATION)):
            conv, n = conversation(index, rng)
            handle.write(("," if index else "") + json.dumps(conv))
            turns += n
        handle.write("]")
    return turns


def run(messages: int = 50_000, keep: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        export = root / "conversations.json"
        turns = write_export(export, messages)
        result, wall, rss = _cli(root, "import", "chatgpt", str(export))
        if result.returncode != 0:
            raise RuntimeError(result.stderr.decode()[-2000:])
        memories = sum(1 for _ in (root / "memory" / "facts").rglob("*.md"))
        again, wall_again, _ = _cli(root, "import", "chatgpt", str(export))
        rate = turns / wall
        return {
            "messages": turns,
            "export_mb": round(export.stat().st_size / 2**20, 1),
            "seconds": round(wall, 1),
            "turns_per_second": round(rate, 1),
            "peak_rss_mb": rss,
            "memories": memories,
            "reimport_seconds": round(wall_again, 1),
            "reimport_ok": again.returncode == 0,
            "goal_turns_per_second": GOAL_TURNS_PER_SECOND,
            "goal_peak_rss_mb": GOAL_PEAK_RSS_MB,
            "summary": [
                line
                for line in result.stderr.decode(errors="replace").splitlines()
                if line.startswith("engram-md: imported")
            ],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the folder here.")
    args = parser.parse_args()
    print(json.dumps(run(args.messages, args.keep), indent=2))


if __name__ == "__main__":
    main()
