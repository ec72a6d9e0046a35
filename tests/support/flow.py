"""Helpers for the flow-control contract tests."""

from __future__ import annotations

import pytest

import conveyor
from conveyor.backends.base import Backend


def needs(backend: Backend, feature: str) -> None:
    """Skip (with the reason) on a backend that does not implement ``feature`` yet."""
    if feature not in backend.features:
        pytest.skip(f"backend {backend.name!r} does not implement flow feature {feature!r} yet")


def drain(app: conveyor.App, **options: object) -> None:
    """Run a burst worker in this thread until nothing is ready or running."""
    from conveyor.worker.worker import Worker

    Worker(app, burst=True, **options).run(install_signals=False)  # type: ignore[arg-type]
