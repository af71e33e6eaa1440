"""`refereed`: the command line of Refereed Training.

    refereed devnet [--port 8545]        a local anvil chain, until Ctrl-C
    refereed deploy --rpc URL [--key K]  deploy the protocol, write deployments/<chainId>.json
    refereed commit PATH                 commitment of a tensor or state dict saved with torch.save
    refereed task post [--steps ...]     post the MLP-on-digits task with its reward; prints the task id
                                         (--follow: then verify the results, finalize, withdraw; --challenge:
                                         also train the task and enter it as an outside challenger)
    refereed task show ID                a task's spec, status, groups, entrants and games
    refereed task finalize ID            finalize a task after its dispute deadline, claim for every live
                                         entrant, and withdraw the caller's credit
    refereed trainer run                 a trainer agent: join (or enter a full task as an outside challenger),
                                         train, commit, reveal, open and play games, claim, withdraw; until Ctrl-C
    refereed oracle run [--count 5]      oracle agents: register, draw, answer, challenge, vote; until Ctrl-C
    refereed watch                       the watcher agent, with a live view of every game's moves
    refereed ledger simulate|show|verify-replay   the training ledger (docs/ledger.md): attribution, replay

The agent commands work against any RPC (`--rpc`, default the local anvil). Keys come from
`--key` or REFEREED_KEY; on anvil's chain (31337) each role defaults to a dev account
(client 1, trainer 2, oracle 10, watcher 6; `--account I` picks another; `oracle run --count N`
runs N oracles on accounts I, I+1, ...: a question is drawn only once committeeSize + 2 = 5
oracles are registered, so `refereed devnet` funds 20 accounts). The deployment is
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
    port: Annotated[int, typer.Option(help="RPC port (0: any free port)")] = 8545,
    accounts: Annotated[int, typer.Option(help="funded accounts (5 oracles, trainers, a client, a watcher)")] = 20,
    chain_id: Annotated[int, typer.Option(help="chain id")] = ANVIL_CHAIN_ID,
) -> None:
    """Run a local anvil chain with funded accounts until Ctrl-C."""
    from offchain.chain.anvil import Anvil
    from offchain.chain.client import ChainClient
    from offchain.chain.errors import ChainError

    out = _out()
    # Explicit handlers: a shell may start a background job with SIGINT ignored.
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = Anvil(port=port, accounts=accounts, chain_id=chain_id)
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
    rpc: Annotated[str, typer.Option(help="JSON-RPC URL of the chain")],
    key: Annotated[
        str | None,
        typer.Option(
            envvar="REFEREED_KEY",
            help="deployer's private key (hex); default on chain 31337 only: anvil's account 0",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="folder for <chainId>.json (default: deployments/ in the repo)")
    ] = None,
) -> None:
    """Deploy the protocol's contracts and write deployments/<chainId>.json."""
    from offchain.chain.anvil import dev_accounts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import deploy_all
    from offchain.chain.errors import ChainError, InvalidKeyError

    out = _out()
    try:
        probe = ChainClient(rpc)
        if key is None:
            if probe.chain_id != ANVIL_CHAIN_ID:
                _fail(f"chain {probe.chain_id} is not a local anvil chain: pass --key or set REFEREED_KEY", EXIT_INPUT)
            key = dev_accounts(1)[0].private_key
        try:
            client = ChainClient(rpc, key)
        except InvalidKeyError as e:
            _fail(f"--key / REFEREED_KEY: {e}", EXIT_INPUT)
        deployment = deploy_all(client, out_dir=out_dir)
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)
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
def commit(path: Annotated[Path, typer.Argument(help="a file written by torch.save")]) -> None:
    """Print the commitment of a saved tensor, or the state root of a saved state dict."""
    import torch

    from trainer.commit import CommitError, commit_tensor, state_root_from_commitments
    from trainer.commit.tensor import dtype_code

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
            out.print(f"commitment  0x{commit_tensor(t).hex()}")
            out.print(f"dtype       {str(t.dtype).removeprefix('torch.')} (code {dtype_code(t.dtype)})")
            out.print(f"shape       {tuple(t.shape)}")
            return
        if isinstance(obj, Mapping) and obj:
            bad = {
                k: type(v).__name__ for k, v in obj.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)
            }
            if bad:
                key, kind = next(iter(bad.items()))
                _fail(
                    f"{path} holds a dict, but not only str -> tensor: entry {key!r} is of type {kind} "
                    f"({len(bad)} such entries)",
                    EXIT_INPUT,
                )
            tensors = {k: _dense(v, f"{path}[{k!r}]") for k, v in obj.items()}
            commitments = {k: commit_tensor(v) for k, v in tensors.items()}
            root = state_root_from_commitments(commitments)
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
    return t.contiguous()


