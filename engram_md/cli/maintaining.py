"""Commands that maintain the folder: `reindex`, `consolidate`, `doctor`, `forget`."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..core.errors import EngramError, LockError
from ..maintain.matches import MIN_SCORE, Match
from ..maintain.problems import problem_kinds
from ..maintain.targets import looks_like_name
from .base import (
    app,
    config,
    err,
    existing_folder,
    fail,
    out,
    print_json,
    progress_bar,
    refused_unless_alone,
)

# The composition root (app) and the commands over an opened folder (consolidation, doctor,
# forget) import LanceDB, onnxruntime and openai: 1.6 s of start-up on these machines
# (python -X importtime). Commands that open no index (status, history, traces, --help) must
# not pay it, so those modules are imported inside the commands that use them: the one
# exception to imports at the top of a module, made only in the cli package.

# ---------------------------------------------------------------- reindex


@app.command()
def reindex() -> None:
    """Rebuild the search index from the memory folder."""
    from ..app import open_writer  # start-up cost: see the top of this module

    try:
        # rebuild() reads every file anyway: no reconcile first, no separate hash rebuild.
        with open_writer(config(), reconcile=False, rebuild_missing=False) as parts:
            assert parts.indexer is not None
            with progress_bar(transient=False) as progress:
                task = progress.add_task("indexing memories", total=None)

                def step(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                report = parts.indexer.rebuild(progress=step)
    except EngramError as exc:
        raise fail(exc) from None
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
    from ..app import graph_store, open_judge, open_reader, open_writer
    from ..consolidate.apply import Pause, RetireLimitError
    from ..consolidate.report import describe, summary
    from ..consolidate.run import consolidate_folder

    when = _parse_now(now)
    try:
        cfg = config()
        with progress_bar(transient=True, disable=as_json or not err.is_terminal) as progress:
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
        raise fail(exc) from None
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
        print_json(payload)
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
    from ..app import open_reader, open_writer
    from ..maintain.doctor import examine, repair

    try:
        cfg = existing_folder()
        # Checking only reads: no lock, the index as it stands, no embedding cache.
        with open_reader(cfg, cache_embeddings=False) as parts:
            report = examine(parts)
        if do_repair:
            with refused_unless_alone("doctor --repair needs the memory folder to itself"):
                # The repair decides what the index and the hash index need: no reconcile
                # and no hash rebuild on opening.
                with open_writer(cfg, reconcile=False, rebuild_missing=False) as parts:
                    report = repair(parts, found=report.problems)
    except EngramError as exc:
        raise fail(exc) from None
    if as_json:
        print_json(report.to_json())
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
    from ..app import open_reader, open_writer
    from ..maintain.secrets import SecretsReport, find_secrets, repair_secrets

    try:
        cfg = existing_folder()
        if do_repair:
            with refused_unless_alone("doctor --repair needs the memory folder to itself"):
                with open_writer(cfg, reconcile=False, rebuild_missing=False) as parts:
                    report = repair_secrets(parts)
        else:
            with open_reader(cfg, cache_embeddings=False) as parts:
                report = SecretsReport(find_secrets(parts))
    except EngramError as exc:
        raise fail(exc) from None
    if as_json:
        print_json(report.to_json())
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
    from ..app import make_recaller, open_reader, open_writer
    from ..maintain.forget import ForgetReport, named, search
    from ..maintain.forget import forget as forget_ids

    text = target.strip()
    try:
        cfg = existing_folder()
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
        with refused_unless_alone(
            "cannot forget while another process writes to the memory folder"
        ):
            with opened as parts:
                report: ForgetReport = forget_ids(parts, ids, reason=reason, dry_run=dry_run)
    except EngramError as exc:
        raise fail(exc) from None
    if as_json:
        print_json(report.to_json())
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
