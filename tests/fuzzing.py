"""The one hypothesis profile of the fuzz properties (tests/test_fuzz.py and its neighbours).

``ENGRAM_FUZZ_EXAMPLES`` sets the examples per property: 300 on a normal test run, 10 000 in
the soak's fuzz part (bench/soak.py). Derandomized and without a database, so every run with
the same count tries the same inputs and a failure reproduces.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "300"))

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)
