"""The chain client's HTTP transport against a node whose answers are larger than it will buffer.

A node (or a proxy posing as one) can answer a JSON-RPC call with any number of bytes. The transport reads
at most `MAX_RESPONSE_BYTES` of a body: an answer that declares more is refused before anything is read, one
without a length (chunked, or closed at its end) once one byte more has come. Either way the caller gets a
connection error it can retry or report, the connection is dropped (the rest of the body is still on it), and the
next call on the same provider gets a fresh connection and its answer.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
import requests
from web3.types import RPCEndpoint

from offchain.chain import _transport
from offchain.chain._transport import KeepAliveHTTPProvider, ResponseTooLarge

LIMIT = 4096
SMALL = b'{"jsonrpc":"2.0","id":1,"result":"0x1"}'


class Node(http.server.BaseHTTPRequestHandler):
    """Answers by path: /big declares LIMIT + 1 bytes, /chunked sends them chunked, /small sends SMALL."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        big = b"x" * (LIMIT + 1)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, len(big), 1000):
                part = big[at : at + 1000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        body = big if self.path == "/big" else SMALL
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(_transport, "MAX_RESPONSE_BYTES", LIMIT)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Node)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", ["/big", "/chunked"])
def test_an_answer_beyond_the_bound_is_refused_and_the_next_call_works(node: str, path: str) -> None:
    provider = KeepAliveHTTPProvider(node + path, timeout=5)
    with pytest.raises(ResponseTooLarge, match=f"more than {LIMIT}|longer than {LIMIT}") as caught:
        provider._make_request(RPCEndpoint("eth_getLogs"), b"{}")
    assert isinstance(caught.value, requests.exceptions.ConnectionError)  # what the chain client retries
    assert getattr(provider._local, "conn", None) is None, "the connection with the rest of the body was dropped"
    small = KeepAliveHTTPProvider(node + "/small", timeout=5)
    assert small._make_request(RPCEndpoint("eth_blockNumber"), b"{}") == SMALL


def test_answers_within_the_bound_keep_the_connection(node: str) -> None:
    provider = KeepAliveHTTPProvider(node + "/small", timeout=5)
    assert provider._make_request(RPCEndpoint("eth_blockNumber"), b"{}") == SMALL
    conn = provider._local.conn
    assert provider._make_request(RPCEndpoint("eth_blockNumber"), b"{}") == SMALL
    assert provider._local.conn is conn, "a kept-alive connection was dropped for nothing"
