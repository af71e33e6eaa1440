"""The faults the protocol's agents must survive, each played out on a real anvil.

Every test runs a whole task with a `Scenario` (client, an honest trainer "alice", a
faulty-kernel cheater "mallory", one oracle, the watcher) on a fresh deployment, injects
one fault, and checks that the honest side still wins and that nothing was done twice:

- a trainer killed right after one of its game moves was mined (the agent wrote nothing
  down about it), killed in the middle of a checkpoint interval, killed right after its
  submission was mined; each time a fresh agent over the same home folder carries on;
- the RPC connection dropped for seconds, or dropped just after the node accepted a move
  (the agent saw "it may or may not have been sent"), or a move delivered twice;
- a checkpoint snapshot deleted or corrupted in the trainer's private store.

With one honest trainer, the honest side wins only if that trainer plays its game to the
end, so every fault here is one it has to recover from, not one another trainer covers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hexbytes import HexBytes
from recorder import Events
from rpc_proxy import RpcProxy
from web3 import Web3

from offchain.agents.base import Agent, AgentCrashed
from offchain.agents.client import TaskOrder
from offchain.agents.db import AgentDB
from offchain.agents.scenario import Scenario, ScenarioResult, TrainerRole
from offchain.agents.strategy import Strategy
from offchain.agents.trainer import TrainerAgent
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.deploy import Deployment
from offchain.contracts.dispute_game import Outcome
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from offchain.game.witness import Deviation, DeviationKind, RunWitness, State
from offchain.store import STATE, CorruptObjectError, Store
from offchain.store.backend import FolderBackend
from trainer.commit import state_root
from trainer.data.dataset import Dataset
from trainer.program import Program
from trainer.runner.runner import RunConfig
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

REWARD = 3 * 10**18
CHEAT_STEP = 5  # mallory's faulty kernel strikes in step 5, inside the second checkpoint interval
# The DisputeGame functions a player calls to move (timeout, resolveOracle and settling are not moves).
MOVES = frozenset(
    {
        "descend",
        "bisect",
        "openPostStateCount",
        "revealNode",
        "proveStateInput",
        "proveConstantInput",
        "proveNodeInput",
        "proveBatchInput",
        "provePostState",
    }
)


# -- the players ---------------------------------------------------------------------------


@dataclass
class CountingWitness(RunWitness):
    """An honest witness that lists every step it computes and can be killed before one."""

    ran: list[int] = field(default_factory=list, repr=False)
    crash_at: int | None = field(default=None, repr=False)

    def _run_step(self, step: int, state: State) -> State:
        if step == self.crash_at:
            raise AgentCrashed(f"killed while computing step {step}")
        self.ran.append(step)
        return super()._run_step(step, state)


class Counted(Strategy):
    """The honest strategy, keeping each witness it hands out (one per agent instance and task)."""

    name = "honest"

    def __init__(self, *, crash_at: int | None = None) -> None:
        self.crash_at = crash_at  # the first witness dies before computing this step
        self.witnesses: list[CountingWitness] = []

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        crash_at = None if self.witnesses else self.crash_at
        w = CountingWitness(program, dataset, config, initial, crash_at=crash_at)
        self.witnesses.append(w)
        return w


class FaultyKernel(Strategy):
    name = "faulty-kernel"
    audits = False

    def witness(self, program: Program, dataset: Dataset, config: RunConfig, initial: State) -> RunWitness:
        return RunWitness(program, dataset, config, initial, Deviation(CHEAT_STEP, DeviationKind.KERNEL))


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def scenario(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], workload: Workload, tmp_path: Path
) -> Callable[..., Scenario]:
    def make(alice: Strategy, *, agent_rpc_url: str | None = None) -> Scenario:
        return Scenario(
            rpc_url=node.rpc_url,
            accounts=node.accounts,
            deployment=deployment,
            artifacts=artifacts,
            folder=tmp_path,
            order=TaskOrder(workload, reward=REWARD, slots=2),
            trainers=[TrainerRole("alice", alice), TrainerRole("mallory", FaultyKernel())],
            observer=Events(),
            agent_rpc_url=agent_rpc_url,
        )

    return make


# -- helpers -------------------------------------------------------------------------------


def crash_after(agent: Agent, pick: Callable[[str], bool], nth: int = 1) -> list[str]:
    """Kill `agent` right after its `nth` mined transaction that `pick`s; the killing tx's hash lands in the list."""
    killed: list[str] = []
    seen = 0

    def hook(receipt: Receipt, what: str) -> None:
        nonlocal seen
        if pick(what):
            seen += 1
            if seen == nth:
                killed.append(receipt.tx_hash)
                raise AgentCrashed(f"killed right after {what} ({receipt.tx_hash}) was mined")

    agent.chain.crash_after = hook
    return killed


