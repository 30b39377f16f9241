"""Credentials in text: API keys, tokens, passwords, private keys, as people paste and say them.

Three kinds of evidence, strongest first:

1. **a provider's shape**: a fixed prefix and the length and alphabet of the rest (``ghp_``,
   ``xoxb-``, ``npm_``, ``AKIA``, ``sk-ant-``, 40 kinds), key blocks (PEM, PuTTY), a JWT, a
   password inside a URL. These hold wherever they stand;
2. **a key word and a value**: ``password=…``, ``DB_PASS: …``, ``--token …``,
   ``<secret>…</secret>``, "the API key for staging is …", "secret …". A value with no shape
   of its own counts only when it looks random (see :func:`_random_looking`), or, after a
   password word, when it is not prose ("the password is wrong" stays);
3. **a password phrase**: "my password is …", "I changed the root password to …", "use … as
   the password", "the door code is …".

The patterns aim at the shapes real credentials have, so that ordinary prose ("the password
field", "tokens of appreciation", "sky-high") and look-alikes (commit hashes, UUIDs, paths,
public keys, images) pass untouched; ``make bench`` measures both on a corpus
(``bench/secrets_bench.py``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import regex

_FLAGS = regex.VERSION1


def marker(kind: str) -> str:
    """What a redacted value becomes."""
    return f"[REDACTED:{kind}]"


# Characters that may surround a token; a token must not be glued to more of them, which
# keeps "ask-me-anything" and "sky-high" clear of the "sk-" rule.
_EDGE_BEFORE = r"(?<![A-Za-z0-9_\-])"
_EDGE_AFTER = r"(?![A-Za-z0-9_\-])"

# Provider tokens: (kind, pattern), each from the provider's documented or issued format.
_TOKENS: tuple[tuple[str, str], ...] = (
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    # Legacy (sk-…), project (sk-proj-…) and service-account keys. The digit look-ahead keeps
    # hyphenated words ("sk-learn-style-pipelines-and-more") out.
    ("openai_key", r"sk-(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab_token", r"gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat)-[A-Za-z0-9_\-]{20,}"),
    # Bot, user, app-level (xapp-1-…) and configuration tokens.
    (
        "slack_token",
        r"(?:xox[abprse]-(?=[A-Za-z0-9\-]*[0-9])|xapp-[0-9]+-)[A-Za-z0-9\-]{10,}",
    ),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,}"),
    ("aws_access_key", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{40,}"),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("twilio_key", r"SK[0-9a-fA-F]{32}"),
    ("mailgun_key", r"key-[0-9a-f]{32}"),
    ("mailchimp_key", r"[0-9a-f]{32}-us[0-9]{1,2}"),
    ("shopify_token", r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}"),
    ("digitalocean_token", r"do[por]_v1_[0-9a-f]{64}"),
    ("huggingface_token", r"hf_[A-Za-z]{34}"),
    ("telegram_token", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}"),
    ("discord_token", r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("databricks_token", r"dapi[0-9a-f]{32}(?:-[0-9])?"),
    ("postman_key", r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}"),
    ("doppler_token", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"ntn_[A-Za-z0-9]{46}|secret_[A-Za-z0-9]{43}"),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_\-=]{150,}"),
    ("sentry_token", r"sntry[su]_[A-Za-z0-9_\-=+/]{40,}"),
    ("grafana_token", r"gl(?:sa|c)_[A-Za-z0-9_\-+/=]{32,}"),
    ("newrelic_key", r"NR(?:AK|AA|II|JS)-[A-Z0-9]{27}"),
    ("age_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("groq_key", r"gsk_[A-Za-z0-9]{52}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    ("square_token", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}|EAAA[A-Za-z0-9_\-+=]{60,}"),
    ("heroku_key", r"HRKU-AA[0-9A-Za-z_\-]{58}"),
    # A JWT: base64url JSON header and payload (both start "eyJ"), then a signature that is
    # empty for unsigned tokens.
    ("jwt", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"),
)
_TOKEN = regex.compile(
    _EDGE_BEFORE
    + "(?:"
    + "|".join(f"(?P<t{i}>{pattern})" for i, (_, pattern) in enumerate(_TOKENS))
    + ")"
    + _EDGE_AFTER,
    _FLAGS,
)

# Each rule: kind, pattern. The whole match is replaced, unless the pattern has a group
# named "secret", in which case only that group is (the key name or user name stays readable).
_SHAPES: list[tuple[str, regex.Pattern[str]]] = [
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
            r"(?!\\?\[REDACTED|(?:password|passwd|pass|pwd|secret)@|[<${]|%[A-Za-z_]\w*%)(?P<secret>[^\s/]+)@",
            _FLAGS,
        ),
    ),
    (
        "aws_secret_key",
        regex.compile(
            r"(?i)\baws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            _FLAGS,
        ),
    ),
    # The credential of an Authorization header, whatever its scheme.
    (
        "bearer_token",
        regex.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:bearer|basic|token|digest)\s+(?!\\?\[REDACTED)(?P<secret>[A-Za-z0-9\-._~+/]+=*)",
            _FLAGS,
        ),
    ),
    # A bearer token outside a header (curl arguments, logs): long and with a digit.
    (
        "bearer_token",
        regex.compile(
            r"\bBearer\s+(?!\\?\[REDACTED)"
            r"(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)",
            _FLAGS,
        ),
    ),
    # A MySQL password glued to its flag: "-p'secret'" anywhere, "-psecret" after mysql.
    (
        "password",
        regex.compile(r"(?<![\w-])-p(?P<quote>['\"])(?P<secret>[^'\"\n]+)(?P=quote)", _FLAGS),
    ),
    (
        "password",
        regex.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?[ \t]"
            r"-p(?P<secret>[^\s'\"-][^\s'\"]*)",
            _FLAGS,
        ),
    ),
]

# ---- key words and values -------------------------------------------------------------------

# Not a marker already there, also as markdown escapes it in a box's member list ("\[…\]").
_UNREDACTED = r"(?!\\?\[REDACTED)"
# A value: in quotes (spaces and all), or up to the next blank or quote.
_VALUE = r"(?P<quote>[\"'`])?" + _UNREDACTED + r"(?P<secret>(?(quote)[^\"'`\n]+|[^\s\"'`]+))"

# key = value / key: value. Keys that are also ordinary words ("secret", "token") only count
# with "=" or a credential-looking value; see _assignment(). Plural keys ("max_tokens",
# "cache_read_input_tokens") are counts, not credentials. The pattern starts at the key
# word; its prefix (DB_PASSWORD, client_secret) is read by _key_of(), which keeps the scan
# linear on long runs of word characters.
_ASSIGNMENT = regex.compile(
    r"(?P<word>passwords?|passwd|passphrase|pwd|pass|pw|api[_\-]?key|access[_\-]?key|"
    r"secret[_\-]?key|private[_\-]?key|secret|token|credentials?|key)"
    r"[\"']?[ \t]*(?P<sep>:=|=>|=(?!=)|:)[ \t]*" + _VALUE,
    _FLAGS | regex.IGNORECASE,
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_OWNERS = r"(?:my|our|your|his|her|their|the|a|this|that|new)"
# The words naming a password, and the codes that open doors and networks.
_PASSWORD_NOUN = (
    r"(?P<word>password|passwd|passphrase|passcode|pin|pwd|"
    r"(?:wifi|wi-fi|door|gate|alarm|garage|safe|lock|entry|keypad|building)[ \t]+code)"
)
# "my password is hunter2", "the wifi passcode was '1234'", "Password for the NAS -> x".
_PASSWORD_PHRASE = regex.compile(
    r"\b(?P<owner>" + _OWNERS + r")?[ \t]*"
    r"(?:[A-Za-z0-9\-]{1,30}[ \t]+){0,2}?"  # "wifi", "root", "guest wifi"
    + _PASSWORD_NOUN
    # "for the NAS", "for the staging box"
    + r"(?:[ \t]+(?:for|to|on|of)[ \t]+(?:(?:the|my|our)[ \t]+)?[A-Za-z0-9.\-]{1,40}"
    r"(?:[ \t]+[A-Za-z0-9.\-]{1,40})?)?"
    r"(?:[ \t]+(?:is[ \t]+now|has[ \t]+been[ \t]+changed[ \t]+to|will[ \t]+be|is|was)"
    r"(?:[ \t]*:)?|[ \t]*(?:->|=>|—))[ \t]+" + _VALUE,
    _FLAGS | regex.IGNORECASE,
)
# "I changed the root password to hunter2", "set the db password to …".
_PASSWORD_CHANGE = regex.compile(
    r"\b(?:set|change|changed|changing|reset|update|updated|rotate|rotated)[ \t]+"
    r"(?:"
    + _OWNERS
    + r"[ \t]+)?(?:[A-Za-z0-9\-]{1,30}[ \t]+){0,2}?"
    + _PASSWORD_NOUN
    + r"[ \t]+to[ \t]+"
    + _VALUE,
    _FLAGS | regex.IGNORECASE,
)
# "use hunter2 as the password (for staging)".
_PASSWORD_USE = regex.compile(
    r"\buse[ \t]+" + _VALUE + r"(?(quote)[\"'`])[ \t]+as[ \t]+(?:(?:the|my|a|your|our)[ \t]+)?"
    r"(?:[A-Za-z0-9\-]{1,30}[ \t]+)?(?P<word>password|passwd|passphrase|passcode|pin|pwd)\b",
    _FLAGS | regex.IGNORECASE,
)
# A password word right before its value: "login dana / password Tr0ub4dor", "pass x9!…".
_PASSWORD_BARE = regex.compile(
    r"\b(?P<word>password|passwd|passphrase|pass|pwd|pw)[ \t]+" + _VALUE,
    _FLAGS | regex.IGNORECASE,
)
# A user name given just before a password word: "login dana / password …", "user bob, pass …".
_USER_BEFORE = regex.compile(
    r"\b(?:login|user(?:name)?|account)\b[ \t:]+\S+[ \t]*[/,;|]?[ \t]*$", _FLAGS | regex.IGNORECASE
)
_PAIR_REACH = 60
# "creds for staging: dana:hunter2", "login: root:toor".
_USER_AND_PASSWORD = regex.compile(
    r"\b(?:creds|credentials|login|logins)\b[^\n:]{0,40}:[ \t]*"
    r"[A-Za-z][\w.@+\-]{0,63}:(?!\\?\[REDACTED|//)"
    r"(?P<secret>[^\s\"'`@/]*[^\s\"'`@/.,;:!?)\]}>])",
    _FLAGS | regex.IGNORECASE,
)
# A key word, then (after "for <what>", "is", ":", "=", "->" or nothing) a value: "the API key
# for staging is …", "secret …", "client secret -> …". The words are ordinary English ("the
# key to success is patience"), so the value must look random (_random_looking).
_KEYWORD_VALUE = regex.compile(
    r"\b(?P<word>(?:(?:api|access|secret|private|client|app|auth|bot|deploy|master|signing|"
    r"encryption|account|storage|service|session|refresh|id|admin|key|token)[ \t_\-]?){0,2}"
    r"(?:key|token|secret|creds|credentials))\b"
    r"(?:[ \t]+(?:for|of|to|on)[ \t]+(?:(?:the|my|our|your)[ \t]+)?[\w.\-]+(?:[ \t]+[\w.\-]+)?)?"
    r"(?:[ \t]*(?:(?:is|was)(?:[ \t]+now)?|will[ \t]+be|->|=>|—|:|=)[ \t]*|[ \t]+)" + _VALUE,
    _FLAGS | regex.IGNORECASE,
)
# A credential passed as a separate command-line argument: "--password hunter2",
# "docker login --password s3cr3t". The "=" form is an assignment (above). A following flag
# ("--password --verbose") or a flag of its own ("--password-stdin") is not a value.
_FLAG = regex.compile(
    r"(?<![\w-])--(?:[a-z0-9]+-)*(?P<word>password|passwd|token|secret|api-key|access-key)"
    r"[ \t]+(?P<quote>[\"'])?(?!\\?\[REDACTED|-)(?P<secret>(?(quote)[^\"'\n]+|[^\s\"'`]+))",
    _FLAGS | regex.IGNORECASE,
)
# A credential as the text of an XML element: "<password>…</password>", "<db:token>…".
_XML_ELEMENT = regex.compile(
    r"<(?P<tag>(?:[A-Za-z][\w.:\-]{0,40}?)?(?i:password|passwd|pwd|secret|token|api[_\-]?key|"
    r"access[_\-]?key|private[_\-]?key|credentials?))>"
    r"(?P<secret>[^<>\n]{1,500})</(?P=tag)>",
    _FLAGS,
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
    whatever somewhere anywhere nowhere everywhere elsewhere unchanged temporary secret
    private public personal unique default obvious my our your his her their please still
    probably usually """.split()
)
# Endings of English adjectives and adverbs: "the password is compromised / expiring /
# guessable / useless / mandatory" describes a password, it does not give one.
_PROSE_ENDING = regex.compile(
    r"(?:ed|ing|ly|able|ible|ful|less|ous|ive|al|ic|ary|ory|ent|ant|ish)$", _FLAGS
)
# Values that name a secret rather than hold one: "<your key>", "${DB_PASSWORD}", "****".
# A leading "%" only counts in the Windows form "%NAME%": random passwords start with "%" too.
_PLACEHOLDER = regex.compile(r"[<${].*|%[A-Za-z_]\w*%|\*+|x{3,}|\.{3}|…", _FLAGS | regex.IGNORECASE)
# Unquoted values that are code: a dotted name ("settings.token") or a call ("getpass(").
_CODE_VALUE = regex.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:[(\[].*)?|[A-Za-z_]\w*[(\[].*", _FLAGS
)
# A path or a file name: "/etc/…", "~/…", "C:\…", "dist/app.tar.gz", "sanitize.py:42"; its
# parts are names, where base64 (which has "/" too) has long runs of mixed case and digits.
_PATH = regex.compile(r"[/~.\\]|.*\\|.*(?:^|/)[\w\-]+\.[A-Za-z]{1,5}(?::\d+)?$", _FLAGS)
_PATH_SEPARATORS = regex.compile(r"[/\\]", _FLAGS)
_RANDOM_PART = regex.compile(r"(?=[^/\\]*[a-z])(?=[^/\\]*[A-Z])(?=[^/\\]*[0-9])[^/\\]{12,}", _FLAGS)
# Public key material is meant to be shared ("my public key is ssh-ed25519 AAAA…").
_PUBLIC_KEY = regex.compile(r"(?:ssh|ecdsa|sk-ssh|sk-ecdsa)-[\w@.\-]+", _FLAGS)
_TYPE_NAMES = frozenset(
    "str string int bool boolean float bytes number any dict list optional secretstr".split()
)
_TRAILING_PUNCT = ".,;:!?)]}>"
_MIN_VALUE = 3
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "passcode", "pin", "pw"})
_OWNER_WORDS = frozenset({"my", "our", "your", "his", "her", "their"})
# How random a value must look after a plain key word: at least this long, letters and
# digits mixed, and this many bits per character (hex of a random key has ~3.7, base64 ~5;
# English words and slugs stay under ~3).
_RANDOM_MIN_LENGTH = 16
_RANDOM_MIN_BITS = 3.0


