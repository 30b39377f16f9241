"""Secret redaction measured on corpora of realistic, synthetic credentials.

Two corpora:

- ``tests/data/secrets.txt`` holds lines of config files, shell commands, JSON and prose with
  ``<<placeholders>>``; :func:`fill` puts random values of each credential's real shape in
  them at run time. ``tests/data/non_secrets.txt`` lists look-alikes (hashes, UUIDs,
  "password reset" prose) that must pass untouched. These are the regression cases.
- ``tests/data/secrets/``: a generated corpus of secrets said in prose (40 token kinds, keys
  known only by the words around them, passwords, private keys, card numbers, national ids)
  and independent look-alikes, in two splits with their own seeds and wording (``tune`` and
  ``held_out``, see its ``corpus.py``). ``make bench`` compares the rules with other
  detectors on it (``bench/secrets_bench.py``).

No complete key is stored in the repository: the values are fake, made fresh from a fixed
seed, and a scanner sees only templates. Each secret must be gone after
:func:`redact_secrets`, and gone from every file under ``memory/`` and ``state/`` after a real
``engram-md ingest`` of a transcript that says them.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from engram_md.ingest.sanitize import redact_secrets

from .conftest import Cli
from .data.secrets import corpus

DATA = Path(__file__).parent / "data"
SEED = 20260302

_UPPER_DIGITS = string.ascii_uppercase + "234567"
_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_PASSWORD_CHARS = _ALNUM + "!#%^*_-"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    """Random text with at least one digit: real keys almost always have one, and it makes
    a value that happens to be an English word impossible."""
    body = [rng.choice(alphabet) for _ in range(n - 1)]
    body.insert(rng.randrange(n), rng.choice(string.digits))
    return "".join(body)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(rng.randrange(10**9)), "name": "Dana", "iat": 1_772_000_000}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random, label: str, joiner: str = "\n") -> str:
    body = base64.b64encode(rng.randbytes(48 * 12)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    # Assembled from parts: "BEGIN" and the label never stand together in this file.
    begin, end = "-----" + "BEGIN " + label + "-----", "-----" + "END " + label + "-----"
    return joiner.join([begin, *lines, end])


def _password(rng: random.Random) -> str:
    # Never "-" first: on a command line that would be read as the next option.
    return rng.choice(_ALNUM) + _s(rng, _PASSWORD_CHARS, rng.randrange(9, 17))


def _putty(rng: random.Random, version: int, algorithm: str, public: int, private: int) -> str:
    """A .ppk key file: public and private base64 lines, then the MAC over them."""

    def lines(n: int) -> list[str]:
        body = base64.b64encode(rng.randbytes(48 * n)).decode()
        return [body[i : i + 64] for i in range(0, len(body), 64)]

    # Assembled from parts: the header never stands whole in this file.
    header = "PuTTY-User-" + f"Key-File-{version}: {algorithm}"
    pub, priv = lines(public), lines(private)
    return "\n".join(
        [header, "Encryption: none", f"Comment: {algorithm}-key-20260302",
         f"Public-Lines: {len(pub)}", *pub, f"Private-Lines: {len(priv)}", *priv,
         f"Private-MAC: {rng.randbytes(32 if version == 3 else 20).hex()}"]
    )  # fmt: skip


# Each generator gives a fresh fake credential of one shape. Prefixes are split so that
# this file holds no string a scanner would take for a key.
GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "aws_akid": lambda r: "AK" + "IA" + _s(r, _UPPER_DIGITS, 16),
    "aws_asia": lambda r: "AS" + "IA" + _s(r, _UPPER_DIGITS, 16),
    "aws_secret": lambda r: _s(r, _B64, 40),
    "aws_session": lambda r: "IQo" + _s(r, _B64, 300),
    "openai": lambda r: "sk" + "-" + _s(r, _ALNUM, 48),
    "openai_proj": lambda r: "sk" + "-proj-" + _s(r, _URLSAFE, 120),
    "openai_svc": lambda r: "sk" + "-svcacct-" + _s(r, _URLSAFE, 100),
    "anthropic": lambda r: "sk" + "-ant-api03-" + _s(r, _URLSAFE, 93) + "AA",
    "ghp": lambda r: "gh" + "p_" + _s(r, _ALNUM, 36),
    "gho": lambda r: "gh" + "o_" + _s(r, _ALNUM, 36),
    "ghs": lambda r: "gh" + "s_" + _s(r, _ALNUM, 36),
    "ghu": lambda r: "gh" + "u_" + _s(r, _ALNUM, 36),
    "github_pat": lambda r: "github" + "_pat_" + _s(r, _ALNUM, 22) + "_" + _s(r, _ALNUM, 59),
    "xoxb": lambda r: (
        "xo" + f"xb-{_s(r, string.digits, 12)}-{_s(r, string.digits, 13)}-" + _s(r, _ALNUM, 24)
    ),
    "xoxp": lambda r: (
        "xo"
        + f"xp-{_s(r, string.digits, 12)}-{_s(r, string.digits, 12)}-"
        + f"{_s(r, string.digits, 13)}-{_s(r, string.hexdigits.lower()[:16], 32)}"
    ),
    "xapp": lambda r: (
        "xa"
        + f"pp-1-A{_s(r, _UPPER_DIGITS, 10)}-{_s(r, string.digits, 13)}-"
        + _s(r, string.hexdigits.lower()[:16], 64)
    ),
    "slack_webhook": lambda r: (
        "https://hooks.slack"
        + ".com/services/T"
        + f"{_s(r, _UPPER_DIGITS, 8)}/B{_s(r, _UPPER_DIGITS, 10)}/{_s(r, _ALNUM, 24)}"
    ),
    "google": lambda r: "AI" + "za" + _s(r, _URLSAFE, 35),
    "stripe_live": lambda r: "sk" + "_live_" + _s(r, _ALNUM, 24),
    "stripe_rk": lambda r: "rk" + "_live_" + _s(r, _ALNUM, 24),
    "jwt": _jwt,
    "pem_rsa": lambda r: _pem(r, "RSA PRIVATE KEY"),
    "pem_ec": lambda r: _pem(r, "EC PRIVATE KEY"),
    "pem_openssh": lambda r: _pem(r, "OPENSSH PRIVATE KEY"),
    "pem_pkcs8": lambda r: _pem(r, "PRIVATE KEY"),
    "pem_encrypted": lambda r: _pem(r, "ENCRYPTED PRIVATE KEY"),
    "pem_json": lambda r: _pem(r, "PRIVATE KEY", joiner="\\n") + "\\n",
    "pem_pgp": lambda r: _pem(r, "PGP PRIVATE KEY BLOCK"),
    "password": _password,
    # An unencoded "@" inside a URL's password: everything up to the last "@" is the password.
    "password_at": lambda r: _password(r) + "@" + _password(r),
    "putty_ed25519": lambda r: _putty(r, 3, "ssh-ed25519", 1, 1),
    "putty_rsa": lambda r: _putty(r, 2, "ssh-rsa", 6, 14),
    "hex32": lambda r: _s(r, "0123456789abcdef", 32),
    "hex40": lambda r: _s(r, "0123456789abcdef", 40),
    "django": lambda r: "django-insecure-" + _s(r, _ALNUM + "!@#%^&*(-_=+)", 50),
}


@dataclass(frozen=True)
class Case:
    kind: str
    template: str
    text: str
    secrets: tuple[str, ...]  # the generated values; none may survive

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.template[:60]}"


def _fragments(secret: str) -> list[str]:
    """What must not survive of one secret: the whole value, for a key block each line of
    its body (a partial cut would still leak key material), and for a password with an "@"
    each piece around it (a cut at the first "@" left the tail)."""
    lines = secret.replace("\\n", "\n").splitlines()
    if "PRIVATE KEY" in secret:
        return [ln for ln in lines[1:-1] if len(ln) >= 16]
    if secret.startswith("PuTTY"):
        return [ln for ln in lines[1:] if len(ln) >= 16]
    return [secret, *(piece for piece in secret.split("@") if len(piece) >= 8)]


def fill(template: str, rng: random.Random) -> Case:
    text = template.replace("\\n", "\n")
    secrets: list[str] = []
    while "<<" in text:
        start = text.index("<<")
        end = text.index(">>", start)
        value = GENERATORS[text[start + 2 : end]](rng)
        secrets.append(value)
        text = text[:start] + value + text[end + 2 :]
    return Case("", template, text, tuple(secrets))


def load_corpus(seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for line in (DATA / "secrets.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, template = line.split("\t", 1)
        case = fill(template, rng)
        cases.append(Case(kind, template, case.text, case.secrets))
    return cases


def load_non_secrets() -> list[str]:
    lines = (DATA / "non_secrets.txt").read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith("#")]


CORPUS = load_corpus()
NON_SECRETS = load_non_secrets()


def _leaks(case: Case, text: str) -> list[str]:
    return [frag for s in case.secrets for frag in _fragments(s) if frag in text]


# ---------------------------------------------------------------- the corpus itself


def test_the_corpus_covers_every_credential_shape() -> None:
    used = {name for c in CORPUS for name in GENERATORS if f"<<{name}>>" in c.template}
    assert used == set(GENERATORS)
    kinds = {c.kind for c in CORPUS}
    assert kinds >= {
        "aws_access_key", "aws_secret_key", "openai_key", "anthropic_key", "github_token",
        "slack_token", "slack_webhook", "google_api_key", "stripe_key", "jwt", "private_key",
        "password_url", "password", "token",
    }  # fmt: skip
    assert len(CORPUS) >= 60 and len(NON_SECRETS) >= 30


def test_values_are_fresh_per_seed_and_stable_per_seed() -> None:
    again = load_corpus()
    other = load_corpus(SEED + 1)
    assert [c.text for c in again] == [c.text for c in CORPUS]
    assert all(a.secrets != b.secrets for a, b in zip(CORPUS, other, strict=True))


# ---------------------------------------------------------------- redaction


@pytest.mark.parametrize("case", CORPUS, ids=[c.label for c in CORPUS])
def test_each_secret_is_redacted(case: Case) -> None:
    redacted, count = redact_secrets(case.text)
    assert _leaks(case, redacted) == [], redacted
    assert count >= 1 and "[REDACTED:" in redacted


@pytest.mark.parametrize("seed", range(5))
def test_redaction_holds_for_other_random_values(seed: int) -> None:
    """The same templates with fresh values: the rules match shapes, not these strings."""
    missed = [c.label for c in load_corpus(seed) if _leaks(c, redact_secrets(c.text)[0])]
    assert missed == []


@pytest.mark.parametrize("text", NON_SECRETS)
def test_look_alikes_survive(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_redaction_rates(capsys: pytest.CaptureFixture[str]) -> None:
    """The figures the report quotes: secrets caught and look-alikes left alone."""
    caught = sum(1 for c in CORPUS if not _leaks(c, redact_secrets(c.text)[0]))
    false_positives = sum(1 for t in NON_SECRETS if redact_secrets(t)[1])
    with capsys.disabled():
        print(
            f"\nsecret corpus: {caught}/{len(CORPUS)} redacted; "
            f"look-alikes: {false_positives}/{len(NON_SECRETS)} altered"
        )
    assert caught == len(CORPUS) and false_positives == 0


# ---------------------------------------------------------------- end to end


def _ingest(cli: Cli, texts: list[str]) -> str:
    """Say ``texts`` as the user, a few to a turn (under the sanitizer's length cap, so nothing
    is cut off and every secret really goes through redaction), as things to keep; ingest
    them offline and return stderr."""
    groups: list[list[str]] = [[]]
    for text in texts:
        if sum(len(t) for t in groups[-1]) + len(text) > 1_200:
            groups.append([])
        groups[-1].append(text)
    rows = []
    for i, group in enumerate(groups):
        body = "\n".join(group)
        rows.append(
            {
                "role": "user",
                "content": f"Remember this for the deploy of service {i}:\n{body}",
                "timestamp": f"2026-03-02T{9 + i // 60:02d}:{i % 60:02d}:00Z",
                "id": f"s{i}",
                "session": "secrets",
                "name": "Dana",
            }
        )
    path = cli.root / "secrets.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = cli("ingest", str(path))
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr[-2000:]
    path.unlink()  # the input itself holds the secrets, of course
    return stderr


def _everything_stored(cli: Cli) -> tuple[str, str]:
    """Every byte under ``memory/`` and ``state/`` (fact and box files, the journal, the
    embedding cache, the LanceDB data, its full-text index), as text and lower-cased: the
    full-text index keeps its terms lower case."""
    files = [p for root in (cli.memory, cli.state) for p in root.rglob("*") if p.is_file()]
    text = b"\n".join(p.read_bytes() for p in files).decode("utf-8", "replace")
    return text, text.casefold()


_TERM = re.compile(r"[A-Za-z0-9]{12,}")


def _stored_leaks(fragments: list[str], text: str, folded: str) -> list[str]:
    """Fragments found whole, or as one of their long full-text terms in lower case."""
    return [
        frag
        for frag in fragments
        if frag in text or any(term.casefold() in folded for term in _TERM.findall(frag))
    ]


def test_no_secret_reaches_memory_or_state(cli: Cli) -> None:
    """Every corpus line said by the user, in a turn that is worth remembering."""
    stderr = _ingest(cli, [c.text for c in CORPUS])
    text, folded = _everything_stored(cli)
    assert "[REDACTED:" in text, "nothing of the corpus was stored: the check would be empty"
    leaked = [c.label for c in CORPUS if _stored_leaks(_case_fragments(c), text, folded)]
    assert leaked == []
    # Not in stderr either (bad-line reports quote input).
    assert not [c.label for c in CORPUS if _leaks(c, stderr)]


def _case_fragments(case: Case) -> list[str]:
    return [frag for s in case.secrets for frag in _fragments(s)]


# ---------------------------------------------------------------- the generated corpus


@pytest.mark.parametrize("split", corpus.SPLITS)
def test_the_generated_corpus_is_large_and_varied(split: str) -> None:
    cases, alikes = corpus.secrets(split), corpus.look_alikes(split)
    assert len(cases) >= 300 and len(alikes) >= 300
    assert len({c.kind for c in cases}) >= 50
    assert {c.family for c in cases} == {"credential", "personal"}
    assert len({a.kind for a in alikes}) >= 20
    # The splits share no sentence: the held-out one is worded apart.
    other = corpus.SPLITS[1 - corpus.SPLITS.index(split)]
    assert not {c.text for c in cases} & {c.text for c in corpus.secrets(other)}


@pytest.mark.parametrize("split", corpus.SPLITS)
def test_the_generated_corpus_is_redacted(split: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The goal on both splits: >= 99% of secrets gone, <= 1% of look-alikes touched."""
    cases, alikes = corpus.secrets(split), corpus.look_alikes(split)
    missed = [c for c in cases if corpus.leaks(c, redact_secrets(c.text)[0])]
    altered = [a for a in alikes if redact_secrets(a.text)[0] != a.text]
    with capsys.disabled():
        print(
            f"\n{split}: {len(cases) - len(missed)}/{len(cases)} secrets redacted; "
            f"{len(altered)}/{len(alikes)} look-alikes altered"
        )
    assert len(missed) <= len(cases) // 100, [(c.kind, c.text[:80]) for c in missed]
    assert len(altered) <= len(alikes) // 100, [(a.kind, a.text[:80]) for a in altered]