def winner(r: ScenarioResult) -> str:
    (game,) = r.games
    assert game.outcome in (Outcome.DEFENDER_WINS, Outcome.CHALLENGER_WINS), game
    return game.defender if game.outcome is Outcome.DEFENDER_WINS else game.challenger


def assert_honest_side_won(sc: Scenario, r: ScenarioResult, protocol: Protocol) -> None:
    """Alice won her game and the reward; mallory lost her bond; the market's books balance."""
    market = protocol.market
    assert r.status is TaskStatus.FINALIZED
    assert winner(r) == "alice"
    assert r.eliminated == {"alice": False, "mallory": True}
    assert r.winning_group == market.group_of_trainer(r.task_id, sc.keys["alice"].address)
    slashed = {e["trainer"]: int(e["slashed"]) for e in market._logs("TrainerEliminated", {"taskId": r.task_id})}
    assert slashed == {sc.keys["mallory"].address: r.bond}
    # The reward, plus what mallory's bond repaid her (her game's metered gas and the gas of opening it), less
    # her gas: to the wei, so no transaction of hers went unjournaled.
    alice_address = sc.keys["alice"].address
    repaid = sum(int(e["amount"]) for e in market._logs("CompensationPaid", {"taskId": r.task_id}))
    repaid += sum(int(e["amount"]) for e in market._logs("OpenerRepaid", {"opener": alice_address}))
    assert repaid > 0
    assert r.net("alice") + r.fees["alice"] == r.reward + repaid
    assert int(protocol.market.chain.balance(market.address)) == market.totals()
    alice = trainer(sc, "alice")
    games = dict(alice.db.all("game"))
    assert [g["status"] for g in games.values()] == ["done"], games
    assert all(g["won"] for g in games.values())


def trainer(sc: Scenario, name: str) -> TrainerAgent:
    agent = sc.trainers[name]
    assert isinstance(agent, TrainerAgent)
    return agent


def journal(agent: Agent, kind: str) -> list[str]:
    return [a.detail for a in agent.db.actions() if a.kind == kind]


def journaled_txs(agent: Agent) -> set[str]:
    return {a.tx for a in agent.db.actions() if a.kind == "tx"}


def landed_txs(chain: ChainClient, sender: str, first_block: int) -> dict[str, Any]:
    """Every transaction `sender` got mined since `first_block`: hash -> the transaction."""
    out: dict[str, Any] = {}
    for n in range(first_block, chain.block_number() + 1):
        txs: list[Any] = list(chain.w3.eth.get_block(n, full_transactions=True)["transactions"])
        for tx in txs:
            if tx["from"] == sender:
                out["0x" + bytes(tx["hash"]).hex()] = tx
    return out


def refusals(agent: Agent) -> list[str]:
    """The moves the trainer counted as refused (three in a row mark its game stuck)."""
    return [n for n in journal(agent, "note") if "the contract refused our move" in n]


# -- 1. a trainer killed and restarted ------------------------------------------------------


