"""Contract: a job's ``expires_at`` is stored and comes back in every read (the claim,
``job_get_many``, ``job_list``, the import of ``conveyor migrate``) for each insert path;
the ``expired`` finish kind ends a claimed job ``expired`` (attempt recorded, fenced by
its token) and cancels its workflow dependants as a dead parent does; the sweep ends
``queued``/``scheduled`` jobs past their expiry that nobody claimed; and a worker ends a
job claimed past its expiry without running it, while a job with time left runs.

Expiry instants are chosen far in the past or far in the future: no assertion depends
on how fast anything runs.
"""

from __future__ import annotations

import datetime
import time

import pytest

import conveyor
from conveyor import records
from conveyor.backends.base import (
    Backend,
    IntegrityCheckParams,
    JobExpireDueParams,
    JobFinishParams,
    JobImport,
    JobImportParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobListParams,
)
from conveyor.ids import new_id
from conveyor.options import OptionTypeError, OptionValueError
from conveyor.rules import EXPIRED_REASON, cancelled_reason
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, register

PAYLOAD = '{"args":[],"kwargs":{}}'
PAST = 1_000_000_000.0  # 2001: long expired
FUTURE = 4_000_000_000.0  # 2096: never reached by a test run


def _expired_finish(job_id: str, token: int, attempt: int) -> JobFinishParams:
    now = time.time()
    return JobFinishParams(
        id=job_id,
        token=token,
        kind=FinishKind.EXPIRED,
        worker_id="w1",
        attempt=attempt,
        reason=EXPIRED_REASON,
        started_at=now,
        finished_at=now,
    )


def test_expires_at_round_trips_through_insert_claim_and_reads(backend: Backend) -> None:
    plain, flow, bare = new_id(), new_id(), new_id()
    batch = [new_id(), new_id()]
    backend.job_insert_many(
        [
            JobInsertParams(id=plain, task="t", queue="q", payload=PAYLOAD, expires_at=FUTURE),
            JobInsertParams(id=bare, task="t", queue="q", payload=PAYLOAD),
        ]
    )
    backend.job_insert_many(
        [
            JobInsertParams(
                id=flow, task="t", queue="q", payload=PAYLOAD, unique_key="k", expires_at=PAST
            )
        ]
    )
    backend.job_insert_many(
        JobInsertBatchParams(
            task="t", queue="q", ids=batch, payloads=[PAYLOAD, PAYLOAD], expires_at=FUTURE + 0.5
        )
    )
    expected = {
        plain: FUTURE,
        flow: PAST,
        bare: None,
        batch[0]: FUTURE + 0.5,
        batch[1]: FUTURE + 0.5,
    }
    assert {j.id: j.expires_at for j in backend.job_get_many(list(expected))} == expected
    assert {j.id: j.expires_at for j in backend.job_list(JobListParams(limit=100))} == expected
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
    # The claim hands every row over, expired or not: the worker decides (rules.is_expired).
    assert {j.id: j.expires_at for j in claim(backend, n=10)} == expected


def test_batch_with_headers_and_expiry_keeps_both(backend: Backend) -> None:
    ids = [new_id(), new_id()]
    backend.job_insert_many(
        JobInsertBatchParams(
            task="t", queue="q", ids=ids, payloads=[PAYLOAD] * 2,
            headers=['{"a":"1"}', None], expires_at=FUTURE,
        )
    )  # fmt: skip
    got = {j.id: (j.headers, j.expires_at) for j in backend.job_get_many(ids)}
    assert got == {ids[0]: ('{"a":"1"}', FUTURE), ids[1]: (None, FUTURE)}


def test_expired_finish_ends_the_job_expired_with_its_attempt(backend: Backend) -> None:
    job_id = new_id()
    backend.job_insert_many(
        [JobInsertParams(id=job_id, task="t", queue="q", payload=PAYLOAD, expires_at=PAST)]
    )
    (job,) = claim(backend)
    assert backend.job_finish_many([_expired_finish(job.id, job.token, job.attempt)]) == []
    (row,) = backend.job_get_many([job_id])
    assert row.state is JobState.EXPIRED and row.state.is_finished
    assert row.reason == EXPIRED_REASON and row.result is None and row.finished_at is not None
    assert [a.outcome for a in backend.job_attempts(job_id)] == ["expired"]
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
    # Fenced: a second finish with the same token changes nothing and is refused.
    assert backend.job_finish_many([_expired_finish(job.id, job.token, job.attempt)]) == [job_id]
    # Counted and filtered like any finished state.
    (stats,) = [q for q in backend.queue_list() if q.queue == "q"]
    assert stats.counts.get("expired") == 1
    listed = backend.job_list(JobListParams(state=JobState.EXPIRED, limit=10))
    assert [j.id for j in listed] == [job_id]


