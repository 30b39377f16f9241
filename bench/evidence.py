"""LoCoMo evidence recall: one harness for the project's recall and the baselines.

    python -m bench.evidence [--budget TOKENS]

A retriever answers a question with ranked units, each a text and the dialogue turn ids it came
from. Two figures per retriever, both over questions of categories 1–4:

* **evidence recall at a token budget** — units are taken greedily in rank order while they fit
  the budget (a unit that does not fit is skipped, a later smaller one may still fit); the
  share of the question's evidence ids found among the source ids of the units taken, averaged
  over questions. Every retriever fills the same budget, so a retriever cannot win by returning
  longer units.
* **R@k by count** — the same share over the first k units regardless of size (the LoCoMo
  paper's metric), with the words and tokens those k units cost, since k long units and k
  short ones are not the same amount of context.

Each conversation is a separate memory: a retriever is handed the whole question so it can
search only that question's conversation.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean
from typing import Any

from . import locomo
from .locomo import Question

Unit = tuple[tuple[str, ...], str]
"""One retrieved unit: (source turn ids, text)."""
Retriever = Callable[[str], list[Unit]]
"""A query in, ranked units out (best first, as many as it likes)."""
QuestionRetriever = Callable[[Question], list[Unit]]

try:
    from engram_md.text.words import estimate_tokens as _estimate_tokens
except ImportError:  # engram_md not importable: the same estimate, so figures still compare

    def _estimate_tokens(text: str) -> int:
        return math.ceil(len(text) / 4)


def tokens(text: str) -> int:
    """The one token estimate: 4 characters, rounded up (the same as recall's budget)."""
    return _estimate_tokens(text)


def fill_budget(units: Sequence[Unit], budget: int) -> list[Unit]:
    """Units in rank order that fit ``budget`` tokens, skipping any that would overflow it."""
    taken: list[Unit] = []
    left = budget
    for unit in units:
        cost = tokens(unit[1])
        if cost <= left:
            taken.append(unit)
            left -= cost
    return taken


def evidence_recall(units: Sequence[Unit], evidence: Sequence[str]) -> float:
    """Share of ``evidence`` ids found among the units' source ids (0 when there is none)."""
    wanted = set(evidence)
    if not wanted:
        return 0.0
    found = {turn_id for ids, _ in units for turn_id in ids}
    return len(wanted & found) / len(wanted)


def scoped(by_conversation: Mapping[str, Retriever]) -> QuestionRetriever:
    """A question retriever that searches only the question's own conversation."""

    def retrieve(question: Question) -> list[Unit]:
        retriever = by_conversation.get(question.conversation)
        return retriever(question.question) if retriever is not None else []

    return retrieve


def memoized(retrieve: QuestionRetriever) -> QuestionRetriever:
    """``retrieve`` asked once per question: the same ranking serves every budget and every
    subset of questions a run reports."""
    answers: dict[Question, list[Unit]] = {}

    def cached(question: Question) -> list[Unit]:
        found = answers.get(question)
        if found is None:
            found = answers[question] = retrieve(question)
        return found

    return cached


def _words(units: Sequence[Unit]) -> int:
    return sum(len(text.split()) for _, text in units)


def _tokens(units: Sequence[Unit]) -> int:
    return sum(tokens(text) for _, text in units)


def evaluate(
    retrievers: Mapping[str, QuestionRetriever],
    questions: Sequence[Question],
    *,
    budget: int = 1000,
    ks: tuple[int, ...] = (5, 10),
) -> dict[str, Any]:
    """Evidence recall of each retriever over ``questions``; a JSON-serializable dict.

    Shape::

        {"budget", "ks", "questions", "per_category": {name: count},
         "retrievers": {name: {"recall", "per_category": {name: recall}, "tokens_used",
                               "at_k": {"5": {"recall", "words", "tokens"}, …}}}}
    """
    # Categories in their numbered order, so tables and JSON read the same run to run.
    order = [_category(c) for c in sorted({q.category for q in questions})]
    counts = {c: sum(1 for q in questions if _category(q.category) == c) for c in order}
    out: dict[str, Any] = {
        "budget": budget,
        "ks": list(ks),
        "questions": len(questions),
        "per_category": counts,
        "retrievers": {},
    }
    for name, retrieve in retrievers.items():
        at_budget: list[float] = []
        used: list[int] = []
        by_category: dict[str, list[float]] = {}
        at_k: dict[int, tuple[list[float], list[int], list[int]]] = {k: ([], [], []) for k in ks}
        for q in questions:
            ranked = retrieve(q)
            kept = fill_budget(ranked, budget)
            score = evidence_recall(kept, q.evidence)
            at_budget.append(score)
            used.append(_tokens(kept))
            by_category.setdefault(_category(q.category), []).append(score)
            for k in ks:
                first = ranked[:k]
                recalls, words, toks = at_k[k]
                recalls.append(evidence_recall(first, q.evidence))
                words.append(_words(first))
                toks.append(_tokens(first))
        out["retrievers"][name] = {
            "recall": _mean(at_budget),
            "per_category": {c: _mean(by_category[c]) for c in order},
            "tokens_used": _mean(used),
            "at_k": {
                str(k): {"recall": _mean(r), "words": _mean(w), "tokens": _mean(t)}
                for k, (r, w, t) in at_k.items()
            },
        }
    return out


def _category(number: int) -> str:
    return locomo.CATEGORIES.get(number, str(number))


def _mean(values: Sequence[float]) -> float:
    return fmean(values) if values else 0.0


def format_table(result: Mapping[str, Any]) -> str:
    """A plain-text table of :func:`evaluate`'s result, one row per retriever."""
    categories = list(result["per_category"])
    budget = result["budget"]
    header = ["retriever", f"R@{budget}tok", "tok used"]
    header += [f"{c} ({result['per_category'][c]})" for c in categories]
    for k in result["ks"]:
        header += [f"R@{k}", f"words@{k}", f"tok@{k}"]
    rows = [header]
    for name, r in result["retrievers"].items():
        row = [name, f"{r['recall']:.3f}", f"{r['tokens_used']:.0f}"]
        row += [f"{r['per_category'].get(c, 0.0):.3f}" for c in categories]
        for k in result["ks"]:
            cell = r["at_k"][str(k)]
            row += [f"{cell['recall']:.3f}", f"{cell['words']:.0f}", f"{cell['tokens']:.0f}"]
        rows.append(row)
    title = f"LoCoMo evidence recall, {result['questions']} questions (categories 1-4)"
    return "\n".join([title, *align(rows)])


def align(rows: Sequence[Sequence[str]], *, labels: int = 1) -> list[str]:
    """Rows as aligned text lines, a rule under the first (the header): the first ``labels``
    columns to the left, the figures to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i < labels else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budget", type=int, default=1000, help="token budget per question")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if not locomo.available():
        print(f"skipped: {locomo.DATA} is absent (see ../shared/bench/README.md)")
        return 0
    # Imported here so a missing data file skips before the embedding model is touched.
    from .baselines import build_baselines

    data = locomo.load()
    result = evaluate(
        build_baselines(locomo.turns(data)), locomo.questions(data), budget=args.budget
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
