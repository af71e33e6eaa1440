"""`refereed ledger ...`: a ledger's blocks, attribution and replay (docs/ledger.md).

    refereed ledger simulate [--steps 24]    train the four-contributor digits ledger off chain
                                             (clean, noisy, copy, poison) and publish it; prints its head
    refereed ledger show [HEAD] [--ledger ID] its blocks and each contributor's attribution (from the store);
                                             with --ledger, the ledger's state on chain
    refereed ledger verify-replay HEAD       replay every block from genesis; fails naming the first block
                                             whose root does not reproduce, refuses other kernels

On chain (the deployment's TrainingLedger, docs/ledger.md; offchain.ledger.agents):

    refereed ledger post [--steps 4 --pool 1]   the client: post the digits ledger, then reveal its
                                             validation batches step by step (--ledger ID: go on as its client)
    refereed ledger contribute ID --kind K   a contributor (clean, noisy, copy or poison data): bond, commit and
                                             reveal a gradient each step, claim its share, withdraw its bond
    refereed ledger build ID                 a block builder: build every block, post interval and payout roots,
                                             pull its fee, withdraw its bond
    refereed ledger claim ID [--for ADDR]    claim an account's payout leaf (the tree rebuilt from the blocks)

Each agent command runs until its part is done, moving with the chain's clock (poll every --poll
seconds); with --once it does what is due now, prints `waiting until <chain time>` or `done`, and exits.
Keys and folders are the market commands' (--rpc, --key / --account / --keystore, --deployments,
--home, --store). Off chain, a ledger is named by its head's digest in the public store; the
builders publish the head of an on-chain ledger once its intervals are agreed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from offchain.cli_options import (
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

ledger_app = typer.Typer(
    help="the training ledger: blocks, attribution by marginal loss reduction, replay from genesis",
    no_args_is_help=True,
)

DEFAULT_STORE = Path(".refereed/public")
EXIT_FAIL = 1
EXIT_INPUT = 2


def _out() -> Console:
    return Console(width=None if sys.stdout.isatty() else 200, highlight=False)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _head(text: str) -> bytes:
    t = text.removeprefix("0x")
    try:
        b = bytes.fromhex(t)
    except ValueError:
        b = b""
    if len(b) != 32:
        raise _fail(f"HEAD must be 32 bytes of hex (64 digits, 0x optional), got {text!r}", EXIT_INPUT)
    return b


def _store(path: Path) -> Any:
    from offchain.store import Store

    if path.exists() and not path.is_dir():
        raise _fail(f"--store {path} is a file, not a folder", EXIT_INPUT)
    return Store(path)


def _attribution_rows(blocks: Any) -> dict[str, Any]:
    from trainer.ledger.graph import cumulative

    total = {d: ys[-1] for d, ys in cumulative(blocks).items()}
    batches: dict[str, int] = {}
    shapley: dict[str, float] = {}
    first_on_shapley_steps: dict[str, float] = {}
    for b in blocks:
        for i, did in enumerate(b.contributors):
            batches[did] = batches.get(did, 0) + b.micro_batches[i]
        values = b.shapley_values()
        if values is not None:
            for did, v, f in zip(b.contributors, values, b.phi_values(), strict=True):
                shapley[did] = shapley.get(did, 0.0) + v
                first_on_shapley_steps[did] = first_on_shapley_steps.get(did, 0.0) + f
    return {
        did: {
            "attribution": float(total[did]),
            "batches": batches.get(did, 0),
            "shapley_steps_first_order": first_on_shapley_steps.get(did),
            "shapley_steps_shapley": shapley.get(did),
        }
        for did in sorted(total, key=str.encode)
    }


def _print_summary(out: Console, blocks: Any, kinds: dict[str, str] | None = None) -> None:
    rows = _attribution_rows(blocks)
    table = Table(title=f"attribution over {len(blocks)} blocks (first order, exact; Shapley on sampled steps)")
    for col in ("contributor", "kind", "batches", "Σ φ", "φ on Shapley steps", "Shapley"):
        table.add_column(col, justify="left" if col in ("contributor", "kind") else "right")
    for did, r in rows.items():
        sh = r["shapley_steps_shapley"]
        fo = r["shapley_steps_first_order"]
        table.add_row(
            did,
            (kinds or {}).get(did, ""),
            str(r["batches"]),
            f"{r['attribution']:+.4e}",
            "" if fo is None else f"{fo:+.4e}",
            "" if sh is None else f"{sh:+.4e}",
        )
    out.print(table)


def _wei(text: str, what: str = "--pool") -> int:
    from offchain.inputs import InputError, parse_eth

    try:
        return parse_eth(text, what)
    except InputError as e:
        raise _fail(str(e), EXIT_INPUT) from None


def _print_shares(out: Console, f: Any, pool_text: str) -> None:
    from trainer.ledger.payout import build_tree, leaves_from_shares
    from trainer.ledger.shares import ledger_shares

    pool = _wei(pool_text)
    g = f.genesis
    refund = f"did:pkh:eip155:{g.chain_id}:0x{'0' * 40}"
    shares = ledger_shares(pool, g.payout, f.blocks, [], refund)
    tree = build_tree(leaves_from_shares(shares, g.chain_id))
    table = Table(title=f"payout of {pool_text} ETH (no builders named: their part goes to attribution)")
    table.add_column("account")
    table.add_column("wei", justify="right")
    table.add_column("share", justify="right")
    for did, wei in shares.items():
        table.add_row(did, str(wei), f"{wei / pool:.2%}")
    out.print(table)
    out.print(f"payout tree: {tree.leaf_count} leaves, total {tree.total} wei, root 0x{tree.root.hex()}")


@ledger_app.command("simulate")
def simulate(
    steps: Annotated[int, typer.Option(min=1, max=10_000, help="steps (blocks)")] = 24,
    batch: Annotated[int, typer.Option(min=1, max=4096, help="examples per contributor batch")] = 32,
    shapley_every: Annotated[int, typer.Option(min=0, help="exact Shapley on about one step in N (0: never)")] = 4,
    store: StoreDir = DEFAULT_STORE,
    figure: Annotated[Path | None, typer.Option(help="write the attribution figure (PNG) here")] = None,
) -> None:
    """Train the four-contributor digits ledger off chain and publish it to the store."""
    from offchain.ledger.scenario import ScenarioConfig, run

    out = _out()
    st = _store(store)
    config = ScenarioConfig(steps=steps, batch=batch, shapley_every=shapley_every)

    def progress(b: Any) -> None:
        out.print(f"block {b.step:>4}: validation loss {b.val_loss:.4f}, Σφ {sum(b.phi_values()):+.3e}")

    result = run(st, config, progress=progress)
    _print_summary(out, result.blocks, {c.did: c.kind for c in result.contributors})
    out.print(f"trained {steps} blocks in {result.train_seconds:.1f} s")
    if figure is not None:
        from offchain.ledger.plot import plot

        out.print(f"figure {plot(result.blocks, figure, {c.did: c.kind for c in result.contributors})}")
    out.print(f"head 0x{result.head.hex()}")


@ledger_app.command("show")
def show(
    head: Annotated[str | None, typer.Argument(help="the ledger's head digest (hex), in the store")] = None,
    store: StoreDir = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    figure: Annotated[Path | None, typer.Option(help="write the attribution figure (PNG) here")] = None,
    pool: Annotated[
        str | None, typer.Option(help="also split a pool of this many ETH by the genesis payout rule")
    ] = None,
    ledger: Annotated[
        int | None, typer.Option("--ledger", help="show this ledger's state on chain (the deployment's TrainingLedger)")
    ] = None,
    rpc: Annotated[str, typer.Option(envvar="REFEREED_RPC", help="JSON-RPC URL of the chain (with --ledger)")] = (
        "http://127.0.0.1:8545"
    ),
    deployments: Annotated[
        Path | None, typer.Option("--deployments", envvar="REFEREED_DEPLOYMENTS", help="folder of <chainId>.json")
    ] = None,
) -> None:
    """A ledger's blocks and each contributor's attribution (and payout of --pool ETH); with --ledger, its state
    on chain (windows, bonds, commits and reveals per step, interval and payout roots, claims)."""
    from offchain.ledger.published import fetch
    from offchain.store.errors import StoreError
    from trainer.ledger.errors import LedgerError

    if head is None and ledger is None:
        raise _fail("give a HEAD (a ledger in the store) or --ledger ID (a ledger on chain), or both", EXIT_INPUT)
    if ledger is not None:
        _show_chain(ledger, rpc, deployments, as_json)
    if head is None:
        return
    key = _head(head)
    try:
        f = fetch(_store(store), key)
    except (StoreError, LedgerError) as e:
        raise _fail(str(e), EXIT_FAIL) from None
    if as_json:
        blocks = [
            {
                "step": b.step,
                "hash": "0x" + b.hash.hex(),
                "model_root": "0x" + b.model_root.hex(),
                "validation_loss": b.val_loss,
                "contributors": list(b.contributors),
                "phi": b.phi_values(),
                "shapley": b.shapley_values(),
                "refused": [list(r) for r in b.refused],
            }
            for b in f.blocks
        ]
        typer.echo(json.dumps({"model_id": "0x" + f.genesis.model_id.hex(), "blocks": blocks,
                               "attribution": _attribution_rows(f.blocks)}, indent=2))
        return
    out = _out()
    g = f.genesis
    out.print(f"ledger {g.name}, model id 0x{g.model_id.hex()}, {len(f.blocks)} of {g.steps} steps")
    table = Table(title="blocks")
    for col in ("step", "model root", "validation loss", "contributors", "refused"):
        table.add_column(col)
    for b in f.blocks:
        table.add_row(str(b.step), "0x" + b.model_root.hex()[:16], f"{b.val_loss:.4f}", str(len(b.contributors)),
                      ", ".join(f"{d[-8:]} ({why})" for d, why in b.refused))
    out.print(table)
    _print_summary(out, f.blocks)
    if pool is not None:
        _print_shares(out, f, pool)
    if figure is not None:
        from offchain.ledger.plot import plot

        out.print(f"figure {plot(f.blocks, figure)}")


def chain_state(lc: Any, ledger_id: int) -> dict[str, Any]:
    """A ledger's state on chain, as plain JSON values."""
    from offchain.contracts.training_ledger import FEE_INDEX

    v = lc.ledger(ledger_id)
    p = v.params
    now = int(lc.chain.w3.eth.get_block("latest")["timestamp"])
    bonded = [
        {"account": e["who"], "builder": bool(e["builder"]), "bond": int(e["amount"])}
        for e in lc.events("Bonded", {"id": ledger_id})
    ]
    steps = []
    for t in range(1, p.steps + 1):
        vc = lc.validation_commitment(ledger_id, t)
        steps.append(
            {
                "step": t,
                "window": list(v.step_window(t)),
                "commits": lc.commit_count(ledger_id, t),
                "reveals": len(lc.events("Revealed", {"id": ledger_id, "t": t})),
                "validation": None if vc is None else "0x" + vc.hex(),
            }
        )
    intervals = []
    for i in range(p.intervals):
        r = lc.interval_root(ledger_id, i)
        intervals.append(
            {"interval": i, "root": None if r is None else "0x" + r.hex(), "votes": lc.interval_votes(ledger_id, i)}
        )
    claims = [
        {
            "index": None if e["index"] == FEE_INDEX else int(e["index"]),  # None: a builder fee
            "account": e["account"],
            "amount": int(e["amount"]),
        }
        for e in lc.events("Claimed", {"id": ledger_id})
    ]
    return {
        "ledger": ledger_id,
        "contract": lc.address,
        "client": v.client,
        "model_id": "0x" + p.genesis.hex(),
        "pool": int(v.pool),
        "builder_fee": int(p.builder_fee),
        "quorum": p.quorum,
        "now": now,
        "start": v.start,
        "end": v.end_time,
        "settle_end": v.settle_time,
        "frozen": v.frozen,
        "refunded": v.refunded,
        "intervals_agreed": v.intervals_agreed,
        "payout_root": "0x" + v.payout_root.hex() if v.has_payout else None,
        "payout_votes": v.payout_votes,
        "payout_leaves": v.payout_leaves,
        "paid": int(v.paid),
        "bonded": bonded,
        "steps": steps,
        "intervals": intervals,
        "claims": claims,
    }


