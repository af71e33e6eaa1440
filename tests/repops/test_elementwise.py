"""Elementwise RepOps kernels: fast == reference bit for bit (hypothesis) over random fp32 bit
patterns, integer and bool tensors, Python scalars in either position, broadcasting,
transposed/strided/expanded and size-1 inputs; torch's own CPU arithmetic is IEEE where we
rely on it; the capture's operator list is covered."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import OpSpec, UnsupportedOpError
from trainer.repops import mathfn as M
from trainer.repops.elementwise import OPS

NEEDED = [
    "aten.add.Tensor",
    "aten.sub.Tensor",
    "aten.mul.Tensor",
    "aten.div.Tensor",
    "aten.neg.default",
    "aten.reciprocal.default",
    "aten.sqrt.default",
    "aten.exp.default",
    "aten.erf.default",
    "aten.gelu.default",
    "aten.clamp.default",
    "aten.where.self",
    "aten.ne.Scalar",
    "aten.ge.Scalar",
    "aten.lt.Scalar",
    "aten.bitwise_and.Tensor",
    "aten.bitwise_not.default",
    "aten.relu.default",
    "aten.threshold_backward.default",
    "aten.sigmoid.default",
    "aten.tanh.default",
    "aten.log.default",
    "aten.rsqrt.default",
    "aten.pow.Tensor_Scalar",
    "aten._to_copy.default",
    "aten.scalar_tensor.default",
    "aten.full.default",
    "aten.full_like.default",
    "aten.clone.default",
    "aten.alias.default",
]

SPECIAL_BITS = [
    0x00000000,
    0x80000000,
    0x7F800000,
    0xFF800000,
    0x7FC00000,
    0xFFC00001,
    0x7F800001,
    0x00000001,
    0x807FFFFF,
    0x00800000,
    0x7F7FFFFF,
    0xFF7FFFFF,
    0x3F800000,
    0xBF800000,
]


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape) or a.device != b.device:
        return False
    a, b = a.contiguous(), b.contiguous()
    if a.dtype == torch.float32:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    if a.dtype == torch.float64:
        return torch.equal(a.view(torch.int64), b.view(torch.int64))
    return torch.equal(a, b)


def check(name: str, *args: Any, **kwargs: Any) -> torch.Tensor:
    spec: OpSpec = OPS[name]
    fast = spec.fast(*args, **kwargs)
    ref = spec.reference(*args, **kwargs)
    assert same_bits(fast, ref), (name, args, kwargs, fast, ref)
    if fast.is_floating_point() and fast.numel():
        nan = torch.isnan(fast)
        if nan.any() and fast.dtype == torch.float32 and name not in SELECTIONS:
            assert bool((fast.view(torch.int32)[nan] == M.CANONICAL_NAN_BITS).all())
    return fast


SELECTIONS = {
    "aten.where.self",
    "aten.clamp.default",
    "aten.relu.default",
    "aten.threshold_backward.default",
    "aten.clone.default",
    "aten.alias.default",
    "aten._to_copy.default",
}


# ---- strategies ---------------------------------------------------------------------------------

fp32_bit = st.one_of(
    st.integers(0, 0xFFFFFFFF), st.sampled_from(SPECIAL_BITS), st.floats(-8, 8, width=32).map(M.f32_bits)
)
shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


def fill(shape: tuple[int, ...], dtype: torch.dtype, draw: Any) -> torch.Tensor:
    n = math.prod(shape)
    if dtype == torch.float32:
        bits = draw(st.lists(fp32_bit, min_size=n, max_size=n))
        return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy()).reshape(shape)
    if dtype == torch.bool:
        return torch.tensor(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=torch.bool).reshape(shape)
    ints = st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**24 + 1, 2**53 + 1]))
    return torch.tensor(draw(st.lists(ints, min_size=n, max_size=n)), dtype=torch.int64).reshape(shape)


@st.composite
def tensor_in_layout(draw: Any, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A tensor of `shape` whose memory is contiguous, transposed, strided or expanded."""
    layout = draw(st.sampled_from(["contig", "transposed", "strided", "expanded"]))
    if layout == "transposed" and len(shape) >= 2:
        return (
            fill(shape[::-1], dtype, draw).transpose(0, -1)
            if len(shape) == 2
            else fill((shape[0], shape[2], shape[1]), dtype, draw).transpose(1, 2)
        )
    if layout == "strided" and shape:
        big = fill((*shape[:-1], 2 * shape[-1]), dtype, draw)
        return big[..., ::2]
    if layout == "expanded" and shape:
        one = fill((1, *shape[1:]), dtype, draw)
        return one.expand(shape)
    return fill(shape, dtype, draw)


