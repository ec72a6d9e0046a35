"""Odd numeric fields through every transition after the claim (issue 12, "nothing jams
a worker"): a release, a finish, a lease extension and a rescue of a job whose row holds
empty, non-integer or float-looking counts must not fail half-way, must end the odd job
final (dead, the bad field named) or leave it be, and must leave its well-formed
batch-mates claimable.

Each case was reproduced on Redis before the fix: the release failed in ready_score
(``user_script:35: attempt to compare number with nil``) after moving the odd job, and
never released the good job after it; the rescue raised ``ValueError: invalid literal
for int() with base 10: '2.13e+16'`` at every pass. The rows are written with a raw HSET
or raw SQL (tests/support/odd_rows.py), the transitions called on the backend.

PostgreSQL's typed columns refuse these counts at the write, so no such row exists
there; what its columns can hold is a count at the limit of its type, where one more
failed the statement (every claim of the queue, every rescue pass). Its two tests are
at the end.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import ClaimedJob
from conveyor.backends.params import (
    JobClaimParams,
    JobCountParams,
    JobExtendLeasesParams,
    JobFilter,
    JobFinishParams,
    JobReleaseParams,
    JobRescueParams,
)
from conveyor.backends.postgres.sql import BIGINT_MAX, INT_MAX
from conveyor.rules import WORKER_LOST_REASON
from conveyor.states import FinishKind, JobState
from tests.integration.test_odd_rows import write
from tests.support.backends import BACKEND_URLS

#: Counts as a hand-written row may hold them. SQLite compares text above every number,
#: so an odd run_at there is never due: only the Redis row gets one.
ODD_COUNTS = {"attempt": "", "token": "2.13e+16", "rescues": "x", "max_attempts": "",
              "priority": "high"}  # fmt: skip
GONE = "worker-that-never-beat"


#: The stores whose columns hold any text (PostgreSQL: see its own tests below; MariaDB's
#: typed columns in strict mode refuse these counts at the write as PostgreSQL's do).
UNTYPED = sorted(set(BACKEND_URLS) - {"postgres", "mariadb"})


def _app(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> conveyor.App:
    store = BACKEND_URLS[backend](request, tmp_path)
    app = conveyor.App(store)

    @app.task(name="odd.task")
    def odd_task(x: int = 0) -> int:
        return x

    assert app.backend.features  # the schema exists before raw rows arrive
    request.addfinalizer(app.close)
    return app


@pytest.fixture(params=UNTYPED)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> conveyor.App:
    return _app(request, tmp_path, request.param)


@pytest.fixture
def pg_app(request: pytest.FixtureRequest, tmp_path: Path) -> conveyor.App:
    return _app(request, tmp_path, "postgres")


def odd_row(app: conveyor.App, **fields: Any) -> str:
    url = app.url
    extra = {"run_at": "abc"} if url.startswith("redis") and "run_at" not in fields else {}
    return write(url, **(ODD_COUNTS | extra | fields))


def edit(app: conveyor.App, job_id: str, **fields: str) -> None:
    """Change fields of a stored job around the API (as a shell would, while it runs)."""
    url = app.url
    if url.startswith("redis"):
        backend: Any = app.backend
        backend.client.hset(backend.keys.job(job_id), mapping=fields)
        return
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        sets = ", ".join(f"{name} = ?" for name in fields)
        db.execute(f"UPDATE jobs SET {sets} WHERE id = ?", [*fields.values(), job_id])
    db.close()


def claim(app: conveyor.App, worker: str = "w1") -> dict[str, ClaimedJob]:
    claimed = app.backend.job_claim(JobClaimParams(worker, [("default", 10)], 10))
    return {j.id: j for j in claimed}


def states(app: conveyor.App, *ids: str) -> dict[str, Any]:
    return {j.id: j for j in app.backend.job_get_many(list(ids))}


def test_release_of_an_odd_job_gives_its_batch_mates_back(app: conveyor.App) -> None:
    odd = odd_row(app)
    good = [app.tasks["odd.task"].enqueue(n).id for n in range(2)]
    held = claim(app)
    assert {odd, *good} <= set(held)
    refused = app.backend.job_release_many(
        JobReleaseParams("w1", [(j.id, j.token) for j in held.values()])
    )
    assert refused == []
    again = claim(app, "w2")  # released means back in the ready set, claimable
    assert set(good) <= set(again) and odd in again


def test_finish_of_a_job_edited_while_it_ran_writes_every_outcome(app: conveyor.App) -> None:
    odd = odd_row(app)
    good = app.tasks["odd.task"].enqueue(1).id
    held = claim(app)
    edit(app, odd, attempt="2.5", priority="x", rescues="")  # a shell, while it runs
    later = time.time() + 3600
    snooze = JobFinishParams(
        odd, held[odd].token, FinishKind.SNOOZE, "w1", held[odd].attempt, run_at=later
    )
    success = JobFinishParams(
        good, held[good].token, FinishKind.SUCCEEDED, "w1", held[good].attempt, result="1"
    )
    refused = app.backend.job_finish_many([snooze, success])
    assert refused == []
    found = states(app, odd, good)
    assert found[good].state is JobState.SUCCEEDED
    assert found[odd].state is JobState.SCHEDULED, found[odd]  # snoozed, not stuck running


def test_lease_extension_of_an_odd_lease_keeps_the_claim(app: conveyor.App) -> None:
    odd = odd_row(app, lease="soon")
    good = app.tasks["odd.task"].enqueue(1).id
    held = claim(app)
    assert held[odd].problem and "lease is not a number ('soon')" in held[odd].problem
    statuses = app.backend.job_extend_leases(
        JobExtendLeasesParams("w1", [(j, held[j].token) for j in (odd, good)])
    )
    assert [s.held for s in statuses] == [True, True]


def test_rescue_buries_an_odd_job_with_the_field_named_and_requeues_its_mate(
    app: conveyor.App,
) -> None:
    odd = odd_row(app)
    good = app.tasks["odd.task"].enqueue(1).id
    assert {odd, good} <= set(claim(app, GONE))
    moved = app.backend.job_rescue(JobRescueParams([GONE], time.time()))
    assert {(r.job_id, r.state) for r in moved} == {(odd, JobState.DEAD), (good, JobState.QUEUED)}
    found = states(app, odd, good)
    assert found[odd].state is JobState.DEAD
    assert "max_attempts is not a number ('')" in (found[odd].reason or ""), found[odd]
    assert good in claim(app, "w2")  # requeued means claimable


def test_rescue_of_a_float_looking_rescue_count_ends_it_worker_lost(app: conveyor.App) -> None:
    odd = write(app.url, rescues="2.13e+16", max_attempts=5)
    assert odd in claim(app, GONE)
    moved = app.backend.job_rescue(JobRescueParams([GONE], time.time()))
    assert [(r.job_id, r.state) for r in moved] == [(odd, JobState.DEAD)]
    assert states(app, odd)[odd].reason == WORKER_LOST_REASON


def test_claim_skips_a_ready_hash_without_a_queue_and_takes_its_mates(redis_url: str) -> None:
    # Redis only: SQLite's queue column is NOT NULL. The claim counted the job under its
    # queue after popping the ready set, so a hash without one failed it there and the
    # popped batch-mates were out of the ready set for good.
    app = conveyor.App(redis_url)

    @app.task(name="odd.task")
    def odd_task(x: int = 0) -> int:
        return x

    try:
        odd = write(redis_url, queue=None)  # listed in ready:default, no queue field
        good = [odd_task.enqueue(n).id for n in range(2)]
        assert set(claim(app)) == set(good)
        assert states(app, odd)[odd].state is JobState.QUEUED  # left be, never claimed
    finally:
        app.close()


def test_postgres_refuses_the_odd_counts_at_the_write(pg_app: conveyor.App) -> None:
    import psycopg

    for name, value in [*ODD_COUNTS.items(), ("lease", "soon"), ("run_at", "abc")]:
        with pytest.raises(psycopg.Error):
            write(pg_app.url, **{name: value})
    assert pg_app.backend.job_count(JobCountParams(JobFilter())) == 0  # nothing was written


def test_postgres_counts_at_their_columns_limit_end_dead_and_jam_nothing(
    pg_app: conveyor.App,
) -> None:
    # Before: "integer out of range" / "bigint out of range" failed every claim of the
    # queue (good jobs never ran) and every rescue pass.
    at_attempt = write(pg_app.url, attempt=INT_MAX)
    at_token = write(pg_app.url, token=BIGINT_MAX)
    good = pg_app.tasks["odd.task"].enqueue(1).id
    held = claim(pg_app)
    assert set(held) == {at_attempt, at_token, good}
    assert held[good].problem is None
    assert "attempt is at the limit of its column" in (held[at_attempt].problem or "")
    assert "token is at the limit of its column" in (held[at_token].problem or "")
    pg_app.backend.job_release_many(
        JobReleaseParams("w1", [(j.id, j.token) for j in held.values()])
    )
    worker = conveyor.Worker(pg_app, burst=True, concurrency=2)
    worker.run(install_signals=False)  # the worker ends each problem job dead, with it
    found = states(pg_app, at_attempt, at_token, good)
    assert found[good].state is JobState.SUCCEEDED
    for odd in (at_attempt, at_token):
        assert found[odd].state is JobState.DEAD, found[odd]
        assert "at the limit of its column" in (found[odd].reason or ""), found[odd]

    at_rescues = write(pg_app.url, rescues=INT_MAX, max_attempts=5)
    mate = pg_app.tasks["odd.task"].enqueue(2).id
    assert {at_rescues, mate} <= set(claim(pg_app, GONE))
    moved = pg_app.backend.job_rescue(JobRescueParams([GONE], time.time()))
    assert {(r.job_id, r.state) for r in moved} == {
        (at_rescues, JobState.DEAD),
        (mate, JobState.QUEUED),
    }
    reason = states(pg_app, at_rescues)[at_rescues].reason or ""
    assert "rescues is at the limit of its column" in reason
    assert mate in claim(pg_app, "w2")  # requeued means claimable
