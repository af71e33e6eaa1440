"""`./scripts/demo --ledger`: the training ledger on a fresh anvil chain, paid out by attribution.

A client posts the digits ledger (docs/ledger.md) on the real TrainingLedger with a pool; the four
contributors of the scenario (clean, noisy, copy, poison) commit and reveal their gradients each step;
three builders (quorum 2) build every block with trainer.ledger, post the interval and payout roots
and pull their fee; every contributor claims its leaf. The agents run in one process (`Devnet`),
which moves the chain's clock to the next window when every agent waits. Prints a table per
contributor (Σφ, the exact-Shapley check on the sampled steps, payout, share, claimed, gas) and
writes `out/demo/ledger/report.json` and `report.png` (cumulative attribution and the attribution
graph). `--misattribute` makes one builder post blocks with the attribution reversed: the ledger
freezes and the pool goes back to the client (section 8: resolving it through the game is not built).
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from offchain.agents.devnet import Devnet
from offchain.chain.anvil import Anvil
from offchain.chain.build import compile_contracts
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.contracts.training_ledger import FEE_INDEX, TrainingLedgerClient
from offchain.ledger.agents import BuilderAgent, ContributorAgent, LedgerClientAgent, LedgerFollower
from offchain.ledger.plot import plot
from offchain.ledger.scenario import ScenarioConfig, setup
from offchain.store import Store
from trainer.ledger.attribution import spearman
from trainer.ledger.block import Block
from trainer.ledger.did import did_of
from trainer.ledger.graph import cumulative
from trainer.ledger.shares import forfeited

ETH = 10**18
STEPS = 24
SHAPLEY_EVERY = 8
RECOMPUTE_EVERY = 4  # the builders recompute about one contribution in four (docs/ledger.md, section 7)


class _Console:
    def __init__(self, console: Console) -> None:
        self.console = console

    def event(self, agent: str, message: str) -> None:
        self.console.print(f"[dim]{agent:>9}[/] {message}")

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass


def _misattribute(block: Block) -> Block:
    return dataclasses.replace(block, phi=tuple(reversed(block.phi)))


def gas_paid(chain: ChainClient, first_block: int) -> dict[str, int]:
    """Wei each account paid for gas from `first_block` on, from every mined transaction's receipt."""
    w3 = chain.w3
    paid: dict[str, int] = {}
    for n in range(first_block, w3.eth.block_number + 1):
        for tx_hash in w3.eth.get_block(n)["transactions"]:
            tx = w3.eth.get_transaction(tx_hash)
            r = w3.eth.get_transaction_receipt(tx_hash)
            paid[tx["from"]] = paid.get(tx["from"], 0) + int(r["gasUsed"]) * int(r["effectiveGasPrice"])
    return paid


def shapley_check(blocks: Sequence[Block]) -> dict[str, dict[str, Any]]:
    """Per contributor, on the blocks with Shapley values: Σ φ and Σ Shapley over those steps, the
    relative error |Σφ - ΣSh| / |ΣSh| and the rank correlation (Spearman) of φ(c, t) and Sh(c, t)
    over those steps (None with fewer than two, or a constant side)."""
    sampled = [b for b in blocks if b.shapley is not None]
    out: dict[str, dict[str, Any]] = {}
    for b in sampled:
        for d, phi, sh in zip(b.contributors, b.phi_values(), b.shapley_values() or [], strict=True):
            r = out.setdefault(d, {"steps": [], "phi": [], "shapley": []})
            r["steps"].append(b.step)
            r["phi"].append(phi)
            r["shapley"].append(sh)
    for r in out.values():
        fo, sh = sum(r["phi"]), sum(r["shapley"])
        r["phi_sum"], r["shapley_sum"] = fo, sh
        r["relative_error"] = abs(fo - sh) / abs(sh) if sh else None
        rho = spearman(r["phi"], r["shapley"]) if len(r["phi"]) >= 2 else float("nan")
        r["spearman"] = None if math.isnan(rho) else rho
    return out


