"""Keyed init rules: a task's initial parameters, drawn from the keyed generator with torch's default bounds.

A run is a function of (program, dataset, seed, config), so initial parameters cannot come
from torch's global RNG: each is drawn by `uniform_symmetric(seed, "param/<name>", shape,
bound)` (docs/data.md) or is a constant. An **init rule** maps one parameter (`Param`: its
module, its name inside that module, its shape, and its keyed draw) to its initial tensor.
`DEFAULT_RULES` holds one per parameterized module type, with torch's default bounds:

| module | parameters |
| --- | --- |
| Linear | weight, bias U(+-1/sqrt(in_features)) |
| Conv1d, Conv2d, Conv3d (and transposed) | weight, bias U(+-1/sqrt(fan_in)), fan_in = weight.shape[1] * kernel size |
| Embedding | weight U(+-sqrt(3)) (unit variance, as torch's N(0, 1)); the padding_idx row 0 |
| LayerNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm (affine), RMSNorm | weight 1, bias 0 |
| RNN, GRU, LSTM and their cells | every weight and bias U(+-1/sqrt(hidden_size)) |
| MultiheadAttention | in_proj_weight (or q/k/v_proj_weight) U(+-sqrt(6 / (fan_in + fan_out))) (Xavier); |
|   | in_proj_bias 0; bias_k, bias_v U(+-sqrt(3 / embed_dim)) (Xavier-normal's variance); |
|   | out_proj.weight as Linear, out_proj.bias 0 |

Torch draws some of these from normal distributions (Embedding, MHA's bias_k/bias_v); the
keyed generator is uniform, so those get the uniform of the same variance. `InitRules` adds a
user's own rules: `by_name` (a parameter's module name, or an fnmatch pattern, e.g.
`"head.*"`) first, then `by_type` (a module type, matched along the class's MRO), then the
defaults; the owner searched is the parameter's innermost module first, so a rule for a
container does not claim the parameters of its Linear children.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from trainer.data.keyed import uniform_symmetric

PARAM_PREFIX = "param/"  # trainer.program.optim.PARAM: the state name of a parameter
HOW_TO_ADD = (
    "add a rule: InitRules(by_type={ModuleType: rule}) or InitRules(by_name={'<parameter name>': rule}), where "
    "rule(p: Param) returns p.uniform(bound) or p.constant(value) (docs/bring-your-own-model.md#initial-parameters)"
)


class InitRuleError(ValueError):
    """A parameter has no init rule, or its rule returned a tensor that does not fit it."""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter to initialize: `module.<leaf>` is the parameter, `name` its name in the model."""

    module: nn.Module
    leaf: str  # the name inside `module`: "weight", "weight_ih_l0", "out_proj.bias"
    name: str  # the model's name for it: "conv1.weight"
    shape: tuple[int, ...]
    seed: int

    def uniform(self, bound: float) -> torch.Tensor:
        """fp32 values in (-bound, bound) from the keyed generator (docs/data.md), keyed by `param/<name>`."""
        return uniform_symmetric(self.seed, PARAM_PREFIX + self.name, self.shape, bound)

    def constant(self, value: float) -> torch.Tensor:
        return torch.full(self.shape, float(value), dtype=torch.float32)


InitRule = Callable[[Param], torch.Tensor]


def _linear(p: Param) -> torch.Tensor:
    assert isinstance(p.module, nn.Linear)
    return p.uniform(1.0 / math.sqrt(p.module.in_features))


def _conv(p: Param) -> torch.Tensor:
    weight = p.module.get_parameter("weight")  # [out, in/groups, *k] (transposed: [in, out/groups, *k])
    fan_in = weight.shape[1] * math.prod(weight.shape[2:])
    return p.uniform(1.0 / math.sqrt(fan_in))


def _embedding(p: Param) -> torch.Tensor:
    assert isinstance(p.module, nn.Embedding)
    w = p.uniform(math.sqrt(3.0))
    if p.module.padding_idx is not None:
        w[p.module.padding_idx] = 0.0
    return w


def _norm(p: Param) -> torch.Tensor:
    if p.leaf == "weight":
        return p.constant(1.0)
    if p.leaf == "bias":
        return p.constant(0.0)
    raise InitRuleError(f"{type(p.module).__name__} has no default rule for its parameter {p.leaf!r}")