@st.composite
def broadcast_pair(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = draw(shapes)
    other = tuple(1 if draw(st.booleans()) else d for d in shape)
    other = other[draw(st.integers(0, len(other))) :]  # fewer leading dims
    return (shape, other) if draw(st.booleans()) else (other, shape)


@st.composite
def operand(draw: Any, shape: tuple[int, ...], allow_scalar: bool = True) -> Any:
    kind = draw(st.sampled_from(["f32", "f32", "f32", "int", "bool", "f32scalar", "intscalar", "0dim"]))
    if kind == "f32scalar" and allow_scalar:
        return draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.1, 1e-8, 0.9, -0.5])))
    if kind == "intscalar" and allow_scalar:
        return draw(st.integers(-(2**40), 2**40))
    if kind == "0dim":
        return fill((), torch.float32, draw)
    if kind == "int":
        return draw(tensor_in_layout(shape, torch.int64))
    if kind == "bool":
        return draw(tensor_in_layout(shape, torch.bool))
    return draw(tensor_in_layout(shape, torch.float32))


# ---- arithmetic ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor"])
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_binary_arithmetic(name: str, data: Any) -> None:
    sa, sb = data.draw(broadcast_pair())
    a = data.draw(operand(sa))
    b = data.draw(operand(sb, allow_scalar=isinstance(a, torch.Tensor)))
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        b = data.draw(tensor_in_layout(sb, torch.float32))
    if not isinstance(a, torch.Tensor) and name in ("aten.add.Tensor", "aten.mul.Tensor"):
        a, b = b, a  # make_fx records scalars first only for sub/div/rsub patterns
    kwargs: dict[str, Any] = {}
    if name in ("aten.add.Tensor", "aten.sub.Tensor") and data.draw(st.booleans()):
        kwargs["alpha"] = data.draw(st.sampled_from([1, 2, -1, 0.3, -3e-4]))
    try:
        OPS[name].reference(a, b, **kwargs)
    except UnsupportedOpError:
        with pytest.raises(UnsupportedOpError):
            OPS[name].fast(a, b, **kwargs)
        return
    check(name, a, b, **kwargs)


@pytest.mark.parametrize(
    "name",
    [
        "aten.neg.default",
        "aten.reciprocal.default",
        "aten.sqrt.default",
        "aten.rsqrt.default",
        "aten.exp.default",
        "aten.log.default",
        "aten.erf.default",
        "aten.tanh.default",
        "aten.sigmoid.default",
        "aten.relu.default",
        "aten.abs.default",
        "aten.gelu.default",
    ],
)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_unary(name: str, data: Any) -> None:
    shape = data.draw(shapes)
    dtype = data.draw(st.sampled_from([torch.float32] * 4 + [torch.int64]))
    x = data.draw(tensor_in_layout(shape, dtype))
    if name == "aten.gelu.default":
        check(name, x, approximate=data.draw(st.sampled_from(["none", "tanh"])))
    else:
        check(name, x)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_pow_tensor_scalar(data: Any) -> None:
    x = data.draw(tensor_in_layout(data.draw(shapes), torch.float32))
    e = data.draw(st.sampled_from([0, 1, 2, 3, -1, -2, -3, 0.5, -0.5, 1.5, -1.5, 2.0, 3.0]))
    check("aten.pow.Tensor_Scalar", x, e)
    xi = data.draw(tensor_in_layout(data.draw(shapes), torch.int64))
    check("aten.pow.Tensor_Scalar", xi, data.draw(st.sampled_from([0, 1, 2, 3])))


@pytest.mark.parametrize("e", [2.5, -4, 4, True, 0.25])
def test_pow_refuses_undefined_exponents(e: Any) -> None:
    for k in (OPS["aten.pow.Tensor_Scalar"].fast, OPS["aten.pow.Tensor_Scalar"].reference):
        with pytest.raises(UnsupportedOpError, match="exponent"):
            k(torch.ones(3), e)


