"""How well secrets and personal data are redacted: engram-md's rules against kept detectors.

    python -m bench.secrets_bench

On both splits of the corpus (``tests/data/secrets``: 400 secrets and 400 look-alikes each,
see its ``corpus.py``), every detector redacts every text; a secret is caught when none of
its value is left, a look-alike is altered when its text changed at all.
Goals: >= 99% of secrets caught, <= 1% of look-alikes altered.

The detectors, each as its authors configure it by default:

- ``engram-md``: :func:`engram_md.ingest.sanitize.redact_secrets`, personal data included;
- ``detect-secrets``: every plugin of its default settings (provider patterns, keyword, base64
  and hex entropy), scanning each text as a ``.txt`` file the way ``detect-secrets scan`` does;
  a finding is widened to the whitespace-delimited token it sits in (its GitHub plugin
  reports only the ``ghp`` prefix) and a private key finding to the whole key block;
- ``scrubadub``: its credential, credit card, social security and national insurance
  detectors (the others, e-mail, phone, URL, name, are not secrets and not in our policy);
- ``presidio``: Presidio's pattern recognizers for the same personal data (card, SSN, NINO,
  IBAN, Aadhaar, SIN, NIF/NIE), called without an NLP engine. ``AnalyzerEngine()`` itself
  cannot start here: it fetches a spaCy model from the network (``ConnectionError`` offline),
  so its context words and NER are out of reach; the score threshold is its default (0).

Real conversation turns (the LoCoMo dev split, when ``../shared/bench`` has it) hold no
secrets: every one the rules change is a false alarm, counted apart.

The libraries are the ``bench`` extra (``pip install -e '.[bench]'``); a missing one is
reported as skipped. Unions (engram-md plus a library) show whether a library would add.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import regex

from engram_md.ingest.sanitize import redact_secrets
from tests.data.secrets.corpus import SPLITS, LookAlike, Secret, leaks, look_alikes, secrets

from . import locomo

try:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings
except ImportError:  # the bench extra is not installed
    SecretsCollection = None

try:
    import scrubadub
    import scrubadub.detectors
except ImportError:
    scrubadub = None

try:
    from presidio_analyzer import predefined_recognizers as presidio
except ImportError:
    presidio = None

Redactor = Callable[[str], str]
GOAL_CAUGHT = 0.99
GOAL_ALTERED = 0.01
MARKER = "[X]"

_TOKEN_EDGE = regex.compile(r"[^\s\"'`]+")
_KEY_BLOCK = regex.compile(
    r"-----BEGIN[^-]*PRIVATE KEY-----.*?(?:-----END[^-]*PRIVATE KEY-----|\Z)", regex.S
)


# ---------------------------------------------------------------- the detectors


def engram(text: str) -> str:
    return redact_secrets(text)[0]


def _spans_of_values(text: str, found: list[tuple[str, str]]) -> list[tuple[int, int]]:
    """Where each reported (type, value) lies, widened to its token (or key block)."""
    spans = []
    for kind, value in found:
        if kind == "Private Key":
            spans += [m.span() for m in _KEY_BLOCK.finditer(text)]
            continue
        start = text.find(value)
        while value and start >= 0:
            for token in _TOKEN_EDGE.finditer(text):
                if token.start() <= start < token.end():
                    spans.append(token.span())
            start = text.find(value, start + 1)
    return spans


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(set(spans), reverse=True):
        text = text[:start] + MARKER + text[end:]
    return text


@contextmanager
def detect_secrets_redactor() -> Iterator[Redactor]:
    folder = Path(tempfile.mkdtemp(prefix="secrets-bench-"))
    case = folder / "case.txt"

    def redact(text: str) -> str:
        case.write_text(text + "\n", encoding="utf-8")
        found = SecretsCollection()
        found.scan_file(str(case))
        values = [(s.type, s.secret_value or "") for name in found.files for s in found[name]]
        return _apply(text, _spans_of_values(text, values))

    with default_settings():
        try:
            yield redact
        finally:
            case.unlink(missing_ok=True)
            folder.rmdir()


def scrubadub_redactor() -> Redactor:
    detectors = scrubadub.detectors
    scrubber = scrubadub.Scrubber(
        detector_list=[
            detectors.CredentialDetector,
            detectors.CreditCardDetector,
            detectors.catalogue.detector_catalogue.get("social_security_number"),
            detectors.catalogue.detector_catalogue.get("national_insurance_number")(locale="en_GB"),
        ]
    )
    return scrubber.clean


def presidio_redactor() -> Redactor:
    recognizers = [
        presidio.CreditCardRecognizer(), presidio.UsSsnRecognizer(), presidio.UkNinoRecognizer(),
        presidio.IbanRecognizer(), presidio.InAadhaarRecognizer(), presidio.CaSinRecognizer(),
        presidio.EsNifRecognizer(), presidio.EsNieRecognizer(),
    ]  # fmt: skip

    def redact(text: str) -> str:
        spans = [
            (hit.start, hit.end)
            for rec in recognizers
            for hit in rec.analyze(text, rec.supported_entities, None)
        ]
        return _apply(text, spans)

    return redact


def _union(first: Redactor, second: Redactor) -> Redactor:
    return lambda text: second(first(text))


# ---------------------------------------------------------------- measuring


def measure(redact: Redactor, cases: list[Secret], alikes: list[LookAlike]) -> dict[str, Any]:
    started = time.perf_counter()
    missed = [c for c in cases if leaks(c, redact(c.text))]
    altered = [a for a in alikes if redact(a.text) != a.text]
    seconds = time.perf_counter() - started
    by_family = Counter(c.family for c in cases)
    missed_family = Counter(c.family for c in missed)
    caught = 1 - len(missed) / len(cases)
    rate = len(altered) / len(alikes)
    return {
        "secrets": len(cases),
        "caught": round(caught, 4),
        "caught_credentials": round(1 - missed_family["credential"] / by_family["credential"], 4),
        "caught_personal": round(1 - missed_family["personal"] / by_family["personal"], 4),
        "look_alikes": len(alikes),
        "altered": round(rate, 4),
        "goals_met": caught >= GOAL_CAUGHT and rate <= GOAL_ALTERED,
        "missed_kinds": dict(Counter(c.kind for c in missed).most_common()),
        "altered_kinds": dict(Counter(a.kind for a in altered).most_common()),
        "ms_per_text": round(1000 * seconds / (len(cases) + len(alikes)), 3),
    }


@contextmanager
def detectors() -> Iterator[dict[str, Redactor | str]]:
    """Every detector, or why it is skipped."""
    found: dict[str, Redactor | str] = {"engram-md": engram}
    missing = "not installed (pip install -e '.[bench]')"
    found["scrubadub"] = scrubadub_redactor() if scrubadub is not None else missing
    found["presidio"] = presidio_redactor() if presidio is not None else missing
    if SecretsCollection is None:
        found["detect-secrets"] = missing
        yield found
        return
    with detect_secrets_redactor() as ds:
        found["detect-secrets"] = ds
        yield found


def real_prose() -> dict[str, Any]:
    """Turns of real conversations (the LoCoMo dev split: no secrets in them) that the own
    rules change: look-alikes nobody wrote on purpose."""
    if not locomo.available():
        return {"skipped": "LoCoMo dev data not found"}
    texts = [t.text for t in locomo.turns(locomo.load())]
    altered = sum(1 for text in texts if engram(text) != text)
    return {"turns": len(texts), "altered": altered}


def run() -> dict[str, Any]:
    result: dict[str, Any] = {"locomo": real_prose()}
    with detectors() as found:
        for name, redact in list(found.items()):
            if name != "engram-md" and callable(redact):
                found[f"engram-md + {name}"] = _union(engram, redact)
        for split in SPLITS:
            cases, alikes = secrets(split), look_alikes(split)
            result[split] = {
                name: measure(redact, cases, alikes) if callable(redact) else {"skipped": redact}
                for name, redact in found.items()
            }
    return result


def format_table(result: dict[str, Any]) -> str:
    head = ("split", "detector", "secrets caught", "credentials", "personal", "look-alikes altered")
    lines = ["{:9} {:28} {:>15} {:>12} {:>9} {:>20}".format(*head)]
    for split in SPLITS:
        for name, row in result[split].items():
            if "skipped" in row:
                lines.append(f"{split:9} {name:28} skipped: {row['skipped']}")
                continue
            lines.append(
                f"{split:9} {name:28} {row['caught']:>15.1%} {row['caught_credentials']:>12.1%}"
                f" {row['caught_personal']:>9.1%} {row['altered']:>20.1%}"
                + ("" if row["goals_met"] else "  (goal not met)")
            )
    prose = result["locomo"]
    if "turns" in prose:
        lines.append(
            f"real conversation turns (LoCoMo dev) altered: {prose['altered']}/{prose['turns']}"
        )
    return "\n".join(lines)


def main() -> None:
    result = run()
    print(format_table(result))
    for split in SPLITS:
        row = result[split]["engram-md"]
        print(f"{split}: engram-md missed {row['missed_kinds']}; altered {row['altered_kinds']}")


if __name__ == "__main__":
    main()
