"""One redaction for every URL conveyor shows: each form a password can take is hidden,
and everything else (user, host, port, database, other options) is kept."""

from __future__ import annotations

import pytest

import conveyor
from conveyor.backends.redis.url import parse_redis_url
from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

SECRET = "s3cret-ZQX"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{SECRET}@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"redis://user:{SECRET}@cache:6379/0", "redis://user:***@cache:6379/0"),
        (f"rediss://user:{SECRET}@cache:6380/1", "rediss://user:***@cache:6380/1"),
        (f"redis://cache:6379/0?password={SECRET}", "redis://cache:6379/0?password=***"),
        (
            f"rediss://cache/0?prefix=app&PASSWORD={SECRET}&result_ttl=60",
            "rediss://cache/0?prefix=app&PASSWORD=***&result_ttl=60",
        ),
        (
            f"redis://u:{SECRET}@cache/0?password={SECRET}&prefix=p",
            "redis://u:***@cache/0?password=***&prefix=p",
        ),
        (f"redis://:{SECRET}@[::1]:6379/0", "redis://:***@[::1]:6379/0"),
        ("redis://:p%40ss@cache/0", "redis://:***@cache/0"),
        ("redis://:p@ss/wo?rd#x@cache:6379/0", "redis://:***@cache:6379/0"),  # unencoded
        (f"redis://:{SECRET}@cache/0?prefix=a@b", "redis://:***@cache/0?prefix=a@b"),
        (f"sqlite:///jobs.db?password={SECRET}", "sqlite:///jobs.db?password=***"),
        (
            f"sqlite:///x.db?busy_timeout=5&token={SECRET}",
            "sqlite:///x.db?busy_timeout=5&token=***",
        ),
        # nothing to hide: unchanged
        ("redis://cache:6379/0?prefix=a@b", "redis://cache:6379/0?prefix=a@b"),
        ("redis://user@cache:6379/0", "redis://user@cache:6379/0"),
        ("sqlite:///dir/a@b.db?synchronous=FULL", "sqlite:///dir/a@b.db?synchronous=FULL"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
    ],
)
def test_every_password_form_is_hidden(url: str, shown: str) -> None:
    assert redacted(url) == shown
    for part in (SECRET, "p%40ss", "wo?rd"):
        assert part not in redacted(url)


def test_repr_of_an_app_hides_the_password() -> None:
    for url in (f"redis://:{SECRET}@h:1/0", f"redis://h:1/0?password={SECRET}"):
        text = repr(conveyor.App(url))
        assert SECRET not in text and "***" in text


def test_the_redis_backend_shows_the_redacted_url() -> None:
    options = parse_redis_url(f"redis://h:1/0?password={SECRET}&prefix=p")
    assert options.safe_url == "redis://h:1/0?password=***&prefix=p"
    assert SECRET in options.client_url  # redis-py still gets it


def test_configuration_errors_hide_the_password() -> None:
    for url in (f"sqlite://host/x.db?password={SECRET}", f"redis://:{SECRET}@h:1/0?result_ttl=x"):
        with pytest.raises(ConfigurationError) as caught:
            conveyor.App(url).backend  # noqa: B018 - opening is what raises
        assert SECRET not in str(caught.value), caught.value
