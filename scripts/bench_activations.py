#!/usr/bin/env python3
"""Time the activation and norm kernels (trainer/repops/activations.py, reduce.py's norm block)
against torch's own CPU kernels, and the residual-MLP step (BatchNorm1d, SiLU, LeakyReLU, keyed
dropout, MSE) through the interpreter against the eager step, in the same run, on 2 threads.

Medians of --runs timings, ours and the baseline alternating (bench_repops.paired_medians).
Prints a table and writes out/bench/activations.json: {"machine": {...}, "rows": [{"case",
"ours_s", "baseline_s", "ratio"}]}, ratio = ours_s / baseline_s. Run with the project's venv.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_repops import cpu_model, paired_medians  # noqa: E402

from trainer.repops import KERNELS  # noqa: E402


def _k(name: str) -> Callable[..., Any]:
    return KERNELS[name].fast


def kernel_cases() -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 4096, generator=g) * 4
    gr = torch.randn(256, 4096, generator=g)
    lo, hi = x - 1, x + 1
    img = torch.randn(32, 64, 16, 16, generator=g)
    w, b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    rm, rv = torch.zeros(64), torch.ones(64)
    feats = torch.randn(512, 256, generator=g)
    w1, b1 = torch.randn(256, generator=g), torch.randn(256, generator=g)
    rm1, rv1 = torch.zeros(256), torch.ones(256)
    return [
        ("leaky_relu 256x4096", lambda: _k("aten.leaky_relu.default")(x, 0.1), lambda: F.leaky_relu(x, 0.1)),
        (
            "leaky_relu_backward 256x4096",
            lambda: _k("aten.leaky_relu_backward.default")(gr, x, 0.1, False),
            lambda: torch.ops.aten.leaky_relu_backward(gr, x, 0.1, False),
        ),
        ("hardtanh 256x4096", lambda: _k("aten.hardtanh.default")(x, -1.0, 1.0), lambda: F.hardtanh(x)),
        ("clamp.Tensor 256x4096", lambda: _k("aten.clamp.Tensor")(x, lo, hi), lambda: torch.clamp(x, lo, hi)),
        ("sign 256x4096", lambda: _k("aten.sign.default")(x), lambda: torch.sign(x)),
        ("log1p 256x4096", lambda: _k("aten.log1p.default")(x.abs()), lambda: torch.log1p(x.abs())),
        (
            "batch_norm train 512x256 (+stats)",
            lambda: _k("aten._native_batch_norm_legit_functional.default")(feats, w1, b1, rm1, rv1, True, 0.1, 1e-5),
            lambda: torch.ops.aten._native_batch_norm_legit_functional(feats, w1, b1, rm1, rv1, True, 0.1, 1e-5),
        ),
        (
            "batch_norm train 32x64x16x16 (+stats)",
            lambda: _k("aten._native_batch_norm_legit_functional.default")(img, w, b, rm, rv, True, 0.1, 1e-5),
            lambda: torch.ops.aten._native_batch_norm_legit_functional(img, w, b, rm, rv, True, 0.1, 1e-5),
        ),
        (
            "group_norm 32x64x16x16, 8 groups",
            lambda: _k("aten.native_group_norm.default")(img, w, b, 32, 64, 256, 8, 1e-5),
            lambda: torch.ops.aten.native_group_norm(img, w, b, 32, 64, 256, 8, 1e-5),
        ),
    ]


def step_case() -> tuple[str, Callable[[], object], Callable[[], object]]:
    sys.path.insert(0, str(ROOT))
    from tests.program.test_activations_norms_step import ResMLP, _batch
    from trainer.interp import Interpreter
    from trainer.program import SGDConfig, build_step, capture

    torch.manual_seed(0)
    model = ResMLP()
    step = build_step(model, F.mse_loss, SGDConfig(lr=0.05, momentum=0.9))
    state = step.init_state()
    batch = _batch(model, 0, "mse")
    interp = Interpreter(capture(step, state, batch))
    return (
        "residual MLP step (BN, SiLU, LeakyReLU, dropout, MSE; B=16)",
        lambda: interp.run(state, batch),
        lambda: step.fn(state, batch),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="timed runs per case (default 9, at least 5)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "activations.json")
    args = ap.parse_args()
    runs = max(5, args.runs)
    torch.set_num_threads(args.threads)
    rows = []
    for name, ours, base in [*kernel_cases(), step_case()]:
        t_ours, t_base = paired_medians(ours, base, runs)
        rows.append({"case": name, "ours_s": t_ours, "baseline_s": t_base, "ratio": t_ours / t_base})
    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "runs": runs,
        "load_average": os.getloadavg(),
    }
    print(f"{'case':<58} {'ours ms':>9} {'torch ms':>9} {'ratio':>7}")
    for r in rows:
        print(f"{r['case']:<58} {r['ours_s'] * 1e3:9.3f} {r['baseline_s'] * 1e3:9.3f} {r['ratio']:7.2f}")
    print(f"load average {machine['load_average']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
