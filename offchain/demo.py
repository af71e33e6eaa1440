"""The main job, at this stage of the protocol: commitments end to end on a real chain.

`./scripts/demo` runs `python -m offchain.demo`. It starts anvil, deploys the contracts,
commits the initial parameters of a torch MLP (a state root over per-tensor Merkle
commitments, docs/commitments.md), then proves one weight to the chain: the state entry
of the weight tensor against the state root, and one element against the tensor's
commitment, in a transaction whose gas it reports. A forged opening (the same element one
ulp off) must be rejected by the contract. Later stages (training, disputes, payouts)
grow this script; it shows only what exists.

Writes `out/demo/report.json`; exits non-zero if any check fails.
"""

from __future__ import annotations

import json
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import torch
import typer
from rich.console import Console
from rich.table import Table

from offchain.chain.anvil import Anvil
from offchain.chain.build import compile_contracts, repo_root
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.chain.errors import ContractRevert
from offchain.contracts.commitment_verifier import CommitmentVerifierClient
from trainer.commit import CHUNK, ElementOpening, commit_tensor, leaf_hash, open_element, state_entry, verify_element
from trainer.commit.records import state_tree_from_commitments


@dataclass(frozen=True, slots=True)
class MLPConfig:
    """The digits MLP the later stages train: 8x8 images in, 10 classes out."""

    d_in: int = 64
    d_hidden: int = 128
    d_out: int = 10
    seed: int = 2026


def build_mlp(cfg: MLPConfig) -> torch.nn.Module:
    torch.manual_seed(cfg.seed)
    return torch.nn.Sequential(
        torch.nn.Linear(cfg.d_in, cfg.d_hidden), torch.nn.GELU(), torch.nn.Linear(cfg.d_hidden, cfg.d_out)
    )


class Timeline:
    """Wall time of each phase, for the report."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, what: str) -> Iterator[None]:
        self.console.rule(f"[bold]{name}[/]: {what}", align="left")
        t0 = time.perf_counter()
        yield
        self.phases[name] = round(time.perf_counter() - t0, 3)


def f32(bits: int) -> float:
    return float(struct.unpack("<f", bits.to_bytes(4, "little"))[0])


def forged(op: ElementOpening) -> ElementOpening:
    """The same opening with the element's float32 bits moved by one ulp."""
    off = (op.index * 4) % CHUNK
    bits = int.from_bytes(op.chunk[off : off + 4], "little") + 1
    chunk = op.chunk[:off] + bits.to_bytes(4, "little") + op.chunk[off + 4 :]
    return ElementOpening(op.dtype, op.shape, op.index, chunk, op.proof)


def run(out_dir: Path, cfg: MLPConfig, console: Console) -> dict[str, Any]:
    timeline = Timeline(console)
    report: dict[str, Any] = {"stage": "commitments", "checks": {}}
    checks: dict[str, bool] = report["checks"]

    with timeline.phase("build", "compile the contracts (py-solc-x through the solc-js shim)"):
        artifacts = compile_contracts()
        console.print(f"compiled {len(artifacts)} units: {', '.join(sorted(artifacts))}")

    with timeline.phase("chain", "start a local anvil"), Anvil() as node:
        console.print(f"anvil on {node.rpc_url}, chain id {node.chain_id}")
        deployer = node.accounts[0]
        client = ChainClient(node.rpc_url, deployer.private_key, artifacts=artifacts.values())

        with timeline.phase("deploy", "deploy the protocol contracts"):
            deployment = deploy_all(client, artifacts=artifacts, out_dir=out_dir / "deployments")
            for name, rec in deployment.contracts.items():
                console.print(f"{name} at {rec.address} (tx {rec.tx_hash[:12]}..)")
        verifier = CommitmentVerifierClient(
            client, deployment.address("CommitmentVerifier"), artifacts["CommitmentVerifier"]
        )

        with timeline.phase("commit", "commit the MLP's initial parameters"):
            state = build_mlp(cfg).state_dict()
            commitments = {name: commit_tensor(t) for name, t in state.items()}
            names, tree = state_tree_from_commitments(commitments)
            table = Table("tensor", "dtype", "shape", "commitment")
            for name in names:
                t = state[name]
                table.add_row(name, str(t.dtype).removeprefix("torch."), str(tuple(t.shape)), commitments[name].hex())
            console.print(table)
            console.print(f"state root [bold]0x{tree.root.hex()}[/]")
            report["state_root"] = "0x" + tree.root.hex()

        name = "2.weight"  # the output layer's weight matrix, 10 x 128 floats = 5 KiB: two chunks
        weight = state[name]
        index = weight.numel() - 7  # an element in the second, shorter chunk
        with timeline.phase("prove", f"open {name}[{index}] and verify it on chain"):
            i = names.index(name)
            entry_leaf = leaf_hash(state_entry(name, commitments[name]))
            verifier.verify_leaf(tree.root, entry_leaf, tree.open(i))
            console.print(f"state entry {name!r} (leaf {i} of {tree.count}) verified against the state root (eth_call)")
            checks["state_entry_on_chain"] = True

            opening = open_element(weight, index)
            local_bits = verify_element(commitments[name], opening)
            result = verifier.verify_element(commitments[name], opening)
            value = f32(result.value_bits)
            checks["element_on_chain"] = (
                result.value_bits == local_bits == weight.view(torch.int32).reshape(-1)[index].item() & 0xFFFFFFFF
            )
            console.print(
                f"element {name}{tuple(divmod(index, weight.shape[1]))} = [bold]{value!r}[/] "
                f"(bits 0x{result.value_bits:08x}), chunk {opening.proof.index} of {opening.proof.count}, "
                f"{len(opening.proof.siblings)} siblings: verified on chain in tx {result.tx_hash[:12]}.., "
                f"[bold]{result.gas_used:,} gas[/]"
            )
            report["element"] = {
                "tensor": name,
                "index": index,
                "value": value,
                "bits": f"0x{result.value_bits:08x}",
                "gas_used": result.gas_used,
                "chunk_bytes": len(opening.chunk),
                "tx": result.tx_hash,
            }

        with timeline.phase("forgery", "the same element one ulp off must be rejected"):
            try:
                verifier.element_value(commitments[name], forged(opening))
            except ContractRevert as e:
                checks["forgery_rejected"] = e.error_name == "TensorCommitmentMismatch"
                console.print(f"rejected: {e}")
            else:
                checks["forgery_rejected"] = False
                console.print("[red]the forged opening was accepted[/]")

    report["phases_s"] = timeline.phases
    report["ok"] = all(checks.values())
    return report


def main(out: Annotated[Path, typer.Option(help="where report.json goes")] = Path("out/demo")) -> None:
    console = Console(width=None if sys.stdout.isatty() else 110, highlight=False)
    out_dir = (repo_root() / out) if not out.is_absolute() else out
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    report = run(out_dir, MLPConfig(), console)
    report["wall_s"] = round(time.perf_counter() - t0, 3)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    console.rule("[bold]summary[/]", align="left")
    for check, ok in report["checks"].items():
        console.print(f"{'[green]ok[/]' if ok else '[red]FAILED[/]'}  {check}")
    console.print(f"report: {out_dir / 'report.json'}  ({report['wall_s']} s)")
    if not report["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    typer.run(main)
