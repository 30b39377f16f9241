"""Requests for work now: what a person asks an assistant to do, as opposed to what they state.

"start phoenix in background", "run the tests again", "can you fix the import?" ask for an
action once; once done, nothing about them is worth remembering. What a person *states* —
"always run the tests with -x", "we deploy with fly" — is caught by the signal scan, which
runs first; this test only decides about the rest.

A request opens with a verb of work (after fillers such as "ok", "now", "please", "can you",
"let's"). The list holds the verbs people use to direct work on code and files; a sentence
that opens with any other word is not taken for a request, so a doubtful sentence stays.
"""

from __future__ import annotations

import regex

__all__ = ["is_request"]

_A = "['\u2019]"
_WORK_VERBS = (
    "add apply build bump change check clean clear close commit compile continue copy create "
    "debug delete deploy disable document drop edit enable explain export finish fix format "
    "generate grep implement import install kill launch lint load look merge migrate move open "
    "optimize patch print proceed publish pull push read rebase rebuild redo refactor reload "
    "remove rename reopen replace rerun reset restart restore resume retry revert review rewrite "
    "run save scaffold search setup show simplify split start stash stop switch test tidy undo "
    "uninstall update upgrade verify wire"
)
_REQUEST = regex.compile(
    r"\A[\s\"'“‘(]*(?:(?:ok(?:ay)?|now|then|so|and|also|next|first|pls|please|just"
    rf"|go\s+ahead\s+and|(?:can|could|would|will)\s+you|let{_A}?s)[\s,]+)*"
    r"(?:" + "|".join(_WORK_VERBS.split()) + r")\b",
    regex.IGNORECASE | regex.VERSION1,
)


def is_request(sentence: str) -> bool:
    """True when ``sentence`` asks for work to be done now ("start phoenix in background")."""
    return _REQUEST.match(sentence) is not None
