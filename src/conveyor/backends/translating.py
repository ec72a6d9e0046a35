"""A store's faults as conveyor's errors, at every public method of its backend class.

Each store says which of its driver's errors mean what (``translate``: the error to
raise instead, or None to let the original through); this wraps the methods once, at
import: no per-call cost beyond one ``try``.

Example::

    def translate(backend, exc):
        if isinstance(exc, ConnectionError):
            return BackendUnavailable(f"{backend.url} is unavailable: {exc}")
        return None

    @functools.partial(translating_methods, translate=translate)
    class SomeBackend: ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection
from typing import Any, TypeVar

_T = TypeVar("_T")
#: ``translate(backend, exc)``: the error to raise from ``exc`` instead, or None.
Translate = Callable[[Any, Exception], BaseException | None]


def translating_methods(cls: _T, translate: Translate, skip: Collection[str] = ()) -> _T:
    """Wrap each public method of ``cls`` (and of its mixins) but those named in
    ``skip``, so that an error ``translate`` maps is raised as what it maps to, its
    cause chained.

    >>> class B:
    ...     def get(self) -> int:
    ...         raise KeyError("x")
    >>> B = translating_methods(B, lambda b, e: LookupError("gone"))
    >>> B().get()
    Traceback (most recent call last):
    ...
    LookupError: gone
    """
    for name in dir(cls):
        if name.startswith("_") or name in skip:
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method):
            setattr(cls, name, _translating(method, translate))
    return cls


def _translating(method: Callable[..., Any], translate: Translate) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            error = translate(self, exc)
            if error is None:
                raise
            raise error from exc

    return call
