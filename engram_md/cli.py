"""The `engram-md` command: parse arguments, call the library, render. Nothing else.

Expected failures (EngramError) become one clear line on stderr and a non-zero exit status;
only genuine bugs show a traceback.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from . import __version__
from .core.allocator import limit_arenas, route_arrow_to_malloc
from .core.config import Config, load_config
from .core.errors import EngramError, LockError, RecallServerError
from .ingest.sources import stdin_binary
from .maintain.history import fact_history, render_history
from .maintain.matches import MIN_SCORE, Match
from .maintain.problems import problem_kinds
from .maintain.status import collect_status
from .maintain.targets import looks_like_name
from .organize.traces import load_traces, trace_to_json
from .recall.server import RecallClient, find_daemon
from .recall.wire import RecallAnswer

# The composition root (app) and the commands over an opened folder (consolidation, doctor,
# forget) import LanceDB, onnxruntime and openai: 1.6 s of start-up on these machines
# (python -X importtime). Commands that open no index (status, history, traces, --help) must
# not pay it, so those modules are imported inside the commands that use them. That is the one
# exception to imports at the top of a module, and this is the only module that makes it.

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


def _existing_folder() -> Config:
    """The configuration of a command that reads the memory folder: a folder that does not
    exist (a mistyped --memory-dir) is said so, never read as empty nor created."""
    cfg = _config()
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
    limit_arenas()  # before the native thread pools start (see allocator.py)
    route_arrow_to_malloc()
    from .app import open_engine, serving  # start-up cost: see the top of this module

    watch = watch or []
    use_stdin = stdin if stdin is not None else not watch
    try:
        engine = open_engine(_config())
    except EngramError as exc:
        raise _fail(exc) from None
    try:
        with serving(engine):
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
    from .app import open_engine  # start-up cost: see the top of this module

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
    try:
        report = collect_status(_existing_folder())
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


# ---------------------------------------------------------------- recall / explain


class _Answerer:
    """Answers recall queries through the daemon when it runs, in-process otherwise."""

    def __init__(self, cfg: Config, *, use_daemon: bool) -> None:
        self.cfg = cfg
        self._client: RecallClient | None = None
        self._session: Any = None
        if use_daemon:
            layout = cfg.layout
            endpoint = find_daemon(layout.daemon_endpoint_path)
            if endpoint is not None:
                self._client = RecallClient(endpoint)

    def ask(self, query: str, **options: Any) -> RecallAnswer:
        if self._client is not None:
            try:
                return self._client.recall(query, **options)
            except RecallServerError as exc:
                err.print(f"engram-md: daemon recall failed ({exc}); answering in-process")
                self._client = None
        if self._session is None:
            from .app import RecallSession  # start-up cost: see the top of this module

            self._session = RecallSession(self.cfg)
        explain = bool(options.pop("explain", False))
        result = self._session.recaller.recall(query, explain=explain, **options)
        return result.answer(explain=explain)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="The query; '-' reads one query per line.")],
    top_k: Annotated[int | None, typer.Option("--top-k", help="At most N memories.")] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="Token budget (4 characters a token).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of <memory>.")] = False,
    include_inactive: Annotated[
        bool, typer.Option("--include-inactive", help="Also superseded, archived, …")
    ] = False,
    no_daemon: Annotated[
        bool, typer.Option("--no-daemon", help="Answer in-process even if a daemon runs.")
    ] = False,
    dry: Annotated[
        bool, typer.Option("--dry", help="Do not count this recall as an access.")
    ] = False,
) -> None:
    """The memories that matter for QUERY, as a <memory> block (or JSON)."""
    try:
        answerer = _Answerer(_existing_folder(), use_daemon=not no_daemon)
        queries = (line.rstrip("\n") for line in sys.stdin) if query == "-" else iter([query])
        for text in queries:
            if query == "-" and not text.strip():
                continue
            answer = answerer.ask(
                text,
                budget_tokens=budget,
                top_k=top_k,
                include_inactive=include_inactive or None,
                record_access=not dry,
            )
            if as_json:
                sys.stdout.write(json.dumps(answer.to_json(), ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(answer.render() + "\n")
            sys.stdout.flush()
    except EngramError as exc:
        raise _fail(exc) from None


@app.command()
def explain(
    query: Annotated[str, typer.Argument(help="The query to explain.")],
    budget: Annotated[int | None, typer.Option("--budget", help="Token budget.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: Annotated[int, typer.Option("--limit", help="Candidates to show.")] = 30,
) -> None:
    """Every candidate of a recall with its score parts, and why it was kept or left out."""
    try:
        answer = _Answerer(_existing_folder(), use_daemon=True).ask(
            query, budget_tokens=budget, explain=True, record_access=False
        )
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(answer.to_json(), ensure_ascii=False) + "\n")
        return
    candidates = answer.candidates or ()
    out.print(
        f"query: {answer.query!r} — {len(answer.memories)} kept, "
        f"{answer.tokens}/{answer.budget} tokens, {len(candidates)} candidates"
    )
    for i, cand in enumerate(candidates[:limit], 1):
        p = cand.parts
        mark = "[green]kept[/green]" if cand.kept else "[dim]left out[/dim]"
        out.print(f"#{i} {mark} score {p['score']:.3f} ({cand.status}) {cand.path}")
        out.print(f"   {cand.content[:160]}", markup=False)
        out.print(
            f"   relevance {p['relevance']:.3f} (cosine {p['cosine']:.2f}, full-text "
            f"{p['fts_rel']:.2f}, names {p['name_match']:.2f}, dates {p['date_match']:.0f}, "
            f"lifecycle x{p['lifecycle']:.2f}; via {'+'.join(cand.channels)})",
            markup=False,
        )
        out.print(
            f"   weight {p['weight']:.2f} = importance {p['importance']:.2f} + repetition "
            f"{p['rep_bonus']:.2f} + access {p['access_bonus']:.2f} + kind {p['kind_bias']:+.2f}"
            f" + tier {p['tier_bias']:+.2f}; recency {p['recency']:.2f}; raw {p['raw']:.3f}",
            markup=False,
        )
        if p.get("graph") or cand.graph_path:
            steps = ", ".join(
                f"{e.kind} {e.source} -> {e.target} ({e.confidence:.2f})" for e in cand.graph_path
            )
            out.print(
                f"   graph {p['graph']:.3f} blended with own score {p['own']:.3f}"
                + (f"; path: {steps}" if steps else " (a seed)"),
                markup=False,
            )
        out.print(f"   {cand.reason}", markup=False)


# ---------------------------------------------------------------- reindex


@app.command()
def reindex() -> None:
    """Rebuild the search index from the memory folder."""
    from .app import open_writer  # start-up cost: see the top of this module

    try:
        # rebuild() reads every file anyway: no reconcile first, no separate hash rebuild.
        with open_writer(_config(), reconcile=False, rebuild_missing=False) as parts:
            assert parts.indexer is not None
            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=False,
            ) as progress:
                task = progress.add_task("indexing memories", total=None)

                def step(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                report = parts.indexer.rebuild(progress=step)
    except EngramError as exc:
        raise _fail(exc) from None
    for problem in report.broken:
        err.print(f"engram-md: skipped {problem}", markup=False)
    err.print(
        f"engram-md: indexed {report.added + report.updated + report.unchanged} memories"
        + (f", {len(report.broken)} file(s) skipped (listed above)" if report.broken else ""),
        markup=False,
    )


# ---------------------------------------------------------------- consolidate / history


def _parse_now(value: str | None) -> Any:
    """``--now`` / ENGRAM_NOW (ISO 8601, UTC if no zone) or the wall clock."""
    if not value:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(f"not an ISO 8601 time: {value!r}", param_hint="--now") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


@app.command()
def consolidate(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Run even past the retire safety rail.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Compare every fact, not only the new ones.")
    ] = False,
    now: Annotated[str | None, typer.Option("--now", envvar="ENGRAM_NOW", hidden=True)] = None,
) -> None:
    """Merge duplicates, supersede contradicted facts, run the lifecycle; --dry-run to preview.

    Refused while the daemon runs (it consolidates every consolidate.every_extractions
    extractions by itself).
    """
    # start-up cost of these: see the top of this module
    from .app import graph_store, open_judge, open_reader, open_writer
    from .consolidate.apply import Pause, RetireLimitError
    from .consolidate.report import describe, summary
    from .consolidate.run import consolidate_folder

    when = _parse_now(now)
    try:
        cfg = _config()
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=as_json or not err.is_terminal,
        ) as progress:
            task = progress.add_task("consolidating", total=None)

            def step(stage: str, done: int, total: int) -> None:
                progress.update(task, description=stage, completed=done, total=total)

            # A dry run writes nothing: no lock, the index as it stands, no embedding cache.
            opened = open_reader(cfg, cache_embeddings=False) if dry_run else open_writer(cfg)
            with opened as parts:
                judge = open_judge(cfg, parts.usage)
                try:
                    result = consolidate_folder(
                        parts,
                        now=when,
                        judge=judge,
                        graph=None if dry_run else graph_store(cfg),
                        dry_run=dry_run,
                        force=force,
                        full=full,
                        progress=step,
                        pause=Pause.from_env(os.environ.get("ENGRAM_CONSOLIDATE_PAUSE")),
                    )
                finally:
                    if judge is not None:
                        judge.close()
    except RetireLimitError as exc:
        err.print(f"engram-md: refused: {exc}", markup=False)
        raise typer.Exit(code=4) from None
    except LockError as exc:
        err.print(
            f"engram-md: {exc}. The running daemon consolidates by itself every "
            f"{cfg.consolidate.every_extractions} extractions.",
            markup=False,
        )
        raise typer.Exit(code=3) from None
    except EngramError as exc:
        raise _fail(exc) from None
    plan = result.plan
    layout = cfg.layout
    changes = [describe(c, layout) for c in plan.changes]
    if as_json:
        payload = {
            "dryRun": result.dry_run,
            "applied": result.applied,
            "report": str(result.report) if result.report else None,
            "summary": summary(plan),
            "changes": changes,
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return
    title = "plan (dry run: nothing changed)" if result.dry_run else "consolidation"
    table = Table(title=title)
    for column in ("action", "file", "why"):
        table.add_column(column, overflow="fold")
    for item in changes:
        where = item["path"] + (f" → {item['target']}" if "target" in item else "")
        table.add_row(item["action"], where, item["reason"])
    if changes:
        out.print(table)
    info = summary(plan)
    out.print(
        f"{info['facts']} facts ({info['active']} active, {info['new']} new since the last "
        f"run); {info['changes']} change(s) "
        + ("planned" if result.dry_run else f"planned, {result.applied} applied")
        + f"; {info['retiring']} retire an active fact (limit {info['allowedRetire']})",
        markup=False,
    )
    for note in info["notes"]:
        out.print(f"note: {note}", markup=False)
    if info["unjudged"]:
        out.print(f"{info['unjudged']} new fact(s) could not be judged; next run", markup=False)
    if result.report is not None:
        out.print(f"report: {result.report}", markup=False)


@app.command()
def history(
    name: Annotated[str, typer.Argument(help="The fact's id, file path or file name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """A fact's history: status changes, what it superseded or was superseded by, merges,
    confirmations and source turns."""
    try:
        cfg = _existing_folder()
        data = fact_history(cfg.layout, name)
    except EngramError as exc:
        raise _fail(exc) from None
    if data is None:
        err.print(f"engram-md: no memory named {name!r} in {cfg.memory_dir}", markup=False)
        raise typer.Exit(code=1)
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    out.print(render_history(data), markup=False, highlight=False)


# ---------------------------------------------------------------- traces


@app.command()
def traces(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Traces (sealed memory boxes on one thread of work), most recent first, with their boxes."""
    try:
        cfg = _existing_folder()
        found = load_traces(cfg.layout.traces_path)
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        payload = [{"id": trace.id, **trace_to_json(trace)} for trace in found]
        sys.stdout.write(json.dumps({"traces": payload}, ensure_ascii=False) + "\n")
        return
    if not found:
        out.print("no traces yet: a box joins a trace when it is sealed")
        return
    for trace in found:
        out.print(
            f"[bold]{trace.id}[/bold]  {len(trace.boxes)} box(es), "
            f"{trace.created_at:%Y-%m-%d %H:%M} – {trace.last_seen:%Y-%m-%d %H:%M}"
        )
        out.print(f"  topics: {', '.join(trace.topics)}", markup=False)
        for box in trace.boxes:
            out.print(
                f"  {box.created_at:%Y-%m-%d %H:%M}  {box.id}  {box.memories} memories  "
                f"session {box.session}  {box.path}",
                markup=False,
            )


