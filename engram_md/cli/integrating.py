"""Commands that plug engram-md into agents: `mcp`, `hook`, `integrate`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import EngramError
from ..hook import AGENTS, DEFAULT_TIMEOUT_SECONDS
from ..hook import run as run_hook
from ..integrations import claude_code
from .base import app, config, err, fail, out

# The composition root (app) and the MCP server (the SDK, starlette, uvicorn) are imported
# inside the commands that use them: `--help` and `integrate` must not pay their start-up.
# The one exception to imports at the top of a module, made only in the cli package.


@app.command()
def mcp(
    http: Annotated[
        bool, typer.Option("--http", help="Streamable HTTP on loopback instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="Loopback address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="Port (0: any free one).")] = 0,
) -> None:
    """Serve the memory over the Model Context Protocol (stdio, or HTTP with a token).

    Over HTTP the URL and the bearer token are written to state/mcp.json (mode 0600);
    ENGRAM_MCP_TOKEN sets the token instead of a random one.
    """
    from ..app import folder_ops  # start-up cost: see the top of this module
    from ..integrations.mcp_server import Reach, build_server, serve_http, serve_stdio

    cfg = config()
    try:
        server = build_server(Reach(cfg.layout, folder_ops(cfg)), cfg.layout)
        if http:
            token = os.environ.get("ENGRAM_MCP_TOKEN") or None
            serve_http(server, cfg.layout, host=host, port=port, token=token)
        else:
            serve_stdio(server)
    except EngramError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        pass


@app.command()
def hook(
    agent: Annotated[str, typer.Argument(help=f"The agent calling: {', '.join(AGENTS)}.")],
    budget: Annotated[int | None, typer.Option("--budget", help="Token budget.")] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the daemon.")
    ] = DEFAULT_TIMEOUT_SECONDS,
) -> None:
    """Answer an agent's hook (the event as JSON on stdin) with memory to add to its context.

    `engram-md hook ...` starts without this command line (engram_md/hook.py); this is the
    same hook reached through it, e.g. as `python -m engram_md hook claude-code`.
    """
    layout = config().layout
    argv = ["hook", agent, "--memory-dir", str(layout.memory_dir)]
    argv += ["--state-dir", str(layout.state_dir), "--timeout", str(timeout)]
    if budget is not None:
        argv += ["--budget", str(budget)]
    raise typer.Exit(run_hook(argv))


def _engram_md_executable() -> str:
    """This installation's `engram-md` script, by absolute path: Claude Code runs the hook
    with its own PATH, which may not hold the virtual environment's bin folder."""
    beside = Path(sys.executable).parent / "engram-md"
    if beside.is_file():
        return str(beside)
    return str(Path(sys.argv[0]).absolute())


@app.command()
def integrate(
    agent: Annotated[str, typer.Argument(help="claude-code")],
    settings: Annotated[
        Path | None,
        typer.Option("--settings", help="Settings file (default ~/.claude/settings.json)."),
    ] = None,
    project: Annotated[
        bool, typer.Option("--project", help="This project's .claude/settings.json.")
    ] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Take the hooks out again.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the change, write nothing.")
    ] = False,
) -> None:
    """Add engram-md's hooks to Claude Code's settings (or remove them), showing the diff.

    UserPromptSubmit recalls memory for each prompt through the running daemon; SessionStart
    adds profile.md. Running it again changes nothing; --remove takes out only its own hooks.
    """
    if agent != "claude-code":
        err.print(f"engram-md: no integration for {agent!r}; known: claude-code", markup=False)
        raise typer.Exit(code=2)
    if settings is None:
        settings = Path(".claude" if project else Path.home() / ".claude") / "settings.json"
    layout = config().layout
    try:
        change = claude_code.plan(
            settings, claude_code.hook_command(_engram_md_executable(), layout), remove=remove
        )
    except EngramError as exc:
        raise fail(exc) from None
    if not change.changed:
        out.print(f"{settings}: already {'without' if remove else 'with'} the hooks; unchanged")
        return
    sys.stdout.write(change.diff())  # as it is: rich would wrap and color the lines
    if dry_run:
        out.print("(dry run: nothing written)")
        return
    change.apply()
    done = "removed from" if remove else "added to"
    out.print(f"engram-md hooks {done} {settings}", markup=False)
