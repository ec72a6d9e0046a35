"""Skip a contract test on a backend that does not implement a feature *yet*.

Backends declare what they implement in one ``features`` set; a test
names the feature it needs, and the skip says which backend lacks it. This is a named
capability, never a check of the backend's name.
"""

from __future__ import annotations

import pytest

from conveyor.backends.base import Backend


def needs(backend: Backend, feature: str) -> None:
    if feature not in backend.features:
        pytest.skip(f"backend {backend.name!r} does not implement {feature!r} yet")
