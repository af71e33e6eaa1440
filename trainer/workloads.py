"""The two bundled workloads: an MLP on digits and a character transformer on stdlib text.

Each is a complete task description (step function, dataset, run config, keyed initial
state), so a run is a function of (program, dataset, seed, config) alone. Initial
parameters come from the keyed generator of docs/data.md, with torch's default bounds:
Linear weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)), Embedding U(-sqrt(3), sqrt(3))
(unit variance), LayerNorm weight 1 and bias 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F
from torch import nn

from trainer.data.dataset import Dataset, char_sequences, digits, stdlib_text
from trainer.data.keyed import uniform_symmetric
from trainer.program import AdamWConfig, Program, SGDConfig, TrainStep, build_step, capture
from trainer.program.models import MLP, CharTransformer, MLPConfig, TransformerConfig, sequence_cross_entropy
from trainer.program.optim import PARAM
from trainer.runner.runner import RunConfig


def keyed_init(step: TrainStep, seed: int) -> dict[str, torch.Tensor]:
    """The step's initial state with every parameter drawn from the keyed generator."""
    state = step.init_state()
    modules = dict(step.model.named_modules())
    for name in step.param_names:
        owner, _, leaf = name.rpartition(".")
        module = modules[owner]
        key = PARAM + name
        shape = tuple(state[key].shape)
        if isinstance(module, nn.Linear):
            state[key] = uniform_symmetric(seed, key, shape, 1.0 / math.sqrt(module.in_features))
        elif isinstance(module, nn.Embedding):
            state[key] = uniform_symmetric(seed, key, shape, math.sqrt(3.0))
        elif isinstance(module, nn.LayerNorm):
            state[key] = torch.ones(shape) if leaf == "weight" else torch.zeros(shape)
        else:
            raise TypeError(f"no keyed init rule for parameter {name!r} of a {type(module).__name__}")
    return state


@dataclass(frozen=True)
class Workload:
    name: str
    step: TrainStep
    dataset: Dataset
    config: RunConfig

    def initial_state(self) -> dict[str, torch.Tensor]:
        return keyed_init(self.step, self.config.seed)

    @cached_property
    def program(self) -> Program:
        return capture(self.step, self.initial_state(), self.dataset.batch(self.config.seed, 0, self.config.batch_size))


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
