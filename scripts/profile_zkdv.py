"""Training-thread CPU time of a zkdv step with sampling off against the RepOps interpreter's own step.

The measure of docs/zkdv.md section 12 ("Leaner bookkeeping"): one process, torch at one intra-op thread
(so that spinning kernel threads of a loaded machine do not count), the interpreter loop and the zkdv loop
of scripts/bench_zkdv.py interleaved in blocks of 4 steps after 2 warm-up steps, each step's
`time.thread_time()` (a zkdv block's `join()` charged to its last step) and wall time; prints the medians
and their ratios with the load average. It writes nothing.

    .venv/bin/python scripts/profile_zkdv.py [--workload mlp|transformer] [--steps N] [--commit-worker on|off]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]  # this checkout's packages, whatever the environment installs
import bench_zkdv as bench  # noqa: E402

import zkdv  # noqa: E402
from trainer.workloads import char_transformer, mlp_digits  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["mlp", "transformer"], default="mlp")
    parser.add_argument("--steps", type=int, default=400, help="timed steps per loop (a multiple of 4)")
    parser.add_argument("--commit-worker", choices=["on", "off"], default="off")
    args = parser.parse_args()
    torch.set_num_threads(1)
    make = mlp_digits if args.workload == "mlp" else char_transformer
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        loops = {"interpreter": bench.InterpreterLoop(make()),
                 "zkdv": bench.ZKDVLoop(make(), zkdv.SamplingPolicy(), Path(tmp) / "zk",
                                        commit_worker=args.commit_worker == "on")}
        cpu: dict[str, list[float]] = {k: [] for k in loops}
        wall: dict[str, list[float]] = {k: [] for k in loops}
        for loop in loops.values():
            for s in range(bench.WARMUP):
                loop.step(s)
            loop.finish()
        for b in range(args.steps // bench.BLOCK):
            first = bench.WARMUP + b * bench.BLOCK
            for loop in loops.values():
                bench.make_batches(loop.w, range(first, first + bench.BLOCK))
            for k, loop in loops.items():
                for s in range(first, first + bench.BLOCK):
                    c0, w0 = time.thread_time(), time.perf_counter()
                    loop.step(s)
                    cpu[k].append(time.thread_time() - c0)
                    wall[k].append(time.perf_counter() - w0)
                c0, w0 = time.thread_time(), time.perf_counter()
                loop.finish()
                cpu[k][-1] += time.thread_time() - c0
                wall[k][-1] += time.perf_counter() - w0
        loops["zkdv"].proof.close()
    ic, iw = statistics.median(cpu["interpreter"]), statistics.median(wall["interpreter"])
    zc, zw = statistics.median(cpu["zkdv"]), statistics.median(wall["zkdv"])
    print(f"{args.workload}, commit worker {args.commit_worker}, {args.steps} steps, load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after: interpreter {ic * 1e3:.3f} ms CPU, {iw * 1e3:.3f} ms wall; zkdv "
          f"{zc * 1e3:.3f} ms CPU, {zw * 1e3:.3f} ms wall; ratio {zc / ic:.3f} by training-thread CPU, "
          f"{zw / iw:.3f} by wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
