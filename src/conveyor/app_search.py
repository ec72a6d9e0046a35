"""``App.search``: one page of the jobs matching a query of the search language
(:mod:`conveyor.search_query`; docs/search.md), newest first, from the store's index
or its bounded scan.

``args.NAME:value`` matches however the argument was passed when the app knows the
task (its signature binds NAME to a position too), as ``--where`` does.

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://app-search-doc")
    >>> @app.task(name="mail.send_welcome")
    ... def send_welcome(user_id: int) -> None: ...
    >>> job = send_welcome.enqueue(42)
    >>> page = app.search("send_welcome args.user_id:42")
    >>> [j.id for j in page.jobs] == [job.id], page.complete
    (True, True)
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from conveyor.backends.base import JobSearchPage, JobSearchParams
from conveyor.errors import ConfigurationError
from conveyor.query import bind_filter
from conveyor.search_query import parse_search

if TYPE_CHECKING:
    from conveyor.app import App


def search(
    app: App, query: str, *, limit: int = 50, before: str | None = None, max_scan: int | None = None
) -> JobSearchPage:
    """See :meth:`conveyor.App.search`. Raises ``SearchSyntaxError`` (a ValueError) for
    a query the language does not allow, ConfigurationError for a store without search."""
    backend = app.backend
    if "search" not in backend.features:
        raise ConfigurationError(f"the {backend.name} store cannot search jobs yet")
    parsed = parse_search(query)
    signatures: dict[str, inspect.Signature] = {}
    for name, task in app.tasks.items():
        try:
            signatures[name] = inspect.signature(task.fn)
        except (TypeError, ValueError):  # a callable without one: nothing to bind to
            continue
    params = JobSearchParams(bind_filter(parsed.filter, signatures), parsed.terms, limit, before)
    if max_scan is not None:
        params = JobSearchParams(params.filter, params.terms, limit, before, max_scan)
    return backend.job_search(params)
