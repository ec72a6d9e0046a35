"""A task's options (``@app.task(...)``) and their resolution for one enqueue.

:class:`TaskOptions` is what ``@app.task`` records, checked when the task is defined;
:class:`Resolved` is those options with one ``with_options(...)``'s overrides laid over
them, resolved once per enqueuer: everything a job needs but its arguments and its id.

Example:
    >>> opts = TaskOptions("send", queue="mail")
    >>> r = Resolved(opts, {"priority": 5})
    >>> (r.queue, r.priority, r.plain, r.run_at())
    ('mail', 5, True, None)
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from conveyor import fair, limits, options, sequences, unique
from conveyor.fair import FairKey, FairWeights
from conveyor.limits import LimitKey
from conveyor.retry import Backoff, RetryDelayHook
from conveyor.sequences import SequenceKey
from conveyor.unique import UniqueKey

if TYPE_CHECKING:
    from conveyor.batch import Batch

Delay = float | int | datetime.timedelta
When = datetime.datetime | float | int


@dataclasses.dataclass(frozen=True, slots=True)
class TaskOptions:
    """Options of a task; every job copies queue, priority, attempts, timeout and lease."""

    name: str
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 5
    timeout: float | None = None
    retry: Backoff = dataclasses.field(default_factory=Backoff)
    retry_delay: RetryDelayHook | None = None
    lease: float = 30.0
    # -- flow control (see unique.py and limits.py) --
    unique_key: UniqueKey = None
    unique_for: unique.Seconds | None = None
    on_conflict: str = "keep"
    #: with unique_key: each enqueue replaces the waiting job (last arguments win) and
    #: starts it that long after (quiet period); max_wait caps it from the first enqueue
    debounce: unique.Seconds | None = None
    max_wait: unique.Seconds | None = None
    #: with unique_key: at most one job per key per period (later enqueues return it)
    throttle: unique.Seconds | None = None
    concurrency: int | None = None
    rate: str | None = None
    limit_key: LimitKey = None
    #: jobs of one key run one at a time in enqueue order (sequences.py); what a failed
    #: one does to the rest: "block" (held, releasable) or "skip" (None: "block")
    sequence_key: SequenceKey = None
    on_failure: str | None = None
    #: a queue's ready jobs are served round-robin across these keys (fair.py), with
    #: more turns for a key of greater weight
    fair_key: FairKey = None
    fair_weights: FairWeights = None
    #: parameters encrypted at rest (plus those annotated ``conveyor.Secret[...]``)
    secret: tuple[str, ...] = ()
    # -- results (docs/tasks.md) --
    #: False: a job succeeds without its result being encoded or stored
    store_result: bool = True
    #: seconds a stored result is kept after the job finished (then cleared; the job's
    #: row stays until the app's ``retention``); None: as long as the job
    result_ttl: unique.Seconds | None = None
    #: seconds (or a timedelta) after each enqueue by which a job must have started;
    #: one not started by then ends ``expired``, never run. None: never expires.
    expires: unique.Seconds | None = None
    #: a batch handler: the body gets up to ``size`` jobs' arguments at once (batch.py)
    batch: Batch | None = None

    def __post_init__(self) -> None:
        # Types and ranges first (options.py), so the checks below compare numbers.
        options.check_options({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        if isinstance(self.expires, datetime.datetime):  # one instant for every job: no
            raise options.OptionTypeError(
                "a task's expires must be seconds or a timedelta (from each enqueue); give "
                "an aware datetime per job with with_options(expires=...)"
            )
        unique.check_options(self.on_conflict, self.unique_for)
        unique.check_timing(
            self.unique_key, self.debounce, self.max_wait, self.throttle, self.unique_for
        )
        limits.check_options(self.concurrency, self.rate)
        sequences.check_options(self.sequence_key, self.on_failure)
        fair.check_options(self.fair_key, self.fair_weights, self.sequence_key)
        if self.batch is not None:  # imported only then: the plain path stays lean
            from conveyor import batch as batching

            batching.check_options(
                self.batch, {"sequence_key": self.sequence_key, "secret": self.secret}
            )


def delay_seconds(delay: Delay) -> float:
    """``delay`` (seconds or a timedelta) as seconds, checked (zero allowed)."""
    return options.check_seconds("delay", delay, allow_zero=True)


def epoch_of(when: When) -> float:
    """``when`` (an aware datetime or epoch seconds) as finite epoch seconds."""
    if isinstance(when, datetime.datetime):
        if when.tzinfo is None:
            raise ValueError("schedule_at needs an aware datetime (with tzinfo) or epoch seconds")
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        seconds = float(when) if isinstance(when, float) or abs(when) < 2**53 else math.inf
        if not math.isfinite(seconds):
            raise options.OptionValueError(f"when must be finite epoch seconds, got {when!r}")
        return seconds
    raise TypeError(f"when must be an aware datetime or epoch seconds, got {type(when).__name__}")


class Resolved:
    """The options of one :class:`Enqueuer` resolved once (task options, then per-call
    overrides): everything a job needs except its arguments and its id."""

    __slots__ = (
        "at",
        "debounce",
        "delay",
        "depends_on",
        "expires",
        "headers",
        "keyed",
        "limit",
        "max_attempts",
        "max_wait",
        "on_conflict",
        "pipe",
        "plain",
        "priority",
        "queue",
        "queue_cap",
        "simple",
        "timeout",
        "unique_for",
        "unique_key",
    )

    def __init__(
        self, opts: TaskOptions, o: Mapping[str, Any], queue_caps: Mapping[str, int] | None = None
    ) -> None:
        self.queue: str = o.get("queue") or opts.queue
        self.priority: int = o.get("priority", opts.priority)
        self.max_attempts: int = o.get("max_attempts", opts.max_attempts)
        self.timeout: float | None = o.get("timeout", opts.timeout)
        self.at: When | None = o.get("at")
        self.delay: Delay | None = o.get("delay")
        self.unique_key: UniqueKey = o.get("unique_key", opts.unique_key)
        self.unique_for: unique.Seconds | None = o.get("unique_for", opts.unique_for)
        self.on_conflict: str = o.get("on_conflict", opts.on_conflict)
        #: debounce: replace, start after the quiet period, capped from the first enqueue
        self.debounce = None if opts.debounce is None else unique.seconds(opts.debounce)
        self.max_wait = None if opts.max_wait is None else unique.seconds(opts.max_wait)
        if self.debounce is not None:
            self.on_conflict = "replace"
        if opts.throttle is not None:
            self.unique_for, self.on_conflict = opts.throttle, "keep"
        depends_on = o.get("depends_on") or ()
        self.depends_on: tuple[str, ...] = tuple(getattr(d, "id", d) for d in depends_on)
        self.pipe: int = o.get("pipe", 0) if self.depends_on else 0
        #: checked by with_options; None: none given
        self.headers: dict[str, str] | None = o.get("headers")
        #: checked (options.check_expires); made an instant per enqueue by expires_at()
        self.expires: float | datetime.timedelta | datetime.datetime | None = o.get(
            "expires", opts.expires
        )
        #: the app's cap on this queue (App(queue_concurrency=...)), for jobs without a
        #: limit of their own
        self.queue_cap = limits.queue_limit(self.queue, queue_caps)
        self.limit = (
            opts.concurrency is not None or opts.rate is not None or self.queue_cap is not None
        )
        #: a sequence or a fair key: each job's key is found from its arguments
        self.keyed = opts.sequence_key is not None or opts.fair_key is not None
        #: no job can carry a unique key, parents, a limit, a sequence or a fair key: the
        #: batch fast path applies
        self.plain = (
            self.unique_key is None
            and not self.depends_on
            and not o.get("pipe")
            and not self.limit
            and not self.keyed
        )
        #: plain, ready now, no headers, never expires: a single enqueue needs nothing
        #: but its arguments and an id (``Enqueuer.enqueue``, when no hook applies)
        self.simple = (
            self.plain
            and not self.headers
            and self.at is None
            and self.delay is None
            and self.debounce is None
            and self.expires is None
        )

    def expires_at(self) -> float | None:
        """When a job enqueued now expires by these options (``None``: never)."""
        if self.expires is None:
            return None
        return options.expiry_time(self.expires, time.time())

    def run_at(self) -> float | None:
        """When a job enqueued now runs by these options (``None``: ready now)."""
        if self.at is not None:
            return epoch_of(self.at)
        if self.delay is not None:
            return time.time() + delay_seconds(self.delay)
        if self.debounce is not None:
            return time.time() + self.debounce
        return None
