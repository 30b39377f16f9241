"""The `engram-md` command: parse arguments, call the library, render. Nothing else.

Expected failures (EngramError) become one clear line on stderr and a non-zero exit status;
only genuine bugs show a traceback.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .config import Config, load_config
from .errors import EngramError, LockError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="engram-md: a memory sidecar for chat agents. The markdown folder is the truth.",
    pretty_exceptions_show_locals=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class _State:
    config_path: Path | None = None
    overrides: dict[str, Any] = {}
    verbose: bool = False


def _config() -> Config:
    return load_config(_State.config_path, overrides=_State.overrides)


def _setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("engram-md: %(message)s"))
    root = logging.getLogger("engram_md")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    root.propagate = False


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
) -> None:
    _State.config_path = config
    _State.overrides = {"memory_dir": memory_dir, "state_dir": state_dir}
    _State.verbose = verbose
    _setup_logging(verbose)


def _fail(exc: EngramError) -> typer.Exit:
    err.print(f"engram-md: {exc}", markup=False)
    return typer.Exit(code=3 if isinstance(exc, LockError) else 2)


# ---------------------------------------------------------------- run / ingest


@app.command()
def run(
    watch: Annotated[
        list[Path] | None,
        typer.Option("--watch", "-w", help="Transcript files or folders to tail."),
    ] = None,
    stdin: Annotated[
        bool | None,
        typer.Option(
            "--stdin/--no-stdin",
            help="Read turns from stdin (default: yes unless --watch is given).",
        ),
    ] = None,
) -> None:
    """The daemon: read turns from stdin and/or watched transcripts, remember what matters."""
    from .app import open_engine
    from .sources import stdin_binary

    watch = watch or []
    use_stdin = stdin if stdin is not None else not watch
    try:
        engine = open_engine(_config())
    except EngramError as exc:
        raise _fail(exc) from None
    try:
        engine.runner.run(stdin=stdin_binary() if use_stdin else None, watch=watch)
    except EngramError as exc:
        raise _fail(exc) from None
    finally:
        engine.close()
    _summary(engine.pipeline.stats, engine.runner.bad_lines, engine.pipeline.buffer.depth())


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help="Transcript files to read once.")],
) -> None:
    """Run the pipeline once over transcript files, flushing at the end."""
    from .app import open_engine

    try:
        engine = open_engine(_config())
    except EngramError as exc:
        raise _fail(exc) from None
    try:
        for path in files:
            engine.runner.ingest_file(path)
        engine.pipeline.flush()
    except EngramError as exc:
        raise _fail(exc) from None
    finally:
        engine.close()
    _summary(engine.pipeline.stats, engine.runner.bad_lines, engine.pipeline.buffer.depth())


def _summary(stats: Any, bad_lines: int, pending: int) -> None:
    parts = [
        f"{stats.turns_received} turns received",
        f"{stats.facts_written} memories written",
        f"{stats.facts_confirmed} confirmed",
    ]
    if stats.turns_replayed:
        parts.append(f"{stats.turns_replayed} already seen")
    if bad_lines:
        parts.append(f"{bad_lines} bad lines skipped")
    if stats.extraction_failures:
        parts.append(f"{stats.extraction_failures} failed extractions")
    if pending:
        parts.append(f"{pending} turns kept in the journal for retry")
    err.print("engram-md: " + ", ".join(parts), markup=False)


# ---------------------------------------------------------------- status


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Counts by category and status, buffer depth, last extraction, LLM usage."""
    import json

    from .status import collect_status

    try:
        report = collect_status(_config())
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        out.print_json(json.dumps(report))
        return
    table = Table(title=f"memory: {report['memoryDir']}")
    table.add_column("category")
    statuses = sorted({s for counts in report["byCategory"].values() for s in counts})
    for name in statuses:
        table.add_column(name, justify="right")
    for category, counts in sorted(report["byCategory"].items()):
        table.add_row(category, *(str(counts.get(s, 0)) for s in statuses))
    out.print(table)
    out.print(f"memory kinds: {report['byKind']}")
    out.print(f"buffered turns (journal): {report['bufferDepth']}")
    last = report.get("lastExtraction")
    if last:
        out.print(
            f"last extraction: {last['at']} ({last['extractor']}, trigger {last['trigger']}, "
            f"session {last['session']}, {last['candidates']} candidates)"
        )
    else:
        out.print("last extraction: none yet")
    usage = report["llm"]
    out.print(
        f"LLM: {usage.get('calls', 0)} calls, {usage.get('prompt_tokens', 0)} prompt tokens, "
        f"{usage.get('completion_tokens', 0)} completion tokens, "
        f"{usage.get('failed_calls', 0)} failed"
    )
    if report["broken"]:
        out.print(f"[yellow]{len(report['broken'])} unreadable file(s):[/yellow]")
        for line in report["broken"][:20]:
            out.print(f"  {line}", markup=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
