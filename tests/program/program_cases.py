"""The two reference models, their example states and batches, and their captured programs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from trainer.program import AdamWConfig, Program, SGDConfig, TrainStep, build_step, capture
from trainer.program.models import MLP, CharTransformer, MLPConfig, TransformerConfig, sequence_cross_entropy


@dataclass(frozen=True)
class Case:
    name: str
    step: TrainStep
    state: dict[str, torch.Tensor]
    batch: dict[str, torch.Tensor]
    program: Program


def mlp_case() -> Case:
    torch.manual_seed(0)
    step = build_step(MLP(MLPConfig()), F.cross_entropy, SGDConfig(lr=0.1, momentum=0.9, weight_decay=1e-4))
    state = step.init_state()
    batch = {"x": torch.randn(32, 64), "y": torch.randint(0, 10, (32,))}
    return Case("mlp", step, state, batch, capture(step, state, batch))


def transformer_case() -> Case:
    torch.manual_seed(1)
    config = TransformerConfig(vocab_size=256, context=32, d_model=64, n_heads=4, n_layers=2)
    step = build_step(
        CharTransformer(config),
        sequence_cross_entropy,
        AdamWConfig(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, clip_grad_norm=1.0),
    )
    state = step.init_state()
    batch = {"x": torch.randint(0, 256, (4, 32)), "y": torch.randint(0, 256, (4, 32))}
    return Case("transformer", step, state, batch, capture(step, state, batch))
