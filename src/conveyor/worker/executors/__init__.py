"""Executor pools behind one protocol (see ``base.Executor``): thread, async, process and
interpreter.

The process and interpreter pools import the app again in each child process or
subinterpreter, so they need its ``module:attr`` spec (``app_spec``; the CLI passes it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conveyor.errors import ConfigurationError
from conveyor.worker_options import POOLS as POOLS  # defined below the config files, which check it

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.executors.base import Executor


def make_executor(
    pool: str,
    app: App,
    concurrency: int,
    *,
    app_spec: str | None = None,
    max_jobs_per_child: int | None = None,
    max_memory_per_child: float | None = None,
) -> Executor:
    """The executor for a ``--pool`` name.

    ``max_jobs_per_child`` recycles a child process (or subinterpreter) after that many
    jobs; ``max_memory_per_child`` (MiB, process pool only) after a job that left the child
    above that resident size.
    """
    if pool == "thread":
        from conveyor.worker.executors.thread import ThreadExecutor

        return ThreadExecutor(app, concurrency)
    if pool == "async":
        from conveyor.worker.executors.async_ import AsyncExecutor

        return AsyncExecutor(app, concurrency=concurrency)
    if pool == "process":
        from conveyor.worker.executors.process import ProcessExecutor

        return ProcessExecutor(
            app,
            concurrency,
            app_spec=app_spec,
            max_jobs_per_child=max_jobs_per_child,
            max_memory_mib=max_memory_per_child,
        )
    if pool == "interpreter":
        from conveyor.worker.executors.interpreter import InterpreterExecutor

        if max_memory_per_child is not None:
            raise ConfigurationError(
                "--max-memory-per-child applies to --pool process only: subinterpreters "
                "share one process's memory"
            )
        return InterpreterExecutor(
            app, concurrency, app_spec=app_spec, max_jobs_per_child=max_jobs_per_child
        )
    raise ConfigurationError(f"unknown pool {pool!r}; choose one of {', '.join(POOLS)}")
