"""Capture's in-place rewrite (trainer/program/_functional.py): the pure program computes what
the in-place graph computed, and every mutation it cannot make pure is refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

from trainer.interp import Interpreter
from trainer.program import CaptureError, SGDConfig, build_step, capture
from trainer.program._functional import refuse_random, remove_mutations


def _pure(fn, *args):  # type: ignore[no-untyped-def]
    gm = make_fx(fn, decomposition_table=core_aten_decompositions())(*args)
    remove_mutations(gm.graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _inplace_ops(gm: torch.fx.GraphModule) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and str(n.target).split(".")[1][-1] == "_"]


def test_chains_of_in_place_calls_keep_their_values() -> None:
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x * 2
        a.add_(1).mul_(3)  # later readers of a see the new value
        b = torch.empty_like(x)
        b.copy_(a[0])  # broadcast copy into an uninitialised tensor
        b.sub_(x)
        return a, b

    x = torch.randn(3, 4)
    gm = _pure(f, x)
    assert _inplace_ops(gm) == []
    for got, want in zip(gm(x), f(x), strict=True):
        assert torch.equal(got, want)


def test_copy_converts_dtype() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(3, dtype=torch.int64)
        out.copy_(x)
        return out + 1

    x = torch.tensor([1.5, -2.5, 3.0])
    gm = _pure(f, x)
    assert torch.equal(gm(x), f(x)) and _inplace_ops(gm) == []


def test_mutating_an_input_is_refused() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1

    gm = make_fx(f, decomposition_table=core_aten_decompositions())(torch.randn(3))
    with pytest.raises(CaptureError, match="changes the step's input"):
        remove_mutations(gm.graph)


def test_mutating_through_a_view_read_later_is_refused() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        a = x * 2
        v = a.view(-1)
        v.add_(1)  # changes a as well
        return a.sum() + v.sum()

    gm = make_fx(f, decomposition_table=core_aten_decompositions())(torch.randn(2, 3))
    with pytest.raises(CaptureError, match="another view of it is read later"):
        remove_mutations(gm.graph)


def test_random_calls_are_refused() -> None:
    gm = make_fx(lambda x: x + torch.rand_like(x))(torch.randn(3))
    with pytest.raises(CaptureError, match="pass randomness in the batch"):
        refuse_random(gm.graph)


class _Gn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 24)
        self.gn = nn.GroupNorm(2, 8)
        self.head = nn.Linear(24, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.silu(self.gn(self.fc(x).reshape(-1, 8, 3)).reshape(-1, 24)))


@pytest.mark.parametrize("loss", ["bce", "smooth_l1", "softplus"])
def test_decomposed_losses_and_group_norm_train_close_to_eager(loss: str) -> None:
    torch.manual_seed(0)
    fns = {
        "bce": F.binary_cross_entropy_with_logits,
        "smooth_l1": lambda o, t: F.smooth_l1_loss(o, t, beta=0.5),
        "softplus": lambda o, t: F.mse_loss(F.softplus(o, beta=2.0), t),
    }
    step = build_step(_Gn(), fns[loss], SGDConfig(lr=0.1))
    state = step.init_state()
    batch = {"x": torch.randn(10, 6), "y": torch.rand(10, 8)}
    program = capture(step, state, batch)
    ours, loss_ours = Interpreter(program).run(state, batch)
    ref, loss_ref = Interpreter(program, use="reference").run(state, batch)
    assert torch.equal(loss_ours.view(torch.int32), loss_ref.view(torch.int32))
    for name in ours:
        assert torch.equal(ours[name].view(torch.int32), ref[name].view(torch.int32)), name
    eager, loss_eager = step.fn(state, batch)
    assert torch.allclose(loss_ours, loss_eager, rtol=1e-5)
    for name in ours:  # the updates agree to float tolerance
        step_ours, step_eager = ours[name] - state[name], eager[name] - state[name]
        assert torch.allclose(step_ours, step_eager, rtol=1e-3, atol=1e-3 * float(step_eager.abs().max())), name
