"""A client's model, loss and optimizer config turned into one pure training-step function.

`build_step(model, loss_fn, optimizer)` returns a `TrainStep` whose `fn(state, batch)` is
`(new_state, loss)`: forward, backward and optimizer update, with no side effects, where

- `state` maps canonical names to tensors: `param/<name>` (trained parameters),
  `buffer/<name>` (persistent buffers, passed through unchanged, except the running
  statistics of batch norms in training mode, which the step returns updated) and the
  optimizer's `optim/...` entries (see `trainer.program.optim`);
- `batch` holds `x` (the model's input), `y` (the loss target) and, for every
  `trainer.program.KeyedDropout` module `<path>` of the model, its mask `mask/<path>`;
- the loss is `loss_fn(model(x), y)`, a scalar.

Non-persistent buffers (causal masks, position indices) are not state: they are
constants of the program, `TrainStep.constants`, committed with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, grad_and_value

from trainer.commit.records import canonical_names
from trainer.program.dropout import MASK, KeyedDropout
from trainer.program.errors import ProgramError
from trainer.program.optim import (
    BUFFER,
    PARAM,
    OptimizerConfig,
    apply_update,
    clip_by_global_norm,
    init_optimizer_state,
    optimizer_state_names,
)

Tensor = torch.Tensor
State = dict[str, Tensor]
Batch = dict[str, Tensor]
LossFn = Callable[[Tensor, Tensor], Tensor]
StepFn = Callable[[Mapping[str, Tensor], Mapping[str, Tensor]], tuple[State, Tensor]]

BATCH_INPUT = "x"
BATCH_TARGET = "y"
LOSS = "loss"


@dataclass(frozen=True)
class TrainStep:
    """A pure step function and the names it works on.

    `fn_with_constants(state, batch, constants)` is the same function with the constants
    passed in; capture traces that form so constants become named program constants.
    """

    model: nn.Module
    loss_fn: LossFn
    optimizer: OptimizerConfig
    param_names: tuple[str, ...]  # module names, canonical order
    buffer_names: tuple[str, ...]  # persistent buffers, module names, canonical order
    constants: Mapping[str, Tensor]  # "buffer/<name>" of non-persistent buffers
    stat_names: tuple[str, ...] = ()  # buffers the step updates: running statistics of batch norms
    dropout_paths: tuple[str, ...] = ()  # module paths of the KeyedDropout modules (mask/<path> in the batch)

    @property
    def state_names(self) -> list[str]:
        """The names of the state, in canonical order."""
        names = [PARAM + n for n in self.param_names] + [BUFFER + n for n in self.buffer_names]
        return canonical_names(names + optimizer_state_names(self.optimizer, self.param_names))

    def init_state(self) -> State:
        """The state from the model's current parameters and buffers, optimizer state zeroed."""
        named_params = dict(self.model.named_parameters())
        named_buffers = dict(self.model.named_buffers())
        params = {n: named_params[n].detach().clone(memory_format=torch.contiguous_format) for n in self.param_names}
        state: State = {PARAM + n: t for n, t in params.items()}
        for n in self.buffer_names:
            state[BUFFER + n] = named_buffers[n].detach().clone(memory_format=torch.contiguous_format)
        state.update(init_optimizer_state(self.optimizer, params))
        return {name: state[name] for name in canonical_names(list(state))}

    def fn(self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> tuple[State, Tensor]:
        return self.fn_with_constants(state, batch, self.constants)

    def fn_with_constants(
        self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor], constants: Mapping[str, Tensor]
    ) -> tuple[State, Tensor]:
        params = {n: state[PARAM + n] for n in self.param_names}
        fixed = {n: state[BUFFER + n] for n in self.buffer_names}
        fixed.update({name.removeprefix(BUFFER): t for name, t in constants.items()})
        x, y = batch[BATCH_INPUT], batch[BATCH_TARGET]
        for path in self.dropout_paths:
            if MASK + path not in batch:
                raise ProgramError(
                    f"the batch has no {MASK + path!r} entry for the KeyedDropout module {path!r} "
                    "(build it with trainer.program.dropout_masks)"
                )
            fixed[f"{path}.mask"] = batch[MASK + path]
        stats: dict[str, Tensor] = {}
        if self.stat_names:
            # batch norm updates its running statistics in place: on copies made inside the
            # differentiated function, returned as aux; capture makes the update pure
            def loss_and_stats(p: dict[str, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
                new_stats = {n: fixed[n].clone() for n in self.stat_names}
                out = functional_call(self.model, {**p, **fixed, **new_stats}, (x,))
                return self.loss_fn(out, y), new_stats

            grads, (loss, stats) = grad_and_value(loss_and_stats, has_aux=True)(params)
        else:

            def loss_of(p: dict[str, Tensor]) -> Tensor:
                return self.loss_fn(functional_call(self.model, {**p, **fixed}, (x,)), y)

            grads, loss = grad_and_value(loss_of)(params)
        if self.optimizer.clip_grad_norm is not None:
            grads = clip_by_global_norm(grads, self.optimizer.clip_grad_norm)
        new_params, new_optim = apply_update(self.optimizer, params, grads, state)
        new_state: State = {PARAM + n: t for n, t in new_params.items()}
        for n in self.buffer_names:
            new_state[BUFFER + n] = stats[n] if n in stats else state[BUFFER + n]
        new_state.update(new_optim)
        if new_state.keys() != state.keys():
            raise ProgramError(
                f"the step maps state entries {sorted(state)} to {sorted(new_state)}; they must be the same names"
            )
        return {name: new_state[name] for name in canonical_names(list(new_state))}, loss


def build_step(model: nn.Module, loss_fn: LossFn, optimizer: OptimizerConfig) -> TrainStep:
    """The pure training step of `model` under `loss_fn` and `optimizer`."""
    if not isinstance(model, nn.Module):
        raise ProgramError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = dict(model.named_parameters())
    if not params:
        raise ProgramError("the model has no parameters to train")
    stat_names = _running_stat_names(model)
    dropout_paths = tuple(canonical_names([n for n, m in model.named_modules() if isinstance(m, KeyedDropout)]))
    frozen = [n for n, p in params.items() if not p.requires_grad]
    if frozen:
        raise ProgramError(f"parameters {frozen} do not require grad; frozen parameters are not supported")
    persistent = set(model.state_dict(keep_vars=True))
    buffers = dict(model.named_buffers())
    masks = {f"{p}.mask" for p in dropout_paths}
    constants = {
        BUFFER + n: buffers[n].detach().clone(memory_format=torch.contiguous_format)
        for n in canonical_names([n for n in buffers if n not in persistent and n not in masks])
    }
    return TrainStep(
        model=model,
        loss_fn=loss_fn,
        optimizer=optimizer,
        param_names=tuple(canonical_names(list(params))),
        buffer_names=tuple(canonical_names([n for n in buffers if n in persistent])),
        constants=constants,
        stat_names=stat_names,
        dropout_paths=dropout_paths,
    )


_STAT_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def _running_stat_names(model: nn.Module) -> tuple[str, ...]:
    """The buffers of batch norms in training mode that track running statistics (updated by the
    step: torch's momentum rule, running_var with the unbiased batch variance)."""
    names: list[str] = []
    for path, m in model.named_modules():
        tracks = getattr(m, "track_running_stats", False) and getattr(m, "running_mean", None) is not None
        if not (m.training and tracks):
            continue
        if not isinstance(m, nn.modules.batchnorm._BatchNorm):
            raise ProgramError(
                f"module {path or '<root>'} ({type(m).__name__}) tracks running statistics; only torch's batch "
                "norms are supported (call .eval() on it, or build it with track_running_stats=False)"
            )
        if m.momentum is None:
            raise ProgramError(
                f"batch norm {path or '<root>'} has momentum=None (a cumulative average driven by "
                "num_batches_tracked), which is not supported; give it a float momentum"
            )
        prefix = f"{path}." if path else ""
        names += [prefix + b for b in _STAT_BUFFERS if getattr(m, b, None) is not None]
    return tuple(canonical_names(names))
