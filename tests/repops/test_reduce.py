"""Exact reductions and composites (docs/repops/linalg.md): fast == scalar reference bit for bit;
invariance under layout, reduced-axis permutation, threads and batch composition; special values;
accuracy against float64 within documented bounds (the only tolerances here)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import UnsupportedOpError
from trainer.repops import reduce as R
from trainer.repops._fixed import CANONICAL_NAN_BITS

DOC = Path(__file__).resolve().parents[2] / "docs" / "repops" / "linalg.md"
KINDS = ("normal", "spread", "ties", "tiny", "special", "zeros", "masked")


def bits(t: torch.Tensor) -> torch.Tensor:
    assert t.dtype == torch.float32
    return t.contiguous().view(torch.int32)


def ubits(t: torch.Tensor) -> list[int]:
    """The float32 bit patterns as unsigned ints."""
    return [v & 0xFFFFFFFF for v in bits(t).reshape(-1).tolist()]


def assert_same(a: torch.Tensor | tuple[torch.Tensor, ...], b: torch.Tensor | tuple[torch.Tensor, ...]) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
        return
    assert isinstance(b, torch.Tensor)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype != torch.float32:
        assert torch.equal(a, b)
        return
    diff = bits(a) != bits(b)
    if bool(diff.any()):
        i = tuple(int(v) for v in diff.nonzero()[0])
        raise AssertionError(f"{int(diff.sum())} elements differ, first at {i}: {a[i].item()!r} vs {b[i].item()!r}")


def sample(shape: tuple[int, ...], kind: str, seed: int) -> torch.Tensor:
    """float32 values of one kind (see test_linalg.sample); "masked": attention-style -inf entries."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "spread":
        x = x * torch.exp2(torch.randint(-60, 60, shape, generator=g).float())
    elif kind == "ties":
        x = torch.randint(-(1 << 17), 1 << 17, shape, generator=g).float() * 2.0**-9
    elif kind == "tiny":
        x = x * 2.0**-135
    elif kind == "special":
        pick = torch.rand(shape, generator=g)
        x = torch.where(pick < 0.05, torch.tensor(-0.0), x)
        x = torch.where((pick >= 0.05) & (pick < 0.07), torch.tensor(math.inf), x)
        x = torch.where((pick >= 0.07) & (pick < 0.09), torch.tensor(-math.inf), x)
        x = torch.where((pick >= 0.09) & (pick < 0.10), torch.tensor(math.nan), x)
    elif kind == "zeros":
        x = torch.where(torch.rand(shape, generator=g) < 0.8, torch.zeros(()), x)
        x = torch.where(torch.rand(shape, generator=g) < 0.4, -x, x)
    elif kind == "masked":
        x = torch.where(torch.rand(shape, generator=g) < 0.3, torch.tensor(-math.inf), x * 4)
    return x.contiguous()


shapes = st.lists(st.integers(1, 9), min_size=0, max_size=3).map(tuple)


@st.composite
def shape_and_dims(draw: st.DrawFn) -> tuple[tuple[int, ...], list[int] | None, bool]:
    shape = draw(shapes)
    nd = max(len(shape), 1)
    dims = draw(st.one_of(st.none(), st.just([]), st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd)))
    if dims and len({d % nd for d in dims}) != len(dims):
        dims = sorted({d % nd for d in dims})
    return shape, dims, draw(st.booleans())


@pytest.fixture
def restore_threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


# --- fast == reference ----------------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(sd=shape_and_dims(), kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31))
def test_sum_and_mean_fast_equal_reference(
    sd: tuple[tuple[int, ...], list[int] | None, bool], kind: str, seed: int
) -> None:
    shape, dims, keepdim = sd
    x = sample(shape, kind, seed)
    assert_same(R.sum_dim_intlist(x, dims, keepdim), R.sum_dim_intlist_reference(x, dims, keepdim))
    assert_same(R.mean_dim(x, dims, keepdim), R.mean_dim_reference(x, dims, keepdim))
    assert_same(R.sum_default(x), R.sum_default_reference(x))


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 5000), kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31))
def test_long_sums_fast_equal_reference(length: int, kind: str, seed: int) -> None:
    x = sample((3, length), kind, seed)
    assert_same(R.sum_dim_intlist(x, [1]), R.sum_dim_intlist_reference(x, [1]))
    assert_same(R.mean_dim(x, [1], True), R.mean_dim_reference(x, [1], True))