# -- agents ------------------------------------------------------------------------------------

DEFAULT_RPC = "http://127.0.0.1:8545"
DEV_ACCOUNT = {"client": 1, "trainer": 2, "oracle": 10, "watcher": 6}  # anvil's dev accounts, by role
ORACLES = 5  # a question is drawn once committeeSize + 2 oracles are registered (deploy.ORACLE_ARGS)
MAX_BATCH = 96  # digits: 64 float32 a example, and a batch proof carries at most 24 KiB

task_app = typer.Typer(help="Post, inspect and finalize tasks.", no_args_is_help=True)
trainer_app = typer.Typer(help="Run a trainer agent.", no_args_is_help=True)
oracle_app = typer.Typer(help="Run a recompute-oracle agent.", no_args_is_help=True)
app.add_typer(task_app, name="task")
app.add_typer(trainer_app, name="trainer")
app.add_typer(oracle_app, name="oracle")

from offchain.ledger.cli import ledger_app  # noqa: E402  (a sub-app in its own module)

app.add_typer(ledger_app, name="ledger")

Rpc = Annotated[str, typer.Option(help="JSON-RPC URL of the chain")]
Key = Annotated[
    str | None,
    typer.Option(
        envvar="REFEREED_KEY",
        help="private key (hex); default on chain 31337 only: the role's anvil dev account",
        show_default=False,
    ),
]
Account = Annotated[
    int | None,
    typer.Option("--account", help="on chain 31337: use anvil's dev account I instead of the role's", min=0),
]
Home = Annotated[
    Path | None, typer.Option(help="the agent's records and private store (default .refereed/<role>-<address>)")
]
StoreDir = Annotated[Path, typer.Option("--store", help="the public store shared by every party")]
Deployments = Annotated[
    Path | None, typer.Option("--deployments", help="folder of <chainId>.json (default: deployments/ in the repo)")
]


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


def _session(
    role: str,
    rpc: str,
    key: str | None,
    account: int | None,
    home: Path | None,
    store: Path,
    deployments: Path | None,
) -> _Session:
    """Resolves the key (or fails with a line and 2), the deployment (or 1); chain errors exit 1."""
    from eth_account import Account as EthAccount

    from offchain.chain.anvil import dev_accounts
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.chain.errors import ChainError
    from offchain.store import Store

    try:
        probe = ChainClient(rpc)
        if key is None:
            if probe.chain_id != ANVIL_CHAIN_ID:
                _fail(f"chain {probe.chain_id} is not a local anvil chain: pass --key or set REFEREED_KEY", EXIT_INPUT)
            index = DEV_ACCOUNT[role] if account is None else account
            key = dev_accounts(index + 1)[index].private_key
        elif account is not None:
            _fail("--account picks an anvil dev key; it cannot go with --key / REFEREED_KEY", EXIT_INPUT)
        try:
            address = EthAccount.from_key(key).address
        except (ValueError, TypeError) as e:
            _fail(f"--key / REFEREED_KEY is not a valid secp256k1 private key ({e})", EXIT_INPUT)
        deployment = load_deployment(probe.chain_id, deployments)
        artifacts = compile_contracts()
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)
    folder = home if home is not None else Path(".refereed") / f"{role}-{address}"
    return _Session(rpc, key, address, probe.chain_id, deployment, artifacts, folder, Store(store))


