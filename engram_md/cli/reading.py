"""Commands that read the folder: `status`, `recall`, `explain`, `history`, `traces`."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from ..core.config import Config
from ..core.errors import EngramError, RecallServerError
from ..maintain.history import fact_history, render_history
from ..maintain.status import collect_status
from ..organize.traces import load_traces, trace_to_json
from ..recall.server import RecallClient, find_daemon
from ..recall.wire import RecallAnswer, RecallOptions
from .base import app, err, existing_folder, fail, out, print_json

# The composition root (app) and the commands over an opened folder (consolidation, doctor,
# forget) import LanceDB, onnxruntime and openai: 1.6 s of start-up on these machines
# (python -X importtime). Commands that open no index (status, history, traces, --help) must
# not pay it, so those modules are imported inside the commands that use them: the one
# exception to imports at the top of a module, made only in the cli package.

# ---------------------------------------------------------------- status


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Counts by category and status, buffer depth, last extraction, LLM usage."""
    try:
        report = collect_status(existing_folder())
    except EngramError as exc:
        raise fail(exc) from None
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

    def ask(self, query: str, options: RecallOptions) -> RecallAnswer:
        if self._client is not None:
            try:
                return self._client.recall(query, options)
            except RecallServerError as exc:
                err.print(f"engram-md: daemon recall failed ({exc}); answering in-process")
                self._client = None
        if self._session is None:
            from ..app import RecallSession  # start-up cost: see the top of this module

            self._session = RecallSession(self.cfg)
        result = self._session.recaller.recall(query, options)
        return result.answer(explain=options.explain)


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
        answerer = _Answerer(existing_folder(), use_daemon=not no_daemon)
        queries = (line.rstrip("\n") for line in sys.stdin) if query == "-" else iter([query])
        for text in queries:
            if query == "-" and not text.strip():
                continue
            answer = answerer.ask(
                text,
                RecallOptions(
                    budget_tokens=budget,
                    top_k=top_k,
                    include_inactive=include_inactive or None,
                    record_access=not dry,
                ),
            )
            if as_json:
                print_json(answer.to_json())
            else:
                sys.stdout.write(answer.render() + "\n")
            sys.stdout.flush()
    except EngramError as exc:
        raise fail(exc) from None


@app.command()
def explain(
    query: Annotated[str, typer.Argument(help="The query to explain.")],
    budget: Annotated[int | None, typer.Option("--budget", help="Token budget.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: Annotated[int, typer.Option("--limit", help="Candidates to show.")] = 30,
) -> None:
    """Every candidate of a recall with its score parts, and why it was kept or left out."""
    try:
        answer = _Answerer(existing_folder(), use_daemon=True).ask(
            query, RecallOptions(budget_tokens=budget, explain=True, record_access=False)
        )
    except EngramError as exc:
        raise fail(exc) from None
    if as_json:
        print_json(answer.to_json())
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


@app.command()
def history(
    name: Annotated[str, typer.Argument(help="The fact's id, file path or file name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """A fact's history: status changes, what it superseded or was superseded by, merges,
    confirmations and source turns."""
    try:
        cfg = existing_folder()
        data = fact_history(cfg.layout, name)
    except EngramError as exc:
        raise fail(exc) from None
    if data is None:
        err.print(f"engram-md: no memory named {name!r} in {cfg.memory_dir}", markup=False)
        raise typer.Exit(code=1)
    if as_json:
        print_json(data)
        return
    out.print(render_history(data), markup=False, highlight=False)


# ---------------------------------------------------------------- traces


@app.command()
def traces(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Traces (sealed memory boxes on one thread of work), most recent first, with their boxes."""
    try:
        cfg = existing_folder()
        found = load_traces(cfg.layout.traces_path)
    except EngramError as exc:
        raise fail(exc) from None
    if as_json:
        payload = [{"id": trace.id, **trace_to_json(trace)} for trace in found]
        print_json({"traces": payload})
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
