"""libpq options given in a conveyor URL reach the server exactly, whatever they hold:
spaces, ``+``, ``%`` and ``=`` (read back with ``SHOW`` on a real server, through the
backend's own pool). Before, the URL was rebuilt as an HTML form (a space became ``+``,
which libpq keeps as a plus), so ``-c statement_timeout=5000`` arrived as
``-c+statement_timeout=5000``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from conveyor.backends.postgres.backend import PostgresBackend
from tests.support.postgres_server import drop_schema, with_schema


@pytest.fixture
def schema(postgres_url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex}"
    yield name
    drop_schema(postgres_url, name)


def _show(url: str, *settings: str) -> list[str]:
    backend = PostgresBackend(url)
    try:
        with backend._tx() as cur:
            return [str(cur.execute(f"SHOW {s}").fetchone()[0]) for s in settings]  # type: ignore[index]
    finally:
        backend.close()


@pytest.mark.parametrize(
    "query",
    [
        "options=-c%20statement_timeout%3D5000",  # percent-encoded, as libpq wants it
        "options=-c statement_timeout=5000",  # written by hand: a bare space and '='
        "options=-c%20statement_timeout=5000&sslmode=disable",  # with another option
    ],
)
def test_a_server_option_with_a_space_reaches_the_server(
    postgres_url: str, schema: str, query: str
) -> None:
    url = with_schema(f"{postgres_url}?{query}", schema)
    assert _show(url, "statement_timeout", "search_path") == ["5s", schema]


def test_plus_percent_and_equals_in_values_reach_the_server_exactly(
    postgres_url: str, schema: str
) -> None:
    # '+' is a plus to libpq (not a space); %25 is '%'; '=' may appear in a value. In
    # `options`, a space inside one setting's value is escaped with a backslash (%5C).
    url = with_schema(
        f"{postgres_url}?application_name=a+b%25c=d%20e"
        "&options=-c%20work_mem%3D5MB%20-c%20lock_timeout=2s"
        "%20-c%20conveyor_test.probe%3Dx+y%25z%3Dw%5C%20v",
        schema,
    )
    assert _show(url, "application_name", "work_mem", "lock_timeout", "conveyor_test.probe") == [
        "a+b%c=d e",
        "5MB",
        "2s",
        "x+y%z=w v",
    ]
