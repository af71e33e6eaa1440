"""Exact matrix products (docs/repops/linalg.md, "Matrix products"): fast == scalar reference bit
for bit, both engines; invariance under layout, reduced-axis permutation, blocking, threads and
batch composition; special values; accuracy against float64 within the documented bound (the
only tolerances here)."""

from __future__ import annotations

import hashlib
import math
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import UnsupportedOpError
from trainer.repops import linalg as L
from trainer.repops._fixed import (
    CANONICAL_NAN_BITS,
    P_DOT_MAX,
    grid_magic,
    grid_max,
    p_dot,
    p_sum,
    quantize,
    round_f32,
    round_f32_dyadic,
    safe_max,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "repops" / "linalg.md"
KINDS = ("normal", "spread", "ties", "tiny", "huge", "special", "zeros")
# Every implementation of the product: both engines, and the f64 engine's two quantization paths.
PATHS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "int8": lambda a, b: L.matmul_exact(a, b, "int8"),
    "f64 joint": lambda a, b: L._matmul_f64(a, b, p_dot(a.shape[-1]), joint=True),
    "f64 apart": lambda a, b: L._matmul_f64(a, b, p_dot(a.shape[-1]), joint=False),
}


def bits(t: torch.Tensor) -> torch.Tensor:
    assert t.dtype == torch.float32
    return t.contiguous().view(torch.int32)


