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

#: Jobs read per search page while collecting a bulk action's matches.
SEARCH_PAGE = 500


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

    if oldest_first:
        raise click.UsageError("--search lists newest first: drop --oldest-first")
    both, terms = prepared(app, query, job_filter)
    params = JobSearchParams(both, terms, limit, after)
    page = app.backend.job_search(params)
    counted = search_count(app.backend.job_search, params, page)
    return both, (page.scanned, page.complete), list(page.jobs), counted, terms


def prepared(
    app: App, query: str, job_filter: JobFilter
) -> tuple[JobFilter, tuple[SearchTerm, ...]]:
    """The query parsed (a usage error when the language refuses it), its filter ANDed
    with the options' and bound to the app's signatures, and its text terms."""
    from conveyor.search_query import SearchSyntaxError, narrowed, parse_search

    if "search" not in app.backend.features:
        raise click.ClickException(f"the {app.backend.name} store cannot search jobs yet")
    try:
        parsed = parse_search(query)
    except SearchSyntaxError as exc:
        raise click.BadParameter(str(exc), param_hint="--search") from None
    both = bound_to(narrowed(job_filter, parsed.filter), app, note=False)
    refuse_secret_where(app.backend, both)
    return both, parsed.terms


def search_ids(app: App, query: str, job_filter: JobFilter) -> tuple[JobFilter, list[str]]:
    """Every job ``query`` matches (with ``job_filter``), read page after page of the
    search (a scan's bound only ends a page: the next goes on), for a bulk action;
    newest first. The filter both make, for the audit's record."""
    both, terms = prepared(app, query, job_filter)
    ids: list[str] = []
    before: str | None = None
    while True:
        page = app.backend.job_search(JobSearchParams(both, terms, SEARCH_PAGE, before))
        ids += [j.id for j in page.jobs]
        if page.next_before is None:
            return both, list(dict.fromkeys(ids))
        before = page.next_before
