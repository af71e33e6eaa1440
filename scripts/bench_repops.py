#!/usr/bin/env python3
"""Time RepOps kernels against the natural torch baseline, in the same run, on 2 threads.

Cases are grouped in suites; each suite is a function returning `Case`s (name, ours, baseline),
so new rows (e.g. a whole training step through the interpreter) are one more suite in SUITES.
Every case is timed as medians of --runs timings after warm-up, ours and the baseline
alternating. The matmul suite also times the engine's GEMM alone against fp32 torch.mm (the
floor of an exact product on this machine) and reports where the time of each product goes
(quantize A, quantize B, GEMM, combine, each stage timed alone, paired with fp32 torch.mm).
The indexing suite times the exact scatter_add / index_put accumulations and scatter.src
against torch's own kernels.
Prints tables and writes out/bench/repops.json:
{"machine": {...}, "rows": [{"case", "ours_s", "baseline_s", "ratio", ...}], "splits": [...]}
with ratio = ours_s / baseline_s. Run with the project's venv python.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.markup import escape
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.repops import _native, linalg  # noqa: E402
from trainer.repops._fixed import grid_magic, grid_max, p_dot, quantize  # noqa: E402

THREADS = 2
# glibc returns freed blocks above these sizes to the OS, so every large tensor is page-faulted
# in afresh; keeping them in the heap removes that cost (for ours and torch's alike).
ISA_ENVS = ("MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY", linalg.ISA_ENV, "REFEREED_MM_ENGINE")
HEAP_ENV = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296"}


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    ours: Callable[[], object]
    baseline: Callable[[], object]
    info: dict[str, object] = field(default_factory=dict)


def paired_medians(ours: Callable[[], object], baseline: Callable[[], object], runs: int) -> tuple[float, float]:
    """Medians of `runs` timings each, alternating, after two warm-up calls of each."""
    for _ in range(2):
        ours()
        baseline()
    t_ours: list[float] = []
    t_base: list[float] = []
    for _ in range(runs):
        for f, acc in ((baseline, t_base), (ours, t_ours)):
            start = time.perf_counter()
            f()
            acc.append(time.perf_counter() - start)
    return statistics.median(t_ours), statistics.median(t_base)


def median_time(f: Callable[[], object], runs: int) -> float:
    f()
    ts = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        ts.append(time.perf_counter() - start)
    return statistics.median(ts)


def _operands(m: int, k: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)


MATMUL_SHAPES: list[tuple[str, int, int, int, int]] = [  # name, batch, M, K, N
    ("mm 256^3", 1, 256, 256, 256),
    ("mm 512^3", 1, 512, 512, 512),
    ("mm 1024^3", 1, 1024, 1024, 1024),
    ("mm 2048^3", 1, 2048, 2048, 2048),
    ("mm 512x8192 @ 8192x512 (weight grad)", 1, 512, 8192, 512),
    ("mm (8192x512)^T @ 8192x512 (weight grad, transposed A)", 1, 512, 8192, 512),
    ("bmm 16 x 256x64 @ 64x256 (attention scores)", 16, 256, 64, 256),
    ("bmm 8 x 512^3", 8, 512, 512, 512),
]
SPLIT_SHAPES = ("mm 512^3", "mm 1024^3", "mm 2048^3", "mm 512x8192 @ 8192x512 (weight grad)")


def _matmul_operands(name: str, nb: int, m: int, k: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    if nb > 1:
        g = torch.Generator().manual_seed(0)
        return torch.randn(nb, m, k, generator=g), torch.randn(nb, k, n, generator=g)
    a, b = _operands(m, k, n)
    if "transposed A" in name:
        a = a.t().contiguous().t()  # a (K, M) tensor seen transposed, as autograd's weight gradient passes it
    return a, b


def _baseline(a: torch.Tensor, b: torch.Tensor) -> Callable[[], object]:
    return (lambda: torch.mm(a, b)) if a.dim() == 2 else (lambda: torch.bmm(a, b))


def matmul_cases(engines: list[str]) -> list[Case]:
    cases = []
    for name, nb, m, k, n in MATMUL_SHAPES:
        a, b = _matmul_operands(name, nb, m, k, n)
        for engine in engines:
            label = name if engine == "auto" else f"{name} [{engine}]"
            chosen, path = engine.split("-")[0], ("torch" if engine.endswith("-torch") else None)
            chosen = linalg.default_engine(a, b) if chosen == "auto" else chosen
            cases.append(
                Case(
                    label,
                    lambda a=a, b=b, e=chosen, p=path: linalg.matmul_exact(a, b, e, p),  # type: ignore[misc]
                    _baseline(a, b),
                    {"engine": chosen, "path": path or "default", "batch": nb, "m": m, "k": k, "n": n},
                )
            )
        if nb == 1 and name in SPLIT_SHAPES:  # the floor: the float64 GEMM alone, into a reused buffer
            qa, qb = a.double(), b.double()
            out = torch.empty(m, n, dtype=torch.float64)
            cases.append(
                Case(
                    f"{name}: float64 GEMM alone",
                    lambda qa=qa, qb=qb, out=out: torch.mm(qa, qb, out=out),  # type: ignore[misc]
                    _baseline(a, b),
                    {"engine": "f64 GEMM only", "batch": nb, "m": m, "k": k, "n": n},
                )
            )
    return cases


def _f64_stages(a: torch.Tensor, b: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The f64 engine's stages as it runs them (native passes when built, else torch ops)."""
    m, k = a.shape
    n = b.shape[1]
    p = p_dot(k)
    lib = _native.linalg_library()
    if lib is None:
        qa = quantize(a, grid_magic(grid_max(a, [1]), p))
        qb = quantize(b, grid_magic(grid_max(b, [0]), p))
        s = torch.mm(qa, qb)
        return {
            "quantize A (torch ops)": lambda: quantize(a, grid_magic(grid_max(a, [1]), p)),
            "quantize B (torch ops)": lambda: quantize(b, grid_magic(grid_max(b, [0]), p)),
            "GEMM (float64 mm)": lambda: torch.mm(qa, qb),
            "combine (torch ops)": lambda: s.to(torch.float32).add_(0.0),
        }
    isa = _native.ISAS.index(linalg.native_isa())
    a3, bt3 = a.unsqueeze(0), b.unsqueeze(0).transpose(1, 2)
    qa3, bad_a, _ = linalg._quant_f64_native(lib, a3, p, "bench-qa", isa)
    qbt3, bad_b, _ = linalg._quant_f64_native(lib, bt3, p, "bench-qb", isa)
    qa2, qb2 = qa3[0], qbt3[0].t()
    s = torch.mm(qa2, qb2)
    out = torch.empty(m, n)

    def combine() -> None:
        t = torch.empty(m, n)  # a fresh output, as the kernel returns
        lib.combine_f64(s.data_ptr(), 1, m, n, 0, n, bad_a.data_ptr(), bad_b.data_ptr(), 0, t.data_ptr(), isa, 2)

    del out
    return {
        "quantize A (native)": lambda: linalg._quant_f64_native(lib, a3, p, "bench-qa", isa),
        "quantize B (native)": lambda: linalg._quant_f64_native(lib, bt3, p, "bench-qb", isa),
        "GEMM (float64 mm into the reused buffer)": lambda: torch.mm(qa2, qb2, out=s),
        "combine (native, fresh fp32 output)": combine,
    }


