"""The secret corpus: secrets said in prose as people write them, and look-alikes that must stay.

Two splits, each made from its own seed and its own wording:

- ``tune``: the split the redaction rules were developed against;
- ``held_out``: other sentences around other values, written before the rules were tuned,
  so a rule that fits the tune split's strings rather than the shapes of credentials shows
  up as a gap between the two. Its first measurement was 98.5% (tune: 100%); its misses led
  to two general changes (a key named by two words, "access key secret"; base64 that starts
  with "/" is not a path), after which it is at 100% too. Twenty further seeds of both
  splits (16,000 secrets, 16,000 look-alikes) then showed 71 misses in a few wordings (a
  password of plain words after a user name, after "pw:", a wifi code in words), fixed by
  rule, not by string: 0 misses and 0 look-alikes altered since.

Each split holds at least 300 secrets (tokens of 40 kinds from 30+ providers, keys known only
by the words around them, passwords, private keys, card numbers, national ids) and at least
300 look-alikes (commit hashes, UUIDs, versions, paths, base64 images, public keys, digests,
order numbers, prose about passwords). Nothing here is a real credential: see ``values.py``.

    python -m tests.data.secrets.corpus [tune|held_out]     prints a split, one case a line
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass

from . import values as v

SPLITS = ("tune", "held_out")
SEEDS = {"tune": 20260302, "held_out": 99173}
SECRETS_PER_SPLIT = 400
LOOK_ALIKES_PER_SPLIT = 400

SERVICES = (
    "staging",
    "prod",
    "the billing service",
    "the nightly job",
    "the bot",
    "CI",
    "the demo",
)


@dataclass(frozen=True)
class Secret:
    kind: str
    family: str  # "credential" or "personal": personal data has its own switch
    text: str
    values: tuple[str, ...]  # none of these (nor a key block's lines) may survive redaction


@dataclass(frozen=True)
class LookAlike:
    kind: str
    text: str


# ---------------------------------------------------------------- wording of each split

# {v} is the value; {prov} the provider as people name it; {env} its environment variable;
# {env_lower} the same in lower case; {svc} a service.
TOKEN_PHRASES = {
    "tune": (
        "my {prov} token is {v}",
        "{env}={v}",
        "here's the {prov} key: {v}",
        "I rotated the {prov} credentials, the new one is {v}",
        "use {v} for the {svc} deploys",
        'export {env}="{v}"',
        "the CI needs {v} as {env}",
        '{{"{env_lower}": "{v}"}}',
        "paste this into the settings page: {v}",
        'curl -H "Authorization: Bearer {v}" https://api.example.com/v1/me',
    ),
    "held_out": (
        "{prov} token for {svc} -> {v}",
        "set {env} to {v} in the staging env",
        "new {prov} key ({svc}): {v}",
        "I'll DM you the rest, but the {prov} token is `{v}`",
        "{env_lower}: {v}",
        "can you check why {v} gets a 401 from {prov}?",
        "the old key {v} was revoked this morning",
        "docker run -e {env}={v} app:latest",
        "GET /v1/export?token={v}&format=json",
        "- {prov}: {v}",
    ),
}
KEYED_PHRASES = {
    "tune": (
        "my {prov} key is AKIAEXAMPLEEXAMPLE12 and the secret {v}",
        "{prov} secret key: {v}",
        "the {prov} API key is {v}",
        "{env}={v}",
        "secret: {v}",
        "api key for {svc} = {v}",
        "and the {prov} client secret is {v}",
        "{env_lower} = '{v}'",
    ),
    "held_out": (
        "{prov} secret -> {v}",
        "ok so the secret is {v}",
        "key {v} (don't share it)",
        'export {env}="{v}"',
        "client secret {v}",
        "here's the access key secret for {svc}: {v}",
        "{prov} token: {v}",
        "the key for {svc} is {v} now",
    ),
}
PRIVATE_KEY_PHRASES = {
    "tune": ("here is my deploy key:\n{v}", "{v}", "id_rsa:\n{v}\nuse it for the build box"),
    "held_out": (
        "the key for {svc}\n{v}",
        "cat ~/.ssh/key gives:\n{v}",
        "{v}\n(that's the old one)",
    ),
}
PASSWORD_PHRASES = {
    "tune": (
        "the password for the staging box is {v}",
        "wifi password: {v}",
        "my {svc} password is {v}",
        "I changed the root password to {v}",
        "login dana / password {v}",
        "use {v} as the password for {svc}",
        "the wifi password is {v}",
        "password={v}",
        "pw: {v}",
        'the admin passphrase is "{v}"',
        "postgres://app:{v}@db.internal:5432/app",
        "my PIN is {pin}",
    ),
    "held_out": (
        "{svc} login: dana, pass {v}",
        "the new password is {v}, please write it down",
        "Password for the NAS -> {v}",
        "our guest wifi code is {v}",
        "set the db password to {v}",
        "password is {v} (capital first letter)",
        "creds for {svc}: dana:{v}",
        "the {svc} pwd is {v}",
        "the passphrase for the key is '{v}'",
        "mysql -u root -p'{v}' shop",
        "redis://:{v}@cache.internal:6379/0",
        "the door code is {pin}",
    ),
}
PERSONAL_PHRASES = {
    "tune": {
        "card": ("my card number is {v}", "charge it to {v}, exp 04/28"),
        "ssn": ("my SSN is {v}", "social security number: {v}"),
        "nino": ("my NI number is {v}",),
        "bsn": ("BSN: {v}",),
        "sin": ("my SIN is {v}",),
        "iban": ("IBAN {v}",),
        "aadhaar": ("Aadhaar {v}",),
        "dni": ("mi DNI es {v}",),
    },
    "held_out": {
        "card": ("card {v} cvc 123", "paid with {v} yesterday"),
        "ssn": ("ssn {v}", "her social is {v}"),
        "nino": ("national insurance {v}",),
        "bsn": ("burgerservicenummer {v}",),
        "sin": ("SIN {v} for the tax form",),
        "iban": ("wire it to {v} please",),
        "aadhaar": ("my aadhaar number: {v}",),
        "dni": ("DNI {v}",),
    },
}

LOOK_ALIKE_PHRASES = {
    "tune": {
        "commit": ("fixed in commit {v}", "git revert {v}"),
        "uuid": ("request {v} timed out", "the tenant id is {v}"),
        "version": ("we upgraded to {v}", "pin requests=={v}"),
        "sha256": ("sha256sum: {v}  dist/app.tar.gz", "checksum {v}"),
        "path": ("the config lives in {v}", "error at {v}"),
        "image": ('the avatar is <img src="{v}">', "logo: {v}"),
        "ssh_public_key": ("my public key is {v}", "add {v} to authorized_keys"),
        "digest": ("image digest {v}", "docker pull app@{v}"),
        "pod": ("pod {v} keeps restarting", "kubectl logs {v}"),
        "order_number": ("order number {v}", "invoice {v} is overdue"),
        "imei": ("the phone's IMEI is {v}",),
        "phone": ("call me at {v}", "Priya's number is {v}"),
        "arn": ("assume {v}",),
        "ip": ("the server is at {v}", "ssh dana@{v}"),
        "mac": ("the printer's MAC is {v}",),
        "epoch_ms": ("created_at: {v}",),
        "tracking": ("the parcel tracking number is {v}",),
        "isbn": ("ISBN {v}",),
        "base64_text": ("base64 of the greeting is {v}",),
        "identifier": ("rename {v} to something clearer", "call {v}() before the request"),
        "hex_color": ("use {v} for the header",),
    },
    "held_out": {
        "commit": ("cherry-pick {v} onto main", "the regression came in with {v}"),
        "uuid": ("session uuid {v}", "trace_id={v}"),
        "version": ("bumped the dependency to {v}", "release {v} is out"),
        "sha256": ("expected digest {v}", "{v}  app.tar.gz"),
        "path": ("see {v}", "open {v} in the editor"),
        "image": ("<img alt=logo src='{v}'>",),
        "ssh_public_key": ("the deploy key (public half) is {v}",),
        "digest": ("FROM python@{v}",),
        "pod": ("the pod is called {v}",),
        "order_number": ("PO {v}", "reference {v} on the invoice"),
        "imei": ("IMEI {v}",),
        "phone": ("phone: {v}",),
        "arn": ("role_arn = {v}",),
        "ip": ("host {v}", "ping {v}"),
        "mac": ("MAC address {v}",),
        "epoch_ms": ("updated_at={v}",),
        "tracking": ("tracking {v}",),
        "isbn": ("the book's ISBN is {v}",),
        "base64_text": ("echo {v} | base64 -d",),
        "identifier": ("the function {v} is slow",),
        "hex_color": ("color: {v};",),
    },
}

# Prose about secrets that holds none.
PROSE = {
    "tune": (
        "I forgot my password again, had to reset it.",
        "The password is too short, it needs 12 characters.",
        "The token expired an hour ago.",
        "Password reset links expire in 24 hours.",
        "The key to success is patience.",
        "API keys rotate every 90 days here.",
        "Use the secret manager, not env files.",
        "Set OPENAI_API_KEY in your shell before running it.",
        "password: <your password>",
        "token = os.environ['GITHUB_TOKEN']",
        "The secret is out: we're moving to Berlin.",
        "My password manager is 1Password.",
        "The wifi password is on the fridge.",
        "The password is the same as last year.",
        "Keep your card number private.",
        "My SSN is on the form you already have.",
        "The access token is sent in a header.",
        "I need a new API key for the staging project.",
        "The secret ingredient is cardamom.",
        "The password field is required.",
        "Our tokens are scoped to one repository.",
        "The PIN pad at the door is broken.",
        "api_key = settings.OPENAI_API_KEY",
        "password = getpass.getpass()",
        "DB_PASSWORD=${DB_PASSWORD}",
    ),
    "held_out": (
        "Can you remind me to change my password on Friday?",
        "The password is expired, IT will send a new one.",
        "Tokens are cheap, context windows are not.",
        "We store only a hash of each password.",
        "The key is in the drawer by the door.",
        "Rotate the key before the audit.",
        "Secrets go in Vault, never in the repo.",
        "export GITHUB_TOKEN=$(gh auth token)",
        "api_key: str | None = None",
        "The secret sauce is a good test suite.",
        "My password is stored in the keychain.",
        "The password is printed under the router.",
        "Her card was declined twice.",
        "I'll bring my passport and my social security card.",
        "The bearer token goes in the Authorization header.",
        "Generate a personal access token with repo scope.",
        "The password policy changed last week.",
        "Your PIN must be four digits.",
        "client_secret = config.get('client_secret')",
        "Put your key in OPENAI_API_KEY=<your key here> and restart.",
        "The wifi password is case sensitive.",
        "The session token lives for a day.",
        "A credit card number has a check digit.",
        "The key takeaway: ship small.",
        "Tell me the password later, not in chat.",
    ),
}


# ---------------------------------------------------------------- generation


def _fill(template: str, value: str, rng: random.Random, **names: str) -> str:
    return template.format(v=value, svc=rng.choice(SERVICES), pin=v.pin(rng), **names)


def secrets(split: str) -> list[Secret]:
    """The split's secrets: provider tokens, keyed values, private keys, passwords and
    personal data in turn, each in a wording of the split."""
    rng = random.Random(SEEDS[split])
    makers = [
        *(("token", name) for name in v.TOKENS),
        *(("keyed", name) for name in v.KEYED),
        *(("private_key", label) for label in v.PRIVATE_KEYS),
        *(("password", f"password{i}") for i in range(8)),
        *(("personal", name) for name in v.PERSONAL),
    ]
    out: list[Secret] = []
    while len(out) < SECRETS_PER_SPLIT:
        family, name = makers[len(out) % len(makers)]
        out.append(_secret(split, family, name, rng))
    return out


def _secret(split: str, family: str, name: str, rng: random.Random) -> Secret:
    if family == "token":
        prov, env, gen = v.TOKENS[name]
        value = gen(rng)
        template = rng.choice(TOKEN_PHRASES[split])
        text = _fill(template, value, rng, prov=prov, env=env, env_lower=env.lower())
        return Secret(name, "credential", text, (value,))
    if family == "keyed":
        prov, env, gen = v.KEYED[name]
        value = gen(rng)
        template = rng.choice(KEYED_PHRASES[split])
        text = _fill(template, value, rng, prov=prov, env=env, env_lower=env.lower())
        return Secret(name, "credential", text, (value,))
    if family == "private_key":
        value = v.pem(rng, name)
        text = _fill(rng.choice(PRIVATE_KEY_PHRASES[split]), value, rng)
        return Secret("private_key", "credential", text, (value,))
    if family == "password":
        template = rng.choice(PASSWORD_PHRASES[split])
        value = v.pin(rng) if "{pin}" in template else v.password(rng)
        text = template.format(v=value, svc=rng.choice(SERVICES), pin=value)
        return Secret("pin" if "{pin}" in template else "password", "credential", text, (value,))
    value = v.PERSONAL[name](rng)
    text = _fill(rng.choice(PERSONAL_PHRASES[split][name]), value, rng)
    return Secret(name, "personal", text, (value,))


def look_alikes(split: str) -> list[LookAlike]:
    """The split's look-alikes: values that share a secret's alphabet, and prose about
    secrets, alternating."""
    rng = random.Random(SEEDS[split] + 1)
    phrases = LOOK_ALIKE_PHRASES[split]
    kinds = list(phrases)
    prose = PROSE[split]
    out: list[LookAlike] = []
    while len(out) < LOOK_ALIKES_PER_SPLIT:
        n = len(out)
        if n % 8 == 7:
            out.append(LookAlike("prose", prose[(n // 8) % len(prose)]))
            continue
        kind = kinds[n % len(kinds)]
        value = v.LOOK_ALIKES[kind](rng)
        out.append(LookAlike(kind, rng.choice(phrases[kind]).format(v=value)))
    return out


def fragments(value: str) -> list[str]:
    """What must not survive of one secret: the value, and for a key block each line of its
    body (a partial cut would still leak key material)."""
    if "PRIVATE KEY" in value:
        return [line for line in value.splitlines()[1:-1] if len(line) >= 16]
    return [value]


def leaks(case: Secret, text: str) -> list[str]:
    """The fragments of ``case``'s secrets still in ``text``."""
    return [frag for value in case.values for frag in fragments(value) if frag in text]


def main() -> None:
    split = sys.argv[1] if len(sys.argv) > 1 else "tune"
    for case in secrets(split):
        print(f"S\t{case.kind}\t{case.text!r}")
    for alike in look_alikes(split):
        print(f"L\t{alike.kind}\t{alike.text!r}")


if __name__ == "__main__":
    main()
