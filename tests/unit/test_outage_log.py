"""The worker's outage log: one warning when an outage starts, one more when its cause
changes, even when both causes reach the worker as the same BackendUnavailable."""

from __future__ import annotations

import logging

import pytest

from conveyor.errors import BackendUnavailable
from conveyor.worker.outage import OutageLog


def _unavailable(message: str, cause: BaseException) -> BackendUnavailable:
    try:
        raise BackendUnavailable(message) from cause
    except BackendUnavailable as exc:
        return exc


def test_a_new_cause_under_the_same_error_type_is_a_new_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outages = OutageLog()
    reset = _unavailable("Redis is unavailable (reset)", ConnectionResetError())
    refused = _unavailable("Redis: authentication failed", PermissionError())
    with caplog.at_level(logging.DEBUG, logger="conveyor"):
        assert outages.failed("fetch", reset, "retrying") is True
        assert outages.failed("fetch", reset, "retrying") is False
        outages.failed("fetch", refused, "retrying")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "authentication failed" in warnings[1] and "now:" in warnings[1]
