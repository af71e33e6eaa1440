"""`refereed ledger post|contribute|build|claim|show` on anvil, in process: the honest flow of a two-step
ledger with two contributors and two builders (quorum 2), each party one `--once` command at a time, the
chain's clock moved to the next window when nobody has anything to do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.cli import app

pytestmark = pytest.mark.anvil
RUNNER = CliRunner()


def _invoke(*args: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_the_honest_flow_through_the_cli(anvil: Anvil, artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[9].private_key, artifacts=artifacts.values())
    deploy_all(deployer, artifacts=artifacts, out_dir=tmp_path / "deployments")
    deployments = ["--deployments", str(tmp_path / "deployments")]
    common = ["--rpc", anvil.rpc_url, "--store", str(tmp_path / "public"), *deployments]

    def home(name: str) -> list[str]:
        return ["--home", str(tmp_path / name)]

    code, out = _invoke(
        "ledger", "post", *common, "--account", "0", *home("client"), "--steps", "2", "--interval", "2",
        "--validation-batch", "32", "--pool", "1", "--once",
    )  # fmt: skip
    assert code == 0, out
    lid = re.search(r"^ledger (\d+)$", out, re.M)
    assert lid is not None, out
    ledger = lid.group(1)
    parties = {
        "client": ["ledger", "post", "--ledger", ledger, *common, "--account", "0", *home("client")],
        "clean": ["ledger", "contribute", ledger, "--kind", "clean", *common, "--account", "1",
                  *home("clean")],
        "poison": ["ledger", "contribute", ledger, "--kind", "poison", *common, "--account", "2",
                   *home("poison")],
        "builder0": ["ledger", "build", ledger, *common, "--account", "5", *home("b0")],
        "builder1": ["ledger", "build", ledger, *common, "--account", "6", *home("b1")],
    }  # fmt: skip
    from offchain.chain.deploy import load_deployment
    from offchain.contracts.training_ledger import TrainingLedgerClient

    lc = TrainingLedgerClient.from_deployment(deployer, load_deployment(31337, tmp_path / "deployments"), artifacts)
    lid_int = int(ledger)
    claimed_by_cli = False
    heads: set[str] = set()
    log: list[str] = []
    for _round in range(60):
        before = deployer.block_number()
        now = int(deployer.w3.eth.get_block("latest")["timestamp"])
        if not claimed_by_cli and lc.ledger(lid_int).claims_open(now):
            code, out = _invoke("ledger", "claim", ledger, *common, "--account", "2", *home("poison"))
            assert code == 0 and "claimed leaf" in out, out
            claimed_by_cli = True
            code, out = _invoke("ledger", "claim", ledger, *common, "--account", "2", *home("poison"))
            assert code == 1 and "already claimed" in out, out
        states, waits = {}, []
        for name, args in parties.items():
            code, out = _invoke(*args, "--once")
            assert code == 0, f"{name}: {out}"
            log.append(f"{name}: {out}")
            heads.update(re.findall(r"^head (0x[0-9a-f]{64})$", out, re.M))
            last = [line for line in out.splitlines() if line == "done" or line.startswith("waiting")][-1]
            states[name] = last
            m = re.fullmatch(r"waiting until (\d+)", last)
            if m:
                waits.append(int(m.group(1)))
        if all(s == "done" for s in states.values()):
            break
        if deployer.block_number() == before:  # nobody sent anything: move the clock to the next window
            assert waits, states
            now = int(deployer.w3.eth.get_block("latest")["timestamp"])
            deployer.w3.provider.make_request("evm_increaseTime", [max(1, min(waits) - now)])  # type: ignore[arg-type]
            deployer.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    else:
        pytest.fail(f"the parties did not finish: {states}")
    assert claimed_by_cli

    code, out = _invoke("ledger", "show", "--ledger", ledger, "--rpc", anvil.rpc_url, "--deployments",
                        str(tmp_path / "deployments"), "--json")  # fmt: skip
    assert code == 0, out
    state = json.loads(out)
    assert state["paid"] == state["pool"] == 10**18, "\n".join([str(state["claims"]), *log[-30:]])
    assert not state["frozen"] and state["intervals_agreed"] == 1
    assert [s["reveals"] for s in state["steps"]] == [2, 2]
    leaves = [c for c in state["claims"] if c["index"] is not None]
    fees = [c for c in state["claims"] if c["index"] is None]
    assert len(leaves) == 2 and len(fees) == 2 and sum(c["amount"] for c in fees) == state["builder_fee"]
    assert lc.balance() == 0
    code, out = _invoke("ledger", "show", "--ledger", ledger, "--rpc", anvil.rpc_url, "--deployments",
                        str(tmp_path / "deployments"))  # fmt: skip
    assert code == 0 and "interval roots" in out and "payout root 0x" in out, out

    # Both builders published the same head; it replays from genesis.
    assert len(heads) == 1, heads
    code, out = _invoke("ledger", "verify-replay", heads.pop(), "--store", str(tmp_path / "public"))
    assert code == 0 and "ok: 2 blocks" in out, out
