"""The interpreter's deferred NaN canonicalization gives the bits of canonicalizing after every kernel.

`Interpreter.run` skips the kernels' own NaN canonicalization and canonicalizes its outputs once, for programs
of NAN_DEFERRABLE ops whose inputs hold only canonical NaNs. That is the same bits as the per-kernel rule when
every such kernel's result, NaNs canonicalized, does not depend on the sign and payload of its inputs' NaNs
(then by induction over the nodes every NaN-free bit is the same and every NaN is a NaN in both runs). Checked
here kernel by kernel on every node of the bundled programs, with NaNs of other payloads (negative, signaling,
all ones) put into the node's real inputs, and on whole steps against `trace` (which canonicalizes after every
kernel), by state root.
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

from trainer.commit import state_root
from trainer.data.dataset import digits
from trainer.interp import Interpreter, interpreter
from trainer.interp.interpreter import NAN_DEFERRABLE
from trainer.program import AdamWConfig
from trainer.program.models import DigitsCNN
from trainer.program.program import ConstRef, InputRef, NodeRef, Program
from trainer.repops.mathfn import canonicalize_nan, nan_canonicalization_deferred
from trainer.workloads import Workload, char_transformer, mlp_digits

# NaNs as x86 makes them (0xFFC00000, inf - inf), with payloads, signaling, negative, all ones
F32_NANS = [0xFFC00000, 0x7FC00001, 0xFFFFFFFF, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7FA00000]
F64_NANS = [0xFFF8000000000000, 0x7FF8000000000001, 0xFFFFFFFFFFFFFFFF, 0x7FF0000000000001]
INT = {torch.float32: torch.int32, torch.float64: torch.int64}


def _cnn() -> Workload:
    """A CNN of issue 15's models: convolutions, pooling, AdamW with weight decay and clipping."""
    torch.manual_seed(0)
    optimizer = AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0)
    return Workload.of("digits_cnn", DigitsCNN(), F.cross_entropy, optimizer, digits("train"), steps=4,
                       checkpoint_interval=2, batch_size=16, seed=1)  # fmt: skip


_MADE: dict[str, Workload] = {}


def _program(name: str) -> Workload:
    if name not in _MADE:
        _MADE[name] = {"mlp": mlp_digits, "transformer": char_transformer, "cnn": _cnn}[name]()
    return _MADE[name]


NAMES = ["mlp", "transformer", "cnn"]


@pytest.fixture(scope="module", params=NAMES)
def program_and_values(request: pytest.FixtureRequest) -> tuple[Program, Interpreter, dict, list]:
    w = _program(request.param)
    interp = Interpreter(w.program)
    state = w.initial_state()
    batch = w.dataset.batch(w.config.seed, 0, w.config.batch_size)
    nodes = interp.node_values(state, batch)  # canonicalized after every kernel
    inputs = {**state, **batch, **{c.name: c.tensor() for c in w.program.constants}}
    return w.program, interp, inputs, nodes


def _value(ref: object, inputs: dict, nodes: list) -> torch.Tensor:
    if isinstance(ref, NodeRef):
        return nodes[ref.index][ref.slot]
    assert isinstance(ref, InputRef | ConstRef)
    return inputs[ref.name]


