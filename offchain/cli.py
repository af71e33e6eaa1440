"""`refereed`: the command line of Refereed Training.

    refereed devnet [--port 8545]        a local anvil chain, until Ctrl-C
    refereed deploy --rpc URL [--key K]  deploy the protocol, write deployments/<chainId>.json
    refereed commit PATH                 commitment of a tensor or state dict saved with torch.save
    refereed task post [--steps ...]     post the MLP-on-digits task (or --workload package.module:function, your
                                         own model and data) with its reward; prints the task id
                                         (--follow: then verify the results, finalize, withdraw; --challenge:
                                         also train the task and enter it as an outside challenger)
    refereed task show ID                a task's spec, status, groups, entrants and games
    refereed task finalize ID            finalize a task after its dispute deadline, claim for every live
                                         entrant, and withdraw the caller's credit
    refereed trainer run                 a trainer agent: join (or enter a full task as an outside challenger),
                                         train, commit, reveal, open and play games, claim, withdraw; until Ctrl-C
    refereed oracle run [--count 5]      oracle agents: register, draw, answer, challenge, vote; until Ctrl-C
    refereed watch                       the watcher agent, with a live view of every game's moves
    refereed account [ADDRESS]           balance, bonds and credits per task and contract (--withdraw)
    refereed task wait|result ID         wait for a task to be finalized; write its final weights (state_dict)
    refereed keystore create PATH        an encrypted keystore file (use it with --keystore)
    refereed serve                       a local, read-only web dashboard that updates live
    refereed ledger simulate|show|verify-replay   the training ledger (docs/ledger.md): attribution, replay
    refereed ledger post|contribute|build|claim   the training ledger on chain (TrainingLedger): its client,
                                         contributors and block builders, and claims of payout leaves

The agent commands work against any RPC (`--rpc`, default the local anvil). Keys come from
`--key` or REFEREED_KEY; on anvil's chain (31337) each role defaults to a dev account
(client 1, trainer 2, oracle 10, watcher 6, ledger contributor 3, ledger builder 7; `--account I`
picks another; `oracle run --count N` runs N oracles on accounts I, I+1, ...: a question is drawn
only once committeeSize + 2 = 5 oracles are registered, so `refereed devnet` funds 20 accounts). The deployment is
read from deployments/<chainId>.json, an agent keeps its records in `--home` (default
.refereed/<role>-<address>/), and all share the public store `--store` (.refereed/public).

Errors a user can fix print one line on stderr and exit 1 (chain) or 2 (bad input).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    name="refereed",
    help="Refereed Training: neural-network training refereed by smart contracts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_CHAIN = 1
EXIT_INPUT = 2
ANVIL_CHAIN_ID = 31337


def _out() -> Console:
    # Commitments are 66 characters: never let a narrow (or absent) terminal cut them.
    return Console(width=None if sys.stdout.isatty() else 200, highlight=False)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


class _Stop(Exception):
    """SIGINT or SIGTERM, turned into an exception so that `devnet` stops anvil on the way out."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


@app.command()
def devnet(
    port: Annotated[int, typer.Option(help="RPC port (0: any free port)", min=0, max=65535)] = 8545,
    accounts: Annotated[
        int, typer.Option(help="funded accounts (5 oracles, trainers, a client, a watcher)", min=1, max=1000)
    ] = 20,
    chain_id: Annotated[int, typer.Option(help="chain id", min=1, max=2**53 - 1)] = ANVIL_CHAIN_ID,
    fast_forward: Annotated[
        bool,
        typer.Option(
            "--fast-forward",
            help="once no transaction came for --idle seconds, move the clock to the next deadline the deployed "
            "contracts hold (windows of hours pass in seconds)",
        ),
    ] = False,
    idle: Annotated[float, typer.Option(help="with --fast-forward: seconds without a transaction", min=0.2)] = 5.0,
    history: Annotated[
        int,
        typer.Option(
            help="blocks whose state the node keeps, in memory (none is written to disk); calls at older "
            "blocks are refused, as by a full node",
            min=1,
            max=1_000_000,
        ),
    ] = 512,  # offchain.chain.anvil.DEFAULT_HISTORY (not imported here: the CLI starts without web3)
    deployments: Deployments = None,
) -> None:
    """Run a local anvil chain with funded accounts until Ctrl-C."""
    import time as _time

    from offchain.agents.fastforward import FastForward
    from offchain.chain.anvil import Anvil
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import check_deployment, load_deployment
    from offchain.chain.errors import ChainError
    from offchain.contracts.protocol import Protocol

    out = _out()
    # Explicit handlers: a shell may start a background job with SIGINT ignored.
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = Anvil(port=port, accounts=accounts, chain_id=chain_id, history=history)
    try:
        try:
            node.start()
            client = ChainClient(node.rpc_url)
            table = Table(title=f"funded accounts (chain id {node.chain_id})")
            table.add_column("#", justify="right")
            table.add_column("address", no_wrap=True)
            table.add_column("private key", no_wrap=True)
            table.add_column("balance (ETH)", justify="right")
            for i, acct in enumerate(node.accounts):
                table.add_row(str(i), acct.address, acct.private_key, f"{client.balance(acct.address) / 10**18:,.2f}")
        except ChainError as e:
            _fail(str(e), EXIT_CHAIN)
        out.print(table)
        out.print(f"RPC URL: {node.rpc_url}")
        out.print("Development keys only: anyone may know them. Press Ctrl-C to stop.")
        if fast_forward:
            out.print(f"Fast-forward: after {idle:g} s without a transaction the clock moves to the next deadline.")
        sys.stdout.flush()
        if not fast_forward:
            status = node.wait()
        else:
            ff = FastForward(client, idle_s=idle)
            artifacts = None
            while node.running:
                _time.sleep(0.25)
                try:
                    if ff.protocol is None:
                        try:
                            d = check_deployment(client, load_deployment(client.chain_id, deployments))
                        except ChainError:
                            d = None  # not deployed yet
                        if d is not None:
                            artifacts = artifacts or compile_contracts()
                            ff.protocol = Protocol.from_deployment(client, d, artifacts)
                    said = ff.step()
                except ChainError as e:
                    if not node.running:
                        break
                    out.print(f"{_time.strftime('%H:%M:%S')} fast-forward: {e}")
                    continue
                if said:
                    out.print(f"{_time.strftime('%H:%M:%S')} {said}")
                    sys.stdout.flush()
            status = node.wait()
        _fail(f"anvil exited on its own with status {status}:\n{node.stderr.strip()}", EXIT_CHAIN)
    except (KeyboardInterrupt, _Stop):  # KeyboardInterrupt: a SIGINT before the handler was set
        node.stop()
        out.print("anvil stopped")
    finally:
        node.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command()
