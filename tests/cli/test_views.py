"""The views a user reads: `task show --json` (what it waits for, when it can be finalized), `task wait`,
`account` and `account --withdraw`, on a real anvil."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from offchain.chain.anvil import dev_accounts
from offchain.cli import app

runner = CliRunner()


@pytest.mark.anvil
def test_a_refunded_task_waits_then_its_credit_is_withdrawn(anvil: Any, tmp_path: Path) -> None:
    from offchain.chain.client import ChainClient

    common = ["--rpc", anvil.rpc_url, "--deployments", str(tmp_path / "dep")]
    assert runner.invoke(app, ["deploy", *common]).exit_code == 0
    post = ["task", "post", *common, "--home", str(tmp_path / "client"), "--store", str(tmp_path / "public")]
    posted = runner.invoke(app, [*post, "--steps", "4", "--interval", "4", "--batch", "4", "--reward", "0.25"])
    assert posted.exit_code == 0, posted.output
    task_id = posted.stdout.strip().splitlines()[-1]

    shown = json.loads(runner.invoke(app, ["task", "show", task_id, *common, "--json"]).stdout)
    assert shown["status"] == "open" and shown["reward_wei"] == str(250_000_000_000_000_000)
    assert shown["waits_for"].startswith("trainers to join (0 of 3 slots taken)")
    assert shown["finalize_at"] == shown["deadlines"]["dispute"] + 1

    chain = ChainClient(anvil.rpc_url)
    chain.w3.provider.make_request("evm_increaseTime", [shown["deadlines"]["dispute"] - shown["now"] + 5])  # type: ignore[arg-type]
    chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    later = json.loads(runner.invoke(app, ["task", "show", task_id, *common, "--json"]).stdout)
    assert later["waits_for"] == f"`refereed task finalize {task_id}`: anyone may finalize it now"
    table = runner.invoke(app, ["task", "show", task_id, *common]).stdout
    assert "waits for" in table and "anyone may finalize it now" in table

    fin = runner.invoke(app, ["task", "finalize", task_id, *common, "--no-withdraw"])
    assert fin.exit_code == 0 and "refunded to the client" in fin.stdout, fin.output
    waited = runner.invoke(app, ["task", "wait", task_id, *common, "--timeout", "30"])
    assert waited.exit_code == 0 and "finalized" in waited.stdout, waited.output

    client = dev_accounts(2)[1].address
    before = json.loads(runner.invoke(app, ["account", client, *common, "--json"]).stdout)
    assert int(before["market_credit_wei"]) >= 250_000_000_000_000_000
    assert any(t["role"] == "client" and t["task"] == int(task_id) for t in before["tasks"])
    took = runner.invoke(app, ["account", "--account", "1", *common, "--withdraw"])
    assert took.exit_code == 0 and "withdrew" in took.stdout and "from the TaskMarket" in took.stdout, took.output
    after = json.loads(runner.invoke(app, ["account", client, *common, "--json"]).stdout)
    assert after["market_credit_wei"] == "0"
    assert int(after["balance_wei"]) > int(before["balance_wei"])