def _show_chain(ledger_id: int, rpc: str, deployments: Path | None, as_json: bool) -> None:
    from offchain.chain.build import compile_contracts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import check_deployment, load_deployment
    from offchain.chain.errors import ChainError
    from offchain.contracts.training_ledger import TrainingLedgerClient

    try:
        chain = ChainClient(rpc)
        deployment = check_deployment(chain, load_deployment(chain.chain_id, deployments))
        lc = TrainingLedgerClient.from_deployment(chain, deployment, compile_contracts())
        state = chain_state(lc, ledger_id)
    except ChainError as e:
        raise _fail(str(e), EXIT_FAIL) from None
    if as_json:
        typer.echo(json.dumps(state, indent=2))
        return
    out = _out()
    status = "frozen" if state["frozen"] else "refunded" if state["refunded"] else "open"
    out.print(
        f"ledger {ledger_id} on {state['contract']}: model 0x{state['model_id'][2:18]}, client {state['client']}, "
        f"pool {state['pool']} wei (builder fee {state['builder_fee']}), {status}; chain time {state['now']}, "
        f"steps end {state['end']}, settle window ends {state['settle_end']}"
    )
    table = Table(title="steps")
    for col in ("step", "commit deadline", "commits", "reveals", "validation"):
        table.add_column(col)
    for r in state["steps"]:
        table.add_row(str(r["step"]), str(r["window"][1]), str(r["commits"]), str(r["reveals"]),
                      (r["validation"] or "not revealed")[:18])
    out.print(table)
    table = Table(title=f"interval roots (quorum {state['quorum']}; {state['intervals_agreed']} agreed)")
    for col in ("interval", "root", "votes"):
        table.add_column(col)
    for r in state["intervals"]:
        table.add_row(str(r["interval"]), (r["root"] or "none")[:18], str(r["votes"]))
    out.print(table)
    out.print(
        f"payout root {state['payout_root'] or 'not agreed'} ({state['payout_votes']} votes, "
        f"{state['payout_leaves']} leaves); paid {state['paid']} wei"
    )
    table = Table(title="bonds and claims")
    for col in ("account", "role", "bond", "claimed wei"):
        table.add_column(col)
    paid: dict[str, int] = {}
    for c in state["claims"]:
        paid[c["account"]] = paid.get(c["account"], 0) + c["amount"]
    for b in state["bonded"]:
        table.add_row(b["account"], "builder" if b["builder"] else "contributor", str(b["bond"]),
                      str(paid.get(b["account"], 0)))
    out.print(table)