# ---------------------------------------------------------------- doctor / forget


@app.command()
def doctor(
    do_repair: Annotated[
        bool, typer.Option("--repair", help="Repair what can be repaired, then check again.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    secrets: Annotated[
        bool,
        typer.Option(
            "--secrets",
            help="Find secrets already in the folder, the journal and the index; "
            "with --repair, redact them everywhere.",
        ),
    ] = False,
) -> None:
    """Check that the folder, index, hashes, graph and boxes agree; --repair fixes them.

    Exit status 0 when all is well (or everything was repaired), 1 when problems remain.
    Checking works beside a running daemon; --repair is refused while it runs.
    """
    if secrets:
        _doctor_secrets(do_repair=do_repair, as_json=as_json)
    # start-up cost of these: see the top of this module
    from .app import open_reader, open_writer
    from .maintain.doctor import examine, repair

    try:
        cfg = _existing_folder()
        # Checking only reads: no lock, the index as it stands, no embedding cache.
        with open_reader(cfg, cache_embeddings=False) as parts:
            report = examine(parts)
        if do_repair:
            try:
                # The repair decides what the index and the hash index need: no reconcile
                # and no hash rebuild on opening.
                with open_writer(cfg, reconcile=False, rebuild_missing=False) as parts:
                    report = repair(parts, found=report.problems)
            except LockError as exc:
                raise LockError(
                    f"doctor --repair needs the memory folder to itself: {exc}"
                ) from None
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
        raise typer.Exit(code=0 if report.ok else 1)
    for item in report.repaired:
        out.print(
            f"repaired  {item.kind}  {item.subject}: {item.detail} — {item.action}",
            markup=False,
            soft_wrap=True,
        )
    for item in report.problems:
        out.print(
            f"problem   {item.kind}  {item.subject}: {item.detail}", markup=False, soft_wrap=True
        )
    for note in report.notes:
        out.print(f"note: {note}", markup=False, soft_wrap=True)
    if report.ok:
        done = f"; {len(report.repaired)} problem(s) repaired" if report.repaired else ""
        out.print(f"all good{done}", markup=False, soft_wrap=True)
    else:
        kinds = ", ".join(f"{n} {kind}" for kind, n in problem_kinds(report.problems).items())
        hint = "" if do_repair else "; `engram-md doctor --repair` fixes what it can"
        out.print(f"{len(report.problems)} problem(s): {kinds}{hint}", markup=False, soft_wrap=True)
    raise typer.Exit(code=0 if report.ok else 1)


def _doctor_secrets(*, do_repair: bool, as_json: bool) -> None:
    """`doctor --secrets [--repair]`: exit 0 when no secret is (left) in the folder."""
    # start-up cost of these: see the top of this module
    from .app import open_reader, open_writer
    from .maintain.secrets import SecretsReport, find_secrets, repair_secrets

    try:
        cfg = _existing_folder()
        if do_repair:
            try:
                with open_writer(cfg, reconcile=False, rebuild_missing=False) as parts:
                    report = repair_secrets(parts)
            except LockError as exc:
                raise LockError(
                    f"doctor --repair needs the memory folder to itself: {exc}"
                ) from None
        else:
            with open_reader(cfg, cache_embeddings=False) as parts:
                report = SecretsReport(find_secrets(parts))
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
        raise typer.Exit(code=0 if report.ok else 1)
    for leak, what in [(x, "redacted") for x in report.repaired] + [
        (x, "secret  ") for x in report.found
    ]:
        line = f"{what}  {leak.place}  {leak.subject}: {', '.join(leak.kinds)}"
        out.print(line, markup=False, soft_wrap=True)
    for note in report.notes:
        out.print(f"note: {note}", markup=False, soft_wrap=True)
    if report.ok:
        done = f"; {len(report.repaired)} place(s) redacted" if report.repaired else ""
        out.print(f"no secrets found{done}", markup=False, soft_wrap=True)
    else:
        hint = "" if do_repair else "; `engram-md doctor --secrets --repair` redacts them"
        out.print(f"{len(report.found)} place(s) hold secrets{hint}", markup=False, soft_wrap=True)
    raise typer.Exit(code=0 if report.ok else 1)


@app.command()
def forget(
    target: Annotated[
        str,
        typer.Argument(help="A memory's id, file path or file name, or a query to search for."),
    ],
    all_matches: Annotated[
        bool,
        typer.Option(
            "--all-matches",
            "--yes",
            "-y",
            help="Forget every match of a query scoring --min-score or more, without asking.",
        ),
    ] = False,
    min_score: Annotated[
        float,
        typer.Option(
            "--min-score",
            min=0.0,
            max=1.0,
            help="The least a query's match must score (0-1) to be shown or forgotten.",
        ),
    ] = MIN_SCORE,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be forgotten; change nothing.")
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="Matches of a query shown (and forgotten).")
    ] = 5,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the tombstone).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Remove a memory everywhere (file, index, hashes, graph, boxes, caches), leaving a
    tombstone without its content in state/forgotten.jsonl.

    An id, a file path or a file name forgets exactly that memory, at once. Any other text is
    a query: its matches scoring --min-score or more are shown with their scores, and each is
    forgotten only if you say yes to it; --all-matches forgets them all without asking. A
    query nothing matches well enough forgets nothing (exit 1). Refused while the daemon runs.
    """
    # start-up cost of these: see the top of this module
    from .app import make_recaller, open_reader, open_writer
    from .maintain.forget import ForgetReport, named, search
    from .maintain.forget import forget as forget_ids

    text = target.strip()
    try:
        cfg = _existing_folder()
        with open_reader(cfg, cache_embeddings=False, with_index=False) as parts:
            fact_id = named(parts.store, text)
        if fact_id is not None:
            ids = [fact_id]
        elif looks_like_name(text):
            err.print(
                f"engram-md: no memory named {text!r} in {cfg.memory_dir}",
                markup=False,
                soft_wrap=True,
            )
            raise typer.Exit(code=1)
        else:
            # As `recall` with no daemon: the index is brought up to date with the folder first.
            with open_reader(cfg, refresh_index=True) as parts:
                found = search(make_recaller(parts), text, limit=limit, min_score=min_score)
            if not found.matches:
                err.print(
                    f"engram-md: no memory matches {text!r}: nothing scores --min-score "
                    f"{min_score:.2f} or more (the closest {found.closest:.2f}); nothing forgotten",
                    markup=False,
                    soft_wrap=True,
                )
                raise typer.Exit(code=1)
            listing = err if as_json else out
            for n, match in enumerate(found.matches, 1):
                _show_match(listing, n, match)
            chosen: list[Match] = list(found.matches)
            if not all_matches and not dry_run:
                if not sys.stdin.isatty():
                    err.print(
                        "engram-md: nothing forgotten: answer for each match in a terminal, "
                        "forget every match listed with --all-matches, or one by its id",
                        markup=False,
                        soft_wrap=True,
                    )
                    raise typer.Exit(code=1)
                chosen = [
                    match
                    for n, match in enumerate(found.matches, 1)
                    if typer.confirm(f"Forget {n}. {match.id}?", default=False, err=True)
                ]
                if not chosen:
                    err.print("engram-md: nothing forgotten", markup=False)
                    raise typer.Exit(code=1)
            ids = [match.id for match in chosen]
        # A dry run writes nothing: no lock, no index, no embedding cache. A forget works by id
        # and path, so the index needs no reconcile first.
        if dry_run:
            opened = open_reader(cfg, cache_embeddings=False, with_index=False)
        else:
            opened = open_writer(cfg, reconcile=False)
        try:
            with opened as parts:
                report: ForgetReport = forget_ids(parts, ids, reason=reason, dry_run=dry_run)
        except LockError as exc:
            raise LockError(
                f"cannot forget while another process writes to the memory folder: {exc}"
            ) from None
    except EngramError as exc:
        raise _fail(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    else:
        verb = "would forget" if report.dry_run else "forgot"
        for item in report.forgotten:
            places = [
                "file" if item.file_removed else "",
                "index row" if item.index_row else "",
                "hash entry" if item.hash_entry else "",
                f"{item.graph_edges} graph edge(s)" if item.graph_edges else "",
                "graph node" if item.graph_node else "",
                *(f"box {b} (rewritten)" for b in item.boxes_rewritten),
                *(f"box {b} (removed: nothing else in it)" for b in item.boxes_removed),
                f"open box {item.open_box}" if item.open_box else "",
                f"{item.access_records} recall count(s)" if item.access_records else "",
            ]
            where = ", ".join(p for p in places if p) or "nothing left to remove"
            out.print(f"{verb} {item.id} ({item.path}): {where}", markup=False, soft_wrap=True)
        for rel in report.derived:
            out.print(f"updated derived page {rel}", markup=False, soft_wrap=True)
        for note in report.notes:
            out.print(f"note: {note}", markup=False, soft_wrap=True)
    for missing in report.missing:
        err.print(f"engram-md: no memory with id {missing!r}", markup=False, soft_wrap=True)
    if report.missing and not report.forgotten:
        raise typer.Exit(code=1)


def _show_match(console: Console, n: int, match: Match) -> None:
    """One match of a forget query: where it is, how well it matches, what it says."""
    console.print(
        f"{n}. {match.id}  ({match.category}, score {match.score:.2f})  {match.path}",
        markup=False,
        soft_wrap=True,
    )
    console.print(f"   {' '.join(match.content.split())[:200]}", markup=False, soft_wrap=True)


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
