"""The worker's per-job hot path (issue 26): records built without a per-field
``object.__setattr__``, and a slot thread keeping the job it submits itself."""

from __future__ import annotations

import dataclasses
import pickle
import threading

import pytest

from conveyor.backends.base import ClaimedJob
from conveyor.records import record
from conveyor.worker.executors.slots import SlotThreads

ROW = ("j", "t", "q", "{}", 1, 3, 7, None, 30.0, 0.0, 0.0, 0, 0)


@record
class Point:
    x: int
    y: int = 0


class Tagged(Point):  # a subclass with a __dict__: another layout than the record's
    pass


def test_record_init_sets_every_field_and_stays_frozen() -> None:
    job = ClaimedJob(*ROW)
    assert type(job) is ClaimedJob
    assert (job.id, job.token, job.headers, job.problem) == ("j", 7, None, None)
    assert pickle.loads(pickle.dumps(job)) == job and hash(job) == hash(ClaimedJob(*ROW))
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.id = "k"  # type: ignore[misc]


def test_record_init_keeps_defaults_keywords_and_subclasses() -> None:
    assert Point(1) == Point(x=1, y=0) and Point(1, y=2).y == 2
    tagged = Tagged(3)
    assert type(tagged) is Tagged and (tagged.x, tagged.y) == (3, 0)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_a_job_submitted_by_a_slot_runs_next_in_that_slot() -> None:
    slots = SlotThreads("hot", 2)
    ran: list[tuple[str, str]] = []
    done = threading.Event()
    job_b = ClaimedJob("b", *ROW[1:])

    def body(n: int, ready: threading.Barrier, errors: list[BaseException]) -> None:
        ready.wait()
        while (item := slots.next()) is not None:
            job, _ctx = item
            ran.append((job.id, threading.current_thread().name))
            if job.id == "j":
                slots.submit(job_b, None)  # type: ignore[arg-type]  # its slot is free
            else:
                done.set()

    slots.start(body)
    slots.submit(ClaimedJob(*ROW), None)  # type: ignore[arg-type]
    assert done.wait(5)
    assert slots.stop(5) == 0
    assert [job for job, _ in ran] == ["j", "b"] and ran[0][1] == ran[1][1]
