"""Fake values of real shapes: provider tokens, passwords, card numbers, national ids, and the
look-alikes that share their alphabet (hashes, UUIDs, digests, public keys, images).

Every value is random from the caller's ``random.Random``; none is a real credential. Prefixes
are assembled from parts, so this file holds no string that a secret scanner would take for a
key. Numbers that carry a check digit (cards, SSNs, BSNs, SINs, IBANs, Aadhaar, DNI) are
computed here with their own algorithm, independently of the redaction code they test.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
HEX = "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"

Gen = Callable[[random.Random], str]


def chars(rng: random.Random, alphabet: str, n: int, *, digit: bool = True) -> str:
    """``n`` random characters; with ``digit``, at least one is a digit (real keys nearly
    always have one, and it rules out a value that happens to spell a word)."""
    body = [rng.choice(alphabet) for _ in range(n)]
    if digit and not any(c in DIGITS for c in body):
        body[rng.randrange(n)] = rng.choice(DIGITS)
    return "".join(body)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ---------------------------------------------------------------- provider tokens

# name -> (provider as people say it, its usual environment variable, generator)
TOKENS: dict[str, tuple[str, str, Gen]] = {
    "aws_access_key": (
        "AWS",
        "AWS_ACCESS_KEY_ID",
        lambda r: "AK" + "IA" + chars(r, UPPER + "234567", 16),
    ),
    "openai": ("OpenAI", "OPENAI_API_KEY", lambda r: "sk" + "-proj-" + chars(r, URLSAFE, 100)),
    "openai_legacy": ("OpenAI", "OPENAI_API_KEY", lambda r: "sk" + "-" + chars(r, ALNUM, 48)),
    "anthropic": (
        "Anthropic",
        "ANTHROPIC_API_KEY",
        lambda r: "sk" + "-ant-api03-" + chars(r, URLSAFE, 93) + "AA",
    ),
    "github_pat": ("GitHub", "GITHUB_TOKEN", lambda r: "gh" + "p_" + chars(r, ALNUM, 36)),
    "github_fine": (
        "GitHub",
        "GH_TOKEN",
        lambda r: "github" + "_pat_" + chars(r, ALNUM, 22) + "_" + chars(r, ALNUM, 59),
    ),
    "github_app": ("GitHub", "GITHUB_APP_TOKEN", lambda r: "gh" + "s_" + chars(r, ALNUM, 36)),
    "gitlab": ("GitLab", "GITLAB_TOKEN", lambda r: "gl" + "pat-" + chars(r, URLSAFE, 20)),
    "slack_bot": (
        "Slack",
        "SLACK_BOT_TOKEN",
        lambda r: "xo" + f"xb-{chars(r, DIGITS, 12)}-{chars(r, DIGITS, 13)}-" + chars(r, ALNUM, 24),
    ),
    "slack_user": (
        "Slack",
        "SLACK_USER_TOKEN",
        lambda r: (
            "xo"
            + f"xp-{chars(r, DIGITS, 12)}-{chars(r, DIGITS, 12)}-{chars(r, DIGITS, 13)}-"
            + chars(r, HEX, 32)
        ),
    ),
    "slack_webhook": (
        "Slack",
        "SLACK_WEBHOOK_URL",
        lambda r: (
            "https://hooks.slack"
            + ".com/services/T"
            + chars(r, UPPER + DIGITS, 8)
            + "/B"
            + chars(r, UPPER + DIGITS, 10)
            + "/"
            + chars(r, ALNUM, 24)
        ),
    ),
    "google": ("Google Maps", "GOOGLE_API_KEY", lambda r: "AI" + "za" + chars(r, URLSAFE, 35)),
    "stripe": ("Stripe", "STRIPE_SECRET_KEY", lambda r: "sk" + "_live_" + chars(r, ALNUM, 24)),
    "stripe_restricted": (
        "Stripe",
        "STRIPE_API_KEY",
        lambda r: "rk" + "_live_" + chars(r, ALNUM, 24),
    ),
    "stripe_webhook": (
        "Stripe",
        "STRIPE_WEBHOOK_SECRET",
        lambda r: "wh" + "sec_" + chars(r, ALNUM, 32),
    ),
    "npm": ("npm", "NPM_TOKEN", lambda r: "np" + "m_" + chars(r, ALNUM, 36)),
    "pypi": (
        "PyPI",
        "TWINE_PASSWORD",
        lambda r: "py" + "pi-AgEIcHlwaS5vcmc" + chars(r, URLSAFE, 60),
    ),
    "sendgrid": (
        "SendGrid",
        "SENDGRID_API_KEY",
        lambda r: "S" + "G." + chars(r, URLSAFE, 22) + "." + chars(r, URLSAFE, 43),
    ),
    "twilio": ("Twilio", "TWILIO_API_KEY", lambda r: "S" + "K" + chars(r, HEX, 32)),
    "mailgun": ("Mailgun", "MAILGUN_API_KEY", lambda r: "ke" + "y-" + chars(r, HEX, 32)),
    "shopify": ("Shopify", "SHOPIFY_ACCESS_TOKEN", lambda r: "sh" + "pat_" + chars(r, HEX, 32)),
    "digitalocean": (
        "DigitalOcean",
        "DIGITALOCEAN_TOKEN",
        lambda r: "do" + "p_v1_" + chars(r, HEX, 64),
    ),
    "huggingface": (
        "Hugging Face",
        "HF_TOKEN",
        lambda r: "h" + "f_" + chars(r, LOWER + UPPER, 34, digit=False),
    ),
    "telegram": (
        "Telegram",
        "TELEGRAM_BOT_TOKEN",
        lambda r: chars(r, DIGITS, 10) + ":" + "AA" + chars(r, URLSAFE, 33),
    ),
    "discord": (
        "Discord",
        "DISCORD_TOKEN",
        lambda r: (
            "M" + chars(r, ALNUM, 25) + "." + chars(r, URLSAFE, 6) + "." + chars(r, URLSAFE, 38)
        ),
    ),
    "vault": ("Vault", "VAULT_TOKEN", lambda r: "hv" + "s." + chars(r, URLSAFE, 90)),
    "databricks": ("Databricks", "DATABRICKS_TOKEN", lambda r: "da" + "pi" + chars(r, HEX, 32)),
    "postman": (
        "Postman",
        "POSTMAN_API_KEY",
        lambda r: "PM" + "AK-" + chars(r, HEX, 24) + "-" + chars(r, HEX, 34),
    ),
    "doppler": ("Doppler", "DOPPLER_TOKEN", lambda r: "dp" + ".st." + chars(r, ALNUM, 43)),
    "linear": ("Linear", "LINEAR_API_KEY", lambda r: "li" + "n_api_" + chars(r, ALNUM, 40)),
    "notion": ("Notion", "NOTION_TOKEN", lambda r: "nt" + "n_" + chars(r, ALNUM, 46)),
    "atlassian": (
        "Jira",
        "JIRA_API_TOKEN",
        lambda r: "AT" + "ATT3xFfGF0" + chars(r, URLSAFE, 170) + "=" + chars(r, HEX.upper(), 8),
    ),
    "sentry": (
        "Sentry",
        "SENTRY_AUTH_TOKEN",
        lambda r: (
            "sn"
            + "trys_"
            + b64url(json.dumps({"iat": r.randrange(10**9), "org": "acme"}).encode())
            + "_"
            + chars(r, URLSAFE, 43)
        ),
    ),
    "grafana": (
        "Grafana",
        "GRAFANA_TOKEN",
        lambda r: "gl" + "sa_" + chars(r, ALNUM, 32) + "_" + chars(r, HEX, 8),
    ),
    "newrelic": (
        "New Relic",
        "NEW_RELIC_API_KEY",
        lambda r: "NR" + "AK-" + chars(r, UPPER + DIGITS, 27),
    ),
    "age": (
        "age",
        "SOPS_AGE_KEY",
        lambda r: "AGE-" + "SECRET-KEY-1" + chars(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    ),
    "groq": ("Groq", "GROQ_API_KEY", lambda r: "gs" + "k_" + chars(r, ALNUM, 52)),
    "replicate": ("Replicate", "REPLICATE_API_TOKEN", lambda r: "r" + "8_" + chars(r, ALNUM, 37)),
    "square": ("Square", "SQUARE_ACCESS_TOKEN", lambda r: "sq" + "0atp-" + chars(r, URLSAFE, 22)),
    "mailchimp": (
        "Mailchimp",
        "MAILCHIMP_API_KEY",
        lambda r: chars(r, HEX, 32) + "-us" + str(r.randrange(1, 21)),
    ),
}


def jwt(rng: random.Random) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(rng.randrange(10**9)), "name": "Dana", "iat": 1_772_000_000}
    return f"{header}.{b64url(json.dumps(claims).encode())}.{b64url(rng.randbytes(32))}"


def pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(48 * 8)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    begin, end = "-----" + "BEGIN " + label + "-----", "-----" + "END " + label + "-----"
    return "\n".join([begin, *lines, end])


# Values with no telling prefix: only the words around them say they are secret.
KEYED: dict[str, tuple[str, str, Gen]] = {
    "aws_secret": ("AWS", "AWS_SECRET_ACCESS_KEY", lambda r: chars(r, B64, 40)),
    "hex_api_key": ("Datadog", "DD_API_KEY", lambda r: chars(r, HEX, 32)),
    "hex40_token": ("Cloudflare", "CF_API_TOKEN", lambda r: chars(r, HEX, 40)),
    "b64_secret": ("Auth0", "AUTH0_CLIENT_SECRET", lambda r: chars(r, URLSAFE, 64)),
    "django_secret": (
        "Django",
        "DJANGO_SECRET_KEY",
        lambda r: "django-" + "insecure-" + chars(r, ALNUM + "!@#%^&*(-_=+)", 50),
    ),
    "azure_storage": ("Azure storage", "AZURE_STORAGE_KEY", lambda r: chars(r, B64, 86) + "=="),
    "heroku": ("Heroku", "HEROKU_API_KEY", lambda r: "HR" + "KU-AA" + chars(r, URLSAFE, 58)),
    "jwt": ("Auth0", "ID_TOKEN", jwt),
}

PRIVATE_KEYS = ("RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY")


# ---------------------------------------------------------------- passwords

WORDS = (
    "correct horse battery staple sunflower marble river copper lantern velvet orbit maple "
    "falcon harbor pepper cobalt meadow thunder quartz willow ember glacier saffron tundra "
    "biscuit nimbus pebble juniper walrus tango"
).split()


def password(rng: random.Random) -> str:
    """How people's passwords look: random characters, words and digits, a capitalized
    passphrase, hyphenated words, or one plain word."""
    shape = rng.randrange(6)
    if shape == 0:
        return rng.choice(ALNUM) + chars(rng, ALNUM + "!#%^*_-", rng.randrange(9, 17))
    if shape == 1:
        return rng.choice(WORDS) + str(rng.randrange(10, 10_000))
    if shape == 2:
        return "".join(w.capitalize() for w in rng.sample(WORDS, 4))
    if shape == 3:
        return "-".join(rng.sample(WORDS, rng.randrange(3, 5)))
    if shape == 4:
        return rng.choice(WORDS).capitalize() + rng.choice("!#?*") + str(rng.randrange(1, 100))
    return rng.choice(WORDS) + rng.choice(WORDS)


def pin(rng: random.Random) -> str:
    return str(rng.randrange(1000, 10 ** rng.choice((4, 6))))


# ---------------------------------------------------------------- personal data


def _luhn_digit(payload: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(payload)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _group(digits: str, sizes: tuple[int, ...], sep: str) -> str:
    out, at = [], 0
    for size in sizes:
        out.append(digits[at : at + size])
        at += size
    return sep.join(out)


def card(rng: random.Random) -> str:
    brand = rng.randrange(4)
    if brand == 0:  # Visa
        payload, groups = "4" + chars(rng, DIGITS, 14, digit=False), (4, 4, 4, 4)
    elif brand == 1:  # Mastercard
        payload, groups = (
            f"5{rng.randrange(1, 6)}" + chars(rng, DIGITS, 13, digit=False),
            (4, 4, 4, 4),
        )
    elif brand == 2:  # American Express
        payload, groups = rng.choice(("34", "37")) + chars(rng, DIGITS, 12, digit=False), (4, 6, 5)
    else:  # Discover
        payload, groups = "6011" + chars(rng, DIGITS, 11, digit=False), (4, 4, 4, 4)
    number = payload + _luhn_digit(payload)
    return _group(number, groups, rng.choice((" ", "-", "")))


def ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    parts = f"{area:03d}", f"{rng.randrange(1, 100):02d}", f"{rng.randrange(1, 10000):04d}"
    return rng.choice(("-", "-", " ")).join(parts)


def nino(rng: random.Random) -> str:
    first, second = "ABCEGHJKLMNOPRSTWXYZ", "ABCEGHJKLMNPRSTWXYZ"
    prefix = rng.choice(first) + rng.choice(second)
    while prefix in {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}:
        prefix = rng.choice(first) + rng.choice(second)
    digits = chars(rng, DIGITS, 6, digit=False)
    sep = rng.choice(("", " "))
    return sep.join([prefix, digits[:2], digits[2:4], digits[4:], rng.choice("ABCD")])


def bsn(rng: random.Random) -> str:
    while True:
        head = chars(rng, DIGITS, 8, digit=False)
        total = sum(int(d) * w for d, w in zip(head, range(9, 1, -1), strict=True))
        last = total % 11
        if last < 10 and head[0] != "0":
            return head + str(last)


def sin(rng: random.Random) -> str:
    payload = rng.choice("1234567") + chars(rng, DIGITS, 7, digit=False)
    return _group(payload + _luhn_digit(payload), (3, 3, 3), rng.choice((" ", "-", "")))


def iban(rng: random.Random) -> str:
    country, length = rng.choice((("NL", 14), ("DE", 18), ("GB", 18), ("FR", 23)))
    if country in ("NL", "GB"):
        bban = chars(rng, UPPER, 4, digit=False) + chars(rng, DIGITS, length - 4, digit=False)
    else:
        bban = chars(rng, DIGITS, length, digit=False)
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    check = f"{98 - int(numeric) % 97:02d}"
    raw = country + check + bban
    if rng.random() < 0.5:
        return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))
    return raw


_VERHOEFF_D = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6], [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
]  # fmt: skip
_VERHOEFF_P = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2], [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]  # fmt: skip
_VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def aadhaar(rng: random.Random) -> str:
    payload = rng.choice("23456789") + chars(rng, DIGITS, 10, digit=False)
    c = 0
    for i, ch in enumerate(reversed(payload)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[(i + 1) % 8][int(ch)]]
    number = payload + str(_VERHOEFF_INV[c])
    return _group(number, (4, 4, 4), rng.choice((" ", " ", "")))


def dni(rng: random.Random) -> str:
    number = rng.randrange(10**7, 10**8)
    return f"{number}{'TRWAGMYFPDXBNJZSQVHLCKE'[number % 23]}"


PERSONAL: dict[str, Gen] = {
    "card": card,
    "ssn": ssn,
    "nino": nino,
    "bsn": bsn,
    "sin": sin,
    "iban": iban,
    "aadhaar": aadhaar,
    "dni": dni,
}


# ---------------------------------------------------------------- look-alikes


def commit(rng: random.Random) -> str:
    return chars(rng, HEX, rng.choice((7, 8, 10, 12, 40)))


def uuid(rng: random.Random) -> str:
    h = chars(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def version(rng: random.Random) -> str:
    core = f"{rng.randrange(0, 30)}.{rng.randrange(0, 40)}.{rng.randrange(0, 60)}"
    return rng.choice(
        (
            core,
            "v" + core,
            core + f"-rc.{rng.randrange(1, 5)}",
            core + f"+build.{rng.randrange(999)}",
        )
    )


def sha256(rng: random.Random) -> str:
    return chars(rng, HEX, 64)


def path(rng: random.Random) -> str:
    parts = rng.sample(
        "src lib engram_md ingest tests data config .ssh home dana projects app build dist "
        "node_modules scripts docs var log etc nginx".split(),
        rng.randrange(2, 5),
    )
    name = rng.choice(("sanitize.py", "id_ed25519.pub", "settings.yaml", "README.md",
                       "index.ts", "app.log", "Dockerfile", "config.toml", "main.rs"))  # fmt: skip
    style = rng.randrange(4)
    if style == 0:
        return "/" + "/".join([*parts, name])
    if style == 1:
        return "~/" + "/".join([*parts, name])
    if style == 2:
        return "C:\\Users\\dana\\" + "\\".join([*parts, name])
    return "/".join([*parts, name]) + f":{rng.randrange(1, 900)}"


def image(rng: random.Random) -> str:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    return "data:image/png;base64," + base64.b64encode(header + rng.randbytes(150)).decode()


def ssh_public(rng: random.Random) -> str:
    blob = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00 " + rng.randbytes(32))
    return f"ssh-ed25519 {blob.decode()} dana@laptop"


def digest(rng: random.Random) -> str:
    return "sha256:" + sha256(rng)


def pod(rng: random.Random) -> str:
    return f"api-{chars(rng, LOWER + DIGITS, 10)}-{chars(rng, LOWER + DIGITS, 5)}"


def order_number(rng: random.Random) -> str:
    """16 digits that fail the Luhn check: an order or invoice number, not a card."""
    payload = rng.choice("3456") + chars(rng, DIGITS, 14, digit=False)
    bad = (int(_luhn_digit(payload)) + rng.randrange(1, 10)) % 10
    return payload + str(bad)


def imei(rng: random.Random) -> str:
    payload = "35" + chars(rng, DIGITS, 12, digit=False)
    return payload + _luhn_digit(payload)


def phone(rng: random.Random) -> str:
    return rng.choice(
        (
            f"+31 6 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
            f"({rng.randrange(200, 999)}) {rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
            f"+44 20 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
            f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
        )
    )


def arn(rng: random.Random) -> str:
    return f"arn:aws:iam::{chars(rng, DIGITS, 12, digit=False)}:role/{rng.choice(WORDS)}-deploy"


def ip(rng: random.Random) -> str:
    return ".".join(str(rng.randrange(1, 255)) for _ in range(4))


def mac(rng: random.Random) -> str:
    return ":".join(chars(rng, HEX, 2, digit=False) for _ in range(6))


def epoch_ms(rng: random.Random) -> str:
    return str(rng.randrange(1_600_000_000_000, 1_800_000_000_000))


def tracking(rng: random.Random) -> str:
    return "1Z" + chars(rng, UPPER + DIGITS, 16)


def isbn(rng: random.Random) -> str:
    body = "978" + chars(rng, DIGITS, 9, digit=False)
    check = (10 - sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body)) % 10) % 10
    return f"{body[:3]}-{body[3]}-{body[4:8]}-{body[8:]}-{check}"


def base64_text(rng: random.Random) -> str:
    return base64.b64encode(" ".join(rng.sample(WORDS, 3)).encode()).decode()


def camel_identifier(rng: random.Random) -> str:
    words = rng.sample(["get", "user", "token", "api", "key", "secret", "refresh", "password",
                        "reset", "handler", "provider", "cache"], 3)  # fmt: skip
    return words[0] + "".join(w.capitalize() for w in words[1:])


def hex_color(rng: random.Random) -> str:
    return "#" + chars(rng, HEX, 6, digit=False)


LOOK_ALIKES: dict[str, Gen] = {
    "commit": commit,
    "uuid": uuid,
    "version": version,
    "sha256": sha256,
    "path": path,
    "image": image,
    "ssh_public_key": ssh_public,
    "digest": digest,
    "pod": pod,
    "order_number": order_number,
    "imei": imei,
    "phone": phone,
    "arn": arn,
    "ip": ip,
    "mac": mac,
    "epoch_ms": epoch_ms,
    "tracking": tracking,
    "isbn": isbn,
    "base64_text": base64_text,
    "identifier": camel_identifier,
    "hex_color": hex_color,
}