@pytest.mark.parametrize("kind", ["spread", "special", "zeros"])
def test_large_slices_fast_equal_reference(kind: str) -> None:
    """Inputs above 2^16 elements take grid_max's other branch (max and -min instead of |x|)."""
    x = sample((3, 30000), kind, 15)
    assert_same(R.sum_dim_intlist(x, [1]), R.sum_dim_intlist_reference(x, [1]))
    assert_same(R.mean_dim(x, [0], True), R.mean_dim_reference(x, [0], True))


@settings(max_examples=30, deadline=None)
@given(sd=shape_and_dims(), dtype=st.sampled_from([torch.bool, torch.int32, torch.int64]), seed=st.integers(0, 99))
def test_integer_sums_are_exact_int64(
    sd: tuple[tuple[int, ...], list[int] | None, bool], dtype: torch.dtype, seed: int
) -> None:
    shape, dims, keepdim = sd
    g = torch.Generator().manual_seed(seed)
    x = (
        torch.randint(-(2**40), 2**40, shape, generator=g).to(dtype)
        if dtype != torch.bool
        else sample(shape, "normal", seed) > 0
    )
    ours = R.sum_dim_intlist(x, dims, keepdim)
    assert ours.dtype == torch.int64
    assert_same(ours, R.sum_dim_intlist_reference(x, dims, keepdim))


@settings(max_examples=80, deadline=None)
@given(sd=shape_and_dims(), kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31))
def test_amax_and_max_dim_fast_equal_reference(
    sd: tuple[tuple[int, ...], list[int] | None, bool], kind: str, seed: int
) -> None:
    shape, dims, keepdim = sd
    x = sample(shape, kind, seed)
    assert_same(R.amax(x, dims or [], keepdim), R.amax_reference(x, dims or [], keepdim))
    d = (dims or [0])[0]
    assert_same(R.max_dim(x, d, keepdim), R.max_dim_reference(x, d, keepdim))


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(1, 12), min_size=1, max_size=3).map(tuple),
    dim=st.integers(-3, 2),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
)
def test_softmax_and_log_softmax_fast_equal_reference(shape: tuple[int, ...], dim: int, kind: str, seed: int) -> None:
    dim = dim % len(shape)
    x = sample(shape, kind, seed)
    assert_same(R.softmax(x, dim, False), R.softmax_reference(x, dim, False))
    assert_same(R.log_softmax(x, dim, False), R.log_softmax_reference(x, dim, False))


