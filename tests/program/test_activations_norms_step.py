"""A residual MLP with BatchNorm1d in training mode, SiLU / LeakyReLU and keyed dropout, trained
with MSE or BCE-with-logits: it captures, the interpreter's state is bit-identical for 1 and 2
threads over several steps, the running statistics are state the step updates, and the
interpreted step stays close to eager torch (a semantics check; tolerance only there)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainer.interp import Interpreter
from trainer.program import CaptureError, KeyedDropout, SGDConfig, build_step, capture, dropout_masks
from trainer.program.errors import ProgramError

B, D = 16, 12


class ResBlock(nn.Module):
    def __init__(self, act: nn.Module, p: float) -> None:
        super().__init__()
        self.fc = nn.Linear(D, D)
        self.bn = nn.BatchNorm1d(D)
        self.act = act
        self.drop = KeyedDropout(p, (D,))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(self.act(self.bn(self.fc(x))))


class ResMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, D)
        self.b1 = ResBlock(nn.SiLU(), 0.25)
        self.b2 = ResBlock(nn.LeakyReLU(0.1), 0.1)
        self.out = nn.Linear(D, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.b2(self.b1(self.inp(x))))


@contextmanager
def threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _digest(state: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].contiguous()
        h.update(name.encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.int64 else t.numpy().tobytes())
    return h.hexdigest()


def _batch(model: nn.Module, step: int, loss: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(B, 6, generator=g)
    y = torch.rand(B, 3, generator=g) if loss == "bce" else torch.randn(B, 3, generator=g)
    return {"x": x, "y": y, **dropout_masks(model, seed=7, step=step, batch_size=B)}


LOSSES = {"mse": F.mse_loss, "bce": F.binary_cross_entropy_with_logits}


@pytest.fixture(scope="module", params=sorted(LOSSES))
def setup(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = ResMLP()
    step = build_step(model, LOSSES[request.param], SGDConfig(lr=0.05, momentum=0.9))
    state = step.init_state()
    program = capture(step, state, _batch(model, 0, request.param))
    return request.param, model, step, state, program


def test_running_statistics_are_state(setup) -> None:  # type: ignore[no-untyped-def]
    _, _, _, state, program = setup
    for name in ("buffer/b1.bn.running_mean", "buffer/b1.bn.running_var", "buffer/b1.bn.num_batches_tracked"):
        assert name in state and name in program.state_names
    ops = {n.op for n in program.nodes}
    assert "aten._native_batch_norm_legit_functional.default" in ops
    assert not any(op.split(".")[1].endswith("_") for op in ops)  # no in-place call is left


def test_interpreter_bits_match_across_threads(setup) -> None:  # type: ignore[no-untyped-def]
    loss_name, model, _, state, program = setup
    digests = []
    for n in (1, 2):
        with threads(n):
            interp = Interpreter(program)
            s = dict(state)
            losses = []
            for t in range(4):
                s, loss = interp.run(s, _batch(model, t, loss_name))
                losses.append(loss.view(torch.int32).item())
            digests.append((_digest(s), losses))
    assert digests[0] == digests[1]
    assert int(s["buffer/b1.bn.num_batches_tracked"]) == 4


def test_interpreter_close_to_eager_torch(setup) -> None:  # type: ignore[no-untyped-def]
    loss_name, model, step, state, program = setup
    interp = Interpreter(program)
    s_ours, s_eager = dict(state), dict(state)
    for t in range(3):
        batch = _batch(model, t, loss_name)
        s_ours, loss_ours = interp.run(s_ours, batch)
        s_eager, loss_eager = step.fn(s_eager, batch)
        assert torch.allclose(loss_ours, loss_eager, rtol=1e-4, atol=1e-5)
    for name in s_ours:
        assert torch.allclose(s_ours[name].double(), s_eager[name].double(), rtol=1e-3, atol=1e-4), name
    assert not torch.equal(s_ours["buffer/b2.bn.running_var"], state["buffer/b2.bn.running_var"])


def test_eager_step_updates_running_stats_like_torch() -> None:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5, momentum=0.2))
    step = build_step(model, F.mse_loss, SGDConfig(lr=0.1))
    state = step.init_state()
    x, y = torch.randn(8, 4), torch.randn(8, 5)
    new, _ = step.fn(state, {"x": x, "y": y})
    model(x)  # torch's own in-place update
    assert torch.allclose(new["buffer/1.running_mean"], model[1].running_mean, atol=1e-6)
    assert torch.allclose(new["buffer/1.running_var"], model[1].running_var, atol=1e-6)
    assert int(new["buffer/1.num_batches_tracked"]) == 1
    assert int(state["buffer/1.num_batches_tracked"]) == 0  # the input state is not changed


class _Dropping(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(self.fc(x), 0.5, training=True)  # the line the error names


def test_torch_dropout_is_refused_with_the_users_line() -> None:
    step = build_step(_Dropping(), F.mse_loss, SGDConfig(lr=0.1))
    with pytest.raises(CaptureError, match=r"aten\.bernoulli.*randomness in the batch.*KeyedDropout") as e:
        capture(step, step.init_state(), {"x": torch.randn(2, 4), "y": torch.randn(2, 4)})
    assert "the line the error names" in str(e.value)


def test_dropout_module_is_refused() -> None:
    step = build_step(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)), F.mse_loss, SGDConfig(lr=0.1))
    with pytest.raises(CaptureError, match="may not draw random numbers"):
        capture(step, step.init_state(), {"x": torch.randn(2, 4), "y": torch.randn(2, 4)})


def test_rand_in_the_loss_is_refused() -> None:
    model = nn.Linear(4, 4)

    def noisy(o: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(o + torch.randn_like(o), t)

    step = build_step(model, noisy, SGDConfig(lr=0.1))
    with pytest.raises(CaptureError, match="pass randomness in the batch"):
        capture(step, step.init_state(), {"x": torch.randn(2, 4), "y": torch.randn(2, 4)})


def test_missing_mask_and_cumulative_momentum_are_refused() -> None:
    model = nn.Sequential(nn.Linear(4, 4), KeyedDropout(0.5, (4,)))
    step = build_step(model, F.mse_loss, SGDConfig(lr=0.1))
    with pytest.raises(ProgramError, match=r"no 'mask/1' entry"):
        step.fn(step.init_state(), {"x": torch.randn(2, 4), "y": torch.randn(2, 4)})
    with pytest.raises(ProgramError, match="momentum=None"):
        build_step(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, momentum=None)), F.mse_loss, SGDConfig(lr=0.1))


def test_dropout_masks_are_keyed() -> None:
    model = nn.Sequential(nn.Linear(4, 4), KeyedDropout(0.5, (4,)))
    a = dropout_masks(model, seed=1, step=3, batch_size=64)["mask/1"]
    assert torch.equal(a, dropout_masks(model, seed=1, step=3, batch_size=64)["mask/1"])
    assert not torch.equal(a, dropout_masks(model, seed=1, step=4, batch_size=64)["mask/1"])
    assert set(a.unique().tolist()) == {0.0, 2.0}
    assert 0.35 < float((a == 0).float().mean()) < 0.65


def test_reference_kernels_and_onnx_round_trip_give_the_same_bits(setup) -> None:  # type: ignore[no-untyped-def]
    from trainer.program.onnx_io import from_onnx, to_onnx

    loss_name, model, _, state, program = setup
    batch = _batch(model, 0, loss_name)
    fast, loss_fast = Interpreter(program).run(state, batch)
    ref, loss_ref = Interpreter(program, use="reference").run(state, batch)
    again = from_onnx(to_onnx(program), expected_hash=program.program_hash)
    round_trip, _ = Interpreter(again).run(state, batch)
    assert _digest(fast) == _digest(ref) == _digest(round_trip)
    assert torch.equal(loss_fast.view(torch.int32), loss_ref.view(torch.int32))


def _run_in_this_process(loss_name: str, steps: int, n_threads: int) -> str:
    """Capture and run `steps` interpreted steps from scratch; the state root as hex."""
    from trainer.commit import state_root

    torch.manual_seed(0)
    model = ResMLP()
    step = build_step(model, LOSSES[loss_name], SGDConfig(lr=0.05, momentum=0.9))
    state = step.init_state()
    with threads(n_threads):
        interp = Interpreter(capture(step, state, _batch(model, 0, loss_name)))
        for t in range(steps):
            state, _ = interp.run(state, _batch(model, t, loss_name))
    return state_root(state).hex()


def test_a_separate_process_gets_the_same_state_root() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "from tests.program.test_activations_norms_step import _run_in_this_process; "
        "print(_run_in_this_process('bce', 3, 1))"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300, env=env, cwd=root
    )
    assert out.stdout.strip().splitlines()[-1] == _run_in_this_process("bce", 3, 2)