def _recurrent(p: Param) -> torch.Tensor:
    hidden = p.module.hidden_size
    assert isinstance(hidden, int)
    return p.uniform(1.0 / math.sqrt(hidden))


def _out_proj(p: Param) -> torch.Tensor:
    # MultiheadAttention's out_proj: torch keeps the Linear init of its weight and zeroes its bias
    return p.constant(0.0) if p.leaf == "bias" else _linear(p)


def _attention(p: Param) -> torch.Tensor:
    m = p.module
    assert isinstance(m, nn.MultiheadAttention)
    if p.leaf in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
        fan_out, fan_in = p.shape
        return p.uniform(math.sqrt(6.0 / (fan_in + fan_out)))
    if p.leaf == "in_proj_bias":
        return p.constant(0.0)
    if p.leaf in ("bias_k", "bias_v"):
        return p.uniform(math.sqrt(3.0) / math.sqrt(m.embed_dim))  # Xavier-normal on [1, 1, E]: std 1/sqrt(E)
    raise InitRuleError(f"MultiheadAttention has no default rule for its parameter {p.leaf!r}")


DEFAULT_RULES: Mapping[type[nn.Module], InitRule] = {
    nn.Linear: _linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: _out_proj,
    nn.modules.conv._ConvNd: _conv,
    nn.Embedding: _embedding,
    nn.LayerNorm: _norm,
    nn.GroupNorm: _norm,
    nn.modules.batchnorm._NormBase: _norm,  # BatchNorm1d/2d/3d, InstanceNorm*d
    nn.RMSNorm: _norm,
    nn.RNNBase: _recurrent,  # RNN, GRU, LSTM
    nn.modules.rnn.RNNCellBase: _recurrent,  # RNNCell, GRUCell, LSTMCell
    nn.MultiheadAttention: _attention,
}


@dataclass(frozen=True)
class InitRules:
    """A user's rules on top of the defaults: by parameter name (or fnmatch pattern), then by module type."""

    by_name: Mapping[str, InitRule] = field(default_factory=dict)
    by_type: Mapping[type[nn.Module], InitRule] = field(default_factory=dict)

    def rule_for(self, model: nn.Module, name: str) -> tuple[InitRule, nn.Module, str]:
        """The rule of parameter `name` of `model`, the module it applies to and the parameter's name there."""
        modules = dict(model.named_modules())
        for pattern, rule in self.by_name.items():
            if pattern == name or fnmatch.fnmatchcase(name, pattern):
                owner, _, leaf = name.rpartition(".")
                return rule, modules[owner], leaf
        parts = name.split(".")
        for cut in range(len(parts) - 1, -1, -1):  # innermost owner first
            module = modules[".".join(parts[:cut])]
            for table in (self.by_type, DEFAULT_RULES):
                for cls in type(module).__mro__:
                    if cls in table:
                        return table[cls], module, ".".join(parts[cut:])
        owner = ".".join(parts[:-1])
        owner_type = type(modules[owner]).__name__
        raise InitRuleError(
            f"no keyed init rule for parameter {name!r} of a {owner_type} "
            f"({'the model' if not owner else repr(owner)}); {HOW_TO_ADD}"
        )

    def initial(self, model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
        """Parameter name -> its initial fp32 tensor, for every parameter of `model`."""
        out = {}
        for name, param in model.named_parameters():
            rule, module, leaf = self.rule_for(model, name)
            value = rule(Param(module, leaf, name, tuple(param.shape), seed))
            if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(param.shape):
                got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                raise InitRuleError(
                    f"the init rule of {name!r} returned {got}, not a tensor of shape {tuple(param.shape)}"
                )
            if value.dtype != param.dtype:
                raise InitRuleError(f"the init rule of {name!r} returned {value.dtype}; the parameter is {param.dtype}")
            out[name] = value.contiguous()
        return out


DEFAULTS = InitRules()

__all__ = ["DEFAULTS", "DEFAULT_RULES", "HOW_TO_ADD", "InitRule", "InitRuleError", "InitRules", "Param"]
