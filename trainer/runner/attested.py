"""A task's run trained through zkdv: the eager step on RepOps kernels, every update in a transcript.

`train_attested(step, dataset, config, initial, folder)` trains the `TrainStep` (model, loss,
optimizer config) that a task's program was captured from, over the task's keyed batches,
inside zkdv transactions (`zkdv.torch.ZKDV`, docs/zkdv.md). The trainer's self-audit is
zkdv's sampled checks (replays of the captured program from the latest replay snapshot, on a
background worker); the checkpoint roots are read back from the transcript: the root before
step 0 is the `pre` of step 0, the root at checkpoint `k c` is the `post` of step `k c - 1`.
A failed check raises `zkdv.ZKDVPoisonedError` (nothing is submitted from a poisoned run).

zkdv imports `trainer`; this module imports zkdv only when called, so `trainer` loads without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from trainer.data.dataset import Dataset
from trainer.program.optim import BUFFER, PARAM, OptimizerConfig
from trainer.program.step import BATCH_INPUT, BATCH_TARGET, TrainStep
from trainer.runner.runner import Progress, RunConfig, RunError, RunResult


class _Configured(torch.optim.SGD):
    """A torch optimizer that only carries the task's optimizer config (zkdv lowers it to that config)."""

    def __init__(self, params: Any, config: OptimizerConfig) -> None:
        super().__init__(params, lr=config.lr)
        self.task_config = config

    def step(self, closure: Any = None) -> Any:  # pragma: no cover - zkdv lowers every step
        raise RunError("a task's optimizer steps only inside a zkdv transaction")


class AttestedRun:
    """A task's run through zkdv, advanced checkpoint interval by checkpoint interval.

    `advance(to_step)` trains up to `to_step` and returns the state there (the model's
    parameters and buffers and zkdv's optimizer state); `close()` waits for every sampled check
    (raising `zkdv.ZKDVPoisonedError` if one failed) and returns the checkpoint roots and
    losses read back from the transcript. This is the shape a trainer agent's tick loop needs:
    train one interval per tick, self-audit by the sampled checks, commit the roots at the end.
    """

    def __init__(
        self,
        step: TrainStep,
        dataset: Dataset,
        config: RunConfig,
        initial: Mapping[str, torch.Tensor],
        folder: Path,
        *,
        state_check_probability: float = 0.05,
        update_check_probability: float = 0.05,
        check_every: int | None = None,
        resume: bool = False,
    ) -> None:
        import zkdv
        import zkdv.torch
        from zkdv._optim import ConfigForm

        policy = (
            zkdv.SamplingPolicy.DEBUGCheckEvery(check_every)
            if check_every is not None
            else zkdv.SamplingPolicy(state_check_probability, update_check_probability)
        )
        self.folder = Path(folder) / "zkdv"
        self.dataset, self.config, self.step = dataset, config, step
        proof = zkdv.torch.ZKDV(
            self.folder,
            zkdv.ZKDVConfig(name="refereed-task", sampling_policy=policy),
            replay_snapshot_interval=config.checkpoint_interval,
        )
        model = step.model
        with torch.no_grad():
            params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
            for n in step.param_names:
                params[n].copy_(initial[PARAM + n])
            for n in step.buffer_names:
                buffers[n].copy_(initial[BUFFER + n])
        opt = _Configured(model.parameters(), step.optimizer)
        proof.register_functional_optimizer(_Configured, lambda o: ConfigForm(o.task_config))  # type: ignore[attr-defined]
        example = dataset.batch(config.seed, 0, config.batch_size)
        row = sum(t[0].numel() * t.element_size() if t.dim() else t.element_size() for t in example.values())
        proof.start(rolling_window=min(32, row), probe_ratio=0.01, resume=resume)
        self.model, self.opt = proof.prepare(model, opt)  # a resumed run: the model now holds the snapshot
        self.proof = proof
        loss_fn = step.loss_fn

        @proof.attest
        def attested_step(
            model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any]
        ) -> torch.Tensor:
            loss = loss_fn(proof.forward(model, batch[BATCH_INPUT]), batch[BATCH_TARGET])
            proof.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            return loss

        self._attested_step = attested_step  # called inside each transaction: it runs the sealed program

        self.losses: dict[int, float] = {}
        self.roots: dict[int, bytes] = {}  # step k -> the committed post root of step k - 1 (0: pre of step 0)
        self.steps_done = proof.resume_step
        if self.steps_done:  # the kept transcript's roots and losses before the resume step
            from zkdv.transcript import read_records

            for r, _ in read_records(self.folder / "records.cborl"):
                if r["type"] == "step":
                    self._keep(int(r["step"]), r)

    def advance(self, to_step: int, progress: Progress | None = None) -> dict[str, torch.Tensor]:
        """Train steps `steps_done .. to_step - 1`; the state after them."""
        if not self.steps_done <= to_step <= self.config.steps:
            raise RunError(f"cannot advance from step {self.steps_done} to {to_step} (T = {self.config.steps})")
        for s in range(self.steps_done, to_step):
            batch = self.dataset.batch(self.config.seed, s, self.config.batch_size)
            with self.proof.transaction(batch=batch):
                loss = self._attested_step(self.model, self.opt, batch)
            self.losses[s] = float(loss.detach())
            self.roots.setdefault(0, self.proof.last_pre_root)
            self.roots[s + 1] = self.proof.last_post_root
            self.steps_done = s + 1
            if progress is not None:
                progress(s + 1, self.losses[s])
        return {n: t.detach().clone() for n, t in self.proof._read_state().items()}

    def _keep(self, s: int, record: Mapping[str, Any]) -> None:
        import struct

        self.losses[s] = struct.unpack("<f", record["loss"])[0]
        if s == 0:
            self.roots[0] = record["pre"]
        self.roots[s + 1] = record["post"]

    def close(self) -> RunResult:
        """Wait for every check (ZKDVPoisonedError if one failed); the run's checkpoints from the transcript.

        `checked` lists the steps a sampled check replayed and found equal, bit for bit."""
        from zkdv.transcript import read_records

        self.proof.close()
        records = read_records(self.folder / "records.cborl")
        steps = {r["step"]: r for r, _ in records if r["type"] == "step"}
        self.checked = sorted(int(r["step"]) for r, _ in records if r["type"] == "check" and r["ok"])
        checkpoints = {0: steps[0]["pre"]} if steps else {}
        for k in self.config.checkpoint_steps[1:]:
            if k - 1 in steps:
                checkpoints[k] = steps[k - 1]["post"]
        return RunResult(checkpoints, dict(self.losses))


