"""The worker's in-flight table (``worker/inflight.py``): the one record the fetch
strategies, the executor's callback, the heartbeat and the shutdown share. Pure state,
no store: each rule of its public API is checked directly."""

from __future__ import annotations

import doctest
import time

import conveyor
import conveyor.worker.inflight
from conveyor.backends.base import ClaimedJob, JobFinishParams
from conveyor.context import context_of
from conveyor.states import FinishKind
from conveyor.worker.attempts import CANCELLED_BEFORE_START, Attempts
from conveyor.worker.claim_size import ClaimAllowance
from conveyor.worker.inflight import Held, InFlight
from conveyor.worker.outcome import CANCELLED, EXPIRED, Outcome


def job(job_id: str, rescues: int = 0, token: int = 1) -> ClaimedJob:
    return ClaimedJob(job_id, "t", "q", "{}", 1, 3, token, None, 30.0, 0.0, 0.0, rescues, 0)


def held(*ids: str) -> list[Held]:
    return [Held(job(i), context_of(job(i))) for i in ids]


def test_doctests() -> None:
    assert doctest.testmod(conveyor.worker.inflight).failed == 0


def test_admit_starts_what_fits_the_free_slots_and_buffers_the_rest() -> None:
    table = InFlight()
    first = held("a", "b")
    table.hold(first)
    assert table.admit(first, 3) == first  # 2 of 3 slots: both start
    more = held("c", "d", "e")
    table.hold(more)
    assert [e.job.id for e in table.admit(more, 3)] == ["c"]  # one slot left
    assert [e.job.id for e in table.buffer] == ["d", "e"]
    assert len(table) == 5
    nxt = table.next_buffered()
    assert nxt is not None and nxt.job.id == "d" and nxt.started > 0.0  # starts now


def test_next_buffered_drops_lost_jobs_and_gives_nothing_when_stopping() -> None:
    table = InFlight()
    entries = held("a", "b", "c")
    table.hold(entries)
    table.wait_in_buffer(entries)
    assert table.mark_lost("a") and not table.mark_lost("zz")
    nxt = table.next_buffered()
    assert nxt is not None and nxt.job.id == "b"
    assert len(table) == 2  # the lost one is no longer held
    table.stop()
    assert table.next_buffered() is None
    assert [e.job.id for e in table.take_buffered()] == ["c"] and len(table) == 1


def test_a_released_job_ends_without_its_entry() -> None:
    table = InFlight()
    table.hold(held("a", "b"))
    table.stop_now()  # wait_empty returns at once
    leftovers = table.wait_empty(time.monotonic() + 5)
    assert sorted(e.job.id for e in leftovers) == ["a", "b"]
    assert table.held_claims() == []  # released: no lease extended any more
    assert table.finish(job("a")) is None  # its finish must not be written
    assert table.empty() is False and table.finish(job("b")) is None and table.empty()


def test_claims_pause_while_a_rescued_job_runs_alone() -> None:
    table = InFlight()
    batch = [job("a"), job("p", rescues=1), job("b")]
    assert [j.id for j in table.isolate(batch)] == ["p"]  # holding nothing: alone
    table.hold(held("p"))
    assert table.free_for_claim(10, 0, 1, backlog=False) == 0
    table.finish(job("p"))
    assert table.free_for_claim(10, 0, 1, backlog=False) == 10


def test_claims_pause_until_empty_when_a_rescued_job_comes_while_busy() -> None:
    table = InFlight()
    table.hold(held("x"))
    kept = table.isolate([job("a"), job("p", rescues=1)])
    assert [j.id for j in kept] == ["a"]  # the rescued one goes back
    assert table.free_for_claim(10, 0, 1, backlog=False) == 0  # draining
    table.finish(job("x"))
    assert table.free_for_claim(10, 0, 1, backlog=False) == 10


def test_no_claim_while_finishes_back_up_or_the_buffer_is_still_full() -> None:
    table = InFlight()
    assert table.free_for_claim(4, 0, 1, backlog=True) == 0
    entries = held("a", "b", "c", "d", "e", "f")
    table.hold(entries)
    table.admit(entries, 2)  # both slots busy, 4 buffered
    # an allowance of 6: the buffer is refilled once at most 3 (half) wait in it
    assert table.free_for_claim(2 + 6, 6, 1, backlog=False) == 0
    assert table.free_for_claim(16, 14, 1, backlog=False) == 10


class Collected:
    """A completion strategy that keeps the finishes it is given (nothing is written)."""

    def __init__(self) -> None:
        self.finishes: list[JobFinishParams] = []

    def put(self, params: JobFinishParams) -> None:
        self.finishes.append(params)


def attempts_on(table: InFlight) -> tuple[Attempts, Collected]:
    completion = Collected()
    app = conveyor.App("sqlite:///:memory:")
    return Attempts(app, "w1", table, ClaimAllowance(0, 1), completion, []), completion


def test_refusal_ends_a_cancelled_or_expired_job_before_it_starts() -> None:
    attempts, _ = attempts_on(InFlight())
    (entry,) = attempts.claimed([job("a")])
    assert attempts.refusal(entry) is None
    entry.ctx.request_cancel()
    refused = attempts.refusal(entry)
    assert refused is not None and refused.status == CANCELLED
    assert refused.reason == CANCELLED_BEFORE_START
    late = ClaimedJob("b", "t", "q", "{}", 1, 3, 1, None, 30.0, 0.0, 0.0, 0, 0, expires_at=1.0)
    (expired,) = attempts.claimed([late])
    refused = attempts.refusal(expired)
    assert refused is not None and refused.status == EXPIRED


def test_end_hands_the_finish_on_unless_the_job_was_released() -> None:
    table = InFlight()
    attempts, completion = attempts_on(table)
    attempts.claimed([job("a"), job("b")])
    assert attempts.end(job("a"), Outcome.ok("1"))
    assert [(f.id, f.kind) for f in completion.finishes] == [("a", FinishKind.SUCCEEDED)]
    table.stop_now()
    assert [e.job.id for e in table.wait_empty(time.monotonic() + 5)] == ["b"]
    assert not attempts.end(job("b"), Outcome.ok("2"))  # released at shutdown
    assert len(completion.finishes) == 1 and next(attempts.processed) == 1


def test_burst_sees_an_ended_attempt_until_its_finish_is_handed_on() -> None:
    table = InFlight()
    table.hold(held("a"))
    entry = table.finish(job("a"))
    assert entry is not None and len(table) == 0
    assert table.empty() is False  # stopping now would lose the finish
    table.handed_on()
    assert table.empty()


def test_a_stale_attempt_of_a_job_claimed_again_leaves_the_new_claim_held() -> None:
    table = InFlight()
    table.hold(held("a"))  # token 1
    # released under the running attempt, then claimed here again with a newer token
    again = job("a", token=2)
    table.hold([Held(again, context_of(again))])
    assert table.finish(job("a", token=1)) is None  # the stale attempt writes nothing
    assert table.held_claims() == [("a", 2)]  # the new attempt keeps its lease
    entry = table.finish(again)
    assert entry is not None and entry.job.token == 2
    table.handed_on()
    assert table.empty()
