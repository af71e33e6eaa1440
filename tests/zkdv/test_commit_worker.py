"""The commitments of a step are computed on the commit worker (docs/zkdv.md section 7): from copies
taken when the transaction closes (or the program step's own outputs), so whatever the loop does to
the model after close cannot change what is committed, and the transcript's bytes are those of
commitments computed on the training thread."""

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
from zkdv.transcript import read_records


def _steps(path: Path) -> list[dict[str, Any]]:
    return [r for r, _ in read_records(path / "records.cborl") if r["type"] == "step"]


def _program_proof(path: Path, **kw: Any) -> tuple[zkdv.torch.ZKDV, nn.Module, torch.optim.Optimizer, Any]:
    proof, model, opt = make_proof(path, **kw)

    @proof.attest
    def step(m: nn.Module, o: torch.optim.Optimizer, b: Any) -> None:
        proof.backward(F.cross_entropy(proof.forward(m, b[0]), b[1]))
        o.step()
        o.zero_grad()

    return proof, model, opt, step


def test_a_mutation_right_after_close_does_not_reach_the_commitments(tmp_path: Path) -> None:
    """The attack: the loop changes the parameters (and the optimizer state) in place right after a
    transaction closes, while the commit worker has not hashed that step yet. Hashing the live tensors
    would commit the changed state as the step's post-state, hiding the change from every check."""
    for program in (False, True):
        folder = tmp_path / ("program" if program else "eager")
        if program:
            proof, model, opt, step = _program_proof(folder, policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
        else:
            proof, model, opt = make_proof(folder, policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
        proof.commit_worker, proof._commit_delay = True, 0.2  # the worker hashes step t long after the loop moved on
        b = batch(0)
        with proof.transaction(batch=b):
            if program:
                step(model, opt, b)
            else:
                loss = F.cross_entropy(model(b[0]), b[1])
                proof.backward(loss)
                opt.step()
                opt.zero_grad()
        at_close = state_root({n: t.clone() for n, t in proof._read_state().items()})
        with torch.no_grad():
            for p in model.parameters():
                p.data.add_(1.0)  # through .data: no version counter sees it
            for entry in opt.state.values():
                entry["exp_avg"].add_(1.0)
        assert proof.last_post_root == at_close  # waits for the worker: it hashed the state at close
        proof.join()
        assert _steps(folder)[0]["post"] == at_close
        # the change is seen at the next open as a changed pre-state, and the check fails on it
        b = batch(1)
        try:
            with proof.transaction(batch=b):
                loss = F.cross_entropy(model(b[0]), b[1])
                proof.backward(loss)
                opt.step()
                opt.zero_grad()
            proof.close()
        except zkdv.ZKDVPoisonedError as e:
            assert e.step == 1 and "changed between steps 0 and 1" in e.detail
        else:
            raise AssertionError("the change between steps was not caught")


def test_commitments_on_the_worker_give_the_training_threads_bytes(tmp_path: Path) -> None:
    digests = []
    for inline in (True, False):
        folder = tmp_path / str(inline)
        proof, model, opt, step = _program_proof(folder, policy=zkdv.SamplingPolicy.DEBUGCheckEvery(3),
                                                 interval=4)
        proof.commit_worker = not inline
        for t in range(9):
            b = batch(t)
            if t % 2:
                with proof.transaction(batch=b):
                    step(model, opt, b)
            else:
                train_step(proof, model, opt, t)
            if t == 5:
                with torch.no_grad():
                    next(iter(model.parameters())).data.mul_(1.0)  # a rewrite of the same bytes: reused
        proof.close()
        digests.append(hashlib.sha256((folder / "records.cborl").read_bytes()).digest())
        assert proof.program_steps == 4
    assert digests[0] == digests[1]


def test_commit_worker_takes_true_false_or_none(tmp_path: Path) -> None:
    assert zkdv.torch.ZKDV(tmp_path / "a", commit_worker=True).commit_worker is True
    assert zkdv.torch.ZKDV(tmp_path / "b", commit_worker=False).commit_worker is False
    default = zkdv.torch.ZKDV(tmp_path / "c").commit_worker
    assert default is zkdv.torch.commit_worker_default()
    with pytest.raises(zkdv.ZKDVUsageError, match="commit_worker must be True, False or None"):
        zkdv.torch.ZKDV(tmp_path / "d", commit_worker=1)  # type: ignore[arg-type]
