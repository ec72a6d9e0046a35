"""The web dashboard (``pip install 'conveyor[web]'``): queues, jobs, workers, actions.

Imported only when asked for, so ``import conveyor`` never imports Starlette; and
``create_app`` (the only part that needs Starlette) is loaded on first use, so the
dashboard's query and sorting modules (``conveyor.web.query``, ``conveyor.web.sorting``)
import without the extra.

Example:
    >>> from conveyor.web import create_app
    >>> web = create_app("sqlite:///:memory:", token="s3cret")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conveyor.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from conveyor.web.app import create_app

        return create_app
    raise AttributeError(f"module 'conveyor.web' has no attribute {name!r}")
