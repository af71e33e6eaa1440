"""Training runs as a function of (step function, dataset, seed, config), with checkpoints.

A run of `T` steps records the state root before step 0 and after every `c`-th step
(checkpoints at steps 0, c, 2c, ..., T), stores each checkpoint's state in a
content-addressed snapshot folder, and commits the checkpoint list as a list root over
records `"CKPT" || u256(step) || stateRoot` (docs/commitments.md section 4). Any run can
resume from any stored checkpoint, and any single step can be replayed from the checkpoint
at or before it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from trainer.commit import MerkleTree, record_leaf, state_root
from trainer.data.dataset import Dataset
from trainer.runner.snapshots import SnapshotStore, State

CHECKPOINT_TAG = b"CKPT"

StepFn = Callable[[State, dict[str, torch.Tensor]], tuple[State, torch.Tensor]]
Progress = Callable[[int, float], None]  # (steps done, loss of the last step)


class RunError(Exception):
    """A run cannot start or continue as asked."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    steps: int  # T
    checkpoint_interval: int  # c; T must be a multiple of c
    batch_size: int
    seed: int

    def __post_init__(self) -> None:
        if self.steps <= 0 or self.checkpoint_interval <= 0 or self.batch_size <= 0:
            raise RunError(f"steps, checkpoint_interval and batch_size must be positive: {self}")
        if self.steps % self.checkpoint_interval:
            raise RunError(
                f"steps ({self.steps}) must be a multiple of checkpoint_interval ({self.checkpoint_interval})"
            )
        if not 0 <= self.seed < 2**256:
            raise RunError(f"seed {self.seed} does not fit in 256 unsigned bits")

    @property
    def checkpoint_steps(self) -> list[int]:
        return list(range(0, self.steps + 1, self.checkpoint_interval))


def checkpoint_leaf(step: int, root: bytes) -> bytes:
    return record_leaf(CHECKPOINT_TAG, [step, root])


@dataclass(slots=True)
class RunResult:
    checkpoints: dict[int, bytes]  # step -> state root
    losses: dict[int, float] = field(default_factory=dict)  # step -> loss of that step

    @property
    def final_root(self) -> bytes:
        return self.checkpoints[max(self.checkpoints)]

    def tree(self) -> MerkleTree:
        return MerkleTree([checkpoint_leaf(s, self.checkpoints[s]) for s in sorted(self.checkpoints)])

    @property
    def checkpoint_list_root(self) -> bytes:
        return self.tree().root


class Runner:
    """Runs `step` over the task's batches, checkpointing into `folder`.

    `folder/snapshots/` holds the checkpoint states; `folder/run.json` the checkpoint roots
    and losses so far, rewritten atomically after every checkpoint, so a killed run resumes
    from its last checkpoint with `run(resume=True)`.
    """

    def __init__(self, step: StepFn, dataset: Dataset, config: RunConfig, folder: Path) -> None:
        self.step = step
        self.dataset = dataset
        self.config = config
        self.folder = Path(folder)
        self.snapshots = SnapshotStore(self.folder / "snapshots")
        self.journal = self.folder / "run.json"

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        return self.dataset.batch(self.config.seed, step, self.config.batch_size)

    def run(
        self, initial: Mapping[str, torch.Tensor], *, resume: bool = False, progress: Progress | None = None
    ) -> RunResult:
        """All `T` steps from `initial` (or from the last journaled checkpoint when `resume`)."""
        result = RunResult({0: self.snapshots.put(initial)})
        start, state = 0, dict(initial)
        if resume and self.journal.is_file():
            result = self._read_journal()
            if result.checkpoints.get(0) != state_root(initial):
                raise RunError(f"{self.journal} belongs to a run from another initial state")
            start = max(result.checkpoints)
            state = self.snapshots.get(result.checkpoints[start])
        return self._run_from(start, state, result, progress)

    def resume_from(self, step: int, root: bytes, *, progress: Progress | None = None) -> RunResult:
        """Continue to step T from the stored checkpoint `root` taken at `step`."""
        if step % self.config.checkpoint_interval or not 0 <= step <= self.config.steps:
            raise RunError(f"step {step} is not a checkpoint step of {self.config}")
        return self._run_from(step, self.snapshots.get(root), RunResult({step: root}), progress)

    def replay(self, step: int, checkpoint_root: bytes) -> tuple[bytes, State]:
        """State root (and state) after step `step`, recomputed from the checkpoint before it."""
        if not 0 <= step < self.config.steps:
            raise RunError(f"step {step} is outside 0 .. {self.config.steps - 1}")
        first = step - step % self.config.checkpoint_interval
        state = self.snapshots.get(checkpoint_root)
        for s in range(first, step + 1):
            state, _ = self.step(state, self.batch(s))
        return state_root(state), state

    def _run_from(self, start: int, state: State, result: RunResult, progress: Progress | None) -> RunResult:
        c = self.config.checkpoint_interval
        for s in range(start, self.config.steps):
            state, loss = self.step(state, self.batch(s))
            result.losses[s] = float(loss)
            if (s + 1) % c == 0:
                result.checkpoints[s + 1] = self.snapshots.put(state)
                self._write_journal(result)
            if progress is not None:
                progress(s + 1, result.losses[s])
        return result

    def _write_journal(self, result: RunResult) -> None:
        data = {
            "config": {
                "steps": self.config.steps,
                "checkpoint_interval": self.config.checkpoint_interval,
                "batch_size": self.config.batch_size,
                "seed": self.config.seed,
            },
            "dataset_root": self.dataset.root.hex(),
            "checkpoints": {str(s): r.hex() for s, r in sorted(result.checkpoints.items())},
            "losses": {str(s): v for s, v in sorted(result.losses.items())},
        }
        fd, tmp = tempfile.mkstemp(prefix=".run-", dir=self.folder)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, self.journal)

    def _read_journal(self) -> RunResult:
        try:
            data = json.loads(self.journal.read_text())
            if data["dataset_root"] != self.dataset.root.hex() or data["config"]["seed"] != self.config.seed:
                raise RunError(f"{self.journal} belongs to another task (dataset or seed differ)")
            return RunResult(
                {int(s): bytes.fromhex(r) for s, r in data["checkpoints"].items()},
                {int(s): float(v) for s, v in data["losses"].items()},
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise RunError(f"cannot read the run journal {self.journal}: {e}") from e
