"""A TCP proxy in front of a JSON-RPC node that can drop connections on demand (tests only).

`RpcProxy(upstream_port)` listens on a free local port and pipes each accepted connection
to the node, one thread per direction. Faults:

- `down(seconds)`: closes every live connection now and refuses new ones (the listening
  socket is closed, so a connect fails at once) until `seconds` have passed;
- `lose_response(marker)`: the next request whose bytes contain `marker` (e.g.
  `b"eth_sendRawTransaction"`) reaches the node, but its answer is read and thrown away and
  the connection closed: the node acted, the caller saw the connection drop. With
  `partial=True` the answer's headers and most of its body get through before the cut.

Each fault is recorded in `events` (and a lost request's body in `lost`), so a test can
check that it really happened where it meant it to.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from types import TracebackType
from typing import Self

_CHUNK = 65536


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.swallow = threading.Event()  # the next answer is thrown away and the link closed
        self.partial = False  # ... after all but its last bytes got through

    def close(self) -> None:
        for s in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


class RpcProxy:
    def __init__(self, upstream_port: int, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.upstream = (host, upstream_port)
        self.events: list[str] = []
        self.lost: list[dict[str, object]] = []  # JSON bodies of requests whose answers were dropped
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._down_until = 0.0
        self._lose: bytes | None = None
        self._partial = False
        self._stop = threading.Event()
        self._listener: socket.socket | None = self._listen(0)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name="rpc-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- faults ----------------------------------------------------------------------------

    def down(self, seconds: float) -> None:
        """Close every live connection and refuse new ones for `seconds` (returns at once)."""
        with self._lock:
            self._down_until = time.monotonic() + seconds
            links, self._links = self._links, set()
            listener, self._listener = self._listener, None
        for link in links:
            link.close()
        if listener is not None:
            listener.close()
        self.events.append(f"down {seconds:g} s: closed {len(links)} connections")

    @property
    def is_down(self) -> bool:
        return time.monotonic() < self._down_until

    def lose_response(self, marker: bytes, *, partial: bool = False) -> None:
        """Let the next request containing `marker` through, but drop its answer and the connection.

        `partial`: cut the answer a few bytes before its end instead of dropping all of it.
        """
        with self._lock:
            self._lose = marker
            self._partial = partial

    # -- plumbing --------------------------------------------------------------------------

    def _listen(self, port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, port))
        s.listen(64)
        s.settimeout(0.05)
        return s

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                listener = self._listener
                if listener is None and not self.is_down:
                    listener = self._listener = self._listen(self.port)
                    self.events.append("up")
            if listener is None:
                time.sleep(0.02)
                continue
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):  # no Nagle: each forwarded write goes out at once
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, upstream)
            with self._lock:
                if self._listener is not listener:  # went down while we accepted
                    link.close()
                    continue
                self._links.add(link)
            threading.Thread(target=self._requests, args=(link,), daemon=True).start()
            threading.Thread(target=self._answers, args=(link,), daemon=True).start()

    def _requests(self, link: _Link) -> None:
        try:
            while data := link.client.recv(_CHUNK):
                with self._lock:
                    marker = self._lose
                    if marker is not None and marker in data:
                        self._lose = None
                        link.partial = self._partial
                        link.swallow.set()  # before the request goes out: its answer must not get back
                        self.lost.append(_json_body(data))
                        self.events.append(f"lost the answer to a request containing {marker.decode()}")
                link.upstream.sendall(data)
        except OSError:
            pass
        self._drop(link)

    def _answers(self, link: _Link) -> None:
        try:
            while data := link.upstream.recv(_CHUNK):
                if link.swallow.is_set():
                    if link.partial:
                        link.client.sendall(data[: max(0, len(data) - 5)])
                    break
                link.client.sendall(data)
        except OSError:
            pass
        self._drop(link)

    def _drop(self, link: _Link) -> None:
        with self._lock:
            self._links.discard(link)
        link.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            links, self._links = self._links, set()
            listener, self._listener = self._listener, None
        for link in links:
            link.close()
        if listener is not None:
            listener.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _json_body(data: bytes) -> dict[str, object]:
    start = data.find(b"{")
    try:
        body = json.loads(data[start:]) if start >= 0 else {}
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