def _reader(rpc: str, deployments: Path | None) -> Any:
    """The protocol's clients without a key, for reads."""
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import load_deployment
    from offchain.chain.errors import ChainError
    from offchain.contracts.protocol import Protocol

    try:
        chain = ChainClient(rpc)
        return Protocol.from_deployment(chain, load_deployment(chain.chain_id, deployments), compile_contracts())
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)


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
                every()
            return stop() or (until is not None and until())

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
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    steps: Annotated[int, typer.Option(help="training steps T", min=1)] = 256,
    interval: Annotated[int, typer.Option(help="checkpoint interval c (divides T)", min=1)] = 16,
    batch: Annotated[int, typer.Option(help=f"batch size (1..{MAX_BATCH})", min=1)] = 64,
    seed: Annotated[int, typer.Option(help="the run's seed (batches and initial state)")] = 1,
    reward: Annotated[float, typer.Option(help="reward in ETH, escrowed when posting")] = 1.0,
    slots: Annotated[int, typer.Option(help="trainers at most", min=1)] = 3,
    arity: Annotated[int, typer.Option(help="arity N of the games (a power of two, 2..64)")] = 4,
    clock: Annotated[int, typer.Option(help="seconds per side per game", min=1)] = 3600,
    join_window: Annotated[int, typer.Option(help="seconds to join after posting", min=1)] = 600,
    submit_window: Annotated[
        int, typer.Option(help="seconds to commit to a result after posting (reveals come after)", min=1)
    ] = 3600,
    dispute_window: Annotated[
        int,
        typer.Option(
            help="seconds to dispute after posting (at least --submit-window + 4500: reveals, then 1 h)", min=1
        ),
    ] = 9000,
    follow: Annotated[
        bool, typer.Option(help="then follow the task: verify the revealed results, finalize it, withdraw")
    ] = False,
    verify: Annotated[bool, typer.Option(help="with --follow: replay sampled intervals of each result")] = True,
    challenge: Annotated[
        bool, typer.Option(help="with --follow: also train the task and enter it as an outside challenger")
    ] = False,
    poll: Annotated[float, typer.Option(help="with --follow: seconds between looks at the chain", min=0.05)] = 1.0,
) -> None:
    """Post the MLP-on-digits task with its reward in escrow; prints the task id (last line of the post)."""
    from offchain.agents.client import ClientAgent, TaskOrder
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError
    from offchain.contracts.task_market import MIN_SUBMIT_TO_DISPUTE
    from trainer.workloads import mlp_digits

    if steps % interval:
        _fail(f"--interval {interval} does not divide --steps {steps}", EXIT_INPUT)
    if batch > MAX_BATCH:
        _fail(f"--batch {batch}: a batch proof carries at most 24 KiB, {MAX_BATCH} digits", EXIT_INPUT)
    if reward <= 0:
        _fail("--reward must be more than 0 ETH", EXIT_INPUT)
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
    s = _session("client", rpc, key, account, home, store, deployments)
    out = _out()
    order = TaskOrder(
        mlp_digits(steps=steps, checkpoint_interval=interval, batch_size=batch, seed=seed),
        reward=int(reward * 10**18),
        slots=slots,
        arity=arity,
        clock=clock,
        join_window=join_window,
        submit_window=submit_window,
        dispute_window=dispute_window,
    )
    agent = ClientAgent(
        "client", order=order, verify=verify, challenge=challenge, **_agent_kwargs(s, RichObserver(out))
    )
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
        _fail(str(e), EXIT_CHAIN)
    finally:
        if task_id is None or not follow:
            agent.close()
    if task_id is None:
        _fail("the task was not posted (see above)", EXIT_CHAIN)
    out.print(task_id)
    if follow:
        _run_agent(agent, out, poll, until=lambda: (agent.db.get("order", "task") or {}).get("status") == "done")


