"""Personal data that identifies or charges a person: card numbers, national ids, IBANs.

Each number is found by its shape and kept only when its check digit is right (Luhn for cards
and Canadian SINs, the "elfproef" for Dutch BSNs, Verhoeff for Aadhaar, mod 97 for IBANs, the
letter of a Spanish DNI), so an order number, an IMEI or a phone number that shares the shape
is left alone. A shape that ordinary numbers also have (nine plain digits, twelve plain
digits) counts only after a word that names it ("BSN", "social security", "Aadhaar").

Phone numbers and e-mail addresses are not on the list: "Priya's number is …" is a memory
people want kept, and neither can charge or impersonate anyone on its own.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

_FLAGS = regex.VERSION1
# Digits glued to more digits (or to a hyphenated run) are part of a longer number.
_BEFORE = r"(?<![\w\-])"
_AFTER = r"(?![\w\-]*\d)(?!\w)"


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_ok(digits: str) -> bool:
    """A number a card network issues: its prefix, its length for that prefix, Luhn."""
    n, head2, head4 = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        plausible = n in (13, 16, 19)
    elif 51 <= head2 <= 55 or 2221 <= head4 <= 2720:
        plausible = n == 16
    elif head2 in (34, 37):
        plausible = n == 15
    elif head4 == 6011 or head2 == 65 or 644 <= int(digits[:3]) <= 649 or head2 == 62:
        plausible = 16 <= n <= 19
    elif 3528 <= head4 <= 3589:
        plausible = 16 <= n <= 19
    elif head2 in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        plausible = 14 <= n <= 19
    else:
        plausible = False
    return plausible and luhn_ok(digits)


def _bsn_ok(digits: str) -> bool:
    if len(digits) != 9 or digits[0] == "0":
        return False
    total = sum(int(d) * w for d, w in zip(digits[:8], range(9, 1, -1), strict=True))
    return (total - int(digits[8])) % 11 == 0


_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6), (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4), (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2), (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip


def _verhoeff_ok(digits: str) -> bool:
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _D[c][_P[i % 8][int(ch)]]
    return c == 0


def _iban_ok(text: str) -> bool:
    raw = text.replace(" ", "")
    if not 15 <= len(raw) <= 34:
        return False
    moved = raw[4:] + raw[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(text: str) -> bool:
    body = text.replace("-", "")
    head = body[:-1]
    if head[0] in "XYZ":  # a foreigner's NIE: the letter stands for a leading digit
        head = str("XYZ".index(head[0])) + head[1:]
    return _DNI_LETTERS[int(head) % 23] == body[-1]


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


# Words that name a national id, said just before it ("my SSN is", "BSN:", "her social is").
_NAMES = (
    r"(?:ssn|social(?:[ \t]+security)?(?:[ \t]+(?:number|no\.?|#))?|"
    r"bsn|burgerservicenummer|sofinummer|citizen[ \t]+service[ \t]+number|"
    r"social[ \t]+insurance(?:[ \t]+number)?|(?-i:SIN)|"
    r"aadhaar|aadhar|uidai|uid)"
)
_LEAD = r"\b" + _NAMES + r"(?:[ \t]+(?:number|no\.?|#))?[ \t]*(?:is|was|:|=|-|#)?[ \t]*"

# kind, pattern (the number is group "n"), the check its digits must pass
_RULES: list[tuple[str, regex.Pattern[str], Callable[[str], bool]]] = [
    (
        "card_number",
        regex.compile(
            _BEFORE + r"(?P<n>\d{4}(?P<s>[ \-]?)\d{4}(?P=s)\d{4}(?P=s)\d{1,4}(?:(?P=s)\d{1,3})?"
            r"|\d{4}(?P<t>[ \-]?)\d{6}(?P=t)\d{4,5})" + _AFTER,
            _FLAGS,
        ),
        lambda n: _card_ok(_digits(n)),
    ),
    (
        "national_id",  # US social security number, written in its groups
        regex.compile(
            _BEFORE
            + r"(?P<n>(?!000|666|9\d\d)\d{3}(?P<s>[ \-])(?!00)\d{2}(?P=s)(?!0000)\d{4})"
            + _AFTER,
            _FLAGS,
        ),
        lambda n: True,
    ),
    (
        "national_id",  # UK national insurance number
        regex.compile(
            r"\b(?P<n>(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
            r"[ \t]?\d{2}[ \t]?\d{2}[ \t]?\d{2}[ \t]?[A-D])\b",
            _FLAGS,
        ),
        lambda n: True,
    ),
    (
        "national_id",  # Spanish DNI / NIE: eight digits (or X/Y/Z and seven) and a letter
        regex.compile(r"\b(?P<n>(?:\d{8}|[XYZ]\d{7})-?[A-Z])\b", _FLAGS),
        _dni_ok,
    ),
    (
        "national_id",  # Aadhaar in its 4-4-4 groups
        regex.compile(_BEFORE + r"(?P<n>[2-9]\d{3}(?P<s>[ \-])\d{4}(?P=s)\d{4})" + _AFTER, _FLAGS),
        lambda n: _verhoeff_ok(_digits(n)),
    ),
    (
        "national_id",  # any of the above as plain digits, after its name
        regex.compile(
            _LEAD + r"(?P<n>\d[\d \-.]{7,16}\d)" + _AFTER,
            _FLAGS | regex.IGNORECASE,
        ),
        lambda n: _named_id_ok(_digits(n)),
    ),
    (
        "iban",
        regex.compile(
            r"\b(?P<n>[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b", _FLAGS
        ),
        _iban_ok,
    ),
]


def _named_id_ok(digits: str) -> bool:
    """Digits after an id's name: nine (SSN, BSN, SIN) or twelve (Aadhaar) with a valid
    check where the id has one; an SSN has none, so nine digits after its name are enough."""
    if len(digits) == 9:
        return True
    return len(digits) == 12 and _verhoeff_ok(digits)


def redact_personal(text: str, marker: Callable[[str], str]) -> tuple[str, int]:
    """Replace card numbers, national ids and IBANs with ``marker(kind)``; returns the text
    and how many were replaced."""
    hits = [0]
    for kind, pattern, check in _RULES:
        text = pattern.sub(_replacer(kind, check, marker, hits), text)
    return text, hits[0]


def _replacer(
    kind: str, check: Callable[[str], bool], marker: Callable[[str], str], hits: list[int]
) -> Callable[[regex.Match[str]], str]:
    """The replacement of a hit: the marker where the number passes its check (counted in
    ``hits``), else the hit itself."""

    def repl(m: regex.Match[str]) -> str:
        if not check(m.group("n")):
            return m.group()
        hits[0] += 1
        start, end = m.start("n") - m.start(), m.end("n") - m.start()
        whole = m.group()
        return whole[:start] + marker(kind) + whole[end:]

    return repl