# ---- comparisons, logic, selections --------------------------------------------------------------


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_comparisons(op: str, data: Any) -> None:
    sa, sb = data.draw(broadcast_pair())
    dtype = data.draw(st.sampled_from([torch.float32, torch.int64]))
    a = data.draw(tensor_in_layout(sa, dtype))
    s = data.draw(st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.sampled_from([-100, 0, 0.1])))
    check(f"aten.{op}.Scalar", a, s)
    check(f"aten.{op}.Tensor", a, data.draw(operand(sb, allow_scalar=False)))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bitwise_and_logical(data: Any) -> None:
    sa, sb = data.draw(broadcast_pair())
    dtype = data.draw(st.sampled_from([torch.bool, torch.int64]))
    a = data.draw(tensor_in_layout(sa, dtype))
    b = data.draw(tensor_in_layout(sb, dtype))
    for name in ("and", "or", "xor"):
        check(f"aten.bitwise_{name}.Tensor", a, b)
    check("aten.bitwise_not.default", a)
    check("aten.logical_and.default", a, b)
    check("aten.logical_or.default", a, b)
    check("aten.logical_not.default", a)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_where(data: Any) -> None:
    sa, sb = data.draw(broadcast_pair())
    cond = data.draw(tensor_in_layout(sa, torch.bool))
    dtype = data.draw(st.sampled_from([torch.float32, torch.int64]))
    a = data.draw(tensor_in_layout(sb, dtype))
    b = data.draw(
        st.one_of(st.just(fill((), dtype, data.draw)), tensor_in_layout(sa, dtype), tensor_in_layout(sb, torch.float32))
    )
    out = check("aten.where.self", cond, a, b)
    if out.dtype == a.dtype == b.dtype:  # a pure selection: bits move unchanged, as torch.where
        assert same_bits(out, torch.where(cond, a, b))


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_clamp(data: Any) -> None:
    dtype = data.draw(st.sampled_from([torch.float32, torch.float32, torch.int64]))
    x = data.draw(tensor_in_layout(data.draw(shapes), dtype))
    bound = st.one_of(st.none(), st.floats(-10, 10), st.integers(-20, 20), st.sampled_from([0.0, -0.0, 1.0]))
    lo, hi = data.draw(bound), data.draw(bound)
    if lo is None and hi is None:
        hi = 1.0
    check("aten.clamp.default", x, lo, hi)


def test_clamp_keeps_signed_zero_and_nan_bits() -> None:
    x = torch.from_numpy(np.array([0x80000000, 0x7FC00001, 0xBF800000], dtype=np.uint32).view(np.float32).copy())
    out = check("aten.clamp.default", x, 0.0, 1.0)
    assert [b & 0xFFFFFFFF for b in out.view(torch.int32).tolist()] == [0x80000000, 0x7FC00001, 0x00000000]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_threshold_backward(data: Any) -> None:
    sa, sb = data.draw(broadcast_pair())
    g = data.draw(tensor_in_layout(sa, torch.float32))
    x = data.draw(tensor_in_layout(sb, torch.float32))
    if torch.broadcast_shapes(g.shape, x.shape) != g.shape:
        g = g.expand(torch.broadcast_shapes(g.shape, x.shape))
    check("aten.threshold_backward.default", g, x, data.draw(st.sampled_from([0, 0.0, 0.5, -1])))


# ---- conversions and creation ---------------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_to_copy(data: Any) -> None:
    src = data.draw(st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float64]))
    shape = data.draw(shapes)
    if src == torch.float64:
        x = data.draw(tensor_in_layout(shape, torch.float32)).double() * data.draw(st.sampled_from([1.0, 1e30, 1e-30]))
    else:
        x = data.draw(tensor_in_layout(shape, src))
    check("aten._to_copy.default", x, dtype=data.draw(st.sampled_from(DTYPES)))


def test_conversion_edges() -> None:
    big = torch.tensor([2**63 - 1, -(2**63), 2**24 + 1, 2**53 + 1, 2**60 + 2**36 + 1, 2**25 + 3, -(2**25) - 3])
    out = check("aten._to_copy.default", big, dtype=torch.float32)
    # RNE straight from the integer (no double rounding through binary64: 2^60+2^36+1 -> 2^60+2^37)
    assert out.tolist() == [2.0**63, -(2.0**63), 2.0**24, 2.0**53, 2.0**60 + 2.0**37, 2.0**25 + 4, -(2.0**25) - 4]
    f = torch.tensor(
        [
            float("nan"),
            float("inf"),
            -float("inf"),
            3e38,
            -3e38,
            2.0**63,
            -(2.0**63),
            2.0**31,
            -2.5,
            2.5,
            255.5,
            256.0,
            -0.5,
        ],
        dtype=torch.float32,
    )
    assert check("aten._to_copy.default", f, dtype=torch.int64).tolist() == [
        0,
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
        2**31,
        -2,
        2,
        255,
        256,
        0,
    ]
    assert check("aten._to_copy.default", f, dtype=torch.int32).tolist()[:8] == [
        0,
        2**31 - 1,
        -(2**31),
        2**31 - 1,
        -(2**31),
        2**31 - 1,
        -(2**31),
        2**31 - 1,
    ]
    assert check("aten._to_copy.default", f, dtype=torch.uint8).tolist()[-4:] == [2, 255, 255, 0]


