"""A burst worker on a store whose claim skips locked rows (``SKIP LOCKED``: MariaDB,
PostgreSQL) does not stop while a ready job's row is held for a moment by another
transaction: the claim passes over it, but before stopping the worker reads (without
locking) whether a job is still ready, and claims again.

Found as a flake: about 1 MariaDB burst in 24 under load stopped with a committed job
still ``queued``. Here the other transaction is made on purpose (a ``FOR UPDATE`` on the
job's row, held until 0.15 s after the worker registered, when it claims), so the test
fails every time without the re-check.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import conveyor
from conveyor import JobState, Worker
from conveyor.backends.base import QueuePauseParams
from tests.support.backends import BACKEND_URLS

#: How long the other transaction holds the ready job's row once the worker is up.
HOLD = 0.15


def _hold_row(app: conveyor.App, job_id: str, held: threading.Event) -> None:
    """Lock ``job_id``'s row in a transaction of the store's own until HOLD seconds
    after the worker registered (it claims right after: its first claims miss the row).
    The lock is taken through a second app: its connection is not the one the worker
    list is read through (a read in the same thread would commit the lock away)."""
    locker = conveyor.App(app.url)
    try:
        _hold_row_through(locker, app, job_id, held)
    finally:
        locker.close()


def _hold_row_through(
    locker: conveyor.App, app: conveyor.App, job_id: str, held: threading.Event
) -> None:
    with locker.backend._tx() as ex:  # type: ignore[attr-defined]
        ex.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", (job_id,))
        held.set()
        deadline = time.monotonic() + 10
        while not app.backend.worker_list() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(HOLD)


#: MariaDB's fetch is pooled at any size; PostgreSQL's one slot fetches inline.
@pytest.mark.parametrize(
    ("store", "concurrency"), [("mariadb", 4), ("postgres", 1), ("postgres", 4)]
)
def test_burst_claims_a_row_held_a_moment(
    store: str, concurrency: int, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    app = conveyor.App(BACKEND_URLS[store](request, tmp_path))
    try:

        @app.task
        def noop() -> None: ...

        job = noop.enqueue()
        held = threading.Event()
        holder = threading.Thread(target=_hold_row, args=(app, job.id, held))
        holder.start()
        assert held.wait(10)
        started = time.monotonic()
        Worker(app, concurrency=concurrency, burst=True).run(install_signals=False)
        holder.join()
        assert job.refresh().state is JobState.SUCCEEDED
        assert time.monotonic() - started < 5
    finally:
        app.close()


def test_burst_does_not_wait_on_a_paused_queue(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A ready job in a paused queue is no reason to claim again: the burst stops at
    once (the re-check reads the pause flag too)."""
    app = conveyor.App(BACKEND_URLS["mariadb"](request, tmp_path))
    try:

        @app.task
        def noop() -> None: ...

        job = noop.enqueue()
        app.backend.queue_pause(QueuePauseParams("default"))
        started = time.monotonic()
        Worker(app, concurrency=2, burst=True).run(install_signals=False)
        assert time.monotonic() - started < 2
        assert job.refresh().state is JobState.QUEUED
    finally:
        app.close()
