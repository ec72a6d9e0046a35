"""Text from jobs made safe to print: one escaping rule for the CLI, its errors and the
worker's log lines.

Job arguments, results, errors, log and progress messages, queue and task names come
from users' data; printed raw, an escape sequence in one of them could colour, move or
clear the reader's terminal. :func:`literal` shows every control character as an escape
instead: C0 controls, DEL, C1 controls, and the Unicode line/paragraph separators and
bidi overrides that can rearrange or hide what follows them. Stdlib only (the worker's
console handler imports it).

Example:
    >>> literal("bad \\x1b[31mred\\r")
    'bad \\\\x1b[31mred\\\\r'
    >>> literal("a\\nb", multiline=True)
    'a\\nb'
    >>> literal(None)
    '-'
"""

from __future__ import annotations

import functools
import re

from conveyor.rowtext import printable

_UNICODE_CONTROL = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = f"[\x00-\x1f\x7f-\x9f{_UNICODE_CONTROL}]"
_CONTROL_BUT_NEWLINE = f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_UNICODE_CONTROL}]"
_NAMED = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def literal(value: object, *, multiline: bool = False) -> str:
    """``value`` as text safe to show on a terminal: control characters escaped.

    ``multiline`` keeps newlines (a traceback shown as a block, a log record with its
    exception); everything else, a table cell or an ``Error:`` line, stays on one line.
    ``None`` reads ``-``; a lone surrogate (a row written around the API) reads U+FFFD,
    so the text always encodes.
    """
    text = "-" if value is None else printable(str(value))
    if text.isprintable():  # every escaped character is non-printable: nothing to escape
        return text
    pattern = _compiled(_CONTROL_BUT_NEWLINE if multiline else _CONTROL)
    return pattern.sub(_escape, text) if pattern.search(text) else text


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    # Compiled on first use: the class spans non-ASCII ranges (~2.5 ms to compile here),
    # and most processes (a worker's start-up lines) only ever show printable text.
    return re.compile(pattern)
