"""Executor pools behind one protocol: thread and async now; process and interpreter
pools plug in here (see ``base.Executor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.executors.base import Executor

POOLS = ("thread", "async")


def make_executor(pool: str, app: App, concurrency: int) -> Executor:
    """The executor for a ``--pool`` name."""
    if pool == "thread":
        from conveyor.worker.executors.thread import ThreadExecutor

        return ThreadExecutor(app, concurrency)
    if pool == "async":
        from conveyor.worker.executors.async_ import AsyncExecutor

        return AsyncExecutor(app)
    raise ConfigurationError(f"unknown pool {pool!r}; choose one of {', '.join(POOLS)}")
