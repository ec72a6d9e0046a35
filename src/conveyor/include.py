"""Task modules an app imports before its tasks are looked up by name.

A worker finds a job's task by name in ``app.tasks``, so the module that defines the
task must have been imported in the worker's process. When the app's own module does not
import its task modules (a layout common in Celery projects: ``myapp/app.py`` holds the
app, ``myapp/tasks.py`` imports it and registers tasks), name them:
``App(include=["myapp.tasks"])`` or ``conveyor worker myapp.app:app --include
myapp.tasks``. They are imported after the app's module (so they may import it), when
the worker starts, by ``load_app`` (every CLI command given the app) and by
``task.execute``.

Example:
    >>> check_names(["myapp.tasks", "billing"], "App(include=...)")
    ('myapp.tasks', 'billing')
    >>> check_names("myapp.tasks", "App(include=...)")
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: App(include=...) must be a list of module names, got the string 'myapp.tasks' (write include=['myapp.tasks'])
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable

from conveyor.errors import ConfigurationError


def check_names(names: Iterable[str], source: str) -> tuple[str, ...]:
    """The module names, checked to be dotted identifiers (``ConfigurationError`` if not)."""
    if isinstance(names, str):  # a bare string would be read letter by letter
        raise ConfigurationError(
            f"{source} must be a list of module names, got the string {names!r} "
            f"(write include=[{names!r}])"
        )
    checked = tuple(names)
    for name in checked:
        if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
            raise ConfigurationError(
                f"{source}: {name!r} is not a module name (dotted, as in myapp.tasks)"
            )
    return checked


def import_modules(names: Iterable[str], source: str) -> None:
    """Import each module; a failure is one ``ConfigurationError`` line naming it.

    A module that does not exist is told apart from one whose own import failed (a
    missing dependency inside it, an exception at its top level).
    """
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                raise ConfigurationError(
                    f"{source}: no module named {name!r} (looked in {os.getcwd()} and "
                    "sys.path); fix the name, or run from the directory that holds it"
                ) from exc
            raise ConfigurationError(
                f"{source}: importing {name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        except Exception as exc:  # the module's own code raised while being imported
            raise ConfigurationError(
                f"{source}: importing {name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
