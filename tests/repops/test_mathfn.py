"""RepOps transcendental functions: tensor version == scalar reference, bit for bit; special
values; invariance (threads, strides, batch); accuracy against float64 within the bounds
documented in docs/repops/elementwise.md (the only tolerances here)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
import scipy.special as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import mathfn as M
from trainer.repops._spec import UnsupportedOpError

NAN_BITS = M.CANONICAL_NAN_BITS
INF = float("inf")

FUNCS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], Callable[[float], float]]] = {
    "exp": (M.exp, M.exp_ref),
    "log": (M.log, M.log_ref),
    "sqrt": (M.sqrt, M.sqrt_ref),
    "rsqrt": (M.rsqrt, M.rsqrt_ref),
    "tanh": (M.tanh, M.tanh_ref),
    "sigmoid": (M.sigmoid, M.sigmoid_ref),
    "erf": (M.erf, M.erf_ref),
    "gelu": (M.gelu, M.gelu_ref),
    "gelu_tanh": (lambda t: M.gelu(t, "tanh"), lambda v: M.gelu_ref(v, "tanh")),
}

# Documented bound on the error in ulp of fp32 (docs/repops/elementwise.md, "Accuracy").
ULP_BOUND = 0.501

SPECIAL_BITS = [
    0x00000000,
    0x80000000,  # +-0
    0x7F800000,
    0xFF800000,  # +-inf
    0x7FC00000,
    0xFFC00000,
    0x7FC00001,
    0x7F800001,
    0xFFFFFFFF,
    0x7FBFFFFF,  # NaNs, quiet and signalling
    0x00000001,
    0x80000001,
    0x007FFFFF,
    0x00800000,
    0x807FFFFF,  # subnormals, smallest normal
    0x7F7FFFFF,
    0xFF7FFFFF,  # +-max
    0x3F800000,
    0xBF800000,
    0x3F3504F3,
    0x3FB504F3,  # +-1, ~1/sqrt2, ~sqrt2
    0x42B17218,
    0x42B17217,
    0xC2CFF1B5,
    0xC2CE8ED0,
    0xC2AEAC50,  # exp overflow / underflow edges
    0x3F400000,
    0xBF400000,
    0x4129FFFF,
    0xC1700000,
    0xC1780000,  # 0.75, -0.75, ~10.625, -15, -15.5
    0x41200000,
    0xC1200000,
    0x42DC0000,
    0xC2DC0000,  # +-10, +-110
]


def bits_of(t: torch.Tensor) -> list[int]:
    assert t.dtype == torch.float32
    return [b & 0xFFFFFFFF for b in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def from_bits(bits: list[int]) -> torch.Tensor:
    return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy())


def ref_bits(ref: Callable[[float], float], x: torch.Tensor) -> list[int]:
    return [M.f32_bits(ref(v)) for v in x.reshape(-1).tolist()]


fp32_bits = st.one_of(
    st.integers(0, 0xFFFFFFFF),  # every exponent, NaN payloads, subnormals
    st.sampled_from(SPECIAL_BITS),
    st.floats(-20.0, 20.0, width=32).map(lambda v: M.f32_bits(v)),  # the interesting middle
)


@pytest.mark.parametrize("name", list(FUNCS))
@settings(max_examples=60, deadline=None)
@given(bits=st.lists(fp32_bits, min_size=1, max_size=64))
def test_fast_equals_reference(name: str, bits: list[int]) -> None:
    fast, ref = FUNCS[name]
    x = from_bits(bits)
    assert bits_of(fast(x)) == ref_bits(ref, x)


@pytest.mark.parametrize("name", list(FUNCS))
def test_special_inputs_equal_reference(name: str) -> None:
    fast, ref = FUNCS[name]
    x = from_bits(SPECIAL_BITS)
    out = bits_of(fast(x))
    assert out == ref_bits(ref, x)
    for b, o in zip(SPECIAL_BITS, out, strict=True):
        v = M.f32_from_bits(b)
        if v != v:
            assert o == NAN_BITS, f"{name}(NaN {b:#x}) -> {o:#x}, not the canonical NaN"


@pytest.mark.parametrize(
    ("name", "x", "expected"),
    [
        ("exp", INF, INF),
        ("exp", -INF, 0.0),
        ("exp", 0.0, 1.0),
        ("exp", -0.0, 1.0),
        ("exp", 89.0, INF),
        ("exp", -104.0, 0.0),
        ("exp", 88.72283172607422, math.exp(88.72283172607422)),
        ("log", 0.0, -INF),
        ("log", -0.0, -INF),
        ("log", INF, INF),
        ("log", -1.0, math.nan),
        ("log", -INF, math.nan),
        ("log", 1.0, 0.0),
        ("log", 2.0**-149, -149 * math.log(2.0)),
        ("sqrt", -0.0, -0.0),
        ("sqrt", -1.0, math.nan),
        ("sqrt", INF, INF),
        ("rsqrt", 0.0, INF),
        ("rsqrt", -0.0, -INF),
        ("rsqrt", INF, 0.0),
        ("rsqrt", -2.0, math.nan),
        ("rsqrt", 4.0, 0.5),
        ("tanh", -0.0, -0.0),
        ("tanh", INF, 1.0),
        ("tanh", -INF, -1.0),
        ("tanh", M.f32(1e-30), M.f32(1e-30)),
        ("sigmoid", INF, 1.0),
        ("sigmoid", -INF, 0.0),
        ("sigmoid", 0.0, 0.5),
        ("sigmoid", -0.0, 0.5),
        ("erf", -0.0, -0.0),
        ("erf", INF, 1.0),
        ("erf", -INF, -1.0),
        ("erf", 4.0, 1.0),
        ("erf", 1e-30, M.f32(1e-30) * 2 / math.sqrt(math.pi)),
        ("gelu", -0.0, -0.0),
        ("gelu", INF, INF),
        ("gelu", -INF, -0.0),
        ("gelu", -20.0, -0.0),
        ("gelu_tanh", -0.0, -0.0),
        ("gelu_tanh", INF, INF),
        ("gelu_tanh", -INF, -0.0),
        ("gelu_tanh", -20.0, -0.0),
    ],
)
def test_special_values(name: str, x: float, expected: float) -> None:
    fast, ref = FUNCS[name]
    want = M.f32_bits(M.f32(expected))
    assert bits_of(fast(torch.tensor([x], dtype=torch.float32))) == [want]
    assert M.f32_bits(ref(M.f32(x))) == want


def test_subnormal_outputs_are_not_flushed() -> None:
    x = torch.tensor([-100.0, -103.0, -87.5, -95.25], dtype=torch.float32)
    y = M.exp(x)
    assert bool(((y > 0) & (y < 2.0**-126)).all())
    expected = torch.from_numpy(np.exp(x.numpy().astype(np.float64)).astype(np.float32))
    assert bits_of(y) == bits_of(expected)


def test_canonicalize_nan_replaces_every_payload() -> None:
    t = from_bits([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x3F800000])
    assert bits_of(M.canonicalize_nan(t)) == [NAN_BITS] * 4 + [0x3F800000]


def test_f32_rounding_helper() -> None:
    assert M.f32(1.0 + 2.0**-24) == 1.0  # tie to even
    assert M.f32(1.0 + 3 * 2.0**-24) == 1.0 + 2.0**-22
    assert M.f32(2.0**-150) == 0.0 and M.f32(2.0**-150 * 1.5) == 2.0**-149
    assert M.f32(float.fromhex("0x1.ffffffp127")) == INF
    assert M.f32(float.fromhex("0x1.fffffefffffffp127")) == float.fromhex("0x1.fffffep127")


@pytest.mark.parametrize("name", list(FUNCS))
def test_layout_and_batch_invariance(name: str) -> None:
    """Transposed, strided, expanded and size-1 inputs, and one row alone versus inside a
    batch, give the same bits element for element."""
    fast, _ = FUNCS[name]
    g = torch.Generator().manual_seed(7)
    base = torch.randn(33, 17, generator=g) * 6
    ref = fast(base.contiguous())
    assert torch.equal(fast(base.t().contiguous().t()).view(torch.int32), ref.view(torch.int32))
    assert torch.equal(fast(base.t()).t().contiguous().view(torch.int32), ref.view(torch.int32))
    wide = torch.randn(33, 34, generator=g)
    wide[:, ::2] = base
    assert torch.equal(fast(wide[:, ::2]).contiguous().view(torch.int32), ref.view(torch.int32))
    row = base[5:6]
    assert torch.equal(fast(row).view(torch.int32), ref[5:6].view(torch.int32))
    assert torch.equal(fast(row.expand(4, 17)).contiguous().view(torch.int32), ref[5:6].expand(4, 17).view(torch.int32))
    assert torch.equal(fast(base[3, 4].reshape(())).view(torch.int32), ref[3, 4].view(torch.int32))
    assert fast(torch.empty(0, 3)).shape == (0, 3)


def test_thread_count_invariance() -> None:
    """1 and 2 torch threads give the same bits (run in a child so the parent's thread
    setting is untouched)."""
    code = """