@ledger_app.command("verify-replay")
def verify_replay(
    head: Annotated[str, typer.Argument(help="the ledger's head digest (hex)")],
    store: StoreDir = DEFAULT_STORE,
) -> None:
    """Fetch genesis, the kernel manifest and every block's data; replay every block and check its
    model root; fail naming the first block that does not reproduce."""
    from offchain.ledger.published import replay_from_store
    from offchain.store.errors import StoreError
    from trainer.ledger.errors import LedgerError, ManifestError

    key = _head(head)
    out = _out()
    start = time.perf_counter()

    def progress(t: int, b: Any) -> None:
        out.print(f"block {t:>4}: model root 0x{b.model_root.hex()} reproduced")

    try:
        f, _ = replay_from_store(_store(store), key, progress=progress)
    except ManifestError as e:
        raise _fail(f"refusing to replay: {e}", EXIT_FAIL) from None
    except (StoreError, LedgerError) as e:
        raise _fail(str(e), EXIT_FAIL) from None
    out.print(
        f"ok: {len(f.blocks)} blocks of ledger 0x{f.genesis.model_id.hex()[:16]} reproduced bit for bit "
        f"in {time.perf_counter() - start:.1f} s"
    )


# -- on chain ----------------------------------------------------------------------------------------

Once = Annotated[bool, typer.Option("--once", help="do what is due now, print what it waits for, exit")]
LedgerId = Annotated[int, typer.Argument(help="the ledger's id on the TrainingLedger", min=0, max=2**256 - 1)]


