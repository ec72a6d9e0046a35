"""Fair queues: ``@app.task(fair_key=...)`` serves a queue's ready jobs round-robin
across keys (tenants, customers), so one key's 100,000 jobs do not starve another's ten.

Each job ready now takes a place in its queue's round when it is enqueued
(:func:`conveyor.rules.fair_place`): one step after the last job of its key, and never
behind the job the claim would take next, so a key that has nothing queued gets the next
turn. The place is the job's ``run_at``; the claim is unchanged (priority first, then
``run_at``), so priority still orders jobs (within a key and across), and a queue
without fair keys pays nothing. ``fair_weights`` gives a key more turns: weight 2 is
placed half a step apart (two jobs per round).

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(fair_key=lambda account, **_: account, fair_weights={"big": 2})
    ... def sync(account: str, **fields: object) -> None: ...
    >>> key_for(lambda account, **_: account, ("acme",), {}), weight_for({"big": 2}, "big")
    ('acme', 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.codec import encode
from conveyor.errors import ConfigurationError

FairKey = Callable[..., Any] | str | None
#: key -> weight, or a function of the key answering its weight (None: 1)
FairWeights = Mapping[str, float] | Callable[[str], float | None] | None


def check_options(fair_key: FairKey, fair_weights: FairWeights, sequence_key: object) -> None:
    """One-line errors for a task's fairness options, at declaration.

    >>> check_options(None, {"a": 2}, None)
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: fair_weights applies to fair queues: give fair_key too
    """
    if fair_key is not None and not callable(fair_key) and not isinstance(fair_key, str):
        raise ConfigurationError(
            f"fair_key must be text or a function of the arguments, got {type(fair_key).__name__}"
        )
    if fair_key is not None and sequence_key is not None:
        raise ConfigurationError("a task takes fair_key or sequence_key, not both")
    if fair_weights is None:
        return
    if fair_key is None:
        raise ConfigurationError("fair_weights applies to fair queues: give fair_key too")
    if isinstance(fair_weights, Mapping):
        for key, weight in fair_weights.items():
            _weight(weight, key)
    elif not callable(fair_weights):
        raise ConfigurationError(
            "fair_weights must be a mapping of key to weight or a function of the key, "
            f"got {type(fair_weights).__name__}"
        )


def _weight(value: object, key: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"fair weight of {key!r} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0.01 <= value <= 1000:
        raise ConfigurationError(f"fair weight of {key!r} must be in 0.01..1000, got {value!r}")
    return float(value)


def key_for(key: FairKey, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """The fair key of one job: text as given, a function's answer as text (shared by
    every task of the queue that answers it); None: the job is not in the round."""
    if key is None or not callable(key):
        return key
    value = key(*args, **kwargs)
    if value is None:
        return None
    return value if isinstance(value, str) else encode(value)


def weight_for(weights: FairWeights, key: str) -> float:
    """The weight of ``key`` (1 when ``fair_weights`` does not name it)."""
    if weights is None:
        return 1.0
    value = weights.get(key) if isinstance(weights, Mapping) else weights(key)
    return 1.0 if value is None else _weight(value, key)
