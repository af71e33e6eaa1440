from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from program_cases import Case
from torch import nn

from trainer.program import (
    CaptureError,
    ConstRef,
    InputKind,
    NodeRef,
    OutputKind,
    ProgramError,
    SGDConfig,
    UnsupportedOperatorsError,
    build_step,
    capture,
    trace,
)
from trainer.program.ops import supported_ops
from trainer.program.torch_exec import run_eager_decomposed, run_with_aten
from trainer.repops import UnsupportedOpError


def test_mlp_program_shape(mlp: Case) -> None:
    p = mlp.program
    assert p.state_names == [
        "optim/momentum_buffer/fc1.bias",
        "optim/momentum_buffer/fc1.weight",
        "optim/momentum_buffer/fc2.bias",
        "optim/momentum_buffer/fc2.weight",
        "param/fc1.bias",
        "param/fc1.weight",
        "param/fc2.bias",
        "param/fc2.weight",
    ]
    assert p.batch_names == ["x", "y"]
    assert p.constants == ()
    assert [o.name for o in p.outputs] == [*p.state_names, "loss"]
    assert p.outputs[-1].kind is OutputKind.LOSS and p.outputs[-1].type.shape == ()
    assert 60 <= len(p.nodes) <= 120
    assert p.op_counts()["aten.gelu.default"] == 1


def test_transformer_program_shape(transformer: Case) -> None:
    p = transformer.program
    assert "optim/beta1_power" in p.state_names and "optim/beta2_power" in p.state_names
    assert [c.name for c in p.constants] == [
        "buffer/blocks.0.attn.mask",
        "buffer/blocks.1.attn.mask",
        "buffer/positions",
    ]
    assert p.constant("buffer/positions").tensor().tolist() == list(range(32))
    assert p.constant("buffer/blocks.0.attn.mask").type.dtype == torch.bool
    counts = p.op_counts()
    for op in ("aten.embedding.default", "aten.native_layer_norm.default", "aten.bmm.default", "aten._softmax.default"):
        assert counts[op] > 0, op
    assert any(isinstance(r, ConstRef) for n in p.nodes for r in n.inputs)
    # split_with_sizes feeds q, k and v through output slots 0..2
    slots = {r.slot for n in p.nodes for r in n.inputs if isinstance(r, NodeRef)}
    assert {0, 1, 2} <= slots


def test_only_supported_ops_and_no_aliases(case: Case) -> None:
    ops = set(case.program.op_counts())
    assert ops <= supported_ops()
    assert "aten.alias.default" not in ops and "aten.lift_fresh_copy.default" not in ops


def test_inputs_are_state_then_batch(case: Case) -> None:
    kinds = [i.kind for i in case.program.inputs]
    n = kinds.count(InputKind.STATE)
    assert kinds == [InputKind.STATE] * n + [InputKind.BATCH] * 2


def test_program_equals_eager_decomposed_step_bit_for_bit(case: Case) -> None:
    new_state, loss = run_with_aten(case.program, case.state, case.batch)
    eager_state, eager_loss = run_eager_decomposed(case.step.fn, case.state, case.batch)
    assert loss.dtype == torch.float32 and torch.equal(loss, eager_loss)
    assert new_state.keys() == eager_state.keys()
    for name in new_state:
        assert torch.equal(new_state[name], eager_state[name]), name
    assert any(not torch.equal(new_state[n], case.state[n]) for n in new_state if n.startswith("param/"))


def test_program_equals_traced_graph_bit_for_bit(case: Case) -> None:
    gm = trace(case.step, case.state, case.batch)
    p = case.program
    consts = [case.step.constants[c.name] for c in p.constants]
    out = gm([case.state[n] for n in p.state_names] + [case.batch[n] for n in p.batch_names] + consts)
    new_state, loss = run_with_aten(p, case.state, case.batch)
    assert torch.equal(out[-1], loss)
    for i, name in enumerate(p.state_names):
        assert torch.equal(out[i], new_state[name]), name


def test_program_is_close_to_plain_eager_step(case: Case) -> None:
    # Decompositions change rounding, not meaning: plain torch kernels agree to float tolerance.
    new_state, loss = run_with_aten(case.program, case.state, case.batch)
    eager_state, eager_loss = case.step.fn(case.state, case.batch)
    torch.testing.assert_close(loss, eager_loss, rtol=1e-5, atol=1e-6)
    for name in new_state:
        torch.testing.assert_close(new_state[name], eager_state[name], rtol=1e-4, atol=1e-5)


def test_capture_is_deterministic(mlp: Case) -> None:
    again = capture(mlp.step, mlp.state, mlp.batch)
    assert again == mlp.program
    assert again.program_hash == mlp.program.program_hash


def test_shapes_are_part_of_the_program(mlp: Case) -> None:
    batch = {"x": torch.randn(16, 64), "y": torch.randint(0, 10, (16,))}
    other = capture(mlp.step, mlp.state, batch)
    assert other.graph_root != mlp.program.graph_root
    assert other.program_hash != mlp.program.program_hash


class Sorted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(self.fc(x), dim=1)
        return torch.sort(h, dim=1).values


def test_unsupported_ops_are_refused_in_one_error() -> None:
    step = build_step(Sorted(), F.cross_entropy, SGDConfig(lr=0.1))
    batch = {"x": torch.randn(4, 8), "y": torch.randint(0, 4, (4,))}
    with pytest.raises(UnsupportedOperatorsError) as info:
        capture(step, step.init_state(), batch)
    err = info.value
    assert isinstance(err, UnsupportedOpError) and isinstance(err, ProgramError)
    assert {"aten.cumsum.default", "aten.sort.default"} <= set(err.counts)
    assert set(err.counts).isdisjoint(supported_ops())
    message = str(err)
    for op, n in err.counts.items():
        assert f"{op}: {n} use" in message
    assert "test_capture.py" in message  # where the first use happened


