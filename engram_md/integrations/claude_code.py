"""`engram-md integrate claude-code`: the hooks in a Claude Code settings file, added or removed.

Claude Code reads hooks from ``~/.claude/settings.json`` (every project) or a project's
``.claude/settings.json``::

    {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "...",
                                                 "timeout": 10}]}],
               "SessionStart": [...]}}

A change is a value (:class:`SettingsChange`): the file's text before and after, so the
command shows the diff first and writes only what it showed. Adding is idempotent (our entry
is found by its command, ``... hook claude-code ...``, and replaced when the folders changed);
removing takes out our entries only, and whatever became empty because of it. Every other
key and hook of the file stays as it was.
"""

from __future__ import annotations

import copy
import difflib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write_text
from ..core.errors import ConfigError
from ..core.paths import MemoryLayout

EVENTS = ("UserPromptSubmit", "SessionStart")
HOOK_ARGS = ("hook", "claude-code")
# Seconds Claude Code waits for the hook; the hook itself gives up on the daemon well before.
TIMEOUT_SECONDS = 10


def hook_command(executable: str, layout: MemoryLayout) -> str:
    """The hook's command line: this engram-md, with the folders it reads spelled out (the
    hook runs in the project's working directory and reads no configuration file)."""
    return shlex.join(
        [
            executable,
            *HOOK_ARGS,
            "--memory-dir",
            str(layout.memory_dir.absolute()),
            "--state-dir",
            str(layout.state_dir.absolute()),
        ]
    )


def _is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return any(tuple(words[i : i + 2]) == HOOK_ARGS for i in range(len(words)))


def _without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in EVENTS:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                left = [h for h in group["hooks"] if not _is_ours(h)]
                if not left and group["hooks"]:
                    continue  # the group held only ours
                group = {**group, "hooks": left}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def _ours(settings: dict[str, Any], event: str) -> list[Any]:
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return []
    return [
        hook
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if _is_ours(hook)
    ]


def _with_ours(settings: dict[str, Any], command: str) -> dict[str, Any]:
    entry = {"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}
    if all(_ours(settings, event) == [entry] for event in EVENTS):
        return settings  # already there, where it was put
    out = _without_ours(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"'hooks' in the settings is not an object: {hooks!r}")
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"'hooks.{event}' in the settings is not a list")
        groups.append({"hooks": [entry]})
    return out


@dataclass(frozen=True)
class SettingsChange:
    """A settings file's text before and after; None where there is no file."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        label = str(self.path)
        return "".join(
            difflib.unified_diff(
                old, new, fromfile=label if self.before is not None else "/dev/null", tofile=label
            )
        )

    def apply(self) -> None:
        if self.after is None or not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, self.after)


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    try:
        settings = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(settings, dict):
        raise ConfigError(f"{path} does not hold a JSON object")
    return text, settings


def _render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def plan(path: Path, command: str, *, remove: bool = False) -> SettingsChange:
    """The change to ``path`` that adds our hooks with ``command`` (or removes them)."""
    before, settings = _read(path)
    updated = _without_ours(settings) if remove else _with_ours(settings, command)
    if updated == settings:
        return SettingsChange(path, before, before)  # nothing to do: the file stays as written
    return SettingsChange(path, before, _render(updated))
