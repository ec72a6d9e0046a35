"""``conveyor jobs --search``: one page of a search (the query's filter ANDed with the
options'), how many jobs match in all, and the words to mark (docs/search.md).

Example::

    conveyor jobs --search 'error:timeouterror state:dead'   # ... then "3 matches"
"""

from __future__ import annotations

import click

from conveyor.app import App
from conveyor.backends.base import JobFilter, JobRecord, JobSearchParams
from conveyor.backends.search_params import SearchTerm
from conveyor.backends.search_scan import SearchCount
from conveyor.cli.filters import bound_to
from conveyor.secrets import refuse_secret_where


def searched(
    app: App,
    query: str,
    job_filter: JobFilter,
    limit: int,
    after: str | None,
    oldest_first: bool,
) -> tuple[
    JobFilter, tuple[int | None, bool], list[JobRecord], SearchCount | None, tuple[SearchTerm, ...]
]:
    """``jobs --search``: the query's filter ANDed with the options', one search page,
    and how many jobs match in all (see ``search_count``)."""
    from conveyor.backends.search_scan import search_count
    from conveyor.search_query import SearchSyntaxError, narrowed, parse_search

    if oldest_first:
        raise click.UsageError("--search lists newest first: drop --oldest-first")
    if "search" not in app.backend.features:
        raise click.ClickException(f"the {app.backend.name} store cannot search jobs yet")
    try:
        parsed = parse_search(query)
    except SearchSyntaxError as exc:
        raise click.BadParameter(str(exc), param_hint="--search") from None
    both = bound_to(narrowed(job_filter, parsed.filter), app, note=False)
    refuse_secret_where(app.backend, both)
    params = JobSearchParams(both, parsed.terms, limit, after)
    page = app.backend.job_search(params)
    counted = search_count(app.backend.job_search, params, page)
    return both, (page.scanned, page.complete), list(page.jobs), counted, parsed.terms
