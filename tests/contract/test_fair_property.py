"""Fair queues, property-tested on every store: for random key mixes (how many keys,
how many jobs each, their weights, the order they were enqueued in), no key starves.

The bound is the round-robin promise (docs/flow.md, "Fair queues"): with a queue's
jobs enqueued before a worker takes them, job ``j`` (0-based) of a key of weight ``w``
has the place ``j / w`` in the round; a claim takes places in order, so it starts
after at most the jobs of every key whose place is not later than its own:
``sum over keys k of min(n_k, floor(j * w_k / w) + 1)``. For a key's first job that is
at most the number of keys: every key's first job starts within the first K jobs.

Redis orders its ready jobs by a score with millisecond resolution (FAIR_STEP is one
millisecond), so there the round is counted in whole steps: places in the same step
tie and go in enqueue order (steps counted from the clock's millisecond, not from the
round's start). A job then waits for at most the jobs whose place is less than one
step after its own, ``sum over keys of min(n_k, ceil((j / w + 1) * w_k))``: every
key's first job starts within the first ``sum over keys of min(n_k, ceil(w_k))``.
"""

from __future__ import annotations

import itertools
import math
import os
import random

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conveyor
from conveyor.backends.base import Backend
from tests.support.flow import drain, needs

#: few, fast examples in make test (CI profile: derandomized, tests/conftest.py)
SETTINGS = settings(
    max_examples=int(os.environ.get("CONVEYOR_FAIR_EXAMPLES", "4")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: weights whose places (j / w) are far apart next to a float's rounding of run_at
WEIGHTS = st.sampled_from([0.5, 1.0, 1.0, 2.0, 4.0])
MIXES = st.lists(st.tuples(st.integers(1, 12), WEIGHTS), min_size=1, max_size=6)


def bound(j: int, w: float, mix: list[tuple[int, float]], whole_steps: bool) -> int:
    """How many jobs can start up to and including job ``j`` of a key of weight ``w``
    (``whole_steps``: places compared in whole steps, as Redis's ready score does)."""
    if whole_steps:  # floor(t0 + j' / wk) <= floor(t0 + j / w) needs j' / wk < j / w + 1
        return sum(min(n, math.ceil((j / w + 1) * wk - 1e-9)) for n, wk in mix)
    return sum(min(n, math.floor(j * wk / w + 1e-9) + 1) for n, wk in mix)


@given(mix=MIXES, order=st.randoms(use_true_random=False))
@SETTINGS
def test_no_key_starves(
    app: conveyor.App, backend: Backend, mix: list[tuple[int, float]], order: random.Random
) -> None:
    needs(backend, "fair")
    queue = f"q{next(EXAMPLES)}"  # a fresh queue (and round) for each example
    weights = {f"k{i}": w for i, (_, w) in enumerate(mix)}
    started: list[tuple[str, int]] = []

    @app.task(
        name=f"fair_{queue}",
        queue=queue,
        fair_key=lambda key, n: key,
        fair_weights=weights,
        max_attempts=1,
    )
    def work(key: str, n: int) -> None:
        started.append((key, n))

    # Keys interleaved in a random order; each key's jobs stay in their own order.
    slots = [key for key, (n, _) in zip(weights, mix, strict=True) for _ in range(n)]
    order.shuffle(slots)
    counters = dict.fromkeys(weights, 0)
    for key in slots:
        work.enqueue(key, counters[key])
        counters[key] += 1
    drain(app, queues=[queue], concurrency=1, prefetch=0)  # one claim per job: the store's order
    assert len(started) == len(slots)
    whole = backend.name == "redis"
    for position, (key, j) in enumerate(started):
        assert position < bound(j, weights[key], mix, whole), (key, j, started)
    for key in weights:  # the bound: every key's first job within the first K
        assert started.index((key, 0)) < bound(0, 1.0, mix, whole), started


EXAMPLES = itertools.count()
