"""Optimizer configs and their functional updates, written with plain tensor arithmetic.

Every update is a pure function of (parameter, gradient, optimizer state) built from
elementwise add, sub, mul, div and sqrt with Python-number operands, so that after
capture it is a handful of primitive ATen nodes (no fused optimizer kernels, no pow with a
tensor exponent). AdamW's bias corrections are driven by the running powers `beta1^t`
and `beta2^t`, kept as fp32 state scalars and multiplied once per step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from trainer.program.errors import ProgramError

Tensor = torch.Tensor

CLIP_EPS = 1e-6  # as in torch.nn.utils.clip_grad_norm_


@dataclass(frozen=True, slots=True)
class SGDConfig:
    """SGD with momentum and (coupled, L2) weight decay, as `torch.optim.SGD` with dampening 0.

    `g = grad + weight_decay * p; buf = momentum * buf + g; p -= lr * (g + momentum * buf if
    nesterov else buf)`; with `momentum == 0` there is no buffer and `p -= lr * g`.
    """

    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    clip_grad_norm: float | None = None

    def __post_init__(self) -> None:
        _check_positive("lr", self.lr)
        _check_range("momentum", self.momentum, 0.0, 1.0)
        _check_nonnegative("weight_decay", self.weight_decay)
        if self.nesterov and self.momentum == 0.0:
            raise ProgramError("SGD with nesterov=True needs a momentum > 0")
        _check_clip(self.clip_grad_norm)


@dataclass(frozen=True, slots=True)
class AdamWConfig:
    """AdamW with decoupled weight decay, as `torch.optim.AdamW` (amsgrad off).

    `p *= 1 - lr * weight_decay; m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g;
    b1^t *= b1; b2^t *= b2; p -= lr * (m / (1 - b1^t)) / (sqrt(v) / sqrt(1 - b2^t) + eps)`.
    """

    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01
    clip_grad_norm: float | None = None

    def __post_init__(self) -> None:
        _check_positive("lr", self.lr)
        if len(self.betas) != 2:
            raise ProgramError(f"betas must be a pair, got {self.betas!r}")
        _check_range("betas[0]", self.betas[0], 0.0, 1.0)
        _check_range("betas[1]", self.betas[1], 0.0, 1.0)
        _check_positive("eps", self.eps)
        _check_nonnegative("weight_decay", self.weight_decay)
        _check_clip(self.clip_grad_norm)


OptimizerConfig = SGDConfig | AdamWConfig


def _check_number(name: str, v: float) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ProgramError(f"{name} must be a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(v):
        raise ProgramError(f"{name} must be a finite number, got {v!r}")


def _check_positive(name: str, v: float) -> None:
    _check_number(name, v)
    if not v > 0.0:
        raise ProgramError(f"{name} must be > 0, got {v!r}")


def _check_nonnegative(name: str, v: float) -> None:
    _check_number(name, v)
    if not v >= 0.0:
        raise ProgramError(f"{name} must be >= 0, got {v!r}")


def _check_range(name: str, v: float, lo: float, hi: float) -> None:
    _check_number(name, v)
    if not lo <= v < hi:
        raise ProgramError(f"{name} must lie in [{lo}, {hi}), got {v!r}")


def _check_clip(v: float | None) -> None:
    if v is not None:
        _check_positive("clip_grad_norm", v)


# Canonical state names (docs/program.md, "State names").
PARAM = "param/"
BUFFER = "buffer/"
MOMENTUM = "optim/momentum_buffer/"
EXP_AVG = "optim/exp_avg/"
EXP_AVG_SQ = "optim/exp_avg_sq/"
BETA1_POWER = "optim/beta1_power"
BETA2_POWER = "optim/beta2_power"


def optimizer_state_names(config: OptimizerConfig, param_names: Sequence[str]) -> list[str]:
    """The state names the optimizer adds for parameters with these (module) names."""
    if isinstance(config, SGDConfig):
        return [MOMENTUM + n for n in param_names] if config.momentum != 0.0 else []
    return [EXP_AVG + n for n in param_names] + [EXP_AVG_SQ + n for n in param_names] + [BETA1_POWER, BETA2_POWER]


def init_optimizer_state(config: OptimizerConfig, params: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Optimizer state before step 1, keyed by canonical state names."""
    state: dict[str, Tensor] = {}
    if isinstance(config, SGDConfig):
        if config.momentum != 0.0:
            for name, p in params.items():
                state[MOMENTUM + name] = torch.zeros_like(p, memory_format=torch.contiguous_format)
        return state
    for name, p in params.items():
        state[EXP_AVG + name] = torch.zeros_like(p, memory_format=torch.contiguous_format)
        state[EXP_AVG_SQ + name] = torch.zeros_like(p, memory_format=torch.contiguous_format)
    state[BETA1_POWER] = torch.ones((), dtype=torch.float32)
    state[BETA2_POWER] = torch.ones((), dtype=torch.float32)
    return state


def clip_by_global_norm(grads: Mapping[str, Tensor], max_norm: float) -> dict[str, Tensor]:
    """`g * min(1, max_norm / (||g||_2 + 1e-6))` over all gradients together.

    The squared norm is summed per tensor and then across tensors in the mapping's order
    (the canonical name order, as the step passes them), one add per tensor.
    """
    total: Tensor | None = None
    for g in grads.values():
        sq = (g * g).sum()
        total = sq if total is None else total + sq
    if total is None:
        return {}
    norm = torch.sqrt(total)
    scale = torch.clamp(torch.full_like(norm, max_norm) / (norm + CLIP_EPS), max=1.0)
    return {name: g * scale for name, g in grads.items()}


def apply_update(
    config: OptimizerConfig, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """One optimizer step: (new parameters, new optimizer state), same keys as given."""
    if isinstance(config, SGDConfig):
        return _sgd(config, params, grads, state)
    return _adamw(config, params, grads, state)


def _sgd(
    c: SGDConfig, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    new_params: dict[str, Tensor] = {}
    new_state: dict[str, Tensor] = {}
    for name, p in params.items():
        g = grads[name]
        if c.weight_decay != 0.0:
            g = g + c.weight_decay * p
        if c.momentum != 0.0:
            buf = c.momentum * state[MOMENTUM + name] + g
            new_state[MOMENTUM + name] = buf
            g = g + c.momentum * buf if c.nesterov else buf
        new_params[name] = p - c.lr * g
    return new_params, new_state


def _adamw(
    c: AdamWConfig, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    beta1, beta2 = c.betas
    b1_power = state[BETA1_POWER] * beta1
    b2_power = state[BETA2_POWER] * beta2
    bias_correction1 = 1.0 - b1_power
    bias_correction2_sqrt = torch.sqrt(1.0 - b2_power)
    decay = 1.0 - c.lr * c.weight_decay  # a Python number, as torch computes it
    new_params: dict[str, Tensor] = {}
    new_state: dict[str, Tensor] = {BETA1_POWER: b1_power, BETA2_POWER: b2_power}
    for name, p in params.items():
        g = grads[name]
        m = beta1 * state[EXP_AVG + name] + (1.0 - beta1) * g
        v = beta2 * state[EXP_AVG_SQ + name] + (1.0 - beta2) * (g * g)
        denom = torch.sqrt(v) / bias_correction2_sqrt + c.eps
        if c.weight_decay != 0.0:
            p = p * decay
        new_params[name] = p - c.lr * ((m / bias_correction1) / denom)
        new_state[EXP_AVG + name] = m
        new_state[EXP_AVG_SQ + name] = v
    return new_params, new_state
