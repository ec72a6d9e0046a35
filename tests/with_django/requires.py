"""Django 6 (``django.tasks``) needs Python >= 3.12; the project's default is 3.11.

The Django tests skip, with the reason, where Django 6 is not installed, even on CI's
3.11 run: they run in their own CI step (``.ci/django312``), which sets
``CONVEYOR_DJANGO_TESTS=1``; there a missing Django fails instead.
"""

from __future__ import annotations

import os

import pytest


def require_django() -> None:
    """Skip (or, with ``CONVEYOR_DJANGO_TESTS=1``, fail) unless Django >= 6 imports."""
    try:
        import django
    except ImportError:
        version = None
    else:
        version = django.VERSION
    if version is not None and version >= (6, 0):
        return
    found = "not installed" if version is None else ".".join(map(str, version[:3]))
    reason = (
        f"Django >= 6.0 (django.tasks) is {found} here; the Django tests run in .ci/django312 "
        "(Python >= 3.12, pip install -e '.[django]')"
    )
    if os.environ.get("CONVEYOR_DJANGO_TESTS") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)
