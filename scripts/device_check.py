#!/usr/bin/env python3
"""RepOps on a CUDA GPU against the CPU bits, and the exact matmul's speed there.

Run by scripts/device_check.sh (a budget of under 5 minutes on one GPU). Checks, in order:

1. every node of one training step of each workload (mlp_digits, char_transformer), run by the
   RepOps interpreter on CUDA, against the same node on CPU: the same bits, per operator;
2. the state root after that step on CUDA equal to the CPU root;
3. the exact matrix products on CUDA, each engine (f64, int8) forced and the calibrated
   choice, against the CPU native path bit for bit, on the workloads' shapes, the benchmark
   shapes and special values (+-0, subnormals, +-inf, NaN, exponent spreads), mm and bmm;
4. speed: exact mm at 4096^3 (each engine) against cuBLAS SGEMM with TF32 off and with TF32
   on, in the same run (CUDA events, medians).

`--device cpu` is a dry run on a machine without a GPU: the "device" side then runs every
kernel with the native CPU libraries switched off (REFEREED_NATIVE=0), i.e. the torch-op code
that CUDA runs, against the default CPU path, and skips the CUDA timings.

Prints a summary and writes a JSON report ({"machine", "checks", "timings", "ok"}) to
$OUT/device_check.json if OUT is set, else out/bench/device_check.json. Exit status 0 when
every bit check passed, 1 when one failed, 2 when no GPU is present.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.commit import state_root  # noqa: E402
from trainer.interp import Interpreter  # noqa: E402
from trainer.repops import linalg  # noqa: E402
from trainer.workloads import char_transformer, mlp_digits  # noqa: E402


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        width = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16}[a.dtype]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


@contextlib.contextmanager
def device_side(dev: torch.device) -> Iterator[None]:
    """On a CPU dry run, the device side runs the torch-op code (native libraries off)."""
    if dev.type != "cpu":
        yield
        return
    saved = os.environ.get("REFEREED_NATIVE")
    os.environ["REFEREED_NATIVE"] = "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["REFEREED_NATIVE"]
        else:
            os.environ["REFEREED_NATIVE"] = saved


def check_workloads(dev: torch.device, deadline: float) -> list[dict[str, Any]]:
    rows = []
    for w in (mlp_digits(), char_transformer()):
        if time.monotonic() > deadline:
            rows.append({"check": f"step {w.name}", "ok": False, "error": "time budget spent before this check"})
            continue
        program = w.program
        state = w.initial_state()
        batch = w.dataset.batch(w.config.seed, 0, w.config.batch_size)
        cpu, gpu = Interpreter(program), Interpreter(program, device=dev)
        vals_cpu = cpu.node_values(state, batch)
        with device_side(dev):
            vals_gpu = gpu.node_values(state, batch)
        per_op: dict[str, list[int]] = {}
        first_bad = None
        for i, (node, vc, vg) in enumerate(zip(program.nodes, vals_cpu, vals_gpu, strict=True)):
            ok = len(vc) == len(vg) and all(same_bits(x, y) for x, y in zip(vc, vg, strict=True))
            tally = per_op.setdefault(node.op, [0, 0])
            tally[0] += 1
            tally[1] += 0 if ok else 1
            if not ok and first_bad is None:
                first_bad = {"node": i, "op": node.op, "shapes": [list(t.shape) for t in vc]}
        new_cpu, loss_cpu = cpu.run(state, batch)
        with device_side(dev):
            new_gpu, loss_gpu = gpu.run(state, batch)
        root_cpu = state_root(new_cpu).hex()
        root_gpu = state_root({k: v.cpu() for k, v in new_gpu.items()}).hex()
        rows.append(
            {
                "check": f"step {w.name}: every node on CUDA == CPU",
                "ok": first_bad is None,
                "nodes": len(program.nodes),
                "per_op": {op: {"nodes": n, "mismatches": bad} for op, (n, bad) in sorted(per_op.items())},
                "first_mismatch": first_bad,
            }
        )
        rows.append(
            {
                "check": f"step {w.name}: state root on CUDA == CPU",
                "ok": root_cpu == root_gpu and same_bits(loss_cpu, loss_gpu),
                "cpu_root": root_cpu,
                "gpu_root": root_gpu,
            }
        )
    return rows


def _sample(shape: tuple[int, ...], kind: str, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "spread":
        x = x * torch.exp2(torch.randint(-100, 100, shape, generator=g).float())
    elif kind == "subnormal":
        x = x * 2.0**-140
    elif kind == "special":
        pick = torch.rand(shape, generator=g)
        x = torch.where(pick < 0.05, torch.tensor(-0.0), x)
        x = torch.where((pick >= 0.05) & (pick < 0.051), torch.tensor(math.inf), x)
        x = torch.where((pick >= 0.051) & (pick < 0.052), torch.tensor(float("nan")), x)
    return x.contiguous()


MM_SHAPES = [  # (batch, M, K, N): workload-like, odd (CUDA int8 padding), benchmark, weight gradient
    (1, 64, 64, 10),
    (1, 64, 784, 128),
    (1, 128, 64, 784),
    (1, 17, 33, 9),
    (1, 1000, 1000, 1000),
    (1, 512, 8192, 512),
    (8, 128, 32, 128),
    (8, 128, 128, 32),
]


def check_matmul(dev: torch.device, deadline: float) -> list[dict[str, Any]]:
    rows = []
    for nb, m, k, n in MM_SHAPES:
        for kind in ("normal", "spread", "subnormal", "special"):
            if time.monotonic() > deadline:
                rows.append({"check": f"mm {nb}x{m}x{k}x{n} {kind}", "ok": False, "error": "time budget spent"})
                continue
            shape_a = (m, k) if nb == 1 else (nb, m, k)
            shape_b = (k, n) if nb == 1 else (nb, k, n)
            a, b = _sample(shape_a, kind, m + k), _sample(shape_b, kind, n + k + 1)
            want = linalg.matmul_exact(a, b, "f64")  # CPU (native passes when built)
            got: dict[str, bool] = {}
            for engine in (*linalg.ENGINES, None):
                if dev.type == "cpu" and engine == "int8" and nb * m * k * n > 1 << 22:
                    continue  # a dry run: the CPU's int8 GEMM without VNNI is a plain loop
                try:
                    with device_side(dev):
                        out = linalg.matmul_exact(a.to(dev), b.to(dev), engine)
                    got[engine or "calibrated"] = same_bits(out, want)
                except Exception as exc:  # report, keep checking the rest
                    got[engine or "calibrated"] = False
                    rows.append({"check": f"mm {nb}x{m}x{k}x{n} {kind} {engine}", "ok": False, "error": repr(exc)})
            rows.append({"check": f"mm {nb}x{m}x{k}x{n} {kind}: CUDA engines == CPU", "ok": all(got.values()), **got})
    return rows


def _cuda_median(f: Callable[[], object], runs: int) -> float:
    for _ in range(2):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def timings(dev: torch.device, size: int, runs: int) -> list[dict[str, Any]]:
    a, b = torch.randn(size, size, device=dev), torch.randn(size, size, device=dev)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        sgemm = _cuda_median(lambda: torch.mm(a, b), runs)
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32 = _cuda_median(lambda: torch.mm(a, b), runs)
        torch.backends.cuda.matmul.allow_tf32 = False
        rows = [
            {"case": f"cuBLAS SGEMM {size}^3, TF32 off", "seconds": sgemm, "ratio_to_sgemm": 1.0},
            {"case": f"cuBLAS {size}^3, TF32 on", "seconds": tf32, "ratio_to_sgemm": tf32 / sgemm},
        ]
        for engine in linalg.ENGINES:
            t = _cuda_median(lambda e=engine: linalg.matmul_exact(a, b, e), runs)  # type: ignore[misc]
            rows.append(
                {"case": f"RepOps exact mm {size}^3 [{engine}]", "seconds": t, "ratio_to_sgemm": t / sgemm,
                 "ratio_to_tf32": t / tf32}
            )  # fmt: skip
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-s", type=float, default=240.0, help="stop starting new checks after this (default 240)")
    ap.add_argument("--size", type=int, default=4096, help="matmul timing size (default 4096)")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a dry run of the torch-op code")
    args = ap.parse_args()
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "out" / "bench"
    if args.device == "cuda" and not torch.cuda.is_available():
        print("device_check: no CUDA device visible to torch; nothing checked")
        return 2
    dev = torch.device(args.device)
    deadline = time.monotonic() + args.budget_s
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    t0 = time.monotonic()
    checks = check_matmul(dev, deadline) + check_workloads(dev, deadline)
    times = timings(dev, args.size, args.runs) if dev.type == "cuda" and time.monotonic() < deadline else []
    machine = {
        "device": str(dev),
        "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
        "capability": list(torch.cuda.get_device_capability(dev)) if dev.type == "cuda" else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "platform": platform.platform(),
        "seconds": time.monotonic() - t0,
    }
    ok = all(c["ok"] for c in checks)
    for c in checks:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}")
    for r in times:
        extra = f", / TF32 {r['ratio_to_tf32']:.2f}" if "ratio_to_tf32" in r else ""
        print(f"     {r['case']}: {r['seconds'] * 1e3:.2f} ms (/ SGEMM {r['ratio_to_sgemm']:.2f}{extra})")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine, "checks": checks, "timings": times, "ok": ok}
    name = "device_check.json" if dev.type == "cuda" else "device_check_cpu_dry_run.json"
    (out_dir / name).write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'all bit checks passed' if ok else 'BIT CHECKS FAILED'}; wrote {out_dir / name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
