"""Import the app a ``module:attribute`` spec names (``--app``, ``APP``, a config file).

The current directory is importable; nothing is called (the attribute must be the app
itself: a factory function would run arbitrary code just to resolve a name). Every
failure is a :class:`~conveyor.errors.ConfigurationError` whose message says what to
fix. ``conveyor.app.load_app`` uses it and then imports the app's ``include`` modules.

Example:
    >>> import conveyor
    >>> import_app("conveyor.app:DEFAULT_URL", conveyor.App)
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: conveyor.app:DEFAULT_URL is a str, not a conveyor.App; APP names the App object (module:attribute, e.g. tasks:app)
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, TypeVar

from conveyor.app_spec import parse_app_spec
from conveyor.errors import ConfigurationError

T = TypeVar("T")


def import_app(spec: str, app_class: type[T]) -> T:
    """The object ``spec`` names, checked to be an ``app_class`` (``conveyor.App``,
    passed in because app.py imports this module)."""
    module_name, attr = parse_app_spec(spec)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = _import_app_module(module_name)
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            apps = [k for k, v in vars(module).items() if isinstance(v, app_class)]
            hint = f"; it defines {', '.join(f'{module_name}:{a}' for a in apps)}" if apps else ""
            raise ConfigurationError(
                f"module {module_name!r} has no attribute {attr!r}{hint}"
            ) from None
    if not isinstance(found, app_class):
        raise ConfigurationError(
            f"{spec} is {_kind(found)}, not a conveyor.App; APP names the App object "
            "(module:attribute, e.g. tasks:app)"
        )
    return found


def _import_app_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise ConfigurationError(
                f"no module named {exc.name!r} (looked in {os.getcwd()} and sys.path); "
                "run from the directory that holds it, or set PYTHONPATH"
            ) from exc
        raise ConfigurationError(
            f"importing {name!r} failed: {type(exc).__name__}: {exc} (--debug shows where)"
        ) from exc
    except Exception as exc:  # the module's own code raised while being imported
        raise ConfigurationError(
            f"importing {name!r} failed: {type(exc).__name__}: {exc} (--debug shows where)"
        ) from exc


def _kind(value: object) -> str:
    """'a function', 'a class', 'a module', 'an int', ... for an error message."""
    import inspect  # here: it costs milliseconds at import, and only errors need it

    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value):
        return "a function"
    if inspect.isclass(value):
        return "a class"
    if inspect.ismodule(value):
        return "a module"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def default_task_name(fn: Any) -> str:
    """``module.qualname``; for ``__main__`` run with ``-m``, the real module name (the
    name a worker importing the module finds the task by).

    Example:
        >>> default_task_name(default_task_name)
        'conveyor.app_import.default_task_name'
    """
    module = getattr(fn, "__module__", None) or "__main__"
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is not None and spec.name:
            module = spec.name
    return f"{module}.{fn.__qualname__}"
