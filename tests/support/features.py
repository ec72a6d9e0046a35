"""Skip a contract test on a backend that does not implement a feature *yet*.

Backends declare what they implement in ``flow_features`` and ``ops_features``; a test
names the feature it needs, and the skip says which backend lacks it. This is a named
capability, never a check of the backend's name.
"""

from __future__ import annotations

import pytest

from conveyor.backends.base import Backend


def needs(backend: Backend, feature: str) -> None:
    features = getattr(backend, "flow_features", frozenset()) | getattr(
        backend, "ops_features", frozenset()
    )
    if feature not in features:
        pytest.skip(f"backend {backend.name!r} does not implement {feature!r} yet")
