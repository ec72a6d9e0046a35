"""A search's matched words marked in the dashboard's jobs table: each cell's text
escaped, the words of the query's positive terms in ``<mark>`` (the same words the
search matched: :func:`~conveyor.backends.search_match.highlight_spans`).

Example:
    >>> from conveyor.search_query import parse_search
    >>> marker(parse_search("timeout").terms)("<b>Timeout</b> again")
    '&lt;b&gt;<mark>Timeout</mark>&lt;/b&gt; again'
    >>> marker(())("<b>")
    '&lt;b&gt;'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from conveyor.backends.search_match import highlight_spans
from conveyor.backends.search_params import SearchTerm
from conveyor.web.html import esc

#: Escapes a cell's text (marking what it should).
Marker = Callable[[str], str]


def marker(terms: Sequence[SearchTerm]) -> Marker:
    """``esc`` where there is nothing to mark, else ``esc`` with the matched words in
    ``<mark>``; every piece escaped on its own, so no markup of the text survives."""
    if not any(not t.negated for t in terms):
        return esc

    def marked(text: str) -> str:
        out, at = [], 0
        for start, end in highlight_spans(text, terms):
            out.append(esc(text[at:start]) + f"<mark>{esc(text[start:end])}</mark>")
            at = end
        return "".join(out) + esc(text[at:])

    return marked
