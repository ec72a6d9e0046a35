"""Collection rules for the whole repository (pytest reads this before src/ and tests/).

``conveyor.contrib.django`` imports Django >= 6 (``django.tasks``), which needs Python
>= 3.12; the default venv (3.11) has none, so there ``--doctest-modules src/conveyor``
leaves that one package out. Its doctests and tests run in ``.ci/django312``, which sets
``CONVEYOR_DJANGO_TESTS=1``: there nothing is left out, and a missing Django fails
(tests/with_django/requires.py is the same rule for the tests).
"""

from __future__ import annotations

import importlib.util
import os


def _django_tasks_importable() -> bool:
    try:
        return importlib.util.find_spec("django.tasks") is not None
    except ModuleNotFoundError:  # no django at all
        return False


#: Modules that import only inside a configured Django project (a model, the admin that
#: registers it): no doctests there; tests/with_django/test_admin.py sets the project up.
_NEED_A_PROJECT = ["src/conveyor/contrib/django/models.py", "src/conveyor/contrib/django/admin.py"]

collect_ignore_glob = (
    _NEED_A_PROJECT
    if _django_tasks_importable() or os.environ.get("CONVEYOR_DJANGO_TESTS") == "1"
    else ["src/conveyor/contrib/django/*"]
)
