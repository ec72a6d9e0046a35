"""Store outages in the log: one line when one starts (and one per new kind of cause,
such as a refused password after a dropped connection), one when it ends.

Every loop that talks to the store (the fetcher, the completer, each service) keeps an
:class:`Outage`; a worker ties them to one :class:`OutageLog`, so a Redis restart or a
full disk is one warning when the first loop meets it and one, with its length, when
the last loop that met it is through again -- not a warning per retry, nor one per loop.
What each loop saw is logged at DEBUG.

Example:
    >>> shared = OutageLog()
    >>> fetch, completer = Outage("fetch", shared), Outage("completer", shared)
    >>> fetch.failed(OSError("disk full"))      # logs "store unavailable ..."
    True
    >>> completer.failed(OSError("disk full"))  # the same outage: DEBUG only
    False
    >>> completer.failed(PermissionError("denied"))  # a new cause: one more warning
    False
    >>> fetch.recovered()                       # the completer is still waiting
    False
    >>> completer.recovered()                   # logs "store back after ..."
    True
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("conveyor.worker")


class OutageLog:
    """One outage as a whole worker sees it: which loops are waiting on the store."""

    __slots__ = ("_causes", "_down", "_lock", "_since")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down: set[str] = set()
        self._since = 0.0
        #: Kinds of error warned about in this outage: a new kind gets its own line (a
        #: Redis connection killed, then its password refused: the cause the user must
        #: fix is the second one, and a DEBUG line would hide it). A kind is the
        #: exception's type and its cause's: both of those reach here as
        #: BackendUnavailable.
        self._causes: set[tuple[type[BaseException], type[BaseException] | None]] = set()

    def failed(self, what: str, exc: BaseException, doing: str) -> bool:
        """``what`` could not reach the store; True (and one warning) when this starts
        an outage."""
        with self._lock:
            again = what in self._down
            starts = not self._down
            self._down.add(what)
            if starts:
                self._since = time.monotonic()
                self._causes.clear()
            kind = (type(exc), None if exc.__cause__ is None else type(exc.__cause__))
            new_cause = kind not in self._causes
            self._causes.add(kind)
        if starts:
            log.warning("%s: store unavailable (%s); %s", what, exc, doing)
        elif new_cause:
            log.warning("%s: store still unavailable, now: %s; %s", what, exc, doing)
        elif not again:
            log.debug("%s: store unavailable too: %s", what, exc)
        else:
            log.debug("%s: still unavailable: %s", what, exc)
        return starts

    def recovered(self, what: str) -> bool:
        """``what`` reached the store again; True (and one line) when it was the last
        loop of the outage."""
        with self._lock:
            if what not in self._down:
                return False
            self._down.discard(what)
            ends = not self._down
            lasted = time.monotonic() - self._since
        if ends:
            log.warning("store back after %.1f s (%s was the last to reach it)", lasted, what)
        else:
            log.debug("%s: store back", what)
        return ends


class Outage:
    """One loop's view of store outages, reported through a shared :class:`OutageLog`
    (a fresh one of its own when none is given, e.g. a completer used on its own)."""

    __slots__ = ("shared", "what")

    def __init__(self, what: str, shared: OutageLog | None = None) -> None:
        self.what = what
        self.shared = shared if shared is not None else OutageLog()

    def failed(self, exc: BaseException, doing: str = "retrying with back-off") -> bool:
        """Record a failure; True when it starts an outage (the one warning)."""
        return self.shared.failed(self.what, exc, doing)

    def recovered(self) -> bool:
        """Record a success; True when it ends the outage (the one line)."""
        return self.shared.recovered(self.what)
