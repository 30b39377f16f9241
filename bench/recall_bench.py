"""LoCoMo evidence recall of engram-md's recall against three baselines, in one run.

    python -m bench.recall_bench [--data FILE ...] [--keep DIR [--reuse]] [--out PATH]

By default the LoCoMo dev pair (``../shared/bench``); ``--data`` measures other conversations
of the same shape instead, such as the held-out set in ``bench/data/heldout-*.json``
(``bench/data/README-heldout.md``).

Each dev conversation is ingested once with the offline extractor (the real CLI, `engram-md
ingest`) into its own memory folder; recall then answers each question from that folder through
the ``Recaller``, asked with the real budget. Its ``top_k`` is lifted so the budget is what
binds, as it does for the baselines; the shipped ``top_k`` gets its own row (its answer is the
first ``top_k`` memories of the unbounded one, since recall keeps memories in rank order). The
baselines (bench/baselines.py) fill the same budget through the harness (bench/evidence.py).

One run reports:

* **evidence recall** per conversation and both together, at 500 and 1000 tokens, overall and
  by category, engram-md and the three baselines;
* **a cross-check** of the fusion knobs that matter (``rrf_k`` x ``fact_vote`` x ``name_lift``,
  a 3 x 3 x 3 grid at 1000 tokens): the best setting on one conversation is reported on the
  other, both ways, beside the best the held-out conversation allows and the shipped default;
* **the relevance floor**: each conversation's questions asked of the *other* conversation's
  folder (shipped defaults, 1000 tokens); the share answered with nothing or with a rendered
  block (what the agent is given) under 100 tokens, and under 100 tokens of the memories'
  content alone; as a control, the shares of the answers from the question's own folder that
  are empty or under 100 tokens (rendered);
* **recall latency**: per question, wall time of ``Recaller.recall`` at 1000 tokens the first
  time the question is asked (its embedding computed, not read from the cache).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram_md.app import RecallSession
from engram_md.core.config import RecallConfig, load_config
from engram_md.recall.fusion import FusionWeights
from engram_md.recall.recaller import WEIGHTS, Recaller
from engram_md.recall.wire import RecallOptions
from engram_md.text.words import estimate_tokens

from . import locomo
from .baselines import build_baselines
from .evidence import QuestionRetriever, Unit, align, evaluate, evidence_recall, memoized
from .locomo import Question

# Conversations in LoCoMo's shape written for measuring only: never read while recall was
# built or tuned (bench/data/README-heldout.md).
HELD_OUT = tuple(sorted((Path(__file__).parent / "data").glob("heldout-*.json")))
BUDGETS = (500, 1000)
MAIN_BUDGET = 1000  # the budget of the cross-check, the floor and the latency
SHIPPED_TOP_K = RecallConfig().top_k
UNBOUNDED = 10**6
GRID = {"rrf_k": (10, 30, 60), "fact_vote": (1.0, 2.0, 3.0), "name_lift": (0.0, 0.3, 0.6)}
FLOOR_TOKENS = 100  # an answer this short is as good as empty: a memory or two
TOGETHER = "together"
ENGRAM = "engram-md"
# Asked of each folder before timing: the first recalls open the index's files and the model.
WARMUP = (
    "What did we decide about the trip?",
    "Who likes painting?",
    "When was the last time we met?",
)


def ingest_conversation(conv: dict[str, Any], root: Path) -> None:
    items = locomo.turns([conv])
    root.mkdir(parents=True, exist_ok=True)
    source = root / "transcript.jsonl"
    source.write_text("\n".join(locomo.jsonl_lines(items)) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}
    argv = [sys.executable, "-m", "engram_md", "--memory-dir", str(root / "memory"),
            "--state-dir", str(root / "state"), "ingest", str(source)]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.decode()[-2000:])


# ---------------------------------------------------------------- asking a folder


@dataclass(frozen=True)
class Answer:
    units: tuple[Unit, ...]
    block_tokens: int  # of the rendered block the agent is given; 0 when nothing was recalled
    content_tokens: int  # of the memories' content alone (what the budget counts)
    seconds: float


class Folder:
    """One conversation's memory folder, open for recall with any fusion setting."""

    def __init__(self, root: Path) -> None:
        cfg = load_config(
            None, env={}, overrides={"memory_dir": root / "memory", "state_dir": root / "state"}
        )
        self._session = RecallSession(cfg)
        self._recallers: dict[FusionWeights, Recaller] = {}
        self._answers: dict[tuple[str, int, FusionWeights], Answer] = {}

    @property
    def rows(self) -> int:
        """Rows in the folder's index: facts, boxes and the sentences of what was said."""
        return self._session.recaller.index.count()

    def ask(self, question: str, budget: int, fusion: FusionWeights = WEIGHTS.fusion) -> Answer:
        """Recall's answer, asked once per question, budget and setting."""
        key = (question, budget, fusion)
        found = self._answers.get(key)
        if found is None:
            options = RecallOptions(budget_tokens=budget, top_k=UNBOUNDED, record_access=False)
            recaller = self._recaller(fusion)
            start = time.perf_counter()
            result = recaller.recall(question, options)
            seconds = time.perf_counter() - start
            units = tuple((m.source_turn_ids, m.content) for m in result.memories)
            block = estimate_tokens(result.render()) if result.memories else 0
            found = self._answers[key] = Answer(units, block, result.tokens, seconds)
        return found

    def _recaller(self, fusion: FusionWeights) -> Recaller:
        base = self._session.recaller
        if fusion == base.weights.fusion:
            return base
        found = self._recallers.get(fusion)
        if found is None:
            found = self._recallers[fusion] = Recaller(
                base.index,
                base.embedder,
                base.access,
                base.cfg,
                weights=replace(base.weights, fusion=fusion),
                graph=base.graph,
                graph_cfg=base.graph_cfg,
                said_order=base.said_order,
            )
        return found