import torch, hashlib
from trainer.repops import mathfn as M
g = torch.Generator().manual_seed(3)
bits = torch.randint(-2**31, 2**31, (1 << 16,), generator=g, dtype=torch.int64).to(torch.int32)
x = torch.cat([torch.randn(1 << 17, generator=g) * 8, bits.view(torch.float32)])
out = []
for n in (1, 2):
    torch.set_num_threads(n)
    h = hashlib.sha256()
    for f in (M.exp, M.log, M.sqrt, M.rsqrt, M.tanh, M.sigmoid, M.erf, M.gelu, lambda t: M.gelu(t, "tanh")):
        h.update(f(x).numpy().tobytes())
    out.append(h.hexdigest())
print(out[0] == out[1], out[0])
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    same, _digest = res.stdout.split()
    assert same == "True"


def _ulp(v: np.ndarray) -> np.ndarray:
    _, e = np.frexp(v)
    return np.ldexp(1.0, np.maximum(e - 1, -126) - 23)


_K = math.sqrt(2.0 / math.pi)
REF64: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": sp.expit,
    "erf": sp.erf,
    "gelu": lambda x: x * sp.ndtr(x),
    "gelu_tanh": lambda x: x * sp.expit(2.0 * _K * (x + 0.044715 * x * x * x)),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_accuracy_against_float64(name: str) -> None:
    fast, _ = FUNCS[name]
    g = torch.Generator().manual_seed(11)
    parts = [
        torch.randn(1 << 16, generator=g) * 3,
        (torch.rand(1 << 16, generator=g) - 0.5) * 240,
        torch.randint(0, 0x7F800000, (1 << 16,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32),
    ]
    x = torch.cat(parts + [-p for p in parts]).numpy()
    out = fast(torch.from_numpy(x)).numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        ref = REF64[name](x.astype(np.float64))
    ok = np.isfinite(ref) & (np.abs(ref) <= np.finfo(np.float32).max)
    assert np.isfinite(out[ok]).all()
    err = np.abs(out[ok] - ref[ok]) / _ulp(ref[ok])
    assert err.max() <= ULP_BOUND, (name, float(err.max()), float(x[ok][np.argmax(err)]))
    # beyond the fp32 range the result is the signed infinity
    over = np.isfinite(ref) & (np.abs(ref) > np.finfo(np.float32).max * (1 + 2.0**-25))
    assert (np.abs(out[over]) == np.inf).all()


def test_rejects_other_dtypes() -> None:
    with pytest.raises(UnsupportedOpError):
        M.exp(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(UnsupportedOpError):
        M.gelu(torch.zeros(3), "sigmoid")


def test_torch_cpu_sqrt_is_not_ieee_so_we_do_not_use_it() -> None:
    """Documents why `sqrt` goes through numpy on the CPU: torch's own fp32 sqrt kernel is
    not correctly rounded here. If this ever fails, torch fixed it (harmless)."""
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, 0x7F800000, (1 << 16,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)
    ours = M.sqrt(x)
    exact = torch.from_numpy(np.sqrt(x.numpy().astype(np.float64)).astype(np.float32))
    assert torch.equal(ours.view(torch.int32), exact.view(torch.int32))