def test_creation_ops() -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((-float("inf"),), {"dtype": torch.float32}),
        ((0,), {"dtype": torch.int64}),
        ((0.1,), {}),
        ((float("nan"),), {"dtype": torch.float32}),
        ((True,), {"dtype": torch.bool}),
    ]
    for args, kw in cases:
        check("aten.scalar_tensor.default", *args, **kw)
    cases = [
        (([16, 16], True), {"dtype": torch.bool}),
        (([3, 2], 0.1), {"dtype": torch.float32}),
        (([3], 7), {}),
        (([2, 0], 1.5), {}),
        (([4], -1e40), {"dtype": torch.float32}),
    ]
    for args, kw in cases:
        check("aten.full.default", *args, **kw)
    x = torch.randn(3, 4).t()
    check("aten.full_like.default", x, 1, pin_memory=False, memory_format=torch.preserve_format)
    check("aten.full_like.default", x, 0.1, dtype=torch.float64)
    check("aten.clone.default", x, memory_format=torch.contiguous_format)
    nanx = torch.from_numpy(np.array([0x7FC00001, 0xFFFFFFFF], dtype=np.uint32).view(np.float32).copy())
    assert same_bits(check("aten.clone.default", nanx), nanx)
    a = check("aten.alias.default", x)
    assert a.data_ptr() == x.data_ptr()
    check("aten.arange.start_step", 0, 16, layout=torch.strided, device=torch.device("cpu"), pin_memory=False)
    check("aten.arange.start_step", -3, 10, 4, dtype=torch.float32)
    check("aten.arange.default", 5)


# ---- torch's own CPU arithmetic is IEEE (what the fast kernels rely on) -------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_torch_cpu_fp32_arithmetic_is_ieee(threads: int) -> None:
    """add/sub/mul/div of fp32 tensors and fp32 tensor with a Python scalar, and reciprocal,
    equal the binary64-computed, once-rounded results (NaNs compared as NaN)."""
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(threads)
        n = 1 << 18
        x = torch.randint(-(2**31), 2**31, (n,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)
        y = torch.randint(-(2**31), 2**31, (n,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)
        with np.errstate(invalid="ignore"):
            xd, yd = x.numpy().astype(np.float64), y.numpy().astype(np.float64)

        def eq(t: torch.Tensor, ref64: np.ndarray) -> bool:
            r = torch.from_numpy(ref64.astype(np.float32))
            return same_bits(M.canonicalize_nan(t), M.canonicalize_nan(r))

        with np.errstate(all="ignore"):
            assert eq(x + y, xd + yd) and eq(x - y, xd - yd) and eq(x * y, xd * yd) and eq(x / y, xd / yd)
            assert eq(torch.reciprocal(x), 1.0 / xd)
            for s in (3.0, 0.1, 1e-8, 0.9, 7):
                s32 = float(np.float32(s))
                assert eq(x + s, xd + s32) and eq(x * s, xd * s32) and eq(x / s, xd / s32) and eq(x - s, xd - s32)
                assert eq(torch.div(torch.tensor(s32), x), s32 / xd)
    finally:
        torch.set_num_threads(old)


def test_alpha_is_not_fused() -> None:
    """RepOps' add with alpha != 1 rounds alpha*other first; torch's CPU kernel fuses it, so
    the two differ on some inputs, and ours equals the two-step IEEE computation."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(1 << 14, generator=g), torch.randn(1 << 14, generator=g)
    ours = OPS["aten.add.Tensor"].fast(a, b, alpha=0.3)
    assert same_bits(ours, a + b * 0.3)


# ---- coverage and refusals -----------------------------------------------------------------------


def test_capture_ops_are_covered() -> None:
    missing = [n for n in NEEDED if n not in OPS]
    assert not missing
    for name, spec in OPS.items():
        assert spec.name == name and spec.section.startswith("docs/repops/elementwise.md")


def test_refusals() -> None:
    with pytest.raises(UnsupportedOpError):
        OPS["aten.exp.default"].fast(torch.ones(2, dtype=torch.float16))
    with pytest.raises(UnsupportedOpError):
        OPS["aten.add.Tensor"].fast(torch.ones(2, dtype=torch.bfloat16), 1.0)
    with pytest.raises(UnsupportedOpError):
        OPS["aten.gelu.default"].fast(torch.ones(2), approximate="fast")
    with pytest.raises(UnsupportedOpError):
        OPS["aten.arange.start_step"].fast(0.0, 1.0, 0.1)
