"""What the layers above the core provide to it: ``app.testing(...)`` and
``task.execute(...)`` run on the testing package (``conveyor.testing``), which sits above
the worker it runs jobs with. The core calls these hooks and never imports that package:
it registers its hooks when imported (:func:`provide`), and the first call of a hook
nobody registered yet loads the module :data:`PROVIDERS` names for it, by name, as
``app.py`` loads a store's module only when a URL asks for it.

Example:
    >>> hook = provided("execute")  # loads conveyor.testing, which provides it
    >>> hook.__module__
    'conveyor.testing.engine'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: hook -> the module providing it when imported:
#: ``modes``: ``(app, mode, **options) -> mode`` (``App.testing``);
#: ``execute``: ``(task, args, kwargs) -> result`` (``Task.execute``);
#: ``step``: ``(fn, **options) -> Step`` (``App.step``: durable jobs, above the core)
PROVIDERS = {"modes": "conveyor.testing", "execute": "conveyor.testing", "step": "conveyor.durable"}

_hooks: dict[str, Callable[..., Any]] = {}


def provide(name: str, hook: Callable[..., Any]) -> None:
    """Register ``hook`` as ``name`` (one of :data:`PROVIDERS`)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown hook {name!r}; one of {sorted(PROVIDERS)}")
    _hooks[name] = hook


def provided(name: str) -> Callable[..., Any]:
    """The hook registered as ``name``, its provider loaded first if need be."""
    hook = _hooks.get(name)
    if hook is None:
        importlib.import_module(PROVIDERS[name])
        hook = _hooks[name]
    return hook
