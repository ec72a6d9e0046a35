"""Odd rows written around the API (a shell, a migration, a raw ``HSET``) never break a
reader, and ``conveyor check`` names the rows that can never move (issue 21).

Readers: ``worker_list`` (the rescuer's, ``conveyor status``'s and the dashboard's),
``queue_stats`` and ``queue_list`` (``status``, ``queues``, the dashboard, the metrics
gauges). The odd values are the ones each store can hold: SQLite's untyped columns hold
anything, PostgreSQL's typed ones only what fits (a non-JSON ``queues`` text, a NaN
time), a Redis hash any string.
"""

from __future__ import annotations

import math

import pytest

import conveyor
from conveyor.backends.base import Backend, IntegrityCheckParams
from conveyor.compose import chain, group, on_failure, then
from tests.contract.helpers import claim, insert, register
from tests.support.features import needs
from tests.support.odd_rows import (
    mariadb_row,
    periodic_row,
    postgres_row,
    redis_row,
    sqlite_row,
    worker_row,
)


@pytest.fixture(autouse=True)
def _rows_written_around_the_api(backend: Backend) -> None:
    """Every test here writes rows with another connection (SQL, a raw HSET)."""
    needs(backend, "shared")


def _row(url: str, **columns: object) -> str:
    if url.startswith("sqlite"):
        return sqlite_row(url, **columns)
    if url.startswith("postgres"):
        return postgres_row(url, **columns)
    if url.startswith("mariadb"):
        return mariadb_row(url, **columns)
    return redis_row(url, **{k: None if v is None else str(v) for k, v in columns.items()})


def _no_odd_times(url: str) -> None:
    """MariaDB's DOUBLE holds no NaN nor infinity, and strict mode refuses text: no time
    written around the API can be odd there (what the test reads cannot be written)."""
    if url.startswith("mariadb"):
        pytest.skip(
            "MariaDB's typed columns in strict mode hold no odd value (no NaN, inf or text)"
        )


def _kinds(backend: Backend) -> set[tuple[str, str | None]]:
    return {(p.kind, p.job_id) for p in backend.integrity_check(IntegrityCheckParams(30.0))}


def test_a_worker_row_whose_queues_is_not_json_is_listed_with_its_problem(
    backend: Backend, backend_url: str
) -> None:
    register(backend, "good")
    register(backend, "bad")
    worker_row(backend_url, "bad", queues="not json")
    found = {w.id: w for w in backend.worker_list()}
    assert set(found) == {"good", "bad"}
    assert found["good"].problems == () and found["good"].queues == ("q",)
    assert found["bad"].queues == ()
    assert found["bad"].problems == ("queues is not a JSON list of names ('not json')",)


def test_a_worker_row_with_an_odd_time_reads_as_zero_with_its_problem(
    backend: Backend, backend_url: str
) -> None:
    """SQLite stores text in a REAL column, a Redis hash any string; PostgreSQL's double
    precision holds NaN, which is no time either."""
    _no_odd_times(backend_url)
    odd = "NaN" if backend_url.startswith("postgres") else "soon"
    worker_row(backend_url, "odd", heartbeat_at=odd, queues='{"not": "a list"}')
    (w,) = backend.worker_list()
    assert w.heartbeat_at == 0.0 and w.queues == ()
    assert "queues is not a JSON list of names" in w.problems[0]
    assert w.problems[1].startswith("heartbeat_at is not a ")


def test_a_worker_row_odd_in_every_field_is_still_listed(
    backend: Backend, backend_url: str
) -> None:
    _no_odd_times(backend_url)
    if backend_url.startswith("postgres"):  # typed columns: only non-finite times fit
        odd = {"heartbeat_at": "Infinity", "started_at": "-Infinity", "last_fetch_at": "NaN"}
    else:
        odd = {"pid": "abc", "concurrency": "x", "running": "y", "started_at": "z",
               "last_fetch_at": "q", "pid_started": "r"}  # fmt: skip
    worker_row(backend_url, "odd", queues="[1, 2]", **odd)
    (w,) = backend.worker_list()
    assert len(w.problems) == 1 + len(odd), w.problems
    numbers = [w.pid, w.concurrency, w.running, w.started_at, w.heartbeat_at]
    assert all(isinstance(n, (int, float)) and math.isfinite(n) for n in numbers)
    assert w.last_fetch_at is None and w.queues == ()


def test_queue_counts_survive_an_odd_job_row(backend: Backend, backend_url: str) -> None:
    """A queued job whose run_at is no number: counted, and the oldest-ready age comes
    from the good row (or is None), never NaN or an error."""
    _no_odd_times(backend_url)
    insert(backend, 1, queue="q")
    _row(backend_url, queue="q", run_at="NaN" if backend_url.startswith("postgres") else "soon")
    (stats,) = [s for s in backend.queue_stats() if s.queue == "q"]
    assert stats.counts["queued"] == 2
    assert stats.oldest_ready_age is None or math.isfinite(stats.oldest_ready_age)
    (listed,) = [q for q in backend.queue_list() if q.queue == "q"]
    assert listed.counts["queued"] == 2
    # -inf: the oldest of all, an infinite age, which no JSON reader could parse
    pg = backend_url.startswith("postgres")
    _row(backend_url, queue="r", run_at="-Infinity" if pg else -math.inf)
    (r,) = [s for s in backend.queue_stats() if s.queue == "r"]
    assert r.counts == {"queued": 1} and r.oldest_ready_age is None


