"""Retry policy: exponential backoff with jitter, and the ``retry_delay`` hook.

A task's ``retry_delay(attempt, error, job)`` hook (as in seed 004) may answer seconds,
``"drop"`` (delete the job), ``"archive"`` (send it to ``dead`` now) or ``None`` (use the
task's :class:`Backoff`). Attempts are counted by the claim, so ``attempt`` is 1 for the
first run. When ``attempt >= max_attempts`` the job goes to ``dead`` whatever the delay.

Example:
    >>> Backoff(base=1, factor=2, max=60, jitter=0).delay(3)
    4.0
    >>> next_step(attempt=1, max_attempts=3, error=ValueError(), job=None,
    ...           backoff=Backoff(jitter=0), hook=lambda a, e, j: "archive")
    (<FinishKind.DEAD: 'dead'>, None, 'archived by retry_delay hook')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from conveyor.errors import ConfigurationError
from conveyor.states import FinishKind

RetryDecision = float | int | Literal["drop", "archive"] | None
RetryDelayHook = Callable[[int, BaseException, Any], RetryDecision]


@dataclasses.dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry ``n`` = ``min(max, base * factor ** (n - 1))`` +/- ``jitter``.

    ``jitter`` is a fraction: 0.25 spreads each delay over +/-25% so that jobs that failed
    together (an outage) do not all retry in the same instant.
    """

    base: float = 1.0
    factor: float = 2.0
    max: float = 300.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.base < 0 or self.factor < 1 or self.max < 0 or not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"invalid backoff {self!r}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        raw = float(min(self.max, self.base * self.factor ** max(0, attempt - 1)))
        if self.jitter:
            import random  # lazily: only jittered delays need it

            raw *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(0.0, raw)


def next_step(
    *,
    attempt: int,
    max_attempts: int,
    error: BaseException,
    job: Any,
    backoff: Backoff,
    hook: RetryDelayHook | None,
) -> tuple[FinishKind, float | None, str | None]:
    """Decide what a failed attempt becomes: (kind, delay seconds, reason)."""
    decision: RetryDecision = None
    hook_error: str | None = None
    if hook is not None:
        try:
            decision = hook(attempt, error, job)
        except Exception as exc:  # a broken hook must not lose the job: fall back
            decision = None
            hook_error = f"retry_delay hook raised {type(exc).__name__}: {exc}"
        if decision == "drop":
            return FinishKind.DROP, None, "dropped by retry_delay hook"
        if decision == "archive":
            return FinishKind.DEAD, None, "archived by retry_delay hook"
    if attempt >= max_attempts:
        reason = f"attempts exhausted ({attempt}/{max_attempts})"
        return FinishKind.DEAD, None, reason
    if isinstance(decision, (int, float)) and not isinstance(decision, bool):
        delay = max(0.0, float(decision))
    else:
        delay = backoff.delay(attempt)
    return FinishKind.RETRY, delay, hook_error
