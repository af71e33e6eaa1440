"""The interpreter: RepOps-only steps, traces, single-node recomputation, invariance."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
import torch.nn.functional as F

from trainer.commit import commit_tensor, state_root, verify
from trainer.interp import Interpreter, InterpreterError
from trainer.interp.interpreter import commitment
from trainer.program import AdamWConfig, SGDConfig, build_step, capture
from trainer.program._schema import op_overload
from trainer.program.models import MLP, CharTransformer, MLPConfig, TransformerConfig, sequence_cross_entropy
from trainer.program.program import NodeRef, Program
from trainer.program.torch_exec import run_with_aten
from trainer.repops import KERNELS, OpSpec, UnsupportedOpError
from trainer.workloads import Workload, keyed_init, mlp_digits


@pytest.fixture(scope="module")
def digits_mlp() -> Workload:
    return mlp_digits()


def small_mlp(batch: int) -> tuple[Program, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    step = build_step(
        MLP(MLPConfig(d_in=8, d_hidden=16, n_classes=4)), F.cross_entropy, SGDConfig(lr=0.1, momentum=0.9)
    )
    state = keyed_init(step, seed=5)
    g = torch.Generator().manual_seed(batch)
    b = {"x": torch.randn(batch, 8, generator=g), "y": torch.randint(0, 4, (batch,), generator=g)}
    return capture(step, state, b), state, b


@contextmanager
def threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def test_interpreter_mechanics_equal_the_aten_executor(digits_mlp: Workload) -> None:
    """With torch's own kernels plugged in, the interpreter computes what run_with_aten does, bit for bit."""
    aten = {
        op: OpSpec(op, op_overload(op), op_overload(op), "torch's own kernel")
        for op in {n.op for n in digits_mlp.program.nodes}
    }
    state = digits_mlp.initial_state()
    batch = digits_mlp.dataset.batch(1, 0, 64)
    ours, loss = Interpreter(digits_mlp.program, aten).run(state, batch)
    theirs, loss2 = run_with_aten(digits_mlp.program, state, batch)
    assert state_root(ours) == state_root(theirs)
    assert commit_tensor(loss) == commit_tensor(loss2)


def test_trace_root_and_run_node_agree(digits_mlp: Workload) -> None:
    interp = Interpreter(digits_mlp.program)
    state = digits_mlp.initial_state()
    batch = digits_mlp.dataset.batch(1, 0, 64)
    new_state, _loss, trace = interp.trace(state, batch)
    plain, _plain_loss = interp.run(state, batch)
    assert state_root(new_state) == state_root(plain)
    assert len(trace.records) == len(digits_mlp.program.nodes)
    values = interp.node_values(state, batch)
    tree = trace.tree
    for rec in trace.records:
        node = digits_mlp.program.nodes[rec.index]
        assert rec.descriptor_hash == digits_mlp.program.descriptor_hash(rec.index)
        # The oracle's view: only this node's input tensors, recomputed alone.
        inputs = [values[r.index][r.slot] if isinstance(r, NodeRef) else (state | batch)[r.name] for r in node.inputs]
        assert tuple(commitment(t) for t in interp.run_node(rec.index, inputs)) == rec.outputs
        assert tuple(commitment(t) for t in inputs) == rec.inputs
        verify(trace.root, len(trace.records), rec.index, rec.leaf, tree.open(rec.index).siblings)


def test_reference_kernels_give_the_same_bits_as_fast_ones() -> None:
    program, state, batch = small_mlp(batch=4)
    fast, _fast_loss, fast_trace = Interpreter(program).trace(state, batch)
    ref, _ref_loss, ref_trace = Interpreter(program, use="reference").trace(state, batch)
    assert [r.outputs for r in fast_trace.records] == [r.outputs for r in ref_trace.records]
    assert fast_trace.root == ref_trace.root and state_root(fast) == state_root(ref)


def test_thread_count_does_not_change_the_bits(digits_mlp: Workload) -> None:
    interp = Interpreter(digits_mlp.program)
    state = digits_mlp.initial_state()
    batch = digits_mlp.dataset.batch(1, 3, 64)
    with threads(1):
        one = interp.trace(state, batch)[2].root
    with threads(2):
        two = interp.trace(state, batch)[2].root
    assert one == two


