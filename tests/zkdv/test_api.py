"""prepare()'s argument handling and every refusal with its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from zkdv_cases import batch, make_proof, mlp, train_step

import zkdv
import zkdv.torch
from zkdv.transcript import read_records


def _proof(tmp_path: Path) -> zkdv.torch.ZKDV:
    proof = zkdv.torch.ZKDV(tmp_path / "p")
    proof.start(rolling_window=8, probe_ratio=0.01)
    return proof


def test_prepare_returns_the_sole_value_or_a_tuple_and_passes_others_through(tmp_path: Path) -> None:
    proof = _proof(tmp_path)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert proof.prepare(model) is model
    tensor, config = torch.ones(3), {"lr": 0.1}
    got = proof.prepare(opt, tensor, config, 7, "x")
    assert isinstance(got, tuple) and len(got) == 5
    assert got[0] is opt and got[1] is tensor and got[2] is config and got[3] == 7 and got[4] == "x"
    assert proof.prepare(tensor) is tensor
    with pytest.raises(zkdv.ZKDVUsageError, match="at least one"):
        proof.prepare()
    with pytest.raises(zkdv.ZKDVUsageError, match="one root model"):
        proof.prepare(nn.Linear(2, 2))


def test_a_prepared_optimizer_steps_natively_outside_a_transaction(tmp_path: Path) -> None:
    proof = _proof(tmp_path)
    torch.manual_seed(3)
    a, b = nn.Linear(4, 2), nn.Linear(4, 2)
    b.load_state_dict(a.state_dict())
    oa, ob = torch.optim.AdamW(a.parameters(), lr=0.1), torch.optim.AdamW(b.parameters(), lr=0.1)
    proof.prepare(a, oa)
    x = torch.randn(5, 4)
    for model, opt in ((a, oa), (b, ob)):
        model(x).square().sum().backward()
        opt.step()
        opt.zero_grad()
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)


def test_lbfgs_is_refused_with_the_registration_instruction(tmp_path: Path) -> None:
    proof = _proof(tmp_path)
    with pytest.raises(zkdv.UnsupportedOptimizerError, match=r"LBFGS.*register_functional_optimizer"):
        proof.prepare(torch.optim.LBFGS(mlp().parameters()))


class PlainSGD(torch.optim.SGD):
    """An optimizer subclass zkdv does not know."""


class PlainForm:
    """`p - lr * g`, no state."""

    def __init__(self, opt: torch.optim.Optimizer) -> None:
        self.lr = float(opt.param_groups[0]["lr"])

    def describe(self) -> dict[str, Any]:
        return {"kind": "plain", "lr": self.lr}

    def init_state(self, params: Any) -> dict[str, torch.Tensor]:
        return {}

    def update(self, params: Any, grads: Any, state: Any) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        return {n: p - self.lr * grads[n] for n, p in params.items()}, {}


def test_unknown_subclass_refused_then_registered_works(tmp_path: Path) -> None:
    with pytest.raises(zkdv.UnsupportedOptimizerError, match=r"PlainSGD.*register_functional_optimizer"):
        make_proof(tmp_path / "a", optimizer=lambda ps: PlainSGD(ps, lr=0.1))
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
    proof = zkdv.torch.ZKDV(tmp_path / "b", config)
    proof.start(rolling_window=8)
    proof.register_functional_optimizer(PlainSGD, PlainForm)
    model = mlp()
    opt = PlainSGD(model.parameters(), lr=0.1)
    before = model[0].weight.detach().clone()
    model, opt = proof.prepare(model, opt)

    @proof.attest
    def step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any) -> None:
        x, y = batch
        proof.backward(F.cross_entropy(proof.forward(model, x), y))
        optimizer.step()

    for t in range(3):
        train_step(proof, model, opt, t)
    proof.close()
    assert not torch.equal(before, model[0].weight)
    recs = [r for r, _ in read_records(tmp_path / "b" / "records.cborl")]
    assert recs[0]["optimizer"] == {"kind": "plain", "lr": 0.1}
    assert [r["ok"] for r in recs if r["type"] == "check"] == [True, True, True]


def _first_transaction(tmp_path: Path, body: Any, model: nn.Module | None = None) -> None:
    proof, model, opt = make_proof(tmp_path / "p", model=model)
    proof.attest(lambda m, o, b: body(proof, m, o, b))
    train_step(proof, model, opt, 0)


def test_a_stateful_module_outside_the_root_is_refused(tmp_path: Path) -> None:
    head = nn.Linear(2, 2)

    def body(proof: Any, model: nn.Module, opt: Any, b: Any) -> None:
        x, y = b
        proof.backward(F.cross_entropy(head(proof.forward(model, x)), y))
        opt.step()

    with pytest.raises(zkdv.ZKDVLoweringError, match=r"stateful Linear that is not under the prepared root.*prepare"):
        _first_transaction(tmp_path, body)


def test_calling_the_model_without_proof_forward_is_refused(tmp_path: Path) -> None:
    def body(proof: Any, model: nn.Module, opt: Any, b: Any) -> None:
        x, y = b
        proof.backward(F.cross_entropy(model(x), y))
        opt.step()

    with pytest.raises(zkdv.ZKDVLoweringError, match=r"proof\.forward\(model, inputs\)"):
        _first_transaction(tmp_path, body)


@pytest.mark.parametrize("kind", ["dropout", "rand"])
def test_implicit_randomness_is_refused(tmp_path: Path, kind: str) -> None:
    model = nn.Sequential(nn.Linear(10, 8), nn.Dropout(0.5), nn.Linear(8, 2)) if kind == "dropout" else mlp()

    def body(proof: Any, model: nn.Module, opt: Any, b: Any) -> None:
        x, y = b
        if kind == "rand":
            x = x + torch.rand(x.shape)
        proof.backward(F.cross_entropy(proof.forward(model, x), y))
        opt.step()

    with pytest.raises(zkdv.ImplicitRandomnessError, match="pass it in the transaction's batch"):
        _first_transaction(tmp_path, body, model)


def test_an_operator_without_a_kernel_is_refused_with_the_captures_message(tmp_path: Path) -> None:
    def body(proof: Any, model: nn.Module, opt: Any, b: Any) -> None:
        x, y = b
        out = proof.forward(model, torch.cumsum(x, dim=1))
        proof.backward(F.cross_entropy(out, y))
        opt.step()

    with pytest.raises(zkdv.ZKDVLoweringError, match=r"without a RepOps kernel[\s\S]*aten\.cumsum"):
        _first_transaction(tmp_path, body)


def test_a_loop_that_changes_the_program_is_refused(tmp_path: Path) -> None:
    proof, model, opt = make_proof(tmp_path / "p")
    train_step(proof, model, opt, 0)
    x, y = batch(1, rows=4)  # another shape
    with pytest.raises(zkdv.ProgramChangedError, match="batch shapes"), proof.transaction(batch=(x, y)):
        pass
    opt.param_groups[0]["lr"] = 0.5  # a scheduler changing the learning rate changes the program
    x, y = batch(1)
    with pytest.raises(zkdv.ProgramChangedError, match="hyperparameters"), proof.transaction(batch=(x, y)):
        pass
    opt.param_groups[0]["lr"] = 1e-2
    train_step(proof, model, opt, 1)  # nothing was lost: the run continues at step 1
    proof.close()
    steps = [r["step"] for r, _ in read_records(tmp_path / "p" / "records.cborl") if r["type"] == "step"]
    assert steps == [0, 1]


def test_usage_errors(tmp_path: Path) -> None:
    proof = zkdv.torch.ZKDV(tmp_path / "p")
    with pytest.raises(zkdv.ZKDVUsageError, match="start"):
        proof.transaction(batch=torch.ones(2)).__enter__()
    proof.start(rolling_window=4)
    with pytest.raises(zkdv.ZKDVUsageError, match="prepare"), proof.transaction(batch=torch.ones(2)):
        pass
    with pytest.raises(zkdv.ZKDVUsageError, match="probability"):
        zkdv.SamplingPolicy(state_check_probability=1.5)
    with pytest.raises(zkdv.ZKDVUsageError, match="positive"):
        zkdv.torch.ZKDV(tmp_path / "q", max_in_flight=0)


def test_rolling_window_wider_than_a_row_is_refused(tmp_path: Path) -> None:
    proof = zkdv.torch.ZKDV(tmp_path / "p")
    proof.start(rolling_window=10_000)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    proof.prepare(model, opt)

    @proof.attest
    def step(model: nn.Module, optimizer: Any, b: Any) -> None:
        x, y = b
        proof.backward(F.cross_entropy(proof.forward(model, x), y))
        optimizer.step()

    with pytest.raises(zkdv.ZKDVUsageError, match="rolling_window 10000 exceeds the packed width"):
        train_step(proof, model, opt, 0)


@pytest.mark.parametrize("checks", [False, True], ids=["sampling-off", "every-step-checked"])
def test_a_batch_changed_in_place_inside_its_transaction_is_refused(tmp_path: Path, checks: bool) -> None:
    """With sampling off, close commits the batch from the user's own tensors (no copy at open); with checks, from
    open's copy. Either way a batch changed in place after open is not the one the step read: refused, and the run
    poisoned (the model holds an update no record attests), never committed."""
    policy = zkdv.SamplingPolicy(state_check_probability=1.0) if checks else zkdv.SamplingPolicy()
    proof, model, opt = make_proof(tmp_path / "p", policy=policy)
    proof.commit_worker = False  # close commits on this thread: the path that keeps no copy
    train_step(proof, model, opt, 0)
    inputs, targets = batch(1)
    with pytest.raises(zkdv.ZKDVUsageError, match="changed in place"), proof.transaction(batch=(inputs, targets)):
        loss = F.cross_entropy(model(inputs), targets)
        proof.backward(loss)
        inputs.mul_(2.0)
        opt.step()
        opt.zero_grad()
    with pytest.raises(zkdv.ZKDVPoisonedError, match="changed in place"):
        train_step(proof, model, opt, 1)
    steps = [r["step"] for r, _ in read_records(tmp_path / "p" / "records.cborl") if r["type"] == "step"]
    assert steps == [0]
