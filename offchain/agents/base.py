"""What every agent shares: a home folder, a recording chain connection, a tick, a loop.

An agent is a loop of `tick()`s. A tick reads the chain (and the agent's own records),
does at most a bounded piece of work (one checkpoint interval of training, one game move,
one transaction), and says whether it is `busy` (tick again now) or idle, waiting for
new events or for a chain time (`Tick.until`). Decisions are derived from chain state on
every tick, so a tick that died half-way (a killed process, a dropped RPC connection) is
simply taken again: a transaction that did land shows up in the state, one that did not
is sent again.

`run_forever` is the loop of a standalone agent (`refereed trainer run` and friends);
`offchain.agents.devnet.Devnet` runs several in one process against a local chain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from hexbytes import HexBytes
from web3.contract.contract import ContractConstructor, ContractFunction
from web3.exceptions import TransactionNotFound

from offchain.agents.db import AgentDB
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.deploy import Deployment
from offchain.chain.errors import ChainUnreachableError, ContractRevert, FeeCapBelowBaseFee
from offchain.contracts.protocol import Protocol
from offchain.store import Store


@dataclass(frozen=True, slots=True)
class Tick:
    busy: bool
    until: int | None = None  # when idle: the chain time (unix s) it waits for, if any
    done: bool = False  # nothing left to do, ever (for this agent's configured work)
    block: bool = False  # when idle: it waits for a new block (randomness readable only after one is mined)


BUSY = Tick(True)


def idle(until: int | None = None, *, block: bool = False) -> Tick:
    return Tick(False, until, block=block)


DONE = Tick(False, None, True)


class Observer(TypingProtocol):
    """Where agents report what they do (the CLI and the demo draw it; tests collect it)."""

    def event(self, agent: str, message: str) -> None: ...

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None: ...


class PrintObserver:
    def event(self, agent: str, message: str) -> None:
        print(f"[{agent}] {message}", flush=True)

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        if done == total or done % max(1, total // 8) == 0:
            print(f"[{agent}] task {task_id}: step {done}/{total}, loss {loss}", flush=True)


class AgentCrashed(BaseException):
    """Raised by a crash hook to stop an agent dead, as a kill would (tests only)."""


PENDING = "pending-tx"  # AgentDB kind: signed and about to be broadcast, not yet journaled


class RecordingChain(ChainClient):
    """A `ChainClient` that journals every mined transaction (function, gas, fee) in the agent's db.

    Before a transaction is broadcast, its hash is written down as pending; once its receipt
    is back it is journaled and the pending record goes. When the answer never came (a lost
    connection, a killed agent, a transaction mined with status 0), `reconcile()` looks the
    pending hashes up on chain and journals those that were mined: it runs before every
    send, so a restarted agent catches up with its first transaction.

    `crash_after`, when set, is called with each receipt before it is journaled: a test raises
    `AgentCrashed` from it to kill the agent right after a transaction landed and before the
    agent wrote down anything about it.
    """

    PENDING_TTL = 3600.0  # wall seconds after which a pending hash no node knows is dropped

    def __init__(self, rpc_url: str, private_key: str, db: AgentDB, **kwargs: Any) -> None:
        super().__init__(rpc_url, private_key, **kwargs)
        self.db = db
        self.crash_after: Callable[[Receipt, str], None] | None = None
        self.before_broadcast = self._pending

    def _pending(self, tx_hash: str, call: str) -> None:
        self.db.put(PENDING, tx_hash, {"call": call, "at": time.time()})

    def reconcile(self) -> int:
        """Journal the pending transactions that were mined; how many are still pending."""
        left = 0
        for tx_hash, rec in list(self.db.all(PENDING)):
            try:
                raw = self.read(partial(self.w3.eth.get_transaction_receipt, HexBytes(tx_hash)), "eth_getReceipt")
            except TransactionNotFound:
                if time.time() - float(rec["at"]) > self.PENDING_TTL:
                    self.db.delete(PENDING, tx_hash)
                    self.db.log("note", f"transaction {tx_hash} ({rec['call']}) was never mined")
                else:
                    left += 1
                continue
            except ChainUnreachableError:
                return left + 1
            ok = int(raw["status"]) == 1
            fee = int(raw["gasUsed"]) * int(raw.get("effectiveGasPrice", 0) or 0)
            call = rec["call"] if ok else f"{rec['call']} (failed on chain)"
            self.db.log("tx", call, gas=int(raw["gasUsed"]), fee=fee, tx=tx_hash, at=float(rec["at"]))
            self.db.delete(PENDING, tx_hash)
        return left

    def send(
        self,
        fn_call: ContractFunction | ContractConstructor,
        *,
        value: int = 0,
        gas: int | None = None,
        contract_name: str | None = None,
        max_fee_per_gas: int | None = None,
    ) -> Receipt:
        if any(True for _ in self.db.all(PENDING)):
            self.reconcile()
        receipt = super().send(
            fn_call, value=value, gas=gas, contract_name=contract_name, max_fee_per_gas=max_fee_per_gas
        )
        what = getattr(fn_call, "fn_name", "constructor")
        name = contract_name or self.name_of(getattr(fn_call, "address", None)) or "?"
        if self.crash_after is not None:
            self.crash_after(receipt, what)
        self.db.log("tx", f"{name}.{what}", gas=receipt.gas_used, fee=receipt.fee, tx=receipt.tx_hash)
        self.db.delete(PENDING, receipt.tx_hash)
        return receipt


class Agent:
    """Base of the four agents: `home/agent.db`, a private store `home/store`, the public store.

    `fee_cap` (wei per gas) caps every transaction the agent sends; an agent acting for a task
    also caps what it sends for it at the task's `gasPriceCap` (`ChainClient.capped`), the most
    the market repays per gas.
    """

    role = "agent"

    def __init__(
        self,
        name: str,
        *,
        rpc_url: str,
        private_key: str,
        deployment: Deployment,
        artifacts: dict[str, Artifact],
        home: Path,
        public: Store,
        observer: Observer | None = None,
        fee_cap: int | None = None,
    ) -> None:
        self.name = name
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.db = AgentDB(self.home / "agent.db")
        self.chain = RecordingChain(rpc_url, private_key, self.db, artifacts=artifacts.values(), fee_cap=fee_cap)
        self.protocol = Protocol.from_deployment(self.chain, deployment, artifacts)
        self.public = public
        self.private = Store(self.home / "store")
        self.observer: Observer = observer or PrintObserver()

    @property
    def address(self) -> str:
        return self.chain.address

    def say(self, message: str) -> None:
        self.db.log("note", message)
        self.observer.event(self.name, message)

    def chain_time(self) -> int:
        return int(self.chain.read(lambda: self.chain.w3.eth.get_block("latest")["timestamp"], "eth_getBlock"))

    def tick(self) -> Tick:
        raise NotImplementedError

    def close(self) -> None:
        self.db.close()

    def run_forever(self, *, poll: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Tick until `stop()`; an unreachable RPC is retried with backoff, never fatal."""
        run_together([self], poll=poll, stop=stop)


