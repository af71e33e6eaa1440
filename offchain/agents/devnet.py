"""Several agents in one process against a local anvil, with chain time fast-forwarded when all wait.

`Devnet.run(until)` ticks every agent in turn (training, game moves and answers interleave).
When a whole round finds every agent idle, nobody can act before some chain time or some
block: if an agent waits for a block (the randomness of an oracle draw is readable only
from a block mined after its request, and anvil mines only with a transaction), the devnet
mines one; otherwise it moves anvil's clock to the earliest time an agent waits for
(`evm_increaseTime`, then a block), which stands in for the hours a real deployment's
windows last. On a real chain the agents run alone (`Agent.run_forever`) and simply wait.

A transaction the contract refuses during a tick (a race another agent won) is counted in
`refused` and the tick taken again next round, as a standalone agent's loop does. A base fee
above an agent's cap (`FeeCapBelowBaseFee`) makes the devnet mine a block: anvil's base fee
falls with empty blocks.

By default anvil stamps each block with the wall clock (plus the time skipped). With
`block_time=s` every block comes exactly `s` seconds after the one before, and a skip lands on
the very second waited for (`evm_setNextBlockTimestamp`): what an agent does at a given chain
second (a reveal in the last second of its window) is then reproducible.

Faults are first-class: an unreachable RPC during a tick is retried on the next round
(the tick's decisions are re-read from the chain), and an agent that dies (`AgentCrashed`)
is dropped and, if `restart` returns one, replaced by a fresh agent over the same home
folder, which carries on from the chain and its records.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from offchain.agents.base import Agent, AgentCrashed, Observer, PrintObserver
from offchain.chain.client import ChainClient
from offchain.chain.errors import ChainUnreachableError, ContractRevert, FeeCapBelowBaseFee
from offchain.errors import OffchainError


class Stalled(OffchainError):
    """Every agent is idle, none waits for a time, and the goal is not reached."""


class Devnet:
    def __init__(
        self,
        rpc_url: str,
        agents: list[Agent],
        *,
        warp: bool = True,
        observer: Observer | None = None,
        restart: Callable[[Agent], Agent | None] | None = None,
        block_time: int | None = None,
    ) -> None:
        self.chain = ChainClient(rpc_url)
        self.block_time = block_time
        if block_time is not None:
            self._rpc("anvil_setBlockTimestampInterval", [int(block_time)])
        self.agents = list(agents)
        self.warp = warp
        self.observer: Observer = observer or PrintObserver()
        self.restart = restart
        self.warped_s = 0  # chain seconds skipped
        self.rounds = 0
        self.rpc_failures = 0
        self.crashes: list[str] = []
        self.refused: list[str] = []  # "<agent>: <error>" of every transaction refused during a tick
        self.blocks_mined = 0  # blocks mined for agents waiting for one

    def now(self) -> int:
        return int(self.chain.read(lambda: self.chain.w3.eth.get_block("latest")["timestamp"], "eth_getBlock"))

    def _rpc(self, method: str, params: list[object]) -> object:
        w3 = self.chain.w3
        return self.chain.read(lambda: w3.provider.make_request(method, params), method)  # type: ignore[arg-type]

    def mine(self) -> None:
        self._rpc("evm_mine", [])
        self.blocks_mined += 1

    def advance(self, seconds: int) -> None:
        if self.block_time is not None:  # the next block lands on the very second
            self._rpc("evm_setNextBlockTimestamp", [self.now() + int(seconds)])
        else:
            self._rpc("evm_increaseTime", [int(seconds)])
        self._rpc("evm_mine", [])
        self.warped_s += int(seconds)

    def close(self) -> None:
        """Give anvil its wall-clock timestamps back (after `block_time`)."""
        if self.block_time is not None:
            self._rpc("anvil_removeBlockTimestampInterval", [])
            self.block_time = None

    def run(
        self,
        until: Callable[[], bool],
        *,
        timeout_s: float = 600.0,
        on_round: Callable[[], None] | None = None,
    ) -> None:
        """Tick the agents until `until()`; Stalled or TimeoutError if it cannot get there."""
        deadline = time.monotonic() + timeout_s
        while not until():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the agents did not reach the goal in {timeout_s:.0f} s: {self.describe()}")
            self.rounds += 1
            busy, waits, unreachable, block = False, [], False, False
            for agent in list(self.agents):
                try:
                    t = agent.tick()
                except ChainUnreachableError as e:
                    self.rpc_failures += 1
                    unreachable = True
                    self.observer.event(agent.name, f"RPC unreachable ({e.detail}); will retry")
                    continue
                except AgentCrashed:
                    self._crashed(agent)
                    busy = True
                    continue
                except FeeCapBelowBaseFee as e:  # gas costs more than the agent may bid: a block lowers it
                    self.observer.event(agent.name, f"not sending: {e}")
                    block = True
                    continue
                except ContractRevert as e:  # a race lost: the agent reads the chain again next round
                    self.refused.append(f"{agent.name}: {e.error_name or e}")
                    self.observer.event(agent.name, f"refused: {e.error_name or e}; will read the chain again")
                    busy = True
                    continue
                if t.busy:
                    busy = True
                elif not t.done:
                    block = block or t.block
                    if t.until is not None:
                        waits.append(t.until)
            if on_round is not None:
                on_round()
            if busy:
                continue
            if unreachable:
                time.sleep(0.5)
                continue
            if until():
                return
            if block:  # someone waits for randomness: a block, without moving the clock
                self.mine()
                continue
            if not waits:
                raise Stalled(f"every agent is idle and none waits for a time: {self.describe()}")
            if not self.warp:
                time.sleep(0.5)
                continue
            target = min(waits)
            now = self.now()
            self.advance(max(1, target - now))

    def _crashed(self, agent: Agent) -> None:
        self.crashes.append(agent.name)
        self.agents.remove(agent)
        self.observer.event(agent.name, "crashed")
        agent.db.log("note", "crashed")  # the journal shows the crash (the demo's report reads it)
        agent.close()
        if self.restart is not None:
            fresh = self._retrying(lambda: self.restart(agent))  # type: ignore[misc]
            if fresh is not None:
                self.agents.append(fresh)
                fresh.db.log("note", "restarted from its records")
                self.observer.event(fresh.name, "restarted from its records")

    def _retrying(self, fn: Callable[[], Agent | None], attempts: int = 20) -> Agent | None:
        """`fn()`, retried while the RPC is unreachable (a fresh agent reads the chain id when it connects)."""
        for attempt in range(attempts):
            try:
                return fn()
            except ChainUnreachableError:
                self.rpc_failures += 1
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)
        return None

    def describe(self) -> str:
        return ", ".join(f"{a.name} ({a.role})" for a in self.agents) or "no agents"