def test_a_periodic_row_with_odd_times_reads_as_never_fired(
    backend: Backend, backend_url: str
) -> None:
    """``conveyor status`` and the scheduler read it; the scheduler then fires from now
    and rewrites the row."""
    _no_odd_times(backend_url)
    if "periodic" not in backend.features:
        pytest.skip(f"backend {backend.name!r} does not implement 'periodic'")
    odd = "NaN" if backend_url.startswith("postgres") else "soon"
    periodic_row(backend_url, "nightly", last_slot=odd, last_fired_at=odd, next_slot=60.0)
    (p,) = backend.periodic_list()
    assert (p.name, p.spec, p.last_slot, p.last_fired_at, p.next_slot) == (
        "nightly", "* * * * *", None, None, 60.0,
    )  # fmt: skip


def test_check_names_a_queued_job_in_the_empty_queue(backend: Backend, backend_url: str) -> None:
    (good,) = insert(backend, 1, queue="q")
    odd = _row(backend_url, queue="")
    found = _kinds(backend)
    assert ("queued_without_queue", odd) in found
    assert not {p for p in found if p[1] == good}


def test_check_names_a_waiting_job_that_waits_on_fewer_than_no_parents(
    backend: Backend, backend_url: str
) -> None:
    odd = _row(backend_url, state="waiting", waiting_on=-1)
    found = _kinds(backend)
    assert ("waiting_on_negative", odd) in found
    assert ("waiting_without_parent", odd) in found  # nothing it waits on can end


def test_check_names_a_waiting_job_no_parent_of_which_can_still_finish(
    backend: Backend, backend_url: str
) -> None:
    odd = _row(backend_url, state="waiting", waiting_on=1)
    assert ("waiting_without_parent", odd) in _kinds(backend)


def test_check_leaves_a_job_waiting_on_a_live_parent_alone(
    app: conveyor.App, backend: Backend
) -> None:
    @app.task(name="t.step")
    def step(*results: object) -> None: ...

    parent = step.enqueue()
    child = step.with_options(depends_on=[parent]).enqueue()
    assert child.refresh().state.value == "waiting"
    # Every other way conveyor makes a waiting job is sound too: a chain, a group with
    # a callback, a then and an on_failure handler.
    chain(step.s(), step.s(), step.s()).enqueue()
    group(step.s(), step.s()).then(step.s()).enqueue()
    then(parent, step)
    on_failure(parent, step)
    assert _kinds(backend) == set()
    if backend.name == "redis":  # its parent forgets it: it would never hear of the end
        from conveyor.backends.redis.backend import RedisBackend

        raw = RedisBackend(app.url)
        try:
            raw.client.srem(raw.keys.base + "children:" + parent.id, child.id)
        finally:
            raw.close()
        assert _kinds(backend) == {("waiting_not_linked", child.id)}


def test_check_names_a_scheduled_job_whose_time_never_comes(
    backend: Backend, backend_url: str
) -> None:
    """PostgreSQL: run_at NaN (sorts after every number) or +Infinity; SQLite: text or
    +inf; Redis: the scheduled index's score +inf (the hash's run_at is not read)."""
    _no_odd_times(backend_url)
    if backend_url.startswith("redis"):
        odd = redis_row(backend_url, state="scheduled", run_at="inf")
        from conveyor.backends.redis.backend import RedisBackend

        raw = RedisBackend(backend_url)
        try:
            raw.client.zadd(raw.keys.scheduled, {odd: math.inf})
        finally:
            raw.close()
        never = [odd]
    elif backend_url.startswith("postgres"):
        never = [_row(backend_url, state="scheduled", run_at=v) for v in ("NaN", "Infinity")]
    else:
        never = [_row(backend_url, state="scheduled", run_at=v) for v in ("soon", math.inf)]
    insert(backend, 1, run_at=4e9)  # a real scheduled job, due in 2096: moves in time
    found = {p for p in _kinds(backend) if p[0] == "scheduled_never_due"}
    assert found == {("scheduled_never_due", i) for i in never}


def test_check_names_a_running_job_whose_lease_never_expires(
    backend: Backend, backend_url: str
) -> None:
    """Its worker is alive (no claim_without_live_worker), so only an expired lease
    could bring the job back if that worker does not know it; NULL or NaN never expires."""
    register(backend, "w1")
    odd: str | None = "NaN" if backend_url.startswith("postgres") else "never"
    if backend_url.startswith("mariadb"):
        odd = None  # a DOUBLE holds no NaN nor text: NULL is its lease that never expires
    stuck = _row(backend_url, state="running", worker_id="w1", token=1, lease_until=odd)
    if backend_url.startswith("redis"):  # in the in-flight set, as a claim puts it
        from conveyor.backends.redis.backend import RedisBackend

        raw = RedisBackend(backend_url)
        try:
            raw.client.sadd(raw.keys.inflight("w1"), stuck)
            raw.client.sadd(raw.keys.holders, "w1")
        finally:
            raw.close()
    insert(backend, 1)
    (claimed,) = claim(backend, 1, "w1")
    found = _kinds(backend)
    assert ("running_without_lease", stuck) in found
    assert not {p for p in found if p[1] == claimed.id}
