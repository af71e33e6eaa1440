"""The two bundled workloads: an MLP on digits and a character transformer on stdlib text.

Each is a complete task description (step function, dataset, run config, keyed initial
state), so a run is a function of (program, dataset, seed, config) alone. Initial
parameters come from the keyed generator of docs/data.md by the init rules of
`trainer.data.init` (torch's default bounds). A client's own model is a `Workload.of(...)`
(docs/bring-your-own-model.md), loaded by the CLI with `load_workload("package.module:function")`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F
from torch import nn

from trainer.data.dataset import Dataset, char_sequences, digits, stdlib_text
from trainer.data.init import DEFAULTS, InitRules
from trainer.program import AdamWConfig, OptimizerConfig, Program, SGDConfig, TrainStep, build_step, capture
from trainer.program.models import MLP, CharTransformer, MLPConfig, TransformerConfig, sequence_cross_entropy
from trainer.program.optim import PARAM
from trainer.program.step import LossFn
from trainer.runner.runner import RunConfig


def keyed_init(step: TrainStep, seed: int, rules: InitRules = DEFAULTS) -> dict[str, torch.Tensor]:
    """The step's initial state with every parameter drawn from the keyed generator by its init rule
    (trainer.data.init); buffers and optimizer state as `step.init_state()` gives them."""
    state = step.init_state()
    for name, value in rules.initial(step.model, seed).items():
        state[PARAM + name] = value
    return state


class WorkloadError(ValueError):
    """A workload cannot be loaded or built: the message names the input and the fix."""


@dataclass(frozen=True)
class Workload:
    """A complete task description: the pure step, its dataset, the run config and the init rules.

    Build one from your own model with `Workload.of(...)`; `program` captures the step with RepOps
    operators (UnsupportedOperatorsError names any operator without a kernel and your line that uses it).
    """

    name: str
    step: TrainStep
    dataset: Dataset
    config: RunConfig
    init: InitRules = DEFAULTS

    @classmethod
    def of(
        cls,
        name: str,
        model: nn.Module,
        loss_fn: LossFn,
        optimizer: OptimizerConfig,
        dataset: Dataset,
        *,
        steps: int,
        checkpoint_interval: int,
        batch_size: int,
        seed: int = 1,
        init: InitRules = DEFAULTS,
    ) -> Workload:
        """A workload from an ordinary module, a loss `loss_fn(model(x), y)`, an optimizer config and a dataset
        whose examples hold `x` and `y`."""
        return cls(name, build_step(model, loss_fn, optimizer), dataset,
                   RunConfig(steps, checkpoint_interval, batch_size, seed), init)  # fmt: skip

    def initial_state(self) -> dict[str, torch.Tensor]:
        return keyed_init(self.step, self.config.seed, self.init)

    @cached_property
    def program(self) -> Program:
        return capture(self.step, self.initial_state(), self.dataset.batch(self.config.seed, 0, self.config.batch_size))


def load_workload(spec: str) -> Workload:
    """The workload returned by `package.module:function` (called with no arguments).

    The current directory is searched first for the module, as `python -m` does. Raises WorkloadError for a
    malformed spec, a module that does not import, a missing or non-callable function, a call that raises, and
    a result that is not a Workload.
    """
    import importlib
    import os
    import sys

    module_name, sep, fn_name = spec.partition(":")
    if not sep or not module_name or not fn_name or not fn_name.isidentifier():
        raise WorkloadError(f"--workload {spec!r} is not of the form package.module:function")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # an import runs the user's code: anything may come out
        why = f"{type(e).__name__}: {e}"
        raise WorkloadError(f"--workload {spec!r}: module {module_name!r} does not import: {why}") from e
    fn = getattr(module, fn_name, None)
    if fn is None:
        raise WorkloadError(f"--workload {spec!r}: module {module_name!r} has no attribute {fn_name!r}")
    if not callable(fn):
        raise WorkloadError(f"--workload {spec!r}: {fn_name!r} is a {type(fn).__name__}, not a function")
    try:
        workload = fn()
    except Exception as e:
        raise WorkloadError(f"--workload {spec!r}: {fn_name}() raised {type(e).__name__}: {e}") from e
    if not isinstance(workload, Workload):
        raise WorkloadError(
            f"--workload {spec!r}: {fn_name}() returned a {type(workload).__name__}, not a trainer.workloads.Workload "
            "(build one with Workload.of(name, model, loss_fn, optimizer, dataset, steps=..., ...))"
        )
    return workload


def mlp_digits_step() -> TrainStep:
    """The MLP workload's step (a fresh model each call: a run trains its own copy)."""
    torch.manual_seed(0)  # only the module's throwaway default init; the state comes from keyed_init
    return build_step(MLP(MLPConfig()), F.cross_entropy, SGDConfig(lr=0.1, momentum=0.9, weight_decay=1e-4))


def char_transformer_step(context: int = 32) -> TrainStep:
    """The transformer workload's step for sequences of `context` tokens (a fresh model each call)."""
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=256, context=context, d_model=64, n_heads=4, n_layers=2)
    return build_step(
        CharTransformer(config),
        sequence_cross_entropy,
        AdamWConfig(lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01, clip_grad_norm=1.0),
    )


def mlp_digits(steps: int = 300, checkpoint_interval: int = 50, batch_size: int = 64, seed: int = 1) -> Workload:
    step = mlp_digits_step()
    return Workload("mlp-digits", step, digits("train"), RunConfig(steps, checkpoint_interval, batch_size, seed))


def char_transformer(
    steps: int = 200, checkpoint_interval: int = 50, batch_size: int = 16, seed: int = 1, context: int = 32
) -> Workload:
    step = char_transformer_step(context)
    data = char_sequences(stdlib_text(), context)
    return Workload("char-transformer", step, data, RunConfig(steps, checkpoint_interval, batch_size, seed))


def accuracy(workload: Workload, state: dict[str, torch.Tensor], dataset: Dataset) -> float:
    """Classification accuracy of the MLP workload's model with parameters from `state` (eager torch)."""
    params = {n: state[PARAM + n] for n in workload.step.param_names}
    x = torch.stack([ex["x"] for ex in dataset.examples])
    y = torch.stack([ex["y"] for ex in dataset.examples])
    with torch.no_grad():
        logits = torch.func.functional_call(workload.step.model, params, (x,))
    return float((logits.argmax(-1) == y).float().mean())