def open_folders(
    data: list[dict[str, Any]],
    base: Path,
    *,
    reuse: bool = False,
) -> dict[str, Folder]:
    """Each conversation ingested under ``base/<sample_id>`` (or, with ``reuse``, the folder an
    earlier run left there), opened for recall."""
    folders: dict[str, Folder] = {}
    for conv in data:
        root = base / conv["sample_id"]
        memory_dir, state_dir = root / "memory", root / "state"
        if reuse and (state_dir / "index").is_dir():
            # The cache may hold these very questions from the earlier run: start from none,
            # so the latency includes embedding the question (the index holds every vector).
            cache = load_config(
                None, env={}, overrides={"memory_dir": memory_dir, "state_dir": state_dir}
            ).layout.embedding_cache_dir
            shutil.rmtree(cache, ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
            ingest_conversation(conv, root)
        folders[conv["sample_id"]] = Folder(root)
    return folders


# ---------------------------------------------------------------- the figures


def grid() -> list[FusionWeights]:
    """The cross-check's settings, the shipped default included."""
    settings = [
        replace(WEIGHTS.fusion, rrf_k=k, fact_vote=vote, name_lift=lift)
        for k, vote, lift in itertools.product(GRID["rrf_k"], GRID["fact_vote"], GRID["name_lift"])
    ]
    return settings if WEIGHTS.fusion in settings else [WEIGHTS.fusion, *settings]


def setting_name(fusion: FusionWeights) -> str:
    return ", ".join(f"{knob} {getattr(fusion, knob):g}" for knob in GRID)


def cross_check(
    scores: Mapping[str, Mapping[str, float]], conversations: Sequence[str], default: str
) -> list[dict[str, Any]]:
    """Tune on one conversation, report on each other one.

    ``scores[setting][conversation]`` is a setting's figure on a conversation. For each
    conversation in turn the best setting there (the default wins a tie, then the first in
    order) is chosen and reported on every other conversation, beside the best any setting
    reaches there and the default's figure. ``gap`` is that best minus the held-out figure:
    what choosing on the wrong conversation cost.
    """
    out = []
    for tuned_on in conversations:
        chosen = _best(scores, tuned_on, default)
        for held_out in conversations:
            if held_out == tuned_on:
                continue
            best = _best(scores, held_out, default)
            out.append(
                {
                    "tuned_on": tuned_on,
                    "chosen": chosen,
                    "tuned": scores[chosen][tuned_on],
                    "held_out_on": held_out,
                    "held_out": scores[chosen][held_out],
                    "best_there": best,
                    "best_there_figure": scores[best][held_out],
                    "gap": scores[best][held_out] - scores[chosen][held_out],
                    "default_tuned": scores[default][tuned_on],
                    "default_held_out": scores[default][held_out],
                }
            )
    return out


def _best(scores: Mapping[str, Mapping[str, float]], conversation: str, default: str) -> str:
    return max(scores, key=lambda s: (scores[s][conversation], s == default))


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _by_conversation(
    questions: Sequence[Question], conversations: Sequence[str]
) -> dict[str, list[Question]]:
    scopes = {c: [q for q in questions if q.conversation == c] for c in conversations}
    scopes[TOGETHER] = list(questions)
    return scopes


def measure(
    folders: Mapping[str, Folder],
    questions: Sequence[Question],
    baselines: Mapping[str, QuestionRetriever],
) -> dict[str, Any]:
    """Every figure of the run (see the module's docstring); a JSON-serializable dict."""
    conversations = list(folders)
    scopes = _by_conversation(questions, conversations)
    default = WEIGHTS.fusion

    # Latency first: the first ask of a question is the one that embeds it.
    for folder in folders.values():
        for query in WARMUP:
            folder.ask(query, MAIN_BUDGET)
    own = {q: folders[q.conversation].ask(q.question, MAIN_BUDGET) for q in questions}
    latency = {scope: _latency([own[q].seconds for q in items]) for scope, items in scopes.items()}
    for conversation, folder in folders.items():
        latency[conversation]["index_rows"] = folder.rows

    def engram(budget: int, top_k: int = UNBOUNDED) -> QuestionRetriever:
        def retrieve(q: Question) -> list[Unit]:
            return list(folders[q.conversation].ask(q.question, budget).units[:top_k])

        return retrieve

    cached = {name: memoized(retrieve) for name, retrieve in baselines.items()}
    recall: dict[str, dict[str, Any]] = {}
    for scope, items in scopes.items():
        recall[scope] = {}
        for budget in BUDGETS:
            contenders = {
                ENGRAM: engram(budget),
                f"{ENGRAM}, top_k {SHIPPED_TOP_K}": engram(budget, SHIPPED_TOP_K),
                **cached,
            }
            ks = (5, 10) if budget == MAIN_BUDGET else ()
            recall[scope][str(budget)] = evaluate(contenders, items, budget=budget, ks=ks)

    figures: dict[str, dict[str, float]] = {}
    for fusion in grid():
        found = {
            q: evidence_recall(folders[q.conversation].ask(q.question, MAIN_BUDGET, fusion).units,
                               q.evidence)
            for q in questions
        }  # fmt: skip
        figures[setting_name(fusion)] = {
            scope: _mean([found[q] for q in items]) for scope, items in scopes.items()
        }

    return {
        "budgets": list(BUDGETS),
        "conversations": conversations,
        "recall": recall,
        "cross_check": {
            "budget": MAIN_BUDGET,
            "default": setting_name(default),
            "grid": figures,
            "directions": cross_check(figures, conversations, setting_name(default)),
        },
        "relevance_floor": _floor(folders, questions, own),
        "latency_ms": latency,
    }


def _floor(
    folders: Mapping[str, Folder], questions: Sequence[Question], own: Mapping[Question, Answer]
) -> dict[str, Any]:
    """The share of answers empty or under :data:`FLOOR_TOKENS`, asked of another
    conversation's folder, with the same shares in the question's own folder as a control."""
    directions: dict[str, dict[str, int]] = {}
    for q in questions:
        for other, folder in folders.items():
            if other == q.conversation:
                continue
            answer = folder.ask(q.question, MAIN_BUDGET)
            tally = directions.setdefault(
                f"{q.conversation} -> {other}",
                {"asked": 0, "empty": 0, "short": 0, "short_content": 0},
            )
            tally["asked"] += 1
            tally["empty"] += not answer.units
            tally["short"] += answer.block_tokens < FLOOR_TOKENS
            tally["short_content"] += answer.content_tokens < FLOOR_TOKENS
    asked = sum(d["asked"] for d in directions.values())

    def share(count: str) -> float:
        return sum(d[count] for d in directions.values()) / asked if asked else 0.0

    return {
        "budget": MAIN_BUDGET,
        "under_tokens": FLOOR_TOKENS,
        "measured_on": "rendered block",
        "directions": directions,
        "asked": asked,
        "short_share": share("short"),
        "short_content_share": share("short_content"),
        "empty_share": share("empty"),
        "own_empty_share": _mean([float(not a.units) for a in own.values()]),
        "own_short_share": _mean([float(a.block_tokens < FLOOR_TOKENS) for a in own.values()]),
    }


def _latency(seconds: Sequence[float]) -> dict[str, Any]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "queries": len(ms),
        "p50": round(statistics.median(ms), 1),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
    }


