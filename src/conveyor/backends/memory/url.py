"""``memory://NAME`` URLs: parsed without touching anything.

Example:
    >>> parse_memory_url("memory://tests"), parse_memory_url("memory://")
    ('tests', '')
    >>> parse_memory_url("memory:///x")
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: memory URL 'memory:///x' must be memory://NAME (letters, digits, . _ -) or memory:// for a private store
"""

from __future__ import annotations

import re

from conveyor.errors import ConfigurationError

_NAME = re.compile(r"[A-Za-z0-9._-]*")


def parse_memory_url(url: str) -> str:
    """The store name of ``url`` (``""``: a private store)."""
    scheme, sep, rest = url.partition("://")
    if scheme.lower() != "memory" or not sep or not _NAME.fullmatch(rest):
        raise ConfigurationError(
            f"memory URL {url!r} must be memory://NAME (letters, digits, . _ -) "
            "or memory:// for a private store"
        )
    return rest
