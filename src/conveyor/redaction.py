"""``redacted(url)``: a store URL fit to show (messages, logs, titles, the dashboard).

The one place that decides what a shown URL hides, so ``repr(App)``, the worker's start
line, CLI titles and errors, and the dashboard header all agree: the password of the
user-info part (``redis://:pw@``, ``redis://user:pw@``) and the value of every query
option that carries a secret (``?password=pw``, ``?token=...``) become ``***``. The
user name, host, port, database and the other options stay, so the URL still says
where the store is. Stdlib only and imports nothing of conveyor: any module may use it.

Example:
    >>> redacted("redis://user:s3cret@cache:6379/0?prefix=app")
    'redis://user:***@cache:6379/0?prefix=app'
    >>> redacted("rediss://cache:6380/0?password=s3cret&prefix=app")
    'rediss://cache:6380/0?password=***&prefix=app'
    >>> redacted("sqlite:///jobs.db?busy_timeout=5000")
    'sqlite:///jobs.db?busy_timeout=5000'
"""

from __future__ import annotations

MASK = "***"
#: Query options whose value is a secret (compared lower-case, after percent-decoding).
SECRET_OPTIONS = frozenset(
    {"password", "passwd", "pwd", "pass", "secret", "token", "auth", "api_key", "apikey"}
)


def redacted(url: str) -> str:
    """``url`` with its password and secret query options replaced by ``***``.

    A password should be percent-encoded (``%40`` for ``@``), but an unencoded ``@``,
    ``?``, ``#`` or ``/`` in it is hidden too: the user-info is taken up to the last
    ``@`` (one inside an option's value, ``?prefix=a@b``, excepted).

    Example:
        >>> redacted("redis://:p@ss/w?rd@cache:6379/0")
        'redis://:***@cache:6379/0'
        >>> redacted("redis://cache:6379/0")
        'redis://cache:6379/0'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _redact_query(url)
    rest = _redact_userinfo(rest)
    return f"{scheme}://{_redact_query(rest)}"


def _redact_userinfo(rest: str) -> str:
    """``rest`` (after ``scheme://``) with the password of its user-info masked."""
    if not rest or rest[0] in "/?#":
        return rest  # no authority (sqlite:///path): nothing to hide there
    at = rest.rfind("@")
    query = rest.find("?")
    if query != -1 and query < at and "=" in rest[query:at]:
        at = rest.rfind("@", 0, query)  # that "@" is inside an option's value
    if at == -1:
        return rest
    userinfo, host_and_more = rest[:at], rest[at + 1 :]
    user, colon, _ = userinfo.partition(":")
    if not colon:
        return rest  # a user name only (redis://user@host): no password to hide
    return f"{user}:{MASK}@{host_and_more}"


def _redact_query(text: str) -> str:
    """``text`` with the values of secret query options masked (order and form kept)."""
    before, mark, query = text.partition("?")
    if not mark:
        return text
    query, hash_mark, fragment = query.partition("#")
    fields = []
    for field in query.split("&"):
        name, eq, _ = field.partition("=")
        if eq and _unquoted(name).strip().lower() in SECRET_OPTIONS:
            field = f"{name}={MASK}"
        fields.append(field)
    return f"{before}?{'&'.join(fields)}{hash_mark}{fragment}"


def _unquoted(name: str) -> str:
    # urllib.parse only for an escaped name: every module may import this one, and
    # urllib.parse is a few ms of a cold start (issue 16).
    if "%" not in name:
        return name  # what unquote returns for it
    from urllib.parse import unquote

    return unquote(name)
