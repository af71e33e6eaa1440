#!/usr/bin/env python3
"""Time the state root of ~100 MB of float32 tensors against plain SHA-256 of the same bytes.

Cases: the native library with its default thread count, the native library on one thread,
and the pure-Python path. Each is timed against `hashlib.sha256` fed the same tensor bytes
(one `.update()` per tensor), alternating with it in the same run; the times are medians.
Prints a table and writes out/bench/commit.json. Run with the project's venv python.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer.commit import _native, state_root  # noqa: E402

ENV_KEYS = ("REFEREED_NATIVE", "REFEREED_HASH_THREADS")


def make_state() -> dict[str, torch.Tensor]:
    """~100 MiB: two 4096x2048 matrices, then 12 narrow blocks with their biases and norms."""
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, dtype=torch.float32)

    state = {"embed.weight": rand(4096, 2048), "head.weight": rand(4096, 2048)}
    width = 256
    for i in range(12):
        p = f"blocks.{i}."
        state[p + "ln1.weight"] = rand(width)
        state[p + "ln1.bias"] = rand(width)
        state[p + "attn.qkv.weight"] = rand(3 * width, width)
        state[p + "attn.qkv.bias"] = rand(3 * width)
        state[p + "attn.proj.weight"] = rand(width, width)
        state[p + "attn.proj.bias"] = rand(width)
        state[p + "ln2.weight"] = rand(width)
        state[p + "ln2.bias"] = rand(width)
        state[p + "mlp.fc1.weight"] = rand(4 * width, width)
        state[p + "mlp.fc1.bias"] = rand(4 * width)
        state[p + "mlp.fc2.weight"] = rand(width, 4 * width)
        state[p + "mlp.fc2.bias"] = rand(width)
    state["final_norm.weight"] = rand(width)
    state["final_norm.bias"] = rand(width)
    return state


@contextmanager
def env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    try:
        for k in ENV_KEYS:
            v = values.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def paired_medians(ours: Callable[[], object], baseline: Callable[[], object], runs: int) -> tuple[float, float]:
    """Medians of `runs` timings each, the two alternating (after one warm-up of each)."""
    ours()
    baseline()
    t_ours, t_base = [], []
    for _ in range(runs):
        for f, acc in ((baseline, t_base), (ours, t_ours)):
            start = time.perf_counter()
            f()
            acc.append(time.perf_counter() - start)
    return statistics.median(t_ours), statistics.median(t_base)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7, help="timed runs per case (default 7, at least 5)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "commit.json")
    args = ap.parse_args()
    runs = max(5, args.runs)
    console = Console(width=max(Console().width, 100))  # the table is wider than 80 columns

    native_built = _native.build() is not None
    state = make_state()
    buffers = [t.contiguous().view(-1).numpy() for t in state.values()]
    nbytes = sum(b.nbytes for b in buffers)

    def baseline() -> bytes:
        h = hashlib.sha256()
        for b in buffers:
            h.update(b)
        return h.digest()

    def ours() -> bytes:
        return state_root(state)

    with env():
        native = _native.available()
        default_threads = _native.threads()
        sha_ni = _native.has_shani()

    cases: list[tuple[str, dict[str, str | None]]] = []
    if native:
        cases.append((f"native, {default_threads} threads (default)", {}))
        cases.append(("native, 1 thread", {"REFEREED_HASH_THREADS": "1"}))
    else:
        console.print("[yellow]native library unavailable: only the pure-Python path is timed[/]")
    cases.append(("pure Python", {"REFEREED_NATIVE": "0"}))

    rows = []
    roots = set()
    for name, values in cases:
        with env(**values):
            roots.add(ours())
            t_ours, t_base = paired_medians(ours, baseline, runs)
        rows.append({"case": name, "ours_s": t_ours, "baseline_s": t_base, "ratio": t_ours / t_base, "bytes": nbytes})
    if len(roots) != 1:
        console.print("[red]the cases disagree on the state root[/]")
        return 1

    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "native": native,
        "native_built": native_built,
        "sha_ni": sha_ni,
        "threads": default_threads,
        "tensors": len(state),
        "runs": runs,
    }
    table = Table(title=f"state root of {len(state)} float32 tensors, {nbytes / 1e6:.1f} MB (medians of {runs})")
    for col in ("case", "ours (ms)", "sha256 (ms)", "ratio", "ours GB/s", "sha256 GB/s"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        table.add_row(
            r["case"],
            f"{r['ours_s'] * 1e3:.1f}",
            f"{r['baseline_s'] * 1e3:.1f}",
            f"{r['ratio']:.3f}",
            f"{nbytes / r['ours_s'] / 1e9:.2f}",
            f"{nbytes / r['baseline_s'] / 1e9:.2f}",
        )
    console.print(table)
    console.print(f"{machine['cpu']}, {machine['cpu_count']} CPUs, SHA-NI: {sha_ni}, torch {torch.__version__}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
