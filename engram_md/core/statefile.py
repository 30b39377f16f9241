"""Small JSON files in state/: read leniently (missing or corrupt -> default), write atomically."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text

log = logging.getLogger(__name__)


def load_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s); starting from defaults", path, exc)
        return default


# How every state file is encoded: stable key order, ASCII only, anything else as its str().
_ENCODING: dict[str, Any] = {"sort_keys": True, "ensure_ascii": True, "default": str}


def save_json(path: Path, data: Any, *, fsync: bool = True, compact: bool = False) -> None:
    """Write ``data`` atomically, indented for a person to read; ``compact`` (one line) for a
    file that grows and is rewritten often: Python encodes indented JSON in pure Python, and
    one line with its C encoder, 7x faster (a 1.1 MB traces.json: 30 ms against 4.5 ms)."""
    text = compact_json(data) if compact else json.dumps(data, indent=2, **_ENCODING)
    atomic_write_text(path, text + "\n", fsync=fsync)


def compact_json(data: Any) -> str:
    """``data`` as ``save_json(..., compact=True)`` encodes it, without the line break: a
    file put together from pieces encoded apart reads the same as one encoded whole."""
    return json.dumps(data, separators=(",", ":"), **_ENCODING)
