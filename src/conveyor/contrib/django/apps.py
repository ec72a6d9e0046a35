"""The Django app that carries ``manage.py conveyor_worker``.

Labelled ``conveyor``: the default label would be ``django`` (the package's last name).
"""

from __future__ import annotations

from django.apps import AppConfig


class ConveyorConfig(AppConfig):  # type: ignore[misc]  # Django is untyped (Any)
    name = "conveyor.contrib.django"
    label = "conveyor"
    verbose_name = "conveyor"
