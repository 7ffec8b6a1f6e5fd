"""The load benchmark's client meets refusals as the Python client does: a 503/429 is sent again after its
``Retry-After``; the open loop counts refusals apart from errors (a real local HTTP server, scripted answers)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from benchmarks.serve_load import post_admitted


@pytest.fixture
def server():
    answers: list[int] = []
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status = answers.pop(0) if answers else 200
            body = json.dumps({"ok": status == 200}).encode()
            self.send_response(status)
            if status in (503, 429):
                self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", answers, seen
    httpd.shutdown()
    httpd.server_close()


def test_a_refused_request_is_sent_again_until_admitted(server):
    url, answers, seen = server
    answers.extend([503, 429, 503])
    with httpx.Client(base_url=url) as client:
        r, refused, ms = post_admitted(client, "/x", {"n": 1}, {})
    assert (r.status_code, refused, len(seen)) == (200, 3, 4) and ms >= 0
    assert all(body == {"n": 1} for body in seen)  # the same request each time


def test_refusals_end_after_the_attempts_and_other_errors_are_not_retried(server):
    url, answers, seen = server
    answers.extend([503] * 5)
    with httpx.Client(base_url=url) as client:
        r, refused, _ = post_admitted(client, "/x", {}, {}, attempts=3)
        assert (r.status_code, refused, len(seen)) == (503, 2, 3)
        answers[:] = [500]
        r, refused, _ = post_admitted(client, "/x", {}, {})
    assert (r.status_code, refused, len(seen)) == (500, 0, 4)
