"""`engram-md hook claude-code`: memory for Claude Code's prompt, asked of the running daemon.

Claude Code runs the hook command on every prompt (``UserPromptSubmit``) and at the start of
a session (``SessionStart``), with the event as JSON on stdin (``hook_event_name``,
``session_id``, ``transcript_path``, ``cwd``, and ``prompt`` or ``source``). What the hook
prints on stdout, as::

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

goes in front of the model with the prompt. For a prompt that is the ``<memory>`` block of a
recall through the daemon (``POST /recall``, state/daemon.json); at the start of a session,
``profile.md``. Nothing relevant, or no profile: nothing printed.

It runs before every prompt, so it must start fast: this module is the console script's entry
point and uses the standard library alone. ``engram-md hook ...`` never loads the command line
(typer, rich) nor the recall stack (LanceDB, numpy, onnxruntime: about 1.6 s); every other
command goes on to :mod:`engram_md.cli`. It fails open: no daemon, a daemon that does not
answer within ``--timeout``, bad input — exit 0 with nothing on stdout and one line on stderr,
so a prompt is never held up or refused by its memory.
"""

from __future__ import annotations

# The standard library only, and little of it: pathlib, typing and argparse each cost the hook
# milliseconds of start-up it runs on every prompt.
import json
import os
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude-code",)
DEFAULT_TIMEOUT_SECONDS = 1.0
# What SessionStart adds of profile.md at most: about the default recall budget, in characters.
PROFILE_MAX_CHARS = 4000
# What of a prompt is asked of recall: its start says what it is about, and a pasted log or
# file would only make the full-text search slow (a turn is capped at 4000 characters too).
QUERY_MAX_CHARS = 2000
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
# Global options of every engram-md command that the hook reads; --config is not among them
# (reading YAML would cost the start-up this module exists to save): `engram-md integrate`
# writes the folders into the hook's command line instead.
_FOLDER_OPTIONS = ("--memory-dir", "--state-dir")
_OTHER_GLOBALS = ("--config",)
_GLOBAL_FLAGS = ("--verbose", "-v")
_HOOK_OPTIONS = ("--budget", "--timeout")
USAGE = (
    "usage: engram-md hook claude-code [--memory-dir DIR] [--state-dir DIR] [--budget TOKENS]"
    " [--timeout SECONDS]\n"
    "Reads a Claude Code hook event (JSON) on stdin; prints the hook's JSON answer.\n"
)


class HookFailed(Exception):
    """Why the hook adds no memory this time (said on stderr; the exit status stays 0)."""


def main() -> None:
    """The `engram-md` console script: the hook here, every other command in the CLI."""
    argv = sys.argv[1:]
    if _command(argv) == "hook":
        sys.exit(run(argv))
    # Deferred: the CLI loads typer and rich (~150 ms), which the hook must not pay.
    from .cli import main as cli_main

    cli_main()


def _command(argv: list[str]) -> str | None:
    """The command's name in ``argv``, past the global options before it."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in _FOLDER_OPTIONS + _OTHER_GLOBALS:
            i += 1 if "=" in arg else 2
        elif arg in _GLOBAL_FLAGS:
            i += 1
        else:
            return arg
    return None


def _options(argv: list[str]) -> dict[str, str]:
    """``--name value`` (or ``--name=value``) pairs of ``argv``, and the words in between
    under ``""``; HookFailed for an option this command does not take.

    Not argparse: it exits 2 on a bad argument, and a UserPromptSubmit hook that exits 2
    blocks the person's prompt. Every failure here fails open instead.
    """
    found: dict[str, str] = {"": ""}
    words: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in _FOLDER_OPTIONS + _OTHER_GLOBALS + _HOOK_OPTIONS:
            if not eq:
                if i + 1 >= len(argv):
                    raise HookFailed(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            found[name] = value
        elif arg in _GLOBAL_FLAGS:
            pass
        elif arg.startswith("-"):
            raise HookFailed(f"unknown option {arg}")
        else:
            words.append(arg)
        i += 1
    found[""] = " ".join(words)
    return found


def run(argv: list[str]) -> int:
    """The hook as a process: the event on stdin, the answer on stdout; always exit 0."""
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(USAGE)
        return 0
    try:
        options = _options(argv)
        if options[""] not in (f"hook {agent}" for agent in AGENTS):
            raise HookFailed(f"no hook for {options[''].removeprefix('hook ')!r}")
        budget = options.get("--budget")
        timeout = options.get("--timeout")
        event = json.loads(sys.stdin.buffer.read())
        answer = respond(
            event,
            state_dir=options.get("--state-dir") or os.environ.get("ENGRAM_STATE_DIR", "state"),
            memory_dir=options.get("--memory-dir") or os.environ.get("ENGRAM_MEMORY_DIR", "memory"),
            budget=None if budget is None else int(budget),
            timeout=DEFAULT_TIMEOUT_SECONDS if timeout is None else float(timeout),
        )
    except (HookFailed, ValueError) as exc:
        sys.stderr.write(f"engram-md hook: {exc}; no memory added\n")
        return 0
    if answer is not None:
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    return 0


def respond(
    event: Any,
    *,
    state_dir: str,
    memory_dir: str,
    budget: int | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> dict[str, Any] | None:
    """The hook's JSON answer to one Claude Code event, or None when it adds nothing."""
    if not isinstance(event, dict):
        raise HookFailed("the hook input is not a JSON object")
    name = event.get("hook_event_name")
    if name == "UserPromptSubmit":
        prompt = event.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return None
        query = prompt[:QUERY_MAX_CHARS]
        context = recall_block(state_dir, query, budget=budget, timeout=timeout)
    elif name == "SessionStart":
        context = profile_text(memory_dir)
    else:
        return None  # an event this hook was not installed for
    if context is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}


