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
from offchain.agents.home import (
    BINDING_KEY,
    BINDING_KIND,
    Binding,
    HomeLock,
    HomeMismatch,
    check_home_folder,
    mismatch_message,
)
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.deploy import Deployment
from offchain.chain.errors import (
    ChainError,
    ChainUnreachableError,
    ContractRevert,
    FeeCapBelowBaseFee,
    NoContractCode,
)
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
        self.home = check_home_folder(Path(home))
        self._lock = HomeLock(self.home).acquire()  # HomeLocked: another process runs on this home
        try:
            self.db = AgentDB(self.home / "agent.db")
            self.chain = RecordingChain(rpc_url, private_key, self.db, artifacts=artifacts.values(), fee_cap=fee_cap)
            self.protocol = Protocol.from_deployment(self.chain, deployment, artifacts)
            self.artifacts = artifacts
            self.deployment = deployment
            self.binding = self._bind()
        except BaseException:
            self._lock.release()
            raise
        self.public = public
        self.private = Store(self.home / "store")
        self.observer: Observer = observer or PrintObserver()

    def current_binding(self) -> Binding:
        """What this agent runs against now: chain id, genesis hash, deployment addresses, key."""
        genesis = self.chain.read(lambda: self.chain.w3.eth.get_block(0)["hash"], "eth_getBlockByNumber")
        contracts = {name: rec.address for name, rec in sorted(self.deployment.contracts.items())}
        return Binding(self.chain.chain_id, "0x" + bytes(genesis).hex(), contracts, self.chain.address)

    def _bind(self) -> Binding:
        """The home's binding, written on first use; `HomeMismatch` when the home belongs to something else."""
        now = self.current_binding()
        rec = self.db.get(BINDING_KIND, BINDING_KEY)
        if rec is None:
            self.db.put(BINDING_KIND, BINDING_KEY, now.to_json())
            return now
        bound = Binding.from_json(rec)
        problems = bound.differences(now)
        if problems:
            self.db.close()
            raise HomeMismatch(mismatch_message(self.home, problems))
        return bound

    def chain_problem(self) -> str | None:
        """None while the chain is the one the home is bound to; else what differs (a reset chain)."""
        try:
            chain_id = int(self.chain.read(lambda: self.chain.w3.eth.chain_id, "eth_chainId"))
            genesis = self.chain.read(lambda: self.chain.w3.eth.get_block(0)["hash"], "eth_getBlockByNumber")
        except ChainUnreachableError:
            return None  # retried as unreachable
        now = Binding(chain_id, "0x" + bytes(genesis).hex(), self.binding.contracts, self.binding.address)
        problems = self.binding.differences(now)
        if not problems:
            market = self.deployment.address("TaskMarket")
            if not self.chain.code(market):
                problems = [f"there is no code at the TaskMarket address {market}"]
        return "; ".join(problems) if problems else None

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
        self._lock.release()

    def run_forever(self, *, poll: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Tick until `stop()`; an unreachable RPC is retried with backoff, never fatal."""
        run_together([self], poll=poll, stop=stop)


CHECK_CHAIN_EVERY_S = 5.0  # wall seconds between checks that the chain is still the home's one
MAX_BACKOFF_S = 30.0


def run_together(agents: Sequence[Agent], *, poll: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
    """Tick `agents` in turn until `stop()`, in real time (what `refereed ... run` does).

    Nothing the chain normally does ends the loop:

    - an unreachable RPC is retried with backoff (up to 30 s between tries);
    - a chain that is not the one the agent's home is bound to (a devnet restarted under the agent,
      found by its genesis hash, or its contracts gone) is reported and retried with backoff: the agent
      waits for its chain to come back, and acts on nothing else;
    - a base fee above the agent's cap is waited out;
    - a transaction the contract refused because another party got there first (a settle, a draw, a
      reveal, a timeout that already happened) is a lost race, not an error: it is logged and the
      agent reads the chain again on its next tick;
    - any other chain error (a node error, a receipt that did not come in time) is logged and retried
      with backoff.
    """
    backoff = {id(a): poll for a in agents}
    checked = {id(a): 0.0 for a in agents}
    while not stop():
        busy, waits = False, []
        for agent in agents:
            key = id(agent)
            if time.monotonic() - checked[key] > CHECK_CHAIN_EVERY_S:
                checked[key] = time.monotonic()
                try:
                    problem = agent.chain_problem()
                except ChainError:
                    problem = None
                if problem is not None:
                    _wait(
                        agent,
                        backoff,
                        f"the chain is not this home's one ({problem}); acting on nothing until "
                        "it comes back (to work on this chain, stop and start with another --home)",
                    )
                    checked[key] = 0.0
                    busy = True
                    continue
            try:
                t = agent.tick()
                backoff[key] = poll
            except ChainUnreachableError as e:
                _wait(agent, backoff, f"RPC unreachable ({e.detail})")
                checked[key] = 0.0  # it may come back as another chain
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
            except NoContractCode as e:
                _wait(agent, backoff, str(e))
                checked[key] = 0.0
                busy = True
                continue
            except ChainError as e:  # a node error, a receipt late: the tick is taken again from the chain
                agent.db.log("note", f"chain error: {e}")
                _wait(agent, backoff, f"chain error ({e})")
                checked[key] = 0.0
                busy = True
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


def _wait(agent: Agent, backoff: dict[int, float], what: str) -> None:
    delay = backoff[id(agent)]
    agent.observer.event(agent.name, f"{what}; retrying in {delay:.1f} s")
    time.sleep(delay)
    backoff[id(agent)] = min(delay * 2, MAX_BACKOFF_S)
