"""Per-step cost of a zkdv-wrapped training loop, against its natural baselines, in one run.

For the MLP and the character-transformer workloads (trainer.workloads) it times, after warm-up
(the first transaction, which captures the program, is not counted), blocks of BLOCK consecutive
steps of each case in round robin (one block of each in turn), so the shared machine's load hits
all alike; a block of a zkdv case ends with `join()`, so the commitments and the sampled checks
its steps left to the background workers are charged to it (the per-step figure is the block's
time over BLOCK; `thread_s` is the median time a transaction itself takes on the training thread):

- zkdv with sampling off, at p = 0.01 (state and update checks) and at DEBUGCheckEvery(1), the
  loop calling the attested step in each transaction (it runs the sealed program), and with
  sampling off the same step written out in the transaction's body (it runs eagerly, op by op),
  and with sampling off the commit worker's other setting (the default depends on spare CPUs);
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
BLOCK = 4


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


_BATCHES: dict[tuple[int, int], dict[str, torch.Tensor]] = {}


def batch_of(w: Workload, s: int) -> dict[str, torch.Tensor]:
    """The batch of step `s` (made before the timed blocks, so its making is charged to no case)."""
    made = _BATCHES.pop((id(w), s), None)
    return made if made is not None else w.dataset.batch(w.config.seed, s, w.config.batch_size)


def make_batches(w: Workload, steps: range) -> None:
    for s in steps:
        _BATCHES[(id(w), s)] = w.dataset.batch(w.config.seed, s, w.config.batch_size)


class ZKDVLoop:
    """One zkdv-wrapped loop over the workload; `step(s)` times one step including its checks."""

    def __init__(self, w: Workload, policy: zkdv.SamplingPolicy, folder: Path, *, eager_body: bool = False,
                 commit_worker: bool | None = None) -> None:
        load_initial(w)
        self.w, self.folder, self.eager_body = w, folder, eager_body
        proof = zkdv.torch.ZKDV(folder, zkdv.ZKDVConfig(name=w.name, sampling_policy=policy),
                                replay_snapshot_interval=12, commit_worker=commit_worker)
        proof.register_functional_optimizer(_Configured, lambda o: ConfigForm(o.task_config))
        proof.start(rolling_window=8, probe_ratio=0.01)
        self.model, self.opt = proof.prepare(w.step.model, _Configured(w.step.model.parameters(), w.step.optimizer))
        self.proof = proof
        loss_fn = w.step.loss_fn

        @proof.attest
        def attested(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any]) -> torch.Tensor:
            loss = loss_fn(proof.forward(model, batch[BATCH_INPUT]), batch[BATCH_TARGET])
            proof.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            return loss

        self.attested = attested

    def step(self, s: int) -> float:
        w, loss_fn = self.w, self.w.step.loss_fn
        batch = batch_of(w, s)
        t0 = time.perf_counter()
        with self.proof.transaction(batch=batch):
            if self.eager_body:  # the step written out in the transaction's body: it runs eagerly, op by op
                self.proof.backward(loss_fn(self.model(batch[BATCH_INPUT]), batch[BATCH_TARGET]))
                self.opt.step()
                self.opt.zero_grad()
            else:  # the attested step called in the transaction: it runs the sealed program
                self.attested(self.model, self.opt, batch)
        return time.perf_counter() - t0

    def finish(self) -> None:
        self.proof.join()  # the block's commitments and checks are charged to it

    def bytes_per_step(self, steps: int) -> float:
        self.proof.close()
        return (self.folder / "records.cborl").stat().st_size / steps


class InterpreterLoop:
    def __init__(self, w: Workload) -> None:
        self.w, self.interp, self.state = w, Interpreter(w.program), w.initial_state()

    def step(self, s: int) -> float:
        batch = batch_of(self.w, s)
        t0 = time.perf_counter()
        self.state, _ = self.interp.run(self.state, batch)
        return time.perf_counter() - t0

    def finish(self) -> None:
        pass


class EagerLoop:
    """The same loop with torch's own kernels and optimizer, no transcript."""

    def __init__(self, w: Workload) -> None:
        load_initial(w)
        self.w, c = w, w.step.optimizer
        params = w.step.model.parameters()
        if isinstance(c, SGDConfig):
            self.opt: torch.optim.Optimizer = torch.optim.SGD(params, lr=c.lr, momentum=c.momentum,
                                                              weight_decay=c.weight_decay, nesterov=c.nesterov)
        else:
            assert isinstance(c, AdamWConfig)
            self.opt = torch.optim.AdamW(params, lr=c.lr, betas=c.betas, eps=c.eps, weight_decay=c.weight_decay)

    def step(self, s: int) -> float:
        w, c = self.w, self.w.step.optimizer
        batch = batch_of(w, s)
        t0 = time.perf_counter()
        w.step.loss_fn(w.step.model(batch[BATCH_INPUT]), batch[BATCH_TARGET]).backward()
        if c.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(w.step.model.parameters(), c.clip_grad_norm)
        self.opt.step()
        self.opt.zero_grad()
        return time.perf_counter() - t0

    def finish(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="timed steps per case (after 2 warm-up steps)")
    parser.add_argument("--out", type=Path, default=Path("out/bench/zkdv.json"))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    policies = {
        "off": zkdv.SamplingPolicy(),
        "p=0.01": zkdv.SamplingPolicy(state_check_probability=0.01, update_check_probability=0.01),
        "every(1)": zkdv.SamplingPolicy.DEBUGCheckEvery(1),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for make in (mlp_digits, char_transformer):
            name = make().name
            interp, eager = InterpreterLoop(make()), EagerLoop(make())
            zk = {label: ZKDVLoop(make(), policy, Path(tmp) / f"{name}-{label}") for label, policy in policies.items()}
            zk["off, eager body"] = ZKDVLoop(make(), policies["off"], Path(tmp) / f"{name}-eager-body", eager_body=True)
            other = not zk["off"].proof.commit_worker  # the commit worker's other setting, for comparison
            zk[f"off, commit worker {'on' if other else 'off'}"] = ZKDVLoop(
                make(), policies["off"], Path(tmp) / f"{name}-other-commit", commit_worker=other)
            loops: dict[str, Any] = {"interpreter": interp, "eager": eager, **zk}
            times: dict[str, list[float]] = {k: [] for k in loops}
            thread: dict[str, list[float]] = {k: [] for k in loops}
            for loop in loops.values():
                for s in range(WARMUP):
                    loop.step(s)
                loop.finish()
            blocks = -(-args.steps // BLOCK)
            for b in range(blocks):  # round robin: the machine's load hits every case alike
                first = WARMUP + b * BLOCK
                for loop in loops.values():
                    make_batches(loop.w, range(first, first + BLOCK))
                for label, loop in loops.items():
                    t0 = time.perf_counter()
                    thread[label].extend(loop.step(s) for s in range(first, first + BLOCK))
                    loop.finish()
                    times[label].append((time.perf_counter() - t0) / BLOCK)
            med = {k: statistics.median(v) for k, v in times.items()}
            for label, loop in zk.items():
                per_step = loop.bytes_per_step(WARMUP + blocks * BLOCK)
                for base in ("interpreter", "eager"):
                    rows.append({"case": f"{name} zkdv {label} vs {base}", "ours_s": med[label],
                                 "baseline_s": med[base], "ratio": med[label] / med[base],
                                 "mean_s": statistics.fmean(times[label]),
                                 "thread_s": statistics.median(thread[label]),
                                 "transcript_bytes_per_step": per_step})
            rows.append({"case": f"{name} interpreter vs eager", "ours_s": med["interpreter"],
                         "baseline_s": med["eager"], "ratio": med["interpreter"] / med["eager"]})
    machine = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "commit_worker_default": zkdv.torch.commit_worker_default(),
        "steps": args.steps,
        "statistic": f"median over blocks of {BLOCK} steps of seconds per step, blocks in round robin, a zkdv "
                     "block ended by join() (mean_s: the mean; thread_s: median time of a transaction alone)",
        "load_average": {"before": list(load_before), "after": list(os.getloadavg())},  # 1, 5, 15 minutes
    }
    print(f"{'case':<52} {'ours ms':>9} {'base ms':>9} {'ratio':>7} {'thread ms':>9} {'bytes/step':>10}")
    for r in rows:
        per, th = r.get("transcript_bytes_per_step"), r.get("thread_s")
        print(f"{r['case']:<52} {r['ours_s'] * 1e3:9.2f} {r['baseline_s'] * 1e3:9.2f} {r['ratio']:7.2f} "
              f"{'' if th is None else f'{th * 1e3:9.2f}'} {'' if per is None else f'{per:10.0f}'}")
    print(f"{machine['cpu']}, {machine['cpu_count']} CPUs, torch {torch.__version__}, {machine['threads']} threads, "
          f"load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
