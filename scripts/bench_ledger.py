#!/usr/bin/env python3
"""Ledger benchmarks (docs/ledger.md): what attribution and replay cost, and how good first order is.

Cases (medians of alternating runs; ratio = ours / baseline):

- `block+attribution / plain block`: the block program with the validation backward, the
  attribution weights and the exact dot products of every contribution row (`refereed::exact_dot`,
  inside the program since the attribution moved there), against the same block without attribution
  (aggregate, update, validation loss by a forward only).
- `step+attribution / plain step`: the same, each side with the N contributors' gradients of the
  step computed too (the whole work of a step).
- `replay / training`: `Ledger.replay` of every block from genesis against the original run of the
  same blocks (contributions and builds), from the block inputs kept in memory.

Then, on the steps with exact Shapley values, first order against Shapley: Spearman's rank
correlation per step and the relative error per contributor, summed over those steps.

Writes out/bench/ledger.json: {"machine": {...}, "rows": [{case, ours_s, baseline_s, ratio}], "shapley": [...]}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_repops import cpu_model  # noqa: E402  (the same timing as the other benchmarks)
from bench_repops import paired_medians as paired  # noqa: E402

from trainer.interp import Interpreter  # noqa: E402
from trainer.ledger.attribution import FirstOrder, spearman  # noqa: E402
from trainer.ledger.did import did_of  # noqa: E402
from trainer.ledger.ledger import Ledger, StepInputs, batch_commitment, earlier_batches  # noqa: E402
from trainer.ledger.programs import TERMS, LedgerPrograms  # noqa: E402
from trainer.program import SGDConfig  # noqa: E402
from trainer.workloads import keyed_init, mlp_digits  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--contributors", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "ledger.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    console = Console(width=110)

    w = mlp_digits()
    ds = w.dataset
    n, steps = args.contributors, args.steps
    val = [ds.batch(99, t, 128) for t in range(1, steps + 1)]
    lp = LedgerPrograms(w.step.model, w.step.loss_fn, SGDConfig(lr=0.5), n, ds.batch(1, 0, args.batch), val[0])
    state0 = lp.model_state()
    state0.update({k: v for k, v in keyed_init(w.step, 1).items() if k.startswith("param/")})
    genesis = Ledger.create_genesis(
        lp, chain_id=31337, name="bench", initial_state=state0,
        validation_commitments=[batch_commitment(v) for v in val], shapley_every=2,
    )
    ledger = Ledger(lp, genesis)
    dids = [did_of(31337, f"0x{i + 1:040x}") for i in range(n)]

    def batches(i: int, t: int) -> list[dict[str, torch.Tensor]]:
        b = ds.batch(10 + i, t, args.batch)
        if i % 4 == 1:
            b = {"x": b["x"], "y": (b["y"] + 3) % 10}
        if i % 4 == 3:
            b = {"x": b["x"], "y": torch.zeros_like(b["y"])}
        return [b]

    inputs: dict[int, StepInputs] = {}
    blocks = []

    def train() -> None:
        blocks.clear()
        s, parent = state0, genesis.model_id
        for t in range(1, steps + 1):
            inputs[t] = StepInputs([ledger.contribute(d, s, batches(i, t)) for i, d in enumerate(dids)], val[t - 1])
            built = ledger.build(t, parent, s, inputs[t], earlier_batches(blocks))
            blocks.append(built.block)
            s, parent = built.state, built.block.hash

    t0 = time.perf_counter()
    train()
    train_s = time.perf_counter() - t0

    block_i = Interpreter(lp.block_program)
    plain_i = Interpreter(lp.plain_block_program)
    grads = [c.gradients for c in inputs[1].contributions]
    batch = lp.contributions_batch(val[0], grads)

    def with_attr() -> None:  # the attribution is computed inside the program (attr/terms); read it as the ledger does
        out, _ = block_i.run(lp.block_inputs(state0), batch)
        FirstOrder.of_terms(out[TERMS][: len(grads)].tolist())

    def plain() -> None:
        plain_i.run(state0, batch)

    def contributions() -> None:
        for i, d in enumerate(dids):
            ledger.contribute(d, state0, batches(i, 1))

    rows: list[dict[str, Any]] = []
    a, b = paired(with_attr, plain, args.runs)
    rows.append({"case": "block+attribution / plain block", "ours_s": a, "baseline_s": b, "ratio": a / b})
    c, _ = paired(contributions, lambda: None, args.runs)
    rows.append({"case": "step+attribution / plain step", "ours_s": a + c, "baseline_s": b + c,
                 "ratio": (a + c) / (b + c), "contributions_s": c})
    t0 = time.perf_counter()
    ledger.replay(state0, blocks, lambda t: inputs[t])
    replay_s = time.perf_counter() - t0
    rows.append({"case": f"replay / training ({steps} blocks)", "ours_s": replay_s, "baseline_s": train_s,
                 "ratio": replay_s / train_s})

    shapley = []
    per_contrib_first = [Fraction(0)] * n
    per_contrib_shap = [Fraction(0)] * n
    for blk in blocks:
        if blk.shapley is None or len(blk.contributors) != n:
            continue
        fo = blk.phi_values()
        sh = blk.shapley_values() or []
        shapley.append({"step": blk.step, "first_order": fo, "shapley": sh, "spearman": spearman(fo, sh)})
        for i in range(n):
            per_contrib_first[i] += Fraction(fo[i])
            per_contrib_shap[i] += Fraction(sh[i])

    table = Table(title=f"ledger, digits MLP, {n} contributors, batch {args.batch}, {args.threads} threads")
    for col in ("case", "ours (ms)", "baseline (ms)", "ratio"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        table.add_row(r["case"], f"{r['ours_s'] * 1e3:.1f}", f"{r['baseline_s'] * 1e3:.1f}", f"{r['ratio']:.2f}")
    console.print(table)
    st = Table(title="first order against exact Shapley (steps with Shapley values)")
    for col in ("step", "spearman", "first order", "shapley"):
        st.add_column(col)
    for s in shapley:
        st.add_row(str(s["step"]), f"{s['spearman']:.2f}", " ".join(f"{v:+.2e}" for v in s["first_order"]),
                   " ".join(f"{v:+.2e}" for v in s["shapley"]))
    console.print(st)
    pairs = zip(per_contrib_first, per_contrib_shap, strict=True)
    rel = [float(abs(f - s) / abs(s)) if s else float("nan") for f, s in pairs]
    console.print("relative error of summed first order vs summed Shapley, per contributor: "
                  + ", ".join(f"{dids[i][-6:]}: {rel[i]:.2%}" for i in range(n)))
    machine = {"platform": platform.platform(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
               "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
               "threads": torch.get_num_threads(), "runs": args.runs, "load_average": os.getloadavg()}
    console.print(f"{machine['cpu']}, {machine['cpu_capability']}, load average {machine['load_average']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows, "shapley": shapley,
                                    "relative_error": rel}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