def test_trainer_killed_right_after_a_game_move_restarts_and_wins(
    scenario: Callable[..., Scenario], protocol: Protocol, workload: Workload
) -> None:
    """The worst moment: the move landed, the agent recorded nothing; the fresh agent reads the game from the chain."""
    honest = Counted()
    sc = scenario(honest)
    alice = trainer(sc, "alice")
    killed = crash_after(alice, lambda what: what in MOVES, nth=3)
    first_block = protocol.market.chain.block_number()

    r = sc.run(timeout_s=300)

    assert r.crashes == ["alice"] and len(killed) == 1
    assert_honest_side_won(sc, r, protocol)
    alice = trainer(sc, "alice")
    notes = journal(alice, "note")
    assert "crashed" in notes and "restarted from its records" in notes
    assert any("resumed the run from its records" in n for n in notes), notes
    # The killing move is on chain and was never sent again (the contract would refuse it). The first instance
    # died before journaling it; its pending record let the fresh one journal it late, with its gas.
    landed = landed_txs(protocol.market.chain, sc.keys["alice"].address, first_block)
    assert set(landed) == journaled_txs(alice) and set(killed) <= set(landed)
    assert landed[killed[0]]["to"] == protocol.game.address
    assert refusals(alice) == []
    # The fresh agent rebuilt its run from the stored checkpoints: it replayed at most `arity` intervals.
    before, after = honest.witnesses
    c, arity = workload.config.checkpoint_interval, sc.order.arity
    assert 0 < after.steps_run <= arity * c, (before.steps_run, after.steps_run)
    assert min(after.ran) >= CHEAT_STEP - CHEAT_STEP % c  # nothing before the disputed interval


def test_trainer_killed_mid_interval_resumes_from_its_last_checkpoint(
    scenario: Callable[..., Scenario], protocol: Protocol, workload: Workload
) -> None:
    """Killed while computing step 5 (checkpoints at 0, 4, 8): the fresh agent trains 4..8 only, then wins."""
    honest = Counted(crash_at=5)
    sc = scenario(honest)

    r = sc.run(timeout_s=300)

    assert r.crashes == ["alice"]
    assert_honest_side_won(sc, r, protocol)
    before, after = honest.witnesses
    c = workload.config.checkpoint_interval
    assert before.ran == [0, 1, 2, 3, 4]  # died before finishing step 5
    assert after.ran[:c] == [4, 5, 6, 7]  # resumed from checkpoint 4
    assert min(after.ran) >= c  # and never retrained the first interval (the game replays inside 4..8)
    alice = trainer(sc, "alice")
    assert sorted(alice.db.checkpoints(r.task_id)) == [0, 4, 8]
    assert sorted(alice.db.losses(r.task_id)) == list(range(8))


@pytest.mark.parametrize(
    "damage", [None, "deleted", "corrupted"], ids=["intact", "snapshot-deleted", "snapshot-corrupted"]
)
def test_trainer_killed_right_after_submitting_carries_on(
    damage: str | None, scenario: Callable[..., Scenario], protocol: Protocol, workload: Workload
) -> None:
    """Killed right after `submit` was mined: no second submission; with checkpoint 4's snapshot deleted or
    corrupted meanwhile, the fresh agent recomputes it from checkpoint 0, bit for bit, and still wins."""
    honest = Counted()
    sc = scenario(honest)
    alice = trainer(sc, "alice")
    killed = crash_after(alice, lambda what: what == "submit")
    first_block = protocol.market.chain.block_number()
    c = workload.config.checkpoint_interval
    original: dict[str, bytes] = {}

    def restart(agent: Agent) -> Agent:
        if agent.name == "alice" and damage is not None:
            store = Store(agent.home / "store")
            root = recorded_checkpoints(agent)[c]
            path = FolderBackend(agent.home / "store").path(STATE, root)
            original["root"], original["bytes"] = root, path.read_bytes()
            if damage == "deleted":
                assert store.delete(STATE, root)
            else:
                raw = bytearray(original["bytes"])
                raw[-1] ^= 0x01  # one bit of the last tensor's data
                path.write_bytes(bytes(raw))
                with pytest.raises(CorruptObjectError):
                    store.get_state(root)
        return Scenario.restart(sc, agent)

    sc.restart = restart  # type: ignore[method-assign]
    r = sc.run(timeout_s=300)

    assert r.crashes == ["alice"] and len(killed) == 1
    assert_honest_side_won(sc, r, protocol)
    alice = trainer(sc, "alice")
    submitted = [str(s.trainer) for s in protocol.market.submissions(r.task_id)]
    assert submitted.count(sc.keys["alice"].address) == 1
    landed = landed_txs(protocol.market.chain, sc.keys["alice"].address, first_block)
    assert set(landed) == journaled_txs(alice) and set(killed) <= set(landed)  # the submit: journaled late, once
    assert refusals(alice) == []
    before, after = honest.witnesses
    assert before.ran == list(range(8))  # the first instance trained the run once, then died
    notes = journal(alice, "note")
    if damage is None:
        assert min(after.ran) >= c  # nothing recomputed outside the disputed interval
        assert not any("not usable" in n for n in notes)
        return
    # Checkpoint 4 was recomputed from checkpoint 0: exactly one interval, before anything else ...
    assert after.ran[:c] == list(range(c)) and all(s >= c for s in after.ran[c:])
    assert f"task {r.task_id}: recomputed lost checkpoint {c} ({c} steps)" in notes
    (unusable,) = [n for n in notes if "not usable" in n]
    assert ("is corrupt and was not used" if damage == "corrupted" else "no state object") in unusable
    # ... and it reproduced the recorded root and the very bytes of the lost snapshot.
    root = original["root"]
    assert alice.db.checkpoints(r.task_id)[c] == root
    assert state_root(Store(alice.home / "store").get_state(root)) == root
    assert FolderBackend(alice.home / "store").path(STATE, root).read_bytes() == original["bytes"]