def run(
    *, keep: Path | None = None, reuse: bool = False, data_files: Sequence[Path] = ()
) -> dict[str, Any]:
    """Every figure over the conversations of ``data_files`` (default: the LoCoMo dev pair)."""
    if not data_files and not locomo.available():
        return {"skipped": f"{locomo.DATA} not found"}
    data = [conv for path in data_files or [locomo.DATA] for conv in locomo.load(path)]
    with tempfile.TemporaryDirectory(prefix="engram-recall-") as tmp:
        folders = open_folders(data, keep or Path(tmp), reuse=reuse)
        return measure(folders, locomo.questions(data), build_baselines(locomo.turns(data)))


# ---------------------------------------------------------------- the table


def format_table(result: Mapping[str, Any]) -> str:
    """Every figure of :func:`run` as plain text."""
    return "\n\n".join(
        [
            _recall_table(result),
            _cross_check_table(result["cross_check"]),
            _floor_lines(result["relevance_floor"]),
            _latency_line(result["latency_ms"]),
        ]
    )


def _recall_table(result: Mapping[str, Any]) -> str:
    budgets = [str(b) for b in result["budgets"]]
    together = result["recall"][TOGETHER][budgets[0]]
    categories = list(together["per_category"])
    header = ["scope", "retriever"]
    for budget in budgets:
        header += [f"R@{budget}", *(c.split("-")[0] for c in categories), "tok"]
    rows = [header]
    for scope, by_budget in result["recall"].items():
        first = by_budget[budgets[0]]
        counts = first["per_category"]
        row = [scope, "(questions)", str(first["questions"])]
        row += [str(counts.get(c, "-")) for c in categories]
        rows.append(row + [""] * (len(header) - len(row)))
        for name in first["retrievers"]:
            row = ["", name]
            for budget in budgets:
                r = by_budget[budget]["retrievers"][name]
                row += [f"{r['recall']:.3f}"]
                row += [_figure(r["per_category"].get(c)) for c in categories]
                row += [f"{r['tokens_used']:.0f}"]
            rows.append(row)
    title = "Evidence recall (LoCoMo categories 1-4) at each token budget"
    return "\n".join([title, *align(rows, labels=2)])


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cross_check_table(check: Mapping[str, Any]) -> str:
    grid_figures: Mapping[str, Mapping[str, float]] = check["grid"]
    scopes = list(next(iter(grid_figures.values())))
    rows = [["setting", *scopes]]
    for name, figures in grid_figures.items():
        label = f"{name} (shipped)" if name == check["default"] else name
        rows.append([label, *(f"{figures[s]:.3f}" for s in scopes)])
    lines = [f"Cross-check: fusion grid at {check['budget']} tokens", *align(rows)]
    for d in check["directions"]:
        lines.append(
            f"tuned on {d['tuned_on']}: {d['chosen']} ({d['tuned']:.3f} there); "
            f"held out on {d['held_out_on']}: {d['held_out']:.3f}, best there "
            f"{d['best_there_figure']:.3f} ({d['best_there']}), gap {d['gap']:.3f}; "
            f"shipped default {d['default_tuned']:.3f} / {d['default_held_out']:.3f}"
        )
    return "\n".join(lines)