def _line_of(fn: object, text: str) -> str:
    """`path:line` of the line of `fn`'s source that contains `text`."""
    import inspect

    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    (k,) = [i for i, line in enumerate(lines) if text in line]
    return f"{__file__}:{start + k}"


def test_a_refusal_points_at_the_users_line_not_torch_internals() -> None:
    step = build_step(Sorted(), F.cross_entropy, SGDConfig(lr=0.1))
    batch = {"x": torch.randn(4, 8), "y": torch.randint(0, 4, (4,))}
    with pytest.raises(UnsupportedOperatorsError) as info:
        capture(step, step.init_state(), batch)
    err = info.value
    assert err.where["aten.cumsum.default"].startswith(_line_of(Sorted.forward, "torch.cumsum") + " in forward: h = ")
    assert err.where["aten.sort.default"].startswith(_line_of(Sorted.forward, "torch.sort") + " in forward")
    assert "site-packages" not in err.where["aten.cumsum.default"]
    assert "docs/program.md#8-supported-operators" in str(err)  # where the supported list is


def test_a_backward_node_names_its_forward_operator_and_line() -> None:
    # aten.mm appears only in the backward of the Linear's addmm: refuse it alone
    step = build_step(nn.Sequential(nn.Linear(8, 4)), F.cross_entropy, SGDConfig(lr=0.1))
    batch = {"x": torch.randn(4, 8), "y": torch.randint(0, 4, (4,))}
    with pytest.raises(UnsupportedOperatorsError) as info:
        capture(step, step.init_state(), batch, supported=supported_ops() - {"aten.mm.default"})
    where = info.value.where["aten.mm.default"]
    assert where.startswith("the backward of aten.addmm.default (AddmmBackward0) at "), where


def test_a_loss_functions_line_is_found_outside_forward() -> None:
    def my_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(out, y) + out.cumsum(1).sum() * 0.0

    step = build_step(nn.Linear(8, 4), my_loss, SGDConfig(lr=0.1))
    batch = {"x": torch.randn(4, 8), "y": torch.randint(0, 4, (4,))}
    with pytest.raises(UnsupportedOperatorsError) as info:
        capture(step, step.init_state(), batch)
    assert info.value.where["aten.cumsum.default"].startswith(_line_of(my_loss, "cumsum") + " in my_loss")


def test_recording_sources_does_not_change_the_program(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import importlib

    cap = importlib.import_module("trainer.program.capture")  # the module: the package's `capture` is the function
    monkeypatch.setattr(cap, "_SourceRecorder", lambda boundary: contextlib.nullcontext())
    plain = capture(case.step, case.state, case.batch)
    assert plain.program_hash == case.program.program_hash


def test_an_empty_supported_set_lists_every_op(mlp: Case) -> None:
    with pytest.raises(UnsupportedOperatorsError) as info:
        capture(mlp.step, mlp.state, mlp.batch, supported=())
    assert info.value.counts == mlp.program.op_counts()


def test_kernels_cover_both_models(mlp: Case, transformer: Case) -> None:
    used = set(mlp.program.op_counts()) | set(transformer.program.op_counts())
    assert used <= supported_ops()


def test_state_must_match_the_step(mlp: Case) -> None:
    state = dict(mlp.state)
    del state["param/fc1.bias"]
    with pytest.raises(CaptureError, match=r"missing \['param/fc1.bias'\]"):
        capture(mlp.step, state, mlp.batch)
    with pytest.raises(CaptureError, match="'y'"):
        capture(mlp.step, mlp.state, {"x": mlp.batch["x"]})


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc(x)
        return out * 2 if out.sum() > 0 else out


def test_data_dependent_control_flow_is_a_capture_error() -> None:
    step = build_step(DataDependent(), F.cross_entropy, SGDConfig(lr=0.1))
    batch = {"x": torch.randn(3, 4), "y": torch.randint(0, 2, (3,))}
    with pytest.raises(CaptureError, match="data-dependent control flow"):
        capture(step, step.init_state(), batch)


class WithBuffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("offset", torch.full((4,), 0.5))  # persistent: state, passed through

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a tensor made inside forward: a graph constant
        return self.fc(x) * weights + self.offset


def test_buffers_and_graph_constants() -> None:
    from trainer.program import InputRef
    from trainer.program.onnx_io import from_bytes, to_bytes

    torch.manual_seed(0)
    step = build_step(WithBuffers(), F.cross_entropy, SGDConfig(lr=0.1, momentum=0.5))
    state = step.init_state()
    batch = {"x": torch.randn(5, 3), "y": torch.randint(0, 4, (5,))}
    p = capture(step, state, batch)
    assert "buffer/offset" in p.state_names
    out = next(o for o in p.outputs if o.name == "buffer/offset")
    assert out.ref == InputRef("buffer/offset")
    assert [c.name for c in p.constants] == ["tensor_constant/0"]
    assert p.constants[0].tensor().tolist() == [1.0, 2.0, 3.0, 4.0]
    new_state, loss = run_with_aten(p, state, batch)
    eager_state, eager_loss = run_eager_decomposed(step.fn, state, batch)
    assert torch.equal(loss, eager_loss)
    assert all(torch.equal(new_state[n], eager_state[n]) for n in new_state)
    assert torch.equal(new_state["buffer/offset"], state["buffer/offset"])
    assert from_bytes(to_bytes(p)).program_hash == p.program_hash