@settings(max_examples=60, deadline=None)
@given(
    lead=st.lists(st.integers(1, 5), min_size=0, max_size=2).map(tuple),
    norm=st.lists(st.integers(1, 40), min_size=1, max_size=2).map(tuple),
    affine=st.sampled_from(["none", "weight", "both"]),
    kind=st.sampled_from(["normal", "spread", "ties", "tiny", "special", "zeros"]),
    eps=st.sampled_from([1e-5, 1e-6, 0.0, 0.1]),
    seed=st.integers(0, 2**31),
)
def test_layer_norm_fast_equals_reference(
    lead: tuple[int, ...], norm: tuple[int, ...], affine: str, kind: str, eps: float, seed: int
) -> None:
    x = sample(lead + norm, kind, seed)
    w = sample(norm, "normal", seed + 1) if affine != "none" else None
    b = sample(norm, "normal", seed + 2) if affine == "both" else None
    out = R.native_layer_norm(x, list(norm), w, b, eps)
    assert_same(out, R.native_layer_norm_reference(x, list(norm), w, b, eps))
    ref = torch.ops.aten.native_layer_norm.default(x, list(norm), w, b, eps)
    assert [t.shape for t in out] == [t.shape for t in ref]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 12),
    idx_shape=st.lists(st.integers(0, 7), min_size=1, max_size=2).map(tuple),
    width=st.lists(st.integers(1, 6), min_size=0, max_size=2).map(tuple),
    kind=st.sampled_from(KINDS),
    base_kind=st.sampled_from(["zeros", "normal", "special"]),
    seed=st.integers(0, 2**31),
)
def test_index_put_accumulate_fast_equals_reference(
    rows: int, idx_shape: tuple[int, ...], width: tuple[int, ...], kind: str, base_kind: str, seed: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(-rows, rows, idx_shape, generator=g)
    values = sample(idx_shape + width, kind, seed + 1)
    base = sample((rows, *width), base_kind, seed + 2)
    out = R.index_put(base, [idx], values, True)
    assert_same(out, R.index_put_reference(base, [idx], values, True))
    assert out.shape == torch.ops.aten.index_put.default(base, [idx], values, True).shape


def test_index_put_broadcasts_values_and_leaves_untouched_rows_alone() -> None:
    base = torch.tensor([[-0.0, 1.0], [2.0, -0.0], [3.0, 4.0]])
    out = R.index_put(base, [torch.tensor([2, 2, 0])], torch.tensor([0.5, 0.25]), True)
    assert_same(out, R.index_put_reference(base, [torch.tensor([2, 2, 0])], torch.tensor([0.5, 0.25]), True))
    assert_same(out[1], base[1])  # row 1 keeps its -0
    assert out.tolist() == [[0.5, 1.25], [2.0, -0.0], [4.0, 4.5]]


# --- special values -------------------------------------------------------------------------------


def test_sum_of_non_finite_slices_follows_ieee() -> None:
    inf, nan = math.inf, math.nan
    x = torch.tensor([[1.0, inf], [-inf, 2.0], [inf, -inf], [nan, 1.0], [-nan, inf], [0.0, -0.0], [-0.0, -0.0]])
    s = R.sum_dim_intlist(x, [1])
    assert s[:2].tolist() == [inf, -inf]
    assert ubits(s[2:5]) == [CANONICAL_NAN_BITS] * 3
    assert ubits(s[5:]) == [0, 0]  # a zero sum is +0, even of -0s
    assert_same(s, R.sum_dim_intlist_reference(x, [1]))


def test_max_zero_sign_and_nan() -> None:
    x = torch.tensor([[-0.0, 0.0, -1.0], [-0.0, -0.0, -2.0], [1.0, -math.nan, 3.0], [0.0, -0.0, 0.0]])
    v, i = R.max_dim(x, 1)
    assert ubits(v) == [0, 0x80000000, CANONICAL_NAN_BITS, 0]
    assert i.tolist() == [1, 0, 1, 0]
    assert_same((v, i), R.max_dim_reference(x, 1))


def test_softmax_of_masked_rows() -> None:
    x = torch.tensor([[0.0, -math.inf, 1.0], [-math.inf, -math.inf, -math.inf], [math.inf, 0.0, 1.0]])
    y = R.softmax(x, 1, False)
    assert y[0, 1].item() == 0.0 and abs(y[0].sum().item() - 1) < 1e-6
    assert ubits(y[1:]) == [CANONICAL_NAN_BITS] * 6  # as IEEE (and torch) would have it
    assert_same(y, R.softmax_reference(x, 1, False))


def test_unsupported_arguments_are_refused() -> None:
    x = torch.randn(3, 4)
    with pytest.raises(UnsupportedOpError, match=r"dtype=torch\.float64"):
        R.sum_dim_intlist(x, [1], dtype=torch.float64)
    with pytest.raises(UnsupportedOpError, match="half_to_float=True"):
        R.softmax(x, 1, True)
    with pytest.raises(UnsupportedOpError, match="boolean mask"):
        R.index_put(torch.zeros(3, 4), [torch.tensor([True, False, True])], torch.ones(1, 4), True)
    with pytest.raises(UnsupportedOpError, match="float64"):
        R.mean_dim(x.double(), [1])


# --- invariance -----------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 6), length=st.integers(1, 3000), kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31))
def test_permuting_the_reduced_axis_does_not_matter(rows: int, length: int, kind: str, seed: int) -> None:
    x = sample((rows, length), kind, seed)
    perm = torch.randperm(length, generator=torch.Generator().manual_seed(seed))
    for f in (R.sum_dim_intlist, R.mean_dim):
        assert_same(f(x[:, perm], [1]), f(x, [1]))
    assert_same(R.softmax(x[:, perm], 1, False), R.softmax(x, 1, False)[:, perm])
    assert_same(R.log_softmax(x[:, perm], 1, False), R.log_softmax(x, 1, False)[:, perm])
    assert_same(
        R.native_layer_norm(x[:, perm], [length], None, None, 1e-5)[0],
        R.native_layer_norm(x, [length], None, None, 1e-5)[0][:, perm],
    )


def test_index_put_order_of_duplicates_does_not_matter() -> None:
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 5, (300,), generator=g)
    values = sample((300, 7), "spread", 5)
    perm = torch.randperm(300, generator=g)
    base = torch.zeros(5, 7)
    assert_same(R.index_put(base, [idx[perm]], values[perm], True), R.index_put(base, [idx], values, True))


