"""Shared set-up of the dashboard's role and browser tests: a token file with an
operator (alice) and a viewer (vicky), a test client carrying a token, the CSRF field
of a page, and a real uvicorn server in a thread (the ``server`` fixture of
tests/integration/conftest.py serves a test module's ``web`` fixture with it).

Example::

    with client_as(web, ALICE) as operator:
        csrf = csrf_of(operator.get("/limits").text)
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

BASE = "http://127.0.0.1:8123"
ALICE = "op-3f9a1c77e2b04d5a"
VICKY = "ro-77c1e0d94ab25f3e"
TOKEN_FILE = f"""# conveyor dashboard tokens: NAME ROLE TOKEN
alice operator {ALICE}

vicky viewer {VICKY}
"""


def client_as(web: Any, token: str) -> Any:
    """A Starlette test client sending ``token`` as a bearer token."""
    from starlette.testclient import TestClient

    return TestClient(web, base_url=BASE, headers={"authorization": f"Bearer {token}"})


def csrf_of(page: str) -> str:
    """The CSRF field of an operator's page."""
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "page has no CSRF field"
    return found.group(1)


@contextmanager
def served(web: Any) -> Iterator[str]:
    """Serve ``web`` with uvicorn on a free loopback port (bound first: no port race);
    yields its base URL and stops it after."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(web, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if srv.started:
                break
            threading.Event().wait(0.05)
        assert srv.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()
