"""The contract suite runs on every store, the in-process memory store included
(``tests/support/backends.CONTRACT_URLS``); ``app`` and ``backend`` come from
``tests/conftest.py`` on top of this ``backend_url``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.backends import CONTRACT_URLS


@pytest.fixture(params=sorted(CONTRACT_URLS))
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh URL on every store, isolated to this test."""
    return CONTRACT_URLS[request.param](request, tmp_path)
