"""The App of a Django task backend, importable by name: ``conveyor.contrib.django.
worker_app:ALIAS`` is the App of ``TASKS[ALIAS]``.

``manage.py conveyor_worker`` runs the worker with this spec, so the process and
interpreter pools (whose children import the app by its spec) get the same App in each
child: getting the attribute sets Django up from ``$DJANGO_SETTINGS_MODULE`` (which must
be set, as manage.py does) when nobody has, and imports every installed app's ``tasks``
module, so the worker's start-up lists the tasks and consumes their queues, and registers
the schedules of ``OPTIONS["periodic"]``. A task in another module is imported by its
module path when its first job arrives (:class:`~conveyor.contrib.django.registry.TaskRegistry`).

Example::

    $ DJANGO_SETTINGS_MODULE=mysite.settings conveyor worker conveyor.contrib.django.worker_app:default
"""

from __future__ import annotations

from conveyor.app import App


def spec(alias: str = "default") -> str:
    """The ``module:attribute`` naming the App of ``TASKS[alias]``."""
    return f"{__name__}:{alias}"


def __getattr__(alias: str) -> App:
    if alias.startswith("__"):  # import machinery and tools probing (__path__, ...)
        raise AttributeError(alias)
    import django
    from django.apps import apps
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.utils.module_loading import autodiscover_modules

    try:
        aliases = settings.TASKS
    except ImproperlyConfigured:  # no settings (DJANGO_SETTINGS_MODULE unset)
        raise AttributeError(f"{alias!r}: Django settings are not configured") from None
    if alias not in aliases:  # not a backend: an ordinary missing attribute (probes)
        raise AttributeError(f"TASKS has no backend {alias!r}")
    if not apps.ready:
        django.setup()
    from conveyor.contrib.django import periodic
    from conveyor.contrib.django.backend import backend_for

    backend = backend_for(alias)
    autodiscover_modules("tasks")
    periodic.install(backend)  # OPTIONS["periodic"]: the worker's scheduler runs them
    return backend.app
