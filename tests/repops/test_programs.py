"""The straight-line programs of trainer.repops.programs (the trace game's, docs/game.md 2.9) give the scalar
references and the tensor kernels of trainer.repops.mathfn bit for bit: on hypothesis-drawn fp32 patterns,
on every edge value (zeros, subnormals, the largest finite, infinities, NaNs, each function's thresholds
and their neighbours), and on a seeded batch through both kernel paths (the native loop on a contiguous
tensor, the torch operations on a strided one). Bit patterns are compared, never values."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import mathfn as M
from trainer.repops import programs as P

REFS: dict[str, tuple[Callable[[float], float], Callable[[torch.Tensor], torch.Tensor]]] = {
    "exp": (M.exp_ref, M.exp),
    "log": (M.log_ref, M.log),
    "log1p": (M.log1p_ref, M.log1p),
    "rsqrt": (M.rsqrt_ref, M.rsqrt),
    "tanh": (M.tanh_ref, M.tanh),
    "sigmoid": (M.sigmoid_ref, M.sigmoid),
    "erf": (M.erf_ref, M.erf),
    "gelu": (M.gelu_ref, M.gelu),
    "gelu_tanh": (lambda v: M.gelu_ref(v, "tanh"), lambda t: M.gelu(t, "tanh")),
}


def _pattern(v: float) -> int:
    return M.f32_bits(M.f32(v))


def _around(v: float, k: int = 2) -> list[int]:
    """The fp32 patterns within k steps of fp32(v) (same sign), v's own included."""
    b = _pattern(v)
    return [(b + d) & 0xFFFFFFFF for d in range(-k, k + 1)]


EDGES: list[int] = [
    0x00000000,
    0x80000000,  # +-0
    0x00000001,
    0x80000001,  # smallest subnormal
    0x007FFFFF,
    0x807FFFFF,  # largest subnormal
    0x00800000,
    0x80800000,  # smallest normal
    0x7F7FFFFF,
    0xFF7FFFFF,  # largest finite
    0x7F800000,
    0xFF800000,  # +-inf
    0x7FC00000,
    0xFFC00000,
    0x7F800001,
    0xFFFFFFFF,  # NaNs (quiet, signalling, negative)
    *_around(1.0),
    *_around(-1.0),
    *_around(float.fromhex("0x1.62e43p6")),  # exp: 88.72283935546875 (0x42B17218) overflows from here
    *[0xC2CFF1B4 + d for d in range(-2, 3)],  # exp: -103.97207641601562, the last non-zero result
    *_around(0.75),
    *_around(-0.75),  # erf's split
    *_around(10.625),
    *_around(-10.625),  # erf's clamp
    *_around(-15.0),  # gelu's clamp
    *_around(10.0),
    *_around(-10.0),  # tanh's clamp
    *_around(700.0),
    *_around(-700.0),
    *_around(2.0**-24),
    *_around(-(2.0**-24)),
    *_around(2.0**-53),  # log1p: u == 1 below about 2^-53
    *_around(float.fromhex("0x1.6a09e6p-1")),  # log's split point
]


def _check(fn: str, x_bits: int) -> None:
    ref, kernel = REFS[fn]
    trace = P.run(fn, x_bits)
    assert len(trace) == len(P.PROGRAMS[fn].steps)
    assert all(0 <= v < 2**64 for v in trace)
    x = M.f32_from_bits(x_bits)
    want = _pattern(ref(x))
    got_kernel = kernel(torch.tensor([x_bits], dtype=torch.int64).to(torch.int32).view(torch.float32))
    kernel_bits = int(got_kernel.view(torch.int32).item()) & 0xFFFFFFFF
    assert (trace[-1], trace[-1]) == (want, kernel_bits), f"{fn}({x_bits:#010x})"


@pytest.mark.parametrize("fn", list(REFS))
def test_program_matches_reference_and_kernel_on_edges_succeeds(fn: str) -> None:
    for x_bits in EDGES:
        _check(fn, x_bits)


