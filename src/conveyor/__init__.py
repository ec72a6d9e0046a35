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

from conveyor.app import App
from conveyor.classtask import ClassTask
from conveyor.compose import Chain, Group, Signature, chain, group
from conveyor.context import JobContext, current_job
from conveyor.errors import (
    BackendUnavailable,
    ConfigurationError,
    ConveyorError,
    DecodeError,
    EncodeError,
    JobCancelled,
    JobFailed,
    JobNotFound,
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
    "transaction",
]


def __getattr__(name: str) -> object:
    # The worker is imported lazily: `import conveyor` in a web app stays light.
    if name == "Worker":
        from conveyor.worker.worker import Worker

        return Worker
    raise AttributeError(f"module 'conveyor' has no attribute {name!r}")
