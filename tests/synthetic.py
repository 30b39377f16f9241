"""Deterministic synthetic conversations for crash and load tests (generic JSONL lines)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

NAMES = ["Mira", "Tomas", "Ines", "Kwame", "Yuki", "Lars", "Noor", "Paolo"]
TOOLS = ["Redis", "Kafka", "Terraform", "Grafana", "SQLite", "Rust", "Django", "Kubernetes"]
PLACES = ["Lisbon", "Osaka", "Nairobi", "Toronto", "Tallinn", "Bogota"]
THINGS = ["pottery", "climbing", "chess", "sourdough", "cycling", "photography"]

TEMPLATES = [
    "I always use {tool} for {thing} projects.",
    "We decided to migrate the billing service to {tool} in {n} weeks.",
    "Actually, my team has {n} engineers, not {m}.",
    "I'll send the {thing} report to {other} by Friday.",
    "Yesterday the {tool} cluster crashed because the disk filled up.",
    "I work at a company in {place} that builds {thing} tools.",
    "My sister {other} just moved to {place} for a new job.",
    "I think {tool} is overrated for small teams.",
    "Last weekend I went to {place} and tried {thing} for the first time.",
    "We spent the afternoon talking about {thing} and the {tool} outage.",
    "The new {thing} class starts on {n} March and I signed up.",
    "Honestly the {tool} docs are confusing but the community is great.",
]
ASSISTANT = [
    "That sounds great, tell me more.",
    "Noted. Anything else?",
    "Interesting! How did that go?",
    "Understood.",
]


def conversation(turns: int, *, seed: int = 7, session: str = "syn-1") -> list[str]:
    """``turns`` JSON lines alternating a named person and the assistant, minutes apart."""
    rng = random.Random(seed)
    name = rng.choice(NAMES)
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    lines = []
    for i in range(turns):
        ts = start + timedelta(minutes=3 * i)
        if i % 2 == 0:
            text = rng.choice(TEMPLATES).format(
                tool=rng.choice(TOOLS),
                thing=rng.choice(THINGS),
                place=rng.choice(PLACES),
                other=rng.choice([n for n in NAMES if n != name]),
                n=rng.randint(2, 12),
                m=rng.randint(2, 12),
            )
            line = {"role": "user", "name": name, "content": text}
        else:
            line = {"role": "assistant", "content": rng.choice(ASSISTANT)}
        line.update({"id": f"s{i}", "session": session, "timestamp": ts.isoformat()})
        lines.append(json.dumps(line))
    return lines