def _session(
    role: str,
    rpc: str,
    key: str | None,
    account: int | None,
    home: Path | None,
    store: Path,
    deployments: Path | None,
    keystore: Path | None,
    password_file: Path | None,
) -> Any:
    from offchain.cli import _session as market_session

    return market_session(role, rpc, key, account, home, store, deployments, keystore, password_file)


def _ledger_client(s: Any) -> Any:
    """The deployment's TrainingLedger through the session's key (exit 1 naming what is missing)."""
    from offchain.chain.client import ChainClient
    from offchain.chain.errors import ChainError
    from offchain.contracts.training_ledger import TrainingLedgerClient

    try:
        chain = ChainClient(s.rpc, s.key, artifacts=s.artifacts.values())
        return TrainingLedgerClient.from_deployment(chain, s.deployment, s.artifacts)
    except ChainError as e:
        raise _fail(f"{e} (deploy the protocol again: `refereed deploy`)", EXIT_FAIL) from None


class _Echo:
    def event(self, agent: str, message: str) -> None:
        typer.echo(f"[{agent}] {message}")

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass


def _drive(agent: Any, *, once: bool, poll: float) -> None:
    """Tick `agent` until done (or, with `once`, until it waits); prints `done` or `waiting until T`."""
    from offchain.chain.errors import ChainError, ChainUnreachableError, ContractRevert
    from offchain.errors import OffchainError

    while True:
        try:
            t = agent.tick()
        except ContractRevert as e:  # a race lost, or a rule: say it; the next tick reads the chain again
            typer.echo(f"[{agent.name}] refused: {e}", err=True)
            if once:
                raise _fail(str(e), EXIT_FAIL) from None
            time.sleep(poll)
            continue
        except ChainUnreachableError as e:
            if once:
                raise _fail(str(e), EXIT_FAIL) from None
            typer.echo(f"[{agent.name}] {e}; retrying", err=True)
            time.sleep(poll)
            continue
        except (ChainError, OffchainError) as e:
            raise _fail(str(e), EXIT_FAIL) from None
        if t.busy:
            continue
        if t.done:
            typer.echo("done")
            return
        if once:
            typer.echo("waiting" if t.until is None else f"waiting until {t.until}")
            return
        time.sleep(poll)


