#!/usr/bin/env python3
"""Time RepOps kernels against the natural torch baseline, in the same run, on 2 threads.

Cases are grouped in suites; each suite is a function returning `Case`s (name, ours, baseline),
so new rows (e.g. a whole training step through the interpreter) are one more suite in SUITES.
Every case is timed as medians of --runs timings after warm-up, ours and the baseline
alternating. The matmul suite also reports where the time of one 1024^3 product goes
(quantize, GEMM, combine). Prints tables and writes out/bench/repops.json:
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
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.repops import linalg  # noqa: E402
from trainer.repops._fixed import grid_magic, grid_max, p_dot, quantize  # noqa: E402

THREADS = 2
# glibc returns freed blocks above these sizes to the OS, so every large tensor is page-faulted
# in afresh; keeping them in the heap removes that cost (for ours and torch's alike).
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


MATMUL_SHAPES: list[tuple[str, int, int, int]] = [
    ("mm 256^3", 256, 256, 256),
    ("mm 512^3", 512, 512, 512),
    ("mm 1024^3", 1024, 1024, 1024),
    ("mm 2048^3", 2048, 2048, 2048),
    ("mm 512x8192 @ 8192x512 (weight grad)", 512, 8192, 512),
]


def matmul_cases(engines: list[str]) -> list[Case]:
    cases = []
    for name, m, k, n in MATMUL_SHAPES:
        a, b = _operands(m, k, n)
        for engine in engines:
            label = name if engine == linalg.default_engine(a, b) and len(engines) == 1 else f"{name} [{engine}]"
            cases.append(
                Case(
                    label,
                    lambda a=a, b=b, e=engine: linalg.matmul_exact(a, b, e),  # type: ignore[misc]
                    lambda a=a, b=b: torch.mm(a, b),  # type: ignore[misc]
                    {"engine": engine, "m": m, "k": k, "n": n},
                )
            )
    return cases


def matmul_split(size: int, runs: int) -> list[dict[str, Any]]:
    """Where the f64 engine's time goes for one size^3 product: each stage timed alone."""
    a, b = _operands(size, size, size)
    p = p_dot(size)
    qa = quantize(a, grid_magic(grid_max(a, [1]), p))
    qb = quantize(b, grid_magic(grid_max(b, [0]), p))
    s = torch.mm(qa, qb)
    stages = {
        "quantize A and B (max, grid, float64)": lambda: (
            quantize(a, grid_magic(grid_max(a, [1]), p)),
            quantize(b, grid_magic(grid_max(b, [0]), p)),
        ),
        "GEMM (float64 mm)": lambda: torch.mm(qa, qb),
        "combine (round to fp32, +0)": lambda: s.to(torch.float32).add_(0.0),
        "whole kernel": lambda: linalg.matmul_exact(a, b, "f64"),
        "torch.mm fp32 (baseline)": lambda: torch.mm(a, b),
    }
    return [{"stage": k, "seconds": median_time(f, runs)} for k, f in stages.items()]


def step_cases(engines: list[str]) -> list[Case]:
    """One training step of each workload: the RepOps interpreter against the eager torch step,
    and trace mode (every node's outputs committed) against the plain interpreter."""
    from trainer.interp import Interpreter
    from trainer.workloads import char_transformer, mlp_digits

    cases = []
    for w in (mlp_digits(), char_transformer()):
        interp = Interpreter(w.program)
        state = w.initial_state()
        batch = w.dataset.batch(w.config.seed, 0, w.config.batch_size)
        info = {"nodes": len(w.program.nodes), "batch": w.config.batch_size}
        cases.append(
            Case(
                f"step {w.name} (interpreter vs eager)",
                lambda i=interp, s=state, b=batch: i.run(s, b),  # type: ignore[misc]
                lambda f=w.step.fn, s=state, b=batch: f(s, b),  # type: ignore[misc]
                info,
            )
        )
        cases.append(
            Case(
                f"step {w.name} (trace vs plain interpreter)",
                lambda i=interp, s=state, b=batch: i.trace(s, b),  # type: ignore[misc]
                lambda i=interp, s=state, b=batch: i.run(s, b),  # type: ignore[misc]
                info,
            )
        )
    return cases


SUITES: dict[str, Callable[[list[str]], list[Case]]] = {"matmul": matmul_cases, "step": step_cases}


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
        choices=list(linalg.ENGINES),
        help="matmul engines to time (default: the one RepOps picks on this machine)",
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
    engines = args.engine or ["int8" if int8_fast else "f64"]
    rows: list[dict[str, Any]] = []
    for suite in args.suite or list(SUITES):
        for case in SUITES[suite](engines):
            t_ours, t_base = paired_medians(case.ours, case.baseline, runs)
            rows.append(
                {"case": case.name, "ours_s": t_ours, "baseline_s": t_base, "ratio": t_ours / t_base, **case.info}
            )
            console.print(f"  {case.name}: {t_ours * 1e3:.2f} ms vs {t_base * 1e3:.2f} ms", highlight=False)
    splits = matmul_split(1024, runs) if "matmul" in (args.suite or list(SUITES)) else []

    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "int8_vnni_or_amx": int8_fast,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "runs": runs,
        "load_average": os.getloadavg(),
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
    }
    table = Table(title=f"RepOps against torch, {args.threads} threads (medians of {runs}, alternating)")
    for col in ("case", "ours (ms)", "torch (ms)", "ratio"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        table.add_row(r["case"], f"{r['ours_s'] * 1e3:.2f}", f"{r['baseline_s'] * 1e3:.2f}", f"{r['ratio']:.2f}")
    console.print(table)
    if splits:
        split_table = Table(title="mm 1024^3, f64 engine: time per stage (medians, each stage timed alone)")
        split_table.add_column("stage")
        split_table.add_column("ms", justify="right")
        for s in splits:
            split_table.add_row(s["stage"], f"{s['seconds'] * 1e3:.2f}")
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
