"""`refereed::exact_dot` (docs/repops/linalg.md, "Exact dot products"): the fast kernel equals the scalar
reference bit for bit; invariance under layout, reduced-axis permutation, threads and batch composition
(one grid for the whole stack: rows permute with their results, zero rows change nothing, the row holding
the stack's maximum alone equals itself in the stack; the results add up exactly); special values; the
operator is captured as one node, exported and run by the interpreter. Every comparison is of binary64 bit
patterns."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import ClassVar

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.repops.test_linalg import KINDS, sample
from trainer.interp import Interpreter
from trainer.program import capture
from trainer.program.onnx_io import OPS_DOMAIN, from_bytes, to_bytes, to_onnx
from trainer.repops import KERNELS, RepOpsError, UnsupportedOpError, _native
from trainer.repops._fixed import p_dot, p_dot64
from trainer.repops.dot import CANONICAL_NAN64_BITS, EXACT_DOT, exact_dot, exact_dot_reference

PATHS = ("native", "torch") if _native.linalg_library() is not None else ("torch",)


def bits64(t: torch.Tensor) -> list[int]:
    assert t.dtype == torch.float64
    return t.contiguous().view(torch.int64).tolist()


@pytest.fixture
def threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


def test_grid_bits_keep_every_sum_a_binary64_integer() -> None:
    assert [p_dot64(k) for k in (1, 2, 3, 4096, 1 << 20, 1 << 25, 1 << 40)] == [26, 26, 25, 20, 16, 14, 6]
    for k in (1, 2, 3, 1000, 4097, 1 << 25, 12345678901):
        assert k * 4 ** p_dot64(k) <= 2**53 and p_dot64(k) >= p_dot(k)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(0, 5),
    shape=st.lists(st.integers(0, 7), min_size=0, max_size=3),
    kind_rows=st.sampled_from(KINDS),
    kind_w=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_fast_equals_reference(rows: int, shape: list[int], kind_rows: str, kind_w: str, seed: int) -> None:
    g = sample((rows, *shape), kind_rows, seed)
    w = sample(tuple(shape), kind_w, seed + 1)
    want = bits64(exact_dot_reference(g, w))
    for path in PATHS:  # the native quantizer's pass and the torch ops
        assert bits64(exact_dot(g, w, path)) == want, path


def _grid(values: list[float], p: int) -> tuple[int, list[int]]:
    """One fixed-point grid for all of `values` (from the docs' text, with Fractions): e with
    2^(e-1) <= max |v| < 2^e (1 for all zeros), q = round-half-even(v · 2^(p - e))."""
    m = max((abs(x) for x in values), default=0.0)
    e = 1 if m == 0 else math.frexp(m)[1]
    return e, [round(Fraction(x) * Fraction(2) ** (p - e)) for x in values]


@pytest.mark.parametrize("kind", ["normal", "spread", "ties", "tiny", "huge"])
def test_the_result_is_the_exact_dot_product_of_the_grid_integers(kind: str) -> None:
    # Independently of the kernels: the whole stack on one grid, the weight on its own, with Fractions.
    g, w = sample((3, 5, 7), kind, 11), sample((5, 7), "spread", 12)
    n = w.numel()
    p = p_dot64(n)
    e_w, qw = _grid(w.reshape(-1).tolist(), p)
    e_g, qg = _grid(g.reshape(-1).tolist(), p)
    want, exact_sum = [], Fraction(0)
    for r in range(3):
        s = sum(a * b for a, b in zip(qg[r * n : (r + 1) * n], qw, strict=True))
        assert abs(s) <= 2**53
        exact = Fraction(s) * Fraction(2) ** (e_g + e_w - 2 * p)
        assert Fraction(float(exact)) == exact  # nothing left to round: the binary64 result is exact
        want.append(float(exact) + 0.0)
        exact_sum += exact
    for path in PATHS:
        got = exact_dot(g, w, path)
        assert bits64(got) == bits64(torch.tensor(want, dtype=torch.float64))
        # bilinear on one grid: the rows' results add up, exactly, to <q(w), Σ_r q(g_r)>
        column = [sum(qg[r * n + i] for r in range(3)) for i in range(n)]
        total = Fraction(sum(a * b for a, b in zip(column, qw, strict=True))) * Fraction(2) ** (e_g + e_w - 2 * p)
        assert sum(Fraction(v) for v in got.tolist()) == total == exact_sum


@pytest.mark.parametrize("path", PATHS)
def test_zeros_infinities_and_nans(path: str) -> None:
    w = torch.tensor([1.5, -2.0, 0.25])
    g = torch.tensor([[-0.0, 0.0, -0.0], [4.0, 3.0, 0.0], [1.0, -2.0, 4.0]])
    # a zero result (a zero row, or products that cancel) is +0
    got = bits64(exact_dot(g, w, path))
    six_and_a_half = torch.tensor(6.5, dtype=torch.float64).view(torch.int64).item()
    assert got == [0, 0, six_and_a_half] == bits64(exact_dot_reference(g, w))
    assert bits64(exact_dot(torch.zeros(4, 3), w, path)) == [0] * 4  # an all-zero stack
    assert bits64(exact_dot(g, torch.zeros(3), path)) == [0] * 3  # an all-zero weight
    # a NaN or an infinity anywhere in the stack or the weight: no grid, every row the canonical NaN
    for bad in (math.nan, math.inf, -math.inf):
        g2 = g.clone()
        g2[1, 2] = bad
        assert bits64(exact_dot(g2, w, path)) == [CANONICAL_NAN64_BITS] * 3 == bits64(exact_dot_reference(g2, w))
        w2 = torch.tensor([1.0, bad, 0.0])
        assert bits64(exact_dot(g, w2, path)) == [CANONICAL_NAN64_BITS] * 3 == bits64(exact_dot_reference(g, w2))
    assert exact_dot(torch.zeros(0, 3), w).shape == (0,)
    assert bits64(exact_dot(torch.ones(2, 0), torch.ones(0))) == [0, 0]


@pytest.mark.parametrize("path", PATHS)
def test_extreme_exponents_stay_exact(path: str) -> None:
    # The smallest and largest scales an fp32 stack and weight can have: subnormals (down to 2^-149)
    # and values near 2^128 give e_g + e_w - 2p in [-348, 256], inside binary64's normal range.
    n = 5
    tiny = torch.tensor([[2.0**-149, -(2.0**-149), 0.0, 3 * 2.0**-149, 2.0**-140]])
    huge = torch.tensor([[3.0e38, -3.0e38, 1.0e38, 2.0**127, -(2.0**126)]])
    for g in (tiny, huge):
        for w in (tiny[0], huge[0]):
            got = exact_dot(g, w, path)
            assert bits64(got) == bits64(exact_dot_reference(g, w))
            p = p_dot64(n)
            e_g, qg = _grid(g.reshape(-1).tolist(), p)
            e_w, qw = _grid(w.tolist(), p)
            exact = Fraction(sum(a * b for a, b in zip(qg, qw, strict=True))) * Fraction(2) ** (e_g + e_w - 2 * p)
            assert Fraction(got.item()) == exact and math.isfinite(got.item())


@pytest.mark.parametrize("path", PATHS)
def test_layout_and_the_order_of_the_reduced_axis_do_not_matter(path: str) -> None:
    g = sample((40, 9, 33), "spread", 5)
    w = sample((9, 33), "normal", 6)
    base = bits64(exact_dot(g, w, path))
    gt = g.transpose(1, 2).contiguous().transpose(1, 2)  # strided rows, same values
    wt = w.t().contiguous().t()
    assert bits64(exact_dot(gt, wt, path)) == base
    wide = torch.zeros(80, 9, 33)
    wide[::2] = g
    assert bits64(exact_dot(wide[::2], w, path)) == base  # every other row of a larger tensor
    perm = torch.randperm(9 * 33, generator=torch.Generator().manual_seed(1))
    assert bits64(exact_dot(g.reshape(40, -1)[:, perm], w.reshape(-1)[perm], path)) == base


@pytest.mark.parametrize("path", PATHS)
def test_rows_share_one_grid(path: str) -> None:
    g = sample((64, 300), "spread", 7)
    w = sample((300,), "normal", 8)
    stacked = bits64(exact_dot(g, w, path))
    # permuting the rows permutes the results, bit for bit
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(3))
    assert bits64(exact_dot(g[perm], w, path)) == [stacked[i] for i in perm.tolist()]
    # an all-zero row (an absent contributor) changes nothing, wherever it stands
    padded = torch.cat([g[:10], torch.zeros(3, 300), g[10:], torch.zeros(1, 300)])
    assert bits64(exact_dot(padded, w, path)) == stacked[:10] + [0] * 3 + stacked[10:] + [0]
    # the row that holds the stack's largest |value| has alone the bits it has in the stack
    top = int(g.abs().amax(dim=1).argmax())
    assert bits64(exact_dot(g[top : top + 1], w, path)) == [stacked[top]]
    # and the grid is shared: a row 2^40 times larger than the rest coarsens every other row's grid
    big = g.clone()
    big[5] = big[5].abs().amax() * 2.0**40 * torch.sign(big[5])
    coarse = bits64(exact_dot(big, w, path))
    assert coarse == bits64(exact_dot_reference(big, w))
    alone = [bits64(exact_dot(big[i : i + 1], w, path))[0] for i in range(64)]
    assert alone[5] == coarse[5] and alone != coarse


def test_thread_count_does_not_matter(threads: None) -> None:
    g, w = sample((64, 70_000), "spread", 9), sample((70_000,), "ties", 10)
    torch.set_num_threads(1)
    one = {path: bits64(exact_dot(g, w, path)) for path in PATHS}
    torch.set_num_threads(2)
    assert all(bits64(exact_dot(g, w, path)) == one[path] == one[PATHS[-1]] for path in PATHS)


def test_wrong_arguments_are_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="float32"):
        exact_dot(torch.ones(2, 3, dtype=torch.float64), torch.ones(3))
    with pytest.raises(RepOpsError, match="not a stack"):
        exact_dot(torch.ones(2, 3), torch.ones(4))
    with pytest.raises(RepOpsError, match="not a stack"):
        exact_dot(torch.ones(()), torch.ones(()))
    with pytest.raises(ValueError, match="unknown path"):
        exact_dot(torch.ones(2, 3), torch.ones(3), "gpu")


class _Step:
    """A step whose state carries the exact dot products of its batch rows with one of its parameters."""

    state_names: ClassVar[list[str]] = ["out", "w"]
    constants: ClassVar[dict[str, torch.Tensor]] = {}

    def fn_with_constants(self, state, batch, constants):  # type: ignore[no-untyped-def]
        d = torch.ops.refereed.exact_dot(batch["x"], state["w"])
        return {"out": d + d, "w": state["w"]}, batch["y"].sum()


def test_capture_records_one_node_that_the_interpreter_and_the_artifact_keep() -> None:
    assert KERNELS[EXACT_DOT].fast is exact_dot and str(torch.ops.refereed.exact_dot.default) == EXACT_DOT
    state = {"out": torch.zeros(6, dtype=torch.float64), "w": sample((4, 5), "normal", 1)}
    batch = {"x": sample((6, 4, 5), "spread", 2), "y": torch.ones(3)}
    program = capture(_Step(), state, batch)  # type: ignore[arg-type]
    ops = [n.op for n in program.nodes]
    assert ops.count(EXACT_DOT) == 1 and program.nodes[ops.index(EXACT_DOT)].outputs[0].dtype == torch.float64
    again = from_bytes(to_bytes(program))
    assert again.program_hash == program.program_hash
    assert {o.domain for o in to_onnx(program).opset_import} >= {OPS_DOMAIN}
    want = bits64(exact_dot(batch["x"], state["w"]) * 2)
    for use in ("fast", "reference"):
        out, _ = Interpreter(again, use=use).run(state, batch)
        assert bits64(out["out"]) == want
    with pytest.raises(UnsupportedOpError, match=EXACT_DOT):
        Interpreter(program, {k: v for k, v in KERNELS.items() if k != EXACT_DOT})
