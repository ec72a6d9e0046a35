"""Contract: per-job log records, bounded per job with one truncation marker."""

from __future__ import annotations

import pytest

from conveyor.backends.base import (
    Backend,
    IntegrityCheckParams,
    JobInsertParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
)
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_logs(backend: Backend) -> None:
    needs(backend, "logs")


def rec(job: str, n: int) -> JobLogRecord:
    return JobLogRecord(job, 1, 1000.0 + n, "INFO", "t", f"m{n}")


def test_bounded_with_one_marker(backend: Backend) -> None:
    backend.job_insert_many(
        [JobInsertParams(id=i, task="t", queue="q", payload="{}") for i in ("a", "b")]
    )
    assert backend.job_log_insert_many(JobLogInsertParams([rec("a", 0), rec("b", 0)], 3)) == 2
    assert (
        backend.job_log_insert_many(JobLogInsertParams([rec("a", n) for n in range(1, 6)], 3)) == 2
    )
    assert backend.job_log_insert_many(JobLogInsertParams([rec("a", 9)], 3)) == 0
    logs = backend.job_log_list(JobLogListParams("a"))
    assert [r.message for r in logs[:3]] == ["m0", "m1", "m2"]
    assert len(logs) == 4 and "truncated" in logs[3].message and logs[3].level == "WARNING"
    assert [r.message for r in backend.job_log_list(JobLogListParams("b"))] == ["m0"]
    backend.job_delete_many(["a"])
    assert backend.job_log_list(JobLogListParams("a")) == []
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
