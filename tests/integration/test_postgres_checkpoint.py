"""PostgreSQL writes a durable step's checkpoint in one pipelined round trip, committed
by the pipeline's Sync (``_ops_sent``), not in a BEGIN ... COMMIT transaction
(``_tx``: three round trips); still fenced by the claim token, each checkpoint of a
group alone. The contract suite covers what every store shares."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from conveyor.backends.base import STEP_SUCCEEDED, JobStepSaveParams, StepRecord
from conveyor.backends.postgres.backend import PostgresBackend
from tests.contract.helpers import claim, insert, register
from tests.support.postgres_server import drop_schema, with_schema


@pytest.fixture
def backend(postgres_url: str) -> Iterator[PostgresBackend]:
    schema = f"t_{uuid.uuid4().hex}"
    store = PostgresBackend(with_schema(postgres_url, schema))
    yield store
    store.close()
    drop_schema(postgres_url, schema)


def _save(job_id: str, pos: int, token: int) -> JobStepSaveParams:
    step = StepRecord(job_id, pos, "s", STEP_SUCCEEDED, f'"{pos}"', None, 1, 1.0, 2.0)
    return JobStepSaveParams(step, token)


def test_a_checkpoint_is_one_pipeline_not_a_begin_commit_transaction(
    backend: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(backend)
    insert(backend, 2)
    a, b = claim(backend)

    def no_tx() -> None:
        raise AssertionError("a checkpoint opened a BEGIN ... COMMIT transaction")

    monkeypatch.setattr(backend, "_tx", no_tx)
    assert backend.job_step_save(_save(a.id, 0, a.token))
    assert not backend.job_step_save(_save(a.id, 1, a.token + 1))  # fenced out
    group = [_save(b.id, 0, b.token), _save(a.id, 1, a.token + 1), _save(a.id, 1, a.token)]
    assert backend.job_step_save_many(group) == [True, False, True]
    monkeypatch.undo()
    assert [s.position for s in backend.job_step_list(a.id)] == [0, 1]
    assert [s.position for s in backend.job_step_list(b.id)] == [0]