def recall_block(state_dir: str, query: str, *, budget: int | None, timeout: float) -> str | None:
    """The daemon's ``<memory>`` block for ``query``; None when it found nothing relevant."""
    host, port, token = _endpoint(os.path.join(state_dir, "daemon.json"))
    status, answer = _post(
        host, port, token, "/recall", {"query": query, "budget": budget}, timeout
    )
    if status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise HookFailed(f"the daemon answered {status}: {error or 'an unreadable answer'}")
    if not answer.get("memories"):
        return None
    block = answer.get("block")
    return block if isinstance(block, str) else None


def _post(
    host: str, port: int, token: str, path: str, payload: Any, timeout: float
) -> tuple[int, Any]:
    """One HTTP/1.1 POST over a plain socket: status and JSON answer.

    http.client would do, but importing it (and the email package under it) costs the hook
    about as much start-up as the rest of it together; one request on loopback to a server
    that closes after answering needs none of it.
    """
    body = json.dumps(payload).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(head + body)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        raise HookFailed(f"the daemon at {host}:{port} did not answer ({reason})") from None
    raw_head, _, raw_body = b"".join(chunks).partition(b"\r\n\r\n")
    try:
        status = int(raw_head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise HookFailed(f"the daemon at {host}:{port} answered no HTTP") from None
    try:
        return status, json.loads(raw_body)
    except ValueError:
        return status, None


def _endpoint(path: str) -> tuple[str, int, str]:
    """Host, port and token of the live daemon advertised at ``path``.

    The same checks as ``recall.server.find_daemon``, kept here in the standard library: that
    module's imports cost the hook's start-up several times over.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        raise HookFailed(f"no daemon running ({path} absent or unreadable)") from None
    if not isinstance(data, dict):
        raise HookFailed(f"{path} does not name a loopback daemon")
    host, port, pid, token = (data.get(k) for k in ("host", "port", "pid", "token"))
    if not (
        isinstance(host, str)
        and host in _LOOPBACK
        and isinstance(port, int)
        and isinstance(pid, int)
        and pid > 0
        and isinstance(token, str)
        and token
    ):
        raise HookFailed(f"{path} does not name a loopback daemon")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise HookFailed(f"no daemon running (pid {pid} of {path} is gone)") from None
    except PermissionError:
        pass  # alive, another user's: the connection tells whether it is ours
    return host, port, token


def profile_text(memory_dir: str) -> str | None:
    """profile.md of the memory folder, as context: who the person is, what they prefer."""
    try:
        with open(os.path.join(memory_dir, "profile.md"), encoding="utf-8") as handle:
            text = handle.read().strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise HookFailed(f"cannot read profile.md in {memory_dir}: {exc}") from None
    if not text:
        return None
    if len(text) > PROFILE_MAX_CHARS:
        text = text[:PROFILE_MAX_CHARS].rsplit("\n", 1)[0] + "\n…"
    # In a <memory> block, like a recall's: what engram-md reads back from the transcript
    # drops such blocks, so the profile is never taken for something the person said.
    return f"<memory>\n{text}\n</memory>"
