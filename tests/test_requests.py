"""Requests for work now are told apart from statements."""

from __future__ import annotations

import pytest

from engram_md.text.requests import is_request


@pytest.mark.parametrize(
    "sentence",
    [
        "start phoenix in background",
        "continue",
        "Run the tests again.",
        "ok now fix the import in auth.py",
        "Please rename the module.",
        "can you push it?",
        "Let's refactor the parser.",
        "go ahead and deploy",
        '"Revert that"',
    ],
)
def test_requests(sentence: str) -> None:
    assert is_request(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "always run the tests with -x",
        "we deploy with fly, not heroku",
        "The build is red.",
        "My manager is Ruth.",
        "did you push?",
        "Testing is slow here.",
        "Startups are hard.",
        "",
    ],
)
def test_statements_are_not_requests(sentence: str) -> None:
    assert not is_request(sentence)
