"""Every bad input gets a clear error at the edge: one table of cases across the CLI and the Python API.

Each CLI case asserts the exit status (2 for a usage error, 1 for a chain that does not match), one
line on stderr starting with `error: ` (or click's usage message for a malformed option), the
fragments that name the input and the fix, and that no traceback and no unexpected exception reached
the user. Each API case asserts the package's own exception (`OffchainError` or a subclass) and its
message. The cases that need a chain run on the session's anvil with a fresh deployment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from offchain.cli import app
from offchain.errors import OffchainError

runner = CliRunner()
U64 = str(2**64)
ZERO_KEY = "0x" + "00" * 32
N_KEY = "0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141"
GOOD_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's account 1


@dataclass(frozen=True)
class Case:
    """argv (`{rpc}`, `{tmp}`, `{deployments}` are filled in), the exit code, fragments of stderr, env."""

    argv: tuple[str, ...]
    code: int
    fragments: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    usage: bool = False  # click's own usage error (several lines, "Usage:"), not our one line
    prepare: Callable[[Path], None] | None = None


def c(argv: str, code: int, *fragments: str, env: dict[str, str] | None = None, usage: bool = False,
      prepare: Callable[[Path], None] | None = None) -> Case:  # fmt: skip
    return Case(tuple(argv.split()), code, fragments, tuple((env or {}).items()), usage, prepare)


def _save(obj: Any) -> Callable[[Path], None]:
    def prepare(tmp: Path) -> None:
        torch.save(obj, tmp / "x.pt")

    return prepare


def _write(name: str, text: str) -> Callable[[Path], None]:
    def prepare(tmp: Path) -> None:
        (tmp / name).write_text(text)

    return prepare


def _keystore(password: str) -> Callable[[Path], None]:
    def prepare(tmp: Path) -> None:
        from eth_account import Account

        (tmp / "ks.json").write_text(json.dumps(Account.encrypt(GOOD_KEY, password)))

    return prepare


def _sparse(tmp: Path) -> None:
    torch.save(torch.eye(3).to_sparse(), tmp / "x.pt")


_WORKLOAD_HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
from trainer.data.dataset import Dataset
from trainer.program import SGDConfig
from trainer.workloads import Workload


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x).cumsum(1)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return x[:, :3] * self.scale


def make(model, width=4, steps=32):
    data = Dataset.from_tensors("d", x=torch.ones(16, width), y=torch.zeros(16, dtype=torch.long))
    return Workload.of("w", model, F.cross_entropy, SGDConfig(lr=0.1), data, steps=steps, checkpoint_interval=8,
                       batch_size=8)
"""


def _workload(module: str, body: str) -> Callable[[Path], None]:
    """A workload module `module`.py in the working folder (one name per case: imports are cached)."""
    return _write(f"{module}.py", _WORKLOAD_HEAD + body)