def _floor_lines(floor: Mapping[str, Any]) -> str:
    limit = floor["under_tokens"]
    lines = [
        f"Relevance floor at {floor['budget']} tokens, {floor['measured_on']}: questions asked "
        f"of the other conversation's folder answered empty or under {limit} tokens: "
        f"{floor['short_share']:.1%} of {floor['asked']} (goal >= 90%; empty "
        f"{floor['empty_share']:.1%}; counting the memories' content only "
        f"{floor['short_content_share']:.1%})"
    ]
    for direction, d in floor["directions"].items():
        lines.append(
            f"  {direction}: {d['short']}/{d['asked']} under {limit} tokens, {d['empty']} empty"
        )
    lines.append(
        f"  control, own folder: {floor['own_empty_share']:.1%} empty, "
        f"{floor['own_short_share']:.1%} under {limit} tokens"
    )
    return "\n".join(lines)


def _latency_line(latency: Mapping[str, Mapping[str, Any]]) -> str:
    parts = [
        f"{scope} p50 {f['p50']:.1f} ms, p95 {f['p95']:.1f} ms"
        + (f" ({f['index_rows']} index rows)" if "index_rows" in f else "")
        for scope, f in latency.items()
    ]
    return "Recall latency through the Recaller, first ask of each question: " + "; ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data", type=Path, action="append", default=[],
        help="conversations in LoCoMo's shape (repeatable; default: the dev pair)",
    )  # fmt: skip
    parser.add_argument("--keep", type=Path, help="ingest under KEEP/<conversation>; keep it")
    parser.add_argument("--reuse", action="store_true", help="measure folders left under KEEP")
    parser.add_argument("--out", type=Path, help="results file (default bench/results/recall-…)")
    args = parser.parse_args(argv)
    if args.reuse and args.keep is None:
        parser.error("--reuse needs --keep")
    started = datetime.now(UTC)
    result = run(keep=args.keep, reuse=args.reuse, data_files=args.data)
    if "skipped" in result:
        print(f"skipped: {result['skipped']}")
        return 0
    print(format_table(result))
    name = "recall-held-out" if args.data else "recall-quality"
    out = args.out or Path("bench/results") / f"{name}-{started:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    stamped = {"started": f"{started:%Y-%m-%dT%H:%M:%SZ}", "recall_quality": result}
    out.write_text(json.dumps(stamped, indent=2) + "\n")
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