def _record(home: Path, ledger_id: int) -> Path:
    return home / f"ledger-{ledger_id}.json"


@ledger_app.command("post")
def post(
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = DEFAULT_STORE,
    deployments: Deployments = None,
    ledger: Annotated[
        int | None, typer.Option("--ledger", help="go on as the client of this ledger (posted from this home)")
    ] = None,
    steps: Annotated[int, typer.Option(min=1, max=1 << 20, help="steps T (one validation batch each)")] = 4,
    batch: Annotated[int, typer.Option(min=1, max=4096, help="examples per contributor batch (the program's)")] = 16,
    validation_batch: Annotated[int, typer.Option(min=1, max=4096, help="examples per validation batch")] = 32,
    seed: Annotated[int, typer.Option(min=0, max=2**64 - 1, help="the validation batches' and initial state's")] = 1,
    shapley_every: Annotated[int, typer.Option(min=0, help="exact Shapley on about one step in N (0: never)")] = 0,
    recompute_every: Annotated[
        int, typer.Option(min=0, help="builders recompute about one contribution in N (0: never)")
    ] = 4,
    pool: Annotated[str, typer.Option(help="the pool in ETH, escrowed when posting")] = "1",
    interval: Annotated[int, typer.Option(min=1, help="steps per interval root (divides --steps)")] = 2,
    quorum: Annotated[int, typer.Option(min=2, help="equal builder posts that agree a root")] = 2,
    commit_window: Annotated[int, typer.Option(min=1, help="seconds to commit, per step")] = 600,
    reveal_window: Annotated[int, typer.Option(min=2, help="seconds to reveal, per step")] = 600,
    settle_window: Annotated[int, typer.Option(min=1, help="seconds after the last step for roots")] = 3600,
    claim_window: Annotated[int, typer.Option(min=1, help="seconds after the settle window for claims")] = 3600,
    contributor_bond: Annotated[str, typer.Option(help="contributor bond in ETH")] = "0.01",
    builder_bond: Annotated[str, typer.Option(help="builder bond in ETH")] = "0.1",
    sweep: Annotated[bool, typer.Option(help="after the claim window, take back what nobody claimed")] = False,
    once: Once = False,
    poll: Poll = 1.0,
) -> None:
    """Post the digits ledger (the four-contributor scenario's model, programs and validation set) with its pool,
    then reveal each step's validation batch after its commit deadline; prints `ledger <id>`."""
    from offchain.chain._files import write_json_atomically
    from offchain.chain.errors import ChainError
    from offchain.ledger.agents import LedgerChainError, LedgerClientAgent
    from offchain.ledger.scenario import ScenarioConfig, setup, validation_batches

    if steps % interval:
        raise _fail(f"--interval {interval} does not divide --steps {steps}", EXIT_INPUT)
    pool_wei = _wei(pool, "--pool")
    bonds = _wei(contributor_bond, "--contributor-bond"), _wei(builder_bond, "--builder-bond")
    s = _session("client", rpc, key, account, home, store, deployments, keystore, password_file)
    lc = _ledger_client(s)
    out = _out()
    if ledger is not None:
        path = _record(s.home, ledger)
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            message = f"{s.home} holds no record of ledger {ledger} ({path.name}): post from this --home"
            raise _fail(message, EXIT_INPUT) from None
        config = ScenarioConfig(chain_id=s.chain_id, **saved["config"])
        try:
            agent = LedgerClientAgent(
                "client", lc.chain, lc, s.public, validation=validation_batches(config), ledger_id=ledger,
                observer=_Echo(), sweep=sweep,
            )  # fmt: skip
        except (ChainError, LedgerChainError) as e:
            raise _fail(str(e), EXIT_FAIL) from None
    else:
        fields = {
            "steps": steps, "batch": batch, "validation_batch": validation_batch, "seed": seed,
            "shapley_every": shapley_every, "recompute_every": recompute_every,
        }  # fmt: skip
        config = ScenarioConfig(chain_id=s.chain_id, **fields)  # type: ignore[arg-type]
        start = setup(config, [s.address] * len(config.kinds))
        agent = LedgerClientAgent(
            "client", lc.chain, lc, s.public, validation=start.validation, genesis=start.genesis,
            programs=start.programs.pair, initial_state=start.initial_state, observer=_Echo(), sweep=sweep,
        )  # fmt: skip
        try:
            lid = agent.post(
                pool_wei, interval_steps=interval, quorum=quorum, commit_window=commit_window,
                reveal_window=reveal_window, settle_window=settle_window, claim_window=claim_window,
                contributor_bond=bonds[0], builder_bond=bonds[1],
            )  # fmt: skip
        except (ChainError, LedgerChainError) as e:
            raise _fail(str(e), EXIT_FAIL) from None
        write_json_atomically(_record(s.home, lid), {"ledger": lid, "config": fields}, indent=2)
        out.print(f"ledger {lid}")
    _drive(agent, once=once, poll=poll)


