"""The params of the flow-control operations of issue 24 (a sequence's release, limits
changed while running, priority aging), apart from ``params.py`` so that it stays small;
re-exported by :mod:`conveyor.backends.base`. One frozen record per method, as there.

Example:
    >>> SequenceReleaseParams(["j1"]).ids
    ['j1']
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.records import record

__all__ = ["JobAgeParams", "LimitOverrideParams", "SequencePruneParams", "SequenceReleaseParams"]


@record
class JobAgeParams:
    """Priority aging of one queue: each ``queued`` job ready for ``step`` seconds or
    more (by the store's clock) gains one priority, below ``ceiling``, and its
    ``run_at`` moves ``step`` later (so the next step is counted from now)."""

    queue: str
    step: float
    ceiling: int


@record
class LimitOverrideParams:
    """An operator's values for limit ``key`` (``conveyor limits set``), obeyed by every
    worker's next claim; ``values`` None removes the override (``reset``: the code's
    values again). A part of ``values`` left None keeps the code's."""

    key: str
    values: tuple[int | None, int | None, float | None] | None


@record
class SequenceReleaseParams:
    """Let the held jobs among ``ids`` go on: each one ``waiting`` behind a failed job of
    its sequence (``on_failure="block"``) becomes ready; any other id is left as it is."""

    ids: Sequence[str]


@record
class SequencePruneParams:
    """Forget up to ``limit`` sequence keys with no active job: a key's row (its last
    job) goes when that job succeeded or is gone (purged), as the next job of the key
    would then wait on nothing anyway. A key whose last job ended dead, cancelled or
    expired keeps its row (under ``on_failure="block"`` it blocks the next job) until
    the retention purges that job."""

    limit: int = 1000