def test_dependants_of_an_expired_parent_are_cancelled(backend: Backend) -> None:
    parent, child, handler = new_id(), new_id(), new_id()
    backend.job_insert_many(
        [
            JobInsertParams(id=parent, task="t", queue="q", payload=PAYLOAD, expires_at=PAST),
            JobInsertParams(id=child, task="t", queue="q", payload=PAYLOAD, depends_on=(parent,)),
            JobInsertParams(
                id=handler, task="t", queue="q", payload=PAYLOAD, depends_on=(parent,), pipe=3
            ),
        ]
    )
    (job,) = claim(backend)
    assert job.id == parent
    backend.job_finish_many([_expired_finish(job.id, job.token, job.attempt)])
    rows = {j.id: j for j in backend.job_get_many([child, handler])}
    assert rows[child].state is JobState.CANCELLED
    assert rows[child].reason == cancelled_reason(parent, "expired")
    # An on_failure handler is released: its parent failed (it never ran).
    assert rows[handler].state is JobState.QUEUED
    # A child added behind the expired parent starts cancelled.
    late = new_id()
    backend.job_insert_many(
        [JobInsertParams(id=late, task="t", queue="q", payload=PAYLOAD, depends_on=(parent,))]
    )
    (row,) = backend.job_get_many([late])
    assert row.state is JobState.CANCELLED and row.reason == cancelled_reason(parent, "expired")


def test_import_keeps_expires_at_and_the_expired_state(backend: Backend) -> None:
    queued, ended = new_id(), new_id()
    backend.job_insert_many(
        [JobInsertParams(id=ended, task="t", queue="q", payload=PAYLOAD, expires_at=PAST)]
    )
    (job,) = claim(backend)
    backend.job_finish_many([_expired_finish(job.id, job.token, job.attempt)])
    backend.job_insert_many(
        [JobInsertParams(id=queued, task="t", queue="q", payload=PAYLOAD, expires_at=FUTURE)]
    )
    sources = backend.job_get_many([ended, queued])
    backend.job_delete_many([ended, queued])
    copies = [records.replace(s, id=new_id()) for s in sources]  # as read from another store
    imported = backend.job_import_many(JobImportParams([JobImport(c) for c in copies]))
    assert sorted(imported) == sorted(c.id for c in copies)
    got = {j.id: (j.state, j.expires_at) for j in backend.job_get_many([c.id for c in copies])}
    assert sorted(got.values(), key=str) == sorted(
        [(JobState.EXPIRED, PAST), (JobState.QUEUED, FUTURE)], key=str
    )


def test_an_imported_unstarted_job_past_its_expiry_is_swept(backend: Backend) -> None:
    job_id = new_id()
    backend.job_insert_many(
        [JobInsertParams(id=job_id, task="t", queue="q", payload=PAYLOAD, expires_at=PAST)]
    )
    (source,) = backend.job_get_many([job_id])
    backend.job_delete_many([job_id])
    copy = records.replace(source, id=new_id())  # as read from another store
    assert backend.job_import_many(JobImportParams([JobImport(copy)])) == [copy.id]
    assert backend.job_expire_due(JobExpireDueParams(limit=10)) == 1
    (row,) = backend.job_get_many([copy.id])
    assert row.state is JobState.EXPIRED and claim(backend) == []


def test_worker_ends_a_job_claimed_past_its_expiry_without_running_it(app: conveyor.App) -> None:
    ran: list[str] = []

    @app.task(name="expires.mark")
    def mark(tag: str) -> str:
        ran.append(tag)
        return tag

    past = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)
    late = mark.with_options(expires=past).enqueue("late")
    late_batch = mark.with_options(expires=past).enqueue_many([("b1",), ("b2",)])
    late_flow = mark.with_options(expires=past, unique_key="u").enqueue("flow")
    in_time = mark.with_options(expires=datetime.timedelta(days=365)).enqueue("in time")
    never = mark.enqueue("no expiry")
    child = mark.with_options(depends_on=[late]).enqueue("child")
    conveyor.Worker(app, burst=True).run(install_signals=False)

    assert sorted(ran) == ["in time", "no expiry"]
    for job in (late, *late_batch, late_flow):
        record = job.refresh()
        assert record.state is JobState.EXPIRED and record.reason == EXPIRED_REASON
    assert in_time.result(timeout=5) == "in time" and never.result(timeout=5) == "no expiry"
    assert in_time.refresh().expires_at is not None
    assert never.refresh().expires_at is None
    assert child.refresh().state is JobState.CANCELLED