def _int8_stages(a: torch.Tensor, b: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The native int8 engine's stages ("split" form: three _int_mm calls), as it runs them."""
    lib = _native.linalg_library()
    assert lib is not None
    m, k = a.shape
    n = b.shape[1]
    p = p_dot(k)
    isa = _native.ISAS.index(linalg.native_isa())
    wa = torch.empty(m, 2 * k, dtype=torch.int8)
    wb = torch.empty(2 * k, n, dtype=torch.int8)
    ua, ub = torch.empty(m, dtype=torch.float64), torch.empty(n, dtype=torch.float64)
    fa, fb = torch.empty(m, dtype=torch.uint8), torch.empty(n, dtype=torch.uint8)
    t = torch.empty(3, m, n, dtype=torch.int32)
    xa, _, _, _, sba, sra, sla = linalg._lines(a.unsqueeze(0))
    xb, _, _, _, sbb, srb, slb = linalg._lines(b.unsqueeze(0).transpose(1, 2))

    def quant_a() -> None:
        lib.quant_int8x2(xa.data_ptr(), 1, m, k, sba, sra, sla, p, wa.data_ptr(), wa.data_ptr() + k, None, None,
                         0, 2 * k, 1, fa.data_ptr(), ua.data_ptr(), isa, THREADS)  # fmt: skip

    def quant_b() -> None:
        lib.quant_int8x2(xb.data_ptr(), 1, n, k, sbb, srb, slb, p, wb.data_ptr() + k * n, wb.data_ptr(), None, None,
                         0, 1, n, fb.data_ptr(), ub.data_ptr(), isa, THREADS)  # fmt: skip

    def gemm() -> None:
        torch._int_mm(wa[:, :k], wb[k:], out=t[0])
        torch._int_mm(wa, wb, out=t[1])
        torch._int_mm(wa[:, k:], wb[:k], out=t[2])

    def combine() -> None:
        out = torch.empty(m, n)
        lib.combine_int8x2(t[0].data_ptr(), t[1].data_ptr(), t[2].data_ptr(), 1, m, n, 0, n, ua.data_ptr(),
                           ub.data_ptr(), fa.data_ptr(), fb.data_ptr(), 0, out.data_ptr(), isa, THREADS)  # fmt: skip

    quant_a()
    quant_b()
    return {
        "quantize A (native int8)": quant_a,
        "quantize B (native int8)": quant_b,
        "GEMM (3 _int_mm into reused buffers)": gemm,
        "combine (native, fresh fp32 output)": combine,
    }


def _int16_stages(a: torch.Tensor, b: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The native int16 engine's two stages (rt_i16_quantize, rt_i16_products), as rt_mm_i16 runs
    them; the products once with the combine and once without (the int16 GEMMs alone)."""
    lib = _native.linalg_library()
    assert lib is not None
    m, k = a.shape
    n = b.shape[1]
    p = p_dot(k)
    isa = _native.ISAS.index(linalg.native_isa())
    kp, pm, pn = (k + 1) // 2, -(-m // 6), -(-n // 8)
    pa, pb = torch.empty(pm * kp * 6, dtype=torch.int32), torch.empty(pn * kp * 16, dtype=torch.int32)
    ua, ub = torch.empty(m, dtype=torch.float64), torch.empty(n, dtype=torch.float64)
    fa, fb = torch.empty(m, dtype=torch.uint8), torch.empty(n, dtype=torch.uint8)
    xa, _, _, _, sba, sra, sla = linalg._lines(a.unsqueeze(0))
    xb, _, _, _, sbb, sbc, sbr = linalg._lines(b.unsqueeze(0).transpose(1, 2))

    def quant() -> None:
        lib.i16_quantize(xa.data_ptr(), 1, m, k, sba, sra, sla, xb.data_ptr(), n, sbb, sbr, sbc, p,
                         pa.data_ptr(), pb.data_ptr(), ua.data_ptr(), ub.data_ptr(), fa.data_ptr(), fb.data_ptr(),
                         isa, THREADS)  # fmt: skip

    def products(combine: int) -> None:
        out = torch.empty(m, n)  # a fresh output, as the kernel returns
        lib.i16_products(pa.data_ptr(), pb.data_ptr(), 1, m, k, n, ua.data_ptr(), ub.data_ptr(), fa.data_ptr(),
                         fb.data_ptr(), 0, out.data_ptr(), combine, isa, THREADS)  # fmt: skip

    quant()
    return {
        "quantize A and B into packed panels (native)": quant,
        "two int16 GEMMs alone (tile sums, no output)": lambda: products(0),
        "two int16 GEMMs + combine (fresh fp32 output)": lambda: products(1),
    }


def matmul_split(runs: int, engines: list[str]) -> list[dict[str, Any]]:
    """Where each engine's time goes: each stage timed alone, paired with fp32 torch.mm. The
    int8 engine is profiled where its GEMM is fast (VNNI/AMX) or when it is asked for, the int16
    engine where it is native code (its GEMMs run on AVX2) or when it is asked for."""
    profiled = ["f64"]
    lib = _native.linalg_library()
    if lib is not None and (linalg._cpu_has_fast_int8() or "int8" in engines):
        profiled.append("int8")
    if lib is not None and (linalg.native_isa() != "portable" or "int16" in engines):
        profiled.append("int16")
    rows = []
    for name, _, m, k, n in MATMUL_SHAPES:
        if name not in SPLIT_SHAPES:
            continue
        a, b = _operands(m, k, n)
        for engine in profiled:
            split = {"f64": _f64_stages, "int8": _int8_stages, "int16": _int16_stages}[engine]
            stages: dict[str, Callable[[], object]] = {
                **split(a, b),
                "whole kernel": lambda a=a, b=b, e=engine: linalg.matmul_exact(a, b, e),  # type: ignore[misc]
            }
            for stage, f in stages.items():
                t, base = paired_medians(f, lambda a=a, b=b: torch.mm(a, b), runs)  # type: ignore[misc]
                rows.append(
                    {"case": name, "engine": engine, "stage": stage, "seconds": t, "fp32_mm_s": base, "ratio": t / base}
                )
    return rows


def _digits_cnn() -> tuple[str, Any, Callable[..., Any], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(name, program, eager step, state, batch) of the digits CNN (batch 64, AdamW with clipping)."""
    import torch.nn.functional as F

    from trainer.data.dataset import digits
    from trainer.program import AdamWConfig, build_step, capture
    from trainer.program.models import DigitsCNN

    torch.manual_seed(0)
    step = build_step(DigitsCNN(), F.cross_entropy, AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0))
    state = step.init_state()
    batch = digits().batch(1, 0, 64)
    return "digits-cnn", capture(step, state, batch), step.fn, state, batch


def step_cases(engines: list[str]) -> list[Case]:
    """One training step of each workload (the MLP, the character transformer, the digits CNN):
    the RepOps interpreter against the eager torch step, and trace mode (every node's outputs
    committed) against the plain interpreter."""
    from trainer.interp import Interpreter
    from trainer.workloads import char_transformer, mlp_digits

    cases = []
    runs = [(w.name, w.program, w.step.fn, w.initial_state(), w.dataset.batch(w.config.seed, 0, w.config.batch_size))
            for w in (mlp_digits(), char_transformer())]  # fmt: skip
    runs.append(_digits_cnn())
    for name, program, fn, state, batch in runs:
        interp = Interpreter(program)
        info: dict[str, object] = {"nodes": len(program.nodes), "batch": next(iter(batch.values())).shape[0]}
        cases.append(
            Case(
                f"step {name} (interpreter vs eager)",
                lambda i=interp, s=state, b=batch: i.run(s, b),  # type: ignore[misc]
                lambda f=fn, s=state, b=batch: f(s, b),  # type: ignore[misc]
                info,
            )
        )
        cases.append(
            Case(
                f"step {name} (trace vs plain interpreter)",
                lambda i=interp, s=state, b=batch: i.trace(s, b),  # type: ignore[misc]
                lambda i=interp, s=state, b=batch: i.run(s, b),  # type: ignore[misc]
                info,
            )
        )
    return cases


def indexing_cases(engines: list[str]) -> list[Case]:
    """The exact accumulations (scatter_add, index_put accumulate=True: the backwards of gather,
    advanced indexing and embedding) and the last-entry-wins scatter.src against torch's own
    (order-dependent fp32) kernels, at the sizes of a batch-64 step."""
    from trainer.repops import indexing as S
    from trainer.repops import reduce as R

    g = torch.Generator().manual_seed(0)
    cases = []
    base = torch.zeros(64, 10)
    index = torch.randint(0, 10, (64, 10), generator=g)
    src = torch.randn(64, 10, generator=g)
    cases.append(
        Case(
            "scatter_add 64x10 (cross-entropy's gather backward)",
            lambda: R.scatter_add(base, 1, index, src),
            lambda: torch.scatter_add(base, 1, index, src),
        )
    )
    rows = torch.randint(0, 4096, (64 * 128,), generator=g)
    grads = torch.randn(64 * 128, 128, generator=g)
    table = torch.zeros(4096, 128)
    cases.append(
        Case(
            "index_put acc 8192 rows into 4096x128 (embedding backward)",
            lambda: R.index_put(table, [rows], grads, True),
            lambda: torch.ops.aten.index_put.default(table, [rows], grads, True),
        )
    )
    img = torch.randn(64, 16, 10, 10, generator=g)
    hw = (torch.arange(8).reshape(8, 1) + torch.arange(3).reshape(1, 3)).reshape(8, 1, 3, 1)
    ww = (torch.arange(8).reshape(8, 1) + torch.arange(3).reshape(1, 3)).reshape(1, 8, 1, 3)
    patches_grad = torch.randn(64, 16, 8, 8, 3, 3, generator=g)
    cases.append(
        Case(
            "index_put acc 64x16x8x8x3x3 into 64x16x10x10 (im2col backward)",
            lambda: R.index_put(torch.zeros_like(img), [None, None, hw, ww], patches_grad, True),
            lambda: torch.ops.aten.index_put.default(torch.zeros_like(img), [None, None, hw, ww], patches_grad, True),
        )
    )
    pooled = torch.randn(64, 16, 8, 8, 4, generator=g)
    arg = pooled.argmax(-1, keepdim=True)
    grad = torch.randn(64, 16, 8, 8, 1, generator=g)
    cases.append(
        Case(
            "scatter.src 64x16x8x8x4 (max(dim) backward)",
            lambda: S.scatter_src(torch.zeros_like(pooled), 4, arg, grad),
            lambda: torch.scatter(torch.zeros_like(pooled), 4, arg, grad),
        )
    )
    dup = torch.randint(0, 8, (64, 16, 8, 8, 4), generator=g)
    cases.append(
        Case(
            "scatter.src with duplicates 64x16x8x8x4 (last entry wins)",
            lambda: S.scatter_src(torch.zeros_like(pooled), 4, dup % 4, pooled),
            lambda: torch.scatter(torch.zeros_like(pooled), 4, dup % 4, pooled),
        )
    )
    return cases


def conv_cases(engines: list[str]) -> list[Case]:
    """Convolution (forward; backward with all three gradients) and pooling kernels against
    torch's own fp32 kernels, at a mid-size layer and at the digits CNN's layers, and one
    interpreted step of the digits CNN against the eager torch step."""
    import torch.nn.functional as F

    from trainer.interp import Interpreter
    from trainer.program import AdamWConfig, build_step, capture
    from trainer.program.models import DigitsCNN
    from trainer.repops import conv

    aten = torch.ops.aten
    g = torch.Generator().manual_seed(0)
    cases = []
    shapes = [("32x16x32x32 * 32x16x3x3, pad 1", (32, 16, 32, 32), (32, 16, 3, 3), 1),
              ("64x8x4x4 * 16x8x3x3, pad 1 (digits CNN conv2)", (64, 8, 4, 4), (16, 8, 3, 3), 1),
              ("32x16x32x32 * 32x16x3x3, stride 2", (32, 16, 32, 32), (32, 16, 3, 3), 2)]  # fmt: skip
    for label, xs, ws, stride in shapes:
        x, w, b = torch.randn(xs, generator=g), torch.randn(ws, generator=g), torch.randn(ws[0], generator=g)
        args = ([stride, stride], [1, 1], [1, 1], False, [0, 0], 1)
        y = aten.convolution(x, w, b, *args)
        dy = torch.randn(y.shape, generator=g)
        mask = [True, True, True]
        cases.append(
            Case(
                f"conv2d fwd {label}",
                lambda x=x, w=w, b=b, a=args: conv.convolution(x, w, b, *a),
                lambda x=x, w=w, b=b, a=args: aten.convolution(x, w, b, *a),
            )
        )
        cases.append(
            Case(
                f"conv2d bwd {label}",
                lambda d=dy, x=x, w=w, a=args, m=mask: conv.convolution_backward(d, x, w, [w.shape[0]], *a, m),
                lambda d=dy, x=x, w=w, a=args, m=mask: aten.convolution_backward(d, x, w, [w.shape[0]], *a, m),
            )
        )
    for label, shape in (("32x32x32x32", (32, 32, 32, 32)), ("64x16x4x4 (digits CNN)", (64, 16, 4, 4))):
        x = torch.randn(shape, generator=g)
        pool = ([2, 2], [], [0, 0], [1, 1], False)
        v, i = aten.max_pool2d_with_indices(x, *pool)
        cases.append(
            Case(
                f"max_pool2d 2x2 fwd {label}",
                lambda x=x, p=pool: conv.max_pool2d_with_indices(x, *p),
                lambda x=x, p=pool: aten.max_pool2d_with_indices(x, *p),
            )
        )
        cases.append(
            Case(
                f"max_pool2d 2x2 bwd {label}",
                lambda v=v, x=x, i=i, p=pool: conv.max_pool2d_with_indices_backward(v, x, *p, i),
                lambda v=v, x=x, i=i, p=pool: aten.max_pool2d_with_indices_backward(v, x, *p, i),
            )
        )
    x = torch.randn(32, 32, 32, 32, generator=g)
    avg = ([3, 3], [2, 2], [1, 1], False, True, None)
    y = aten.avg_pool2d(x, *avg)
    cases.append(
        Case("avg_pool2d 3x3/2 fwd 32x32x32x32", lambda: conv.avg_pool2d(x, *avg), lambda: aten.avg_pool2d(x, *avg))
    )
    cases.append(
        Case(
            "avg_pool2d 3x3/2 bwd 32x32x32x32",
            lambda: conv.avg_pool2d_backward(y, x, *avg),
            lambda: aten.avg_pool2d_backward(y, x, *avg),
        )
    )

    from trainer.data.dataset import digits

    torch.manual_seed(0)
    step = build_step(DigitsCNN(), F.cross_entropy, AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0))
    state = step.init_state()
    batch = digits().batch(1, 0, 64)
    interp = Interpreter(capture(step, state, batch))
    info: dict[str, object] = {"nodes": len(interp.program.nodes), "batch": 64}
    cases.append(
        Case(
            "step digits CNN (interpreter vs eager)",
            lambda: interp.run(state, batch),
            lambda: step.fn(state, batch),
            info,
        )
    )
    return cases