def assert_same_bits(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.shape == b.shape, (a.shape, b.shape)
    diff = bits(a) != bits(b)
    if bool(diff.any()):
        i = tuple(int(v) for v in diff.nonzero()[0])
        raise AssertionError(f"{int(diff.sum())} elements differ, first at {i}: {a[i].item()!r} vs {b[i].item()!r}")


def sample(shape: tuple[int, ...], kind: str, seed: int) -> torch.Tensor:
    """float32 values of one kind: Gaussian, wide exponent spread, grid ties, subnormals, huge
    (products overflow), sprinkled with specials (-0, +-inf, NaN), or mostly zeros."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "spread":
        x = x * torch.exp2(torch.randint(-60, 60, shape, generator=g).float())
    elif kind == "ties":  # small integers times a power of two: many exact halves on the grid
        x = torch.randint(-(1 << 17), 1 << 17, shape, generator=g).float() * 2.0**-9
    elif kind == "tiny":
        x = x * 2.0**-135
    elif kind == "huge":
        x = x * 2.0**70
    elif kind == "special":
        pick = torch.rand(shape, generator=g)
        x = torch.where(pick < 0.05, torch.tensor(-0.0), x)
        x = torch.where((pick >= 0.05) & (pick < 0.07), torch.tensor(math.inf), x)
        x = torch.where((pick >= 0.07) & (pick < 0.09), torch.tensor(-math.inf), x)
        x = torch.where((pick >= 0.09) & (pick < 0.10), torch.tensor(math.nan), x)
    elif kind == "zeros":
        x = torch.where(torch.rand(shape, generator=g) < 0.8, torch.zeros(()), x)
        x = torch.where(torch.rand(shape, generator=g) < 0.3, -x, x)
    return x.contiguous()


@pytest.fixture
def two_threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


# --- the rules ----------------------------------------------------------------------------------


def test_grid_bit_rules() -> None:
    assert [p_dot(k) for k in (1, 2, 1024, 8192, 1 << 25, (1 << 25) + 1, 1 << 40)] == [14, 14, 14, 14, 14, 13, 6]
    assert [p_sum(n) for n in (1, 8, 9, 1024, 1 << 20)] == [50, 50, 49, 43, 33]
    for k in (1, 3, 1000, 1 << 25, 12345678901):
        assert k * 4 ** p_dot(k) <= 2**53


def test_int8_engine_limits_keep_int32_sums_exact() -> None:
    assert L.int8_slices(P_DOT_MAX) == 2
    assert L.int8_max_k(14) == 131071  # K * 2^14 < 2^31
    with pytest.raises(L.RepOpsError, match="exceeds"):
        L._matmul_int8(torch.ones(1, 131072), torch.ones(131072, 1), 14)


def test_round_f32_matches_the_hardware_cast() -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(20000, dtype=torch.float64, generator=g) * torch.exp2(
        torch.randint(-160, 140, (20000,), generator=g).double()
    )
    ours = torch.tensor([round_f32(v) for v in x.tolist()], dtype=torch.float32)
    assert_same_bits(ours, x.to(torch.float32))
    assert round_f32_dyadic(0, 5) == 0.0 and math.copysign(1, round_f32_dyadic(0, 5)) == 1
    assert round_f32_dyadic((1 << 24) - 1, 104) == ((1 << 24) - 1) * 2.0**104
    assert round_f32_dyadic((1 << 25) - 1, 103) == math.inf  # rounds up to 2^128


# --- fast == reference ----------------------------------------------------------------------------


@settings(max_examples=70, deadline=None)
@given(
    m=st.integers(1, 9),
    k=st.integers(1, 300),
    n=st.integers(1, 9),
    kind_a=st.sampled_from(KINDS),
    kind_b=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
    path=st.sampled_from(sorted(PATHS)),
)
def test_mm_fast_equals_reference(m: int, k: int, n: int, kind_a: str, kind_b: str, seed: int, path: str) -> None:
    a = sample((m, k), kind_a, seed)
    b = sample((k, n), kind_b, seed + 1)
    assert_same_bits(PATHS[path](a, b), L.mm_reference(a, b))
    assert_same_bits(L.mm(a, b), L.mm_reference(a, b))


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 48),
    k=st.integers(1, 700),
    n=st.integers(1, 48),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_engines_give_the_same_bits(m: int, k: int, n: int, kind: str, seed: int) -> None:
    a = sample((m, k), kind, seed)
    b = sample((k, n), "normal" if kind == "special" else kind, seed + 1)
    want = PATHS["int8"](a, b)
    for path in ("f64 joint", "f64 apart"):
        assert_same_bits(PATHS[path](a, b), want)


@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(1, 26),
    m=st.integers(1, 20),
    n=st.integers(1, 20),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_engines_agree_for_every_grid_width(p: int, m: int, n: int, kind: str, seed: int) -> None:
    """Both engines handle any p (the int8 engine derives its slices), so P_DOT_MAX may change."""
    k = min(200, 2 ** (53 - 2 * p), L.int8_max_k(p))  # f64 exactness needs K * 2^(2p) <= 2^53
    a, b = sample((m, k), kind, seed), sample((k, n), "ties", seed + 1)
    if p <= 22:  # an entry 2^e (1 - 2^-(p+2)) in every row: it rounds to q = 2^p, the slices' extreme
        e = torch.frexp(a.abs().nan_to_num(0.0, 0.0, 0.0).amax(1))[1].float()
        a[:, 0] = torch.exp2(e) * (1 - 2.0 ** -(p + 2))
    assert_same_bits(L._matmul_int8(a, b, p), L._matmul_f64(a, b, p))


@settings(max_examples=30, deadline=None)
@given(
    m=st.integers(1, 7),
    k=st.integers(1, 60),
    n=st.integers(1, 7),
    bias_shape=st.sampled_from(["n", "1n", "mn", "scalar", "m1"]),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_addmm_fast_equals_reference(m: int, k: int, n: int, bias_shape: str, kind: str, seed: int) -> None:
    shape = {"n": (n,), "1n": (1, n), "mn": (m, n), "scalar": (), "m1": (m, 1)}[bias_shape]
    bias = sample(shape, kind, seed + 2)
    a, b = sample((m, k), kind, seed), sample((k, n), "normal", seed + 1)
    assert_same_bits(L.addmm(bias, a, b), L.addmm_reference(bias, a, b))


@settings(max_examples=25, deadline=None)
@given(
    bsz=st.integers(0, 4),
    m=st.integers(1, 6),
    k=st.integers(1, 50),
    n=st.integers(1, 6),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_bmm_fast_equals_reference(bsz: int, m: int, k: int, n: int, kind: str, seed: int) -> None:
    a, b = sample((bsz, m, k), kind, seed), sample((bsz, k, n), "spread", seed + 1)
    want = L.bmm_reference(a, b)
    assert_same_bits(L.bmm(a, b), want)
    if bsz:
        for f in PATHS.values():
            assert_same_bits(f(a, b), want)


@pytest.mark.parametrize("kind", ["spread", "special", "ties"])
def test_large_operands_fast_equal_reference(kind: str) -> None:
    """Operands above 2^16 elements take grid_max's other branch (max and -min instead of |x|)."""
    a, b = sample((4, 20000), kind, 31), sample((20000, 3), "normal", 32)
    want = L.mm_reference(a, b)
    for f in PATHS.values():
        assert_same_bits(f(a, b), want)


def test_empty_reduced_axis_gives_zeros() -> None:
    out = L.mm(torch.ones(3, 0), torch.ones(0, 2))
    assert_same_bits(out, torch.zeros(3, 2))
    assert_same_bits(L.mm_reference(torch.ones(3, 0), torch.ones(0, 2)), torch.zeros(3, 2))


# --- special values -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(PATHS))
def test_non_finite_rows_and_columns_give_canonical_nan(path: str) -> None:
    a = torch.randn(4, 5)
    b = torch.randn(5, 3)
    a[1, 2] = math.inf
    a[2, 0] = -math.nan
    b[4, 2] = -math.inf
    c = PATHS[path](a, b)
    nan = (torch.tensor([0, 1, 1, 0]).unsqueeze(1) | torch.tensor([0, 0, 1]).unsqueeze(0)).bool()
    assert bool((bits(c)[nan] == CANONICAL_NAN_BITS).all())
    assert bool(torch.isfinite(c[~nan]).all())


@pytest.mark.parametrize("path", sorted(PATHS))
def test_zero_results_are_positive_zero(path: str) -> None:
    a = torch.tensor([[0.0, -0.0], [1e-30, 0.0]])
    b = torch.tensor([[-1.0], [-0.0]])
    tiny = torch.tensor([[2.0**-100]]), torch.tensor([[-(2.0**-100)]])  # product underflows to zero
    for x, y in ((a, b), tiny):
        c = PATHS[path](x, y)
        zero = c == 0
        assert bool(zero.any())
        assert not bool(torch.signbit(c[zero]).any())


def test_overflow_rounds_to_infinity() -> None:
    a = torch.full((1, 4), 2.0**100)
    b = torch.full((4, 1), -(2.0**100))
    assert L.mm(a, b).item() == -math.inf
    assert L.mm_reference(a, b).item() == -math.inf


def test_wrong_arguments_are_refused() -> None:
    with pytest.raises(UnsupportedOpError, match=r"beta=0\.5, alpha=1"):
        L.addmm(torch.zeros(2), torch.ones(3, 4), torch.ones(4, 2), beta=0.5)
    with pytest.raises(UnsupportedOpError, match=r"beta=1, alpha=2"):
        L.addmm_reference(torch.zeros(2), torch.ones(3, 4), torch.ones(4, 2), alpha=2)
    with pytest.raises(UnsupportedOpError, match="float64"):
        L.mm(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(L.RepOpsError):
        L.mm(torch.ones(2, 3), torch.ones(2, 3))


# --- invariance -----------------------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(2, 300), n=st.integers(1, 40), seed=st.integers(0, 2**31))
def test_layout_does_not_matter(m: int, k: int, n: int, seed: int) -> None:
    a, b = sample((m, k), "spread", seed), sample((k, n), "spread", seed + 1)
    want = L.mm(a, b)
    assert_same_bits(L.mm(a.t().contiguous().t(), b.t().contiguous().t()), want)  # column-major operands
    wide_a = torch.zeros(m, 2 * k)
    wide_a[:, ::2] = a
    wide_b = torch.zeros(3 * k, n + 1)
    wide_b[::3, 1:] = b
    assert_same_bits(L.mm(wide_a[:, ::2], wide_b[::3, 1:]), want)  # strided views
    assert_same_bits(L.mm(wide_a[:, ::2], wide_b[::3, 1:]), L.mm_reference(wide_a[:, ::2], wide_b[::3, 1:]))


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(1, 30),
    k=st.integers(2, 400),
    n=st.integers(1, 30),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_permuting_the_reduced_axis_does_not_matter(m: int, k: int, n: int, kind: str, seed: int) -> None:
    a, b = sample((m, k), kind, seed), sample((k, n), "ties", seed + 1)
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
    for f in PATHS.values():
        assert_same_bits(f(a[:, perm], b[perm]), f(a, b))


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(2, 40),
    k=st.integers(2, 400),
    n=st.integers(2, 40),
    cut=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**31),
)
def test_blocking_does_not_matter(m: int, k: int, n: int, cut: float, seed: int) -> None:
    a, b = sample((m, k), "spread", seed), sample((k, n), "normal", seed + 1)
    want = L.mm(a, b)
    # output blocks: rows of A and columns of B carry their own grids
    m1, n1, k1 = max(1, int(m * cut)), max(1, int(n * cut)), max(1, int(k * cut))
    assert_same_bits(torch.cat([L.mm(a[:m1], b), L.mm(a[m1:], b)], 0), want)
    assert_same_bits(torch.cat([L.mm(a, b[:, :n1]), L.mm(a, b[:, n1:])], 1), want)
    # K split in two exact partial sums on the full operands' grids, added in float64
    p = p_dot(k)
    qa = quantize(a, grid_magic(grid_max(a, [1]), p))
    qb = quantize(b, grid_magic(grid_max(b, [0]), p))
    split = torch.mm(qa[:, :k1], qb[:k1]) + torch.mm(qa[:, k1:], qb[k1:])
    assert_same_bits(split.to(torch.float32).add_(0.0), want)


