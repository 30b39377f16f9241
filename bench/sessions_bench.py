"""Issue-15 figures: a Claude Code projects folder, subagent files included, through
``engram-md run --watch``, offline.

    python -m bench.sessions_bench [--sessions 6] [--runs 3]

A projects folder is generated with a fixed seed in the line shapes Claude Code writes (the
regression corpus ``tests/data/sessions`` has each shape once; here they come at scale):
sessions made mostly of assistant, tool-result, progress and file-snapshot lines around what
the person typed, system reminders appended to some messages, slash commands and their output,
task notifications, turn durations; two subagent transcripts per session under
``<session>/subagents/`` and one in the older layout, ``agent-<id>.jsonl`` beside the sessions.

Each run starts the daemon on the folder with fresh memory and state folders and sends SIGTERM
once its cursors reach the end of every file outside ``subagents/``; the daemon then flushes and
exits. Throughput is every line in the folder over the wall time from start to exit (start-up
and model load included), the median of the runs. The daemon's CPU time is reported beside it:
on a small shared machine other load stretches wall time far more than CPU time.

A memory counts as a harness memory when its statement is not made of the words of one message
the person typed (:func:`harness_memories`): whatever came from a tool result, a reminder, a
slash command, a task notification or a subagent's prompt brings words no person message has.

Goals: 0 harness memories, >= 1,000 lines/s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_md.store.factfile import read_fact
from engram_md.text.words import LETTER_WORD, STOP_WORDS, content_words

SEED = 7
SESSIONS = 6
TURNS_PER_SESSION = 40
SUBAGENT_LINES = 300  # per subagent transcript
RUNS = 3
# A daemon that never reaches the end of the folder is a failure, not a long wait.
DEADLINE_S = 600.0
GOAL_LINES_PER_SECOND = 1000

PROJECT = "-home-lee-shop"
CWD = "/home/lee/shop"
CLAUDE_CODE_VERSION = "2.1.63"
MODEL = "claude-opus-4-6"
TOOLS = ("Bash", "Read", "Grep", "Edit", "Glob")

# The words of tool output, thinking, file names and filler, and of the {w} in person messages.
VOCABULARY = tuple(
    """
    deploy fly region machine test suite fixture parser module config schema migration
    endpoint handler router cache queue worker cron job build pipeline lint format import
    function class method variable error trace log metric alert staging production branch
    commit review merge release version package dependency lock file folder path
    """.split()
)
# What the person types: durable facts, requests, short replies. {w} is a vocabulary word.
PERSON_MESSAGES = (
    "always run the tests with -x",
    "we deploy with fly, not heroku",
    "start phoenix in background",
    "did you push?",
    "continue",
    "My manager is Ruth.",
    "we pin node to 20 in fly.toml",
    "fix the failing test in the {w} module",
    "the {w} is broken again",
    "I prefer small commits.",
    "Actually, the staging app is called shop-staging, not shop-stage.",
    "looks good",
    "can you check the {w} logs",
    "We decided to keep the {w} in Postgres.",
    "why is the {w} slow?",
    "The repo uses pnpm workspaces.",
    "ok",
    "run the linter",
    "I'll review the {w} PR by Friday.",
)

# How often a turn carries each rarer harness shape.
REMINDER_RATE = 0.3
SLASH_COMMAND_RATE = 0.1
TASK_NOTIFICATION_RATE = 0.15

SLASH_COMMAND = (
    "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
    "<command-args></command-args>"
)
SLASH_COMMAND_OUTPUT = "<local-command-stdout>Set model to opus</local-command-stdout>"
SUBAGENT_PROMPT = "Explore the codebase to understand the current structure. "


# ---------------------------------------------------------------- the folder


@dataclass(frozen=True)
class ProjectsFolder:
    """A generated projects folder and every message the person typed in it (appended
    reminders left off)."""

    root: Path
    person_texts: tuple[str, ...]

    def files(self) -> list[Path]:
        return sorted(self.root.rglob("*.jsonl"))

    def read_files(self) -> list[Path]:
        """The files ``run --watch`` reads: all but the subagent transcripts."""
        return [path for path in self.files() if path.parent.name != "subagents"]


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _filler(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(count))


class _Transcript:
    """The lines of one transcript file. Message lines are chained by ``parentUuid`` as Claude
    Code chains them; a subagent's lines carry its ``agentId`` and ``isSidechain``."""

    def __init__(
        self, rng: random.Random, session_id: str, day: str, agent_id: str | None = None
    ) -> None:
        self.rng = rng
        self.session_id = session_id
        self.day = day
        self.agent_id = agent_id
        self.lines: list[dict[str, Any]] = []
        self._parent: str | None = None

    def timestamp(self, minute: int, second: int) -> str:
        return f"{self.day}T{8 + minute // 60:02d}:{minute % 60:02d}:{second:02d}.000Z"

    def envelope(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "parentUuid": self._parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": "main",
        }
        if self.agent_id is None:
            fields["slug"] = "scaled-session"
        else:
            fields["agentId"] = self.agent_id
        return fields

    def message(self, kind: str, message: dict[str, Any], at: str, **extra: Any) -> str:
        """Append a user or assistant line chained to the previous message; returns its uuid."""
        line_id = _uuid4(self.rng)
        self.lines.append(
            {
                **self.envelope(),
                "type": kind,
                "message": message,
                "uuid": line_id,
                "timestamp": at,
                **extra,
            }
        )
        self._parent = line_id
        return line_id

    def user(self, content: str | list[dict[str, Any]], at: str, **extra: Any) -> str:
        return self.message("user", {"role": "user", "content": content}, at, **extra)

    def assistant(self, blocks: list[dict[str, Any]], at: str, stop: str | None = None) -> str:
        body = {
            "model": MODEL,
            "id": f"msg_{self.rng.getrandbits(48):012x}",
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 6,
                "cache_creation_input_tokens": 900,
                "cache_read_input_tokens": 40000,
                "output_tokens": 300,
                "service_tier": "standard",
            },
        }
        return self.message("assistant", body, at, requestId=f"req_{self.rng.getrandbits(48):012x}")

    def unchained(self, line: dict[str, Any]) -> None:
        """Append a line outside the message chain (snapshot, progress, queue, timing)."""
        self.lines.append(line)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")


