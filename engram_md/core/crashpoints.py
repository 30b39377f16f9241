"""Named crash points: kill -9 at an exact place in the write path, on request, for testing.

The crash loop (``bench/crashloop.py``) must hit the moments where a crash hurts most — in a
journal append, around an LLM call, between a temp file's write and its rename, in an index
upsert — which random timing alone reaches rarely. Code marks those places with
``crashpoint("name")``; with the environment variable

    ENGRAM_CRASH_AT=<name>:<n>

the process sends itself SIGKILL the n-th time it reaches the point ``name`` (n >= 1). With

    ENGRAM_CRASH_COUNTS=<file>

it instead counts every point reached and writes ``{"name": count, ...}`` to ``file`` at exit,
so the bench knows how many occurrences an uninterrupted run has.

Both variables are read once, at import. Unset — always, outside the crash loop — a crash
point is one comparison and returns.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
from collections import Counter

CRASH_AT_ENV = "ENGRAM_CRASH_AT"
COUNTS_ENV = "ENGRAM_CRASH_COUNTS"


def _parse(value: str) -> tuple[str, int] | None:
    name, sep, count = value.rpartition(":")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        return None
    return name, int(count)


_raw = os.environ.get(CRASH_AT_ENV, "")
_target = _parse(_raw) if _raw else None
if _raw and _target is None:
    # Only the crash loop sets this; a typo there must not pass for a run that never crashed.
    print(f"engram-md: ignoring {CRASH_AT_ENV}={_raw!r} (expected <name>:<n>)", file=sys.stderr)
_counts_path = os.environ.get(COUNTS_ENV) or None
_seen: Counter[str] = Counter()
_armed = _target is not None or _counts_path is not None


def _write_counts() -> None:
    if _counts_path is not None:
        with open(_counts_path, "w", encoding="utf-8") as handle:
            json.dump(dict(_seen), handle)


if _counts_path is not None:
    atexit.register(_write_counts)


def crashpoint(name: str) -> None:
    """Die here (SIGKILL, no cleanup) if the crash loop asked for this occurrence of ``name``."""
    if not _armed:
        return
    _seen[name] += 1
    if _target is not None and _target[0] == name and _seen[name] >= _target[1]:
        os.kill(os.getpid(), signal.SIGKILL)
