"""The producer side of an asyncio-only peer (pgqueuer, SAQ, streaq, taskiq): the arm
protocol is synchronous, so each call runs on one event loop the arm owns for the
producer's life. The loop is made in ``open``, before any timed window, as every arm
opens its connections there; each timed call then pays one ``run_until_complete``, the
same for every async peer (the oban arm does the same inline).

A client that must be entered and left in one task (streaq's ``Worker``: an anyio task
group and context variables) is held open by one long-lived session task, and every call
runs inside that task (:meth:`AsyncArm.start_loop` with ``session``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from bench.arms.base import Arm

T = TypeVar("T")
_Request = tuple[Coroutine[Any, Any, Any], "asyncio.Future[Any]"]


class AsyncArm(Arm):
    """An arm whose client API is ``async``: ``run`` drives one coroutine to completion.

    >>> from bench.arms.base import Variant
    >>> arm = AsyncArm(Variant("x", "x", "redis", "asyncio", 1, ""))
    >>> async def two() -> int:
    ...     return 2
    >>> arm.start_loop(); arm.run(two())
    2
    >>> arm.stop_loop()
    """

    loop: asyncio.AbstractEventLoop
    _session: asyncio.Task[None] | None = None
    _requests: asyncio.Queue[_Request | None]

    def start_loop(self, session: AbstractAsyncContextManager[Any] | None = None) -> None:
        """A fresh event loop; with ``session``, entered once here in the task that every
        later :meth:`run` call executes in (and that leaves it in :meth:`stop_loop`)."""
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        if session is not None:
            ready: asyncio.Future[None] = self.loop.create_future()
            self._session = self.loop.create_task(self._hold(session, ready))
            self.loop.run_until_complete(ready)

    async def _hold(
        self, session: AbstractAsyncContextManager[Any], ready: asyncio.Future[None]
    ) -> None:
        self._requests = asyncio.Queue()
        async with session:
            ready.set_result(None)
            while (request := await self._requests.get()) is not None:
                coro, result = request
                try:
                    result.set_result(await coro)
                except Exception as exc:
                    result.set_exception(exc)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._session is None:
            return self.loop.run_until_complete(coro)
        result: asyncio.Future[T] = self.loop.create_future()
        self._requests.put_nowait((coro, result))
        return self.loop.run_until_complete(result)

    def stop_loop(self) -> None:
        if self._session is not None:
            self._requests.put_nowait(None)
            self.loop.run_until_complete(self._session)
        self.loop.close()