_HASHES: dict[tuple[str, tuple[Any, ...]], bytes | str] = {}  # (workload, batch layout) -> program hash or why not


def _bundled_steps(example: Mapping[str, torch.Tensor]) -> dict[str, Callable[[], TrainStep]]:
    from trainer import workloads

    x = example.get(BATCH_INPUT)
    context = int(x.shape[0]) if isinstance(x, torch.Tensor) and x.dim() == 1 else 32
    return {
        "mlp-digits": workloads.mlp_digits_step,
        f"char-transformer/{context}": lambda: workloads.char_transformer_step(context),
    }


def bundled_step(program_hash: bytes, dataset: Dataset, config: RunConfig) -> tuple[TrainStep | None, str]:
    """The `TrainStep` of a bundled workload whose captured program is `program_hash` for this dataset and
    batch size (a fresh model: a run trains it), with the workload's name; `(None, why)` when none is.

    The candidates are captured once per process and batch layout (about two seconds each)."""
    from trainer.program import capture

    batch = dataset.batch(config.seed, 0, config.batch_size)
    layout = tuple((k, v.dtype, tuple(v.shape)) for k, v in sorted(batch.items()))
    tried = []
    for name, make in _bundled_steps(dataset.examples[0]).items():
        key = (name, layout)
        if key not in _HASHES:
            step = make()
            try:
                _HASHES[key] = capture(step, step.init_state(), batch).program_hash
            except Exception as e:  # the batch does not fit the model: not this workload
                _HASHES[key] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        got = _HASHES[key]
        if got == program_hash:
            return make(), name
        tried.append(f"{name} ({got.hex()[:16]}..)" if isinstance(got, bytes) else f"{name} (does not fit: {got})")
    return None, f"the program {program_hash.hex()[:16]}.. is none of the bundled workloads: {'; '.join(tried)}"


def train_attested(
    step: TrainStep,
    dataset: Dataset,
    config: RunConfig,
    initial: Mapping[str, torch.Tensor],
    folder: Path,
    *,
    state_check_probability: float = 0.05,
    update_check_probability: float = 0.05,
    check_every: int | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """All `T` steps of the task through zkdv; checkpoint roots and losses from its transcript."""
    run = AttestedRun(step, dataset, config, initial, folder, state_check_probability=state_check_probability,
                      update_check_probability=update_check_probability, check_every=check_every)
    run.advance(config.steps, progress)
    return run.close()