def test_trainer_killed_right_after_committing_reveals_what_it_committed_to(
    scenario: Callable[..., Scenario], protocol: Protocol
) -> None:
    """Killed right after `commit` was mined, before it wrote down the block: the salt was written first, so
    the fresh agent finds its commitment on chain and reveals the very list and salt it committed to."""
    sc = scenario(Counted())
    alice = trainer(sc, "alice")
    killed = crash_after(alice, lambda what: what == "commit")
    first_block = protocol.market.chain.block_number()

    r = sc.run(timeout_s=300)

    assert r.crashes == ["alice"] and len(killed) == 1
    assert_honest_side_won(sc, r, protocol)
    alice = trainer(sc, "alice")
    address = sc.keys["alice"].address
    assert len(protocol.market.commitments(r.task_id, address)) == 1, "committed once"
    assert [s.trainer for s in protocol.market.submissions(r.task_id)].count(address) == 1
    landed = landed_txs(protocol.market.chain, address, first_block)
    assert set(landed) == journaled_txs(alice) and set(killed) <= set(landed)
    rec = alice.db.get("task", r.task_id)
    assert rec is not None and "salt" in rec and "commit_block" in rec


def recorded_checkpoints(agent: Agent) -> dict[int, bytes]:
    """The checkpoint roots a (closed) agent recorded, read from its db file."""
    db = AgentDB(agent.home / "agent.db")
    try:
        (task_id,) = [int(k) for k, _ in db.all("task")]
        return db.checkpoints(task_id)
    finally:
        db.close()


# -- 2. the RPC connection drops ------------------------------------------------------------


@pytest.fixture
def proxy(node: Anvil) -> Iterator[RpcProxy]:
    with RpcProxy(node.port) as p:
        yield p


def alice_to_move(sc: Scenario, protocol: Protocol, *, after_moves: int) -> bool:
    """A game is on, has seen `after_moves` moves, and waits for alice."""
    task_id = sc.client.task_id  # type: ignore[attr-defined]
    if task_id is None:
        return False
    for d in protocol.market.disputes(task_id):
        view = protocol.game.game_of(d.game_id)
        if view.moves >= after_moves and view.mover == sc.keys["alice"].address:
            return True
    return False