def _person_message(rng: random.Random) -> str:
    return rng.choice(PERSON_MESSAGES).replace("{w}", rng.choice(VOCABULARY))


def _snapshot(transcript: _Transcript, minute: int) -> None:
    rng = transcript.rng
    at = transcript.timestamp(minute, 0)
    backups = {
        f"lib/{word}.ex": {
            "backupFileName": f"{rng.getrandbits(32):08x}@v2",
            "version": 2,
            "backupTime": at,
        }
        for word in rng.sample(VOCABULARY, 3)
    }
    transcript.unchained(
        {
            "type": "file-history-snapshot",
            "messageId": _uuid4(rng),
            "snapshot": {"messageId": _uuid4(rng), "trackedFileBackups": backups, "timestamp": at},
            "isSnapshotUpdate": rng.random() < 0.5,
        }
    )


def _tool_call(transcript: _Transcript, minute: int, call: int) -> None:
    """An assistant tool call, its progress lines and the tool result (a user line)."""
    rng = transcript.rng
    tool_use_id = f"toolu_{rng.getrandbits(64):016x}"
    tool_use = {
        "type": "tool_use",
        "id": tool_use_id,
        "name": rng.choice(TOOLS),
        "input": {"command": f"mix test {rng.choice(VOCABULARY)}", "description": _filler(rng, 5)},
    }
    at = transcript.timestamp(minute, 4 + call)
    caller = transcript.assistant(
        [{"type": "text", "text": _filler(rng, 40)}, tool_use], at, stop="tool_use"
    )
    for step in range(rng.randint(0, 4)):
        progress = {
            "type": "bash_progress",
            "output": _filler(rng, 20),
            "fullOutput": _filler(rng, 80),
            "elapsedTimeSeconds": step,
            "totalLines": 10 * step,
        }
        transcript.unchained(
            {
                **transcript.envelope(),
                "type": "progress",
                "data": progress,
                "toolUseID": f"bash-progress-{step}",
                "parentToolUseID": tool_use_id,
                "uuid": _uuid4(rng),
                "timestamp": transcript.timestamp(minute, 5 + call),
            }
        )
    output = "\n".join(
        f"{rng.choice(VOCABULARY)}.ex:{rng.randint(1, 900)}: {_filler(rng, 12)}"
        for _ in range(rng.randint(5, 200))
    )
    result = {"tool_use_id": tool_use_id, "type": "tool_result", "content": output}
    transcript.user(
        [{**result, "is_error": False}],
        transcript.timestamp(minute, 6 + call),
        toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
        sourceToolAssistantUUID=caller,
    )


def _task_notification(transcript: _Transcript, minute: int) -> None:
    """A background command finishing: queued by the harness, then written as a user line."""
    rng = transcript.rng
    notice = (
        f"<task-notification>\n<task-id>b{rng.getrandbits(24):06x}</task-id>\n"
        "<status>completed</status>\n"
        "<summary>Background command completed (exit code 0).</summary>\n</task-notification>"
    )
    transcript.unchained(
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": transcript.timestamp(minute, 30),
            "sessionId": transcript.session_id,
            "content": notice,
        }
    )
    transcript.user(notice, transcript.timestamp(minute, 31))


