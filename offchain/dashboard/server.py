"""The dashboard's snapshot thread and HTTP server (stdlib `http.server`); see the package docstring."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from offchain.agents.view import GameFeed
from offchain.chain.errors import ChainError
from offchain.contracts.protocol import Protocol
from offchain.dashboard.page import PAGE
from offchain.errors import OffchainError
from offchain.store import Store
from offchain.views import task_state

MAX_FEED = 2000  # feed lines kept (the page shows the last ones; the timelines use every move)


class DashboardError(OffchainError):
    """The dashboard cannot start (its address is taken or not valid)."""


class Snapshots:
    """The last snapshot of the chain's state, refreshed by `refresh()` (the thread calls it every interval)."""

    def __init__(self, protocol: Protocol, store: Path | None = None, *, rpc_url: str = "") -> None:
        self.protocol = protocol
        self.store = Store(store) if store is not None and Path(store).is_dir() else None
        self.rpc_url = rpc_url
        self.feed = GameFeed(protocol, from_block=1)
        self._lock = threading.Lock()
        self._snapshot: dict[str, Any] = {"ok": False, "error": "no snapshot yet", "tasks": []}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refreshes = 0

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return self._snapshot

    def refresh(self) -> None:
        try:
            data = self._read()
        except ChainError as e:  # keep the last good state, and say why it is not fresh
            with self._lock:
                self._snapshot = {**self._snapshot, "ok": False, "error": str(e), "updated": time.time()}
            return
        with self._lock:
            self._snapshot = data
            self.refreshes += 1

    def _read(self) -> dict[str, Any]:
        p = self.protocol
        chain = p.market.chain
        self.feed.poll()
        del self.feed.lines[:-MAX_FEED]
        block = chain.read(lambda: chain.w3.eth.get_block("latest"), "eth_getBlock")
        tasks = []
        questions: dict[int, dict[str, Any]] = {}
        for task_id in range(1, p.market.task_count() + 1):
            st = task_state(p, task_id)
            if st["won"] and self.store is not None:
                root = bytes.fromhex(st["groups"][st["winning_group"]]["final_state_root"][2:])
                st["result_in_store"] = self.store.has("state", root)
            for g in st["games"]:
                q = g.get("question")
                if q and q not in questions:
                    view = p.oracle.question(q)
                    questions[q] = {"question": q, "game": g["game"], "status": view.status.name.lower(),
                                    "deadline": view.deadline, "ended": view.status.ended}  # fmt: skip
            tasks.append(st)
        lines = [line.to_json() for line in self.feed.lines]
        timelines: dict[str, list[dict[str, Any]]] = {}
        for line in lines:
            if line["game"] is not None:
                timelines.setdefault(str(line["game"]), []).append(line)
        return {
            "ok": True,
            "error": None,
            "updated": time.time(),
            "chain": {
                "id": chain.chain_id,
                "block": int(block["number"]),
                "time": int(block["timestamp"]),
                "rpc": self.rpc_url,
            },
            "contracts": {
                "TaskMarket": p.market.address,
                "DisputeGame": p.game.address,
                "RecomputeOracle": p.oracle.address,
            },
            "oracles": p.oracle.slot_count(),
            "tasks": tasks,
            "questions": sorted(questions.values(), key=lambda q: q["question"]),
            "feed": lines[-60:],
            "timelines": timelines,
            "ledger": None,  # contributions and attribution: no ledger contract exists yet
        }

    def start(self, interval: float) -> Snapshots:
        def loop() -> None:
            while not self._stop.is_set():
                self.refresh()
                self._stop.wait(interval)

        self._thread = threading.Thread(target=loop, name="dashboard-snapshots", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


class _Server(ThreadingHTTPServer):
    """The standard threading server, except that a request it cannot handle (a browser that went away, a
    request arriving while the process shuts down and can start no thread) costs one line, not a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        error = sys.exc_info()[1]
        print(f"dashboard: a request from {client_address[0]} failed: {type(error).__name__}: {error}", file=sys.stderr)

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no new thread during interpreter shutdown: drop the request
            self.shutdown_request(request)


def make_server(snapshots: Snapshots, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """An HTTP server answering `/` (the page) and `/api/state` (the last snapshot); `DashboardError` if the
    address cannot be bound."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", PAGE.encode("utf-8"))
            elif path == "/api/state":
                body = json.dumps(snapshots.snapshot(), sort_keys=True).encode("utf-8")
                self._send(200, "application/json", body)
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: the dashboard serves / and /api/state\n")

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the chain, not GETs
            pass

    try:
        return _Server((host, port), Handler)
    except OSError as e:
        raise DashboardError(
            f"cannot serve on {host}:{port} ({e.strerror or e}): pick another --port (0: any free one) or --host"
        ) from None