@task_app.command("show")
def task_show(
    task_id: Annotated[int, typer.Argument(help="the task's id")],
    rpc: Rpc = DEFAULT_RPC,
    deployments: Deployments = None,
) -> None:
    """Print a task's spec, status, groups, trainers and games."""
    from offchain.chain.errors import ChainError
    from offchain.contracts.task_market import REVEAL_WINDOW, TaskStatus, entry_closes

    p = _reader(rpc, deployments)
    out = _out()
    try:
        task = p.market.task(task_id)
        if task.status is TaskStatus.NONE:
            count = p.market.task_count()
            _fail(f"there is no task {task_id} on chain {p.market.chain.chain_id} (tasks 1..{count})", EXIT_INPUT)
        spec = p.market.spec_of(task_id)
        now = int(p.market.chain.w3.eth.get_block("latest")["timestamp"])
        trainers = p.market.trainers_of(task_id)
        views = {t: p.market.trainer_of(task_id, t) for t in trainers}
        groups = [p.market.group_of(task_id, g) for g in range(task.group_count)]
        disputes = p.market.disputes(task_id)
        games = [(d, p.game.game_of(d.game_id), p.market.dispute_of(d.game_id)) for d in disputes]
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)

    def when(t: int) -> str:
        return f"{t} ({'in ' + str(t - now) + ' s' if t >= now else str(now - t) + ' s ago'})"

    head = Table(title=f"task {task_id}: {task.status.name.lower()}", show_header=False)
    head.add_column(style="bold")
    head.add_column(no_wrap=True)
    for k, v in (
        ("client", task.client),
        ("reward", f"{task.reward / 10**18:.6f} ETH"),
        ("steps", f"{spec.steps} (checkpoint every {spec.checkpoint_interval}, batch {spec.batch_size})"),
        ("program", f"0x{spec.program_hash.hex()} ({spec.node_count} operators per step)"),
        ("dataset", f"0x{spec.dataset_root.hex()} ({spec.dataset_size} examples), seed {spec.seed}"),
        ("initial state", f"0x{spec.initial_state_root.hex()}"),
        ("games", f"arity {spec.arity}, clock {spec.clock} s per side"),
        (
            "trainers",
            f"{task.joined} joined, {task.submitted} submitted of {spec.slots} slots, "
            f"{task.entrants - task.joined} outside challengers",
        ),
        ("bond", f"{spec.bond / 10**18:.6f} ETH each"),
        ("join by", when(spec.join_deadline)),
        ("commit by", when(spec.submit_deadline)),
        ("reveal by", when(spec.submit_deadline + REVEAL_WINDOW) + " (or 15 min after a later commit)"),
        ("enter by", when(entry_closes(spec))),
        ("dispute by", when(spec.dispute_deadline)),
        ("groups", f"{task.group_count} ({task.live_groups} live), {task.active_games} games running"),
    ):
        head.add_row(k, v)
    if task.won:
        head.add_row("won by", f"group {task.winning_group}, {task.share / 10**18:.6f} ETH each")
    out.print(head)
    if trainers:
        table = Table("entrant", "on", "committed", "revealed", "group", "eliminated", "claimed", title="entrants")
        for t, v in views.items():
            group = str(v.group) if v.submitted else ""
            on = "challenger" if v.challenger else "slot"
            table.add_row(t, on, _yes(v.committed), _yes(v.submitted), group, _yes(v.eliminated), _yes(v.claimed))
        out.print(table)
    if groups:
        table = Table("group", "checkpoint root", "members", "live", "eliminated", title="groups")
        for i, g in enumerate(groups):
            table.add_row(str(i), f"0x{g.checkpoint_root.hex()}", str(len(g.members)), str(g.live), _yes(g.eliminated))
        out.print(table)
    if games:
        table = Table("game", "defender", "challenger", "stage", "moves", "outcome", "settled", title="games")
        for d, view, dv in games:
            table.add_row(
                str(d.game_id),
                f"{d.defender} (group {d.defender_group})",
                f"{d.challenger} (group {d.challenger_group})",
                view.stage.name.lower(),
                str(view.moves),
                view.outcome.name.lower(),
                _yes(dv.settled),
            )
        out.print(table)


def _yes(b: bool) -> str:
    return "yes" if b else "no"