def _turn(transcript: _Transcript, minute: int) -> str:
    """One exchange: the person's message, then the work it sets off. Returns the message."""
    rng = transcript.rng
    _snapshot(transcript, minute)
    said = _person_message(rng)
    typed = said
    if rng.random() < REMINDER_RATE:
        opened = f"The user opened the file lib/{rng.choice(VOCABULARY)}.ex. {_filler(rng, 60)}"
        typed += f"\n\n<system-reminder>\n{opened}\n</system-reminder>"
    transcript.user(
        typed,
        transcript.timestamp(minute, 1),
        permissionMode="default",
        thinkingMetadata={"maxThinkingTokens": 31999},
        todos=[],
    )
    if rng.random() < SLASH_COMMAND_RATE:
        transcript.user(SLASH_COMMAND, transcript.timestamp(minute, 2))
        transcript.user(SLASH_COMMAND_OUTPUT, transcript.timestamp(minute, 2))
    thinking = {"type": "thinking", "thinking": _filler(rng, 120), "signature": "Eq" + "A" * 200}
    transcript.assistant([thinking], transcript.timestamp(minute, 3))
    for call in range(rng.randint(2, 8)):
        _tool_call(transcript, minute, call)
    if rng.random() < TASK_NOTIFICATION_RATE:
        _task_notification(transcript, minute)
    answer = {"type": "text", "text": _filler(rng, rng.randint(30, 200))}
    transcript.assistant([answer], transcript.timestamp(minute, 40), stop="end_turn")
    transcript.unchained(
        {
            **transcript.envelope(),
            "type": "system",
            "subtype": "turn_duration",
            "durationMs": rng.randint(2000, 90000),
            "isMeta": False,
            "uuid": _uuid4(rng),
            "timestamp": transcript.timestamp(minute, 41),
        }
    )
    return said


def _subagent(
    rng: random.Random, session_id: str, day: str, minute: int, line_count: int
) -> _Transcript:
    """A subagent's transcript: the task prompt, then searches and their results."""
    transcript = _Transcript(rng, session_id, day, agent_id=f"a{rng.getrandbits(24):06x}")
    transcript.user(SUBAGENT_PROMPT + _filler(rng, 40), transcript.timestamp(minute, 0))
    while len(transcript.lines) < line_count:
        tool_use_id = f"toolu_{rng.getrandbits(64):016x}"
        search = {
            "type": "tool_use",
            "id": tool_use_id,
            "name": "Grep",
            "input": {"pattern": rng.choice(VOCABULARY)},
        }
        transcript.assistant([search], transcript.timestamp(minute, 1), stop="tool_use")
        output = "\n".join(_filler(rng, 10) for _ in range(rng.randint(5, 100)))
        transcript.user(
            [{"tool_use_id": tool_use_id, "type": "tool_result", "content": output}],
            transcript.timestamp(minute, 2),
            toolUseResult={"content": output},
        )
    return transcript


def _session(
    rng: random.Random, project: Path, day: str, turns: int, subagent_lines: int
) -> list[str]:
    """Write one session, its two subagent transcripts under ``<session>/subagents/`` and one
    in the older layout beside it; returns what the person typed."""
    session_id = _uuid4(rng)
    transcript = _Transcript(rng, session_id, day)
    said: list[str] = []
    minute = 0
    for _ in range(turns):
        minute += rng.randint(1, 4)
        said.append(_turn(transcript, minute))
    transcript.write(project / f"{session_id}.jsonl")
    for _ in range(2):
        subagent = _subagent(rng, session_id, day, minute, subagent_lines)
        subagent.write(project / session_id / "subagents" / f"agent-{subagent.agent_id}.jsonl")
    older = _subagent(rng, session_id, day, minute, subagent_lines // 2)
    older.write(project / f"agent-{older.agent_id}.jsonl")
    return said


def generate(
    root: Path,
    *,
    sessions: int = SESSIONS,
    turns: int = TURNS_PER_SESSION,
    subagent_lines: int = SUBAGENT_LINES,
    seed: int = SEED,
) -> ProjectsFolder:
    """A projects folder with one project of ``sessions`` sessions, one a day."""
    rng = random.Random(seed)
    said: list[str] = []
    for day in range(sessions):
        date = f"2026-03-{2 + day:02d}"
        said += _session(rng, root / PROJECT, date, turns, subagent_lines)
    return ProjectsFolder(root, tuple(said))


# ---------------------------------------------------------------- the harness check

# Words the offline extractor writes around what the person said, in the third person:
# "we deploy" → "The user's team deploys", "always run" → "The user wants the assistant to
# always run".
FRAMING_WORDS = frozenset({"user", "s", "team", "wants", "assistant"})


def statement_words(text: str) -> frozenset[str]:
    """The content words of a statement, framing words and numbers left out (the extractor adds
    resolved dates: "by Friday (2026-03-06)"), a final -s dropped ("deploys" → "deploy")."""
    found = content_words(text, STOP_WORDS | FRAMING_WORDS, LETTER_WORD)
    return frozenset(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in found)


def harness_memories(statements: Iterable[str], person_texts: Iterable[str]) -> list[str]:
    """The statements, in order, whose content words are not all in one person message: they
    came, at least partly, from something the person did not type."""
    typed = [statement_words(text) for text in set(person_texts)]
    flagged = []
    for statement in statements:
        own = statement_words(statement)
        if not own or not any(own <= words for words in typed):
            flagged.append(statement)
    return flagged


# ---------------------------------------------------------------- the daemon


@dataclass(frozen=True)
class WatchRun:
    seconds: float
    cpu_seconds: float  # the daemon's, user and system: less moved by other load than wall time
    lines_read: int
    subagent_lines_read: int
    statements: list[str]


def _offline_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}