def _looks_like_credential(value: str) -> bool:
    """A value with a digit or a symbol, and not just a short number: prose rarely has one."""
    if len(value) < 6:
        return False
    return any(ch.isdigit() for ch in value) or any(not ch.isalnum() for ch in value)


def _bits_per_char(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(value: str) -> bool:
    """A value that can only be a generated key: long, letters mixed with digits, high
    entropy, and not a path, a URL, a number or a public key."""
    if len(value) < _RANDOM_MIN_LENGTH or "://" in value or _is_path(value):
        return False
    if _PUBLIC_KEY.fullmatch(value):
        return False
    if not any(ch.isdigit() for ch in value) or not any(ch.isalpha() for ch in value):
        return False
    return _bits_per_char(value) >= _RANDOM_MIN_BITS


def _is_path(value: str) -> bool:
    if not _PATH.match(value):
        return False
    return not any(_RANDOM_PART.fullmatch(part) for part in _PATH_SEPARATORS.split(value))


def _mixed_case(value: str) -> bool:
    """A capital inside a word: "CorrectHorseBatteryStaple", "sunFlower"."""
    return any(a.islower() and b.isupper() for a, b in zip(value, value[1:], strict=False))


def _not_prose(value: str) -> bool:
    """After "password is": anything but a word that describes the password."""
    folded = value.casefold()
    if folded in _NOT_A_PASSWORD or _is_placeholder(value):
        return False
    parts = folded.split("-")
    if len(parts) > 1 and all(p.isalpha() for p in parts) and _PROSE_ENDING.search(parts[-1]):
        return False  # "Okta-managed", "auto-generated", "case-sensitive"
    if _looks_like_credential(value) or _mixed_case(value):
        return True
    return value.isalpha() and len(value) >= 4 and not _PROSE_ENDING.search(folded)


def _is_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is not None


def _is_code(value: str, key: str) -> bool:
    """Pasted code: "api_key: str | None", "token = m.group(1)", "api_key=api_key or …"."""
    folded = value.casefold()
    return folded in _TYPE_NAMES or folded == key.casefold() or bool(_CODE_VALUE.fullmatch(value))


def _kind_of(word: str) -> str:
    word = word.casefold().replace("-", "_")
    if word.rstrip("s") in _PASSWORD_WORDS or word == "pass" or word.endswith("code"):
        return "password"
    if "key" in word:
        return "api_key"
    if "token" in word:
        return "token"
    return "secret"


def _value(m: regex.Match[str]) -> str:
    return m.group("secret")[: _value_end(m) - m.start("secret")]


def _value_end(m: regex.Match[str]) -> int:
    """End of the secret group, with sentence punctuation after an unquoted value left out."""
    end = m.end("secret")
    # Only key/value patterns (those with a "quote" group) end at a delimiter of prose; a
    # shape (a URL's password) ends where its own syntax says.
    if "quote" in m.re.groupindex and not m.group("quote"):
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
    value = _value(m)
    if len(value) < _MIN_VALUE:
        return None  # "password": 1 counts something; no credential is that short
    word = m.group("word").casefold()
    is_password = word.rstrip("s") in _PASSWORD_WORDS
    key = _key_of(m)
    before = m.string[m.start() - 1] if m.start() > 0 else ""
    if word in ("pass", "pw", "key") and before.isalpha() and before.islower():
        return None  # "bypass", "compass", "hotkey", "monkey": other words
    if word == "key":
        # A bare "key: value" is prose or a mapping; a named key (STORAGE_KEY, AccountKey)
        # still needs a value that can only be a generated one.
        return marker("api_key") if _random_looking(value) else None
    if word == "pass" and key.casefold() == word and m.group("sep") == ":":
        # A bare "pass" is also a verb, so it needs the evidence any other key word needs.
        if not m.group("quote") and not (_looks_like_credential(value) or _mixed_case(value)):
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
    if not m.group("quote") and _is_code(value, key):
        return None
    return marker(_kind_of(word))


def _phrase(m: regex.Match[str]) -> str | None:
    value = _value(m)
    if not value or value.casefold() in _NOT_A_PASSWORD or _is_placeholder(value):
        return None
    word = m.group("word").casefold()
    if word == "pwd" and value.startswith(("/", "~")):
        return None  # "the pwd is /srv/app": the shell's working directory
    if ("code" in word or word == "pin") and value.isdigit():
        return marker("password")
    owner = (m.group("owner") or "").casefold() if "owner" in m.re.groupindex else ""
    # "my password is swordfish" discloses one; "the password is managed by IT" does not.
    if m.group("quote") or owner in _OWNER_WORDS or _not_prose(value):
        return marker("password")
    return None


def _bare_password(m: regex.Match[str]) -> str | None:
    """ "password Tr0ub4dor&3": with no "is" or ":" between, only a value that no word has
    ("password manager", "pass the salt" stay), unless a user name was just given ("login
    dana / password sunflower": a pair of credentials)."""
    value = _value(m)
    if _is_placeholder(value) or value.casefold() in _NOT_A_PASSWORD or _is_code(value, ""):
        return None
    if _looks_like_credential(value) or _mixed_case(value):
        return marker("password")
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    before = m.string[max(line_start, m.start() - _PAIR_REACH) : m.start()]
    if _USER_BEFORE.search(before) and _not_prose(value):
        return marker("password")
    return None


def _keyword_value(m: regex.Match[str]) -> str | None:
    value = _value(m)
    if _is_placeholder(value) or _is_code(value, m.group("word")):
        return None
    if _random_looking(value) or (bool(m.group("quote")) and _looks_like_credential(value)):
        return marker(_kind_of(m.group("word")))
    return None


def _flag(m: regex.Match[str]) -> str | None:
    value = _value(m)
    if not value or _is_placeholder(value) or value.casefold() in _NOT_A_PASSWORD:
        return None
    return marker(_kind_of(m.group("word")))


def _element(m: regex.Match[str]) -> str | None:
    value = m.group("secret").strip()
    if not value or _is_placeholder(value) or value.casefold() in _NOT_A_PASSWORD:
        return None
    return marker(_kind_of(m.group("tag").rsplit(":", 1)[-1]))


def _user_password(m: regex.Match[str]) -> str | None:
    value = _value(m)
    return None if not value or _is_placeholder(value) else marker("password")


def _token(m: regex.Match[str]) -> str:
    index = int(str(m.lastgroup)[1:])
    return marker(_TOKENS[index][0])


def _always(kind: str) -> Callable[[regex.Match[str]], str | None]:
    text = marker(kind)
    return lambda _m: text


def _substitute(
    pattern: regex.Pattern[str], text: str, decide: Callable[[regex.Match[str]], str | None]
) -> tuple[str, int]:
    """Replace the "secret" group (or the whole match) where ``decide`` returns a marker."""
    count = 0

    def repl(m: regex.Match[str]) -> str:
        nonlocal count
        replacement = decide(m)
        if replacement is None:
            return m.group()
        count += 1
        if "secret" not in pattern.groupindex:
            return replacement
        start = m.start("secret") - m.start()
        end = _value_end(m) - m.start()
        whole = m.group()
        return whole[:start] + replacement + whole[end:]

    return pattern.sub(repl, text), count


# The order: shapes first (they know where a value ends), then key words, then phrases, each
# skipping what an earlier one already redacted.
_PASSES: tuple[tuple[regex.Pattern[str], Callable[[regex.Match[str]], str | None]], ...] = (
    *((pattern, _always(kind)) for kind, pattern in _SHAPES),
    (_TOKEN, _token),
    (_FLAG, _flag),
    (_XML_ELEMENT, _element),
    (_USER_AND_PASSWORD, _user_password),
    (_ASSIGNMENT, _assignment),
    (_PASSWORD_PHRASE, _phrase),
    (_PASSWORD_CHANGE, _phrase),
    (_PASSWORD_USE, _phrase),
    (_PASSWORD_BARE, _bare_password),
    (_KEYWORD_VALUE, _keyword_value),
)


# Words without which a pass cannot match, looked for first: the two passes that try a
# match at every word (an owner, then up to two words, then the noun) cost three quarters
# of the redaction of ordinary prose (206 and 71 of 379 µs on a chat answer of ~600
# characters), while a search for the word they need is a few µs.
_NEEDS: dict[regex.Pattern[str], regex.Pattern[str]] = {
    _PASSWORD_PHRASE: regex.compile(r"pass|pin|pwd|code", _FLAGS | regex.IGNORECASE),
    _KEYWORD_VALUE: regex.compile(r"key|token|secret|cred", _FLAGS | regex.IGNORECASE),
}


def redact_credentials(text: str) -> tuple[str, int]:
    """Replace credentials with ``[REDACTED:<kind>]``; return the new text and how many."""
    total = 0
    for pattern, decide in _PASSES:
        needs = _NEEDS.get(pattern)
        if needs is not None and needs.search(text) is None:
            continue
        text, n = _substitute(pattern, text, decide)
        total += n
    return text, total
