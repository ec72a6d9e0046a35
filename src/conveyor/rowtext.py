"""Stored job text as it can be shown, whatever a row holds.

Rows can be written outside the API (a migration, a ``sqlite3`` shell, a raw ``HSET``),
so a payload, result or error may be a huge string, JSON nested 100,000 deep, not JSON
at all, or text with lone surrogates that no terminal or HTTP response can encode. Every
listing (CLI and dashboard) goes through these helpers, which never raise and never
return more than they were asked for:

- :func:`printable` -- text any UTF-8 stream accepts (lone surrogates become U+FFFD);
- :func:`preview` -- at most ``limit`` characters, printable, ``…`` when cut;
- :func:`loads` -- the JSON value, or None when the text is too large, too deep or not
  JSON (the caller then shows the text itself);
- :func:`size` -- the length in UTF-8 bytes, for "N bytes" notes.

Example:
    >>> preview("x" * 500, 5)
    'xxxx…'
    >>> printable("bad \\ud800 text")
    'bad \\ufffd text'
    >>> loads("[" * 100_000 + "]" * 100_000) is None, loads('{"a": 1}')
    (True, {'a': 1})
    >>> size("é")
    2
"""

from __future__ import annotations

import json
from typing import Any

#: Characters of a stored value shown in a list cell (CLI tables, dashboard rows).
PREVIEW_CHARS = 200
#: Longest stored text parsed as JSON to be pretty-printed or previewed; larger values
#: are shown as (the start of) their text. Well above ``max_payload_bytes``' 1 MiB
#: would make a listing parse megabytes per row.
PARSE_LIMIT = 256 * 1024


def printable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """At most ``limit`` characters of ``text`` (``…`` ends a cut one); ``-`` for None."""
    if text is None:
        return "-"
    if len(text) <= limit:
        return printable(text)
    return printable(text[: limit - 1]) + "…"


def loads(text: str | None, *, limit: int = PARSE_LIMIT) -> Any:
    """The JSON value stored in ``text``; None when it is None, longer than ``limit``,
    nested too deep to parse, or not JSON."""
    if text is None or len(text) > limit:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parses(text: str | None, *, limit: int = PARSE_LIMIT) -> bool:
    """True when ``text`` is JSON :func:`loads` can read (``null`` included)."""
    if text is None or len(text) > limit:
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def dumps(value: Any, *, indent: int | None = None) -> str | None:
    """``value`` as JSON text, or None when it cannot be written (too deep). Non-ASCII
    text stays text (``"•••"``, accents); a lone surrogate becomes U+FFFD.

    >>> dumps({"card": "•••", "name": "Zoë"})
    '{"card": "•••", "name": "Zoë"}'
    """
    try:
        return printable(json.dumps(value, indent=indent, default=str, ensure_ascii=False))
    except (ValueError, RecursionError):
        return None


def json_text(value: Any) -> str:
    """One value as JSON text for a one-line preview (see :func:`dumps`)."""
    return dumps(value) or str(value)


def size(text: str | None) -> int:
    """Length of ``text`` in UTF-8 bytes (a lone surrogate counts as 3)."""
    if text is None:
        return 0
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))