def test_layout_does_not_matter() -> None:
    x = sample((37, 53), "spread", 6)
    xt = x.t().contiguous().t()  # column-major copy
    xs = torch.zeros(74, 53)[::2]
    xs.copy_(x)
    for y in (xt, xs):
        assert_same(R.sum_dim_intlist(y, [0], True), R.sum_dim_intlist(x, [0], True))
        assert_same(R.sum_dim_intlist(y, [1]), R.sum_dim_intlist(x, [1]))
        assert_same(R.softmax(y, 1, False), R.softmax(x, 1, False))
        assert_same(R.native_layer_norm(y, [53], None, None, 1e-5), R.native_layer_norm(x, [53], None, None, 1e-5))


def test_thread_count_does_not_matter(restore_threads: None) -> None:
    x = sample((64, 4096), "spread", 7)
    runs = []
    for n in (1, 2):
        torch.set_num_threads(n)
        runs.append(
            (
                R.sum_dim_intlist(x, [0, 1]),
                R.sum_dim_intlist(x, [0]),
                R.mean_dim(x, [1]),
                R.log_softmax(x, 1, False),
                *R.native_layer_norm(x, [4096], None, None, 1e-5),
            )
        )
    assert_same(runs[0], runs[1])


def test_a_row_alone_equals_the_row_in_a_batch_of_64() -> None:
    x = sample((64, 200), "normal", 8)
    w, b = sample((200,), "normal", 9), sample((200,), "normal", 10)
    full = (R.softmax(x, 1, False), R.log_softmax(x, 1, False), R.native_layer_norm(x, [200], w, b, 1e-5)[0])
    for i in (0, 33, 63):
        row = x[i : i + 1]
        alone = (R.softmax(row, 1, False), R.log_softmax(row, 1, False), R.native_layer_norm(row, [200], w, b, 1e-5)[0])
        for a, f in zip(alone, full, strict=True):
            assert_same(a, f[i : i + 1])
        assert_same(R.sum_dim_intlist(row, [1]), R.sum_dim_intlist(x, [1])[i : i + 1])


# --- accuracy (tolerances live only here) ---------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    length=st.integers(1, 20000), kind=st.sampled_from(["normal", "spread", "ties", "tiny"]), seed=st.integers(0, 2**31)
)
def test_sum_error_bound(length: int, kind: str, seed: int) -> None:
    """|sum - exact| <= L * 2^(e - p - 1) (the grid) + half an fp32 ulp of the result (docs, "Accuracy")."""
    x = sample((2, length), kind, seed)
    s = R.sum_dim_intlist(x, [1]).double()
    m = x.abs().amax(1).double()
    exact = x.double().sum(1)  # float64's own error is below 2^-40 of sum|x| here
    e = torch.frexp(m)[1].double()
    p = min(50, 53 - math.ceil(math.log2(length))) if length > 1 else 50
    bound = length * torch.exp2(e - p - 1) + 2.0**-24 * exact.abs() + 2.0**-40 * x.double().abs().sum(1) + 2.0**-150
    assert bool(((s - exact).abs() <= bound).all())


def test_composites_stay_close_to_float64() -> None:
    """Documented bounds (docs, "Accuracy"): softmax within 1e-6 absolute, log_softmax within 4 ulp of
    its magnitude plus 1e-6, layer norm within 1e-5 absolute at these scales."""
    x = sample((256, 1000), "normal", 11) * 3
    sm = R.softmax(x, 1, False).double()
    assert float((sm - torch.softmax(x.double(), 1)).abs().max()) < 1e-6
    ls = R.log_softmax(x, 1, False).double()
    ref = torch.log_softmax(x.double(), 1)
    assert bool(((ls - ref).abs() <= 4 * 2.0**-24 * ref.abs() + 1e-6).all())
    y = sample((256, 768), "normal", 12) * 2 + 1
    w, b = sample((768,), "normal", 13), sample((768,), "normal", 14)
    out, mean, _ = R.native_layer_norm(y, [768], w, b, 1e-5)
    ref_out = torch.nn.functional.layer_norm(y.double(), [768], w.double(), b.double(), 1e-5)
    assert float((out.double() - ref_out).abs().max()) < 1e-5
    assert float((mean.double().squeeze(1) - y.double().mean(1)).abs().max()) < 1e-6


# --- the export -----------------------------------------------------------------------------------


def test_ops_export_names_and_sections() -> None:
    headings = set(re.findall(r"^#+ (.+)$", DOC.read_text(), flags=re.M))
    for name, spec in R.OPS.items():
        _, op, overload = name.split(".")
        assert str(getattr(getattr(torch.ops.aten, op), overload)) == name
        assert spec.section in headings, spec.section
