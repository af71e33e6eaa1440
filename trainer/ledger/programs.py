"""The two programs of a ledger: a contributor's gradient and a block's update and attribution.

Both are pure functions captured into the project's program (trainer.program.capture) and
run by the RepOps interpreter, so every honest machine computes the same bits.

- **Gradient program** `(state, batch) -> gradients, loss`: the gradient of
  `loss_fn(model(x), y)` at the state's parameters. Its state is the model state plus one
  `grad/<param>` slot per parameter; the slots' input values are not read (the program
  overwrites them), so a contributor passes zeros.
- **Block program** `(state, inputs) -> state', validation loss`: with the batch
  `x`, `y` (the step's validation examples), `contrib/<param>` (the contributions stacked
  on a leading axis of `max_contributors` rows; rows of absent contributors are zero) and
  `count` (the number of contributions, an fp32 scalar >= 1), it computes

  1. the validation loss and its gradient `∇L_val` at the pre-state (before the update);
  2. the aggregate `ḡ = sum(contrib, axis 0) / count`: RepOps' exact sum over the
     contributors (docs/repops/linalg.md, "Sums and means": one grid per element shared by
     every contributor's value there, exact integer sum, one rounding), so the order of the
     rows does not change a bit; then one IEEE division;
  3. the optimizer's update with `ḡ` (trainer.program.optim, the same bits as a training step);
  4. the attribution weight `attr_weight/<param>` = `P ⊙ ∇L_val`, where `P` is the
     update's derivative with respect to one contribution's gradient, elementwise
     (docs/ledger.md, "First-order attribution"): the contribution of `g_c` to the
     loss reduction is, to first order, `⟨P ⊙ ∇L_val, g_c⟩`;
  5. the first-order attribution terms `attr/terms` (float64 [max_contributors, n_params]):
     column k holds, for parameter k in canonical order, the exact dot product of every
     contribution row with its weight (RepOps' `refereed::exact_dot`, docs/repops/linalg.md,
     "Exact dot products": the stack of rows on ONE grid, the weight on its own). Each entry is
     an exact dyadic value; the program adds nothing up, so nothing is rounded. φ of the
     contributor in row r is Σ_k terms[r, k], computed exactly outside the program
     (trainer.ledger.attribution.FirstOrder.of_terms); a zero row gives +0 terms.

  `attr_weight/*` and `attr/terms` are slots like `grad/*`: state of the program, not of the
  model (their input values are not read). The model root of a block is the state root of
  `param/*`, `buffer/*` and `optim/*` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import torch
from torch import nn
from torch.func import functional_call, grad_and_value

from trainer.commit.records import canonical_names, state_root
from trainer.ledger.errors import LedgerError
from trainer.program import AdamWConfig, Program, SGDConfig, capture
from trainer.program.optim import (
    BETA1_POWER,
    BUFFER,
    EXP_AVG_SQ,
    PARAM,
    OptimizerConfig,
    apply_update,
    init_optimizer_state,
    optimizer_state_names,
)
from trainer.program.program import TensorType
from trainer.program.step import LossFn

Tensor = torch.Tensor

GRAD = "grad/"
ATTR_WEIGHT = "attr_weight/"
# float64 [max_contributors, n_params]: per contribution row and parameter (canonical order), the exact
# first-order term <P ⊙ ∇L_val, g_row> (docs/ledger.md, section 3)
TERMS = "attr/terms"
CONTRIB = "contrib/"
COUNT = "count"
MAX_CONTRIBUTORS = 64


def _module_names(model: nn.Module) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Tensor]]:
    params = dict(model.named_parameters())
    if not params:
        raise LedgerError("the model has no parameters")
    persistent = set(model.state_dict(keep_vars=True))
    buffers = dict(model.named_buffers())
    constants = {
        BUFFER + n: buffers[n].detach().clone(memory_format=torch.contiguous_format)
        for n in canonical_names([n for n in buffers if n not in persistent])
    }
    return (
        tuple(canonical_names(list(params))),
        tuple(canonical_names([n for n in buffers if n in persistent])),
        constants,
    )


@dataclass(frozen=True)
class _Base:
    model: nn.Module
    loss_fn: LossFn
    param_names: tuple[str, ...]
    buffer_names: tuple[str, ...]
    constants: Mapping[str, Tensor]

    def _loss_and_grads(
        self, state: Mapping[str, Tensor], x: Tensor, y: Tensor, constants: Mapping[str, Tensor]
    ) -> tuple[dict[str, Tensor], Tensor]:
        params = {n: state[PARAM + n] for n in self.param_names}
        fixed = {n: state[BUFFER + n] for n in self.buffer_names}
        fixed.update({name.removeprefix(BUFFER): t for name, t in constants.items()})

        def loss_of(p: dict[str, Tensor]) -> Tensor:
            return self.loss_fn(functional_call(self.model, {**p, **fixed}, (x,)), y)

        grads, loss = grad_and_value(loss_of)(params)
        return grads, loss


@dataclass(frozen=True)
class GradientStep(_Base):
    """The gradient program's function, in the form `capture` takes."""

    @property
    def state_names(self) -> list[str]:
        names = [PARAM + n for n in self.param_names] + [BUFFER + n for n in self.buffer_names]
        return canonical_names(names + [GRAD + n for n in self.param_names])

    def fn_with_constants(
        self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor], constants: Mapping[str, Tensor]
    ) -> tuple[dict[str, Tensor], Tensor]:
        grads, loss = self._loss_and_grads(state, batch["x"], batch["y"], constants)
        out = {PARAM + n: state[PARAM + n] for n in self.param_names}
        out.update({BUFFER + n: state[BUFFER + n] for n in self.buffer_names})
        out.update({GRAD + n: g for n, g in grads.items()})
        return {n: out[n] for n in self.state_names}, loss