def _cursors(path: Path) -> dict[str, Any]:
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not written yet, or read while being replaced
        return {}
    return saved if isinstance(saved, dict) else {}


def _caught_up(cursors_path: Path, sizes: dict[str, int]) -> bool:
    cursors = _cursors(cursors_path)
    return all(key in cursors and cursors[key]["offset"] == size for key, size in sizes.items())


def watch_once(folder: ProjectsFolder, root: Path) -> WatchRun:
    """Run the daemon on ``folder`` with memory and state under ``root`` until it has read every
    file it should, then stop it; the time is from start to exit."""
    state = root / "state"
    argv = [
        *(sys.executable, "-m", "engram_md"),
        *("--memory-dir", str(root / "memory"), "--state-dir", str(state)),
        *("run", "--watch", str(folder.root), "--no-stdin"),
    ]
    sizes = {str(path.resolve()): path.stat().st_size for path in folder.read_files()}
    log = root / "daemon.log"
    root.mkdir(parents=True, exist_ok=True)
    # Children's usage counts each child once it is waited for: the difference is the daemon's.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("wb") as stderr:
        start = time.perf_counter()
        daemon = subprocess.Popen(
            argv, env=_offline_env(), stdout=subprocess.DEVNULL, stderr=stderr, cwd=root
        )
        try:
            while not _caught_up(state / "cursors.json", sizes):
                if daemon.poll() is not None or time.perf_counter() - start > DEADLINE_S:
                    break
                time.sleep(0.05)
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=DEADLINE_S)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
        seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0 or not _caught_up(state / "cursors.json", sizes):
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"engram-md run --watch (exit {code}) did not read the folder:\n{tail}")
    cursors = _cursors(state / "cursors.json")
    facts = sorted((root / "memory" / "facts").rglob("*.md"))
    return WatchRun(
        seconds=seconds,
        cpu_seconds=after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        lines_read=sum(cursor["lineno"] for cursor in cursors.values()),
        subagent_lines_read=sum(
            cursor["lineno"]
            for key, cursor in cursors.items()
            if Path(key).parent.name == "subagents"
        ),
        statements=[read_fact(path).content for path in facts],
    )


def _line_count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def run(sessions: int = SESSIONS, runs: int = RUNS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="engram-bench-sessions-") as tmp:
        work = Path(tmp)
        folder = generate(work / "projects", sessions=sessions)
        files = folder.files()
        lines = sum(_line_count(path) for path in files)
        results = [watch_once(folder, work / f"run-{index}") for index in range(runs)]
    speeds = [lines / result.seconds for result in results]
    # Every run's memories are checked (the offline pipeline should write the same each time).
    statements = sorted({s for result in results for s in result.statements})
    flagged = harness_memories(statements, folder.person_texts)
    return {
        "sessions": sessions,
        "files": len(files),
        "subagent_files": sum(path.parent.name == "subagents" for path in files),
        "lines_in_folder": lines,
        "lines_read": results[0].lines_read,
        "subagent_lines_read": results[0].subagent_lines_read,
        "person_messages": len(folder.person_texts),
        "lines_per_second": round(statistics.median(speeds)),
        "lines_per_second_min": round(min(speeds)),
        "lines_per_second_max": round(max(speeds)),
        "lines_per_cpu_second": round(statistics.median(lines / r.cpu_seconds for r in results)),
        "memories_written": len(results[0].statements),
        "harness_memories": len(flagged),
        "harness_memory_examples": flagged[:5],
        "goals": {"harness_memories": 0, "lines_per_second": GOAL_LINES_PER_SECOND},
        "runs": [
            {
                "seconds": round(result.seconds, 2),
                "cpu_seconds": round(result.cpu_seconds, 2),
                "lines_per_second": round(speed),
                "memories": len(result.statements),
            }
            for result, speed in zip(results, speeds, strict=True)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    print(json.dumps(run(args.sessions, args.runs), indent=2))


if __name__ == "__main__":
    main()