@task_app.command("finalize")
def task_finalize(
    task_id: Annotated[int, typer.Argument(help="the task's id")],
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    account: Account = None,
    deployments: Deployments = None,
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

    s = _session("client", rpc, key, account, None, Path(".refereed/public"), deployments)
    out = _out()
    try:
        p = Protocol.from_deployment(ChainClient(rpc, s.key, artifacts=s.artifacts.values()), s.deployment, s.artifacts)
        if p.market.task(task_id).status is TaskStatus.NONE:
            _fail(f"there is no task {task_id} on chain {s.chain_id} (tasks 1..{p.market.task_count()})", EXIT_INPUT)
        with p.market.chain.capped(p.market.spec_of(task_id).gas_price_cap):
            try:
                fin = p.market.finalize(task_id)
            except TaskMarketError as e:
                _fail(f"task {task_id} cannot be finalized: {e}", EXIT_CHAIN)
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
        _fail(str(e), EXIT_CHAIN)


@trainer_app.command("run")
def trainer_run(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    task: Annotated[list[int] | None, typer.Option(help="only these tasks (repeatable); default: any task")] = None,
    poll: Annotated[float, typer.Option(help="seconds between looks at the chain when idle", min=0.05)] = 1.0,
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
    from offchain.agents.strategy import HONEST, Strategy
    from offchain.agents.task import TaskRejected, run_config
    from offchain.agents.trainer import TrainerAgent
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError

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
            _fail(str(e), EXIT_CHAIN)
    s = _session("trainer", rpc, key, account, home, store, deployments)
    out = _out()
    name = "trainer" if cheat is None else f"cheater ({cheat})"
    try:
        agent = TrainerAgent(
            name,
            strategy=strategy,
            task_ids=set(task) if task else None,
            challenge_if_full=challenge_if_full,
            **_agent_kwargs(s, RichObserver(out)),
        )
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)
    out.print(f"{name} {s.address} on chain {s.chain_id}; records in {s.home}. Ctrl-C stops.")
    _run_agent(agent, out, poll)


@oracle_app.command("run")
def oracle_run(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
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
        ),
    ] = 1,
    poll: Annotated[float, typer.Option(help="seconds between looks at the chain when idle", min=0.05)] = 1.0,
    liar: Annotated[bool, typer.Option(help="TESTING ONLY: answer and vote wrong outputs", hidden=True)] = False,
) -> None:
    """Run recompute oracles: register with a bond, draw, answer, challenge wrong answers, vote; until Ctrl-C."""
    from offchain.agents.base import run_together
    from offchain.agents.oracle import OracleAgent
    from offchain.agents.view import RichObserver
    from offchain.chain.errors import ChainError

    if count > 1 and (key is not None or home is not None):
        _fail("--count runs several oracles on anvil's dev accounts: it cannot go with --key or --home", EXIT_INPUT)
    first = DEV_ACCOUNT["oracle"] if account is None else account
    sessions = [
        _session("oracle", rpc, key, first + i if count > 1 else account, home, store, deployments)
        for i in range(count)
    ]
    out = _out()
    observer = RichObserver(out)
    agents = []
    try:
        for i, s in enumerate(sessions):
            name = "oracle" if count == 1 else f"oracle-{i + 1}"
            agents.append(OracleAgent(name, liar=liar, **_agent_kwargs(s, observer)))
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)
    for agent, s in zip(agents, sessions, strict=True):
        out.print(f"{agent.name} {s.address} on chain {s.chain_id}; records in {s.home}. Ctrl-C stops.")
    if len(agents) == 1:
        _run_agent(agents[0], out, poll)
        return
    with _StopFlag() as stop:
        try:
            run_together(agents, poll=poll, stop=stop)
        except (_Stop, KeyboardInterrupt):
            pass
        except ChainError as e:
            _fail(str(e), EXIT_CHAIN)
        finally:
            observer.close()
            for agent in agents:
                agent.close()
    out.print(f"{len(agents)} oracles stopped; their records are in {', '.join(str(s.home) for s in sessions)}")


@app.command()
def watch(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = Path(".refereed/public"),
    deployments: Deployments = None,
    task: Annotated[list[int] | None, typer.Option(help="only these tasks (repeatable); default: every task")] = None,
    from_block: Annotated[
        int | None, typer.Option(help="show the transactions from this block on (default: from now)", min=1)
    ] = None,
    poll: Annotated[float, typer.Option(help="seconds between looks at the chain when idle", min=0.05)] = 1.0,
) -> None:
    """Run the watcher (open games where submissions differ, time out, settle) and show every game's moves live."""
    from offchain.agents.view import GameFeed, RichObserver, render
    from offchain.agents.watcher import WatcherAgent
    from offchain.chain.errors import ChainError

    s = _session("watcher", rpc, key, account, home, store, deployments)
    out = _out()
    observer = RichObserver(out, feed_shown=True)
    try:
        agent = WatcherAgent("watcher", task_ids=set(task) if task else None, **_agent_kwargs(s, observer))
        head = agent.chain.block_number()
        feed = GameFeed(agent.protocol, {s.address: "watcher"}, from_block=from_block or head + 1)
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)

    def show() -> None:
        for line in feed.poll():
            if line.kind in ("move", "open", "timeout", "resolve", "settle", "oracle", "task", "payout", "failed"):
                out.print(render(line))

    out.print(f"watcher {s.address} on chain {s.chain_id}, from block {feed.next_block}. Ctrl-C stops.")
    _run_agent(agent, out, poll, every=show)


if __name__ == "__main__":  # pragma: no cover - `python -m offchain.cli`
    app()
