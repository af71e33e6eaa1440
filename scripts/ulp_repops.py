"""Measure the error of RepOps' elementwise functions in ulp of fp32.

Inputs: a dense sample of all finite fp32 values (every `--stride`-th bit pattern of both
signs, so every binade and the subnormals are covered evenly) plus every fp32 value in the
edge regions of each function (around 0, the branch points and the overflow/underflow
thresholds). Reference: float64 numpy/scipy functions (about 1 ulp of binary64, 2^-29 ulp of
fp32); for each function the worst inputs are recomputed with mpmath at 50 digits, and the
max reported is the mpmath one.

Error of an fp32 result o against the exact value v: |o - v| / ulp(v), ulp(v) = 2^(e - 23)
with e = max(floor(log2 |v|), -126); exact values beyond the fp32 range are skipped (the
results there are checked to be +-inf or 0 by the tests). A correctly rounded function has
max error <= 0.5.

    .venv/bin/python scripts/ulp_repops.py            # writes out/bench/ulp.json
    .venv/bin/python scripts/ulp_repops.py --stride 4096 --quick
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import mpmath
import numpy as np
import scipy.special as sp
import torch

from trainer.repops import mathfn as M

_F32_MAX = float(np.finfo(np.float32).max)
_K = math.sqrt(2.0 / math.pi)


def _gelu_tanh64(x: np.ndarray) -> np.ndarray:
    return x * sp.expit(2.0 * _K * (x + 0.044715 * x * x * x))


def _gelu_tanh_mp(x: mpmath.mpf) -> mpmath.mpf:
    z = 2 * mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
    return x / (1 + mpmath.exp(-z))


# name -> (fast kernel, float64 reference, mpmath reference, edge points)
CASES: dict[
    str,
    tuple[
        Callable[[torch.Tensor], torch.Tensor],
        Callable[[np.ndarray], np.ndarray],
        Callable[[mpmath.mpf], mpmath.mpf],
        list[float],
    ],
] = {
    "exp": (M.exp, np.exp, mpmath.exp, [0.0, 88.72, -87.3, -103.28, 1.0, -1.0]),
    "log": (M.log, np.log, mpmath.log, [1.0, 0.7071, 1.4142, 1e-38, 1e-45, 3e38]),
    "sqrt": (M.sqrt, np.sqrt, mpmath.sqrt, [1.0, 2.0, 1e-45, 1e-38]),
    "rsqrt": (M.rsqrt, lambda x: 1.0 / np.sqrt(x), lambda x: 1 / mpmath.sqrt(x), [1.0, 2.0, 1e-45, 3e38]),
    "tanh": (M.tanh, np.tanh, mpmath.tanh, [0.0, 0.17, 0.35, 1.0, 9.0, 1e-4]),
    "sigmoid": (M.sigmoid, sp.expit, lambda x: 1 / (1 + mpmath.exp(-x)), [0.0, -88.0, -103.0, 17.0]),
    "erf": (M.erf, sp.erf, mpmath.erf, [0.0, 0.75, -0.75, 3.9, 1e-3]),
    "gelu": (M.gelu, lambda x: x * sp.ndtr(x), lambda x: x * mpmath.ncdf(x), [0.0, 1.0607, -1.0607, -14.0, 5.0]),
    "gelu_tanh": (lambda t: M.gelu(t, "tanh"), _gelu_tanh64, _gelu_tanh_mp, [0.0, -10.0, -14.0, 3.0]),
}


def sample(stride: int, edge_points: list[float], edge_width: int) -> np.ndarray:
    """Every `stride`-th fp32 bit pattern of both signs (finite only), plus `edge_width`
    consecutive fp32 values on each side of every edge point."""
    pos = np.arange(0, 0x7F800000, stride, dtype=np.uint32)
    parts = [pos, pos | np.uint32(0x80000000)]
    for p in edge_points:
        for v in (p, -p):
            b = int(np.array(v, dtype=np.float32).view(np.uint32))
            lo = max(b - edge_width, 0 if b < 0x80000000 else 0x80000000)
            hi = min(b + edge_width, 0x7F7FFFFF if b < 0x80000000 else 0xFF7FFFFF)
            parts.append(np.arange(lo, hi + 1, dtype=np.uint32))
    bits = np.unique(np.concatenate(parts))
    return bits.view(np.float32)


def ulp_of(v: np.ndarray) -> np.ndarray:
    _, e = np.frexp(v)  # v = m * 2^e, m in [0.5, 1): floor(log2|v|) = e - 1
    return np.ldexp(1.0, np.maximum(e - 1, -126) - 23)


def measure(name: str, stride: int, edge_width: int, chunk: int = 1 << 20) -> dict[str, float | int | str]:
    fast, ref64, refmp, edges = CASES[name]
    xs = sample(stride, edges, edge_width)
    worst: list[tuple[float, float]] = []  # (err, x)
    total = 0.0
    count = 0
    above_half = 0
    t0 = time.perf_counter()
    for i in range(0, len(xs), chunk):
        x = xs[i : i + chunk]
        out = fast(torch.from_numpy(x)).numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            ref = ref64(x.astype(np.float64))
        ok = np.isfinite(ref) & (np.abs(ref) <= _F32_MAX) & np.isfinite(out)
        err = np.abs(out[ok] - ref[ok]) / ulp_of(ref[ok])
        total += float(err.sum())
        count += int(err.size)
        above_half += int((err > 0.5).sum())
        top = np.argsort(err)[-8:]
        worst.extend((float(err[j]), float(x[ok][j])) for j in top)
    seconds = time.perf_counter() - t0
    worst.sort(reverse=True)
    mpmath.mp.dps = 50
    max_err = 0.0
    max_x = 0.0
    for _, xv in worst[:24]:
        o = float(fast(torch.tensor([xv], dtype=torch.float32)).item())
        v = refmp(mpmath.mpf(xv))
        e = float(abs(mpmath.mpf(o) - v) / ulp_of(np.array([float(v)]))[0])
        if e > max_err:
            max_err, max_x = e, xv
    return {
        "function": name,
        "inputs": count,
        "max_ulp": max_err,
        "worst_input": float(max_x).hex(),
        "mean_ulp": total / max(count, 1),
        "above_half_ulp": above_half,
        "seconds": seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stride", type=int, default=256, help="take every stride-th fp32 bit pattern")
    ap.add_argument("--edge-width", type=int, default=1 << 16, help="fp32 values on each side of an edge point")
    ap.add_argument("--only", nargs="*", default=None, help="function names to measure")
    ap.add_argument("--quick", action="store_true", help="small edge regions (for a smoke run)")
    ap.add_argument("--out", default="out/bench/ulp.json")
    args = ap.parse_args()
    edge = 1 << 8 if args.quick else args.edge_width
    rows = [measure(n, args.stride, edge) for n in (args.only or list(CASES))]
    print(f"{'function':<10} {'inputs':>10} {'max ulp':>12} {'mean ulp':>10} {'> 0.5 ulp':>10}  worst input")
    for r in rows:
        print(
            f"{r['function']:<10} {r['inputs']:>10} {r['max_ulp']:>12.6f} {r['mean_ulp']:>10.4f} "
            f"{r['above_half_ulp']:>10}  {r['worst_input']}"
        )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stride": args.stride, "edge_width": edge, "rows": rows}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