@dataclass(frozen=True)
class BlockStep(_Base):
    """The block program's function, in the form `capture` takes."""

    optimizer: OptimizerConfig = field(default_factory=lambda: SGDConfig(lr=0.1))
    attribute: bool = True  # False: no attribution weights, the validation loss by a forward only

    @property
    def state_names(self) -> list[str]:
        names = [PARAM + n for n in self.param_names] + [BUFFER + n for n in self.buffer_names]
        names += optimizer_state_names(self.optimizer, self.param_names)
        if self.attribute:
            names += [ATTR_WEIGHT + n for n in self.param_names] + [TERMS]
        return canonical_names(names)

    def fn_with_constants(
        self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor], constants: Mapping[str, Tensor]
    ) -> tuple[dict[str, Tensor], Tensor]:
        if self.attribute:
            val_grads, val_loss = self._loss_and_grads(state, batch["x"], batch["y"], constants)
        else:
            fixed = {n: state[BUFFER + n] for n in self.buffer_names}
            fixed.update({name.removeprefix(BUFFER): t for name, t in constants.items()})
            params_now = {n: state[PARAM + n] for n in self.param_names}
            val_loss = self.loss_fn(functional_call(self.model, {**params_now, **fixed}, (batch["x"],)), batch["y"])
        count = batch[COUNT]
        params = {n: state[PARAM + n] for n in self.param_names}
        agg = {n: batch[CONTRIB + n].sum(dim=0) / count for n in self.param_names}
        new_params, new_optim = apply_update(self.optimizer, params, agg, state)
        out: dict[str, Tensor] = {PARAM + n: t for n, t in new_params.items()}
        out.update({BUFFER + n: state[BUFFER + n] for n in self.buffer_names})
        out.update(new_optim)
        if self.attribute:
            columns = []
            for n in self.param_names:  # canonical order: the columns of attr/terms
                w = self._derivative(n, new_optim, count) * val_grads[n]
                out[ATTR_WEIGHT + n] = w
                columns.append(torch.ops.refereed.exact_dot(batch[CONTRIB + n], w))  # exact, one grid for the rows
            out[TERMS] = torch.stack(columns, dim=1)  # no additions: every entry stays exact
        return {k: out[k] for k in self.state_names}, val_loss

    def _derivative(self, name: str, new_optim: Mapping[str, Tensor], count: Tensor) -> Tensor:
        """P: d(θ_{t-1} - θ_t)/d(g_c), elementwise, with the optimizer's second moments held at
        their new values (docs/ledger.md)."""
        c = self.optimizer
        if isinstance(c, SGDConfig):
            # θ_t = θ_{t-1} - lr · (buf or ḡ...): the step's own gradient enters with lr (1 + μ if Nesterov).
            rate = c.lr * (1.0 + c.momentum) if c.nesterov else c.lr
            return torch.reciprocal(count) * rate
        beta1, _beta2 = c.betas
        b1_power = new_optim[BETA1_POWER]
        v = new_optim[EXP_AVG_SQ + name]
        # The same operations as the update's denominator (trainer.program.optim._adamw).
        denom = torch.sqrt(v) / torch.sqrt(1.0 - new_optim["optim/beta2_power"]) + c.eps
        return (((1.0 - beta1) * c.lr) / ((1.0 - b1_power) * count)) / denom