def _with_nans(t: torch.Tensor, where: torch.Tensor, bits: list[int], rng: random.Random) -> torch.Tensor:
    """A copy of float tensor t with NaNs at `where` (flat indices): canonical when bits is empty, else drawn."""
    out = t.detach().clone().contiguous()
    flat = out.view(-1)
    if not bits:
        flat[where] = float("nan")
        return canonicalize_nan(out)
    width = 8 * t.element_size()
    signed = [v - (1 << width) if v >= 1 << (width - 1) else v for v in bits]  # the same bits, as the int type
    choice = torch.tensor([rng.randrange(len(bits)) for _ in range(min(len(where), 64))], dtype=torch.long)
    picks = torch.tensor(signed, dtype=INT[t.dtype])[choice.repeat(-(-len(where) // len(choice)))[: len(where)]]
    flat.view(INT[t.dtype])[where] = picks
    return out


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype in INT:
        return torch.equal(a.contiguous().view(INT[a.dtype]), b.contiguous().view(INT[b.dtype]))
    return torch.equal(a, b)


def test_every_kernel_ignores_nan_payloads_on_the_bundled_programs(program_and_values: tuple) -> None:
    program, interp, inputs, nodes = program_and_values
    rng = random.Random(7)
    seen, done = set(), set()
    for node in program.nodes:
        seen.add(node.op)
        values = [_value(r, inputs, nodes) for r in node.inputs]
        kind = (node.op, repr(node.args), tuple((v.dtype, tuple(v.shape)) for v in values))
        if kind in done:  # the same kernel on the same kind of operands (another layer's): checked once
            continue
        done.add(kind)
        floats = [k for k, v in enumerate(values) if v.dtype in INT and v.numel() > 0]
        for trial in range(2):
            canonical, payloads = list(values), list(values)
            for k in floats:
                v = values[k]
                n = v.numel()
                # trial 0: a few NaNs; trial 1: about half the values (rows, slices, reductions of NaNs only)
                count = min(n, 3) if trial == 0 else max(1, n // 2)
                where = torch.tensor(rng.sample(range(n), count), dtype=torch.long)
                canonical[k] = _with_nans(v, where, [], rng)
                payloads[k] = _with_nans(v, where, F64_NANS if v.dtype == torch.float64 else F32_NANS, rng)
            want = interp.run_node(node.index, canonical)
            with nan_canonicalization_deferred():
                got = interp.run_node(node.index, payloads)
            got = tuple(canonicalize_nan(t) if t.is_floating_point() else t for t in got)
            for j, (a, b) in enumerate(zip(want, got, strict=True)):
                assert _same_bits(a, b), f"node {node.index} ({node.op}) output {j}, trial {trial}"
    assert seen <= NAN_DEFERRABLE, sorted(seen - NAN_DEFERRABLE)


def test_a_table_with_a_kernel_of_its_own_is_not_deferred() -> None:
    """The check above is of the table's own kernels: an interpreter given another kernel for one op (as the
    zkdv tests swap one for torch's own) canonicalizes after every kernel."""
    import dataclasses

    from trainer.repops import KERNELS

    w = _program("mlp")
    assert Interpreter(w.program)._deferrable
    assert Interpreter(w.program, dict(KERNELS))._deferrable  # the same kernels in another mapping
    mm = KERNELS["aten.mm.default"]
    other = {**KERNELS, "aten.mm.default": dataclasses.replace(mm, fast=torch.mm)}
    assert not Interpreter(w.program, other)._deferrable


def test_every_deferrable_op_is_checked_here() -> None:
    """NAN_DEFERRABLE holds no op the bundled programs above do not check."""
    ops = {n.op for name in NAMES for n in _program(name).program.nodes}
    assert ops >= NAN_DEFERRABLE, sorted(NAN_DEFERRABLE - ops)


@pytest.mark.parametrize(("name", "makes_nans"), [("mlp", False), ("transformer", True), ("cnn", True)])
def test_a_run_with_nans_gives_the_roots_of_the_trace(name: str, makes_nans: bool, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:  # fmt: skip
    """Whole steps: `run` (deferred) against `trace` (canonicalized after every kernel), bits of the new state
    and loss. From a state whose optimizer slots hold canonical NaNs and +inf (at the same places in every slot),
    AdamW's update makes NaNs of its own (inf / inf: x86's negative default NaN, then propagated): without the
    final canonicalization the roots differ, with it they are the trace's. (SGD with momentum makes none from
    such a state: only the equality is checked for the MLP.) From a state holding a NaN of another payload,
    `run` canonicalizes after every kernel: the same roots again."""
    w = _program(name)
    interp = Interpreter(w.program)
    assert interp._deferrable
    batch = w.dataset.batch(w.config.seed, 1, w.config.batch_size)
    rng = random.Random(3)
    for payload in ([], F32_NANS):
        state = w.initial_state()
        for key in sorted(k for k in state if k.startswith("optim/")):
            t = state[key]
            if t.dtype == torch.float32 and t.numel() > 1:
                n = t.numel()
                t = _with_nans(t, torch.tensor(rng.sample(range(n), max(1, n // 50)), dtype=torch.long), payload, rng)
                t.view(-1)[: max(1, n // 50)] = float("inf")
                state[key] = t.reshape(state[key].shape)
        traced, tloss, _ = interp.trace(state, batch)
        with monkeypatch.context() as m:
            m.setattr(interpreter, "_canonical", lambda t: t)
            raw, _ = interp.run(state, batch)
        if makes_nans and not payload:  # the deferred run made NaNs of other bits, which the end canonicalizes
            assert state_root(raw) != state_root(traced)
        ran, loss = interp.run(state, batch)
        assert state_root(ran) == state_root(traced)
        assert _same_bits(loss, tloss)
        assert any(bool(torch.isnan(t).any()) for t in ran.values() if t.is_floating_point())
