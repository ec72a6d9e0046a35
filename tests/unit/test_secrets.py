"""The key ring's format, sealing bound to task and argument, and masking without keys."""

from __future__ import annotations

import base64
import hashlib
import json
import os

import pytest

import conveyor
from conveyor.secrets import KeyRing, Sealer, SecretKeyError, mask_payload, sealed_arguments


def _b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_key_ring_format_ids_and_order() -> None:
    old, new = os.urandom(32), os.urandom(32)
    ring = KeyRing.parse(f" new:{_b64(new)} , {_b64(old)} ,")
    assert [i for i, _ in ring.keys] == ["new", hashlib.sha256(old).hexdigest()[:8]]
    assert ring.seal('"x"', b"a")["$secret"].startswith("new:")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no secret keys"),
        ("k1:not base64!", "entry 1 is not base64"),
        (f"k1:{_b64(bytes(32))},k2:{_b64(bytes(16))}", "entry 2 is 16 bytes"),
        (f"bad id:{_b64(bytes(32))}", "key id 'bad id'"),
    ],
)
def test_key_ring_refuses_malformed_entries(text: str, message: str) -> None:
    with pytest.raises(SecretKeyError, match=message):
        KeyRing.parse(text)


def test_a_sealed_value_opens_only_for_its_task_and_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", f"k1:{_b64(os.urandom(32))}")

    def charge(card: str, pin: conveyor.Secret[str]) -> None: ...

    sealer = Sealer("shop.charge", charge, ["card", "pin"])
    args, kwargs = sealer.seal(["4111"], {"pin": "1234"})
    payload = json.dumps({"args": args, "kwargs": kwargs}, separators=(",", ":"))
    assert json.loads(sealer.open_payload(payload)) == {"args": ["4111"], "kwargs": {"pin": "1234"}}
    assert sealed_arguments(payload) == ["args[0]", "kwargs.pin"]
    assert mask_payload(payload) == '{"args":["•••"],"kwargs":{"pin":"•••"}}'
    swapped = json.dumps({"args": [kwargs["pin"]], "kwargs": {"pin": args[0]}})
    with pytest.raises(SecretKeyError, match="secret argument 'card' cannot be opened"):
        sealer.open_payload(swapped)
    other_task = Sealer("shop.refund", charge, ["card", "pin"])
    with pytest.raises(SecretKeyError, match="does not open"):
        other_task.open_payload(payload)


def test_secret_names_must_be_parameters() -> None:
    app = conveyor.App("sqlite:///:memory:")

    def f(card: str, *rest: str) -> None: ...

    with pytest.raises(conveyor.ConfigurationError, match="'pan', which is not a named parameter"):
        app.task(secret=["pan"])(f)
    with pytest.raises(conveyor.ConfigurationError, match="'rest'"):
        app.task(secret=["rest"])(f)
    with pytest.raises(conveyor.ConfigurationError, match="list of parameter names"):
        app.task(secret="card")(f)


def test_mask_leaves_plain_and_odd_payloads_alone() -> None:
    assert mask_payload('{"args":["$secret"],"kwargs":{}}') == '{"args":["$secret"],"kwargs":{}}'
    assert mask_payload(None) is None
    assert sealed_arguments("not json $secret") == []
