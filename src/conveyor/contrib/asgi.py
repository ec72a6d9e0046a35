"""Run an embedded worker with an ASGI app (FastAPI, Starlette), through its lifespan.

``lifespan(app, ...)`` is what ``FastAPI(lifespan=...)`` / ``Starlette(lifespan=...)``
take: at start-up it opens the store and starts a :class:`conveyor.Worker` with the
async pool on the server's own event loop (``async def`` tasks run there, beside the
endpoints); at shutdown it stops claiming, gives running jobs ``shutdown_timeout``
seconds to finish and releases the rest back to ``queued`` (not counted as an attempt),
as ``conveyor worker`` does on SIGTERM. Nothing is lost either way.

``inner=`` composes it with the application's own lifespan (the worker starts first and
stops last, and whatever the inner lifespan yields, such as Starlette's lifespan state,
is passed through). Inside a lifespan of your own, use :func:`embedded_worker`.

Endpoints enqueue with the asyncio twins, which never block the loop::

    job = await build_report.aenqueue(day)       # then return job.id
    result = await app.job(job_id).aresult(timeout=5)

Example::

    import conveyor
    import conveyor.contrib.asgi
    from fastapi import FastAPI

    app = conveyor.App("sqlite:///jobs.db")
    api = FastAPI(lifespan=conveyor.contrib.asgi.lifespan(app, concurrency=20))

Standard library only; it imports neither FastAPI nor Starlette.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.claim_size import Prefetch
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.contrib.asgi")

A = TypeVar("A")
#: A lifespan as Starlette and FastAPI take it: called with the ASGI app, gives an async
#: context manager (whose value, a mapping or None, is the lifespan state).
Lifespan = Callable[[A], AbstractAsyncContextManager[Any]]


@contextlib.asynccontextmanager
async def embedded_worker(
    app: App,
    *,
    queues: Sequence[str] | None = None,
    concurrency: int = 10,
    shutdown_timeout: float = 30.0,
    prefetch: Prefetch = "auto",
) -> AsyncIterator[Worker]:
    """Run a worker (async pool) on the running loop for the duration of the block.

    ``queues``: ``NAME`` or ``NAME:WEIGHT`` strings; default every queue the app's tasks
    declare, plus ``default`` (as ``conveyor worker``). On exit the worker drains: running
    jobs get ``shutdown_timeout`` seconds, then are released to ``queued``.

    Example::

        @contextlib.asynccontextmanager
        async def my_lifespan(api):
            async with embedded_worker(app, queues=["default"]) as worker:
                yield {"worker": worker}
    """
    from conveyor.worker.eventlog import default_queue_specs
    from conveyor.worker.worker import Worker

    # Built in a thread: creating the worker opens the store (a file, a connection), and
    # a store that cannot be opened fails the application's start-up, not a later job.
    worker = await asyncio.to_thread(
        Worker,
        app,
        queues=list(queues) if queues else default_queue_specs(app),
        concurrency=concurrency,
        pool="async",
        shutdown_timeout=shutdown_timeout,
        prefetch=prefetch,
    )
    running = asyncio.create_task(worker.arun(), name=f"conveyor-worker-{worker.id}")
    stopping = False

    def report_crash(task: asyncio.Task[None]) -> None:
        # While the application runs nobody awaits the task: say so at once. At shutdown
        # the ``await`` below re-raises it instead.
        if not stopping and not task.cancelled() and task.exception() is not None:
            log.error("the embedded conveyor worker stopped", exc_info=task.exception())

    running.add_done_callback(report_crash)
    try:
        yield worker
    finally:
        stopping = True
        worker.stop_soon()  # no more claims; drains as on SIGTERM
        await running


def lifespan(
    app: App,
    *,
    queues: Sequence[str] | None = None,
    concurrency: int = 10,
    shutdown_timeout: float = 30.0,
    prefetch: Prefetch = "auto",
    inner: Lifespan[Any] | None = None,
) -> Lifespan[Any]:
    """A lifespan for ``FastAPI(lifespan=...)`` / ``Starlette(lifespan=...)`` that runs an
    embedded worker of ``app`` (see :func:`embedded_worker` for the options) around the
    application's own lifespan ``inner``, if any.

    Example::

        api = FastAPI(lifespan=lifespan(app, queues=["mail:3", "default"], inner=db_pool))
    """

    @contextlib.asynccontextmanager
    async def run(asgi_app: Any) -> AsyncIterator[Any]:
        async with embedded_worker(
            app,
            queues=queues,
            concurrency=concurrency,
            shutdown_timeout=shutdown_timeout,
            prefetch=prefetch,
        ):
            if inner is None:
                yield None
            else:
                async with inner(asgi_app) as state:
                    yield state

    return run