def run(
    console: Console,
    out_dir: Path,
    *,
    steps: int = STEPS,
    pool: int = ETH,
    misattribute: bool = False,
    shapley_every: int = SHAPLEY_EVERY,
) -> dict[str, Any]:
    """Run the ledger on a fresh anvil; the report (also written to `out_dir/report.json`, the figure to
    `out_dir/report.png`)."""
    t0 = time.perf_counter()
    artifacts = compile_contracts()
    with Anvil(accounts=10) as node, tempfile.TemporaryDirectory() as tmp:
        accounts = node.accounts
        deployer = ChainClient(node.rpc_url, accounts[9].private_key, artifacts=artifacts.values())
        lc = TrainingLedgerClient.from_deployment(deployer, deploy_all(deployer, artifacts=artifacts, write=False))
        config = ScenarioConfig(
            steps=steps, batch=16, validation_batch=32, shapley_every=shapley_every, chain_id=node.chain_id,
            recompute_every=RECOMPUTE_EVERY,
        )  # fmt: skip
        s = setup(config, [a.address for a in accounts[1:5]])
        store = Store(Path(tmp) / "public")
        observer = _Console(console)
        before = {a.address: deployer.balance(a.address) for a in accounts[:8]}
        first_block = deployer.block_number() + 1

        def chain(i: int) -> ChainClient:
            return ChainClient(node.rpc_url, accounts[i].private_key, artifacts=artifacts.values())

        client = LedgerClientAgent(
            "client", chain(0), lc, store, validation=s.validation, genesis=s.genesis,
            programs=s.programs.pair, initial_state=s.initial_state, observer=observer,
        )  # fmt: skip
        lid = client.post(pool, interval_steps=2 if steps % 2 == 0 else 1, quorum=2)
        # The honest agents share one follower: each block (and its Shapley values) is built once, not by
        # each of seven agents (the anvil tests run independent followers and check they agree, hash for hash).
        shared = LedgerFollower(lc, store, lid)
        contributors = [
            ContributorAgent(
                p.kind,
                chain(1 + i),
                lc,
                store,
                lid,
                observer=observer,
                batches=lambda t, p=p: [p.data.batch(p.seed, t, config.batch)],
                follower=shared,
            )
            for i, p in enumerate(s.contributors)
        ]
        builders = [
            BuilderAgent(
                f"builder{j}",
                chain(5 + j),
                lc,
                store,
                lid,
                observer=observer,
                tamper=_misattribute if misattribute and j == 2 else None,
                follower=None if misattribute and j == 2 else shared,
            )
            for j in range(3)
        ]
        agents: list[Any] = [*contributors, *builders, client]
        devnet = Devnet(node.rpc_url, agents, observer=observer)
        devnet.run(lambda: all(a.finished for a in agents), timeout_s=600)
        view = lc.ledger(lid)
        claims = lc.events("Claimed", {"id": lid})
        paid = {e["account"]: int(e["amount"]) for e in claims if e["index"] != FEE_INDEX}
        fees = {e["account"]: int(e["amount"]) for e in claims if e["index"] == FEE_INDEX}
        blocks = shared.blocks
        totals = {d: ys[-1] for d, ys in cumulative(blocks).items()}
        check = shapley_check(blocks)
        sampled = [b.step for b in blocks if b.shapley is not None]
        g = s.genesis
        recomputed = [
            (b.step, d) for b in blocks for d in (*b.contributors, *(r for r, _ in b.refused))
            if g.recompute_due(b.step, b.draw, d)
        ]  # fmt: skip
        paid_gas = gas_paid(deployer, first_block)
        gas = {a.address: paid_gas.get(a.address, 0) for a in agents}
        change = {a: deployer.balance(a) - b for a, b in before.items()}
        report: dict[str, Any] = {
            "ledger": lid,
            "steps": steps,
            "shapley_every": shapley_every,
            "shapley_steps": sampled,
            "recompute_every": g.recompute_every,
            "recomputed": len(recomputed),
            "recomputed_of": sum(len(b.contributors) + len(b.refused) for b in blocks),
            "pool_wei": pool,
            "frozen": view.frozen,
            "refunded": view.refunded,
            "chain_seconds_skipped": devnet.warped_s,
            "contract_balance_wei": lc.balance(),
            "head": None if builders[0].head is None else "0x" + builders[0].head.hex(),
            "contributors": [
                {
                    "kind": c.name,
                    "address": c.address,
                    "attribution": float(totals.get(did_of(node.chain_id, c.address), 0)),
                    "shapley_check": {k: v for k, v in check.get(c.did, {}).items() if k not in ("phi", "shapley")}
                    or None,
                    "payout_wei": paid.get(c.address, 0),
                    "share": paid.get(c.address, 0) / pool,
                    "claimed": c.claimed_amount is not None and c.claimed_amount > 0,
                    "gas_wei": gas[c.address],
                    "balance_change_wei": change[c.address],
                }
                for c in contributors
            ],
            "builders": [
                {"name": b.name, "address": b.address, "fee_wei": fees.get(b.address, 0), "gas_wei": gas[b.address]}
                for b in builders
            ],
            "client": {
                "address": client.address,
                "gas_wei": gas[client.address],
                "balance_change_wei": change[client.address],
            },
        }
        exact = all(r["balance_change_wei"] == r["payout_wei"] - r["gas_wei"] for r in report["contributors"])
        exact = exact and all(change[b["address"]] == b["fee_wei"] - b["gas_wei"] for b in report["builders"])
        exact = exact and change[client.address] == -gas[client.address] - (0 if view.refunded else pool)
        report["checks"] = {
            "every_balance_change_is_payout_minus_gas": exact,
            "the_contract_holds_nothing": report["contract_balance_wei"] == 0,
            "the_whole_pool_is_paid_or_refunded": view.paid == view.pool,
            "every_recomputed_contribution_reproduced": not forfeited(blocks),
        }
        labels = {c.did: c.name for c in contributors}
    out_dir.mkdir(parents=True, exist_ok=True)
    if blocks:
        plot(blocks, out_dir / "report.png", labels)
        report["figure"] = str(out_dir / "report.png")
    report["wall_s"] = round(time.perf_counter() - t0, 2)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    _summary(console, report)
    return report