@dataclass(frozen=True)
class LedgerPrograms:
    """A ledger's model, its two captured programs and the state layout they share."""

    model: nn.Module
    loss_fn: LossFn
    optimizer: OptimizerConfig
    max_contributors: int
    example_batch: Mapping[str, Tensor]  # x, y of one contribution batch (shapes fix the program)
    validation_example: Mapping[str, Tensor]  # x, y of one validation batch

    def __post_init__(self) -> None:
        if not isinstance(self.optimizer, SGDConfig | AdamWConfig):
            raise LedgerError(f"optimizer must be an SGDConfig or AdamWConfig, got {type(self.optimizer).__name__}")
        if self.optimizer.clip_grad_norm is not None:
            raise LedgerError(
                "gradient clipping is not supported in a ledger: a global clip couples the contributors' directions"
            )
        if type(self.max_contributors) is not int or not 1 <= self.max_contributors <= MAX_CONTRIBUTORS:
            raise LedgerError(f"max_contributors must be in [1, {MAX_CONTRIBUTORS}], got {self.max_contributors!r}")

    @cached_property
    def _names(self) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Tensor]]:
        return _module_names(self.model)

    @property
    def param_names(self) -> tuple[str, ...]:
        return self._names[0]

    @cached_property
    def gradient_step(self) -> GradientStep:
        p, b, c = self._names
        return GradientStep(self.model, self.loss_fn, p, b, c)

    @cached_property
    def block_step(self) -> BlockStep:
        p, b, c = self._names
        return BlockStep(self.model, self.loss_fn, p, b, c, self.optimizer)

    def model_state(self) -> dict[str, Tensor]:
        """The model state from the module's current parameters and buffers, optimizer state zeroed."""
        p, b, _ = self._names
        named_params = dict(self.model.named_parameters())
        named_buffers = dict(self.model.named_buffers())
        params = {n: named_params[n].detach().clone(memory_format=torch.contiguous_format) for n in p}
        state: dict[str, Tensor] = {PARAM + n: t for n, t in params.items()}
        for n in b:
            state[BUFFER + n] = named_buffers[n].detach().clone(memory_format=torch.contiguous_format)
        state.update(init_optimizer_state(self.optimizer, params))
        return {k: state[k] for k in canonical_names(list(state))}

    @cached_property
    def _param_types(self) -> dict[str, TensorType]:
        state = self.model_state()
        return {n: TensorType.of(state[PARAM + n]) for n in self.param_names}

    def gradient_inputs(self, model_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return _gradient_inputs(self._param_types, model_state)

    def block_inputs(self, model_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return _block_inputs(self._param_types, model_state, self.max_contributors)

    def contributions_batch(
        self,
        validation: Mapping[str, Tensor],
        gradients: list[Mapping[str, Tensor] | None],
        count: int | None = None,
    ) -> dict[str, Tensor]:
        return _contributions_batch(self._param_types, self.max_contributors, validation, gradients, count)

    @property
    def pair(self) -> ProgramPair:
        return ProgramPair(self.gradient_program, self.block_program)

    @cached_property
    def gradient_program(self) -> Program:
        state = self.gradient_inputs(self.model_state())
        return capture(self.gradient_step, state, dict(self.example_batch))  # type: ignore[arg-type]

    @cached_property
    def block_program(self) -> Program:
        state = self.block_inputs(self.model_state())
        zero = {GRAD + n: torch.zeros_like(state[PARAM + n]) for n in self.param_names}
        batch = self.contributions_batch(self.validation_example, [zero])
        return capture(self.block_step, state, batch)  # type: ignore[arg-type]

    @cached_property
    def plain_block_program(self) -> Program:
        """The block program without attribution (aggregate, update, validation loss by a forward
        only): not part of a ledger, the baseline that scripts/bench_ledger.py measures the
        attribution's cost against."""
        p, b, c = self._names
        step = BlockStep(self.model, self.loss_fn, p, b, c, self.optimizer, attribute=False)
        state = self.model_state()
        zero = {GRAD + n: torch.zeros_like(state[PARAM + n]) for n in self.param_names}
        batch = self.contributions_batch(self.validation_example, [zero])
        return capture(step, state, batch)  # type: ignore[arg-type]


def model_root(state: Mapping[str, Tensor]) -> bytes:
    """H(θ): the state root of the model state (parameters, buffers, optimizer state)."""
    return state_root({k: v for k, v in state.items() if not k.startswith((GRAD, ATTR_WEIGHT)) and k != TERMS})


@dataclass(frozen=True)
class ProgramPair:
    """A ledger's two captured programs, all a builder or a replayer needs (no torch module): the
    parameter names, shapes and the contribution limit are read off the programs' inputs."""

    gradient: Program
    block: Program

    def __post_init__(self) -> None:
        params = self.param_types
        if not params:
            raise LedgerError("the block program has no param/* inputs")
        grad_state = {i.name for i in self.gradient.inputs if i.name in set(self.gradient.state_names)}
        want = {PARAM + n for n in params} | {GRAD + n for n in params}
        if not want <= grad_state:
            raise LedgerError("the gradient program does not take the block program's parameters and gradient slots")
        for n, t in params.items():
            c = self.block.input(CONTRIB + n).type
            if tuple(c.shape[1:]) != tuple(t.shape) or c.dtype != t.dtype:
                raise LedgerError(f"the block program's {CONTRIB + n} is {c}, not rows of {t}")
        terms = next((i.type for i in self.block.inputs if i.name == TERMS), None)
        if terms != TensorType(torch.float64, (self.max_contributors, len(params))):
            raise LedgerError(
                f"the block program's {TERMS} is {terms}, not float64[{self.max_contributors}, {len(params)}]: "
                "it computes no attribution"
            )

    @cached_property
    def param_types(self) -> dict[str, TensorType]:
        return {
            i.name.removeprefix(PARAM): i.type
            for i in self.block.inputs
            if i.name.startswith(PARAM) and i.name in set(self.block.state_names)
        }

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.param_types)

    @cached_property
    def max_contributors(self) -> int:
        first = next(iter(self.param_types))
        return int(self.block.input(CONTRIB + first).type.shape[0])

    def gradient_inputs(self, model_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """The gradient program's state: the model's parameters and buffers, zero gradient slots."""
        return _gradient_inputs(self.param_types, model_state)

    def block_inputs(self, model_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """The block program's state: the model state and zero attribution slots."""
        return _block_inputs(self.param_types, model_state, self.max_contributors)

    def contributions_batch(
        self,
        validation: Mapping[str, Tensor],
        gradients: list[Mapping[str, Tensor] | None],
        count: int | None = None,
    ) -> dict[str, Tensor]:
        """The block program's batch: validation x, y, the contributions stacked (a zero row for each
        None and after the given ones) and `count` (default: the number of contributions given)."""
        return _contributions_batch(self.param_types, self.max_contributors, validation, gradients, count)


def _gradient_inputs(param_types: Mapping[str, TensorType], model_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    out = {k: v for k, v in model_state.items() if k.startswith((PARAM, BUFFER))}
    out.update({GRAD + n: torch.zeros(t.shape, dtype=t.dtype) for n, t in param_types.items()})
    return out


def _block_inputs(
    param_types: Mapping[str, TensorType], model_state: Mapping[str, Tensor], max_contributors: int
) -> dict[str, Tensor]:
    out = dict(model_state)
    out.update({ATTR_WEIGHT + n: torch.zeros(t.shape, dtype=t.dtype) for n, t in param_types.items()})
    out[TERMS] = torch.zeros((max_contributors, len(param_types)), dtype=torch.float64)
    return out


def _contributions_batch(
    param_types: Mapping[str, TensorType],
    max_contributors: int,
    validation: Mapping[str, Tensor],
    gradients: list[Mapping[str, Tensor] | None],
    count: int | None,
) -> dict[str, Tensor]:
    if not 1 <= len(gradients) <= max_contributors:
        raise LedgerError(f"a block takes 1 to {max_contributors} contributions, got {len(gradients)}")
    batch: dict[str, Tensor] = {"x": validation["x"], "y": validation["y"]}
    for n, t in param_types.items():
        zero = torch.zeros(t.shape, dtype=t.dtype)
        rows = [zero if g is None else g[GRAD + n] for g in gradients]
        rows += [zero] * (max_contributors - len(rows))
        batch[CONTRIB + n] = torch.stack(rows).contiguous()
    n_given = sum(g is not None for g in gradients) if count is None else count
    if n_given < 1:
        raise LedgerError("a block's contribution count must be at least 1")
    batch[COUNT] = torch.tensor(float(n_given), dtype=torch.float32)
    return batch
