"""`refereed` commands through typer's CliRunner, and `devnet` as a real subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from offchain.chain.anvil import Anvil, _rpc_chain_id, dev_accounts
from offchain.cli import app
from trainer.commit import commit_tensor, state_commitments, state_root

runner = CliRunner()


def test_commit_of_a_saved_tensor(tmp_path: Path) -> None:
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    path = tmp_path / "t.pt"
    torch.save(t, path)
    result = runner.invoke(app, ["commit", str(path)])
    assert result.exit_code == 0, result.output
    assert f"0x{commit_tensor(t).hex()}" in result.stdout
    assert "float32" in result.stdout and "(2, 3, 4)" in result.stdout


def test_commit_of_a_non_contiguous_tensor_commits_its_values(tmp_path: Path) -> None:
    t = torch.arange(12, dtype=torch.int64).reshape(3, 4).t()
    path = tmp_path / "t.pt"
    torch.save(t, path)
    result = runner.invoke(app, ["commit", str(path)])
    assert result.exit_code == 0, result.output
    assert f"0x{commit_tensor(t.contiguous()).hex()}" in result.stdout


def test_commit_of_a_saved_state_dict(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    sd = model.state_dict()
    path = tmp_path / "sd.pt"
    torch.save(sd, path)
    result = runner.invoke(app, ["commit", str(path)])
    assert result.exit_code == 0, result.output
    assert f"state root  0x{state_root(sd).hex()}" in result.stdout
    for name, c in state_commitments(sd).items():
        line = next(line for line in result.stdout.splitlines() if f" {name} " in line)
        assert f"0x{c.hex()}" in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"certainly not a torch file", "not a torch.save file"),
        (None, "no such file"),
        ([1, 2, 3], "holds a list; expected a tensor or a dict of tensors"),
        ({"w": torch.ones(2), "step": 3}, "entry 'step' is of type int"),
        ({}, "holds an empty dict"),
        (torch.ones(2, dtype=torch.complex64), "complex64 has no commitment code"),
    ],
)
def test_commit_of_bad_input_exits_2_with_one_line(tmp_path: Path, content: object, message: str) -> None:
    path = tmp_path / "x.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    result = runner.invoke(app, ["commit", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_commit_of_a_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "sd.pt"
    torch.save({"w": torch.ones(100)}, path)
    path.write_bytes(path.read_bytes()[:200])
    result = runner.invoke(app, ["commit", str(path)])
    assert result.exit_code == 2 and "not a torch.save file" in result.stderr


@pytest.mark.anvil
def test_deploy_writes_the_deployment_file(anvil: Anvil, tmp_path: Path) -> None:
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "31337.json").read_text())
    address = data["contracts"]["CommitmentVerifier"]["address"]
    assert address in result.stdout
    assert data["deployer"] == anvil.accounts[0].address
    game, market = data["contracts"]["DisputeGame"]["address"], data["contracts"]["TaskMarket"]["address"]
    assert f"bound RecomputeOracle.bindGame({game})" in result.stdout
    assert f"bound DisputeGame.bindMarket({market})" in result.stdout
    assert f"bound DisputeGame.bindReferee({data['contracts']['ElementReferee']['address']})" in result.stdout


@pytest.mark.anvil
def test_deploy_without_the_element_referee_binds_no_referee(anvil: Anvil, tmp_path: Path) -> None:
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--out", str(tmp_path), "--no-element-referee"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "31337.json").read_text())
    assert "bindReferee" not in result.stdout and data["contracts"]["ElementReferee"]["address"] in result.stdout
    assert [b["function"] for b in data["bindings"]] == ["bindGame", "bindMarket"]


@pytest.mark.anvil
def test_deploy_with_key_from_the_environment(anvil: Anvil, tmp_path: Path) -> None:
    env = {"REFEREED_KEY": anvil.accounts[3].private_key}
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--out", str(tmp_path)], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "31337.json").read_text())["deployer"] == anvil.accounts[3].address


def test_deploy_to_nothing_exits_1_with_the_url(closed_rpc_url: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["deploy", "--rpc", closed_rpc_url, "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert closed_rpc_url in result.stderr and "Traceback" not in result.output
    assert not list(tmp_path.iterdir())


@pytest.mark.anvil
def test_deploy_with_an_unfunded_key_exits_1(anvil: Anvil, tmp_path: Path) -> None:
    key = "0x" + "11" * 32
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--key", key, "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "has 0 wei" in result.stderr


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


@pytest.mark.anvil
def test_devnet_runs_until_sigint_then_stops_anvil(unused_port: int) -> None:
    port = unused_port
    proc = subprocess.Popen(
        [sys.executable, "-m", "offchain.cli", "devnet", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while _rpc_chain_id(url) != 31337:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "devnet's RPC never answered"
            time.sleep(0.05)
        anvils = _children(proc.pid)
        assert len(anvils) == 1
        # The RPC answers before the table is printed: wait for the last line devnet prints.
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(lines)
        assert url in text and "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" in text and "10,000.00" in text
        assert dev_accounts(20)[19].address in text, "20 funded accounts: enough for 5 oracles and the other roles"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "anvil stopped" in out and "Traceback" not in err
    assert not Path(f"/proc/{anvils[0]}").exists()
    assert _rpc_chain_id(url) is None


@pytest.mark.anvil
def test_deploy_with_a_malformed_key_exits_2(anvil: Anvil, tmp_path: Path) -> None:
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--key", "0xzz", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "is not hex" in result.stderr


@pytest.mark.anvil
def test_deploy_needs_a_key_off_anvils_chain_id(tmp_path: Path) -> None:
    with Anvil(chain_id=1337, accounts=1) as node:
        result = runner.invoke(app, ["deploy", "--rpc", node.rpc_url, "--out", str(tmp_path)])
    assert result.exit_code == 2 and "pass --key" in result.stderr
    assert not list(tmp_path.iterdir())