def test_task_default_expires_applies_to_each_enqueue(app: conveyor.App) -> None:
    @app.task(name="expires.default", expires=60)
    def noop() -> None:
        return None

    before = time.time()
    job = noop.enqueue()
    after = time.time()
    expires_at = job.refresh().expires_at
    assert expires_at is not None and before + 60 <= expires_at <= after + 60
    # with_options wins over the task's default; None keeps it.
    overridden = noop.with_options(expires=datetime.timedelta(hours=2)).enqueue()
    assert (overridden.refresh().expires_at or 0) >= before + 7200

    class Report(app.Task, name="expires.class", expires=30):  # type: ignore[misc,name-defined]
        def execute(self) -> None:
            return None

    assert Report.task.options.expires == 30


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, OptionValueError),
        (-1, OptionValueError),
        (float("nan"), OptionValueError),
        ("soon", OptionTypeError),
        (True, OptionTypeError),
        (datetime.datetime(2030, 1, 1), OptionValueError),  # naive: ambiguous
    ],
)
def test_bad_expires_is_refused_before_anything_is_stored(
    app: conveyor.App, value: object, error: type[Exception]
) -> None:
    @app.task(name="expires.refused")
    def noop() -> None:
        return None

    with pytest.raises(error, match="expires"):
        noop.with_options(expires=value).enqueue()  # type: ignore[arg-type]
    with pytest.raises(OptionTypeError, match="expires"):
        app.task(name="expires.instant", expires=datetime.datetime.now(datetime.UTC))(noop.fn)


def test_sweep_expires_unstarted_jobs_past_their_expiry(backend: Backend) -> None:
    queued, scheduled, waiting, fresh, running = (new_id() for _ in range(5))
    parent_of_waiting, child_of_queued = new_id(), new_id()
    backend.job_insert_many(
        [
            JobInsertParams(id=running, task="t", queue="r", payload=PAYLOAD, expires_at=PAST),
            JobInsertParams(id=queued, task="t", queue="q", payload=PAYLOAD, expires_at=PAST),
            JobInsertParams(
                id=scheduled, task="t", queue="q", payload=PAYLOAD, run_at=FUTURE, expires_at=PAST
            ),
            JobInsertParams(id=fresh, task="t", queue="q", payload=PAYLOAD, expires_at=FUTURE),
            JobInsertParams(id=parent_of_waiting, task="t", queue="q", payload=PAYLOAD),
            JobInsertParams(
                id=waiting, task="t", queue="q", payload=PAYLOAD,
                depends_on=(parent_of_waiting,), expires_at=PAST,
            ),
            JobInsertParams(
                id=child_of_queued, task="t", queue="q", payload=PAYLOAD, depends_on=(queued,)
            ),
        ]
    )  # fmt: skip
    register(backend)
    (claimed,) = claim(backend, queues=("r",))  # a running job is its worker's to end
    assert claimed.id == running
    assert backend.job_expire_due(JobExpireDueParams(limit=100)) == 3
    rows = {j.id: j for j in backend.job_get_many([queued, scheduled, waiting, fresh, running])}
    assert {i for i, r in rows.items() if r.state is JobState.EXPIRED} == {
        queued,
        scheduled,
        waiting,
    }
    assert all(rows[i].reason == EXPIRED_REASON for i in (queued, scheduled, waiting))
    assert rows[fresh].state is JobState.QUEUED and rows[running].state is JobState.RUNNING
    (child,) = backend.job_get_many([child_of_queued])
    assert child.state is JobState.CANCELLED
    assert child.reason == cancelled_reason(queued, "expired")
    # Nothing is left to claim from the expired ones; the parent of the waiting job ends
    # normally without touching it; a second sweep finds nothing.
    assert {j.id for j in claim(backend)} == {fresh, parent_of_waiting}
    assert backend.job_expire_due(JobExpireDueParams(limit=100)) == 0
    (stats,) = [q for q in backend.queue_list() if q.queue == "q"]
    assert stats.counts.get("expired") == 3 and not stats.counts.get("queued")
    assert not stats.counts.get("scheduled") and not stats.counts.get("waiting")
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []


def test_sweep_limit_bounds_one_call(backend: Backend) -> None:
    ids = [new_id() for _ in range(5)]
    backend.job_insert_many(
        JobInsertBatchParams(task="t", queue="q", ids=ids, payloads=[PAYLOAD] * 5, expires_at=PAST)
    )
    assert backend.job_expire_due(JobExpireDueParams(limit=2)) == 2
    assert backend.job_expire_due(JobExpireDueParams(limit=10)) == 3
    assert {j.state for j in backend.job_get_many(ids)} == {JobState.EXPIRED}
