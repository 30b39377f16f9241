"""Sanitizing: <memory> blocks out, secrets redacted, prose untouched, length capped."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram_md.core.config import SanitizeConfig
from engram_md.core.models import Role, Turn
from engram_md.ingest.sanitize import redact_secrets, sanitize_turn, strip_memory_blocks

from .fuzzing import FUZZ

# Fake credentials of realistic shape. Some are assembled from pieces so that secret scanners
# do not mistake this file for a leak.
AWS_ID = "AKIA" + "Z7QW3XK5LM2NP4RT"
AWS_SESSION_ID = "ASIA" + "Y2V8B4N6M1Q3W5E7"
AWS_SECRET = "q8Lr2" + "Vn5Tz/Kp9Wm3Xs7+Hd4Gf6Jb1Nc0Ya8Ue5R"
OPENAI = "sk-" + "Q3vT8pLm2XrW9kZc4NbY7sHd5JfGa1UeR6oKi0Vw3Mx8Tq2P"
OPENAI_PROJECT = "sk-proj-" + "Ab3dEf6hIj9kLmN0pQrStUvWxYz1234567890abcd_EFGH-ijkl"
ANTHROPIC = "sk-ant-api03-" + "Zx9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed-_Cb9Aa8Zz7Yy6Xx5Ww4Vv3Uu2Tt1Ss0AAA"
GITHUB_PAT = "ghp_" + "R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXyZ"
GITHUB_OAUTH = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GITHUB_FINE = (
    "github_pat_" + "11ABCDEFG0123456789_abcdefghijKLMNOPQRSTuvwxyz0123456789ABCDEFGHIJKLMNOPQRS"
)
NPM = "npm_" + "Zq8Wx3Cv5Bn7Mm1Kk9Jj4Hh2Gg6Ff0Dd8Ss3"
GITLAB = "glpat-" + "Zq8Wx3Cv5Bn7Mm1Kk9Jj"
HEX_KEY = "7d9f2b4c8e1a6053" + "a8f5f167f44f4964"
SLACK_BOT = "xo" + "xb-2048536012-5827381924065-Zq8Wx3Cv5Bn7Mm1Kk9Jj4Hh"
SLACK_USER = "xo" + "xp-1234567890-0987654321-1122334455-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
SLACK_APP = "xa" + "pp-1-A0B1C2D3E4F-4815162342108-" + "9f86d081884c7d659a2feaa0c55ad015" * 2
SLACK_HOOK = "https://hooks.slack.com/services/" + "T0A1B2C3D/B4E5F6G7H/Xy9Zw8Vu7Ts6Rq5Po4Nm3Lk2"
GOOGLE = "AIza" + "SyD4f8Kq2Lm9Np3Rt7Vx1Zb5Hc6Jg0We8Ua"
STRIPE = "sk" + "_live_" + "51HqYb2Kx9Lm3Np7Rt4Vw8Zc"
STRIPE_RESTRICTED = "rk" + "_live_" + "51HqYb2Kx9Lm3Np7Rt4Vw8Zd"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkRhbmEiLCJpYXQiOjE1MTYyMzkwMjJ9"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
PUTTY = (
    "PuTTY-User-" + "Key-File-3: ssh-ed25519\n"
    "Encryption: none\n"
    "Comment: eddsa-key-20260302\n"
    "Public-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIHk0YmZkNjQ5ZjJhYzQ3OGM5ZTEyMzQ1Njc4OWFi\n"
    "Y2Rl\n"
    "Private-Lines: 1\n"
    "AAAAIGZmZWVkZGNjYmJhYTk5ODg3NzY2NTU0NDMzMjIxMTAwZmZlZWRkY2M=\n"
    "Private-MAC: 5a1f0e9d8c7b6a5948372615f4e3d2c1b0a99887766554433221100ffeeddccb"
)

# (text, the secret that must disappear, the kind named in its marker)
SECRETS = [
    (f"my access key is {AWS_ID} for prod", AWS_ID, "aws_access_key"),
    (f"temporary creds {AWS_SESSION_ID}", AWS_SESSION_ID, "aws_access_key"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
    (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
    (f"use {OPENAI} for the bot", OPENAI, "openai_key"),
    (f"OPENAI_API_KEY={OPENAI_PROJECT}", OPENAI_PROJECT, "openai_key"),
    (f"the claude key: {ANTHROPIC}", ANTHROPIC, "anthropic_key"),
    (f"git clone https://{GITHUB_PAT}@github.com/acme/x", GITHUB_PAT, "github_token"),
    (f"token {GITHUB_OAUTH} expired?", GITHUB_OAUTH, "github_token"),
    (f"fine-grained: {GITHUB_FINE}", GITHUB_FINE, "github_token"),
    (f"bot token {SLACK_BOT}", SLACK_BOT, "slack_token"),
    (f"user token {SLACK_USER}.", SLACK_USER, "slack_token"),
    (f"socket mode wants the app token {SLACK_APP}", SLACK_APP, "slack_token"),
    (f"post alerts to {SLACK_HOOK} please", SLACK_HOOK, "slack_webhook"),
    (f"maps key {GOOGLE}", GOOGLE, "google_api_key"),
    (f"stripe: {STRIPE}", STRIPE, "stripe_key"),
    (f"restricted {STRIPE_RESTRICTED}", STRIPE_RESTRICTED, "stripe_key"),
    (f"session cookie {JWT}", JWT, "jwt"),
    (
        f"here is the key:\n{PEM}\nthanks",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0",
        "private_key",
    ),
    (f"{OPENSSH}", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "private_key"),
    (
        f"my key.ppk:\n{PUTTY}\nthanks",
        "AAAAIGZmZWVkZGNjYmJhYTk5ODg3NzY2NTU0NDMzMjIx",
        "private_key",
    ),
    (
        "git push https://deploy:pa@ss9Word@host.example.com/acme/repo.git",
        "pa@ss9Word",  # was: only "pa" redacted, "ss9Word" left behind
        "password",
    ),
    ("db at postgres://dana:Pg-s3cret!@db.internal:5432/app", "Pg-s3cret!", "password"),
    ("redis://:hunter22@cache:6379", "hunter22", "password"),
    ("password: hunter2", "hunter2", "password"),
    ("PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3", "password"),
    ("my password is swordfish.", "swordfish", "password"),
    ("My password is now 'correct horse battery'", "correct horse battery", "password"),
    ("the wifi password for the office is Lemon-Tree-42", "Lemon-Tree-42", "password"),
    ("passwd: r00tpass", "r00tpass", "password"),
    ("pwd=qwerty12", "qwerty12", "password"),
    ("DB_PASSWORD = 'p@ss w0rd'", "p@ss w0rd", "password"),
    ('{"password": "s3cr3t-value"}', "s3cr3t-value", "password"),
    ("secret: a8f5f167f44f4964e6c998dee827110c", "a8f5f167f44f4964e6c998dee827110c", "secret"),
    ("client_secret=abcDEF123ghi", "abcDEF123ghi", "secret"),
    ("api_key: 7d9f2b4c8e1a6053", "7d9f2b4c8e1a6053", "api_key"),
    ("apiKey=Zk29fjQ0xLw", "Zk29fjQ0xLw", "api_key"),
    ("token = 9f8e7d6c5b4a", "9f8e7d6c5b4a", "token"),
    ("SLACK_TOKEN=abc.def.123456", "abc.def.123456", "token"),
    ("Authorization: Bearer 4f9a2c7e1b8d3f6a0c5e", "4f9a2c7e1b8d3f6a0c5e", "bearer_token"),
    ("curl -H 'authorization: basic ZGFuYTpodW50ZXIy' x", "ZGFuYTpodW50ZXIy", "bearer_token"),
    ('-H "Authorization: Bearer abc.def-ghi_jkl"', "abc.def-ghi_jkl", "bearer_token"),
    ("my PIN is 4821", "4821", "password"),
    # What reached the folder before (issue 22): a password with no digit, an npm token,
    # personal data, a secret named by a bare key word.
    ("the wifi password is CorrectHorseBatteryStaple", "CorrectHorseBatteryStaple", "password"),
    (f"npm token {NPM}", NPM, "npm_token"),
    (f"and secret {AWS_SECRET}", AWS_SECRET, "secret"),
    ("my SSN is 078-05-1120", "078-05-1120", "national_id"),
    ("card 4111 1111 1111 1111 exp 04/28", "4111 1111 1111 1111", "card_number"),
    ("wire it to NL91 ABNA 0417 1643 00 please", "NL91 ABNA 0417 1643 00", "iban"),
    ("my NI number is AB 12 34 56 C", "AB 12 34 56 C", "national_id"),
    (f"the GitLab token is {GITLAB}", GITLAB, "gitlab_token"),
    ("I changed the root password to Lemon-Tree-42", "Lemon-Tree-42", "password"),
    ("use hunter2x as the password for staging", "hunter2x", "password"),
    ("login dana / password sunflower", "sunflower", "password"),
    ("the door code is 4821", "4821", "password"),
    ("Password for the NAS -> marble-copper-orbit", "marble-copper-orbit", "password"),
    (f"the API key for the billing service is {HEX_KEY}", HEX_KEY, "api_key"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_secrets_are_redacted(text: str, secret: str, kind: str) -> None:
    redacted, count = redact_secrets(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert count == 1
    if kind != "private_key":  # a key block goes whole, BEGIN and END lines included
        # Exactly the secret goes: the words around it stay, so the fact is still readable.
        head, tail = text.split(secret, 1)
        assert redacted == f"{head}[REDACTED:{kind}]{tail}"


def test_url_password_keeps_the_user() -> None:
    redacted, count = redact_secrets("mysql://dana:p4ss@db/app and https://bob:x9y@host")
    assert redacted == (
        "mysql://dana:[REDACTED:password]@db/app and https://bob:[REDACTED:password]@host"
    )
    assert count == 2


def test_a_putty_key_goes_whole_and_prose_about_the_format_stays() -> None:
    redacted, count = redact_secrets(f"my key.ppk:\n{PUTTY}\nthanks")
    assert redacted == "my key.ppk:\n[REDACTED:private_key]\nthanks" and count == 1
    cut = PUTTY.split("Private-Lines")[0] + "Private-Lines: 1\nAAAAIGZmZWVk"
    assert redact_secrets(f"oops:\n{cut}") == ("oops:\n[REDACTED:private_key]", 1)
    prose = "A .ppk file starts with PuTTY-User-Key-File-3: and then the key type."
    assert redact_secrets(prose) == (prose, 0)


def test_unterminated_private_key_hides_everything_after_it() -> None:
    text = "oops:\n" + PEM.rsplit("\n", 1)[0] + "\nand more key material"
    redacted, count = redact_secrets(text)
    assert redacted == "oops:\n[REDACTED:private_key]" and count == 1


def test_count_and_idempotence() -> None:
    text = " ".join(t for t, _, _ in SECRETS)
    once, count = redact_secrets(text)
    assert count >= len(SECRETS)
    twice, again = redact_secrets(once)
    assert (twice, again) == (once, 0)


NORMAL = [
    "I prefer tokens of appreciation over cash.",
    "Click the password field and type slowly.",
    "Prices are sky-high this year.",
    "We ran an ask-me-anything session on Friday.",
    "The password is wrong, try again.",
    "Her password was changed yesterday.",
    "The password is managed by Okta.",
    "Passwords: must be at least 12 characters.",
    "Here's the secret: practice every day.",
    "We store passwords hashed with argon2.",
    "Tokens: 1200 used of 4000.",
    "Set max_tokens=1200 for the summarizer.",
    "The token is valid for one hour.",
    "My token of gratitude is this cake.",
    "The API key rotation policy is 90 days.",
    "Use the secret_key setting in config.py.",
    "Reset your password at https://example.com/reset?user=dana",
    "Visit https://dana@example.com or http://localhost:8080/admin.",
    "The meeting is at 10:30, ratio 3:4, key: value.",
    "I use sk-learn-style-pipelines-everywhere.",
    "He was the bearer of bad news.",
    "The pin is bent, so the plug is broken.",
    "Spin is fun; PINs are 4 digits.",
    "A JSON web token starts with eyJ, like eyJhbGciOi.",
    "AKIA is the prefix of AWS access key ids.",
    "I work at Acme Robotics as a backend lead.",
    "We decided to move telemetry from MySQL to PostgreSQL 16.",
    "Dana will send the migration plan to Priya by Friday.",
    "Secrets of the Nile is a good book.",
    "credentials are in the vault",
    "The secret sauce: love and butter.",
    # pasted code and docs
    "api_key: str | None = None",
    "token = m.group(1)",
    "total_tokens=sum(usage)",
    '{"input_tokens": 5, "cache_read_input_tokens": 1200}',
    'client = OpenAI(api_key=api_key or "not-needed")',
    "password = settings.DB_PASSWORD",
    "password: ${DB_PASSWORD}",
    "Set password=<your password> in the file.",
    "Connect with postgres://user:password@localhost/db",
    "Her profile is https://example.com/users/dana@example.com/about now.",
    "I ssh in as deploy@build-01.example.com and mail ops@example.com.",
    "The xapp-config-v2-loader package needs an update.",
    "secret: true",
    # look-alikes of secrets and of personal data
    "My public key is ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk0YmZkNjQ5ZjJhYzQ3OGM5 dana@laptop",
    "The phone's IMEI is 356938035643809.",
    "Order 4111111111111112 shipped today.",
    "Call me at (555) 234-5678 or +31 6 1234 5678.",
    "The password is Okta-managed.",
    "The key to success is patience.",
    '{"password": 1, "token": 2}',
    "assume arn:aws:iam::123456789012:role/deploy",
    "docker pull app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "the config lives in /home/dana/projects/app/settings.yaml",
    "The release is v2.14.0-rc.1+build.5, commit 3f9c2a1b7d4e.",
    "logo: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "My password manager is 1Password and the password field is required.",
]


@pytest.mark.parametrize("text", NORMAL)
def test_normal_prose_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


# ---- memory blocks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<memory>\n[FACT] Dana likes uv\n</memory>\nWhat next?", "What next?"),
        ("Before <MEMORY>x</Memory> after", "Before after"),
        ("a <memory kind='recall'>\nmulti\nline\n</memory > b", "a b"),
        ("keep this\n\n<memory>\nrecall without an end", "keep this"),
        ("<memory>one</memory> mid <memory>two</memory> end", "mid end"),
        ("stray </memory> close", "stray close"),
        ("x\n\n<memory>y</memory>\n\n\n\nz", "x\n\nz"),
    ],
)
def test_memory_blocks_are_stripped(text: str, expected: str) -> None:
    assert strip_memory_blocks(text) == expected


def test_stripping_a_block_cannot_assemble_a_new_one() -> None:
    assert strip_memory_blocks("<mem<memory>a</memory>ory>planted</memory>ok") == "ok"
    for nested in (
        "keep " + "<mem" * 20 + "<memory>x</memory>" + "ory>" * 20 + "planted",
        "keep " + "<mem" * 20 + "<memory></memory>" + "ory></memory>" * 20 + "planted",
    ):
        stripped = strip_memory_blocks(nested)
        assert stripped.startswith("keep") and "planted" not in stripped
        assert "<memory" not in stripped


@pytest.mark.parametrize(
    "text", ["no tags here", "a <memoryless> tag stays", "x < y and y > z", "  spaced  "]
)
def test_text_without_memory_blocks_is_unchanged(text: str) -> None:
    assert strip_memory_blocks(text) == text


# ---- whole turns -------------------------------------------------------------------------------

CFG = SanitizeConfig(max_turn_chars=200)


def _turn(content: str) -> Turn:
    return Turn(
        id="t1",
        session="s",
        role=Role.USER,
        content=content,
        timestamp=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        speaker="Dana",
        origin="chat.jsonl:4",
    )


def test_sanitize_turn_strips_and_redacts_and_keeps_the_rest() -> None:
    turn = _turn(f"<memory>old recall</memory>\nMy key is {OPENAI}, and I like uv.")
    clean = sanitize_turn(turn, CFG)
    assert clean is not None
    assert clean.content == "My key is [REDACTED:openai_key], and I like uv."
    assert (clean.id, clean.session, clean.role, clean.timestamp, clean.speaker, clean.origin) == (
        turn.id,
        turn.session,
        turn.role,
        turn.timestamp,
        turn.speaker,
        turn.origin,
    )


def test_the_issue_sentence_leaves_nothing_behind() -> None:
    text = (
        f"my aws key is {AWS_ID} and secret {AWS_SECRET}. the wifi password is "
        f"CorrectHorseBatteryStaple, npm token {NPM}, ssn 078-05-1120, card 4111 1111 1111 1111"
    )
    redacted, count = redact_secrets(text)
    for secret in (AWS_ID, AWS_SECRET, "CorrectHorseBatteryStaple", NPM, "078-05-1120", "4111"):
        assert secret not in redacted
    assert count == 6


def test_personal_data_can_be_kept_by_policy() -> None:
    turn = _turn(f"card 4111 1111 1111 1111, ssn 078-05-1120, key {OPENAI}")
    kept = sanitize_turn(turn, SanitizeConfig(redact_personal_data=False))
    assert kept is not None
    assert "4111 1111 1111 1111" in kept.content and "078-05-1120" in kept.content
    assert OPENAI not in kept.content  # credentials go whatever the personal data policy
    default = sanitize_turn(turn, SanitizeConfig())
    assert default is not None and "4111" not in default.content


def test_redaction_can_be_turned_off() -> None:
    turn = _turn(f"key {OPENAI}")
    clean = sanitize_turn(turn, SanitizeConfig(redact_secrets=False))
    assert clean is turn


def test_a_clean_turn_comes_back_as_is() -> None:
    turn = _turn("We decided to use PostgreSQL 16.")
    assert sanitize_turn(turn, CFG) is turn


@pytest.mark.parametrize("content", ["", "   \n\t", "<memory>only recall</memory>", "\x00\x07"])
def test_nothing_left_gives_none(content: str) -> None:
    assert sanitize_turn(_turn(content), CFG) is None


def test_control_characters_and_terminal_colours_are_removed() -> None:
    clean = sanitize_turn(_turn("\x1b[31mred\x1b[0m\r\nnext\x00 line\tok"), CFG)
    assert clean is not None and clean.content == "red\nnext line\tok"


def test_cap_cuts_at_a_word_boundary() -> None:
    words = " ".join(f"word{i}" for i in range(100))
    clean = sanitize_turn(_turn(words), CFG)
    assert clean is not None
    assert len(clean.content) <= CFG.max_turn_chars
    assert clean.content.endswith("…")
    assert words.startswith(clean.content[:-1])
    assert words[len(clean.content) - 1] == " "  # the cut fell on a space
    assert len(clean.content) > CFG.max_turn_chars * 0.8


def test_cap_cuts_one_long_word_where_it_stands() -> None:
    clean = sanitize_turn(_turn("x" * 1000), CFG)
    assert clean is not None and clean.content == "x" * (CFG.max_turn_chars - 1) + "…"


def test_a_secret_across_the_cap_is_not_half_kept() -> None:
    filler = "a" * (CFG.max_turn_chars - 20)
    clean = sanitize_turn(_turn(f"{filler} {OPENAI_PROJECT} tail"), CFG)
    assert clean is not None
    for start in range(0, len(OPENAI_PROJECT) - 8):
        assert OPENAI_PROJECT[start : start + 8] not in clean.content


def test_multi_megabyte_turn_is_quick_and_capped() -> None:
    huge = ("I prefer dark roast. " + "password: x9y8z7 " + "a-b_c.d " * 200) * 3000
    started = time.perf_counter()
    clean = sanitize_turn(_turn(huge), SanitizeConfig())
    assert time.perf_counter() - started < 2
    assert clean is not None and len(clean.content) <= SanitizeConfig().max_turn_chars
    assert "x9y8z7" not in clean.content


@FUZZ
@given(st.text(max_size=400))
def test_sanitize_never_raises_and_respects_the_cap(text: str) -> None:
    clean = sanitize_turn(_turn(text), CFG)
    if clean is not None:
        assert clean.content.strip() and len(clean.content) <= CFG.max_turn_chars
        assert "\x00" not in clean.content
