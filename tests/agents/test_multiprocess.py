"""A dispute with every agent as its own `refereed` process, as a user runs them in separate terminals.

`refereed devnet --fast-forward`, `deploy`, `task post --follow` (the client verifies, finalizes and
withdraws), an honest `trainer run`, a cheating one, `oracle run --count 5` and `watch`, each a subprocess
of the CLI. The honest trainer, the cheater and the watcher all race to settle the oracle's question, to
resolve the game and to settle it in the market: only one of each lands, the others' transactions are
refused by the contract. No process may exit on that (nor on anything else) before it is stopped with
Ctrl-C, and then each exits 0 without a traceback. The run is repeated: the races land differently each time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_procs import Proc, free_port, has_traceback, run_cli, start_devnet, stop_all, wait_until

from offchain.chain.anvil import dev_accounts

# Exhaustive (./scripts/test --exhaustive): every test run already runs every agent as a process, with a
# cheater, a dispute and the watcher racing the trainers, in tests/agents/test_byom.py (and without a
# dispute in tests/agents/test_quickstart.py); this test repeats a dispute three times so that the races
# land differently.
RUNS = 3


@pytest.mark.anvil
@pytest.mark.exhaustive
@pytest.mark.parametrize("run", range(RUNS))
def test_a_dispute_with_every_agent_a_process(tmp_path: Path, run: int) -> None:
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.contracts.protocol import Protocol
    from offchain.contracts.task_market import TaskStatus

    deployments = tmp_path / "deployments"
    public = tmp_path / "public"
    port = free_port()
    rpc = f"http://127.0.0.1:{port}"
    devnet = start_devnet(tmp_path, port, deployments, idle=8.0)
    procs: list[Proc] = [devnet]
    try:
        deployed = run_cli(["deploy", "--rpc", rpc, "--deployments", str(deployments)], tmp_path)
        assert deployed.returncode == 0, deployed.stderr
        common = ["--rpc", rpc, "--deployments", str(deployments), "--store", str(public), "--poll", "0.2"]

        def agent(name: str, *args: str) -> Proc:
            p = Proc(name, [*args, *common, "--home", str(tmp_path / name)], tmp_path).start(tmp_path)
            procs.append(p)
            return p

        oracles = Proc("oracles", ["oracle", "run", *common, "--count", "5"], tmp_path).start(tmp_path)
        procs.append(oracles)
        agent("watcher", "watch")
        honest_proc = agent("honest", "trainer", "run", "--account", "2")
        # A process takes a while to start on a loaded machine: post once the honest trainer is up, so that it
        # joins at once; the devnet passes a join deadline with free slots only after 20 quiet periods.
        wait_until("the honest trainer is up", lambda: "Ctrl-C stops" in honest_proc.out, procs, 240)
        client = agent(
            "client", "task", "post", "--steps", "8", "--interval", "4", "--batch", "8", "--slots", "2",
            "--reward", "1", "--follow",
        )  # fmt: skip
        wait_until("the task is posted", lambda: "1" in client.out.splitlines(), procs, 180)
        agent("cheater", "trainer", "run", "--account", "3", "--task", "1", "--cheat", "eager-kernels")

        chain = ChainClient(rpc)
        p = Protocol.from_deployment(chain, load_deployment(chain.chain_id, deployments))
        honest, cheater = dev_accounts(4)[2].address, dev_accounts(4)[3].address

        finalized = lambda: p.market.task(1).status is TaskStatus.FINALIZED and "finalized" in client.out  # noqa: E731
        wait_until("the task is finalized", finalized, procs, 420)
        assert p.market.trainer_of(1, cheater).eliminated, "the cheater was not eliminated"
        paid = lambda: p.market.trainer_of(1, honest).claimed and p.market.credit_of(honest) == 0  # noqa: E731
        wait_until("the honest trainer is paid", paid, procs, 120)
        assert not p.market.trainer_of(1, honest).eliminated
        task = p.market.task(1)
        assert task.won and p.market.group_of(1, task.winning_group).members == (honest,)
    finally:
        codes = stop_all(procs)
    for proc in procs:
        assert not has_traceback(proc.err) and not has_traceback(proc.out), proc.describe()
    assert all(code == 0 for code in codes.values()), codes
    joined = "\n".join(proc.out for proc in procs)
    assert "settled" in joined or "resolved" in joined
