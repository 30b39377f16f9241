"""The dev conversations rewritten the way people type in a messenger, to probe recall on
chat-style text: the same facts and questions, in short messages with typos and slang.

    python -m bench.chat_style [--seed N] [--clauses] [--keep DIR [--reuse]]

LoCoMo's turns are tidy paragraphs. Real two-person chats are not: one thought per message,
lowercase, no final full stop, "u"/"gonna"/"cuz", a typo every few lines, photos with a
caption. This rewrites each dev conversation deterministically (a seed):

* every turn is split into one message per sentence (ids ``D1:3.1``, ``D1:3.2``, …; the
  harness maps them back to the turn ``D1:3`` the evidence names),
* most messages are lowercased and lose their final full stop,
* common words become their chat spelling (:data:`SLANG`),
* about one word in 25 of four letters or more gets a typo (two letters swapped or one
  dropped),
* an image a speaker shared stays as its caption;
* with ``--clauses``, each sentence is cut further at its clauses (commas, dashes, "and",
  "but", "so", "because"), one message per thought: the short turns of real chats, where
  recall lost most to the hybrid baseline (docs/ARCHITECTURE.md "Recall").

Questions are left as written. Then engram-md (ingested offline through the CLI, like
``bench.recall_bench``) and the three baselines answer them, at 500 and 1000 tokens. A probe
of our own making, not a held-out set: it tests robustness to the surface of chat text, and
no rule of the recall was set from it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engram_md.text.sentences import split_sentences

from . import locomo
from .baselines import build_baselines
from .evidence import QuestionRetriever, Unit, evaluate, format_table
from .recall_bench import BUDGETS, open_folders

SLANG = {
    "you": "u",
    "your": "ur",
    "are": "r",
    "because": "cuz",
    "really": "rly",
    "though": "tho",
    "thanks": "thx",
    "please": "pls",
    "people": "ppl",
    "tonight": "tonite",
    "okay": "ok",
    "going to": "gonna",
    "want to": "wanna",
    "got to": "gotta",
    "i am": "im",
    "don't": "dont",
    "can't": "cant",
    "that's": "thats",
}
_SLANG = re.compile(r"\b(" + "|".join(re.escape(k) for k in SLANG) + r")\b", re.IGNORECASE)
_CAPTION = re.compile(r"\s*\[shares an image: [^\]]*\]")
_WORD = re.compile(r"[A-Za-z]{4,}")
TYPO_RATE = 0.04
LOWERCASE_SHARE = 0.7
DROP_STOP_SHARE = 0.8


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    if rng.random() < 0.5:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i + 1 :]


def chat_message(text: str, rng: random.Random) -> str:
    """One sentence as it might be typed in a messenger."""
    text = _SLANG.sub(lambda m: SLANG[m.group(0).lower()], text)
    text = _WORD.sub(
        lambda m: _typo(m.group(0), rng) if rng.random() < TYPO_RATE else m.group(0), text
    )
    if rng.random() < LOWERCASE_SHARE:
        text = text.lower()
    if rng.random() < DROP_STOP_SHARE:
        text = text.rstrip(".")
    return text.strip()


# Where a sentence breaks into clauses, for the ``fragments`` rewrite.
_CLAUSE = re.compile(r",\s+|\s+-\s+|;\s+|\s+(?=(?:and|but|so|cuz|because)\s)")


def fragments(sentence: str) -> list[str]:
    """A sentence cut at its clauses ("went to rome last week", "cleared my mind"), the way
    some people send one message per thought; a piece of one or two words stays with the
    one before it (or, first, with the next)."""
    pieces: list[str] = []
    for piece in _CLAUSE.split(sentence):
        piece = piece.strip()
        if not piece:
            continue
        if pieces and len(piece.split()) <= 2:
            pieces[-1] = f"{pieces[-1]} {piece}"
        elif pieces and len(pieces[-1].split()) <= 2:
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces or [sentence]


def chat_style(
    data: list[dict[str, Any]], seed: int = 0, *, split_clauses: bool = False
) -> list[dict[str, Any]]:
    """The conversations of ``data`` rewritten as chat messages (see the module's docstring);
    with ``split_clauses``, one message per clause (:func:`fragments`) instead of per
    sentence: shorter messages, as in chats where every thought is sent on its own."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for conv in data:
        rewritten = dict(conv["conversation"])
        for key, turns in conv["conversation"].items():
            if not (re.fullmatch(r"session_\d+", key) and isinstance(turns, list)):
                continue
            messages: list[dict[str, Any]] = []
            for turn in turns:
                caption = turn.get("blip_caption")
                text = _CAPTION.sub("", turn.get("text", ""))
                sentences = split_sentences(text)
                if split_clauses:
                    sentences = [f for s in sentences for f in fragments(s)]
                pieces = [chat_message(s, rng) for s in sentences] or [""]
                for n, piece in enumerate(pieces, start=1):
                    message = {"speaker": turn["speaker"], "dia_id": f"{turn['dia_id']}.{n}"}
                    message["text"] = piece
                    if caption and n == len(pieces):
                        message["blip_caption"] = caption
                    if piece or caption:
                        messages.append(message)
            rewritten[key] = messages
        out.append({**conv, "conversation": rewritten})
    return out


def turn_of(message_id: str) -> str:
    """``D1:3.2`` -> ``D1:3``: the turn a message was split from."""
    return message_id.rsplit(".", 1)[0]


def _as_turns(retrieve: QuestionRetriever) -> QuestionRetriever:
    def mapped(question: locomo.Question) -> list[Unit]:
        return [(tuple(turn_of(i) for i in ids), text) for ids, text in retrieve(question)]

    return mapped


def run(
    seed: int = 0, *, split_clauses: bool = False, keep: Path | None = None, reuse: bool = False
) -> dict[str, Any]:
    if not locomo.available():
        return {"skipped": f"{locomo.DATA} not found"}
    data = chat_style(locomo.load(), seed, split_clauses=split_clauses)
    questions = locomo.questions(data)
    baselines = build_baselines(locomo.turns(data))
    with tempfile.TemporaryDirectory(prefix="engram-chat-") as tmp:
        # With ``keep``, the rewritten conversations are ingested there (or, with ``reuse``,
        # the folders an earlier run of the same seed left there are asked again).
        folders = open_folders(data, keep or Path(tmp), reuse=reuse)

        def engram(budget: int) -> QuestionRetriever:
            def retrieve(q: locomo.Question) -> list[Unit]:
                return list(folders[q.conversation].ask(q.question, budget).units)

            return retrieve

        results: dict[str, Any] = {"seed": seed, "clauses": split_clauses, "budgets": {}}
        for budget in BUDGETS:
            contenders: Mapping[str, QuestionRetriever] = {
                "engram-md": _as_turns(engram(budget)),
                **{name: _as_turns(r) for name, r in baselines.items()},
            }
            results["budgets"][str(budget)] = {
                conv: evaluate(contenders, [q for q in questions if q.conversation == conv],
                               budget=budget, ks=())
                for conv in folders
            }  # fmt: skip
        return results


def format_result(result: Mapping[str, Any]) -> str:
    if "skipped" in result:
        return str(result["skipped"])
    unit = "clause" if result.get("clauses") else "sentence"
    parts = [f"Chat-style rewrite of the dev conversations, one message per {unit} "
             f"(seed {result['seed']})"]  # fmt: skip
    for budget, by_conversation in result["budgets"].items():
        for conv, table in by_conversation.items():
            parts.append(f"\n{conv}, {budget} tokens")
            parts.append(format_table(table))
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clauses", action="store_true", help="one message per clause")
    parser.add_argument("--keep", type=Path, help="ingest under KEEP/<conversation>; keep it")
    parser.add_argument("--reuse", action="store_true", help="measure folders left under KEEP")
    args = parser.parse_args(argv)
    if args.reuse and args.keep is None:
        parser.error("--reuse needs --keep")
    result = run(args.seed, split_clauses=args.clauses, keep=args.keep, reuse=args.reuse)
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
