"""What ``App(...)`` takes besides its URL: app-wide settings and task defaults.

:class:`AppSettings` holds the app-wide ones (payload bound, rescue, retention, log
capture...); every other keyword of ``App(...)`` is a task default, an option of
``@app.task`` (:data:`TASK_DEFAULTS`) that is not per task only (:data:`TASK_ONLY`).

Example:
    >>> AppSettings(max_rescues=5).max_rescues
    5
    >>> "queue" in TASK_DEFAULTS, "name" in TASK_DEFAULTS, "retention" in SETTINGS
    (True, False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from conveyor.codec import DEFAULT_MAX_PAYLOAD_BYTES
from conveyor.records import fields as record_fields
from conveyor.records import record
from conveyor.task_options import TaskOptions

#: per-task only (not App defaults): the name, which parameters are secret, batching
TASK_ONLY = {"name", "secret", "batch"}

#: the options of `@app.task` that `App(...)` takes as defaults for every task
TASK_DEFAULTS = {f.name for f in dataclasses.fields(TaskOptions)} - TASK_ONLY


@record  # a light frozen record: one dataclass fewer to create at import (issue 16)
class AppSettings:
    """App-wide settings (as opposed to per-task defaults)."""

    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    max_rescues: int = 3
    heartbeat_interval: float = 1.0
    heartbeat_ttl: float = 30.0
    rescue_interval: float = 2.0
    #: Finished jobs are kept this long (seconds), then pruned by the workers.
    retention: float = 7 * 86400.0
    #: How often each worker's pruner runs (seconds).
    prune_interval: float = 60.0
    #: Capture ``logging`` records emitted inside tasks and store them with the job.
    capture_logs: bool = True
    #: Lowest level captured ("DEBUG", "INFO", ...).
    log_level: str = "INFO"
    #: Records kept per job; the first one past it becomes a truncation marker.
    log_max_per_job: int = 1000
    #: On worker shutdown, seconds the log writer gets to drain its queue.
    log_drain_timeout: float = 2.0
    #: Check arguments against primitive annotations (int, float, str, bool, None and
    #: their list/dict/Optional/union forms) at enqueue; False turns it off.
    check_types: bool = True
    #: Queue name -> most jobs of it running at once, across every worker and host (a
    #: limit keyed "queue:<name>" on each job of the queue that has no limit of its own).
    queue_concurrency: Mapping[str, int] | None = None
    #: Queue name -> seconds: a ready job of the queue gains one priority for every that
    #: many seconds it waits (up to the highest priority), so low priority cannot starve.
    priority_aging: Mapping[str, float] | None = None


SETTINGS = set(record_fields(AppSettings))
