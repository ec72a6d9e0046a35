"""Sequences: ``@app.task(sequence_key=...)`` runs the jobs of one key one at a time, in
the order they were enqueued, across every worker and host; different keys in parallel.

Each new job of a key waits on the job enqueued just before it with that key (the
store keeps each key's last job, ``sequences``, and links the two as a workflow edge,
written in the insert's transaction), so order holds whatever the claim order, retries
or rescues: a retried or rescued job keeps its place and the next one keeps waiting.

What a job that ends dead, cancelled or expired does to the rest (``on_failure``):

- ``"block"`` (the default): the next job is held, ``waiting`` with the reason
  ``sequence blocked: <id> ended dead``. ``conveyor sequence release JOB`` (or
  retrying the failed job by hand, which runs it first again) lets it go on.
- ``"skip"``: the next job runs as if the failed one had succeeded.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(sequence_key=lambda account, _: account)
    ... def apply_event(account: str, event: dict) -> None: ...
    >>> key_for("t", lambda account, _: account, ("acme", {}), {})
    't:acme'
    >>> key_for("t", "ledger", (), {})
    'ledger'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.codec import encode
from conveyor.errors import ConfigurationError
from conveyor.rules import PIPE_SEQUENCE, PIPE_SEQUENCE_SKIP

SequenceKey = Callable[..., Any] | str | None

#: ``on_failure`` -> the pipe a sequence's job is inserted with (rules.SEQUENCE_EFFECT)
PIPES = {"block": PIPE_SEQUENCE, "skip": PIPE_SEQUENCE_SKIP}


def check_options(sequence_key: SequenceKey, on_failure: str | None) -> None:
    """One-line errors for a task's sequence options, at declaration.

    >>> check_options(None, "skip")
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: on_failure applies to a sequence: give sequence_key too
    """
    if (
        sequence_key is not None
        and not callable(sequence_key)
        and (not isinstance(sequence_key, str) or not sequence_key)
    ):
        raise ConfigurationError(
            "sequence_key must be non-empty text or a function of the arguments, "
            f"got {type(sequence_key).__name__} {sequence_key!r}"
        )
    if on_failure is None:
        return
    if on_failure not in PIPES:
        raise ConfigurationError(f"on_failure must be 'block' or 'skip', got {on_failure!r}")
    if sequence_key is None:
        raise ConfigurationError("on_failure applies to a sequence: give sequence_key too")


def key_for(
    task: str, key: SequenceKey, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> str | None:
    """The sequence a job joins: a text key as given (shared by every task naming it),
    a function's answer scoped to the task (as limit keys are), None for no sequence
    (a function answering None)."""
    if key is None:
        return None
    if not callable(key):
        return key
    value = key(*args, **kwargs)
    if value is None:
        return None
    return f"{task}:{value if isinstance(value, str) else encode(value)}"
