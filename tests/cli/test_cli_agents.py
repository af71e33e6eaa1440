"""`refereed task|trainer|oracle|watch`: argument errors, and tasks posted and read back on a real anvil."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from offchain.chain.anvil import Anvil, dev_accounts
from offchain.cli import DEV_ACCOUNT, app

runner = CliRunner()


def one_line_error(result: object, code: int, *fragments: str) -> None:
    exit_code, stderr, output = result.exit_code, result.stderr, result.output  # type: ignore[attr-defined]
    assert exit_code == code, output
    assert stderr.startswith("error: ") and len(stderr.strip().splitlines()) == 1, stderr
    for f in fragments:
        assert f in stderr
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["task", "post", "--steps", "10", "--interval", "3"], "--interval 3 does not divide --steps 10"),
        (["task", "post", "--batch", "200"], "at most 24 KiB"),
        (["task", "post", "--reward", "0"], "must be more than 0 ETH"),
        (["task", "post", "--arity", "6"], "--arity 6 is not a power of two"),
        (["task", "post", "--join-window", "900", "--submit-window", "600"], "the windows must grow"),
        (["task", "post", "--submit-window", "3600", "--dispute-window", "7200"], "--submit-window + 4500 s"),
        (["trainer", "run", "--cheat", "no-such-cheat", "--task", "1"], "not in the catalogue"),
        (["trainer", "run", "--cheat", "faulty-kernel"], "--cheat needs exactly one --task"),
    ],
)
def test_bad_arguments_exit_2_before_touching_the_chain(closed_rpc_url: str, args: list[str], message: str) -> None:
    result = runner.invoke(app, [*args, "--rpc", closed_rpc_url])
    one_line_error(result, 2, message)


@pytest.mark.parametrize("command", [["task", "show", "1"], ["task", "post"], ["oracle", "run"], ["watch"]])
def test_an_unreachable_chain_exits_1_with_its_url(closed_rpc_url: str, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--rpc", closed_rpc_url])
    one_line_error(result, 1, closed_rpc_url)


def test_typer_rejects_a_malformed_option() -> None:
    result = runner.invoke(app, ["task", "post", "--steps", "many"])
    assert result.exit_code == 2 and "Traceback" not in result.output


# -- on anvil ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployed(anvil: Anvil, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh deployment of the protocol on the session's anvil; its folder."""
    folder = tmp_path_factory.mktemp("deployments")
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="module")
def posted(anvil: Anvil, deployed: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """A small task posted through `task post`; its id."""
    home = tmp_path_factory.mktemp("client")
    args = ["task", "post", "--rpc", anvil.rpc_url, "--deployments", str(deployed)]
    args += ["--home", str(home), "--store", str(home / "public"), "--steps", "8", "--interval", "4", "--batch", "8"]
    args += ["--reward", "0.5", "--slots", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "posted mlp-digits (8 steps" in result.stdout
    return int(result.stdout.strip().splitlines()[-1])


@pytest.mark.anvil
def test_task_show_prints_the_posted_spec(anvil: Anvil, deployed: Path, posted: int) -> None:
    result = runner.invoke(app, ["task", "show", str(posted), "--rpc", anvil.rpc_url, "--deployments", str(deployed)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"task {posted}: open" in out
    assert dev_accounts(2)[DEV_ACCOUNT["client"]].address in out  # the client role's dev account posted it
    assert "0.500000 ETH" in out and "8 (checkpoint every 4, batch 8)" in out
    assert "0 joined, 0 submitted of 2 slots, 0 outside challengers" in out
    assert "commit by" in out and "reveal by" in out and "enter by" in out


@pytest.mark.anvil
def test_task_show_of_an_unknown_task_exits_2(anvil: Anvil, deployed: Path, posted: int) -> None:
    result = runner.invoke(app, ["task", "show", "999", "--rpc", anvil.rpc_url, "--deployments", str(deployed)])
    one_line_error(result, 2, "there is no task 999", f"tasks 1..{posted}")


@pytest.mark.anvil
def test_task_finalize_too_early_names_the_error(anvil: Anvil, deployed: Path, posted: int) -> None:
    result = runner.invoke(
        app, ["task", "finalize", str(posted), "--rpc", anvil.rpc_url, "--deployments", str(deployed)]
    )
    one_line_error(result, 1, f"task {posted} cannot be finalized", "TaskMarketFinalizeTooEarly")


@pytest.mark.anvil
def test_a_second_post_from_the_same_home_posts_a_new_task(anvil: Anvil, deployed: Path, tmp_path: Path) -> None:
    args = ["task", "post", "--rpc", anvil.rpc_url, "--deployments", str(deployed), "--home", str(tmp_path)]
    args += ["--store", str(tmp_path / "public"), "--steps", "4", "--interval", "4", "--batch", "4"]
    ids = []
    for _ in range(2):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        ids.append(int(result.stdout.strip().splitlines()[-1]))
    assert ids[1] == ids[0] + 1


@pytest.mark.anvil
def test_key_and_account_together_exit_2(anvil: Anvil, deployed: Path) -> None:
    key = anvil.accounts[3].private_key
    result = runner.invoke(
        app, ["oracle", "run", "--rpc", anvil.rpc_url, "--deployments", str(deployed), "--key", key, "--account", "3"]
    )
    one_line_error(result, 2, "--account")


@pytest.mark.anvil
def test_count_runs_on_dev_accounts_only(anvil: Anvil, deployed: Path) -> None:
    key = anvil.accounts[3].private_key
    args = ["oracle", "run", "--rpc", anvil.rpc_url, "--deployments", str(deployed), "--count", "5", "--key", key]
    one_line_error(runner.invoke(app, args), 2, "--count")


@pytest.mark.anvil
def test_five_oracles_in_one_process_register_and_stop_on_ctrl_c(anvil: Anvil, deployed: Path, tmp_path: Path) -> None:
    """`oracle run --count 5`: five oracle agents, each on its own dev account and home, register (a
    question is drawn only once committeeSize + 2 = 5 oracles are); Ctrl-C stops them all cleanly."""
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.contracts.protocol import Protocol

    chain = ChainClient(anvil.rpc_url)
    oracle = Protocol.from_deployment(chain, load_deployment(chain.chain_id, deployed)).oracle
    before = oracle.slot_count()
    command = [sys.executable, "-m", "offchain.cli", "oracle", "run", "--rpc", anvil.rpc_url]
    command += ["--deployments", str(deployed), "--store", str(tmp_path / "public"), "--account", "4"]
    command += ["--count", "5", "--poll", "0.2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while oracle.slot_count() < before + 5:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the oracles did not register in time"
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "5 oracles stopped" in out, out
    for account in dev_accounts(9)[4:9]:
        assert oracle.bond_of(account.address) == oracle.min_bond()
        assert (tmp_path / ".refereed" / f"oracle-{account.address}" / "agent.db").is_file()


@pytest.mark.anvil
def test_an_agent_without_a_deployment_exits_1(anvil: Anvil, tmp_path: Path) -> None:
    result = runner.invoke(app, ["watch", "--rpc", anvil.rpc_url, "--deployments", str(tmp_path)])
    one_line_error(result, 1, "no deployment for chain 31337", "refereed deploy")


@pytest.mark.anvil
def test_watch_shows_the_chain_and_stops_on_ctrl_c(anvil: Anvil, deployed: Path, posted: int, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "offchain.cli", "watch", "--rpc", anvil.rpc_url, "--deployments", str(deployed)]
    command += ["--home", str(tmp_path / "watcher"), "--store", str(tmp_path / "public"), "--from-block", "1"]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 120
        for line in proc.stdout:  # the feed replays the chain from block 1: the task's posting shows
            lines.append(line)
            if f"task {posted} posted by" in line:
                break
            assert time.monotonic() < deadline, "".join(lines)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Ctrl-C stops" in lines[0] and "watcher stopped" in out and "Traceback" not in err
    assert (tmp_path / "watcher" / "agent.db").is_file()


@pytest.mark.anvil
def test_trainers_as_processes_train_submit_and_get_paid(anvil: Anvil, deployed: Path, tmp_path: Path) -> None:
    """`task post`, two `trainer run` processes (each its own key and home, one public store), `task finalize`:
    both train the task and commit; once the test moves the chain past the submit deadline they reveal, agree;
    past the dispute deadline `task finalize` claims for both, and they withdraw their share of the reward;
    Ctrl-C stops each cleanly."""
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.contracts.protocol import Protocol
    from offchain.contracts.task_market import TaskStatus

    public = tmp_path / "public"
    common = ["--rpc", anvil.rpc_url, "--deployments", str(deployed), "--store", str(public)]
    post = ["task", "post", *common, "--home", str(tmp_path / "client"), "--steps", "8", "--interval", "4"]
    result = runner.invoke(app, [*post, "--batch", "8", "--reward", "1", "--slots", "2"])
    assert result.exit_code == 0, result.output
    task_id = int(result.stdout.strip().splitlines()[-1])

    chain = ChainClient(anvil.rpc_url)
    market = Protocol.from_deployment(chain, load_deployment(chain.chain_id, deployed)).market
    accounts = {2: dev_accounts(4)[2].address, 3: dev_accounts(4)[3].address}
    procs = {}
    for i in accounts:
        command = [sys.executable, "-m", "offchain.cli", "trainer", "run", *common, "--account", str(i)]
        command += ["--home", str(tmp_path / f"trainer-{i}"), "--task", str(task_id), "--poll", "0.2"]
        procs[i] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    spec = market.spec_of(task_id)

    def past(t: int) -> None:  # the chain's clock, moved past chain time t
        now = int(chain.w3.eth.get_block("latest")["timestamp"])
        chain.w3.provider.make_request("evm_increaseTime", [max(1, t - now + 1)])  # type: ignore[arg-type]
        chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    def wait_for(what: str, done: Callable[[], bool]) -> None:
        while not done():
            assert all(p.poll() is None for p in procs.values()), "a trainer process died"
            assert time.monotonic() < deadline, f"the trainers did not {what} in time"
            time.sleep(0.5)

    try:
        deadline = time.monotonic() + 180
        wait_for("commit", lambda: all(market.trainer_of(task_id, a).committed for a in accounts.values()))
        assert not any(market.trainer_of(task_id, a).submitted for a in accounts.values())
        past(spec.submit_deadline)
        wait_for("reveal", lambda: all(market.trainer_of(task_id, a).submitted for a in accounts.values()))
        past(spec.dispute_deadline)
        result = runner.invoke(app, ["task", "finalize", str(task_id), *common[:4]])
        assert result.exit_code == 0, result.output
        while any(market.credit_of(a) for a in accounts.values()):
            assert time.monotonic() < deadline, "the trainers did not withdraw in time"
            time.sleep(0.5)
        outputs = {}
        for i, p in procs.items():
            p.send_signal(signal.SIGINT)
            outputs[i] = p.communicate(timeout=30)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    assert market.task(task_id).status is TaskStatus.FINALIZED
    groups = {market.trainer_of(task_id, a).group for a in accounts.values()}
    assert len(groups) == 1, "two honest trainers in two processes computed the same roots"
    for i, p in procs.items():
        out, err = outputs[i]
        assert p.returncode == 0, err
        assert "Traceback" not in err
        assert f"task {task_id}: revealed its result: 3 checkpoints" in out and "withdrew" in out, out
