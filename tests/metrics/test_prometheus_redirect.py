"""A data source that answers with a redirect: the request is not repeated to the address it
names, so its credentials never reach another host; the error says where it redirects."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ingest.clients.prometheus import PrometheusError, Server, range_query


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def _answer(self) -> None:
        type(self).seen.append(dict(self.headers))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"status":"success","data":{"resultType":"matrix","result":[]}}')

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        return


def _serve(handler: type) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def elsewhere() -> Iterator[str]:
    _Recorder.seen = []
    yield from _serve(_Recorder)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_token_goes_nowhere_else(elsewhere: str, code: int) -> None:
    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.send_response(code)
            self.send_header("Location", f"{elsewhere}{self.path}")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    for url in _serve(Redirect):
        server = Server(url=url, bearer_token="s3cret-token", timeout=5)
        with pytest.raises(PrometheusError) as caught:
            range_query(server, "up", start=0, end=60, step=15)
        assert f"redirects to {elsewhere}/api/v1/query_range" in str(caught.value)
        assert "s3cret" not in str(caught.value)
    assert _Recorder.seen == []  # nothing was sent on, the token least of all


def test_the_address_it_redirects_to_answers_when_given(elsewhere: str) -> None:
    server = Server(url=elsewhere, bearer_token="s3cret-token", timeout=5)
    assert range_query(server, "up", start=0, end=60, step=15)["status"] == "success"
    assert _Recorder.seen[0]["Authorization"] == "Bearer s3cret-token"
