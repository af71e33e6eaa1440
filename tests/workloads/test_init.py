"""Keyed init rules: every parameterized module's parameters drawn with torch's default bounds, bit for bit
from the keyed generator; a user's own rules; a clear error for a parameter without one."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import nn

from trainer.data.init import DEFAULTS, InitRuleError, InitRules, Param
from trainer.data.keyed import uniform_symmetric

SEED = 5


def _fan_in(t: torch.Tensor) -> int:
    fan_in, _ = nn.init._calculate_fan_in_and_fan_out(t)
    return fan_in


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


# module factory, {parameter name: the bound torch's default init uses for it (0 = the constant 0, -1 = 1)}
Bounds = Callable[[nn.Module], dict[str, float]]
CASES: dict[str, tuple[Callable[[], nn.Module], Bounds]] = {
    "linear": (lambda: nn.Linear(40, 30), lambda m: {"weight": 1 / math.sqrt(40), "bias": 1 / math.sqrt(40)}),
    "conv1d": (
        lambda: nn.Conv1d(6, 8, 5, groups=2),
        lambda m: {"weight": 1 / math.sqrt(_fan_in(m.weight)), "bias": 1 / math.sqrt(_fan_in(m.weight))},
    ),
    "conv2d": (
        lambda: nn.Conv2d(3, 16, 3, padding=1),
        lambda m: {"weight": 1 / math.sqrt(27), "bias": 1 / math.sqrt(27)},
    ),
    "embedding": (lambda: nn.Embedding(50, 16), lambda m: {"weight": math.sqrt(3)}),
    "layernorm": (lambda: nn.LayerNorm(12), lambda m: {"weight": -1, "bias": 0}),
    "groupnorm": (lambda: nn.GroupNorm(2, 8), lambda m: {"weight": -1, "bias": 0}),
    "batchnorm1d": (lambda: nn.BatchNorm1d(8), lambda m: {"weight": -1, "bias": 0}),
    "batchnorm2d": (lambda: nn.BatchNorm2d(8), lambda m: {"weight": -1, "bias": 0}),
    "gru": (lambda: nn.GRU(10, 20, num_layers=2), lambda m: {n: 1 / math.sqrt(20) for n, _ in m.named_parameters()}),
    "lstm": (
        lambda: nn.LSTM(10, 20, bidirectional=True),
        lambda m: {n: 1 / math.sqrt(20) for n, _ in m.named_parameters()},
    ),
    "rnn": (lambda: nn.RNN(10, 20), lambda m: {n: 1 / math.sqrt(20) for n, _ in m.named_parameters()}),
    "grucell": (lambda: nn.GRUCell(10, 20), lambda m: {n: 1 / math.sqrt(20) for n, _ in m.named_parameters()}),
    "lstmcell": (lambda: nn.LSTMCell(10, 20), lambda m: {n: 1 / math.sqrt(20) for n, _ in m.named_parameters()}),
    "mha": (
        lambda: nn.MultiheadAttention(32, 4),
        lambda m: {
            "in_proj_weight": math.sqrt(6 / (32 + 96)),
            "in_proj_bias": 0,
            "out_proj.weight": 1 / math.sqrt(32),
            "out_proj.bias": 0,
        },
    ),
    "mha-kdim-bias-kv": (
        lambda: nn.MultiheadAttention(32, 4, kdim=16, vdim=8, add_bias_kv=True),
        lambda m: {
            "q_proj_weight": math.sqrt(6 / (32 + 32)),
            "k_proj_weight": math.sqrt(6 / (16 + 32)),
            "v_proj_weight": math.sqrt(6 / (8 + 32)),
            "in_proj_bias": 0,
            "bias_k": math.sqrt(3 / 32),
            "bias_v": math.sqrt(3 / 32),
            "out_proj.weight": 1 / math.sqrt(32),
            "out_proj.bias": 0,
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_rules_draw_torchs_bounds_from_the_keyed_generator(case: str) -> None:
    make, bounds_of = CASES[case]
    torch.manual_seed(0)
    module = make()
    bounds = bounds_of(module)
    params = dict(module.named_parameters())
    assert set(bounds) == set(params), "every parameter has a stated bound"
    init = DEFAULTS.initial(module, SEED)
    for name, bound in bounds.items():
        got = init[name]
        assert got.shape == params[name].shape and got.dtype == torch.float32
        if bound <= 0:
            expected = torch.full(got.shape, 1.0 if bound < 0 else 0.0)
        else:
            expected = uniform_symmetric(SEED, "param/" + name, tuple(got.shape), bound)
            # torch's own default init of the same module keeps inside the same bound (a normal one: the variance)
            torch_values = params[name].detach()
            if case == "embedding" or name in ("bias_k", "bias_v"):
                assert got.var().item() == pytest.approx(bound**2 / 3, rel=0.3)
            else:
                assert torch_values.abs().max().item() <= bound
        assert torch.equal(_bits(got), _bits(expected)), name


def test_padding_row_of_an_embedding_is_zero() -> None:
    init = DEFAULTS.initial(nn.Embedding(10, 4, padding_idx=3), SEED)["weight"]
    assert torch.equal(init[3], torch.zeros(4)) and init[2].abs().sum() > 0


def test_nested_models_use_the_innermost_module_and_the_full_name_as_key() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Sequential(nn.Linear(4, 2)))
    init = DEFAULTS.initial(model, SEED)
    assert torch.equal(_bits(init["2.0.weight"]), _bits(uniform_symmetric(SEED, "param/2.0.weight", (2, 4), 0.5)))
    assert not torch.equal(init["0.bias"], DEFAULTS.initial(model, SEED + 1)["0.bias"])  # keyed by the seed


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


def test_a_parameter_without_a_rule_is_named_with_how_to_add_one() -> None:
    with pytest.raises(InitRuleError) as info:
        DEFAULTS.initial(nn.Sequential(Scaled()), SEED)
    message = str(info.value)
    assert "'0.scale'" in message and "Scaled" in message and "by_type" in message and "by_name" in message


def test_a_users_rule_by_type_covers_its_own_parameters_only() -> None:
    rules = InitRules(by_type={Scaled: lambda p: p.constant(2.0)})
    init = rules.initial(nn.Sequential(Scaled()), SEED)
    assert torch.equal(init["0.scale"], torch.full((4,), 2.0))
    assert torch.equal(_bits(init["0.fc.weight"]), _bits(uniform_symmetric(SEED, "param/0.fc.weight", (4, 4), 0.5)))


def test_a_users_rule_by_name_or_pattern_wins_over_the_defaults() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    rules = InitRules(by_name={"1.*": lambda p: p.constant(0.0), "0.bias": lambda p: p.uniform(0.01)})
    init = rules.initial(model, SEED)
    assert torch.equal(init["1.weight"], torch.zeros(2, 4)) and torch.equal(init["1.bias"], torch.zeros(2))
    assert init["0.bias"].abs().max() < 0.01


@pytest.mark.parametrize(
    "rule, fragment",
    [
        (lambda p: torch.zeros(3), "not a tensor of shape (4,)"),
        (lambda p: torch.zeros(4, dtype=torch.float64), "float64"),
        (lambda p: 1.0, "returned float"),
    ],
)
def test_a_rule_returning_the_wrong_thing_is_refused(rule: Callable[[Param], torch.Tensor], fragment: str) -> None:
    with pytest.raises(InitRuleError, match="'scale'") as info:
        InitRules(by_name={"scale": rule}).initial(Scaled(), SEED)
    assert fragment in str(info.value)
