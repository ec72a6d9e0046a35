"""The seam of durable jobs: params and records of the ``Durable`` protocol methods.

A job made of steps (``@app.step``) keeps one record per step call, by its ``position``
in the job body and its ``name``, in the store (``job_steps`` on the SQL stores, one hash
per job on Redis). Events sent to a job (``app.job(id).send(name, payload)``) are kept
until a ``conveyor.wait_for(name)`` of that job consumes them, oldest first.

Step states (``StepRecord.state``):

- ``succeeded``: finished; a replay returns its ``result`` without running it;
- ``failed``: its last run raised (``error``, after its own ``attempts``); a replay runs
  it again and replaces the record;
- ``waiting``: a ``wait_for`` parked the job; ``result`` holds the deadline (epoch
  seconds, JSON); the job is in state ``waiting`` until an event or the deadline;
- ``timed_out``: a ``wait_for`` whose deadline passed first; a replay raises
  ``TimeoutError`` again.

Example:
    >>> StepRecord("j", 0, "charge", STEP_SUCCEEDED, '"r-1"').replayable
    True
    >>> EventWaitResult(WAIT_PARKED).payload is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.records import record
from conveyor.states import JobState

STEP_SUCCEEDED = "succeeded"
STEP_FAILED = "failed"
STEP_WAITING = "waiting"
STEP_TIMED_OUT = "timed_out"

#: ``EventWaitResult.status``: the event was consumed (its payload saved as the step's)
WAIT_RECEIVED = "received"
#: the deadline passed first: the step is saved ``timed_out``
WAIT_TIMED_OUT = "timed_out"
#: no event yet: the job is now ``waiting`` (no slot, attempt given back)
WAIT_PARKED = "parked"
#: the job is not running under this token (rescued, cancelled): nothing written
WAIT_REFUSED = "refused"

#: A deadline that never comes (a ``wait_for`` without timeout): 9999-12-31.
NO_DEADLINE = 253402300799.0

#: The step name of ``conveyor.sleep``: its ``result`` is the wake time (epoch seconds).
SLEEP_STEP = "sleep"
#: The name prefix of a wait's step (``wait_for:approved``): its result while it waits
#: (and once timed out) is the deadline (epoch seconds).
WAIT_PREFIX = "wait_for:"
#: The name prefix of a ``conveyor.join(child)`` step (``join:<child id>``); while the
#: join parks its job the step is ``waiting`` and the child's end wakes the job. The
#: child keeps a mark ``join:<joiner id>`` among its dependants (the workflow edges that
#: every finish already looks at), so only a job joined by a parent pays at its end.
JOIN_PREFIX = "join:"
#: The name prefix of a value published by a running job (``current_job().publish``):
#: kept as a step record at a negative position, outside the replayed sequence (a
#: replay counts from 0), so a job can publish any number of times, from anywhere.
PUBLISH_PREFIX = "publish:"


@record
class StepRecord:
    """One checkpoint of a durable job: a step call at ``position`` named ``name``."""

    job_id: str
    position: int
    name: str
    state: str
    #: the step's return value as JSON text (None: no value saved)
    result: str | None = None
    #: the last error as stored JSON (type, message, traceback) of a ``failed`` step
    error: str | None = None
    #: how many times the step ran in the attempt that saved this record
    attempts: int = 1
    started_at: float = 0.0
    finished_at: float = 0.0

    @property
    def replayable(self) -> bool:
        """True when a replay serves this record instead of running the step."""
        return self.state in (STEP_SUCCEEDED, STEP_TIMED_OUT)


def step_time(s: StepRecord) -> float | None:
    """The moment a step's record holds as its result: a sleep's wake time, a waiting
    or timed-out wait's deadline (None for no deadline); None for any other step.

    >>> step_time(StepRecord("j", 1, SLEEP_STEP, STEP_SUCCEEDED, "1796000000.5"))
    1796000000.5
    >>> step_time(StepRecord("j", 1, "wait_for:ok", STEP_WAITING, str(NO_DEADLINE))) is None
    True
    """
    timed = s.name == SLEEP_STEP or (
        s.name.startswith(WAIT_PREFIX) and s.state in (STEP_WAITING, STEP_TIMED_OUT)
    )
    if not timed or s.result is None:
        return None
    try:
        moment = float(s.result)
    except ValueError:  # a row written by hand
        return None
    return None if moment >= NO_DEADLINE else moment


def waits_on(state: JobState, steps: Sequence[StepRecord]) -> tuple[str, float | None] | None:
    """What a job in ``state`` with these steps waits for: ``("event 'NAME'", deadline
    or None)`` when a wait parked it, ``("sleep", wake time)`` when it sleeps; None when
    it waits for nothing.

    >>> waits_on(JobState.SCHEDULED, [StepRecord("j", 0, SLEEP_STEP, STEP_SUCCEEDED, "9.0")])
    ('sleep', 9.0)
    >>> waits_on(JobState.WAITING, [StepRecord("j", 0, "join:06H5", STEP_WAITING, "9.0")])
    ('job 06H5 to end', None)
    """
    body = [s for s in steps if not is_published(s)]
    waiting = [s for s in body if s.state == STEP_WAITING]
    if waiting and state is JobState.WAITING:
        name = waiting[-1].name
        if name.startswith(JOIN_PREFIX):  # a join: woken by that job's end
            return f"job {name[len(JOIN_PREFIX) :]} to end", None
        return f"event {name[len(WAIT_PREFIX) :]!r}", step_time(waiting[-1])
    if body and body[-1].name == SLEEP_STEP and state is JobState.SCHEDULED:
        return SLEEP_STEP, step_time(body[-1])
    return None


def parked_event(steps: Sequence[StepRecord]) -> str | None:
    """The event a parked job waits for, read from its ``waiting`` step (what an import
    needs to park it again): a ``conveyor.wait_for``'s name, or for a
    ``conveyor.join(child)`` the join's own event ``join:<child id>`` (woken by the
    child's end: the import marks the child again, :func:`join_of`); None when no
    step waits.

    >>> parked_event([StepRecord("j", 0, "wait_for:approved", STEP_WAITING, "9.0")])
    'approved'
    >>> parked_event([StepRecord("j", 0, "join:06H5", STEP_WAITING, "9.0")])
    'join:06H5'
    >>> parked_event([StepRecord("j", 0, "charge", STEP_SUCCEEDED)]) is None
    True
    """
    waiting = [s for s in steps if s.state == STEP_WAITING and s.position >= 0]
    if not waiting:
        return None
    name = waiting[-1].name
    if name.startswith(JOIN_PREFIX):
        return name
    return name[len(WAIT_PREFIX) :] if name.startswith(WAIT_PREFIX) else None


def waiting_step(event: str) -> str:
    """The name of the step that waits for ``event``: a ``wait_for``'s, or for a join's
    own event (``join:<child id>``, woken by the child's end) the join's.

    >>> waiting_step("approved"), waiting_step("join:06H5")
    ('wait_for:approved', 'join:06H5')
    """
    return event if event.startswith(JOIN_PREFIX) else WAIT_PREFIX + event


def join_of(mark: str) -> str | None:
    """The id in ``join:<id>``: the joining job of a dependant mark (None for a workflow
    child), or the joined job of a join's event (:func:`parked_event`).

    >>> join_of("join:06H5"), join_of("06H5")
    ('06H5', None)
    """
    return mark[len(JOIN_PREFIX) :] if mark.startswith(JOIN_PREFIX) else None


def is_published(s: StepRecord) -> bool:
    """True for a value published by the job (not a step of its body).

    >>> is_published(StepRecord("j", -7, "publish:progress", STEP_SUCCEEDED, "0.5"))
    True
    """
    return s.position < 0 and s.name.startswith(PUBLISH_PREFIX)


@record
class JobStepSaveParams:
    """Save ``step`` for its job, fenced: only while the job is ``running`` under
    ``token``. ``replace``: a record at that position exists (a failed run's) and is
    overwritten."""

    step: StepRecord
    token: int
    replace: bool = False


@record
class JobStepSaveThroughParams:
    """``save`` through ``connection`` (one of ``transaction_connection()``'s), in its
    open transaction, no commit: a transactional step's checkpoint commits with the
    step's own writes (``@app.step(transaction=True)``; feature
    ``transactional_completion``)."""

    connection: object
    save: JobStepSaveParams


@record
class JobEventSendParams:
    """Deliver an event ``name`` with ``payload`` (JSON text) to job ``job_id``."""

    job_id: str
    name: str
    payload: str = "null"
    sent_at: float = 0.0


@record
class JobEventWaitParams:
    """Take the oldest unconsumed event ``event`` of the job running under ``token``,
    saving it as the step ``name`` at ``position``; none and ``now >= deadline``: the
    step is saved timed out; none yet: the job parks in ``waiting`` until an event or
    the ``deadline`` (epoch seconds, the store's clock)."""

    job_id: str
    token: int
    position: int
    name: str
    event: str
    deadline: float
    started_at: float = 0.0


@record
class JobJoinParams:
    """``joiner`` (running under ``token``) waits for the end of job ``job_id``: mark it,
    so that its end wakes the joiner when it waits (parked by a join step)."""

    job_id: str
    joiner: str


@record
class EventWaitResult:
    """What :meth:`~conveyor.backends.protocols.Durable.job_event_wait` did."""

    #: one of ``WAIT_RECEIVED``, ``WAIT_TIMED_OUT``, ``WAIT_PARKED``, ``WAIT_REFUSED``
    status: str
    #: the event's payload (JSON text) when received
    payload: str | None = None
