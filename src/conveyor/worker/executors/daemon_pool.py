"""A fixed pool of daemon threads that run sync callables for an event loop.

``asyncio.to_thread`` uses the loop's default ``ThreadPoolExecutor``, whose threads are
joined when the interpreter exits: a sync task that ignores cancellation would keep a
stopped worker process alive forever. These threads are daemons, so after a graceful
stop has released the job the process exits whatever the task is doing. Threads are
started once (no thread per job) and share one queue.

Example:
    >>> import asyncio
    >>> pool = DaemonThreadPool(2)
    >>> asyncio.run(pool.run(sum, [1, 2, 3]))
    6
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

_Item = tuple[
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
    asyncio.Future[Any],
    asyncio.AbstractEventLoop,
]


class DaemonThreadPool:
    """Runs sync callables on ``size`` daemon threads, awaitable from a loop."""

    def __init__(self, size: int) -> None:
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        for n in range(size):
            threading.Thread(
                target=self._work, name=f"conveyor-async-sync-{n}", daemon=True
            ).start()

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in a pool thread with the caller's context; await its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put((contextvars.copy_context(), fn, args, kwargs, future, loop))
        return await future

    def _work(self) -> None:
        while True:
            ctx, fn, args, kwargs, future, loop = self._queue.get()
            try:
                value = ctx.run(fn, *args, **kwargs)
            except BaseException as exc:  # handed to the awaiting task, as to_thread does
                loop.call_soon_threadsafe(_settle, future, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, future, value, None)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
