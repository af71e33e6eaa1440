"""The agents piece by piece: their SQLite records, a trainer's refusal of a task it must not take,
an all-honest task from post to payout, and the client's crash-safe posting."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from recorder import Events

from offchain.agents.base import DONE, AgentCrashed
from offchain.agents.client import ClientAgent, TaskOrder
from offchain.agents.db import AgentDB
from offchain.agents.scenario import Scenario, TrainerRole
from offchain.agents.strategy import HONEST
from offchain.agents.task import MAX_BATCH_BYTES
from offchain.agents.trainer import TrainerAgent
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import Receipt
from offchain.chain.deploy import Deployment
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from offchain.store import Store
from trainer.workloads import Workload

REWARD = 3 * 10**18


# -- AgentDB -------------------------------------------------------------------------------


def test_agent_db_round_trips_records_and_keeps_them_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "home" / "agent.db"
    db = AgentDB(path)
    assert db.get("task", 7) is None and db.cursor("tasks") == 0 and db.checkpoints(7) == {} and db.actions() == []

    db.put("task", 7, {"status": "new", "nested": {"a": [1, 2]}})
    assert db.update("task", 7, status="joined", joined_block=12) == {
        "status": "joined",
        "nested": {"a": [1, 2]},
        "joined_block": 12,
    }
    db.put("task", 3, {"status": "rejected"})
    db.put("game", 7, {"side": 1})  # another kind, same key
    db.set_cursor("tasks", 41)
    db.set_cursor("tasks", 42)
    roots = {0: b"\x00" * 32, 4: b"\x04" * 32}
    for step, root in roots.items():
        db.put_checkpoint(7, step, root)
    db.put_checkpoint(8, 0, b"\x08" * 32)
    db.put_losses(7, {0: 2.5, 1: 2.25})
    db.put_losses(7, {1: 2.125, 2: 2.0})  # a replayed step overwrites its loss
    db.log("tx", "TaskMarket.join", gas=21_000, fee=10**12, tx="0xab")
    db.log("note", "joined")
    db.close()

    db = AgentDB(path)  # what a restarted agent sees
    try:
        assert db.get("task", "7") == {"status": "joined", "nested": {"a": [1, 2]}, "joined_block": 12}
        assert list(db.all("task")) == [("3", {"status": "rejected"}), ("7", db.get("task", 7))]
        assert db.get("game", 7) == {"side": 1}
        assert db.cursor("tasks") == 42
        assert db.checkpoints(7) == roots and db.checkpoints(8) == {0: b"\x08" * 32}
        assert db.losses(7) == {0: 2.5, 1: 2.125, 2: 2.0}
        tx, note = db.actions()
        assert (tx.kind, tx.detail, tx.gas, tx.fee, tx.tx) == ("tx", "TaskMarket.join", 21_000, 10**12, "0xab")
        assert (note.kind, note.detail, note.gas, note.fee, note.tx) == ("note", "joined", 0, 0, "")
        assert tx.at <= note.at
    finally:
        db.close()


# -- on a chain ----------------------------------------------------------------------------


def client_agent(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], folder: Path, order: TaskOrder | None
) -> ClientAgent:
    return ClientAgent(
        "client",
        order=order,
        rpc_url=node.rpc_url,
        private_key=node.accounts[1].private_key,
        deployment=deployment,
        artifacts=artifacts,
        home=folder / "client",
        public=Store(folder / "public"),
        observer=Events(),
    )


@pytest.mark.anvil
@pytest.mark.parametrize("flaw", ["unpublished", "batch too large"])
def test_trainer_rejects_a_task_it_could_not_defend(
    flaw: str,
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    protocol: Protocol,
    tmp_path: Path,
) -> None:
    """Materials missing from the public store, or a batch tensor too big for a batch proof: no join, a reason."""
    client = client_agent(node, deployment, artifacts, tmp_path, None)
    spec = client.spec_for(TaskOrder(workload, reward=REWARD), client.chain_time())  # publishes the initial state
    if flaw == "batch too large":
        client.public.put_program(workload.program)
        client.public.put_dataset(workload.dataset)
        x_bytes = workload.dataset.examples[0]["x"].numel() * workload.dataset.examples[0]["x"].element_size()
        big = MAX_BATCH_BYTES // x_bytes + 1
        spec = dataclasses.replace(spec, batch_size=big)
        spec = dataclasses.replace(spec, bond=protocol.market.min_bond(spec))
        reason = f"is {big * x_bytes} bytes; a batch proof carries at most {MAX_BATCH_BYTES}"
    else:
        reason = "the task's materials are not available: no program object"
    task_id = client.protocol.market.post_task(spec, REWARD)

    events = Events()
    trainer = TrainerAgent(
        "alice",
        rpc_url=node.rpc_url,
        private_key=node.accounts[2].private_key,
        deployment=deployment,
        artifacts=artifacts,
        home=tmp_path / "alice",
        public=client.public,
        task_ids={task_id},
        observer=events,
    )
    ticks = [trainer.tick() for _ in range(3)]

    assert ticks[-1] == DONE
    rec = trainer.db.get("task", task_id)
    assert rec is not None and rec["status"] == "rejected" and reason in rec["reason"], rec
    (said,) = events.of("alice")
    assert said.startswith(f"task {task_id}: not joining: ") and reason in said
    assert not protocol.market.trainer_of(task_id, trainer.address).joined
    assert protocol.market.task(task_id).joined == 0
    assert [a for a in trainer.db.actions() if a.kind == "tx"] == []


@pytest.mark.anvil
def test_all_honest_task_finalizes_without_a_game_and_pays_everyone(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    protocol: Protocol,
    tmp_path: Path,
) -> None:
    names = ["alice", "bob", "carol"]
    sc = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=deployment,
        artifacts=artifacts,
        folder=tmp_path,
        order=TaskOrder(workload, reward=REWARD, slots=3),
        trainers=[TrainerRole(n, HONEST) for n in names],
        observer=Events(),
    )
    r = sc.run(timeout_s=300)

    market = protocol.market
    spec = market.spec_of(r.task_id)
    assert r.status is TaskStatus.FINALIZED and r.winning_group == 0
    assert r.games == [] and market.disputes(r.task_id) == []
    assert r.eliminated == dict.fromkeys(names, False)
    assert r.crashes == [] and r.rpc_failures == 0
    (group,) = {market.group_of_trainer(r.task_id, sc.keys[n].address) for n in names}
    assert group == 0

    # Committed before the submit deadline, revealed after it, finalized once the dispute deadline passed (never
    # earlier: an outside challenger could still come); the client verified the one result by replaying it.
    def at(e: dict[str, object]) -> int:
        return int(market.chain.w3.eth.get_block(int(e["_block"]))["timestamp"])  # type: ignore[call-overload]

    commits = market._logs("ResultCommitted", {"taskId": r.task_id})
    reveals = market._logs("ResultSubmitted", {"taskId": r.task_id})
    assert len(commits) == len(reveals) == 3
    assert all(at(e) <= spec.submit_deadline < at(f) for e in commits for f in reveals)
    (fin,) = market._logs("TaskFinalized", {"taskId": r.task_id})
    assert at(fin) > spec.dispute_deadline
    assert r.verdicts == {0: "verified"}
    claims = market.claims(r.task_id)
    assert {c.trainer for c in claims} == {sc.keys[n].address for n in names}
    # Everyone paid, to the wei: a trainer's balance moved by its share of the reward less its gas, the bond
    # came back whole; the client paid the reward and its gas.
    for n in names:
        assert r.net(n) + r.fees[n] == REWARD // 3, n
        assert market.credit_of(sc.keys[n].address) == 0
    assert r.net("client") + r.fees["client"] == -REWARD
    assert int(market.chain.balance(market.address)) == market.totals()
    assert market.total_escrow() == 0 and market.total_bonds() == 0


@pytest.mark.anvil
@pytest.mark.parametrize("landed", [True, False], ids=["post-landed", "post-never-sent"])
def test_client_killed_after_its_post_intent_posts_exactly_once(
    landed: bool,
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    protocol: Protocol,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed after writing down its intent to post, before writing down the task id: if the post landed,
    the restarted client adopts that task; if it never went out, it posts it, once."""
    order = TaskOrder(workload, reward=REWARD)
    client = client_agent(node, deployment, artifacts, tmp_path, order)
    if landed:

        def hook(receipt: Receipt, what: str) -> None:
            if what == "postTask":
                raise AgentCrashed("killed right after postTask was mined")

        client.chain.crash_after = hook
    else:

        def killed(*args: object, **kwargs: object) -> None:
            raise AgentCrashed("killed before postTask was sent")

        monkeypatch.setattr(client.protocol.market, "post_task", killed)
    with pytest.raises(AgentCrashed):
        client.tick()
    intent = client.db.get("order", "task")
    assert intent is not None and "from_block" in intent and "task_id" not in intent
    client.close()
    assert protocol.market.task_count() == (1 if landed else 0)

    fresh = client_agent(node, deployment, artifacts, tmp_path, order)
    assert fresh.tick().busy
    assert not fresh.tick().busy  # then it waits for the trainers; it does not post again

    posted = market_posts(protocol, fresh.address)
    assert len(posted) == 1 and protocol.market.task_count() == 1
    assert fresh.task_id == posted[0]
    assert protocol.market.task(posted[0]).status is TaskStatus.OPEN
    assert protocol.market.total_escrow() == REWARD
    said = fresh.observer.of("client")  # type: ignore[attr-defined]
    if landed:
        assert said == [f"task {posted[0]}: found the task posted before the restart"]
    else:
        assert len(said) == 1 and said[0].startswith(f"task {posted[0]}: posted ")


