"""The one asyncio helper the public API needs, importing asyncio only when awaited.

Importing asyncio costs ~25 ms here; a web app that only enqueues should not pay it at
``import conveyor``. The asyncio twins (``aenqueue``, ``aresult``, ...) await this.

Example:
    >>> import asyncio
    >>> asyncio.run(to_thread(sum, [1, 2]))
    3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def to_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread``: run ``fn`` in the default executor, awaitable."""
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)
