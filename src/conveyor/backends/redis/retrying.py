"""The documented path of the retry helper (``docs/redis.md``), kept for users who
import it from here; the helper itself is store-neutral and lives in
:mod:`conveyor.backends.retrying`, below every store.

Example:
    >>> from conveyor.backends.redis.retrying import call_with_backoff
    >>> call_with_backoff(lambda: "ok", sleep=lambda s: None)
    'ok'
"""

from __future__ import annotations

from conveyor.backends.retrying import backoff_delays, call_with_backoff

__all__ = ["backoff_delays", "call_with_backoff"]
