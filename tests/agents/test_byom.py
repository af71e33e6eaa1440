"""docs/bring-your-own-model.md's terminals, run as written: a user's own workload posted with `--workload`,
trained by an honest trainer and a cheater, disputed, decided and paid, every agent its own process.

The page's bash blocks follow the quickstart's form (tests/agents/test_quickstart.py reads them the same
way); the commands run in a folder holding examples/byom/, as the page says. At the end the page's last
Python block loads the trained weights into the user's model, and the chain must show the cheater
eliminated and the honest trainer the winner, paid, with nothing left to withdraw.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_procs import REPO, Proc, cli_env, free_port, has_traceback, stop_all, wait_until
from test_quickstart import blocks

from offchain.chain.anvil import dev_accounts

PAGE = REPO / "docs" / "bring-your-own-model.md"


def test_the_page_has_the_terminals_of_a_dispute() -> None:
    commands = [c for b in blocks(PAGE.read_text()) for c in b.commands]
    posts = [c for c in commands if c[:2] == ("task", "post")]
    assert len(posts) == 1 and posts[0][posts[0].index("--workload") + 1] == "digits_cnn_task:workload"
    assert any("--cheat" in c for c in commands), "the page shows a dispute"


@pytest.mark.anvil
def test_the_bring_your_own_model_page_runs_as_written(tmp_path: Path) -> None:
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.contracts.protocol import Protocol
    from offchain.contracts.task_market import TaskStatus

    for f in (REPO / "examples" / "byom").glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    port = free_port()
    env = {**cli_env(), "REFEREED_RPC": f"http://127.0.0.1:{port}", "REFEREED_DEPLOYMENTS": str(tmp_path / "dep")}
    procs: list[Proc] = []
    outputs: dict[str, str] = {}
    try:
        for i, block in enumerate(blocks(PAGE.read_text())):
            for j, command in enumerate(block.commands):
                args = list(command)
                if args[0] == "devnet":
                    args += ["--port", str(port)]
                name = f"t{block.terminal}-{i}-{j}-{args[0]}"
                if block.ready is not None:
                    proc = Proc(name, args, tmp_path).start(tmp_path, env)
                    procs.append(proc)
                    wait_until(f"{name} is ready", lambda p=proc, r=block.ready: r in p.out, procs, 300)
                    continue
                done = subprocess.run([sys.executable, "-m", "offchain.cli", *args], capture_output=True, text=True,
                                      cwd=tmp_path, env=env, timeout=1200)  # fmt: skip
                assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
                assert not has_traceback(done.stderr)
                outputs[" ".join(args)] = done.stdout
        chain = ChainClient(env["REFEREED_RPC"])
        p = Protocol.from_deployment(chain, load_deployment(chain.chain_id, tmp_path / "dep"))
        honest, cheater = dev_accounts(4)[2].address, dev_accounts(4)[3].address
        assert p.market.task(1).status is TaskStatus.FINALIZED
        assert p.market.trainer_of(1, cheater).eliminated, "the cheater was not eliminated"
        assert not p.market.trainer_of(1, cheater).claimed
        games = [d for d in p.market.disputes(1) if {d.defender, d.challenger} == {honest, cheater}]
        assert games and all(p.market.dispute_of(d.game_id).settled for d in games), "no decided dispute"
        task = p.market.task(1)
        assert task.won and p.market.group_of(1, task.winning_group).members == (honest,)
        paid = lambda: p.market.trainer_of(1, honest).claimed and p.market.credit_of(honest) == 0  # noqa: E731
        wait_until("the honest trainer is paid", paid, procs, 300)
        (after,) = [b for b in re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
                    if b.startswith("# after the terminals")]  # fmt: skip
        (tmp_path / "after.py").write_text(after)
        done = subprocess.run([sys.executable, "after.py"], capture_output=True, text=True, cwd=tmp_path, env=env,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        (figure,) = re.findall(r"`(test accuracy of the trained weights: [0-9.]+)`", PAGE.read_text())
        assert figure in done.stdout, (figure, done.stdout)  # the page's figure: the honest bits, loaded back
    finally:
        codes = stop_all(procs)
    for proc in procs:
        assert not has_traceback(proc.err) and not has_traceback(proc.out), proc.describe()
    assert all(code == 0 for code in codes.values()), codes
    result = outputs["task result 1 --out weights.pt"]
    root = re.search(r"state root (0x[0-9a-f]{64})", result)
    assert root and f"state root  {root.group(1)}" in outputs["commit weights.pt"]
    account = json.loads(outputs["account --account 2 --json"])
    assert account["tasks"][0]["claimed"]
    joined = "\n".join(proc.out for proc in procs)
    assert "digits-cnn" in joined  # the client posted the user's workload, not a bundled one
