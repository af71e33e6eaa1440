"""Functional forms of torch optimizers: what a prepared optimizer's `step()` lowers to in a transaction.

A functional form is a pure function `update(params, grads, state) -> (new_params, new_state)`
over dicts keyed by parameter (module) names and canonical optimizer-state names, built from
plain tensor arithmetic so that it captures into a few primitive ATen nodes and runs on the
RepOps kernels. Built in: `torch.optim.SGD` (dampening 0), `torch.optim.Adam` and
`torch.optim.AdamW` (amsgrad off), with the formulas of `trainer.program.optim`. Anything
else is refused until a form is registered with `ZKDV.register_functional_optimizer`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from trainer.program.optim import (
    BETA1_POWER,
    BETA2_POWER,
    EXP_AVG,
    EXP_AVG_SQ,
    MOMENTUM,
    AdamWConfig,
    OptimizerConfig,
    SGDConfig,
    apply_update,
    clip_by_global_norm,
    init_optimizer_state,
)
from zkdv.errors import UnsupportedOptimizerError

Tensor = torch.Tensor
Params = dict[str, Tensor]


class FunctionalOptimizer(Protocol):
    """What `register_functional_optimizer`'s factory returns for a torch optimizer."""

    def describe(self) -> dict[str, Any]:
        """Hyperparameters as a CBOR-able map; recorded in the root record, compared at every step."""
        ...

    def init_state(self, params: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Optimizer state before the first attested step, keyed by canonical state names."""
        ...

    def update(
        self, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
    ) -> tuple[Params, dict[str, Tensor]]:
        """(new parameters, new optimizer state); pure tensor arithmetic, same keys as given."""
        ...


Factory = Callable[[torch.optim.Optimizer], FunctionalOptimizer]


@dataclass(frozen=True)
class ConfigForm:
    """A form given by a `trainer.program.optim` config (SGD or AdamW)."""

    config: OptimizerConfig

    def describe(self) -> dict[str, Any]:
        c = self.config
        clip = {} if c.clip_grad_norm is None else {"clip_grad_norm": c.clip_grad_norm}
        if isinstance(c, SGDConfig):
            return {"kind": "sgd", "lr": c.lr, "momentum": c.momentum, "weight_decay": c.weight_decay,
                    "nesterov": c.nesterov, **clip}
        return {"kind": "adamw", "lr": c.lr, "betas": list(c.betas), "eps": c.eps, "weight_decay": c.weight_decay,
                **clip}

    def init_state(self, params: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return init_optimizer_state(self.config, params)

    def update(
        self, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
    ) -> tuple[Params, dict[str, Tensor]]:
        if self.config.clip_grad_norm is not None:  # as trainer.program.step does, before the update
            grads = clip_by_global_norm(grads, self.config.clip_grad_norm)
        return apply_update(self.config, params, grads, state)


@dataclass(frozen=True)
class AdamForm:
    """`torch.optim.Adam`: AdamW's update with coupled (L2) weight decay, `g = grad + wd * p`."""

    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float

    def describe(self) -> dict[str, Any]:
        return {"kind": "adam", "lr": self.lr, "betas": list(self.betas), "eps": self.eps,
                "weight_decay": self.weight_decay}

    def _adamw(self) -> AdamWConfig:
        return AdamWConfig(lr=self.lr, betas=self.betas, eps=self.eps, weight_decay=0.0)

    def init_state(self, params: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return init_optimizer_state(self._adamw(), params)

    def update(
        self, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor]
    ) -> tuple[Params, dict[str, Tensor]]:
        if self.weight_decay != 0.0:
            grads = {n: g + self.weight_decay * params[n] for n, g in grads.items()}
        return apply_update(self._adamw(), params, grads, state)


def _single_group(opt: torch.optim.Optimizer) -> dict[str, Any]:
    groups = opt.param_groups
    keys = [k for k in groups[0] if k != "params"]
    for g in groups[1:]:
        if any(g.get(k) != groups[0].get(k) for k in keys):
            raise UnsupportedOptimizerError(
                f"{type(opt).__name__} has {len(groups)} parameter groups with different hyperparameters; "
                "zkdv's built-in forms take one set (register a functional form for per-group settings)"
            )
    return groups[0]


def _flag(opt: torch.optim.Optimizer, group: Mapping[str, Any], key: str, want: Any) -> None:
    if group.get(key, want) != want:
        raise UnsupportedOptimizerError(
            f"{type(opt).__name__}({key}={group[key]!r}) has no built-in functional form (only {key}={want!r}); "
            "call proof.register_functional_optimizer(...) with one"
        )


def _float(opt: torch.optim.Optimizer, group: Mapping[str, Any], key: str) -> float:
    v = group[key]
    if isinstance(v, Tensor):
        raise UnsupportedOptimizerError(f"{type(opt).__name__}: a tensor {key} is not supported; pass a float")
    return float(v)


def sgd_form(opt: torch.optim.Optimizer) -> FunctionalOptimizer:
    g = _single_group(opt)
    _flag(opt, g, "dampening", 0)
    _flag(opt, g, "maximize", False)
    return ConfigForm(SGDConfig(lr=_float(opt, g, "lr"), momentum=float(g["momentum"]),
                                weight_decay=float(g["weight_decay"]), nesterov=bool(g["nesterov"])))


def adamw_form(opt: torch.optim.Optimizer) -> FunctionalOptimizer:
    g = _single_group(opt)
    _flag(opt, g, "amsgrad", False)
    _flag(opt, g, "maximize", False)
    b1, b2 = g["betas"]
    return ConfigForm(AdamWConfig(lr=_float(opt, g, "lr"), betas=(float(b1), float(b2)), eps=float(g["eps"]),
                                  weight_decay=float(g["weight_decay"])))


def adam_form(opt: torch.optim.Optimizer) -> FunctionalOptimizer:
    g = _single_group(opt)
    _flag(opt, g, "amsgrad", False)
    _flag(opt, g, "maximize", False)
    b1, b2 = g["betas"]
    return AdamForm(lr=_float(opt, g, "lr"), betas=(float(b1), float(b2)), eps=float(g["eps"]),
                    weight_decay=float(g["weight_decay"]))


BUILTIN: dict[type, Factory] = {torch.optim.SGD: sgd_form, torch.optim.AdamW: adamw_form, torch.optim.Adam: adam_form}


def refuse(opt: torch.optim.Optimizer) -> UnsupportedOptimizerError:
    cls = type(opt)
    why = (
        "LBFGS re-evaluates a closure inside step() and has no functional form"
        if isinstance(opt, torch.optim.LBFGS)
        else f"{cls.__module__}.{cls.__qualname__} has no registered functional form"
    )
    return UnsupportedOptimizerError(
        f"cannot prepare {cls.__name__}: {why}. Call proof.register_functional_optimizer({cls.__name__}, factory) "
        "with a factory that returns the optimizer's pure update (describe(), init_state(params), "
        "update(params, grads, state)), before proof.prepare(...)"
    )


def mirror_state(opt: torch.optim.Optimizer, params: Mapping[str, Tensor], state: Mapping[str, Tensor],
                 steps: int) -> None:
    """Write zkdv's optimizer state back into `opt.state` under torch's own keys, where it knows them."""
    for name, p in params.items():
        entry: dict[str, Any] = {}
        if MOMENTUM + name in state:
            entry["momentum_buffer"] = state[MOMENTUM + name]
        if EXP_AVG + name in state:
            entry["exp_avg"] = state[EXP_AVG + name]
            entry["exp_avg_sq"] = state[EXP_AVG_SQ + name]
            entry["step"] = torch.tensor(float(steps))
        if entry:
            opt.state[p] = entry


__all__ = ["BETA1_POWER", "BETA2_POWER", "BUILTIN", "AdamForm", "ConfigForm", "FunctionalOptimizer", "refuse"]
