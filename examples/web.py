"""A tiny web shop front (stdlib ``wsgiref``) that enqueues a job per order.

    python web.py --port 8000

- ``POST /orders`` with a JSON body ``{"order_id": 1, "email": "ada@example.com"}``:
  enqueues ``send_receipt`` and answers ``202`` with ``{"job_id": ...}`` at once;
- ``GET /jobs/<id>``: that job's ``state`` (and ``result`` once it succeeded).

Any WSGI or ASGI framework enqueues the same way: ``send_receipt.enqueue(...)`` is one
short write to the store, so it belongs in the request (use ``aenqueue`` in async code).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from tasks import app, send_receipt

import conveyor

Respond = Callable[[str, list[tuple[str, str]]], Any]


def shop(environ: dict[str, Any], respond: Respond) -> Iterable[bytes]:
    """The WSGI application."""
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
    if method == "POST" and path == "/orders":
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            order = json.loads(environ["wsgi.input"].read(length))
            job = send_receipt.enqueue(int(order["order_id"]), str(order["email"]))
        except (ValueError, KeyError, TypeError) as exc:
            return _json(respond, "400 Bad Request", {"error": str(exc)})
        return _json(respond, "202 Accepted", {"job_id": job.id})
    if method == "GET" and path.startswith("/jobs/"):
        try:
            record = app.job(path.removeprefix("/jobs/")).refresh()
        except conveyor.JobNotFound:
            return _json(respond, "404 Not Found", {"error": "no such job"})
        body: dict[str, Any] = {"id": record.id, "state": str(record.state)}
        if record.state == "succeeded":
            body["result"] = app.job(record.id).result(timeout=0)
        return _json(respond, "200 OK", body)
    return _json(respond, "404 Not Found", {"error": f"no route {method} {path}"})


def _json(respond: Respond, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    respond(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per request, stderr
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    args = parser.parse_args()
    server = make_server(args.host, args.port, shop, handler_class=QuietHandler)
    # SIGTERM (systemd, docker stop, a test) ends the server like Ctrl-C: exit 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"shop listening on http://{args.host}:{server.server_port}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
