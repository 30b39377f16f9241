"""The `engram-md` command's frame: the Typer app, global options (before or after the
command), configuration, and how failures become one line and an exit status.

Expected failures (EngramError) become one clear line on stderr and a non-zero exit status;
an OS error names its path and what to do; only genuine bugs show a traceback.
"""

from __future__ import annotations

import errno
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from .. import __version__
from ..core.config import Config, load_config
from ..core.errors import EngramError, LockError

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    no_args_is_help=True,
    help="engram-md: a memory sidecar for chat agents. The markdown folder is the truth.",
    pretty_exceptions_show_locals=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class State:
    config_path: Path | None = None
    overrides: dict[str, Any] = {}
    verbose: bool = False


def config() -> Config:
    return load_config(State.config_path, overrides=State.overrides)


def existing_folder() -> Config:
    """The configuration of a command that reads the memory folder: a folder that does not
    exist (a mistyped --memory-dir) is said so, never read as empty nor created."""
    cfg = config()
    folder = cfg.layout.memory_dir
    if not folder.is_dir():
        err.print(
            f"engram-md: no memory folder at {folder.absolute()}; check --memory-dir "
            "(or ENGRAM_MEMORY_DIR)",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(code=1)
    return cfg


def _setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("engram-md: %(message)s"))
    root = logging.getLogger("engram_md")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    root.propagate = False


def _print_version(value: bool) -> None:
    if value:
        out.print(f"engram-md {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def main_options(
    memory_dir: Annotated[
        Path | None,
        typer.Option("--memory-dir", envvar="ENGRAM_MEMORY_DIR", help="The memory folder."),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option("--state-dir", envvar="ENGRAM_STATE_DIR", help="Machine-local state."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", envvar="ENGRAM_CONFIG", help="YAML configuration file."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Say more.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    State.config_path = config
    State.overrides = {"memory_dir": memory_dir, "state_dir": state_dir}
    State.verbose = verbose
    _setup_logging(verbose)


def fail(exc: EngramError) -> typer.Exit:
    err.print(f"engram-md: {exc}", markup=False)
    return typer.Exit(code=3 if isinstance(exc, LockError) else 2)


# Options every command takes, before or after the command's name: with a value, and flags.
_GLOBAL_OPTIONS = frozenset({"--memory-dir", "--state-dir", "--config"})
_GLOBAL_FLAGS = frozenset({"--verbose", "-v"})


def global_options_first(argv: list[str]) -> list[str]:
    """``argv`` with the global options moved in front of the command, so that
    ``engram-md recall --memory-dir X q`` means what ``engram-md --memory-dir X recall q`` does.

    Everything after a ``--`` is left alone, and so is a value that belongs to an option.
    """
    globals_: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        name = arg.split("=", 1)[0]
        if name in _GLOBAL_OPTIONS:
            takes_value = "=" not in arg
            globals_ += argv[i : i + 2] if takes_value else [arg]
            i += 2 if takes_value else 1
            continue
        if arg in _GLOBAL_FLAGS:
            globals_.append(arg)
        else:
            rest.append(arg)
        i += 1
    return globals_ + rest


def main() -> None:
    try:
        app(args=global_options_first(sys.argv[1:]), prog_name="engram-md")
    except OSError as exc:
        # Whatever the command: a read-only folder, a full disk, a missing permission is one
        # line that names the path and what to do, never a traceback.
        err.print(f"engram-md: {describe_os_error(exc)}", markup=False, soft_wrap=True)
        sys.exit(5)


def describe_os_error(exc: OSError) -> str:
    """One line for an OS error: what failed, on which path, and what to do about it."""
    path = exc.filename or "the memory or state folder"
    hints = {
        errno.EROFS: (
            "is on a read-only file system",
            "mount it writable or point --memory-dir/--state-dir at a writable folder",
        ),
        errno.EACCES: (
            "is not accessible (permission denied)",
            "fix its permissions or run as its owner",
        ),
        errno.EPERM: (
            "may not be changed (operation not permitted)",
            "fix its permissions or run as its owner",
        ),
        errno.ENOSPC: (
            "cannot be written: the disk is full",
            "free some space; nothing was lost, run the command again",
        ),
        errno.EDQUOT: (
            "cannot be written: the disk quota is used up",
            "free some space; nothing was lost, run the command again",
        ),
        errno.ENOENT: ("does not exist", "check the path (--memory-dir, --state-dir, --config)"),
        errno.ENOTDIR: ("is not a folder", "check the path (--memory-dir, --state-dir)"),
    }
    what, todo = hints.get(exc.errno or 0, (f"failed: {exc.strerror or exc}", "check the path"))
    return f"{path} {what}; {todo}"


if __name__ == "__main__":
    main()


def print_json(payload: Any) -> None:
    """One JSON document on a line of stdout (``--json`` output)."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")


@contextmanager
def refused_unless_alone(needed: str) -> Iterator[None]:
    """A writer refused by the lock (the daemon runs) says what the command needed."""
    try:
        yield
    except LockError as exc:
        raise LockError(f"{needed}: {exc}") from None


def progress_bar(*, transient: bool, disable: bool = False) -> Progress:
    """The progress bar of a long command, on stderr."""
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=transient,
        disable=disable,
    )