def test_thread_count_does_not_matter(two_threads: None) -> None:
    a, b = sample((300, 700), "spread", 5), sample((700, 260), "normal", 6)
    torch.set_num_threads(1)
    one = [f(a, b) for f in PATHS.values()]
    torch.set_num_threads(2)
    two = [f(a, b) for f in PATHS.values()]
    for x, y in zip(one, two, strict=True):
        assert_same_bits(x, y)


def test_a_row_alone_equals_the_row_in_a_batch_of_64() -> None:
    a, b = sample((64, 200), "spread", 7), sample((200, 48), "normal", 8)
    full = L.mm(a, b)
    for i in (0, 17, 63):
        assert_same_bits(L.mm(a[i : i + 1], b), full[i : i + 1])
    x, y = sample((64, 16, 24), "normal", 9), sample((64, 24, 16), "normal", 10)
    batched = L.bmm(x, y)
    for i in (0, 31, 63):
        assert_same_bits(L.bmm(x[i : i + 1], y[i : i + 1]), batched[i : i + 1])


def test_a_separate_process_gets_the_same_bits(tmp_path: Path) -> None:
    a, b = sample((96, 333), "spread", 11), sample((333, 80), "normal", 12)
    torch.save({"a": a, "b": b}, tmp_path / "ab.pt")
    here = hashlib.sha256(bits(L.mm(a, b)).numpy().tobytes()).hexdigest()
    script = (
        "import hashlib, sys, torch\n"
        "torch.set_num_threads(1)\n"
        "from trainer.repops.linalg import mm\n"
        "d = torch.load(sys.argv[1])\n"
        "c = mm(d['a'], d['b']).contiguous().view(torch.int32)\n"
        "print(hashlib.sha256(c.numpy().tobytes()).hexdigest())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "ab.pt")], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == here


# --- accuracy (tolerances live only here) ---------------------------------------------------------


def error_bound(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """docs/repops/linalg.md, "Accuracy": |C - AB| <= (u_b/2) sum|a| + (u_a/2) sum|b| + K u_a u_b / 4
    + 2^-24 |AB| + 2^-150 (the final rounding, subnormals included) + float64's own error in the
    comparison, where u = 2^(e - p)."""
    a64, b64 = a.double(), b.double()
    k = a.shape[1]
    p = p_dot(k)
    ua = torch.exp2(torch.frexp(safe_max(grid_max(a, [1])).double())[1].double() - p)  # (M, 1)
    ub = torch.exp2(torch.frexp(safe_max(grid_max(b, [0])).double())[1].double() - p)  # (1, N)
    exact = a64 @ b64
    grid = (ub / 2) * a64.abs().sum(1, keepdim=True) + (ua / 2) * b64.abs().sum(0, keepdim=True) + k * ua * ub / 4
    final = 2.0**-24 * exact.abs() + 2.0**-150
    return grid * (1 + 2.0**-20) + final + k * 2.0**-52 * (a64.abs() @ b64.abs())


@settings(max_examples=30, deadline=None)
@given(
    m=st.integers(1, 40),
    k=st.integers(1, 600),
    n=st.integers(1, 40),
    kind=st.sampled_from(["normal", "spread", "ties", "tiny", "zeros"]),
    seed=st.integers(0, 2**31),
)
def test_error_stays_within_the_documented_bound(m: int, k: int, n: int, kind: str, seed: int) -> None:
    a, b = sample((m, k), kind, seed), sample((k, n), kind, seed + 1)
    err = (L.mm(a, b).double() - a.double() @ b.double()).abs()
    assert bool((err <= error_bound(a, b)).all())


def test_gaussian_error_is_tf32_like() -> None:
    """Gaussian 512x1024x512: error relative to sum|a||b| below 1e-4 everywhere (TF32's own is
    ~1.3e-4 at worst; docs: measured 3.7e-5 at 1024^3)."""
    a, b = sample((512, 1024), "normal", 21), sample((1024, 512), "normal", 22)
    scale = a.double().abs() @ b.double().abs()
    rel = (L.mm(a, b).double() - a.double() @ b.double()).abs() / scale
    assert float(rel.max()) < 1e-4
    assert float(rel.median()) < 1e-5


# --- the export -----------------------------------------------------------------------------------


def test_ops_export_names_and_sections() -> None:
    headings = set(re.findall(r"^#+ (.+)$", DOC.read_text(), flags=re.M))
    for name, spec in L.OPS.items():
        overload = name.removeprefix("aten.").split(".")
        assert str(getattr(getattr(torch.ops.aten, overload[0]), overload[1])) == name
        assert spec.name == name
        assert spec.section in headings, spec.section
