"""``Outage``: one log line when a store outage starts, one when it ends.

Every loop that talks to the store (the fetcher, the completer, each service) keeps one:
a Redis restart or a full disk is a warning when it starts and one with its length
when it ends, not a warning per retry.

Example:
    >>> outage = Outage("claim")
    >>> outage.failed(OSError("disk full"))   # logs "claim: store unavailable ..."
    True
    >>> outage.failed(OSError("disk full"))   # the same outage: silent
    False
    >>> outage.recovered()                    # logs "claim: store back after ..."
    True
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("conveyor.worker")


class Outage:
    """Tracks one loop's store outage; logs its start and its end only."""

    __slots__ = ("since", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None

    def failed(self, exc: BaseException, doing: str = "retrying with back-off") -> bool:
        """Record a failure; True (and one warning) when it starts an outage."""
        if self.since is not None:
            log.debug("%s: still unavailable: %s", self.what, exc)
            return False
        self.since = time.monotonic()
        log.warning("%s: store unavailable (%s); %s", self.what, exc, doing)
        return True

    def recovered(self) -> bool:
        """Record a success; True (and one line) when it ends an outage."""
        if self.since is None:
            return False
        lasted, self.since = time.monotonic() - self.since, None
        log.warning("%s: store back after %.1f s", self.what, lasted)
        return True