def deploy(
    rpc: Annotated[
        str, typer.Option(envvar="REFEREED_RPC", help="JSON-RPC URL of the chain")
    ] = "http://127.0.0.1:8545",
    key: Annotated[
        str | None,
        typer.Option(
            envvar="REFEREED_KEY",
            help="deployer's private key (hex); default on chain 31337 only: anvil's account 0",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--deployments",
            "--out",
            envvar="REFEREED_DEPLOYMENTS",
            help="folder for <chainId>.json (default: deployments/)",
        ),
    ] = None,
    keystore: Annotated[
        Path | None, typer.Option("--keystore", help="an encrypted keystore file (password from REFEREED_PASSWORD)")
    ] = None,
    password_file: Annotated[Path | None, typer.Option("--password-file", help="the keystore's password")] = None,
    element_referee: Annotated[
        bool | None,
        typer.Option(
            "--element-referee/--no-element-referee",
            help="bind the ElementReferee: elementwise nodes (add, sub, mul, div, also with a Python number; neg, "
            "reciprocal, sqrt, rsqrt, abs, relu, where), matrix products (mm, addmm: its DotReferee) and "
            "transcendental functions (exp, log, tanh, sigmoid, erf, gelu: the TraceReferee) are decided on chain, "
            "not by the oracle (default: bound)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Deploy the protocol's contracts and write deployments/<chainId>.json."""
    import os

    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import deploy_all
    from offchain.chain.errors import ChainError

    out = _out()
    try:
        if key is not None or keystore is not None or os.environ.get("REFEREED_KEY") is not None:
            key = _resolve_key("deployer", ANVIL_CHAIN_ID, key, None, keystore, password_file)
            keystore = None
        probe = ChainClient(rpc)
        key = _resolve_key("deployer", probe.chain_id, key, None, keystore, password_file)
        client = ChainClient(rpc, key)
        deployment = deploy_all(client, out_dir=out_dir, element_referee=element_referee)
    except ChainError as e:
        _chain_fail(e)
    table = Table(title=f"deployed on chain {deployment.chain_id} by {deployment.deployer}")
    table.add_column("contract")
    table.add_column("address", no_wrap=True)
    table.add_column("block", justify="right")
    for name, rec in deployment.contracts.items():
        table.add_row(name, rec.address, str(rec.block_number))
    out.print(table)
    for b in deployment.bindings:
        out.print(f"bound {b.contract}.{b.function}({b.target}) in block {b.block_number}")
    out.print(f"wrote {deployment.path}")


@app.command()
def commit(
    path: Annotated[Path, typer.Argument(help="a file written by torch.save")],
    json_out: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
) -> None:
    """Print the commitment of a saved tensor, or the state root of a saved state dict."""
    import torch

    from trainer.commit import CommitError, commit_tensor, state_root_from_commitments
    from trainer.commit.tensor import dtype_code

    if path.is_dir():
        _fail(f"{path} is a folder: give a file written by torch.save", EXIT_INPUT)
    if not path.is_file():
        _fail(f"{path}: no such file", EXIT_INPUT)
    try:
        obj: Any = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:  # torch raises many kinds (UnpicklingError, RuntimeError, EOFError, ...)
        text = str(e).strip()
        first = text.splitlines()[0].split(". ")[0][:200] if text else ""
        reason = f"{type(e).__name__}: {first}" if first else type(e).__name__
        _fail(f"{path} is not a torch.save file that loads with weights_only=True ({reason})", EXIT_INPUT)
    out = _out()
    try:
        if isinstance(obj, torch.Tensor):
            t = _dense(obj, str(path))
            if json_out:
                typer.echo(
                    __import__("json").dumps(
                        {
                            "commitment": "0x" + commit_tensor(t).hex(),
                            "dtype": str(t.dtype).removeprefix("torch."),
                            "dtype_code": dtype_code(t.dtype),
                            "shape": list(t.shape),
                        }
                    )
                )
                return
            out.print(f"commitment  0x{commit_tensor(t).hex()}")
            out.print(f"dtype       {str(t.dtype).removeprefix('torch.')} (code {dtype_code(t.dtype)})")
            out.print(f"shape       {tuple(t.shape)}")
            return
        if isinstance(obj, Mapping) and obj:
            for k, v in obj.items():
                if not isinstance(k, str):
                    _fail(
                        f"{path} holds a dict whose key {k!r} is a {type(k).__name__}, not a str: a state_dict's "
                        "keys are the tensors' names (save {'name': tensor, ...})",
                        EXIT_INPUT,
                    )
                if not isinstance(v, torch.Tensor):
                    _fail(
                        f"{path} holds a dict whose entry {k!r} is of type {type(v).__name__}, not a tensor: "
                        "a state_dict maps names to tensors",
                        EXIT_INPUT,
                    )
            tensors = {k: _dense(v, f"{path}[{k!r}]") for k, v in obj.items()}
            commitments = {k: commit_tensor(v) for k, v in tensors.items()}
            root = state_root_from_commitments(commitments)
            if json_out:
                rows = [
                    {
                        "name": n,
                        "dtype": str(tensors[n].dtype).removeprefix("torch."),
                        "shape": list(tensors[n].shape),
                        "commitment": "0x" + commitments[n].hex(),
                    }
                    for n in sorted(commitments, key=lambda n: n.encode("utf-8"))
                ]
                typer.echo(__import__("json").dumps({"state_root": "0x" + root.hex(), "tensors": rows}))
                return
            table = Table(title=f"{len(commitments)} tensors")
            table.add_column("name")
            table.add_column("dtype")
            table.add_column("shape")
            table.add_column("commitment", no_wrap=True)
            for name in sorted(commitments, key=lambda n: n.encode("utf-8")):
                t = tensors[name]
                table.add_row(
                    name, str(t.dtype).removeprefix("torch."), str(tuple(t.shape)), "0x" + commitments[name].hex()
                )
            out.print(f"state root  0x{root.hex()}")
            out.print(table)
            return
    except CommitError as e:
        _fail(f"{path}: {e}", EXIT_INPUT)
    what = "an empty dict" if isinstance(obj, Mapping) else f"a {type(obj).__name__}"
    _fail(f"{path} holds {what}; expected a tensor or a dict of tensors (a state_dict)", EXIT_INPUT)


def _dense(t: Any, where: str) -> Any:
    """The tensor's row-major copy when it is strided but not contiguous (same values, same commitment)."""
    import torch

    from trainer.commit import UnsupportedTensorError

    if t.layout != torch.strided:
        raise UnsupportedTensorError(f"{where} has layout {t.layout}; only dense tensors can be committed")
    if t.device.type == "meta":
        raise UnsupportedTensorError(
            f"{where} is a meta-device tensor: it has a shape but no values; save the tensor itself (on the cpu)"
        )
    return t.contiguous()


# -- agents ------------------------------------------------------------------------------------

from offchain.cli_options import (  # noqa: E402  (the options the ledger commands share)
    DEFAULT_RPC,
    Account,
    Deployments,
    Home,
    Key,
    Keystore,
    PasswordFile,
    Poll,
    Rpc,
    StoreDir,
)

# anvil's dev accounts, by role (the ledger's contributors and builders pick theirs with --account)
DEV_ACCOUNT = {"deployer": 0, "client": 1, "trainer": 2, "oracle": 10, "watcher": 6, "contributor": 3, "builder": 7}
ORACLES = 5  # a question is drawn once committeeSize + 2 oracles are registered (deploy.ORACLE_ARGS)
MAX_WINDOW = 10 * 365 * 86400  # ten years: every deadline fits a uint64 long after
MAX_BATCH = 96  # digits: 64 float32 a example, and a batch proof carries at most 24 KiB

task_app = typer.Typer(help="Post, inspect and finalize tasks.", no_args_is_help=True)
trainer_app = typer.Typer(help="Run a trainer agent.", no_args_is_help=True)
oracle_app = typer.Typer(help="Run a recompute-oracle agent.", no_args_is_help=True)
app.add_typer(task_app, name="task")
app.add_typer(trainer_app, name="trainer")
app.add_typer(oracle_app, name="oracle")

from offchain.ledger.cli import ledger_app  # noqa: E402  (a sub-app in its own module)

app.add_typer(ledger_app, name="ledger")

Json = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]
Yes = Annotated[
    bool, typer.Option("--yes", help="on a chain that is not local: bond without asking for a confirmation")
]
TaskId = Annotated[int, typer.Argument(help="the task's id", min=1, max=2**256 - 1)]


@dataclass
class _Session:
    """What every agent command needs: a key, the deployment, the contracts' ABIs, folders."""

    rpc: str
    key: str
    address: str
    chain_id: int
    deployment: Any
    artifacts: dict[str, Any]
    home: Path
    public: Any


def _chain_fail(e: Exception) -> NoReturn:
    """A package error as one line: bad input (an RPC URL, a key, a home, a folder) exits 2, the chain's 1."""
    from offchain.agents.home import HomeError
    from offchain.chain.errors import InvalidKeyError, InvalidRpcUrl
    from offchain.inputs import InputError

    if isinstance(e, InvalidRpcUrl):
        _fail(f"--rpc: {e}", EXIT_INPUT)
    if isinstance(e, InvalidKeyError):
        _fail(f"--key / REFEREED_KEY: {e}", EXIT_INPUT)
    _fail(str(e), EXIT_INPUT if isinstance(e, InputError | HomeError) else EXIT_CHAIN)


def _resolve_key(
    role: str, chain_id: int, key: str | None, account: int | None, keystore: Path | None, password_file: Path | None
) -> str:
    """The private key: from --keystore, --key / REFEREED_KEY, or (on anvil's chain only) a dev account."""
    import os

    from offchain.chain.anvil import dev_accounts
    from offchain.chain.client import check_private_key
    from offchain.inputs import InputError, read_keystore

    if key is None and "REFEREED_KEY" in os.environ and not os.environ["REFEREED_KEY"].strip():
        key = ""  # typer reads an empty variable as unset: an empty REFEREED_KEY= must not mean a dev key
    given = [n for n, v in (("--key / REFEREED_KEY", key), ("--keystore", keystore)) if v is not None]
    if len(given) > 1:
        _fail("--key / REFEREED_KEY and --keystore both give a key: give one", EXIT_INPUT)
    if account is not None and given:
        _fail(f"--account picks an anvil dev key; it cannot go with {given[0]}", EXIT_INPUT)
    if keystore is not None:
        password = os.environ.get("REFEREED_PASSWORD")
        if password_file is not None:
            try:
                password = password_file.read_text(encoding="utf-8").rstrip("\n")
            except OSError as e:
                _fail(f"--password-file {password_file}: {e.strerror or e}", EXIT_INPUT)
        try:
            return read_keystore(keystore, password)
        except InputError as e:
            _fail(str(e), EXIT_INPUT)
    if key is not None:
        if not key.strip():
            _fail(
                "--key / REFEREED_KEY is empty: give a private key (64 hex digits), or unset REFEREED_KEY to use "
                "a dev account on a local anvil",
                EXIT_INPUT,
            )
        check_private_key(key)  # InvalidKeyError: exit 2
        return key.strip()
    if chain_id != ANVIL_CHAIN_ID:
        _fail(f"chain {chain_id} is not a local anvil chain: pass --key, --keystore or set REFEREED_KEY", EXIT_INPUT)
    index = DEV_ACCOUNT[role] if account is None else account
    if index >= 1000:
        _fail(f"--account {index}: anvil's dev accounts are numbered 0..999 (devnet funds the first 20)", EXIT_INPUT)
    return dev_accounts(index + 1)[index].private_key


def _session(
    role: str,
    rpc: str,
    key: str | None,
    account: int | None,
    home: Path | None,
    store: Path,
    deployments: Path | None,
    keystore: Path | None = None,
    password_file: Path | None = None,
) -> _Session:
    """Resolves the key (or fails with a line and 2), the deployment (or 1); chain errors exit 1."""
    import os

    from eth_account import Account as EthAccount

    from offchain.agents.home import HomeError, check_home_folder
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import check_deployment, load_deployment
    from offchain.chain.errors import ChainError
    from offchain.inputs import InputError, check_folder
    from offchain.store import Store

    try:
        if key is not None or keystore is not None or os.environ.get("REFEREED_KEY") is not None:
            # a key's form (and a keystore's password) is checked before anything is asked of the chain
            key = _resolve_key(role, ANVIL_CHAIN_ID, key, account, keystore, password_file)
            keystore = None
        if home is not None:
            check_home_folder(home, "--home")
        public = Store(check_folder(store, "--store"))
        probe = ChainClient(rpc)
        key = _resolve_key(role, probe.chain_id, key, account, keystore, password_file)
        address = EthAccount.from_key(key).address
        deployment = check_deployment(probe, load_deployment(probe.chain_id, deployments))
        artifacts = compile_contracts()
        folder = home if home is not None else Path(".refereed") / f"{role}-{address}"
        check_home_folder(folder, "--home")
    except (ChainError, InputError, HomeError) as e:
        _chain_fail(e)
    return _Session(rpc, key, address, probe.chain_id, deployment, artifacts, folder, public)


def _reader(rpc: str, deployments: Path | None) -> Any:
    """The protocol's clients without a key, for reads."""
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import check_deployment, load_deployment
    from offchain.chain.errors import ChainError
    from offchain.contracts.protocol import Protocol

    try:
        chain = ChainClient(rpc)
        deployment = check_deployment(chain, load_deployment(chain.chain_id, deployments))
        return Protocol.from_deployment(chain, deployment, compile_contracts())
    except ChainError as e:
        _chain_fail(e)


class _StopFlag:
    """Ctrl-C (or SIGTERM) asks an agent loop to stop after its current tick; a second one stops it at once."""

    def __init__(self) -> None:
        self.asked = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopFlag:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.asked:
            raise _Stop
        self.asked = True
        typer.echo("stopping after this step (Ctrl-C again to stop now)", err=True)

    def __call__(self) -> bool:
        return self.asked


def _run_agent(agent: Any, out: Console, poll: float, every: Any = None, until: Any = None) -> None:
    """`agent.run_forever` until Ctrl-C (or `until()`); `every()` is called once per loop (a live view's refresh)."""
    from offchain.chain.errors import ChainError

    with _StopFlag() as stop:

        def stopping() -> bool:
            if every is not None:
                every()  # a live view: it handles its own chain errors
            try:
                return stop() or (until is not None and until())
            except ChainError:
                return False  # `until` reads the chain: an outage is retried by the loop

        try:
            agent.run_forever(poll=poll, stop=stopping)
        except (_Stop, KeyboardInterrupt):
            pass
        except ChainError as e:
            _fail(str(e), EXIT_CHAIN)
        finally:
            close = getattr(agent.observer, "close", None)
            if callable(close):
                close()  # the progress bars
            agent.close()
    out.print(f"{agent.name} stopped; its records are in {agent.home}")


def _agent_kwargs(s: _Session, observer: Any) -> dict[str, Any]:
    return {
        "rpc_url": s.rpc,
        "private_key": s.key,
        "deployment": s.deployment,
        "artifacts": s.artifacts,
        "home": s.home,
        "public": s.public,
        "observer": observer,
    }


@task_app.command("post")
def task_post(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    workload: Annotated[
        str | None,
        typer.Option(
            help="your own model and data: package.module:function returning a trainer.workloads.Workload "
            "(docs/bring-your-own-model.md); default the bundled MLP on digits"
        ),
    ] = None,
    steps: Annotated[
        int | None, typer.Option(help="training steps T (default 256, or the workload's)", min=1, max=2**32)
    ] = None,
    interval: Annotated[
        int | None,
        typer.Option(help="checkpoint interval c, divides T (default 16, or the workload's)", min=1, max=2**32),
    ] = None,
    batch: Annotated[
        int | None, typer.Option(help=f"batch size (default 64, at most {MAX_BATCH} digits; or the workload's)", min=1)
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="the run's seed, batches and initial state (default 1, or the workload's)", min=0, max=2**64 - 1
        ),
    ] = None,
    reward: Annotated[
        str, typer.Option(help="reward in ETH (a decimal, exact to the wei), escrowed when posting")
    ] = "1",
    slots: Annotated[int, typer.Option(help="trainers at most", min=1, max=2**32)] = 3,
    arity: Annotated[int, typer.Option(help="arity N of the games (a power of two, 2..64)")] = 4,
    clock: Annotated[int, typer.Option(help="seconds per side per game", min=1, max=MAX_WINDOW)] = 3600,
    join_window: Annotated[int, typer.Option(help="seconds to join after posting", min=1, max=MAX_WINDOW)] = 600,
    submit_window: Annotated[
        int,
        typer.Option(help="seconds to commit to a result after posting (reveals come after)", min=1, max=MAX_WINDOW),
    ] = 3600,
    dispute_window: Annotated[
        int,
        typer.Option(
            help="seconds to dispute after posting (at least --submit-window + 4500: reveals, then 1 h)",
            min=1,
            max=MAX_WINDOW,
        ),
    ] = 9000,
    follow: Annotated[
        bool, typer.Option(help="then follow the task: verify the revealed results, finalize it, withdraw")
    ] = False,
    verify: Annotated[bool, typer.Option(help="with --follow: replay sampled intervals of each result")] = True,
    challenge: Annotated[
        bool, typer.Option(help="with --follow: also train the task and enter it as an outside challenger")
    ] = False,
    poll: Poll = 1.0,
) -> None:
    """Post a task with its reward in escrow: the MLP on digits, or your own model and data (--workload); prints the
    task id (last line of the post)."""
    import dataclasses

    from offchain.agents.client import ClientAgent, TaskOrder
    from offchain.agents.home import HomeError
    from offchain.agents.task import WorkloadRejected, check_workload
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError
    from offchain.contracts.task_market import MIN_SUBMIT_TO_DISPUTE
    from offchain.inputs import InputError, parse_eth
    from trainer.runner.runner import RunConfig, RunError
    from trainer.workloads import WorkloadError, load_workload, mlp_digits

    if workload is None:
        steps, interval = (256 if steps is None else steps), (16 if interval is None else interval)
        batch, seed = (64 if batch is None else batch), (1 if seed is None else seed)
        if steps % interval:
            _fail(f"--interval {interval} does not divide --steps {steps}", EXIT_INPUT)
        if batch > MAX_BATCH:
            _fail(f"--batch {batch}: a batch proof carries at most 24 KiB, {MAX_BATCH} digits", EXIT_INPUT)
    try:
        reward_wei = parse_eth(reward, "--reward")
    except InputError as e:
        _fail(str(e), EXIT_INPUT)
    if arity < 2 or arity > 64 or arity & (arity - 1):
        _fail(f"--arity {arity} is not a power of two in 2..64", EXIT_INPUT)
    if not join_window <= submit_window <= dispute_window:
        _fail("the windows must grow: --join-window <= --submit-window <= --dispute-window", EXIT_INPUT)
    if dispute_window - submit_window < MIN_SUBMIT_TO_DISPUTE:
        _fail(
            f"--dispute-window must be at least --submit-window + {MIN_SUBMIT_TO_DISPUTE} s (the reveals, then an "
            "hour of disputes)",
            EXIT_INPUT,
        )
    if workload is None:
        assert steps is not None and interval is not None and batch is not None and seed is not None
        chosen = mlp_digits(steps=steps, checkpoint_interval=interval, batch_size=batch, seed=seed)
    else:
        # the user's workload: built, captured and checked against the referee's bounds before the chain is asked
        # anything, so a bad one is an input error that posts nothing
        try:
            chosen = load_workload(workload)
            given = {"steps": steps, "checkpoint_interval": interval, "batch_size": batch, "seed": seed}
            overrides = {k: v for k, v in given.items() if v is not None}
            if overrides:
                config = RunConfig(**{**dataclasses.asdict(chosen.config), **overrides})
                chosen = dataclasses.replace(chosen, config=config)
            check_workload(chosen)
        except (WorkloadError, WorkloadRejected) as e:
            _fail(" ".join(str(e).split()), EXIT_INPUT)  # one line, also for a multi-line capture error
        except RunError as e:
            _fail(f"--workload {workload}: {e}", EXIT_INPUT)
    s = _session("client", rpc, key, account, home, store, deployments, keystore, password_file)
    out = _out()
    order = TaskOrder(
        chosen,
        reward=reward_wei,
        slots=slots,
        arity=arity,
        clock=clock,
        join_window=join_window,
        submit_window=submit_window,
        dispute_window=dispute_window,
    )
    observer = RichObserver(out, stamp=follow)
    task_id = None
    try:
        agent = ClientAgent("client", order=order, verify=verify, challenge=challenge, **_agent_kwargs(s, observer))
        observer.addresses[agent.name] = s.address
    except (ChainError, HomeError) as e:
        _chain_fail(e)
    try:
        rec = agent.db.get("order", "task")
        if rec is not None and "task_id" in rec:
            # This home posted before: start a new order. (An order without an id is a post that may
            # have landed before a crash: the agent looks for it on chain rather than post twice.)
            agent.db.put("order", "task", {})
        for _ in range(5):
            if agent.task_id is not None:
                break
            agent.tick()
        task_id = agent.task_id
    except ChainError as e:
        agent.close()
        _chain_fail(e)
    if task_id is None or not follow:
        agent.close()
    if task_id is None:
        _fail("the task was not posted (see above)", EXIT_CHAIN)
    out.print(task_id)
    if follow:
        _run_agent(agent, out, poll, until=lambda: (agent.db.get("order", "task") or {}).get("status") == "done")


def _when(t: int, now: int) -> str:
    """A chain time as local time, and how far from the chain's now."""
    import datetime

    local = datetime.datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    delta = t - now
    rel = f"in {_span(delta)}" if delta >= 0 else f"{_span(-delta)} ago"
    return f"{local} ({rel})"


def _span(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds / 3600:.1f} h"


def _task_state(p: Any, task_id: int) -> dict[str, Any]:
    from offchain.views import UnknownTask, task_state

    try:
        return task_state(p, task_id)
    except UnknownTask as e:
        raise LookupError(str(e)) from None


def _print_json(data: Any) -> None:
    import json

    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def _read_task(p: Any, task_id: int) -> dict[str, Any]:
    from offchain.chain.errors import ChainError

    try:
        return _task_state(p, task_id)
    except LookupError as e:
        _fail(str(e.args[0]), EXIT_INPUT)
    except ChainError as e:
        _chain_fail(e)


@task_app.command("show")
def task_show(
    task_id: TaskId,
    rpc: Rpc = DEFAULT_RPC,
    deployments: Deployments = None,
    store: StoreDir = Path(".refereed/public"),
    json_out: Json = False,
) -> None:
    """Print a task's spec, status, what it waits for, when it can be finalized, groups, entrants and games."""
    p = _reader(rpc, deployments)
    st = _read_task(p, task_id)
    if json_out:
        _print_json(st)
        return
    out = _out()
    now = st["now"]
    d = st["deadlines"]
    head = Table(title=f"task {task_id}: {st['status']}", show_header=False)
    head.add_column(style="bold")
    head.add_column(no_wrap=True)
    rows = [
        ("waits for", st["waits_for"]),
        (
            "finalize",
            "-" if st["finalize_at"] is None else f"from {_when(st['finalize_at'], now)} (once no game runs)",
        ),
        ("client", st["client"]),
        ("reward", f"{int(st['reward_wei']) / 10**18:.6f} ETH"),
        ("steps", f"{st['steps']} (checkpoint every {st['checkpoint_interval']}, batch {st['batch_size']})"),
        ("program", f"{st['program_hash']} ({st['node_count']} operators per step)"),
        ("dataset", f"{st['dataset_root']} ({st['dataset_size']} examples), seed {st['seed']}"),
        ("initial state", st["initial_state_root"]),
        ("games", f"arity {st['arity']}, clock {st['clock']} s per side"),
        (
            "trainers",
            f"{st['joined']} joined, {st['submitted']} submitted of {st['slots']} slots, "
            f"{st['outside_challengers']} outside challengers",
        ),
        ("bond", f"{int(st['bond_wei']) / 10**18:.6f} ETH each"),
        ("join by", _when(d["join"], now)),
        ("commit by", _when(d["commit"], now)),
        ("reveal by", _when(d["reveal"], now) + " (or 15 min after a later commit)"),
        ("enter by", _when(d["enter"], now)),
        ("dispute by", _when(d["dispute"], now)),
        ("groups", f"{st['group_count']} ({st['live_groups']} live), {st['active_games']} games running"),
    ]
    for k, v in rows:
        head.add_row(k, v)
    if st["won"]:
        head.add_row("won by", f"group {st['winning_group']}, {int(st['share_wei']) / 10**18:.6f} ETH each")
    out.print(head)
    if st["entrants"]:
        table = Table("entrant", "on", "committed", "revealed", "group", "eliminated", "claimed", title="entrants")
        for e in st["entrants"]:
            group = "" if e["group"] is None else str(e["group"])
            table.add_row(
                e["address"], e["on"], _yes(e["committed"]), _yes(e["revealed"]), group, _yes(e["eliminated"]),
                _yes(e["claimed"]),
            )  # fmt: skip
        out.print(table)
    if st["groups"]:
        table = Table("group", "checkpoint root", "members", "live", "eliminated", title="groups")
        for g in st["groups"]:
            table.add_row(str(g["group"]), g["checkpoint_root"], str(len(g["members"])), str(g["live"]),
                          _yes(g["eliminated"]))  # fmt: skip
        out.print(table)
    if st["games"]:
        table = Table("game", "defender", "challenger", "stage", "moves", "outcome", "settled", title="games")
        for g in st["games"]:
            table.add_row(
                str(g["game"]),
                f"{g['defender']} (group {g['defender_group']})",
                f"{g['challenger']} (group {g['challenger_group']})",
                g["stage"] + _on_chain(g.get("on_chain")),
                str(g["moves"]),
                g["outcome"],
                _yes(g["settled"]),
            )
        out.print(table)


def _on_chain(on_chain: dict[str, Any] | None) -> str:
    """ " (element game E, dot game D)" or " (element game E, trace game T of exp)" for a game whose node the referee
    decides on chain, else ""."""
    if not on_chain:
        return ""
    dot, trace = on_chain.get("dot_game"), on_chain.get("trace_game")
    return (
        f" (element game {on_chain['element_game']}"
        + (f", dot game {dot['game']}" if dot else "")
        + (f", trace game {trace['game']} of {trace['function']}" if trace else "")
        + ")"
    )


@task_app.command("wait")
def task_wait(
    task_id: TaskId,
    rpc: Rpc = DEFAULT_RPC,
    deployments: Deployments = None,
    until: Annotated[
        str, typer.Option(help="the status to wait for: finalized (default), or any that is not open")
    ] = "finalized",
    timeout: Annotated[float, typer.Option(help="give up after this many seconds (0: never)", min=0)] = 0,
    poll: Poll = 2.0,
    json_out: Json = False,
) -> None:
    """Wait until a task is finalized (or ends otherwise), printing what it waits for whenever that changes."""
    import time as _time

    from offchain.chain.errors import ChainUnreachableError

    if until not in ("finalized", "closed"):
        _fail(f"--until {until!r}: give finalized or closed", EXIT_INPUT)
    p = _reader(rpc, deployments)
    start = _time.monotonic()
    last = None
    backoff = poll
    with _StopFlag() as stop:
        while not stop():
            try:
                st = _task_state(p, task_id)
                backoff = poll
            except LookupError as e:
                _fail(str(e.args[0]), EXIT_INPUT)
            except ChainUnreachableError as e:
                typer.echo(f"RPC unreachable ({e.detail}); retrying in {backoff:.1f} s", err=True)
                _time.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            line = (st["status"], st["waits_for"])
            if line != last:
                last = line
                if json_out:
                    typer.echo(__import__("json").dumps({"status": st["status"], "waits_for": st["waits_for"],
                                                         "chain_time": st["now"]}))  # fmt: skip
                else:
                    typer.echo(
                        f"{_time.strftime('%H:%M:%S')} task {task_id}: {st['status']}, waits for {st['waits_for']}"
                    )
            if st["status"] == "finalized" or (until == "closed" and st["status"] != "open"):
                return
            if timeout and _time.monotonic() - start > timeout:
                _fail(f"task {task_id} is still {st['status']} after {timeout:g} s (it waits for {st['waits_for']})",
                      EXIT_CHAIN)  # fmt: skip
            _time.sleep(poll)
    raise typer.Exit(130)


@task_app.command("result")
def task_result(
    task_id: TaskId,
    out_file: Annotated[Path, typer.Option("--out", help="where to write the final weights (a torch.save state_dict)")],
    rpc: Rpc = DEFAULT_RPC,
    deployments: Deployments = None,
    store: StoreDir = Path(".refereed/public"),
    json_out: Json = False,
) -> None:
    """Write the final weights of a finalized task's winning group as a state_dict file (torch.save)."""
    import torch

    from offchain.store import Store, StoreError
    from trainer.commit import state_root

    p = _reader(rpc, deployments)
    st = _read_task(p, task_id)
    if st["status"] != "finalized":
        _fail(f"task {task_id} is {st['status']}, not finalized: it waits for {st['waits_for']}", EXIT_CHAIN)
    if not st["won"]:
        _fail(f"task {task_id} was finalized without a winner (the reward went back to the client): no result",
              EXIT_CHAIN)  # fmt: skip
    group = st["groups"][st["winning_group"]]
    root = bytes.fromhex(group["final_state_root"][2:])
    if out_file.is_dir():
        _fail(f"--out {out_file} is a folder: give a file path, e.g. {out_file / f'task-{task_id}.pt'}", EXIT_INPUT)
    if not out_file.parent.is_dir():
        _fail(f"--out {out_file}: the folder {out_file.parent} does not exist", EXIT_INPUT)
    if not store.is_dir():
        _fail(f"--store {store}: no such folder (the public store the trainers published to)", EXIT_INPUT)
    try:
        state = Store(store).get_state(root)
    except StoreError as e:
        _fail(f"the final state 0x{root.hex()} of task {task_id} is not usable in --store {store}: {e}", EXIT_CHAIN)
    if state_root(state) != root:  # the store checks it too; bits, not trust
        _fail(f"the state read from {store} does not have the winning root 0x{root.hex()}", EXIT_CHAIN)
    tmp = out_file.with_name(out_file.name + ".tmp")
    torch.save(dict(state), tmp)
    tmp.replace(out_file)
    if json_out:
        _print_json({"task": task_id, "file": str(out_file), "state_root": "0x" + root.hex(), "tensors": len(state)})
        return
    _out().print(f"wrote {out_file}: {len(state)} tensors, state root 0x{root.hex()} (group {st['winning_group']})")


def _yes(b: bool) -> str:
    return "yes" if b else "no"


@task_app.command("finalize")
def task_finalize(
    task_id: TaskId,
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    deployments: Deployments = None,
    store: StoreDir = Path(".refereed/public"),
    claim: Annotated[
        bool, typer.Option(help="then claim for every live entrant that revealed (its bond and share)")
    ] = True,
    withdraw: Annotated[bool, typer.Option(help="then withdraw the caller's credit at the market")] = True,
) -> None:
    """Finalize a task after its dispute deadline: the reward is won by the one live group (or goes back to the
    client); anyone may call it, and claim each live entrant's bond and share for it."""
    from offchain.chain.client import ChainClient
    from offchain.chain.errors import ChainError
    from offchain.contracts.protocol import Protocol
    from offchain.contracts.task_market import TaskMarketError, TaskMarketNothingToClaim, TaskStatus

    s = _session("client", rpc, key, account, None, store, deployments, keystore, password_file)
    out = _out()
    try:
        p = Protocol.from_deployment(ChainClient(rpc, s.key, artifacts=s.artifacts.values()), s.deployment, s.artifacts)
        if p.market.task(task_id).status is TaskStatus.NONE:
            _fail(f"there is no task {task_id} on chain {s.chain_id} (tasks 1..{p.market.task_count()})", EXIT_INPUT)
        with p.market.chain.capped(p.market.spec_of(task_id).gas_price_cap):
            try:
                fin = p.market.finalize(task_id)
            except TaskMarketError as e:
                st = _task_state(p, task_id)
                when = "" if st["finalize_at"] is None else f"; it can be from {_when(st['finalize_at'], st['now'])}"
                _fail(f"task {task_id} cannot be finalized: {e} (it waits for {st['waits_for']}{when})", EXIT_CHAIN)
            who = "refunded to the client" if fin.winning_group < 0 else f"won by group {fin.winning_group}"
            out.print(f"task {task_id} finalized: the reward of {fin.reward / 10**18:.6f} ETH is {who}")
            for trainer in p.market.trainers_of(task_id) if claim else ():
                v = p.market.trainer_of(task_id, trainer)
                if not v.submitted or v.eliminated or v.claimed:
                    continue
                try:
                    c = p.market.claim(task_id, trainer)
                except TaskMarketNothingToClaim:  # it claimed for itself meanwhile
                    continue
                out.print(f"claimed {c.amount / 10**18:.6f} ETH for {trainer}")
        if withdraw and p.market.credit_of(s.address) > 0:
            w = p.market.withdraw()
            out.print(f"{s.address} withdrew {w.amount / 10**18:.6f} ETH")
    except ChainError as e:
        _chain_fail(e)


def _confirm_bonds(chain_id: int, yes: bool, what: str) -> Any:
    """None on a local chain or with --yes; else a callback asking a person before each bond (exit 2 when no one
    can be asked)."""
    if chain_id == ANVIL_CHAIN_ID or yes:
        return None
    if not sys.stdin.isatty():
        _fail(f"chain {chain_id} is not local and no one can confirm {what} here: pass --yes to allow it", EXIT_INPUT)

    def approve(task_id: int, spec: Any) -> bool:
        return typer.confirm(
            f"task {task_id}: bond {spec.bond / 10**18:.6f} ETH on chain {chain_id} ({spec.steps} steps)?",
            default=False,
        )

    return approve


@trainer_app.command("run")
def trainer_run(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    task: Annotated[
        list[int] | None, typer.Option(help="only these tasks (repeatable); default: any task", min=1)
    ] = None,
    max_bond: Annotated[str | None, typer.Option(help="join no task whose bond is above this many ETH")] = None,
    max_steps: Annotated[int | None, typer.Option(help="join no task of more steps", min=1)] = None,
    min_reward_per_step: Annotated[
        str | None, typer.Option(help="join no task paying less ETH per step and slot")
    ] = None,
    yes: Yes = False,
    poll: Poll = 1.0,
    challenge_if_full: Annotated[
        bool, typer.Option(help="train a task whose slots are taken and enter it as an outside challenger")
    ] = True,
    cheat: Annotated[
        str | None,
        typer.Option(help="TESTING ONLY: cheat with this adversary from the catalogue (needs one --task)", hidden=True),
    ] = None,
) -> None:
    """Run a trainer: join tasks (or enter full ones as an outside challenger), train with RepOps, self-audit,
    commit, reveal, open and play games, claim, withdraw; until Ctrl-C."""
    from offchain.agents.home import HomeError
    from offchain.agents.strategy import HONEST, Strategy
    from offchain.agents.task import TaskRejected, run_config
    from offchain.agents.trainer import TrainerAgent, TrainerPolicy
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError
    from offchain.inputs import InputError, parse_eth

    try:
        bond_cap = None if max_bond is None else parse_eth(max_bond, "--max-bond", positive=False)
        per_step = None if min_reward_per_step is None else parse_eth(
            min_reward_per_step, "--min-reward-per-step", positive=False
        )  # fmt: skip
    except InputError as e:
        _fail(str(e), EXIT_INPUT)
    strategy: Strategy = HONEST
    if cheat is not None:
        from offchain.agents.adversaries import CATALOGUE

        if cheat not in CATALOGUE:
            _fail(f"--cheat {cheat!r} is not in the catalogue: {', '.join(sorted(CATALOGUE))}", EXIT_INPUT)
        if not task or len(task) != 1:
            _fail("--cheat needs exactly one --task: the cheat is placed by the task's run", EXIT_INPUT)
        p = _reader(rpc, deployments)
        try:
            strategy = CATALOGUE[cheat].strategy(run_config(p.market.spec_of(task[0])))
        except TaskRejected as e:
            _fail(f"task {task[0]}: {e}", EXIT_INPUT)
        except ChainError as e:
            _chain_fail(e)
    s = _session("trainer", rpc, key, account, home, store, deployments, keystore, password_file)
    if task:
        count = _reader(rpc, deployments).market.task_count()
        unknown = [t for t in task if t > count]
        if unknown:
            _fail(f"--task {unknown[0]}: there is no such task on chain {s.chain_id} yet (tasks 1..{count})",
                  EXIT_INPUT)  # fmt: skip
    out = _out()
    name = "trainer" if cheat is None else f"cheater ({cheat})"
    policy = TrainerPolicy(bond_cap, max_steps, per_step, _confirm_bonds(s.chain_id, yes, "bonding for a task"))
    observer = RichObserver(out, stamp=True)
    try:
        agent = TrainerAgent(
            name,
            strategy=strategy,
            task_ids=set(task) if task else None,
            challenge_if_full=challenge_if_full,
            policy=policy,
            **_agent_kwargs(s, observer),
        )
    except (ChainError, HomeError) as e:
        _chain_fail(e)
    observer.addresses[name] = s.address
    out.print(f"{name} {s.address} on chain {s.chain_id}; records in {s.home}. Ctrl-C stops.")
    _run_agent(agent, out, poll)


@oracle_app.command("run")
def oracle_run(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    count: Annotated[
        int,
        typer.Option(
            help=f"oracles to run in this process, on anvil's dev accounts I, I+1, ... (a question needs "
            f"{ORACLES} registered oracles); with --key: 1",
            min=1,
            max=100,
        ),
    ] = 1,
    yes: Yes = False,
    poll: Poll = 1.0,
    liar: Annotated[bool, typer.Option(help="TESTING ONLY: answer and vote wrong outputs", hidden=True)] = False,
) -> None:
    """Run recompute oracles: register with a bond, draw, answer, challenge wrong answers, vote; until Ctrl-C."""
    from offchain.agents.base import run_together
    from offchain.agents.home import HomeError
    from offchain.agents.oracle import OracleAgent
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError

    if count > 1 and (key is not None or home is not None or keystore is not None):
        _fail("--count runs several oracles on anvil's dev accounts: it cannot go with --key, --keystore or --home",
              EXIT_INPUT)  # fmt: skip
    first = DEV_ACCOUNT["oracle"] if account is None else account
    sessions = [
        _session(
            "oracle", rpc, key, first + i if count > 1 else account, home, store, deployments, keystore, password_file
        )
        for i in range(count)
    ]
    out = _out()
    reader = _reader(rpc, deployments)
    try:
        bond = reader.oracle.min_bond()
        chain = reader.oracle.chain
        for sess in sessions:
            if reader.oracle.bond_of(sess.address) >= bond:
                continue
            have = chain.balance(sess.address)
            need = bond + 10**16  # the bond, and gas to spare
            if have < need:
                _fail(
                    f"{sess.address} has {have / 10**18:.6f} ETH; an oracle registers with a bond of "
                    f"{bond / 10**18:.2f} ETH (the oracle's minBond) plus gas, so it needs about {need / 10**18:.2f} "
                    "ETH: fund it, or use another key",
                    EXIT_CHAIN,
                )
        if sessions[0].chain_id != ANVIL_CHAIN_ID and not yes:
            if not sys.stdin.isatty():
                _fail(f"chain {sessions[0].chain_id} is not local: registering bonds {bond / 10**18:.2f} ETH per "
                      "oracle; pass --yes to allow it", EXIT_INPUT)  # fmt: skip
            if not typer.confirm(f"bond {bond / 10**18:.2f} ETH per oracle on chain {sessions[0].chain_id}?"):
                _fail("not confirmed: nothing was bonded", EXIT_INPUT)
    except ChainError as e:
        _chain_fail(e)
    observer = RichObserver(out, stamp=True)
    agents = []
    try:
        for i, sess in enumerate(sessions):
            name = "oracle" if count == 1 else f"oracle-{i + 1}"
            agents.append(OracleAgent(name, liar=liar, **_agent_kwargs(sess, observer)))
            observer.addresses[name] = sess.address
    except (ChainError, HomeError) as e:
        for a in agents:
            a.close()
        _chain_fail(e)
    for agent, sess in zip(agents, sessions, strict=True):
        out.print(f"{agent.name} {sess.address} on chain {sess.chain_id}; records in {sess.home}. Ctrl-C stops.")
    if len(agents) == 1:
        _run_agent(agents[0], out, poll)
        return
    with _StopFlag() as stop:
        try:
            run_together(agents, poll=poll, stop=stop)
        except (_Stop, KeyboardInterrupt):
            pass
        except ChainError as e:
            _chain_fail(e)
        finally:
            observer.close()
            for agent in agents:
                agent.close()
    out.print(f"{len(agents)} oracles stopped; their records are in {', '.join(str(s.home) for s in sessions)}")


@app.command()
def watch(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    task: Annotated[
        list[int] | None, typer.Option(help="only these tasks (repeatable); default: every task", min=1)
    ] = None,
    from_block: Annotated[
        int | None, typer.Option(help="show the transactions from this block on (default: from now)", min=1)
    ] = None,
    poll: Poll = 1.0,
) -> None:
    """Run the watcher (open games where submissions differ, time out, settle) and show every game's moves live."""
    import time as _time

    from offchain.agents.home import HomeError
    from offchain.agents.view import GameFeed, RichObserver, render
    from offchain.agents.watcher import WatcherAgent
    from offchain.chain.errors import ChainError

    s = _session("watcher", rpc, key, account, home, store, deployments, keystore, password_file)
    out = _out()
    observer = RichObserver(out, feed_shown=True, stamp=True)
    try:
        agent = WatcherAgent("watcher", task_ids=set(task) if task else None, **_agent_kwargs(s, observer))
    except (ChainError, HomeError) as e:
        _chain_fail(e)
    observer.addresses["watcher"] = s.address
    try:
        head = agent.chain.block_number()
        feed = GameFeed(agent.protocol, {s.address: "watcher"}, from_block=from_block or head + 1)
    except ChainError as e:
        agent.close()
        _chain_fail(e)
    failing = {"since": 0.0}

    def show() -> None:
        # The live view reads the chain too: an outage or a reset is reported and retried, never fatal.
        if failing["since"] and _time.monotonic() - failing["since"] < 2.0:
            return
        try:
            lines = feed.poll()
        except ChainError as e:
            if not failing["since"]:
                out.print(f"[dim]{_time.strftime('%H:%M:%S')}[/] live view: {e}; retrying")
            failing["since"] = _time.monotonic()
            return
        failing["since"] = 0.0
        for line in lines:
            if line.kind in ("move", "open", "timeout", "resolve", "settle", "oracle", "task", "payout", "failed"):
                out.print(f"[dim]{_time.strftime('%H:%M:%S')}[/] " + render(line))

    out.print(f"watcher {s.address} on chain {s.chain_id}, from block {feed.next_block}. Ctrl-C stops.")
    _run_agent(agent, out, poll, every=show)


# -- accounts and keys ---------------------------------------------------------------------------


@app.command("account")
def account_cmd(
    address: Annotated[
        str | None, typer.Argument(help="the address to show (default: the key's, or the role's dev account)")
    ] = None,
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    deployments: Deployments = None,
    withdraw: Annotated[bool, typer.Option("--withdraw", help="withdraw every credit (market and oracle)")] = False,
    json_out: Json = False,
) -> None:
    """An address's balance, bonds and credits per task and contract; `--withdraw` takes the credits out."""
    from eth_utils import is_address, to_checksum_address

    from offchain.chain.client import ChainClient
    from offchain.chain.errors import ChainError
    from offchain.contracts.protocol import Protocol

    if address is not None and not is_address(address):
        _fail(f"{address!r} is not an address: give 0x and 40 hex digits", EXIT_INPUT)
    p = _reader(rpc, deployments)
    chain = p.market.chain
    signer = None
    if address is None or withdraw:
        try:
            signer = _resolve_key("trainer", chain.chain_id, key, account, keystore, password_file)
        except ChainError as e:
            _chain_fail(e)
    if address is not None:
        who = to_checksum_address(address)
    else:
        from eth_account import Account as EthAccount

        who = EthAccount.from_key(signer).address
    if withdraw and signer is not None and address is not None:
        from eth_account import Account as EthAccount

        if EthAccount.from_key(signer).address != who:
            _fail(f"--withdraw takes {who}'s credits only with its key: give --key, --keystore or --account",
                  EXIT_INPUT)  # fmt: skip
    try:
        data = _account_state(p, who)
        if withdraw:
            me = Protocol.from_deployment(ChainClient(rpc, signer), _deployment_of(p), None)
            done = []
            if data["market_credit_wei"] != "0":
                w = me.market.withdraw()
                done.append(f"{w.amount / 10**18:.6f} ETH from the TaskMarket")
            if data["oracle_credit_wei"] != "0":
                w = me.oracle.withdraw()
                done.append(f"{w.amount / 10**18:.6f} ETH from the RecomputeOracle")
            data = {**_account_state(p, who), "withdrew": done}
    except ChainError as e:
        _chain_fail(e)
    if json_out:
        _print_json(data)
        return
    out = _out()
    head = Table(title=f"account {who} on chain {data['chain_id']}", show_header=False)
    head.add_column(style="bold")
    head.add_column(no_wrap=True)
    eth = lambda w: f"{int(w) / 10**18:.6f} ETH"  # noqa: E731
    head.add_row("balance", eth(data["balance_wei"]))
    head.add_row("TaskMarket credit", eth(data["market_credit_wei"]) + " (withdrawable)")
    head.add_row("RecomputeOracle bond", eth(data["oracle_bond_wei"]))
    head.add_row("RecomputeOracle credit", eth(data["oracle_credit_wei"]) + " (withdrawable)")
    head.add_row("bonded in tasks", eth(data["task_bonds_wei"]))
    out.print(head)
    if data["tasks"]:
        table = Table("task", "status", "role", "bond", "revealed", "eliminated", "claimed", "owed", title="tasks")
        for t in data["tasks"]:
            table.add_row(str(t["task"]), t["status"], t["role"], eth(t["bond_wei"]), _yes(t["revealed"]),
                          _yes(t["eliminated"]), _yes(t["claimed"]), eth(t["owed_wei"]))  # fmt: skip
        out.print(table)
    for line in data.get("withdrew", []):
        out.print(f"withdrew {line}")
    if not withdraw and (data["market_credit_wei"] != "0" or data["oracle_credit_wei"] != "0"):
        out.print("`refereed account --withdraw` takes the credits out")


def _deployment_of(p: Any) -> Any:
    from offchain.chain.deploy import DeployedRecord, Deployment

    contracts = {
        c.CONTRACT_NAME: DeployedRecord(c.CONTRACT_NAME, c.address, "", 0, "", "") for c in (p.market, p.game, p.oracle)
    }
    return Deployment(p.market.chain.chain_id, "", contracts)


def _account_state(p: Any, who: str) -> dict[str, Any]:
    """Balance, credits, the oracle bond and, per task, the bond and what is owed (as JSON-ready data)."""
    from offchain.contracts.task_market import TaskStatus

    m = p.market
    tasks = []
    bonded = 0
    for task_id in range(1, m.task_count() + 1):
        v = m.trainer_of(task_id, who)
        task = m.task(task_id)
        if task.client == who:
            tasks.append({"task": task_id, "status": task.status.name.lower(), "role": "client",
                          "bond_wei": "0", "revealed": False, "eliminated": False, "claimed": False,
                          "owed_wei": "0"})  # fmt: skip
        if not v.joined:
            continue
        spec = m.spec_of(task_id)
        held = 0 if v.claimed or v.eliminated else spec.bond
        owed = 0
        if task.status is TaskStatus.FINALIZED and v.submitted and not v.eliminated and not v.claimed:
            owed = spec.bond + (task.share if task.won and m.group_of(task_id, v.group).live and
                                task.winning_group == v.group else 0)  # fmt: skip
        bonded += held
        tasks.append({"task": task_id, "status": task.status.name.lower(),
                      "role": "outside challenger" if v.challenger else "trainer", "bond_wei": str(held),
                      "revealed": v.submitted, "eliminated": v.eliminated, "claimed": v.claimed,
                      "owed_wei": str(owed)})  # fmt: skip
    return {
        "address": who,
        "chain_id": m.chain.chain_id,
        "balance_wei": str(m.chain.balance(who)),
        "market_credit_wei": str(m.credit_of(who)),
        "oracle_bond_wei": str(p.oracle.bond_of(who)),
        "oracle_credit_wei": str(p.oracle.credit_of(who)),
        "task_bonds_wei": str(bonded),
        "tasks": tasks,
    }


keystore_app = typer.Typer(help="Encrypted keystore files (eth-account JSON).", no_args_is_help=True)
app.add_typer(keystore_app, name="keystore")


@keystore_app.command("create")
def keystore_create(
    path: Annotated[Path, typer.Argument(help="the keystore file to write (not overwritten)")],
    key: Key = None,
    password_file: PasswordFile = None,
) -> None:
    """Encrypt a key (--key / REFEREED_KEY, or a new random one) into a keystore file; password from
    REFEREED_PASSWORD, --password-file or a prompt."""
    import os
    import secrets

    from offchain.chain.client import check_private_key
    from offchain.chain.errors import InvalidKeyError
    from offchain.inputs import InputError, write_keystore

    if key is not None:
        if not key.strip():
            _fail("--key / REFEREED_KEY is empty: give a private key, or leave it out for a new random one",
                  EXIT_INPUT)  # fmt: skip
        try:
            check_private_key(key)
        except InvalidKeyError as e:
            _fail(f"--key / REFEREED_KEY: {e}", EXIT_INPUT)
        private = key.strip()
    else:
        private = "0x" + secrets.token_hex(32)
    password = os.environ.get("REFEREED_PASSWORD")
    if password_file is not None:
        try:
            password = password_file.read_text(encoding="utf-8").rstrip("\n")
        except OSError as e:
            _fail(f"--password-file {password_file}: {e.strerror or e}", EXIT_INPUT)
    if password is None:
        if not sys.stdin.isatty():
            _fail("no password: set REFEREED_PASSWORD or pass --password-file", EXIT_INPUT)
        password = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    if not path.parent.is_dir():
        _fail(f"{path}: the folder {path.parent} does not exist", EXIT_INPUT)
    try:
        who = write_keystore(path, private, password)
    except InputError as e:
        _fail(str(e), EXIT_INPUT)
    _out().print(f"wrote {path} for {who}; use it with --keystore {path}")


@app.command()
def serve(
    rpc: Rpc = DEFAULT_RPC,
    deployments: Deployments = None,
    store: StoreDir = Path(".refereed/public"),
    host: Annotated[str, typer.Option(help="the address to serve on (local by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="the port to serve on (0: any free port)", min=0, max=65535)] = 8000,
    interval: Annotated[float, typer.Option(help="seconds between reads of the chain", min=0.2, max=3600)] = 1.0,
) -> None:
    """A local, read-only web dashboard of the tasks, trainers, groups, games and oracle questions; it updates
    live. Open the printed URL in a browser; Ctrl-C stops."""
    from offchain.dashboard import DashboardError, Snapshots, make_server

    p = _reader(rpc, deployments)
    snapshots = Snapshots(p, store, rpc_url=rpc)
    try:
        server = make_server(snapshots, host, port)
    except DashboardError as e:
        _fail(str(e), EXIT_INPUT)
    snapshots.refresh()  # the first request already gets the chain's state
    snapshots.start(interval)
    bound_host, bound_port = server.server_address[:2]
    out = _out()
    out.print(
        f"dashboard of chain {p.market.chain.chain_id} at http://{bound_host}:{bound_port}/ (read-only). Ctrl-C stops."
    )
    sys.stdout.flush()
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.server_close()
        snapshots.stop()
    out.print("dashboard stopped")


def main() -> None:
    """The `refereed` entry point: the app, with a last net so that no traceback reaches a user."""
    import os

    try:
        app(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:  # a Ctrl-C outside an agent's loop (starting up, or on the way out)
        typer.echo("interrupted", err=True)
        raise SystemExit(130) from None
    except Exception as e:  # pragma: no cover - a bug: say so in one line (REFEREED_DEBUG=1 shows the traceback)
        if os.environ.get("REFEREED_DEBUG"):
            raise
        from offchain.errors import OffchainError

        if isinstance(e, OffchainError):
            typer.echo(f"error: {e}", err=True)
            raise SystemExit(EXIT_CHAIN) from None
        typer.echo(
            f"error: internal error ({type(e).__name__}: {str(e)[:300]}); run again with REFEREED_DEBUG=1 for the "
            "traceback, and please report it",
            err=True,
        )
        raise SystemExit(EXIT_CHAIN) from None


if __name__ == "__main__":  # pragma: no cover - `python -m offchain.cli`
    main()
