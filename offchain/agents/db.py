"""An agent's own records, in SQLite beside its store.

The chain is the source of truth for everything the contracts hold (who joined, what was
submitted, where a game stands); an agent keeps here only what the chain does not: which
tasks it took on and the roots it computed, the losses of its run, the event-log cursors
it has read up to, and a journal of what it did (each transaction with its gas), which the
demo's report reads. Every write is its own transaction (WAL mode, synchronous=FULL), so
an agent killed at any point restarts from a consistent file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    task_id INTEGER NOT NULL, step INTEGER NOT NULL, root BLOB NOT NULL,
    PRIMARY KEY (task_id, step)
);
CREATE TABLE IF NOT EXISTS losses (
    task_id INTEGER NOT NULL, step INTEGER NOT NULL, loss REAL NOT NULL,
    PRIMARY KEY (task_id, step)
);
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, kind TEXT NOT NULL,
    detail TEXT NOT NULL, gas INTEGER NOT NULL, fee INTEGER NOT NULL, tx TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Action:
    at: float  # unix seconds, wall clock
    kind: str  # e.g. "tx" or "note"
    detail: str
    gas: int
    fee: int  # wei
    tx: str


class AgentDB:
    """`<folder>/agent.db`: records by (kind, key), checkpoint roots, losses, and a journal."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    # -- records ---------------------------------------------------------------------------

    def get(self, kind: str, key: object) -> dict[str, Any] | None:
        row = self._conn.execute("SELECT data FROM records WHERE kind = ? AND key = ?", (kind, str(key))).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def put(self, kind: str, key: object, data: dict[str, Any]) -> None:
        self._conn.execute(
            "INSERT INTO records (kind, key, data, updated) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET data = excluded.data, updated = excluded.updated",
            (kind, str(key), json.dumps(data, sort_keys=True), time.time()),
        )

    def delete(self, kind: str, key: object) -> None:
        self._conn.execute("DELETE FROM records WHERE kind = ? AND key = ?", (kind, str(key)))

    def update(self, kind: str, key: object, **fields: Any) -> dict[str, Any]:
        data = {**(self.get(kind, key) or {}), **fields}
        self.put(kind, key, data)
        return data

    def all(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        rows = self._conn.execute("SELECT key, data FROM records WHERE kind = ? ORDER BY key", (kind,)).fetchall()
        for key, data in rows:
            yield key, dict(json.loads(data))

    # -- cursors ---------------------------------------------------------------------------

    def cursor(self, name: str) -> int:
        rec = self.get("cursor", name)
        return int(rec["block"]) if rec else 0

    def set_cursor(self, name: str, block: int) -> None:
        self.put("cursor", name, {"block": int(block)})

    # -- a run's checkpoints and losses ------------------------------------------------------

    def put_checkpoint(self, task_id: int, step: int, root: bytes) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO checkpoints (task_id, step, root) VALUES (?, ?, ?)", (task_id, step, root)
        )

    def checkpoints(self, task_id: int) -> dict[int, bytes]:
        rows = self._conn.execute("SELECT step, root FROM checkpoints WHERE task_id = ?", (task_id,)).fetchall()
        return {int(s): bytes(r) for s, r in rows}

    def put_losses(self, task_id: int, losses: dict[int, float]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO losses (task_id, step, loss) VALUES (?, ?, ?)",
            [(task_id, s, float(v)) for s, v in losses.items()],
        )

    def losses(self, task_id: int) -> dict[int, float]:
        rows = self._conn.execute("SELECT step, loss FROM losses WHERE task_id = ? ORDER BY step", (task_id,))
        return {int(s): float(v) for s, v in rows.fetchall()}

    # -- journal ---------------------------------------------------------------------------

    def log(self, kind: str, detail: str, *, gas: int = 0, fee: int = 0, tx: str = "", at: float | None = None) -> None:
        self._conn.execute(
            "INSERT INTO actions (at, kind, detail, gas, fee, tx) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time() if at is None else at, kind, detail, gas, fee, tx),
        )

    def actions(self) -> list[Action]:
        rows = self._conn.execute("SELECT at, kind, detail, gas, fee, tx FROM actions ORDER BY id").fetchall()
        return [Action(float(a), k, d, int(g), int(f), t) for a, k, d, g, f, t in rows]
