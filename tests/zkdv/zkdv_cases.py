"""A small wrapped training loop shared by the zkdv tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

import zkdv
import zkdv.torch


def batch(step: int, rows: int = 8, features: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of `step`, a function of the step alone (so a resumed run sees the same data)."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(rows, features, generator=g), torch.randint(2, (rows,), generator=g)


def mlp(hidden: int = 32, features: int = 10) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def make_proof(
    path: Path,
    *,
    policy: zkdv.SamplingPolicy | None = None,
    interval: int = 4,
    max_in_flight: int = 2,
    model: nn.Module | None = None,
    optimizer: Callable[[Any], torch.optim.Optimizer] | None = None,
    resume: bool = False,
) -> tuple[zkdv.torch.ZKDV, nn.Module, torch.optim.Optimizer]:
    config = zkdv.ZKDVConfig(name="test", sampling_policy=policy or zkdv.SamplingPolicy())
    proof = zkdv.torch.ZKDV(path, config, max_in_flight=max_in_flight, replay_snapshot_interval=interval)
    proof.start(rolling_window=16, probe_ratio=0.1, resume=resume)
    model = model if model is not None else mlp()
    opt = (optimizer or (lambda ps: torch.optim.AdamW(ps, lr=1e-2)))(model.parameters())
    model, opt = proof.prepare(model, opt)

    @proof.attest
    def attested_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any) -> None:
        inputs, targets = batch
        loss = F.cross_entropy(proof.forward(model, inputs), targets)
        proof.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

    return proof, model, opt


def train_step(
    proof: zkdv.torch.ZKDV, model: nn.Module, opt: torch.optim.Optimizer, step: int,
    overlap: zkdv.overlap.Overlap = zkdv.overlap.UNCHECKED,
) -> None:
    inputs, targets = batch(step)
    with proof.transaction(batch=(inputs, targets), overlap=overlap):
        loss = F.cross_entropy(model(inputs), targets)
        proof.backward(loss)
        opt.step()
        opt.zero_grad()