def test_personal_data_can_be_kept() -> None:
    personal = [c for c in corpus.secrets("tune") if c.family == "personal"]
    kept = [c for c in personal if not corpus.leaks(c, redact_secrets(c.text, personal=False)[0])]
    assert personal and kept == []


def test_no_secret_of_the_generated_corpus_reaches_memory_or_state(cli: Cli) -> None:
    """A whole split (400 secrets, every kind) said by the user and ingested offline; then
    every file under ``memory/`` and ``state/`` is searched for every secret, binary LanceDB
    files included. One split: the local model embeds every random token piece by piece,
    and both would take a minute on a small machine."""
    cases = corpus.secrets("held_out")
    stderr = _ingest(cli, [c.text for c in cases])
    text, folded = _everything_stored(cli)
    assert text.count("[REDACTED:") >= len(cases) // 2, "too little was stored to check"
    leaked = [
        (c.kind, c.text[:80])
        for c in cases
        if _stored_leaks([f for v in c.values for f in _searchable(v)], text, folded)
    ]
    assert leaked == []
    assert not [c.kind for c in cases if corpus.leaks(c, stderr)]


def _searchable(value: str) -> list[str]:
    """What a search of the stored bytes can tell apart from chance: a four-digit PIN turns
    up somewhere in megabytes of vectors and ids whether it leaked or not (the redaction
    test above checks the short ones)."""
    return [f for f in corpus.fragments(value) if not (f.isdigit() and len(f) < 8)]


def test_passes_skipped_for_a_missing_word_would_have_changed_nothing() -> None:
    """redact_credentials skips a pass when the text lacks a word the pass needs: on every
    text of both corpora, and on each with its case changed, that gives what running every
    pass gives."""
    from engram_md.ingest import credentials

    def every_pass(text: str) -> tuple[str, int]:
        total = 0
        for pattern, decide in credentials._PASSES:
            text, n = credentials._substitute(pattern, text, decide)
            total += n
        return text, total

    texts = [c.text for c in CORPUS] + NON_SECRETS
    for split in corpus.SPLITS:
        texts += [c.text for c in corpus.secrets(split)]
        texts += [c.text for c in corpus.look_alikes(split)]
    texts += [t.upper() for t in texts] + [t.swapcase() for t in texts]
    skipped = 0
    for text in texts:
        assert credentials.redact_credentials(text) == every_pass(text), text
        skipped += any(n.search(text) is None for n in credentials._NEEDS.values())
    assert skipped > len(texts) // 4  # the gate does skip work on these texts