def _follow_args(s: Any, ledger_id: int) -> tuple[Any, Any]:
    lc = _ledger_client(s)
    from offchain.chain.errors import ChainError

    try:
        lc.ledger(ledger_id)
    except ChainError as e:
        raise _fail(str(e), EXIT_FAIL) from None
    return lc, _Echo()


@ledger_app.command("contribute")
def contribute(
    ledger_id: LedgerId,
    kind: Annotated[str, typer.Option(help="whose data: clean, noisy, copy or poison (the scenario's)")] = "clean",
    seed: Annotated[int, typer.Option(min=0, max=2**64 - 1, help="the data's seed (noisy labels)")] = 1,
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = DEFAULT_STORE,
    deployments: Deployments = None,
    once: Once = False,
    poll: Poll = 1.0,
) -> None:
    """A contributor: bond, then each step commit a gradient at the ledger's state and reveal it after the
    validation batch; at the end check the payout root against its own tree, claim its leaf, withdraw its bond."""
    from offchain.ledger.agents import ContributorAgent
    from offchain.ledger.scenario import KINDS, ScenarioConfig, contributors

    if kind not in KINDS:
        raise _fail(f"--kind {kind!r}: the scenario's data are {', '.join(KINDS)}", EXIT_INPUT)
    s = _session("contributor", rpc, key, account, home, store, deployments, keystore, password_file)
    lc, observer = _follow_args(s, ledger_id)
    config = ScenarioConfig(chain_id=s.chain_id, seed=seed)
    me = contributors(config, [s.address] * len(config.kinds))[KINDS.index(kind)]

    def batches(t: int) -> list[Any]:  # as many examples as the ledger's gradient program takes
        return [me.data.batch(me.seed, t, agent.follower.batch_size)]

    agent = ContributorAgent(
        kind, lc.chain, lc, s.public, ledger_id, observer=observer, batches=batches,
        journal=_record(s.home, ledger_id),
    )  # fmt: skip
    _drive(agent, once=once, poll=poll)