def test_rpc_outage_mid_game_is_retried_and_loses_nothing(
    scenario: Callable[..., Scenario], protocol: Protocol, proxy: RpcProxy
) -> None:
    """Every agent talks through a proxy that goes down for 3 s mid-game: they retry, nobody crashes or is stuck."""
    sc = scenario(Counted(), agent_rpc_url=proxy.url)
    dropped: list[bool] = []

    def on_round() -> None:
        if not dropped and alice_to_move(sc, protocol, after_moves=3):
            proxy.down(3.0)
            dropped.append(True)

    r = sc.run(timeout_s=300, on_round=on_round)

    assert dropped and proxy.events[0].startswith("down 3 s") and "up" in proxy.events
    assert r.crashes == []
    assert sc.devnet is not None and sc.devnet.rpc_failures > 0 and r.rpc_failures == sc.devnet.rpc_failures
    assert any("RPC unreachable" in m for m in sc.observer.of("alice"))  # type: ignore[attr-defined]
    assert_honest_side_won(sc, r, protocol)
    assert refusals(trainer(sc, "alice")) == []


def test_answer_to_a_move_lost_after_the_node_took_it(
    scenario: Callable[..., Scenario], protocol: Protocol, proxy: RpcProxy
) -> None:
    """The node mines alice's move, the connection drops before the answer: "it may or may not have been sent".

    The next tick re-reads the game, sees the move made, and does not send it again.
    """
    sc = scenario(Counted(), agent_rpc_url=proxy.url)
    first_block = protocol.market.chain.block_number()
    armed: list[bool] = []

    def on_round() -> None:
        if not armed and alice_to_move(sc, protocol, after_moves=3):
            proxy.lose_response(b"eth_sendRawTransaction")
            armed.append(True)

    r = sc.run(timeout_s=300, on_round=on_round)

    (lost,) = proxy.lost
    raw = lost["params"][0]  # type: ignore[index]
    tx_hash = "0x" + bytes(Web3.keccak(hexstr=raw)).hex()
    chain = protocol.market.chain
    receipt = chain.w3.eth.get_transaction_receipt(HexBytes(tx_hash))
    assert receipt["status"] == 1 and receipt["from"] == sc.keys["alice"].address
    assert receipt["to"] == protocol.game.address
    assert any("may or may not have been sent" in m for m in sc.observer.of("alice"))  # type: ignore[attr-defined]
    assert r.crashes == [] and r.rpc_failures >= 1
    assert_honest_side_won(sc, r, protocol)
    alice = trainer(sc, "alice")
    landed = landed_txs(chain, sc.keys["alice"].address, first_block)
    assert set(landed) == journaled_txs(alice) and tx_hash in landed  # sent once, journaled once its receipt was found
    assert refusals(alice) == []


def test_move_delivered_twice_is_not_counted_as_a_refusal(
    scenario: Callable[..., Scenario], protocol: Protocol
) -> None:
    """Every game move of alice's reaches the contract twice (as a transport that retries a send whose answer
    was lost would deliver it): the copy is refused. That is not a refused move of hers: counted as one, three
    in a row would mark her game stuck and she would lose it on time."""
    sc = scenario(Counted())
    alice = trainer(sc, "alice")
    chain = alice.chain
    real_send = chain.send
    repeats: list[str] = []

    def send_twice(fn_call: Any, **kwargs: Any) -> Receipt:
        receipt = real_send(fn_call, **kwargs)
        what = getattr(fn_call, "fn_name", "")
        if what in MOVES:
            repeats.append(what)
            real_send(fn_call, **kwargs)  # refused: the game has moved on
        return receipt

    chain.send = send_twice  # type: ignore[method-assign]
    r = sc.run(timeout_s=300)

    assert len(repeats) >= 3
    assert r.crashes == []
    assert_honest_side_won(sc, r, protocol)
    assert refusals(alice) == []
    notes = journal(alice, "note")
    assert sum("it had already landed" in n for n in notes) == len(repeats)


def test_answer_cut_mid_body_is_retried_like_a_dropped_connection(node: Anvil, proxy: RpcProxy) -> None:
    """A read whose answer is cut off part-way is retried (it is idempotent) like any dropped connection."""
    client = ChainClient(proxy.url, read_retries=2, retry_backoff=0.01)
    head = client.block_number()
    proxy.lose_response(b"eth_blockNumber", partial=True)
    assert client.block_number() == head
    assert proxy.lost