SUITES: dict[str, Callable[[list[str]], list[Case]]] = {
    "matmul": matmul_cases,
    "step": step_cases,
    "indexing": indexing_cases,
    "conv": conv_cases,
}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="timed runs per case (default 9, at least 5)")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="suites to run (default: all)")
    ap.add_argument(
        "--engine",
        action="append",
        choices=[*linalg.ENGINES, "auto", *(f"{e}-torch" for e in linalg.ENGINES)],
        help="matmul engines to time (default: the one RepOps picks on this machine, 'auto'); "
        "'<engine>-torch' runs that engine's torch-op path (the implementation before the native passes)",
    )
    ap.add_argument(
        "--threads", type=int, default=THREADS, help=f"torch threads (default {THREADS}, the issue's setting)"
    )
    ap.add_argument(
        "--keep-heap",
        action="store_true",
        help="re-run under glibc settings that keep freed memory in the heap (" + ", ".join(HEAP_ENV) + ")",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "repops.json")
    args = ap.parse_args()
    if args.keep_heap and any(os.environ.get(k) != v for k, v in HEAP_ENV.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **HEAP_ENV})
    runs = max(5, args.runs)
    torch.set_num_threads(args.threads)
    console = Console(width=max(Console().width, 110))

    int8_fast = linalg._cpu_has_fast_int8()
    engines = args.engine or ["auto"]
    rows: list[dict[str, Any]] = []
    for suite in args.suite or list(SUITES):
        for case in SUITES[suite](engines):
            t_ours, t_base = paired_medians(case.ours, case.baseline, runs)
            rows.append(
                {"case": case.name, "ours_s": t_ours, "baseline_s": t_base, "ratio": t_ours / t_base, **case.info}
            )
            console.print(
                f"  {case.name}: {t_ours * 1e3:.2f} ms vs {t_base * 1e3:.2f} ms", highlight=False, markup=False
            )
    splits = matmul_split(runs, engines) if "matmul" in (args.suite or list(SUITES)) else []

    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "int8_vnni_or_amx": int8_fast,
        "native_linalg": _native.linalg_library() is not None,
        "native_isa": linalg.native_isa() if _native.linalg_library() is not None else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "runs": runs,
        "load_average": os.getloadavg(),
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        # instruction-set limits in force (e.g. MKL_ENABLE_INSTRUCTIONS=AVX2 to time an AVX2-only BLAS)
        "isa_env": {k: os.environ[k] for k in ISA_ENVS if k in os.environ},
    }
    table = Table(title=f"RepOps against torch, {args.threads} threads (medians of {runs}, alternating)")
    for col in ("case", "ours (ms)", "torch (ms)", "ratio"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        table.add_row(
            escape(r["case"]), f"{r['ours_s'] * 1e3:.2f}", f"{r['baseline_s'] * 1e3:.2f}", f"{r['ratio']:.2f}"
        )
    console.print(table)
    if splits:
        split_table = Table(title="time per stage (medians, each stage timed alone, / fp32 torch.mm)")
        for col in ("case", "engine", "stage", "ms", "fp32 mm (ms)", "/ fp32 mm"):
            split_table.add_column(col, justify="left" if col in ("case", "engine", "stage") else "right")
        for s in splits:
            split_table.add_row(
                escape(s["case"]), s["engine"], s["stage"], f"{s['seconds'] * 1e3:.2f}", f"{s['fp32_mm_s'] * 1e3:.2f}",
                f"{s['ratio']:.3f}",
            )  # fmt: skip
        console.print(split_table)
    console.print(
        f"{machine['cpu']}, {machine['cpu_count']} CPUs, {machine['cpu_capability']}, int8 VNNI/AMX: {int8_fast}, "
        f"torch {torch.__version__}, load average {machine['load_average']}"
    )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows, "splits": splits}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