def test_a_separate_process_gets_the_same_root(digits_mlp: Workload) -> None:
    interp = Interpreter(digits_mlp.program)
    state = digits_mlp.initial_state()
    new_state, _ = interp.run(state, digits_mlp.dataset.batch(1, 0, 64))
    code = (
        "from trainer.workloads import mlp_digits; from trainer.interp import Interpreter; "
        "from trainer.commit import state_root; w = mlp_digits(); "
        "s, _ = Interpreter(w.program).run(w.initial_state(), w.dataset.batch(1, 0, 64)); "
        "print(state_root(s).hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == state_root(new_state).hex()


def test_a_row_in_a_batch_of_64_equals_the_row_alone() -> None:
    """Row-wise forward ops (matmul, bias, GELU, log-softmax) do not look at the other rows."""
    p64, state, b64 = small_mlp(batch=64)
    p1, _, _ = small_mlp(batch=1)
    row = 17
    b1 = {"x": b64["x"][row : row + 1].clone(), "y": b64["y"][row : row + 1].clone()}
    v64 = Interpreter(p64).node_values(state, b64)
    v1 = Interpreter(p1).node_values(state, b1)
    forward = [
        n.index for n in p64.nodes if n.op in ("aten.addmm.default", "aten.gelu.default", "aten._log_softmax.default")
    ]
    assert len(forward) >= 4
    for i in forward:
        assert p1.nodes[i].op == p64.nodes[i].op
        a, b = v64[i][0][row].contiguous(), v1[i][0][0].contiguous()
        assert torch.equal(a.view(torch.int32), b.view(torch.int32)), p64.nodes[i].op


def test_a_missing_kernel_and_a_bad_input_are_named(digits_mlp: Workload) -> None:
    partial = {k: v for k, v in KERNELS.items() if k != "aten.mm.default"}
    with pytest.raises(UnsupportedOpError, match=r"aten\.mm\.default"):
        Interpreter(digits_mlp.program, partial)
    interp = Interpreter(digits_mlp.program)
    state = digits_mlp.initial_state()
    with pytest.raises(InterpreterError, match="missing"):
        interp.run(state, {"x": torch.zeros(64, 64)})
    with pytest.raises(InterpreterError, match="the program wants"):
        interp.run(state, {"x": torch.zeros(64, 63), "y": torch.zeros(64, dtype=torch.int64)})
    with pytest.raises(InterpreterError, match="does not exist"):
        interp.run_node(10_000, [])


def test_reference_kernels_match_on_a_tiny_transformer_with_adamw_and_clipping() -> None:
    """Every operator of the transformer step (attention, layer norm, embedding backward,
    AdamW, global-norm clipping) run by its scalar reference gives the fast kernels' bits."""
    config = TransformerConfig(vocab_size=16, context=4, d_model=8, n_heads=2, n_layers=1)
    step = build_step(
        CharTransformer(config),
        sequence_cross_entropy,
        AdamWConfig(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, clip_grad_norm=0.5),
    )
    state = keyed_init(step, seed=9)
    g = torch.Generator().manual_seed(0)
    batch = {"x": torch.randint(0, 16, (2, 4), generator=g), "y": torch.randint(0, 16, (2, 4), generator=g)}
    program = capture(step, state, batch)
    fast_state, _, fast_trace = Interpreter(program).trace(state, batch)
    ref_state, _, ref_trace = Interpreter(program, use="reference").trace(state, batch)
    mismatched = [
        program.nodes[a.index].op for a, b in zip(fast_trace.records, ref_trace.records, strict=True) if a != b
    ]
    assert not mismatched, f"reference and fast kernels differ at: {mismatched[:5]}"
    assert state_root(fast_state) == state_root(ref_state)


def _digits_cnn_program() -> tuple[Program, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    from trainer.data.dataset import digits
    from trainer.program.models import DigitsCNN

    torch.manual_seed(0)
    step = build_step(DigitsCNN(), F.cross_entropy, AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0))
    state = step.init_state()
    batch = digits().batch(1, 0, 16)
    return capture(step, state, batch), state, batch


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_compiled_step_equals_the_node_walk(model: str, digits_mlp: Workload) -> None:
    """run and trace execute the program compiled into straight-line code; the node walk (the
    reference) gives the same state root, loss commitment and trace root, as hashes."""
    if model == "mlp":
        program, state = digits_mlp.program, digits_mlp.initial_state()
        batch = digits_mlp.dataset.batch(1, 0, 64)
    elif model == "cnn":
        program, state, batch = _digits_cnn_program()
    else:
        step = build_step(
            CharTransformer(TransformerConfig(vocab_size=11, context=6, d_model=16, n_heads=2, n_layers=1)),
            sequence_cross_entropy,
            AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0),
        )
        state = keyed_init(step, seed=3)
        g = torch.Generator().manual_seed(1)
        batch = {"x": torch.randint(0, 11, (4, 6), generator=g), "y": torch.randint(0, 11, (4, 6), generator=g)}
        program = capture(step, state, batch)
    interp = Interpreter(program)
    new2, loss2, trace2 = interp._walk(state, batch, trace=True)
    assert trace2 is not None
    for worker in (False, True):  # trace mode with and without its commit worker thread
        interp.commit_worker = worker
        new, loss, trace = interp.trace(state, batch)
        assert state_root(new) == state_root(new2) and state_root(interp.run(state, batch)[0]) == state_root(new)
        assert commitment(loss) == commitment(loss2) == commitment(interp.run(state, batch)[1])
        assert trace.root == trace2.root
        assert [r.encode() for r in trace.records] == [r.encode() for r in trace2.records]


def test_compiled_step_checks_every_output_against_its_descriptor(digits_mlp: Workload) -> None:
    """A kernel whose output contradicts the node's descriptor is named by the compiled step too."""
    op = digits_mlp.program.nodes[-1].op
    real = KERNELS[op]
    wrong = {**KERNELS, op: OpSpec(op, lambda *a, **k: real.fast(*a, **k).double(), real.reference, "wrong dtype")}
    interp = Interpreter(digits_mlp.program, wrong)
    first = next(n.index for n in digits_mlp.program.nodes if n.op == op)
    with pytest.raises(InterpreterError, match=rf"node {first} \({op}\) output 0 is torch.float64"):
        interp.run(digits_mlp.initial_state(), digits_mlp.dataset.batch(1, 0, 64))
