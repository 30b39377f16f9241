"""Clean a turn before anything reaches an LLM or the disk.

Three jobs, in this order:

1. strip ``<memory>`` blocks: they are our own recall output pasted into a prompt; reading them
   back as conversation would store memories of memories (a feedback loop);
2. redact secrets (API keys, tokens, passwords, private keys) as ``[REDACTED:<kind>]``, because
   fact files are committed to git and an extraction prompt goes to a third party;
3. cap the length, cut at a word boundary.

Terminal escape sequences and control characters go first: pasted shell output carries
them, and neither an LLM prompt nor a markdown file should.

Redaction comes before the cap so that a cut never splits a secret into a piece that no
longer looks like one. The patterns aim at the shapes real credentials have (fixed
prefixes, lengths, a digit somewhere) so that ordinary prose ("the password field",
"tokens of appreciation", "sky-high") passes untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import regex

from ..core.config import SanitizeConfig
from ..core.models import Turn

_FLAGS = regex.VERSION1

# ---- memory blocks --------------------------------------------------------------------------

# An unterminated block runs to the end of the text: whatever follows an opening tag that was
# never closed is recall output too, as far as we can tell. The blanks before a block go with
# it, so "a <memory>…</memory> b" becomes "a b".
_MEMORY_BLOCK = regex.compile(
    r"[ \t]*<memory(?:\s[^<>]*)?>.*?(?:</memory\s*>|\Z)",
    _FLAGS | regex.IGNORECASE | regex.DOTALL,
)
_STRAY_MEMORY_CLOSE = regex.compile(r"[ \t]*</memory\s*>", _FLAGS | regex.IGNORECASE)
_ANY_MEMORY_TAG = regex.compile(r"</?memory", _FLAGS | regex.IGNORECASE)
_MAX_STRIP_ROUNDS = 8
_BLANK_RUN = regex.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")

# ---- text hygiene ---------------------------------------------------------------------------

# Terminal colour and cursor sequences (pasted shell output), then the remaining C0 controls
# except tab and newline: nothing an LLM or a markdown file should see.
_ANSI = regex.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = regex.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# ---- secrets --------------------------------------------------------------------------------


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# Characters that may surround a token; a token must not be glued to more of them, which
# keeps "ask-me-anything" and "sky-high" clear of the "sk-" rule.
_EDGE_BEFORE = r"(?<![A-Za-z0-9_\-])"
_EDGE_AFTER = r"(?![A-Za-z0-9_\-])"

# Each rule: kind, pattern. The whole match is replaced, unless the pattern has a group
# named "secret", in which case only that group is (the key name or user name stays readable).
_RULES: list[tuple[str, regex.Pattern[str]]] = [
    # PEM private keys, multi-line; a truncated block still hides everything after BEGIN.
    (
        "private_key",
        regex.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r".*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
            _FLAGS | regex.DOTALL,
        ),
    ),
    # PuTTY key files (.ppk), versions 2 and 3: from the header line, which names the key
    # type (prose about the format does not), through the Private-MAC line.
    (
        "private_key",
        regex.compile(
            r"PuTTY-User-Key-File-\d+:[ \t]*[\w.@\-]+[ \t]*\r?\n"
            r".*?(?:Private-MAC:[ \t]*[0-9A-Fa-f]*|\Z)",
            _FLAGS | regex.DOTALL,
        ),
    ),
    (
        "slack_webhook",
        regex.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+", _FLAGS
        ),
    ),
    # scheme://user:password@host: the user name is kept, it is often what the fact is about.
    # The password runs to the last "@" before the host, as clients split it: one typed with
    # an unencoded "@" in it ("pa@ss9Word") must not leave its tail behind.
    (
        "password",
        regex.compile(
            r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@\[\]]*:"
            r"(?!\[REDACTED|(?:password|passwd|pass|pwd|secret)@|[<${]|%[A-Za-z_]\w*%)(?P<secret>[^\s/]+)@",
            _FLAGS,
        ),
    ),
    ("anthropic_key", regex.compile(_EDGE_BEFORE + r"sk-ant-[A-Za-z0-9_\-]{20,}", _FLAGS)),
    # Legacy (sk-…), project (sk-proj-…) and service-account keys. The digit look-ahead keeps
    # hyphenated words ("sk-learn-style-pipelines-and-more") out.
    (
        "openai_key",
        regex.compile(
            _EDGE_BEFORE + r"sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}" + _EDGE_AFTER,
            _FLAGS,
        ),
    ),
    (
        "github_token",
        regex.compile(
            _EDGE_BEFORE
            + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"
            + _EDGE_AFTER,
            _FLAGS,
        ),
    ),
    # Bot, user, app-level (xapp-1-…) and configuration tokens.
    (
        "slack_token",
        regex.compile(
            _EDGE_BEFORE
            + r"(?:xox[abprse]-(?=[A-Za-z0-9\-]*[0-9])|xapp-[0-9]+-)[A-Za-z0-9\-]{10,}"
            + _EDGE_AFTER,
            _FLAGS,
        ),
    ),
    (
        "google_api_key",
        regex.compile(_EDGE_BEFORE + r"AIza[0-9A-Za-z_\-]{35}" + _EDGE_AFTER, _FLAGS),
    ),
    (
        "stripe_key",
        regex.compile(
            _EDGE_BEFORE + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _EDGE_AFTER, _FLAGS
        ),
    ),
    ("aws_access_key", regex.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", _FLAGS)),
    (
        "aws_secret_key",
        regex.compile(
            r"(?i)\baws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            _FLAGS,
        ),
    ),
    # A JWT: base64url JSON header and payload (both start "eyJ"), then a signature that is
    # empty for unsigned tokens.
    (
        "jwt",
        regex.compile(
            _EDGE_BEFORE + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
            _FLAGS,
        ),
    ),
    # The credential of an Authorization header, whatever its scheme.
    (
        "bearer_token",
        regex.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:bearer|basic|token|digest)\s+(?!\[REDACTED)(?P<secret>[A-Za-z0-9\-._~+/]+=*)",
            _FLAGS,
        ),
    ),
    # A bearer token outside a header (curl arguments, logs): long and with a digit.
    (
        "bearer_token",
        regex.compile(
            r"\bBearer\s+(?!\[REDACTED)"
            r"(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)",
            _FLAGS,
        ),
    ),
]

# key = value / key: value. Keys that are also ordinary words ("secret", "token") only count
# with "=" or a credential-looking value; see _assignment(). Plural keys ("max_tokens",
# "cache_read_input_tokens") are counts, not credentials. The pattern starts at the key
# word; its prefix (DB_PASSWORD, client_secret) is read by _key_of(), which keeps the scan
# linear on long runs of word characters.
_ASSIGNMENT = regex.compile(
    r"(?P<word>passwords?|passwd|passphrase|pwd|pass|api[_\-]?key|access[_\-]?key|"
    r"secret[_\-]?key|private[_\-]?key|secret|token|credentials?)"
    r"[\"']?[ \t]*(?P<sep>:=|=>|=(?!=)|:)[ \t]*"
    r"(?P<quote>[\"'`])?(?!\[REDACTED)(?P<secret>(?(quote)[^\"'`\n]+|[^\s\"'`]+))",
    _FLAGS | regex.IGNORECASE,
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# "my password is hunter2", "the wifi passcode was '1234'".
_PASSWORD_PHRASE = regex.compile(
    r"""
    \b(?P<owner>my|our|your|his|her|their|the|a|this|that)?[ \t]*
    (?:[A-Za-z0-9\-]{1,30}[ \t]+)?                                # "wifi", "root"
    (?P<word>password|passwd|passphrase|passcode|pin|pwd)
    (?:[ \t]+(?:for|to|on|of)[ \t]+(?:(?:the|my|our)[ \t]+)?[A-Za-z0-9.\-]{1,40})?  # "for the NAS"
    [ \t]+(?:is[ \t]+now|has[ \t]+been[ \t]+changed[ \t]+to|will[ \t]+be|is|was)
    (?:[ \t]*:)?[ \t]+
    (?P<quote>["'`])?(?!\[REDACTED)(?P<secret>(?(quote)[^"'`\n]+|[^\s"'`]+))
    """,
    _FLAGS | regex.IGNORECASE | regex.VERBOSE,
)
# Words that follow "password is" in prose about passwords rather than in a disclosure.
_NOT_A_PASSWORD = frozenset(
    """
    a an the not no never too very so also still now just only always already set reset
    unset stored saved kept hidden shown visible encrypted hashed salted required optional
    mandatory missing empty blank wrong right incorrect correct invalid valid expired
    expiring changed rotated weak strong secure insecure long short same different unknown
    known new old fine ok okay good bad easy hard simple complex random generated managed
    needed used locked shared sent written case case-sensitive there here in on at for from
    with by to of what that this which where how why who it its mine yours ours theirs
    being been null none redacted is are be must should can cannot will would may might
    """.split()
)
# Values that name a secret rather than hold one: "<your key>", "${DB_PASSWORD}", "****".
# A leading "%" only counts in the Windows form "%NAME%": random passwords start with "%" too.
_PLACEHOLDER = regex.compile(r"[<${].*|%[A-Za-z_]\w*%|\*+|x{3,}|\.{3}|…", _FLAGS | regex.IGNORECASE)
# Unquoted values that are code: a dotted name ("settings.token") or a call ("getpass(").
_CODE_VALUE = regex.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:[(\[].*)?|[A-Za-z_]\w*[(\[].*", _FLAGS
)
_TYPE_NAMES = frozenset(
    "str string int bool boolean float bytes number any dict list optional secretstr".split()
)
_TRAILING_PUNCT = ".,;:!?)]}>"
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "passcode", "pin"})


def _looks_like_credential(value: str) -> bool:
    """A value with a digit or a symbol, and not just a short number: prose rarely has one."""
    if len(value) < 6:
        return False
    return any(ch.isdigit() for ch in value) or any(not ch.isalnum() for ch in value)


def _is_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is not None


def _kind_of(word: str) -> str:
    word = word.casefold().replace("-", "_")
    if word.rstrip("s") in _PASSWORD_WORDS or word == "pass":
        return "password"
    if "key" in word:
        return "api_key"
    if word.startswith("token"):
        return "token"
    return "secret"


def _value_end(m: regex.Match[str]) -> int:
    """End of the secret group, with sentence punctuation after an unquoted value left out."""
    end = m.end("secret")
    if not m.group("quote"):
        value = m.group("secret")
        end -= len(value) - len(value.rstrip(_TRAILING_PUNCT))
    return end


def _key_of(m: regex.Match[str]) -> str:
    """The whole key name of an assignment hit: the key word plus its prefix, if any."""
    start = m.start()
    floor = max(0, start - 40)
    while start > floor and m.string[start - 1] in _KEY_CHARS:
        start -= 1
    return m.string[start : m.end("word")]


def _assignment(m: regex.Match[str]) -> str | None:
    """Replacement for a ``key = value`` hit, or None to leave it alone."""
    value = m.group("secret")[: _value_end(m) - m.start("secret")]
    if not value:
        return None
    word = m.group("word").casefold()
    is_password = word.rstrip("s") in _PASSWORD_WORDS
    key = _key_of(m)
    if word == "pass":
        # DB_PASS, db_pass, pass: a password key; "bypass", "compass", "surpass" are not.
        # A bare "pass" is also a verb, so it needs the evidence any other key word needs.
        if m.start() > 0 and m.string[m.start() - 1].isalpha():
            return None
        if key.casefold() == "pass" and m.group("sep") == ":" and not m.group("quote"):
            if not _looks_like_credential(value):
                return None
    explicit = (
        m.group("sep") != ":"
        or bool(m.group("quote"))
        or is_password
        or "_" in key
        or key.isupper()
    )
    # "The secret: practice daily." / "tokens: 1200" are prose and numbers, not credentials.
    if not explicit and not _looks_like_credential(value):
        return None
    if value.isdigit() and not is_password and len(value) < 12:
        return None  # "max_tokens=1200", "token_count: 15"
    if value.casefold() in _NOT_A_PASSWORD or _is_placeholder(value):
        return None
    # Pasted code: "api_key: str | None", "token = m.group(1)", "api_key=api_key or ...".
    if not m.group("quote") and (
        value.casefold() in _TYPE_NAMES
        or value.casefold() == key.casefold()
        or _CODE_VALUE.fullmatch(value)
    ):
        return None
    return _marker(_kind_of(word))


def _phrase(m: regex.Match[str]) -> str | None:
    value = m.group("secret")[: _value_end(m) - m.start("secret")]
    if not value or value.casefold() in _NOT_A_PASSWORD or _is_placeholder(value):
        return None
    if m.group("word").casefold() == "pwd" and value.startswith(("/", "~")):
        return None  # "the pwd is /srv/app": the shell's working directory
    owner = (m.group("owner") or "").casefold()
    # "my password is swordfish" discloses one; "the password is managed by IT" does not.
    if m.group("quote") or owner in {"my", "our", "your", "his", "her", "their"}:
        return _marker("password")
    if _looks_like_credential(value) or (m.group("word").casefold() == "pin" and value.isdigit()):
        return _marker("password")
    return None


def _always(marker: str) -> Callable[[regex.Match[str]], str | None]:
    return lambda _m: marker


def _substitute(
    pattern: regex.Pattern[str], text: str, decide: Callable[[regex.Match[str]], str | None]
) -> tuple[str, int]:
    """Replace the "secret" group (or the whole match) where ``decide`` returns a marker."""
    count = 0

    def repl(m: regex.Match[str]) -> str:
        nonlocal count
        marker = decide(m)
        if marker is None:
            return m.group()
        count += 1
        if "secret" not in pattern.groupindex:
            return marker
        start = m.start("secret") - m.start()
        end = (_value_end(m) if "quote" in pattern.groupindex else m.end("secret")) - m.start()
        whole = m.group()
        return whole[:start] + marker + whole[end:]

    return pattern.sub(repl, text), count


def strip_memory_blocks(text: str) -> str:
    """Remove ``<memory>…</memory>`` blocks (any case, multi-line, unterminated to the end)."""
    if "<" not in text:
        return text
    stripped = text
    # Removing a block can join the pieces around it into a new tag ("<mem<memory>…</memory>
    # ory>"), so strip until nothing changes; past a few rounds the text is built to evade,
    # and everything from its first remaining tag on is dropped like an unterminated block.
    for _ in range(_MAX_STRIP_ROUNDS):
        again = _MEMORY_BLOCK.sub("", stripped)
        if again == stripped:
            # Stray closing tags go last: removed earlier, one could be the end of a block
            # that a later round assembles.
            again = _STRAY_MEMORY_CLOSE.sub("", stripped)
            if again == stripped:
                break
        stripped = again
    else:
        tag = _ANY_MEMORY_TAG.search(stripped)
        if tag is not None:
            stripped = stripped[: tag.start()]
    if stripped == text:
        return text
    return _BLANK_RUN.sub("\n\n", stripped).strip()


# A credential passed as a separate command-line argument: "--password hunter2",
# "docker login --password s3cr3t". The "=" form is an assignment (above). A following flag
# ("--password --verbose") or a flag of its own ("--password-stdin") is not a value.
_FLAG = regex.compile(
    r"(?<![\w-])--(?:[a-z0-9]+-)*(?P<word>password|passwd|token|secret|api-key|access-key)"
    r"[ \t]+(?P<quote>[\"'])?(?!\[REDACTED|-)(?P<secret>(?(quote)[^\"'\n]+|[^\s\"'`]+))",
    _FLAGS | regex.IGNORECASE,
)
# A credential as the text of an XML element: "<password>…</password>", "<db:token>…".
_XML_ELEMENT = regex.compile(
    r"<(?P<tag>(?:[A-Za-z][\w.:\-]{0,40}?)?(?i:password|passwd|pwd|secret|token|api[_\-]?key|"
    r"access[_\-]?key|private[_\-]?key|credentials?))>"
    r"(?P<secret>[^<>\n]{1,500})</(?P=tag)>",
    _FLAGS,
)