# Cases that fail before anything is asked of the chain ({rpc} is a port where nothing listens).
OFFLINE: dict[str, Case] = {
    # RPC URLs
    "rpc-no-scheme": c("task show 1 --rpc 127.0.0.1:8545", 2, "no scheme", "http://127.0.0.1:8545"),
    "rpc-ws": c("task show 1 --rpc ws://127.0.0.1:8545", 2, "websocket", "http://"),
    "rpc-wss": c("watch --rpc wss://example.org", 2, "websocket"),
    "rpc-port-too-big": c("task show 1 --rpc http://127.0.0.1:70000", 2, "--rpc", "65535"),
    "rpc-port-zero": c("task show 1 --rpc http://127.0.0.1:0", 2, "port 0"),
    "rpc-empty": c("task show 1 --rpc=", 2, "empty"),
    "rpc-ftp": c("task show 1 --rpc ftp://127.0.0.1:8545", 2, "not http or https"),
    "rpc-no-host": c("task show 1 --rpc http://", 2, "no host"),
    "rpc-deploy-no-scheme": c("deploy --rpc localhost:8545", 2, "no scheme"),
    "rpc-trainer-no-scheme": c("trainer run --rpc localhost:8545", 2, "no scheme"),
    # --workload: the user's own model and data, built and captured before the chain is asked anything
    "workload-not-a-spec": c("task post --workload mymodule --rpc {rpc}", 2, "'mymodule'", "package.module:function"),
    "workload-no-such-module": c(
        "task post --workload no_such_module_zz:workload --rpc {rpc}",
        2,
        "'no_such_module_zz' does not import",
        "ModuleNotFoundError",
    ),
    "workload-import-raises": c(
        "task post --workload wl_boom:workload --rpc {rpc}",
        2,
        "does not import",
        "RuntimeError: boom at import",
        prepare=_write("wl_boom.py", "raise RuntimeError('boom at import')\n"),
    ),
    "workload-no-function": c(
        "task post --workload wl_empty:workload --rpc {rpc}",
        2,
        "has no attribute 'workload'",
        prepare=_write("wl_empty.py", "x = 1\n"),
    ),
    "workload-not-callable": c(
        "task post --workload wl_value:workload --rpc {rpc}",
        2,
        "'workload' is a int, not a function",
        prepare=_write("wl_value.py", "workload = 3\n"),
    ),
    "workload-wrong-type": c(
        "task post --workload wl_int:workload --rpc {rpc}",
        2,
        "returned a int, not a trainer.workloads.Workload",
        prepare=_write("wl_int.py", "def workload():\n    return 3\n"),
    ),
    "workload-raises": c(
        "task post --workload wl_raises:workload --rpc {rpc}",
        2,
        "workload() raised ValueError: no data",
        prepare=_write("wl_raises.py", "def workload():\n    raise ValueError('no data')\n"),
    ),
    "workload-capture-fails": c(
        "task post --workload wl_cumsum:workload --rpc {rpc}",
        2,
        "cannot be posted",
        "aten.cumsum.default",
        "wl_cumsum.py:16 in forward: return self.fc(x).cumsum(1)",
        "docs/program.md#8-supported-operators",
        prepare=_workload("wl_cumsum", "def workload():\n    return make(Cumsum())\n"),
    ),
    "workload-no-init-rule": c(
        "task post --workload wl_scaled:workload --rpc {rpc}",
        2,
        "no keyed init rule for parameter 'scale'",
        "InitRules(by_type=",
        prepare=_workload("wl_scaled", "def workload():\n    return make(Scaled())\n"),
    ),
    "workload-batch-too-big": c(
        "task post --workload wl_wide:workload --rpc {rpc}",
        2,
        "batch tensor 'x' is 32768 bytes",
        "24576",
        prepare=_workload("wl_wide", "def workload():\n    return make(nn.Linear(1024, 3), width=1024)\n"),
    ),
    "workload-interval-override": c(
        "task post --workload wl_ok:workload --interval 5 --rpc {rpc}",
        2,
        "must be a multiple",
        prepare=_workload("wl_ok", "def workload():\n    return make(nn.Linear(4, 3))\n"),
    ),
    # ETH amounts
    "reward-nan": c("task post --reward nan --rpc {rpc}", 2, "--reward", "finite"),
    "reward-inf": c("task post --reward inf --rpc {rpc}", 2, "--reward", "finite"),
    "reward-minus-inf": c("task post --reward -inf --rpc {rpc}", 2, "--reward", "finite"),
    "reward-negative": c("task post --reward -1 --rpc {rpc}", 2, "--reward", "more than 0 ETH"),
    "reward-zero": c("task post --reward 0 --rpc {rpc}", 2, "more than 0 ETH"),
    "reward-text": c("task post --reward lots --rpc {rpc}", 2, "'lots' is not a number of ETH"),
    "reward-below-a-wei": c("task post --reward 1e-19 --rpc {rpc}", 2, "not a whole number of wei", "18 decimals"),
    "reward-19-decimals": c("task post --reward 0.0000000000000000001 --rpc {rpc}", 2, "18 decimals"),
    "reward-above-uint256": c("task post --reward 1e80 --rpc {rpc}", 2, "uint256"),
    "max-bond-nan": c("trainer run --max-bond nan --rpc {rpc}", 2, "--max-bond", "finite"),
    "min-reward-negative": c("trainer run --min-reward-per-step -1 --rpc {rpc}", 2, "--min-reward-per-step"),
    # integers the contracts hold in uint64 (and friends)
    "clock-above-uint64": c(f"task post --clock {U64} --rpc {{rpc}}", 2, "--clock", "less than or equal", usage=True),
    "join-window-above-uint64": c(f"task post --join-window {U64} --rpc {{rpc}}", 2, "--join-window", usage=True),
    "submit-window-above-uint64": c(f"task post --submit-window {U64} --rpc {{rpc}}", 2, "--submit-window", usage=True),
    "dispute-window-above-uint64": c(
        f"task post --dispute-window {U64} --rpc {{rpc}}", 2, "--dispute-window", usage=True
    ),
    "clock-zero": c("task post --clock 0 --rpc {rpc}", 2, "--clock", usage=True),
    "steps-zero": c("task post --steps 0 --rpc {rpc}", 2, "--steps", usage=True),
    "steps-above-uint32": c(f"task post --steps {U64} --rpc {{rpc}}", 2, "--steps", usage=True),
    "steps-not-a-number": c("task post --steps many --rpc {rpc}", 2, "--steps", usage=True),
    "interval-divides-not": c("task post --steps 10 --interval 3 --rpc {rpc}", 2, "--interval 3 does not divide"),
    "batch-too-big": c("task post --batch 200 --rpc {rpc}", 2, "--batch 200", "24 KiB"),
    "arity-not-power-of-two": c("task post --arity 6 --rpc {rpc}", 2, "--arity 6 is not a power of two"),
    "arity-one": c("task post --arity 1 --rpc {rpc}", 2, "--arity 1"),
    "slots-zero": c("task post --slots 0 --rpc {rpc}", 2, "--slots", usage=True),
    "seed-negative": c("task post --seed -1 --rpc {rpc}", 2, "--seed", usage=True),
    "seed-above-uint64": c(f"task post --seed {U64} --rpc {{rpc}}", 2, "--seed", usage=True),
    "windows-shrink": c("task post --join-window 900 --submit-window 600 --rpc {rpc}", 2, "the windows must grow"),
    "dispute-window-short": c(
        "task post --submit-window 3600 --dispute-window 7200 --rpc {rpc}", 2, "--submit-window + 4500 s"
    ),
    "poll-zero": c("trainer run --poll 0 --rpc {rpc}", 2, "--poll", usage=True),
    "poll-negative": c("watch --poll -1 --rpc {rpc}", 2, "--poll", usage=True),
    # task ids
    "task-show-minus-one": c("task show -1 --rpc {rpc}", 2, usage=True),
    "task-show-zero": c("task show 0 --rpc {rpc}", 2, "task_id", usage=True),
    "task-show-2-256": c(f"task show {2**256} --rpc {{rpc}}", 2, "task_id", usage=True),
    "task-show-text": c("task show one --rpc {rpc}", 2, "task_id", usage=True),
    "task-finalize-zero": c("task finalize 0 --rpc {rpc}", 2, "task_id", usage=True),
    "task-wait-zero": c("task wait 0 --rpc {rpc}", 2, "task_id", usage=True),
    "task-wait-until-bogus": c("task wait 1 --until later --rpc {rpc}", 2, "--until 'later'", "finalized"),
    "task-result-no-out": c("task result 1 --rpc {rpc}", 2, "--out", usage=True),
    "trainer-task-zero": c("trainer run --task 0 --rpc {rpc}", 2, "--task", usage=True),
    "watch-task-zero": c("watch --task 0 --rpc {rpc}", 2, "--task", usage=True),
    "watch-from-block-zero": c("watch --from-block 0 --rpc {rpc}", 2, "--from-block", usage=True),
    "trainer-max-steps-zero": c("trainer run --max-steps 0 --rpc {rpc}", 2, "--max-steps", usage=True),
    "cheat-unknown": c("trainer run --cheat nope --task 1 --rpc {rpc}", 2, "--cheat 'nope' is not in the catalogue"),
    "cheat-without-task": c("trainer run --cheat eager-kernels --rpc {rpc}", 2, "--cheat needs exactly one --task"),
    "oracle-count-zero": c("oracle run --count 0 --rpc {rpc}", 2, "--count", usage=True),
    "oracle-count-with-key": c(f"oracle run --count 5 --key {GOOD_KEY} --rpc {{rpc}}", 2, "--count", "--key"),
    "devnet-port-too-big": c("devnet --port 70000", 2, "--port", usage=True),
    "devnet-accounts-zero": c("devnet --accounts 0", 2, "--accounts", usage=True),
    "devnet-idle-zero": c("devnet --fast-forward --idle 0", 2, "--idle", usage=True),
    "account-not-an-address": c("account 0x1234 --rpc {rpc}", 2, "'0x1234' is not an address", "40 hex digits"),
    # keys
    "key-empty-env": c(
        "trainer run --rpc {rpc}", 2, "REFEREED_KEY is empty", "unset REFEREED_KEY", env={"REFEREED_KEY": ""}
    ),
    "key-blank-env": c("watch --rpc {rpc}", 2, "REFEREED_KEY is empty", env={"REFEREED_KEY": "  "}),
    "key-zero": c(f"trainer run --key {ZERO_KEY} --rpc {{rpc}}", 2, "--key", "the private key is zero", "1..n-1"),
    "key-group-order": c(f"trainer run --key {N_KEY} --rpc {{rpc}}", 2, "--key", "group order"),
    "key-not-hex": c("trainer run --key 0xzz --rpc {rpc}", 2, "--key", "not hex"),
    "key-short": c(f"trainer run --key {GOOD_KEY[:-2]} --rpc {{rpc}}", 2, "--key", "62 hex digits", "64"),
    "key-long": c(f"trainer run --key {GOOD_KEY}00 --rpc {{rpc}}", 2, "66 hex digits"),
    "key-env-zero": c("oracle run --rpc {rpc}", 2, "the private key is zero", env={"REFEREED_KEY": ZERO_KEY}),
    "key-and-account": c(f"oracle run --key {GOOD_KEY} --account 3 --rpc {{rpc}}", 2, "--account", "--key"),
    "key-and-keystore": c(
        f"trainer run --key {GOOD_KEY} --keystore {{tmp}}/ks.json --rpc {{rpc}}", 2, "--keystore", "give one"
    ),
    "deploy-key-zero": c(f"deploy --key {ZERO_KEY} --rpc {{rpc}}", 2, "zero"),
    # keystores
    "keystore-missing": c("trainer run --keystore {tmp}/nope.json --rpc {rpc}", 2, "--keystore", "no such file"),
    "keystore-not-json": c(
        "trainer run --keystore {tmp}/ks.json --rpc {rpc}",
        2,
        "not a keystore JSON",
        prepare=_write("ks.json", "not json"),
    ),
    "keystore-not-encrypted": c(
        "trainer run --keystore {tmp}/ks.json --rpc {rpc}",
        2,
        "no 'crypto' field",
        prepare=_write("ks.json", '{"address": "0x00"}'),
    ),
    "keystore-no-password": c(
        "trainer run --keystore {tmp}/ks.json --rpc {rpc}", 2, "REFEREED_PASSWORD", prepare=_keystore("right")
    ),
    "keystore-wrong-password": c(
        "trainer run --keystore {tmp}/ks.json --rpc {rpc}",
        2,
        "password right",
        env={"REFEREED_PASSWORD": "wrong"},
        prepare=_keystore("right"),
    ),
    "keystore-create-exists": c(
        "keystore create {tmp}/ks.json", 2, "exists", env={"REFEREED_PASSWORD": "pw"}, prepare=_write("ks.json", "{}")
    ),
    "keystore-create-no-folder": c(
        "keystore create {tmp}/no/ks.json", 2, "does not exist", env={"REFEREED_PASSWORD": "pw"}
    ),
    "keystore-create-zero-key": c(
        f"keystore create {{tmp}}/k.json --key {ZERO_KEY}", 2, "zero", env={"REFEREED_PASSWORD": "pw"}
    ),
    "keystore-create-empty-password": c(
        "keystore create {tmp}/k.json", 2, "password is empty", env={"REFEREED_PASSWORD": ""}
    ),
    # folders
    "home-is-a-file": c(
        "trainer run --home {tmp}/f --rpc {rpc}", 2, "--home", "is a file, not a folder", prepare=_write("f", "x")
    ),
    "home-under-a-file": c(
        "watch --home {tmp}/f/home --rpc {rpc}", 2, "--home", "cannot be created", prepare=_write("f", "x")
    ),
    "store-is-a-file": c(
        "trainer run --store {tmp}/f --rpc {rpc}", 2, "--store", "is a file", prepare=_write("f", "x")
    ),
    "store-cannot-be-created": c(
        "oracle run --store {tmp}/f/store --rpc {rpc}", 2, "--store", "cannot be created", prepare=_write("f", "x")
    ),
    # commit
    "commit-missing": c("commit {tmp}/nope.pt", 2, "no such file"),
    "commit-folder": c("commit {tmp}", 2, "is a folder"),
    "commit-garbage": c("commit {tmp}/x.pt", 2, "not a torch.save file", prepare=_write("x.pt", "garbage")),
    "commit-meta-tensor": c(
        "commit {tmp}/x.pt", 2, "meta-device tensor", "no values", prepare=_save(torch.empty(3, device="meta"))
    ),
    "commit-meta-in-dict": c(
        "commit {tmp}/x.pt", 2, "['w']", "meta-device", prepare=_save({"w": torch.empty(2, device="meta")})
    ),
    "commit-int-key": c(
        "commit {tmp}/x.pt", 2, "key 1 is a int, not a str", "names", prepare=_save({1: torch.ones(2)})
    ),
    "commit-non-tensor-entry": c(
        "commit {tmp}/x.pt", 2, "entry 'step' is of type int", prepare=_save({"w": torch.ones(2), "step": 3})
    ),
    "commit-list": c("commit {tmp}/x.pt", 2, "holds a list", prepare=_save([1, 2])),
    "commit-empty-dict": c("commit {tmp}/x.pt", 2, "holds an empty dict", prepare=_save({})),
    "commit-complex": c("commit {tmp}/x.pt", 2, "complex64", prepare=_save(torch.ones(2, dtype=torch.complex64))),
    "commit-sparse": c("commit {tmp}/x.pt", 2, "layout", "dense", prepare=_sparse),
}


