"""The SQLite URL is split without ``urllib.parse`` when it is plain (issue 16's cold
start); the result must be what ``urlsplit`` + ``parse_qs`` gave for every URL, plain
or not, including the ones the fast path hands back to ``urllib.parse``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from conveyor.backends.sqlite.connection import _query_options, _split_url, parse_sqlite_url
from conveyor.errors import ConfigurationError

URLS = [
    "sqlite:///jobs.db",
    "sqlite:////abs/path/jobs.db",
    "sqlite:///:memory:",
    "sqlite:///jobs.db?synchronous=FULL",
    "sqlite:///jobs.db?synchronous=normal&busy_timeout=500",
    "sqlite:///jobs.db?busy_timeout=&synchronous=FULL&flag",
    "sqlite:///jobs.db?a=1&a=2",
    "SQLite:///Jobs.db",
    "sqlite://host/jobs.db",
    "sqlite://host?x=1",
    "sqlite://",
    "sqlite:///",
    "sqlite:jobs.db",
    "sqlite:///a%20b.db",
    "sqlite:///jobs.db?synchronous=FU%4CL",
    "sqlite:///jobs.db?synchronous=+FULL",
    "sqlite:///jobs.db#frag",
    "sqlite:///jobs.db?x=1#frag",
    " sqlite:///jobs.db",
    "sqlite:///jo\tbs.db",
    "sqlite:///jöbs.db",
    "sqlite://[::1]/x.db",
    "sqlite:///x.db?=v",
    "sqlite3:///x.db",
    "redis://localhost:6379/0",
]


@pytest.mark.parametrize("url", URLS)
def test_split_matches_urlsplit(url: str) -> None:
    parts = urlsplit(url)
    assert _split_url(url) == (parts.scheme, parts.netloc, parts.path, parts.query)


@pytest.mark.parametrize("url", URLS)
def test_query_matches_parse_qs(url: str) -> None:
    query = urlsplit(url).query
    assert _query_options(query) == {k: v[-1] for k, v in parse_qs(query).items()}


def test_parsed_target_and_refusals() -> None:
    target = parse_sqlite_url("sqlite:///jobs.db?synchronous=full&busy_timeout=250")
    assert (target.synchronous, target.busy_timeout_ms) == ("FULL", 250)
    assert target.path.endswith("/jobs.db") and not target.is_memory
    assert parse_sqlite_url("sqlite:///:memory:").is_memory
    with pytest.raises(ConfigurationError, match="has a host"):
        parse_sqlite_url("sqlite://host/jobs.db")
    with pytest.raises(ConfigurationError, match="unknown sqlite URL options"):
        parse_sqlite_url("sqlite:///jobs.db?colour=blue")
    with pytest.raises(ConfigurationError, match="names no file"):
        parse_sqlite_url("sqlite:///")
