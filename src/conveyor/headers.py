"""Job headers: a small ``str -> str`` mapping that travels with a job.

Set at enqueue (``task.with_options(headers={...})``, and by middlewares' ``on_enqueue``),
stored with the job as one JSON object (``NULL`` / absent when empty), visible inside the
task as ``current_job().headers``, in ``conveyor job ID`` and on the dashboard's job page.
Tracing context (W3C ``traceparent``), tenant ids and request ids go here; arguments do
not (headers are not encrypted, not type-checked against the task, and bounded).

Bounds, the same on every backend and checked after the middlewares ran (what is stored
is what is bounded): at most :data:`MAX_HEADERS` entries, at most
:data:`MAX_HEADERS_BYTES` bytes of UTF-8 keys and values together; keys are non-empty.

Example:
    >>> encode(check({"tenant": "acme"}))
    '{"tenant":"acme"}'
    >>> dict(decode('{"tenant":"acme"}'))
    {'tenant': 'acme'}
    >>> check({"n": 1})
    Traceback (most recent call last):
    ...
    conveyor.options.OptionTypeError: headers must map str to str, got int for 'n'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

from conveyor.options import OptionTypeError, OptionValueError

#: Most entries a job's headers may have.
MAX_HEADERS = 64
#: Most bytes (UTF-8) of all keys and values of a job's headers together.
MAX_HEADERS_BYTES = 8192

EMPTY: Mapping[str, str] = MappingProxyType({})


def check(headers: object) -> dict[str, str]:
    """A copy of ``headers`` as a plain dict, or the reason it cannot be stored (one
    line naming the limit): not a mapping of str to str, an empty key, more than
    :data:`MAX_HEADERS` entries, more than :data:`MAX_HEADERS_BYTES` bytes."""
    if not isinstance(headers, Mapping):
        raise OptionTypeError(
            f"headers must be a mapping of str to str, got {type(headers).__name__}"
        )
    size = 0
    for key, value in headers.items():
        if not isinstance(key, str):
            raise OptionTypeError(f"headers keys must be str, got {type(key).__name__} {key!r}")
        if not isinstance(value, str):
            raise OptionTypeError(
                f"headers must map str to str, got {type(value).__name__} for {key!r}"
            )
        if not key:
            raise OptionValueError("headers keys must be non-empty")
        try:
            size += len(key.encode("utf-8")) + len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise OptionValueError(
                f"headers entry {key!r} is not valid UTF-8 text (a lone surrogate)"
            ) from None
    if len(headers) > MAX_HEADERS:
        raise OptionValueError(
            f"headers have {len(headers)} entries, more than the limit of {MAX_HEADERS}"
        )
    if size > MAX_HEADERS_BYTES:
        raise OptionValueError(
            f"headers are {size} bytes, more than the limit of {MAX_HEADERS_BYTES} bytes"
        )
    return dict(headers)


def encode(headers: Mapping[str, str] | None) -> str | None:
    """The stored form: compact JSON, ``None`` for no headers (nothing stored)."""
    if not headers:
        return None
    return json.dumps(dict(headers), separators=(",", ":"), ensure_ascii=False)


def decode(text: str | None) -> Mapping[str, str]:
    """The read-only mapping of a stored value. Never raises: a row written around the
    API with something else than a JSON object of strings reads as the entries that are
    strings (none for text that is not JSON), so a bad header never stops a job.

    >>> dict(decode('{"a":"1","b":2}')), dict(decode("nonsense")), dict(decode(None))
    ({'a': '1'}, {}, {})
    """
    if not text:
        return EMPTY
    try:
        data = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return EMPTY
    if not isinstance(data, dict):
        return EMPTY
    return MappingProxyType(
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}
    )
