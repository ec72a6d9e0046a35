"""conveyor: background jobs for Python. Embedded on SQLite by default, Redis to scale out.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> add(1, 2)
    3
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time, __getattr__ below
    from conveyor.app import App
    from conveyor.batch import Batch, BatchItem
    from conveyor.classtask import ClassTask
    from conveyor.compose import Chain, Group, Signature, chain, group
    from conveyor.context import JobContext, current_job
    from conveyor.durable import sleep, wait_for
    from conveyor.durable_children import join, spawn
    from conveyor.errors import (
        BackendUnavailable,
        ConfigurationError,
        ConveyorError,
        DecodeError,
        EncodeError,
        JobCancelled,
        JobFailed,
        JobNotFound,
        NonDeterministic,
        PayloadTooLarge,
        ResultNotStored,
        Snooze,
        StoreError,
        WorkerFailed,
    )
    from conveyor.job import Job
    from conveyor.middleware import Middleware
    from conveyor.retry import Backoff
    from conveyor.secrets import Secret, SecretKeyError
    from conveyor.states import JobState
    from conveyor.task import Args, Task
    from conveyor.transactions import transaction

__version__ = "0.1.0"

__all__ = [
    "App",
    "Args",
    "BackendUnavailable",
    "Backoff",
    "Batch",
    "BatchItem",
    "Chain",
    "ClassTask",
    "ConfigurationError",
    "ConveyorError",
    "DecodeError",
    "EncodeError",
    "Group",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobNotFound",
    "JobState",
    "Middleware",
    "NonDeterministic",
    "PayloadTooLarge",
    "ResultNotStored",
    "Secret",
    "SecretKeyError",
    "Signature",
    "Snooze",
    "StoreError",
    "Task",
    "WorkerFailed",
    "chain",
    "current_job",
    "group",
    "join",
    "sleep",
    "spawn",
    "transaction",
    "wait_for",
]


#: Public name -> the module defining it. Each is imported on first access (PEP 562), so
#: ``import conveyor`` costs nothing until a name is used, and a process loads only the
#: modules its path needs: an enqueue-only web app never imports the worker, workflows
#: (``compose``) or secrets (issue 16's cold start).
_LAZY = {
    "App": "conveyor.app",
    "Args": "conveyor.task",
    "BackendUnavailable": "conveyor.errors",
    "Backoff": "conveyor.retry",
    "Batch": "conveyor.batch",
    "BatchItem": "conveyor.batch",
    "Chain": "conveyor.compose",
    "ClassTask": "conveyor.classtask",
    "ConfigurationError": "conveyor.errors",
    "ConveyorError": "conveyor.errors",
    "DecodeError": "conveyor.errors",
    "EncodeError": "conveyor.errors",
    "Group": "conveyor.compose",
    "Job": "conveyor.job",
    "JobCancelled": "conveyor.errors",
    "JobContext": "conveyor.context",
    "JobFailed": "conveyor.errors",
    "JobNotFound": "conveyor.errors",
    "JobState": "conveyor.states",
    "NonDeterministic": "conveyor.errors",
    "Middleware": "conveyor.middleware",
    "PayloadTooLarge": "conveyor.errors",
    "ResultNotStored": "conveyor.errors",
    "Secret": "conveyor.secrets",
    "SecretKeyError": "conveyor.secrets",
    "Signature": "conveyor.compose",
    "Snooze": "conveyor.errors",
    "StoreError": "conveyor.errors",
    "Task": "conveyor.task",
    "WorkerFailed": "conveyor.errors",
    "chain": "conveyor.compose",
    "current_job": "conveyor.context",
    "group": "conveyor.compose",
    "join": "conveyor.durable_children",
    "spawn": "conveyor.durable_children",
    "sleep": "conveyor.durable",
    "wait_for": "conveyor.durable",
    "transaction": "conveyor.transactions",
    "Worker": "conveyor.worker.worker",
}


#: Submodules a bare ``import conveyor`` used to load as a side effect (before the names
#: became lazy): code that reached them as attributes (``conveyor.errors.JobFailed``
#: after only ``import conveyor``) still finds them, loaded on that first access.
_FORMERLY_EAGER = frozenset(
    {
        "aio", "app", "arity", "backends", "classtask", "codec", "compose", "context",
        "errors", "headers", "ids", "job", "limits", "middleware", "options", "records",
        "redaction", "retry", "rules", "secrets", "states", "task", "transaction_adapters",
        "transactions", "unique",
    }
)  # fmt: skip


def __getattr__(name: str) -> object:
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # the next access is a plain module attribute
        return value
    if name in _FORMERLY_EAGER:
        # Only that submodule: ``from conveyor import headers`` inside the package asks
        # here too (hasattr) before importing it, possibly halfway through another import.
        submodule = importlib.import_module(f"conveyor.{name}")
        if name == "backends":
            importlib.import_module("conveyor.backends.base")  # conveyor.backends.base.X
        return submodule
    raise AttributeError(f"module 'conveyor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