def _flag(m: regex.Match[str]) -> str | None:
    value = m.group("secret")[: _value_end(m) - m.start("secret")]
    if not value or _is_placeholder(value) or value.casefold() in _NOT_A_PASSWORD:
        return None
    return _marker(_kind_of(m.group("word")))


def _element(m: regex.Match[str]) -> str | None:
    value = m.group("secret").strip()
    if not value or _is_placeholder(value) or value.casefold() in _NOT_A_PASSWORD:
        return None
    return _marker(_kind_of(m.group("tag").rsplit(":", 1)[-1]))


def redact_secrets(text: str) -> tuple[str, int]:
    """Replace secrets with ``[REDACTED:<kind>]``; return the new text and how many were hit."""
    total = 0
    for kind, pattern in _RULES:
        text, n = _substitute(pattern, text, _always(_marker(kind)))
        total += n
    for pattern, decide in ((_FLAG, _flag), (_XML_ELEMENT, _element)):
        text, n = _substitute(pattern, text, decide)
        total += n
    text, n = _substitute(_ASSIGNMENT, text, _assignment)
    total += n
    text, n = _substitute(_PASSWORD_PHRASE, text, _phrase)
    return text, total + n


def _clean_controls(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ANSI.sub("", text))


def _cap(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary when one is near, then "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    # Only back up to a space in the last fifth: one very long word is cut where it stands.
    if space >= limit * 4 // 5:
        cut = cut[:space]
    return cut.rstrip() + "…"


def sanitize_turn(turn: Turn, cfg: SanitizeConfig) -> Turn | None:
    """The turn as it may be stored and sent on, or None if nothing meaningful is left."""
    # Whatever lies far past the cap is dropped anyway; cutting it first bounds the regex work
    # on a multi-megabyte paste. The margin keeps secrets around the cap whole and is far
    # larger than a recalled <memory> block.
    text = _clean_controls(turn.content[: 2 * cfg.max_turn_chars + 16384])
    text = strip_memory_blocks(text)
    if cfg.redact_secrets:
        text, _ = redact_secrets(text)
    text = _cap(text.strip(), cfg.max_turn_chars)
    if not text.strip():
        return None
    if text == turn.content:
        return turn
    return replace(turn, content=text)
