"""The worker's start-up warnings about queues stay short when it consumes thousands."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import conveyor
from conveyor.worker.start_lines import warn_queues


def _undeclared_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if "declared by no task" in r.getMessage()
        or "no task of the app declares it" in r.getMessage()
    ]


def test_a_few_undeclared_queues_get_a_line_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'q.db'}")
    names = ["emial", "tenant-1"]
    with caplog.at_level(logging.WARNING, logger="conveyor.worker"):
        warn_queues(app, {"mail": ["send"]}, {"mail", *names}, names)
    lines = _undeclared_lines(caplog)
    assert len(lines) == 2, lines
    assert "'emial' is consumed but no task of the app declares it" in lines[0]
    app.close()


def test_thousands_of_tenant_queues_are_summed_up_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path / 'q.db'}")
    names = [f"tenant-{i}" for i in range(2000)]
    with caplog.at_level(logging.WARNING, logger="conveyor.worker"):
        warn_queues(app, {}, set(names), names)
    lines = _undeclared_lines(caplog)
    assert lines == [
        "2000 consumed queues are declared by no task and hold no job "
        "(e.g. 'tenant-0', 'tenant-1', 'tenant-2', 'tenant-3', 'tenant-4')"
    ]
    app.close()
