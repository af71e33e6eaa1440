"""What an operator meets: lost races and node errors in the run loop, a home used twice, a task rejected for a
cause that was then repaired, a devnet restarted under a running trainer."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_procs import Proc, free_port, has_traceback
from recorder import Events

from offchain.agents import trainer as trainer_module
from offchain.agents.base import Tick, idle, run_together
from offchain.agents.client import TaskOrder
from offchain.agents.home import HomeLock, HomeMismatch
from offchain.agents.trainer import TrainerAgent, TrainerPolicy
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.deploy import Deployment, deploy_all
from offchain.chain.errors import ChainUnreachableError, ContractRevert, NoContractCode, RpcError
from offchain.contracts.protocol import Protocol
from offchain.store import Store
from trainer.workloads import Workload

REWARD = 10**18


class _Flaky:
    """A stand-in agent whose ticks raise what a real chain does, in turn."""

    name = "flaky"

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = list(errors)
        self.ticks = 0
        self.observer = Events()
        self.db = type("DB", (), {"log": lambda *a, **k: None})()

    def chain_problem(self) -> str | None:
        return None

    def tick(self) -> Tick:
        self.ticks += 1
        if self.errors:
            raise self.errors.pop(0)
        return idle()


def test_the_run_loop_survives_lost_races_outages_and_node_errors() -> None:
    errors: list[BaseException] = [
        ContractRevert("RecomputeOracleWrongStatus", (1, 4), contract="RecomputeOracle"),  # settled by someone else
        ChainUnreachableError("http://127.0.0.1:1", "connection refused"),
        RpcError("eth_call failed: header not found"),
        NoContractCode("http://127.0.0.1:1", "0x" + "00" * 20, "TaskMarket"),
    ]
    agent = _Flaky(errors)
    run_together([agent], poll=0.01, stop=lambda: agent.ticks >= 6)  # type: ignore[list-item]
    assert agent.ticks == 6 and not agent.errors
    said = " | ".join(m for _, m in agent.observer.seen)
    assert "refused: RecomputeOracleWrongStatus (the chain moved on)" in said
    assert "RPC unreachable" in said and "retrying in" in said
    assert "header not found" in said and "no contract code at TaskMarket" in said


@pytest.fixture
def fresh(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    from offchain.chain.client import ChainClient

    return deploy_all(ChainClient(node.rpc_url, node.accounts[0].private_key), artifacts=artifacts, write=False)


def _trainer(node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], home: Path, public: Store,
             index: int = 2, **kw: Any) -> TrainerAgent:  # fmt: skip
    return TrainerAgent("alice", rpc_url=node.rpc_url, private_key=node.accounts[index].private_key,
                        deployment=deployment, artifacts=artifacts, home=home, public=public, observer=Events(),
                        **kw)  # fmt: skip


@pytest.mark.anvil
def test_one_home_one_process_one_chain_one_key(
    node: Anvil, deployment: Deployment, fresh: Deployment, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    public = Store(tmp_path / "public")
    first = _trainer(node, deployment, artifacts, tmp_path / "home", public)
    # Another process is locked out (inside one process, agents on one home share its lock).
    probe = (
        "import sys; from pathlib import Path; from offchain.agents.home import HomeLock, HomeLocked\n"
        "try:\n    HomeLock(Path(sys.argv[1])).acquire()\nexcept HomeLocked as e:\n    print(e); sys.exit(3)"
    )
    other = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "home")], capture_output=True, text=True, timeout=120
    )
    assert other.returncode == 3 and "is in use by process" in other.stdout, other.stdout + other.stderr
    first.close()
    HomeLock(tmp_path / "home").acquire().release()  # released for everybody once its holders are gone
    with pytest.raises(HomeMismatch, match="the key's address is"):
        _trainer(node, deployment, artifacts, tmp_path / "home", public, index=3)
    with pytest.raises(HomeMismatch, match="TaskMarket is at"):
        _trainer(node, fresh, artifacts, tmp_path / "home", public)
    _trainer(node, deployment, artifacts, tmp_path / "home", public).close()  # the lock went with close()


@pytest.fixture
def no_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(trainer_module, "RECHECK_S", 0.0)
    yield


@pytest.mark.anvil
def test_a_task_rejected_for_a_missing_object_is_joined_once_it_is_there(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], workload: Workload, protocol: Protocol,
    tmp_path: Path, no_wait: None,
) -> None:  # fmt: skip
    from offchain.agents.client import ClientAgent

    client = ClientAgent("client", order=None, rpc_url=node.rpc_url, private_key=node.accounts[1].private_key,
                         deployment=deployment, artifacts=artifacts, home=tmp_path / "client",
                         public=Store(tmp_path / "public"), observer=Events())  # fmt: skip
    spec = client.spec_for(TaskOrder(workload, reward=REWARD), client.chain_time())  # publishes the initial state
    client.public.put_dataset(workload.dataset)
    task_id = client.protocol.market.post_task(spec, REWARD)
    alice = _trainer(node, deployment, artifacts, tmp_path / "alice", client.public, task_ids={task_id})
    for _ in range(3):
        alice.tick()
    rec = alice.db.get("task", task_id)
    assert rec is not None and rec["status"] == "rejected" and "no program object" in rec["reason"]
    client.public.put_program(workload.program)  # repaired exactly as the error says
    for _ in range(4):
        alice.tick()
    assert protocol.market.trainer_of(task_id, alice.address).joined, alice.db.get("task", task_id)
    alice.close()
    client.close()


@pytest.mark.anvil
def test_a_policy_passes_a_task_over_and_a_new_policy_takes_it(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], workload: Workload, protocol: Protocol,
    tmp_path: Path,
) -> None:  # fmt: skip
    from offchain.agents.client import ClientAgent

    client = ClientAgent("client", order=TaskOrder(workload, reward=REWARD), rpc_url=node.rpc_url,
                         private_key=node.accounts[1].private_key, deployment=deployment, artifacts=artifacts,
                         home=tmp_path / "client", public=Store(tmp_path / "public"), observer=Events())  # fmt: skip
    while client.task_id is None:
        client.tick()
    task_id = client.task_id
    strict = TrainerPolicy(max_steps=workload.config.steps - 1)
    alice = _trainer(node, deployment, artifacts, tmp_path / "alice", client.public, task_ids={task_id},
                     policy=strict)  # fmt: skip
    for _ in range(3):
        alice.tick()
    assert "more than the policy's maximum" in alice.db.get("task", task_id)["reason"]  # type: ignore[index]
    assert not protocol.market.trainer_of(task_id, alice.address).joined
    alice.close()
    asked: list[int] = []
    alice = _trainer(node, deployment, artifacts, tmp_path / "alice", client.public, task_ids={task_id},
                     policy=TrainerPolicy(max_bond=10**18, approve=lambda t, s: asked.append(t) or True))  # fmt: skip
    for _ in range(3):
        alice.tick()
    assert asked == [task_id] and protocol.market.trainer_of(task_id, alice.address).joined
    alice.close()
    client.close()


@pytest.mark.anvil
def test_trainer_run_task_does_not_resume_other_tasks(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    public = Store(tmp_path / "public")
    alice = _trainer(node, deployment, artifacts, tmp_path / "alice", public, task_ids={11})
    alice.db.put("task", 7, {"status": "joined", "posted_block": 1})  # a record of another task
    t = alice.tick()  # task 11 is not posted yet: it waits for it, and leaves task 7 alone
    assert not t.busy and not t.done
    assert alice.db.get("task", 7) == {"status": "joined", "posted_block": 1}
    alice.close()


@pytest.mark.anvil
def test_a_devnet_restarted_under_a_running_trainer(tmp_path: Path, artifacts: dict[str, Artifact]) -> None:
    """The chain goes away and comes back as a new chain (a restarted devnet, redeployed at the very same
    addresses): the trainer and the watcher say so, act on nothing, keep running, and stop cleanly on Ctrl-C."""
    from offchain.chain.client import ChainClient

    port = free_port()
    deployments = tmp_path / "deployments"
    procs: list[Proc] = []
    chain = Anvil(port=port, accounts=8).start()
    try:
        deploy_all(ChainClient(chain.rpc_url, chain.accounts[0].private_key), artifacts=artifacts, out_dir=deployments)
        common = ["--rpc", chain.rpc_url, "--deployments", str(deployments), "--store", str(tmp_path / "public"),
                  "--poll", "0.2"]  # fmt: skip
        for name, args in (("trainer", ["trainer", "run"]), ("watcher", ["watch"])):
            procs.append(Proc(name, [*args, *common, "--home", str(tmp_path / name)], tmp_path).start(tmp_path))
        deadline = time.monotonic() + 240
        while not all("Ctrl-C stops" in p.out for p in procs):
            assert all(p.alive() for p in procs) and time.monotonic() < deadline, [p.describe() for p in procs]
            time.sleep(0.3)
        chain.stop()
        time.sleep(3)  # the agents meet an unreachable RPC
        chain = Anvil(port=port, accounts=8).start()
        deploy_all(ChainClient(chain.rpc_url, chain.accounts[0].private_key), artifacts=artifacts, write=False)
        deadline = time.monotonic() + 120
        while not all("not this home's one" in p.out for p in procs):
            assert all(p.alive() for p in procs), [p.describe() for p in procs]
            assert time.monotonic() < deadline, [p.describe() for p in procs]
            time.sleep(0.5)
        codes = [p.stop() for p in procs]
    finally:
        for p in procs:
            if p.alive():
                p.stop()
        chain.stop()
    for p in procs:
        assert not has_traceback(p.err), p.describe()
        assert "genesis block" in p.out and "another --home" in p.out, p.describe()
    assert codes == [0, 0], [p.describe() for p in procs]
