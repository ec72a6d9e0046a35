"""The store work of a claim over many queues (bench W7, issue 26): a worker consuming
10,000 tenant queues, 1,000 of them holding one job, claims 20 jobs at a time. The
claim walks the ring (conveyor.backends.queue_ring) in chunks, one statement or script
call each, so its store work is a handful of statements per claim whatever the number
of queues; the per-queue claim it replaced sent one statement (SQLite) or one key
(Redis) per queue, thousands per claim. Counted, not timed (tests/support/store_counts).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conveyor.backends.base import Backend, JobClaimParams
from conveyor.backends.queue_ring import QueueRing
from tests.contract.helpers import insert, register
from tests.support.backends import BACKEND_URLS
from tests.support.store_counts import StoreCounts

TENANTS, BUSY, SLOTS = 10_000, 1_000, 20


@pytest.fixture(params=["sqlite", "redis"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return BACKEND_URLS[request.param](request, tmp_path)


def test_a_claim_over_10000_queues_is_a_few_statements(backend: Backend) -> None:
    register(backend)
    for k in range(BUSY):
        insert(backend, 1, queue=f"t{k}")
    ring = QueueRing(f"t{k}" for k in range(TENANTS))
    counts = StoreCounts.attach(backend)
    claims, got = 0, 0
    while got < BUSY:
        claimed = backend.job_claim(JobClaimParams("w1", ring, SLOTS))
        claims += 1
        got += len(claimed)
        assert claimed and claims <= 2 * BUSY // SLOTS
    counts.detach()
    assert got == BUSY
    work = counts.counts.get("statements", 0) + counts.counts.get("round_trips", 0)
    # ~3 per claim here (begin, promote + ring chunk, commit; a round trip or two on
    # Redis); the per-queue claim took ~230 statements per claim at 1,000 queues.
    assert work / claims < 8, counts.counts
