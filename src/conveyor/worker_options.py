"""The values a worker setting may take, below everything that reads them: the config
files (:mod:`conveyor.config`), the CLI's flags and the worker itself. The pools' names
(:data:`POOLS`, whose executors are in :mod:`conveyor.worker.executors`) and the prefetch
setting (whose claims are sized by :mod:`conveyor.worker.claim_size`).

Example:
    >>> "process" in POOLS
    True
"""

from __future__ import annotations

from typing import Literal

#: The ``--pool`` names, one executor each.
POOLS = ("thread", "async", "process", "interpreter")

#: The prefetch setting that sizes claims from observed job durations.
AUTO: Literal["auto"] = "auto"
Prefetch = int | Literal["auto"]


def parse_prefetch(value: object) -> Prefetch:
    """``"auto"`` or an integer >= 0 (from a flag, a file or the API).

    >>> parse_prefetch("auto"), parse_prefetch("4"), parse_prefetch(0)
    ('auto', 4, 0)
    """
    if value == AUTO:
        return AUTO
    if isinstance(value, bool):
        raise ValueError(f"prefetch must be 'auto' or an integer >= 0, got {value!r}")
    try:
        number = int(value)  # type: ignore[call-overload]  # str, float, int: checked below
    except (TypeError, ValueError):
        raise ValueError(f"prefetch must be 'auto' or an integer >= 0, got {value!r}") from None
    if number < 0 or (isinstance(value, float) and value != number):
        raise ValueError(f"prefetch must be 'auto' or an integer >= 0, got {value!r}")
    result: Prefetch = number
    return result
