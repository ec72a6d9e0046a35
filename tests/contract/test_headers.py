"""Contract: a job's headers are stored as given and come back in every read a backend
has -- the claim (``ClaimedJob.headers``), ``job_get_many`` and ``job_list``
(``JobRecord.headers``), and the import of ``conveyor migrate`` -- for each insert path:
one plain job, a batch sharing its options (with headers per job, or none at all), a
job with flow fields, and a periodic slot's job."""

from __future__ import annotations

import json

import conveyor
from conveyor import records
from conveyor.backends.base import (
    Backend,
    IntegrityCheckParams,
    JobImport,
    JobImportParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobListParams,
    PeriodicFireParams,
)
from conveyor.ids import new_id
from conveyor.states import JobState
from tests.contract.helpers import claim
from tests.support.flow import needs

PAYLOAD = '{"args":[],"kwargs":{}}'
#: Non-ASCII text and JSON-looking values must come back byte for byte.
HEADERS = json.dumps({"traceparent": "00-abc-def-01", "tenant": "café ☕", "x": '{"a":1}'})


def test_headers_round_trip_through_insert_claim_and_reads(backend: Backend) -> None:
    plain, flow, bare = new_id(), new_id(), new_id()
    batch = [new_id(), new_id()]
    backend.job_insert_many(
        [
            JobInsertParams(id=plain, task="t", queue="q", payload=PAYLOAD, headers=HEADERS),
            JobInsertParams(id=bare, task="t", queue="q", payload=PAYLOAD),
        ]
    )
    backend.job_insert_many(
        [
            JobInsertParams(
                id=flow, task="t", queue="q", payload=PAYLOAD, unique_key="k", headers=HEADERS
            )
        ]
    )
    backend.job_insert_many(
        JobInsertBatchParams(
            task="t", queue="q", ids=batch, payloads=[PAYLOAD, PAYLOAD], headers=[HEADERS, None]
        )
    )
    unheaded = [new_id(), new_id()]  # a batch whose headers is None: no job has any
    backend.job_insert_many(
        JobInsertBatchParams(task="t", queue="q", ids=unheaded, payloads=[PAYLOAD, PAYLOAD])
    )
    expected = {plain: HEADERS, flow: HEADERS, bare: None, batch[0]: HEADERS, batch[1]: None}
    expected |= dict.fromkeys(unheaded, None)
    stored = {j.id: j.headers for j in backend.job_get_many(list(expected))}
    assert stored == expected
    listed = {j.id: j.headers for j in backend.job_list(JobListParams(limit=100))}
    assert listed == expected
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []  # a known field
    claimed = {j.id: j.headers for j in claim(backend, n=10)}
    assert claimed == expected


def test_periodic_slot_jobs_keep_their_headers(backend: Backend) -> None:
    needs(backend, "periodic")
    plain, flow = new_id(), new_id()
    jobs = [
        (10.0, JobInsertParams(id=plain, task="t", queue="q", payload=PAYLOAD, headers=HEADERS)),
        (
            20.0,
            JobInsertParams(
                id=flow, task="t", queue="q", payload=PAYLOAD, unique_key="s", headers=HEADERS
            ),
        ),
    ]
    assert backend.periodic_fire(PeriodicFireParams("s", "every 10s", jobs, 30.0)) == [10.0, 20.0]
    assert {j.id: j.headers for j in backend.job_get_many([plain, flow])} == {
        plain: HEADERS,
        flow: HEADERS,
    }
    assert {j.id: j.headers for j in claim(backend, n=10)} == {plain: HEADERS, flow: HEADERS}


def test_import_keeps_headers(backend: Backend) -> None:
    source_id = new_id()
    backend.job_insert_many(
        [JobInsertParams(id=source_id, task="t", queue="q", payload=PAYLOAD, headers=HEADERS)]
    )
    (source,) = backend.job_get_many([source_id])
    backend.job_delete_many([source_id])
    assert source.state is JobState.QUEUED
    copied = records.replace(source, id=new_id())  # as read from another store
    assert backend.job_import_many(JobImportParams([JobImport(copied)])) == [copied.id]
    (imported,) = backend.job_get_many([copied.id])
    assert imported.headers == HEADERS
    assert [j.headers for j in claim(backend)] == [HEADERS]


def test_headers_reach_the_task_through_a_worker(app: conveyor.App) -> None:
    @app.task(name="headers.echo")
    def echo() -> dict[str, str]:
        return dict(conveyor.current_job().headers)

    given = {"tenant": "café", "request_id": "r-1"}
    jobs = [
        echo.with_options(headers=given).enqueue(),  # a plain job
        *echo.with_options(headers=given).enqueue_many([(), ()]),  # the batch path
        echo.with_options(headers=given, unique_key="once").enqueue(),  # flow fields
        echo.enqueue(),  # none
    ]
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert [j.result(timeout=5) for j in jobs] == [given] * 4 + [{}]
    assert dict(jobs[0].headers) == given
