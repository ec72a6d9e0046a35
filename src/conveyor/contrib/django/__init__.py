"""A backend for Django's task framework (``django.tasks``, Django >= 6.0).

Settings::

    INSTALLED_APPS = [..., "conveyor.contrib.django"]   # for `manage.py conveyor_worker`
    TASKS = {
        "default": {
            "BACKEND": "conveyor.contrib.django.ConveyorBackend",
            "OPTIONS": {"url": "sqlite:///jobs.db"},
        }
    }

Tasks stay plain Django tasks (``@django.tasks.task``); ``enqueue`` writes a conveyor job
once the surrounding transaction commits (nothing on rollback), or inside it when the
store is Django's own database (``"enqueue": "in_transaction"``), ``manage.py
conveyor_worker`` runs them, ``get_result`` reads them back as a Django ``TaskResult``.
See docs/django.md.

Importing this package imports Django; importing :mod:`conveyor` never does.
"""

from __future__ import annotations

from conveyor.contrib.django.backend import ConveyorBackend, conveyor_app, conveyor_task

__all__ = ["ConveyorBackend", "conveyor_app", "conveyor_task"]
