"""Calling the attested step inside a transaction runs the sealed program (docs/zkdv.md section 2):
the same state roots, loss bits and transcript bytes as the eager step, and the eager path wherever the
program cannot reproduce what the step leaves behind."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from zkdv_cases import batch, make_proof, train_step

import zkdv
from trainer.commit import state_root
from trainer.repops import KERNELS, OpSpec

OPTIMIZERS = {
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4),
}


def _roots(proof: zkdv.torch.ZKDV, model: nn.Module) -> tuple[bytes, bytes]:
    own = {f"param/{n}": p.detach() for n, p in model.named_parameters()}
    return state_root(own), state_root(proof._read_state())


def _loss_bits(loss: torch.Tensor) -> bytes:
    return loss.detach().to(torch.float32).reshape(1).numpy().tobytes()


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_the_program_step_has_the_eager_steps_roots_loss_bits_and_transcript(tmp_path: Path, optimizer: str) -> None:
    steps = 7
    policy = zkdv.SamplingPolicy.DEBUGCheckEvery(3)
    eager, e_model, e_opt = make_proof(tmp_path / "eager", optimizer=OPTIMIZERS[optimizer], policy=policy)
    prog, p_model, p_opt = make_proof(tmp_path / "program", optimizer=OPTIMIZERS[optimizer], policy=policy)

    @prog.attest
    def step(model: nn.Module, opt: torch.optim.Optimizer, b: Any) -> torch.Tensor:
        loss = F.cross_entropy(prog.forward(model, b[0]), b[1])
        prog.backward(loss)
        opt.step()
        opt.zero_grad()
        return loss

    params = [id(p) for p in p_model.parameters()]
    for t in range(steps):
        inputs, targets = batch(t)
        with eager.transaction(batch=(inputs, targets)):
            e_loss = F.cross_entropy(e_model(inputs), targets)
            eager.backward(e_loss)
            e_opt.step()
            e_opt.zero_grad()
        b = (inputs, targets)
        with prog.transaction(batch=b):
            p_loss = step(p_model, p_opt, b)
        assert _loss_bits(p_loss) == _loss_bits(e_loss), f"step {t}"
        assert _roots(prog, p_model) == _roots(eager, e_model), f"step {t}"
        assert prog.last_post_root == eager.last_post_root
        assert all(p.grad is None for p in p_model.parameters())
    assert prog.program_steps == steps and eager.program_steps == 0
    assert [id(p) for p in p_model.parameters()] == params  # the user's objects, updated in place
    if optimizer == "adamw":  # the optimizer's own state mirrors zkdv's, under torch's keys
        p0, e0 = next(iter(p_model.parameters())), next(iter(e_model.parameters()))
        assert hashlib.sha256(p_opt.state[p0]["exp_avg"].numpy().tobytes()).digest() == hashlib.sha256(
            e_opt.state[e0]["exp_avg"].numpy().tobytes()).digest()
    eager.close()
    prog.close()
    e_bytes = (tmp_path / "eager" / "records.cborl").read_bytes()
    p_bytes = (tmp_path / "program" / "records.cborl").read_bytes()
    assert hashlib.sha256(p_bytes).digest() == hashlib.sha256(e_bytes).digest()


def _run(tmp_path: Path, body: Any, steps: int = 3) -> zkdv.torch.ZKDV:
    proof, model, opt = make_proof(tmp_path)
    step = proof.attest(lambda m, o, b: body(proof, m, o, b))
    for t in range(steps):
        b = batch(t)
        with proof.transaction(batch=b):
            step(model, opt, b)
    proof.close()
    return proof


def _loss(proof: zkdv.torch.ZKDV, m: nn.Module, b: Any) -> torch.Tensor:
    return F.cross_entropy(proof.forward(m, b[0]), b[1])


def test_a_step_that_leaves_its_gradients_behind_runs_eagerly(tmp_path: Path) -> None:
    def body(proof: zkdv.torch.ZKDV, m: nn.Module, o: torch.optim.Optimizer, b: Any) -> None:
        proof.backward(_loss(proof, m, b))
        o.step()  # no zero_grad(): p.grad holds the gradients, which the program does not output

    assert _run(tmp_path, body).program_steps == 0


def test_a_step_that_returns_something_else_than_its_loss_runs_eagerly(tmp_path: Path) -> None:
    def body(proof: zkdv.torch.ZKDV, m: nn.Module, o: torch.optim.Optimizer, b: Any) -> Any:
        loss = _loss(proof, m, b)
        proof.backward(loss)
        o.step()
        o.zero_grad()
        return {"loss": loss}

    assert _run(tmp_path, body).program_steps == 0


def test_the_program_step_needs_the_transactions_own_batch_and_objects(tmp_path: Path) -> None:
    proof, model, opt = make_proof(tmp_path)

    @proof.attest
    def step(m: nn.Module, o: torch.optim.Optimizer, b: Any) -> None:
        proof.backward(_loss(proof, m, b))
        o.step()
        o.zero_grad()

    for t in range(3):
        b = batch(t)
        with proof.transaction(batch=b):
            step(model, opt, (b[0].clone(), b[1].clone()))  # equal values, other tensors: eager
    train_step(proof, model, opt, 3)  # the inline body, as before
    b = batch(4)
    with proof.transaction(batch=b):
        step(model, opt, b)
    proof.close()
    assert proof.program_steps == 1


def test_the_program_step_runs_on_the_eager_sides_kernels_so_a_swapped_kernel_is_caught(tmp_path: Path) -> None:
    def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a.double(), b.double()).float()  # torch's own product, another summation order

    proof, model, opt = make_proof(tmp_path, policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))

    @proof.attest
    def step(m: nn.Module, o: torch.optim.Optimizer, b: Any) -> None:
        proof.backward(_loss(proof, m, b))
        o.step()
        o.zero_grad()

    with pytest.raises(zkdv.ZKDVPoisonedError) as info:
        for t in range(4):
            if t == 2:
                proof._kernels = {**KERNELS, "aten.mm.default": OpSpec("aten.mm.default", mm, mm, "swapped")}
            b = batch(t)
            with proof.transaction(batch=b):
                step(model, opt, b)
            proof.join()
        proof.close()
    assert info.value.step == 2
    assert proof.program_steps >= 3
