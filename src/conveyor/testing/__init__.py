"""Testing helpers: ``app.testing("inline")``, ``app.testing("capture")``,
``task.execute(...)`` and, for tests against a real store, :func:`drain`.

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

from conveyor.testing.drain import drain
from conveyor.testing.local import LocalJob
from conveyor.testing.modes import Captured, CapturedJob, Inline

__all__ = ["Captured", "CapturedJob", "Inline", "LocalJob", "drain"]