def market_posts(protocol: Protocol, client: str) -> list[int]:
    return [int(e["taskId"]) for e in protocol.market._logs("TaskPosted", {"client": client})]


def test_a_transaction_that_failed_on_chain_is_journaled_with_its_fee(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    """A transaction mined with status 0 raises, so it never reaches the ordinary journal line; its pending
    record makes `reconcile` journal it (it cost gas), once, and leaves nothing pending."""
    from offchain.agents.base import PENDING, RecordingChain
    from offchain.chain.errors import ContractRevert

    db = AgentDB(tmp_path / "agent.db")
    chain = RecordingChain(node.rpc_url, node.accounts[5].private_key, db, artifacts=artifacts.values())
    market = Protocol.from_deployment(chain, deployment, artifacts).market
    with pytest.raises(ContractRevert, match="NothingToWithdraw"):
        chain.send(market.contract.functions.withdraw(), gas=100_000)  # explicit gas: no estimate, mined, reverts
    [(tx_hash, pending)] = list(db.all(PENDING))
    assert pending["call"] == "TaskMarket.withdraw"
    assert chain.reconcile() == 0 and not list(db.all(PENDING))
    [entry] = [a for a in db.actions() if a.kind == "tx"]
    assert entry.tx == tx_hash and entry.detail == "TaskMarket.withdraw (failed on chain)"
    assert 21_000 < entry.gas <= 100_000 and entry.fee > 0
    assert chain.reconcile() == 0 and len([a for a in db.actions() if a.kind == "tx"]) == 1  # journaled once
