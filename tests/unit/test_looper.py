"""A background service outlives an unexpected error in its tick (issue 21): logged once
with its traceback, the next tick goes on, one line when ticks pass again."""

from __future__ import annotations

import logging
import threading

import pytest

from conveyor.worker.services.base import Looper


class Flaky(Looper):
    """Raises the same error on ticks 1-5, a different one on tick 6, then passes."""

    name = "flaky"

    def __init__(self) -> None:
        super().__init__(interval=0.001)
        self.ticks = 0
        self.passed = threading.Event()

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks <= 5:
            raise ValueError("bad row 'x'")
        if self.ticks == 6:
            raise KeyError("other")
        if self.ticks >= 10:
            self.passed.set()


def test_an_unexpected_tick_error_is_logged_once_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="conveyor.worker")
    looper = Flaky()
    looper.start()
    try:
        assert looper.passed.wait(10), f"the loop stopped at tick {looper.ticks}"
    finally:
        looper.stop()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "flaky: tick failed, retrying every 0.001 s: ValueError: bad row 'x'",
        "flaky: tick failed, retrying every 0.001 s: KeyError: 'other'",
        "flaky: ticking again after KeyError: 'other'",
    ]
    assert warnings[0].exc_info is not None  # the traceback, once
    assert sum("tick failed again" in r.getMessage() for r in caplog.records) == 4