@pytest.mark.parametrize("fn", list(REFS))
@settings(max_examples=150, deadline=None)
@given(x_bits=st.integers(min_value=0, max_value=2**32 - 1))
def test_program_matches_reference_and_kernel_on_drawn_patterns_succeeds(fn: str, x_bits: int) -> None:
    _check(fn, x_bits)


@pytest.mark.parametrize("fn", list(REFS))
def test_program_matches_both_kernel_paths_on_a_seeded_batch_succeeds(fn: str) -> None:
    rng = random.Random(f"programs-{fn}")
    # Half uniform patterns, half of magnitude below 16 (where the functions are not saturated).
    xs = [rng.getrandbits(32) for _ in range(600)]
    xs += [(rng.getrandbits(1) << 31) | rng.randrange(0x3F800000 - (40 << 23), 0x41800000) for _ in range(600)]
    xs += EDGES
    got = [P.run(fn, b)[-1] for b in xs]
    _, kernel = REFS[fn]
    t = torch.tensor(xs, dtype=torch.int64).to(torch.int32).view(torch.float32)
    native = kernel(t).view(torch.int32).tolist()
    wide = torch.stack([t, torch.zeros_like(t)], dim=1)[:, 0]  # strided: the torch operations run
    assert not wide.is_contiguous()
    strided = kernel(wide).contiguous().view(torch.int32).tolist()
    assert got == [v & 0xFFFFFFFF for v in native]
    assert got == [v & 0xFFFFFFFF for v in strided]


def test_programs_are_well_formed_succeeds() -> None:
    """Every step reads x, a constant or an earlier step with its opcode's operand count; the last step is the
    fp32 rounding and no other is; the ids are 0..8."""
    assert sorted(p.fn for p in P.PROGRAMS.values()) == list(range(9))
    for prog in P.PROGRAMS.values():
        nc = len(prog.constants)
        assert len(set(prog.constants)) == nc
        for i, s in enumerate(prog.steps):
            assert len(s.args) == P.ARITY[s.op]
            assert all(0 <= a < 1 + nc + i for a in s.args), (prog.name, i)
            assert (s.op == P.Op.F32) == (i == len(prog.steps) - 1), (prog.name, i)
        assert len(prog.encode()) == 4 * len(prog.steps)


def test_every_opcode_is_total_succeeds() -> None:
    """apply gives a 64-bit pattern (F32: a 32-bit one) on every mix of special operands; comparisons give 0/1."""
    specials = [0, P.SIGN64, 1, P.INF64, P.INF64 | P.SIGN64, P.NAN64, 0xFFF0000000000001, P.ONE, 0x8010000000000000]
    specials += [P.MASK64, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF]
    for op in P.Op:
        for a in specials:
            for b in specials:
                v = P.apply(op, a, b, a)
                assert 0 <= v < 2**64
                if op == P.Op.F32:
                    assert v < 2**32
                if op in (P.Op.LT, P.Op.LE, P.Op.EQ):
                    assert v in (0, 1)


def test_a_wrong_step_changes_the_trace_fails() -> None:
    """The evaluator is sensitive to every step: an override at step i changes step i and (here) the output."""
    trace = P.run("exp", _pattern(0.3))
    liar = P.run("exp", _pattern(0.3), {len(trace) - 2: trace[-2] ^ (1 << 40)})
    assert liar[:-2] == trace[:-2] and liar[-2] != trace[-2] and liar[-1] != trace[-1]


def test_pack_and_first_wrong_step_succeeds() -> None:
    x = _pattern(-0.6)
    trace = P.run("erf", x)
    assert P.unpack(P.pack(trace)) == trace and len(P.pack(trace)) == 8 * len(trace)
    assert P.first_wrong_step("erf", x, trace) is None
    liar = P.run("erf", x, {40: trace[40] ^ 1})
    assert P.first_wrong_step("erf", x, liar) == 40
    with pytest.raises(ValueError, match="8 bytes per step"):
        P.unpack(b"\x00" * 7)
    with pytest.raises(ValueError, match="steps"):
        P.first_wrong_step("erf", x, trace[:-1])
