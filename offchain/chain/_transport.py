"""web3's HTTPProvider over one kept-alive `http.client` connection per thread.

web3 posts every JSON-RPC request through `requests`, which costs about 1.3 ms of Python a request on our
machines (1.5 ms against 0.2 ms for the same post through `http.client`; `requests` re-reads the proxy
environment each time). An agent makes thousands of reads per task, so the chain client sends them this way
instead. What stays as it was: the request bytes and headers, the timeout, and the errors, raised as the
`requests` exceptions web3 raises (a refused or dropped connection is `requests.ConnectionError`, a timeout
`requests.Timeout`, an HTTP error status `requests.HTTPError`), which the chain client retries or reports.

A URL with a user name or password, or one that the environment's proxy settings cover, goes through
`requests` as before: it knows how to authenticate and to use the proxy.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import urllib.request
from typing import Any, Final
from urllib.parse import urlsplit

import requests
from web3.providers.rpc import HTTPProvider
from web3.types import RPCEndpoint

_HEADERS: Final = {"Content-Type": "application/json", "Connection": "keep-alive"}
_SENDS: Final = frozenset({"eth_sendRawTransaction", "eth_sendTransaction"})
# The largest response body read into memory. A node (or something posing as one) that answers more is refused
# with a connection error, not buffered: an agent's largest answers, log queries over a whole market's history,
# stay far below it.
MAX_RESPONSE_BYTES: Final = 64 << 20


class ResponseTooLarge(requests.exceptions.ConnectionError):
    """The node's answer is larger than MAX_RESPONSE_BYTES (the body was not read)."""


def _dropped(e: BaseException) -> bool:
    """Whether `e` says the server dropped the connection before answering anything."""
    return isinstance(e, ConnectionResetError | BrokenPipeError | http.client.RemoteDisconnected)


def _direct(url: str) -> bool:
    """Whether `url` can be posted to without `requests`: plain http(s), no credentials, no proxy."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.username or parts.password or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    return parts.scheme not in proxies or bool(urllib.request.proxy_bypass(parts.hostname))


def _bounded_body(response: http.client.HTTPResponse, method: str, url: str) -> bytes:
    """The response's body, refused (`ResponseTooLarge`) beyond MAX_RESPONSE_BYTES: by its declared length before
    reading anything, else (chunked, or no length) once one byte more than the bound has come."""
    limit = MAX_RESPONSE_BYTES
    declared = response.getheader("Content-Length")
    if declared is not None and declared.strip().isdigit():
        if int(declared) > limit:
            raise ResponseTooLarge(f"{method} to {url}: the answer declares {int(declared)} bytes, more than {limit}")
        return response.read()  # all of it: a body cut short raises IncompleteRead, retried as a dropped connection
    body = response.read(limit + 1)
    if len(body) > limit:
        raise ResponseTooLarge(f"{method} to {url}: the answer is longer than {limit} bytes")
    return body


def _readable(sock: socket.socket) -> bool:
    """Whether `sock` has something to read now (poll, not select: select fails on descriptors above 1023)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class KeepAliveHTTPProvider(HTTPProvider):
    """An HTTPProvider whose posts reuse one `http.client` connection per thread (see the module's docstring)."""

    def __init__(self, endpoint_uri: str, *, timeout: float) -> None:
        super().__init__(endpoint_uri, request_kwargs={"timeout": timeout}, exception_retry_configuration=None)
        parts = urlsplit(endpoint_uri)
        self._direct = _direct(endpoint_uri)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._timeout = timeout
        self._local = threading.local()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it has carried a request before."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        # A kept-alive connection the server has closed reads as ready (end of file) while we have asked
        # nothing: open a new one before sending, rather than send into a dead socket.
        if conn is not None and (conn.sock is None or _readable(conn.sock)):
            conn.close()
            conn = None
        if conn is not None:
            return conn, True
        if self._https:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        self._local.conn = conn
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def _make_request(self, method: RPCEndpoint, request_data: bytes) -> Any:
        if not self._direct:
            return super()._make_request(method, request_data)
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                conn.request("POST", self._path, body=request_data, headers=_HEADERS)
                response = conn.getresponse()
                body = _bounded_body(response, method, self.endpoint_uri)
                break
            except ResponseTooLarge:
                self._drop()  # the rest of the body is still on the socket
                raise
            except TimeoutError as e:
                self._drop()
                raise requests.exceptions.Timeout(f"{method} to {self.endpoint_uri} timed out: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                # The server closed a kept-alive connection just as we sent on it (it closes idle ones when it
                # likes; the check before sending cannot see a close that crosses the request): nothing came
                # back, so a read goes again on a new connection. A transaction is never sent twice here.
                if attempt == 1 and reused and _dropped(e) and method not in _SENDS:
                    continue
                why = f"{type(e).__name__}: {e}"
                raise requests.exceptions.ConnectionError(f"{method} to {self.endpoint_uri}: {why}") from e
        if response.will_close or not response.isclosed():
            self._drop()
        if response.status >= 400:
            raise requests.exceptions.HTTPError(
                f"{response.status} {response.reason} for url: {self.endpoint_uri}", response=None
            )
        return body
