"""Testing helpers: ``app.testing("inline")``, ``app.testing("capture")``,
``task.execute(...)`` and, for tests against a real store, :func:`drain`. The modes and
``execute`` run the app on a memory store of their own (``memory://``), drained by the
real runner (``engine.py``).

The pytest plugin (``conveyor.testing.plugin``, registered by the package's
``pytest11`` entry point) adds the ``conveyor_app`` and ``conveyor_worker`` fixtures.
``docs/testing.md`` shows each with pytest examples.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> with app.testing("inline"):
    ...     add.enqueue(2, 3).result()
    5
"""

from conveyor import extensions
from conveyor.testing.drain import drain
from conveyor.testing.engine import execute
from conveyor.testing.modes import Captured, CapturedJob, Inline, open_mode

# The core's hooks (conveyor/extensions.py): App.testing and Task.execute call them.
extensions.provide("modes", open_mode)
extensions.provide("execute", execute)

__all__ = ["Captured", "CapturedJob", "Inline", "drain"]
