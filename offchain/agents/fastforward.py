"""`refereed devnet --fast-forward`: move a local chain's clock to the next deadline once nobody acts.

The in-process `Devnet` knows what each agent waits for; separate processes do not tell. So the
fast-forwarder reads the deadlines the deployed contracts hold instead: every open task's join,
commit, reveal, entry and dispute deadlines, every running game's clock, every open oracle
question's window. When no transaction has arrived for `idle_s` wall seconds (every agent is
waiting), it moves anvil's clock to one second past the earliest deadline still ahead
(`evm_increaseTime`, then a block). With no deadline ahead it mines one empty block, since a draw
waits for a block mined after its request. Windows of hours then pass in seconds, as in the demo.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from offchain.chain.client import ChainClient
from offchain.contracts.dispute_game import PLAYING
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import REVEAL_WINDOW, TaskStatus, entry_closes

PATIENCE = 5  # a deadline someone still has to act before is passed only after this many idle periods
JOIN_PATIENCE = 20  # a join deadline with free slots: trainers may still be starting (a process takes a while)


def deadlines(protocol: Protocol) -> list[tuple[int, str, int]]:
    """(chain time, what, patient) for every deadline the contracts hold for what is still open. `patient`: a
    party may still be computing what it must send before it (a free slot, a trainer yet to commit or reveal, a
    game's side to move), so it is passed only after `patient` idle periods (1: none)."""
    m, g, o = protocol.market, protocol.game, protocol.oracle
    out: list[tuple[int, str, int]] = []
    for task_id in range(1, m.task_count() + 1):
        task = m.task(task_id)
        if task.status is not TaskStatus.OPEN:
            continue
        spec = m.spec_of(task_id)
        views = [m.trainer_of(task_id, t) for t in m.trainers_of(task_id)]
        uncommitted = any(not v.committed for v in views)
        unrevealed = any(v.committed and not v.submitted for v in views)
        out += [
            (
                spec.join_deadline + 1,
                f"task {task_id}'s join deadline",
                JOIN_PATIENCE if task.joined < spec.slots else 1,
            ),
            (spec.submit_deadline + 1, f"task {task_id}'s commit deadline", PATIENCE if uncommitted else 1),
            (
                spec.submit_deadline + REVEAL_WINDOW + 1,
                f"task {task_id}'s reveal deadline",
                PATIENCE if unrevealed else 1,
            ),
            (entry_closes(spec) + 1, f"task {task_id}'s entry deadline", 1),
            (spec.dispute_deadline + 1, f"task {task_id}'s dispute deadline", 1),
        ]
        for d in m.disputes(task_id):
            view = g.game_of(d.game_id)
            if view.stage in PLAYING:
                out.append((view.deadline + 1, f"game {d.game_id}'s clock", PATIENCE))
            elif view.question_id:
                q = o.question(view.question_id)
                if not q.status.ended:
                    out.append((q.deadline + 1, f"question {view.question_id}'s window", PATIENCE))
                    if q.commit_deadline:
                        out.append((q.commit_deadline + 1, f"question {view.question_id}'s vote commits", PATIENCE))
    return out


@dataclass
class FastForward:
    """Polls the chain; once no transaction came for `idle_s`, jumps to the next deadline (see the module)."""

    chain: ChainClient
    idle_s: float = 3.0
    protocol: Protocol | None = None
    skipped_s: int = 0
    _seen_block: int = -1
    _last_tx: float = field(default_factory=time.monotonic)
    _last_mine: float = field(default_factory=time.monotonic)

    def _rpc(self, method: str, params: list[Any]) -> Any:
        w3 = self.chain.w3
        return self.chain.read(lambda: w3.provider.make_request(method, params), method)  # type: ignore[arg-type]

    def step(self) -> str | None:
        """One look at the chain; a line saying what it did, if it moved the clock or mined."""
        head = self.chain.block_number()
        if head != self._seen_block:
            w3 = self.chain.w3
            for n in range(max(self._seen_block + 1, head - 20), head + 1):
                block = self.chain.read(partial(w3.eth.get_block, n), "eth_getBlockByNumber")
                if block["transactions"]:
                    self._last_tx = time.monotonic()
            self._seen_block = head
        quiet = time.monotonic() - self._last_tx
        if quiet < self.idle_s:
            return None
        now = int(self.chain.read(lambda: self.chain.w3.eth.get_block("latest")["timestamp"], "eth_getBlock"))
        ahead = sorted((t, what, p) for t, what, p in (deadlines(self.protocol) if self.protocol else []) if t > now)
        if not ahead:
            self._last_tx = time.monotonic()  # wait another idle period before the next block
            self._rpc("evm_mine", [])
            self._seen_block = self.chain.block_number()
            return None
        t, what, patient = ahead[0]
        if quiet < self.idle_s * patient:
            if time.monotonic() - self._last_mine >= self.idle_s:
                self._last_mine = time.monotonic()
                self._rpc("evm_mine", [])  # a draw may wait for a block; a mined block is no transaction
                self._seen_block = self.chain.block_number()
            return None
        self._last_tx = time.monotonic()
        self._rpc("evm_increaseTime", [t - now])
        self._rpc("evm_mine", [])
        self._seen_block = self.chain.block_number()
        self.skipped_s += t - now
        return f"nobody acted for {self.idle_s:g} s: moved the clock {t - now} s forward, past {what}"