def run_together(agents: Sequence[Agent], *, poll: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
    """Tick `agents` in turn until `stop()`, in real time (what `refereed ... run` does).

    An unreachable RPC is retried with backoff, never fatal; so is a base fee above the agent's cap.
    A transaction the contract refused
    because another party got there first (a settle, a draw, a reveal that already happened) is a
    lost race, not an error: the agent reads the chain again on its next tick.
    """
    backoff = poll
    while not stop():
        busy, waits = False, []
        for agent in agents:
            try:
                t = agent.tick()
                backoff = poll
            except ChainUnreachableError as e:
                agent.observer.event(agent.name, f"RPC unreachable ({e.detail}); retrying in {backoff:.1f} s")
                time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                busy = True
                continue
            except FeeCapBelowBaseFee as e:  # gas costs more than the agent may bid: wait for it to fall
                agent.observer.event(agent.name, f"not sending: {e}")
                time.sleep(poll)
                continue
            except ContractRevert as e:  # a race lost to another party; the next tick reads the chain again
                agent.observer.event(agent.name, f"refused: {e.error_name or e} (the chain moved on); reading it again")
                agent.db.log("note", f"a transaction was refused ({e}); will read the chain again")
                time.sleep(poll)
                continue
            if t.busy:
                busy = True
            elif t.until is not None:
                waits.append(t.until)
        if busy:
            continue
        if waits:
            time.sleep(max(0.05, min(poll, min(waits) - time.time())))
        else:
            time.sleep(poll)
