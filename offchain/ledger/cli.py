"""`refereed ledger ...`: a ledger's blocks, attribution and replay (docs/ledger.md).

    refereed ledger simulate [--steps 24]    train the four-contributor digits ledger off chain
                                             (clean, noisy, copy, poison) and publish it; prints its head
    refereed ledger show HEAD                its blocks and each contributor's attribution
    refereed ledger verify-replay HEAD       replay every block from genesis; fails naming the first block
                                             whose root does not reproduce, refuses other kernels

A ledger is named by its head's digest in the public store (`--store`) until the TrainingLedger
contract holds heads on chain (not built yet).
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

ledger_app = typer.Typer(
    help="the training ledger: blocks, attribution by marginal loss reduction, replay from genesis",
    no_args_is_help=True,
)

StoreDir = Annotated[Path, typer.Option("--store", help="the public store shared by every party")]
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


def _wei(text: str) -> int:
    from offchain.inputs import InputError, parse_eth

    try:
        return parse_eth(text, "--pool")
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
    head: Annotated[str, typer.Argument(help="the ledger's head digest (hex)")],
    store: StoreDir = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    figure: Annotated[Path | None, typer.Option(help="write the attribution figure (PNG) here")] = None,
    pool: Annotated[
        str | None, typer.Option(help="also split a pool of this many ETH by the genesis payout rule")
    ] = None,
) -> None:
    """A ledger's blocks and each contributor's attribution (and payout of --pool ETH)."""
    from offchain.ledger.published import fetch
    from offchain.store.errors import StoreError
    from trainer.ledger.errors import LedgerError

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