@ledger_app.command("build")
def build(
    ledger_id: LedgerId,
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = DEFAULT_STORE,
    deployments: Deployments = None,
    once: Once = False,
    poll: Poll = 1.0,
) -> None:
    """A block builder: bond, build every block from the revealed contributions, post the interval roots and
    the payout root, pull its part of the fee, withdraw its bond."""
    from offchain.ledger.agents import BuilderAgent

    s = _session("builder", rpc, key, account, home, store, deployments, keystore, password_file)
    lc, observer = _follow_args(s, ledger_id)
    agent = BuilderAgent("builder", lc.chain, lc, s.public, ledger_id, observer=observer)
    _drive(agent, once=once, poll=poll)
    if agent.head is not None:
        typer.echo(f"head 0x{agent.head.hex()}")


@ledger_app.command("claim")
def claim(
    ledger_id: LedgerId,
    for_: Annotated[str | None, typer.Option("--for", help="the account to claim for (default: the key's)")] = None,
    rpc: Rpc = DEFAULT_RPC,
    key: Key = None,
    keystore: Keystore = None,
    password_file: PasswordFile = None,
    account: Account = None,
    home: Home = None,
    store: StoreDir = DEFAULT_STORE,
    deployments: Deployments = None,
) -> None:
    """Claim an account's payout leaf: the blocks are rebuilt from the chain and the store, the payout tree from
    them, checked against the agreed payout root; anyone may send the claim."""
    from web3 import Web3

    from offchain.chain.errors import ChainError
    from offchain.ledger.agents import LedgerChainError, LedgerFollower, payout_tree
    from trainer.ledger.errors import LedgerError

    if for_ is not None and not Web3.is_address(for_):
        raise _fail(f"--for {for_!r} is not an address (0x and 40 hex digits)", EXIT_INPUT)
    s = _session("contributor", rpc, key, account, home, store, deployments, keystore, password_file)
    lc, _ = _follow_args(s, ledger_id)
    who = Web3.to_checksum_address(for_ or s.address)
    try:
        view = lc.ledger(ledger_id)
        now = int(lc.chain.w3.eth.get_block("latest")["timestamp"])
        if not view.has_payout or view.refunded:
            raise _fail(f"ledger {ledger_id} has no agreed payout root (or was refunded): nothing to claim", EXIT_FAIL)
        if not view.claims_open(now):
            raise _fail(f"claims on ledger {ledger_id} open at chain time {view.settle_time} (now {now})", EXIT_FAIL)
        f = LedgerFollower(lc, s.public, ledger_id)
        f.advance(view, now)
        if f.stalled or len(f.blocks) < view.params.steps:
            raise _fail(f"the blocks cannot be rebuilt: {f.stalled or 'not every step is over'}", EXIT_FAIL)
        tree = payout_tree(view, f.genesis, f.blocks, s.chain_id)
        if tree.root != view.payout_root:
            raise _fail("the payout root on chain is not the tree of the blocks rebuilt here: not claiming", EXIT_FAIL)
        mine = bytes.fromhex(who[2:].lower())
        index = next((i for i, leaf in enumerate(tree.leaves) if leaf.account == mine), None)
        if index is None:
            raise _fail(f"{who} has no leaf in ledger {ledger_id}'s payout tree", EXIT_FAIL)
        if lc.claimed(ledger_id, index):
            raise _fail(f"leaf {index} ({who}) is already claimed", EXIT_FAIL)
        proof = tree.proof(index)
        receipt = lc.claim(ledger_id, proof)
    except (ChainError, LedgerChainError, LedgerError) as e:
        raise _fail(str(e), EXIT_FAIL) from None
    typer.echo(f"claimed leaf {index}: {proof.amount} wei to {who} (gas {receipt.gas_used})")
