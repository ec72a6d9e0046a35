"""The PostgreSQL URL: conveyor's options taken out, libpq's left, bad values refused
before anything connects (no driver needed)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from conveyor.app import check_url
from conveyor.backends.postgres.url import parse_postgres_url, query_pairs
from conveyor.errors import ConfigurationError


def test_defaults_and_both_schemes() -> None:
    for scheme in ("postgresql", "postgres"):
        target = parse_postgres_url(f"{scheme}://app@db/main")
        assert (target.schema, target.pool_max, target.pool_max_given) == ("conveyor", 10, False)
        assert target.conninfo == f"{scheme}://app@db/main"


def test_conveyor_options_are_removed_and_libpq_options_kept() -> None:
    target = parse_postgres_url(
        "postgresql://app:pw@db:5433/main?sslmode=require&schema=jobs&pool_max=4"
    )
    assert target.conninfo == "postgresql://app:pw@db:5433/main?sslmode=require"
    assert (target.schema, target.pool_max, target.pool_max_given) == ("jobs", 4, True)
    assert "pw" not in target.safe_url and "***" in target.safe_url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://db/main?schema=Jobs", "lower-case identifier"),
        ("postgresql://db/main?schema=a;drop", "lower-case identifier"),
        ("postgresql://db/main?schema=" + "a" * 64, "lower-case identifier"),
        ("postgresql://db/main?pool_max=many", "pool_max must be a whole number"),
        ("postgresql://db/main?pool_max=1", "at least 2"),
        ("postgresql://db:port/main", "port"),
    ],
)
def test_bad_values_are_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_postgres_url(url)
    with pytest.raises(ConfigurationError, match=message):
        check_url(url)  # the App/CLI check takes the same path


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("-c%20statement_timeout%3D5000", "-c statement_timeout=5000"),
        ("-c statement_timeout=5000", "-c statement_timeout=5000"),  # bare, by hand
        ("-c+x", "-c+x"),  # libpq's '+' is a plus, not a form's space
        ("a%25b%2Bc%3Dd%26e", "a%b+c=d&e"),
        ("caf%C3%A9", "café"),
    ],
)
def test_libpq_values_are_passed_on_as_libpq_reads_them(written: str, meant: str) -> None:
    conninfo = parse_postgres_url(f"postgresql://db/main?schema=s&options={written}").conninfo
    assert query_pairs(urlsplit(conninfo).query) == [("options", meant)]
    assert " " not in conninfo and "+" not in conninfo  # libpq refuses a bare space