def _check(result: Any, case: Case, where: Path) -> None:
    exit_code, stderr, output = result.exit_code, result.stderr, result.output
    assert exit_code == case.code, (exit_code, output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output
    if case.usage:
        assert "Usage:" in stderr or "Error" in stderr, stderr
    else:
        assert stderr.startswith("error: ") and len(stderr.strip().splitlines()) == 1, stderr
    for f in case.fragments:
        assert f.format(tmp=where) in stderr, (f, stderr)


def _fill(argv: tuple[str, ...], **values: str) -> list[str]:
    return [a.format(**values) for a in argv]


@pytest.mark.parametrize("name", sorted(OFFLINE))
def test_bad_input_offline(name: str, tmp_path: Path, closed_rpc_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = OFFLINE[name]
    monkeypatch.delenv("REFEREED_KEY", raising=False)
    monkeypatch.delenv("REFEREED_PASSWORD", raising=False)
    monkeypatch.chdir(tmp_path)
    if case.prepare is not None:
        case.prepare(tmp_path)
    argv = _fill(case.argv, rpc=closed_rpc_url, tmp=str(tmp_path))
    result = runner.invoke(app, argv, env=dict(case.env))
    _check(result, case, tmp_path)


# -- on a chain ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployed(anvil: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("deployments")
    result = runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--deployments", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def _edit_deployment(deployed: Path, tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads((deployed / "31337.json").read_text())
    edit(data)
    folder = tmp / "edited"
    folder.mkdir()
    (folder / "31337.json").write_text(json.dumps(data))
    return folder


def _swap(data: dict[str, Any]) -> None:
    c = data["contracts"]
    c["TaskMarket"]["address"], c["DisputeGame"]["address"] = c["DisputeGame"]["address"], c["TaskMarket"]["address"]


def _other_chain(data: dict[str, Any]) -> None:
    data["chainId"] = 1


def _no_code(data: dict[str, Any]) -> None:
    data["contracts"]["TaskMarket"]["address"] = "0x000000000000000000000000000000000000dEaD"


def _malformed(data: dict[str, Any]) -> None:
    del data["contracts"]["TaskMarket"]["codeHash"]


ONCHAIN: dict[str, tuple[Callable[[dict[str, Any]], None] | None, str, int, tuple[str, ...]]] = {
    # name: (deployment edit, argv, code, fragments)
    "deployment-of-another-chain": (
        _other_chain,
        "task show 1",
        1,
        ("is for chain 1", "chain 31337", "refereed deploy"),
    ),
    "deployment-swapped-addresses": (_swap, "task show 1", 1, ("code hash differs", "refereed deploy")),
    "deployment-without-code": (_no_code, "watch", 1, ("no code at 0x000000000000000000000000000000000000dEaD",)),
    "deployment-malformed": (_malformed, "task show 1", 1, ("malformed",)),
    "deployment-folder-missing": (
        None,
        "task show 1 --deployments {tmp}/none",
        1,
        ("no deployment for chain 31337", "refereed deploy"),
    ),
    "task-show-unknown": (None, "task show 999", 2, ("there is no task 999",)),
    "task-finalize-unknown": (None, "task finalize 999", 2, ("there is no task 999",)),
    "task-result-unknown": (None, "task result 999 --out {tmp}/w.pt", 2, ("there is no task 999",)),
    "trainer-task-not-posted": (None, "trainer run --task 999", 2, ("--task 999", "no such task")),
    "account-withdraw-other": (
        None,
        "account 0x000000000000000000000000000000000000dEaD --withdraw",
        2,
        ("--withdraw", "with its key"),
    ),
    "key-empty-on-anvil": (None, "trainer run --key=", 2, ("REFEREED_KEY is empty",)),
}


@pytest.mark.anvil
@pytest.mark.parametrize("name", sorted(ONCHAIN))
def test_bad_input_on_a_chain(name: str, anvil: Any, deployed: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    edit, argv, code, fragments = ONCHAIN[name]
    monkeypatch.delenv("REFEREED_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    folder = _edit_deployment(deployed, tmp_path, edit) if edit is not None else deployed
    args = _fill(tuple(argv.split()), tmp=str(tmp_path))
    if "--deployments" not in args:
        args += ["--deployments", str(folder)]
    result = runner.invoke(app, [*args, "--rpc", anvil.rpc_url])
    _check(result, Case(tuple(args), code, fragments), tmp_path)


@pytest.mark.anvil
def test_an_oracle_with_too_little_eth_is_told_the_bond(anvil: Any, deployed: Path, tmp_path: Path) -> None:
    poor = "0x" + "11" * 32  # a key nobody funded
    result = runner.invoke(
        app,
        [
            "oracle",
            "run",
            "--rpc",
            anvil.rpc_url,
            "--deployments",
            str(deployed),
            "--key",
            poor,
            "--home",
            str(tmp_path / "o"),
            "--store",
            str(tmp_path / "p"),
        ],
    )
    _check(result, Case((), 1, ("bond of 1.00 ETH", "minBond", "fund it")), tmp_path)


def _agent_home(anvil: Any, deployed: Path, tmp: Path, key_index: int, home: Path) -> Any:
    from offchain.agents.watcher import WatcherAgent
    from offchain.chain.build import compile_contracts
    from offchain.chain.deploy import load_deployment
    from offchain.store import Store

    return WatcherAgent(
        "w", rpc_url=anvil.rpc_url, private_key=anvil.accounts[key_index].private_key,
        deployment=load_deployment(31337, deployed), artifacts=compile_contracts(), home=home,
        public=Store(tmp / "public"),
    )  # fmt: skip


@pytest.mark.anvil
def test_a_home_of_another_key_is_refused(anvil: Any, deployed: Path, tmp_path: Path) -> None:
    _agent_home(anvil, deployed, tmp_path, 6, tmp_path / "home").close()
    args = ["watch", "--rpc", anvil.rpc_url, "--deployments", str(deployed), "--home", str(tmp_path / "home")]
    result = runner.invoke(app, [*args, "--account", "7"])
    _check(result, Case((), 2, ("another chain, deployment or key", "the key's address is", "another --home")),
           tmp_path)  # fmt: skip


@pytest.mark.anvil
def test_a_home_of_another_deployment_is_refused(anvil: Any, deployed: Path, tmp_path: Path) -> None:
    _agent_home(anvil, deployed, tmp_path, 6, tmp_path / "home").close()
    fresh = tmp_path / "fresh"
    assert runner.invoke(app, ["deploy", "--rpc", anvil.rpc_url, "--deployments", str(fresh)]).exit_code == 0
    args = ["watch", "--rpc", anvil.rpc_url, "--deployments", str(fresh), "--home", str(tmp_path / "home")]
    result = runner.invoke(app, args)
    _check(result, Case((), 2, ("TaskMarket is at", "the home's at", "another --home")), tmp_path)


@pytest.mark.anvil
def test_a_home_in_use_by_another_process_is_refused(anvil: Any, deployed: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'a+'); f.write('process 4242'); f.flush(); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(home / "lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        args = ["watch", "--rpc", anvil.rpc_url, "--deployments", str(deployed), "--home", str(home)]
        result = runner.invoke(app, args)
        _check(result, Case((), 2, ("is in use by process 4242", "another --home")), tmp_path)
    finally:
        holder.kill()
        holder.wait()


# -- the Python API ----------------------------------------------------------------------------------


def _cumsum_workload() -> Any:
    """A user's workload whose model uses an operator without a RepOps kernel."""
    import torch.nn.functional as F
    from torch import nn

    from trainer.data.dataset import Dataset
    from trainer.program import SGDConfig
    from trainer.workloads import Workload

    class Cumsum(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).cumsum(1)

    data = Dataset.from_tensors("d", x=torch.ones(8, 4), y=torch.zeros(8, dtype=torch.long))
    return Workload.of("cumsum", Cumsum(), F.cross_entropy, SGDConfig(lr=0.1), data, steps=4, checkpoint_interval=2,
                       batch_size=4)  # fmt: skip


def _api_cases() -> dict[str, tuple[Callable[[], Any], type[Exception], str]]:
    from offchain.agents.client import ClientAgent, TaskOrder
    from offchain.agents.home import HomeError, check_home_folder
    from offchain.agents.task import WorkloadRejected, check_workload
    from offchain.chain.client import ChainClient, check_private_key, check_rpc_url
    from offchain.chain.deploy import Deployment, load_deployment
    from offchain.chain.errors import ChainError, InvalidKeyError, InvalidRpcUrl
    from offchain.inputs import InputError, check_uint, parse_eth
    from offchain.store import Store, StoreError

    tmp = Path(os.environ.get("PYTEST_API_TMP", "/tmp"))
    return {
        "workload-capture-fails": (
            lambda: check_workload(_cumsum_workload()),
            WorkloadRejected,
            "in forward: return self.fc(x).cumsum(1)",
        ),
        "client-agent-refuses-the-workload": (
            lambda: ClientAgent("c", order=TaskOrder(_cumsum_workload(), reward=1)),
            WorkloadRejected,
            "cannot be posted",
        ),
        "client-no-scheme": (lambda: ChainClient("127.0.0.1:8545"), InvalidRpcUrl, "http://127.0.0.1:8545"),
        "client-ws": (lambda: ChainClient("ws://127.0.0.1:8545"), ChainError, "websocket"),
        "client-port": (lambda: ChainClient("http://127.0.0.1:99999"), ChainError, "65535"),
        "client-not-text": (lambda: ChainClient(8545), ChainError, "not int"),  # type: ignore[arg-type]
        "rpc-url-empty": (lambda: check_rpc_url(""), InvalidRpcUrl, "empty"),
        "key-zero-bytes": (lambda: check_private_key(bytes(32)), InvalidKeyError, "zero"),
        "key-31-bytes": (lambda: check_private_key(bytes(31) + b"\x01"[:0]), InvalidKeyError, "31 bytes"),
        "key-int": (lambda: check_private_key(5), InvalidKeyError, "not int"),
        "key-zero-hex-client": (lambda: ChainClient("http://127.0.0.1:1", ZERO_KEY), InvalidKeyError, "zero"),
        "eth-float-nan": (lambda: parse_eth(float("nan")), InputError, "not float"),
        "eth-nan-text": (lambda: parse_eth("NaN"), InputError, "finite"),
        "eth-bool": (lambda: parse_eth(True), InputError, "not bool"),
        "uint-negative": (lambda: check_uint(-1, "--clock"), InputError, "--clock -1 is out of range"),
        "uint-above-u64": (lambda: check_uint(2**64, "--clock"), InputError, "2^64 - 1"),
        "store-a-file": (lambda: Store(_file(tmp)), StoreError, "is a file"),
        "home-a-file": (lambda: check_home_folder(_file(tmp)), HomeError, "is a file"),
        "deployment-malformed": (lambda: Deployment.from_json({"chainId": 1}), ChainError, "malformed"),
        "deployment-missing": (lambda: load_deployment(31337, tmp / "none"), ChainError, "refereed deploy"),
    }


def _file(tmp: Path) -> Path:
    f = tmp / "a-file"
    f.write_text("x")
    return f


API_NAMES = sorted(_api_cases())


@pytest.mark.parametrize("name", API_NAMES)
def test_bad_input_api(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_API_TMP", str(tmp_path))
    call, kind, fragment = _api_cases()[name]
    with pytest.raises(kind) as info:
        call()
    assert isinstance(info.value, OffchainError)
    assert fragment in str(info.value), str(info.value)


def _trainer_cases() -> dict[str, tuple[Callable[[], Any], str]]:
    import torch.nn.functional as F
    from torch import nn

    from trainer.program import AdamWConfig, SGDConfig, build_step

    def batchnorm() -> Any:
        model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, momentum=None))  # cumulative average: refused
        return build_step(model, F.cross_entropy, SGDConfig(lr=0.1))

    inf, nan = float("inf"), float("nan")
    return {
        "sgd-lr-inf": (lambda: SGDConfig(lr=inf), "lr must be a finite number, got inf"),
        "sgd-lr-nan": (lambda: SGDConfig(lr=nan), "lr must be a finite number, got nan"),
        "sgd-weight-decay-inf": (lambda: SGDConfig(lr=0.1, weight_decay=inf), "weight_decay must be a finite"),
        "sgd-lr-text": (lambda: SGDConfig(lr="0.1"), "lr must be a number, got str"),  # type: ignore[arg-type]
        "adamw-eps-inf": (lambda: AdamWConfig(lr=1e-3, eps=inf), "eps must be a finite number"),
        "adamw-beta-nan": (lambda: AdamWConfig(lr=1e-3, betas=(nan, 0.9)), "betas[0] must be a finite number"),
        "adamw-clip-inf": (lambda: AdamWConfig(lr=1e-3, clip_grad_norm=inf), "clip_grad_norm must be a finite"),
        "capture-batchnorm": (batchnorm, "batch norm 1 has momentum=None"),
    }


TRAINER_NAMES = sorted(_trainer_cases())


@pytest.mark.parametrize("name", TRAINER_NAMES)
def test_bad_input_trainer_api(name: str) -> None:
    from trainer.program import ProgramError

    call, fragment = _trainer_cases()[name]
    with pytest.raises(ProgramError) as info:
        call()
    assert fragment in str(info.value), str(info.value)


def test_eth_amounts_are_exact_decimals_to_the_wei() -> None:
    from offchain.inputs import parse_eth

    assert parse_eth("1.1") == 1_100_000_000_000_000_000  # float arithmetic would give ...000128
    assert parse_eth("0.000000000000000001") == 1
    assert parse_eth("2") == 2 * 10**18
    assert parse_eth("1e-18") == 1
    assert parse_eth(" 3.25 ") == 3_250_000_000_000_000_000


def count_cases() -> int:
    """How many bad inputs this file checks (the report quotes it)."""
    return len(OFFLINE) + len(ONCHAIN) + len(API_NAMES) + len(TRAINER_NAMES) + 4  # + the oracle and three home tests


@pytest.mark.anvil
def test_a_keystore_made_by_keystore_create_signs_for_its_address(
    anvil: Any, deployed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFEREED_PASSWORD", "correct horse")
    made = runner.invoke(app, ["keystore", "create", str(tmp_path / "ks.json"), "--key", GOOD_KEY])
    assert made.exit_code == 0, made.output
    assert "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" in made.stdout
    assert GOOD_KEY[2:] not in (tmp_path / "ks.json").read_text()  # encrypted, not the raw key
    shown = runner.invoke(app, ["account", "--keystore", str(tmp_path / "ks.json"), "--rpc", anvil.rpc_url,
                                "--deployments", str(deployed), "--json"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["address"] == "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