def _gwei(wei: int) -> str:
    return f"{wei / 10**9:,.0f}"


def _summary(console: Console, report: dict[str, Any]) -> None:
    state = "frozen, pool refunded to the client" if report["frozen"] else "paid out by attribution"
    table = Table(title=f"ledger {report['ledger']}: {report['steps']} steps, {state}", box=box.SIMPLE_HEAD)
    cols = ("party", "Σ φ", "Σ φ on Sh.", "Σ Shapley", "rel err", "rho",
            "payout wei", "share", "claimed", "gas gwei")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col == "party" else "right", no_wrap=col == "payout wei")
    pool = report["pool_wei"]

    def num(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    for r in report["contributors"]:
        sc = r["shapley_check"] or {}
        table.add_row(
            r["kind"], f"{r['attribution']:+.2e}", num(sc.get("phi_sum"), "+.2e"),
            num(sc.get("shapley_sum"), "+.2e"), num(sc.get("relative_error"), ".1%"), num(sc.get("spearman"), "+.2f"),
            str(r["payout_wei"]), f"{r['payout_wei'] / pool:.2%}", "yes" if r["claimed"] else "no", _gwei(r["gas_wei"]),
        )  # fmt: skip
    for b in report["builders"]:
        table.add_row(b["name"], "", "", "", "", "", str(b["fee_wei"]),
                      f"{b['fee_wei'] / pool:.2%}", "fee" if b["fee_wei"] else "no", _gwei(b["gas_wei"]))  # fmt: skip
    console.print(table)
    console.print(
        f"exact Shapley values on steps {report['shapley_steps']} (shapley_every = {report['shapley_every']}); "
        "Σ φ on Sh.: Σ φ over those steps; rho: Spearman's correlation of φ(c, t) and Shapley(c, t) over them"
    )
    for check, ok in report["checks"].items():
        console.print(f"{'[green]ok[/]' if ok else '[red]FAILED[/]'}  {check.replace('_', ' ')}")
    console.print(
        f"builders recomputed {report['recomputed']} of {report['recomputed_of']} contributions "
        f"(about one in {report['recompute_every']}), each from its committed batches"
    )
    console.print(f"chain clock moved {report['chain_seconds_skipped']} s; wall {report['wall_s']} s")
