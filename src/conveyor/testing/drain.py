"""``drain(app)``: for tests against a real store, run its jobs until none is left to run.

A burst worker (the real one: claim, pool, finish, workflow release, all in the store)
runs every queue that has jobs or that one of the app's tasks uses, and stops once
nothing is ready or running. Jobs scheduled for later (delays, retry back-off) stay
scheduled: drain does not wait for them.

Example:
    >>> import conveyor, tempfile, os
    >>> app = conveyor.App(f"sqlite:///{tempfile.mkdtemp()}/jobs.db")
    >>> @app.task
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> job = add.enqueue(1, 2)
    >>> drain(app, timeout=10)
    >>> job.result()
    3
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conveyor.app import App


def queues_of(app: App) -> list[str]:
    """Every queue the app's tasks use or the store has jobs in, ``default`` included."""
    names = {"default", *(t.options.queue for t in app.tasks.values())}
    names.update(q.queue for q in app.backend.queue_list())
    return sorted(names)


def drain(app: App, timeout: float = 30.0, *, concurrency: int = 4) -> None:
    """Run a burst worker over ``app``'s store until nothing is ready or running.

    Raises ``TimeoutError`` (after stopping the worker) if it is still busy after
    ``timeout`` seconds.
    """
    from conveyor.worker.worker import Worker

    worker = Worker(
        app, queues=queues_of(app), concurrency=concurrency, burst=True, shutdown_timeout=5.0
    )
    worker.start()
    if not worker.join(timeout):
        worker.stop(10.0)
        raise TimeoutError(f"drain: jobs still ready or running after {timeout} s")
