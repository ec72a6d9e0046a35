"""The codec stores only what JSON holds faithfully: NaN/Infinity, non-string keys, lone
surrogates and nesting deeper than ``MAX_DEPTH`` are refused with ``EncodeError`` naming
the argument and the path inside it, for arguments and results alike.

Before, NaN was stored as the non-JSON ``NaN`` (breaking every SQLite ``--where``),
``{1: "a", "1": "b"}`` silently lost a value and deep nesting raised ``RecursionError``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.codec import MAX_DEPTH, encode, encode_payload
from conveyor.errors import EncodeError


def _payload(*args: Any, **kwargs: Any) -> str:
    return encode_payload(args, kwargs, max_bytes=10**8)


def _nested(depth: int) -> list[Any]:
    """A list nested ``depth`` levels deep (itself included)."""
    root: list[Any] = []
    inner = root
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return root


@dataclasses.dataclass
class Reading:
    value: float


@pytest.mark.parametrize(
    ("args", "kwargs", "where", "why"),
    [
        ((math.nan,), {}, "positional argument 0 at args[0]:", "nan is not a JSON number"),
        ((), {"x": math.inf}, "argument 'x' at kwargs.x:", "inf is not a JSON number"),
        ((), {"data": [0, 1, 2, {"x": -math.inf}]}, 'kwargs.data[3]["x"]:', "-inf"),
        (({1: "a", "1": "b"},), {}, "args[0]:", "dict key 1 is of type int, not a string"),
        (({(1, 2): "a"},), {}, "args[0]:", "not a string"),
        ((["ok", "a\udc80"],), {}, "args[0][1]:", "lone surrogate"),
        (({"k\ud800": 1},), {}, "args[0]:", "lone surrogate"),
        (("\udfff",), {}, "args[0]:", "lone surrogate"),
        ((), {"r": [Reading(math.nan)]}, 'kwargs.r[0]["value"]:', "nan"),
        ((_nested(MAX_DEPTH + 1),), {}, "args[0][0]", f"nested deeper than {MAX_DEPTH}"),
        ((_nested(10_000),), {}, "args[0][0]", f"nested deeper than {MAX_DEPTH}"),
    ],
)
def test_refused_argument_names_the_argument_and_path(
    args: tuple[Any, ...], kwargs: dict[str, Any], where: str, why: str
) -> None:
    with pytest.raises(EncodeError) as raised:
        _payload(*args, **kwargs)
    message = str(raised.value)
    assert where in message
    assert why in message


def test_nesting_up_to_max_depth_is_accepted_and_round_trips() -> None:
    value = _nested(MAX_DEPTH)
    assert json.loads(_payload(value))["args"][0] == value


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ([1.0, math.nan], "result[1]"),
        ({"a": {2: "x"}}, 'result["a"]'),
        (["\udc80"], "result[0]"),
        (_nested(5_000), "result[0]"),
    ],
)
def test_refused_result_is_an_encode_error_with_the_path(value: Any, path: str) -> None:
    with pytest.raises(EncodeError) as raised:
        encode(value)
    assert str(raised.value).startswith(f"cannot encode result at {path}")


def test_enqueue_of_a_refused_argument_writes_nothing(tmp_path: Any) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path}/c.db")

    @app.task
    def f(data: object) -> None: ...

    for bad in (math.nan, {1: "a"}, "x\udc80", _nested(10_000)):
        with pytest.raises(EncodeError, match=r"positional argument 0 at args\[0\]"):
            f.enqueue(bad)
    assert app.backend.job_list(JobListParams(limit=10)) == []
    app.close()


# -- properties ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # hypothesis text never holds lone surrogates
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(
    args=st.lists(json_values, max_size=4),
    kwargs=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), json_values, max_size=4),
)
def test_any_json_value_round_trips(args: list[Any], kwargs: dict[str, Any]) -> None:
    decoded = json.loads(_payload(*args, **kwargs))
    assert decoded == {"args": args, "kwargs": kwargs}
    assert json.loads(encode(args)) == args


def _plant(value: Any, bad: Any, path: list[Any]) -> Any:
    """``value`` with ``bad`` put at the end of a path of list indexes/dict keys."""
    if not path:
        return bad
    step, rest = path[0], path[1:]
    return {step: _plant(value, bad, rest)} if isinstance(step, str) else [_plant(value, bad, rest)]


def _path_text(path: list[Any]) -> str:
    return "".join(f"[{json.dumps(p)}]" if isinstance(p, str) else "[0]" for p in path)


steps = st.lists(st.one_of(st.just(0), st.text(alphabet="abc", min_size=1, max_size=3)), max_size=6)
bad_leaves = st.sampled_from([math.nan, math.inf, -math.inf, "\udc80x", "a\ud800"])


@settings(max_examples=100, deadline=None)
@given(path=steps, bad=bad_leaves)
def test_a_bad_leaf_anywhere_is_refused_with_its_path(path: list[Any], bad: Any) -> None:
    with pytest.raises(EncodeError) as raised:
        _payload(data=_plant(None, bad, path))
    assert f"kwargs.data{_path_text(path)}:" in str(raised.value)


@settings(max_examples=60, deadline=None)
@given(
    path=steps, key=st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
)
def test_a_non_string_key_anywhere_is_refused_with_its_path(path: list[Any], key: Any) -> None:
    with pytest.raises(EncodeError, match="not a string") as raised:
        _payload(data=_plant(None, {key: 1}, path))
    assert f"kwargs.data{_path_text(path)}:" in str(raised.value)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(min_value=MAX_DEPTH + 1, max_value=3 * MAX_DEPTH))
def test_nesting_beyond_the_limit_is_refused(depth: int) -> None:
    with pytest.raises(EncodeError, match=f"nested deeper than {MAX_DEPTH} levels"):
        _payload(_nested(depth))


def test_a_result_that_cannot_be_encoded_refuses_the_attempt_with_the_reason() -> None:
    from conveyor.backends.base import ClaimedJob
    from conveyor.context import JobContext
    from conveyor.worker.runner import run_sync

    app = conveyor.App("sqlite:///:memory:")

    @app.task(name="deep")
    def deep() -> list[Any]:
        return _nested(5_000)

    job = ClaimedJob("j", "deep", "q", '{"args":[],"kwargs":{}}', 1, 3, 1, None, 30.0, 0, 0, 0, 0)
    outcome = run_sync(app, job, JobContext("j", "deep", "q", 1, 3))
    assert outcome.status == "refused"  # dead at once: every run returns the same
    assert isinstance(outcome.error, EncodeError)
    assert "cannot encode result at result[0]" in str(outcome.error)
    assert f"nested deeper than {MAX_DEPTH} levels" in (outcome.error_json or "")
