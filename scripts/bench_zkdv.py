"""Per-step cost of a zkdv-wrapped training loop, against its natural baselines, in one run.

For the MLP and the character-transformer workloads (trainer.workloads) it times, step by
step after warm-up (the first transaction, which captures the program, is not counted):

- zkdv with sampling off, at p = 0.01 (state and update checks) and at DEBUGCheckEvery(1)
  (UNCHECKED overlap, so a step waits for the check of the step before the last);
- the RepOps interpreter's own step (`Interpreter.run` of the workload's program), the goal
  being zkdv with sampling off <= 1.2x of it;
- the same loop with torch's own eager kernels, no transcript (torch.optim, clip_grad_norm_):
  what reproducibility costs a new user.

Prints a table of medians and ratios and writes out/bench/zkdv.json: rows {case, ours_s,
baseline_s, ratio, ...} beside a `machine` record, and the transcript bytes per step.

    .venv/bin/python scripts/bench_zkdv.py [--steps N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

import zkdv
import zkdv.torch
from trainer.interp import Interpreter
from trainer.program.optim import PARAM, AdamWConfig, SGDConfig
from trainer.program.step import BATCH_INPUT, BATCH_TARGET
from trainer.workloads import Workload, char_transformer, mlp_digits
from zkdv._optim import ConfigForm

WARMUP = 2


class _Configured(torch.optim.SGD):
    def __init__(self, params: Any, config: Any) -> None:
        super().__init__(params, lr=config.lr)
        self.task_config = config


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_initial(w: Workload) -> dict[str, torch.Tensor]:
    state = w.initial_state()
    with torch.no_grad():
        params = dict(w.step.model.named_parameters())
        for n in w.step.param_names:
            params[n].copy_(state[PARAM + n])
    return state


def time_zkdv(w: Workload, policy: zkdv.SamplingPolicy, steps: int, folder: Path) -> tuple[list[float], float]:
    """Per-step seconds (after warm-up) and transcript bytes per step (step and check records)."""
    load_initial(w)
    proof = zkdv.torch.ZKDV(folder, zkdv.ZKDVConfig(name=w.name, sampling_policy=policy),
                            replay_snapshot_interval=12)
    proof.register_functional_optimizer(_Configured, lambda o: ConfigForm(o.task_config))
    proof.start(rolling_window=8, probe_ratio=0.01)
    model, opt = proof.prepare(w.step.model, _Configured(w.step.model.parameters(), w.step.optimizer))
    loss_fn = w.step.loss_fn

    @proof.attest
    def attested(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any]) -> None:
        proof.backward(loss_fn(proof.forward(model, batch[BATCH_INPUT]), batch[BATCH_TARGET]))
        optimizer.step()

    times: list[float] = []
    for s in range(WARMUP + steps):
        batch = w.dataset.batch(w.config.seed, s, w.config.batch_size)
        t0 = time.perf_counter()
        with proof.transaction(batch=batch):
            proof.backward(loss_fn(model(batch[BATCH_INPUT]), batch[BATCH_TARGET]))
            opt.step()
        if s >= WARMUP:
            times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    proof.close()
    times[-1] += time.perf_counter() - t0  # the checks still queued are part of the run
    size = (folder / "records.cborl").stat().st_size
    return times, size / (WARMUP + steps)


def time_interpreter(w: Workload, steps: int) -> list[float]:
    interp = Interpreter(w.program)
    state = w.initial_state()
    times = []
    for s in range(WARMUP + steps):
        batch = w.dataset.batch(w.config.seed, s, w.config.batch_size)
        t0 = time.perf_counter()
        state, _ = interp.run(state, batch)
        if s >= WARMUP:
            times.append(time.perf_counter() - t0)
    return times


def time_eager(w: Workload, steps: int) -> list[float]:
    load_initial(w)
    model, c = w.step.model, w.step.optimizer
    if isinstance(c, SGDConfig):
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=c.lr, momentum=c.momentum,
                                                     weight_decay=c.weight_decay, nesterov=c.nesterov)
    else:
        assert isinstance(c, AdamWConfig)
        opt = torch.optim.AdamW(model.parameters(), lr=c.lr, betas=c.betas, eps=c.eps, weight_decay=c.weight_decay)
    times = []
    for s in range(WARMUP + steps):
        batch = w.dataset.batch(w.config.seed, s, w.config.batch_size)
        t0 = time.perf_counter()
        w.step.loss_fn(model(batch[BATCH_INPUT]), batch[BATCH_TARGET]).backward()
        if c.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip_grad_norm)
        opt.step()
        opt.zero_grad()
        if s >= WARMUP:
            times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="timed steps per case (after 2 warm-up steps)")
    parser.add_argument("--out", type=Path, default=Path("out/bench/zkdv.json"))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    policies = {
        "off": zkdv.SamplingPolicy(),
        "p=0.01": zkdv.SamplingPolicy(state_check_probability=0.01, update_check_probability=0.01),
        "every(1)": zkdv.SamplingPolicy.DEBUGCheckEvery(1),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for make in (mlp_digits, char_transformer):
            w = make()
            interp = statistics.median(time_interpreter(w, args.steps))
            eager = statistics.median(time_eager(w, args.steps))
            for label, policy in policies.items():
                times, per_step = time_zkdv(make(), policy, args.steps, Path(tmp) / f"{w.name}-{label}")
                ours = statistics.median(times)
                mean = statistics.fmean(times)
                rows.append({"case": f"{w.name} zkdv {label} vs interpreter", "ours_s": ours, "baseline_s": interp,
                             "ratio": ours / interp, "mean_s": mean, "transcript_bytes_per_step": per_step})
                rows.append({"case": f"{w.name} zkdv {label} vs eager torch", "ours_s": ours, "baseline_s": eager,
                             "ratio": ours / eager, "mean_s": mean, "transcript_bytes_per_step": per_step})
            rows.append({"case": f"{w.name} interpreter vs eager torch", "ours_s": interp, "baseline_s": eager,
                         "ratio": interp / eager})
    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "steps": args.steps,
        "statistic": "median seconds per step (mean_s: mean, which spreads the checks' replays)",
    }
    print(f"{'case':<52} {'ours ms':>9} {'base ms':>9} {'ratio':>7} {'bytes/step':>10}")
    for r in rows:
        per = r.get("transcript_bytes_per_step")
        print(f"{r['case']:<52} {r['ours_s'] * 1e3:9.2f} {r['baseline_s'] * 1e3:9.2f} {r['ratio']:7.2f} "
              f"{'' if per is None else f'{per:10.0f}'}")
    print(f"{machine['cpu']}, {machine['cpu_count']} CPUs, torch {torch.__version__}, {machine['threads']} threads")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
