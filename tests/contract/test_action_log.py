"""Contract: the operator actions log (feature ``action_log``): entries kept whole,
listed newest first, paged by id, and apart from the jobs (the integrity check and job
deletes leave it alone)."""

from __future__ import annotations

import pytest

from conveyor.backends.base import (
    ActionLogListParams,
    Backend,
    IntegrityCheckParams,
    JobInsertParams,
    action_log_entry,
)
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_action_log(backend: Backend) -> None:
    needs(backend, "action_log")


def test_an_entry_comes_back_whole(backend: Backend) -> None:
    assert backend.action_log_list(ActionLogListParams()) == []
    entry = action_log_entry(
        "ada",
        "dashboard",
        "retry",
        count=2,
        job_ids=["01J-a", "01J-b"],
        detail="state = dead, task = billing.charge; 2 of 3 matching",
        host="192.0.2.7",
        at=1_733_568_000.25,
    )
    entry_id = backend.action_log_insert(entry)
    [got] = backend.action_log_list(ActionLogListParams())
    assert got.id == entry_id
    assert (got.at, got.actor, got.source, got.action, got.count) == (
        1_733_568_000.25,
        "ada",
        "dashboard",
        "retry",
        2,
    )
    assert got.job_ids == ("01J-a", "01J-b")
    assert got.detail == "state = dead, task = billing.charge; 2 of 3 matching"
    assert got.host == "192.0.2.7"


def test_text_of_any_kind_round_trips(backend: Backend) -> None:
    odd = "zoë «quoted» \"x\" 'y' ; DROP TABLE jobs; -- 日本"
    backend.action_log_insert(action_log_entry(odd, "cli", "queue_pause", detail=odd))
    [got] = backend.action_log_list(ActionLogListParams())
    assert got.actor == odd and got.detail == odd and got.job_ids == () and got.count == 0


def test_newest_first_with_a_limit_and_pages_by_id(backend: Backend) -> None:
    ids = [
        backend.action_log_insert(action_log_entry("ops", "cli", "cancel", count=n, at=1000.0 + n))
        for n in range(7)
    ]
    assert len(set(ids)) == 7
    first = backend.action_log_list(ActionLogListParams(limit=3))
    assert [e.count for e in first] == [6, 5, 4]
    assert [e.id for e in first] == ids[6:3:-1]
    second = backend.action_log_list(ActionLogListParams(limit=3, before_id=first[-1].id))
    assert [e.count for e in second] == [3, 2, 1]
    last = backend.action_log_list(ActionLogListParams(limit=3, before_id=second[-1].id))
    assert [e.count for e in last] == [0]
    assert backend.action_log_list(ActionLogListParams(before_id=last[-1].id)) == []
    assert backend.action_log_list(ActionLogListParams(limit=0)) == []


def test_an_id_the_store_never_made_lists_nothing(backend: Backend) -> None:
    backend.action_log_insert(action_log_entry("ops", "cli", "purge", count=1))
    assert backend.action_log_list(ActionLogListParams(before_id="not-an-id")) == []


def test_the_log_is_apart_from_the_jobs(backend: Backend) -> None:
    backend.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    backend.action_log_insert(action_log_entry("ops", "cli", "delete", count=1, job_ids=["j1"]))
    assert backend.job_delete_many(["j1"]) == 1
    [got] = backend.action_log_list(ActionLogListParams())
    assert got.job_ids == ("j1",)  # the record outlives the job it names
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
