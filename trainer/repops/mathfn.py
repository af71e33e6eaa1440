"""Transcendental functions of RepOps: fp32 in, fp32 out, own fixed algorithms.

Every function here is specified in docs/repops/elementwise.md. Each one widens its fp32
input to float64 (exact), runs a fixed sequence of IEEE-754 binary64 operations (+ - * /,
comparisons, selections, and exact scalings by powers of two), and rounds once to fp32
(round to nearest even, subnormals kept, overflow to inf). No platform libm is called, no
operation is fused, so every conforming machine gets the same bits.

Two implementations of the same operation sequence are tested bit for bit against each
other:

* the scalar reference (`exp_ref`, ...): Python floats (IEEE binary64), written straight
  from the spec, one element at a time; `math.ldexp`/`math.frexp`/`math.copysign`/
  `math.fabs`/`math.sqrt` only as the exact or IEEE operations they are (scaling by 2^n,
  splitting off the binary exponent, sign transfer, sign clearing, correctly rounded sqrt);
* the tensor version (`exp`, ...): one torch operation per step on float64 tensors,
  device-agnostic (the same code runs on CUDA); 2^n and the log split are built from
  integer bit patterns.

On the CPU, a contiguous fp32 tensor goes instead through the same operation sequence
compiled into one C loop per function (`native_src/mathfn.c`, loaded by `_native.py`;
`_native_loop` below is the one place that chooses). It gives the same bits as the torch
operations (tests/repops/test_mathfn_native.py); without the built library, with
`REFEREED_NATIVE=0`, on CUDA and for strided tensors the torch operations run.

Tensor functions take fp32 tensors of any shape, strides and device and return a new fp32
tensor of the same shape. Every NaN they return is the canonical quiet NaN 0x7FC00000.
"""

from __future__ import annotations

import contextlib
import math
import struct
import threading
from collections.abc import Iterator

import numpy as np
import torch
from torch import Tensor

from trainer.repops import _native
from trainer.repops._spec import UnsupportedOpError

__all__ = [
    "CANONICAL_NAN_BITS",
    "canonicalize_nan",
    "canonicalize_nan_",
    "erf",
    "erf_ref",
    "exp",
    "exp_ref",
    "f32",
    "f32_bits",
    "f32_from_bits",
    "gelu",
    "gelu_ref",
    "log",
    "log1p",
    "log1p_ref",
    "log_ref",
    "rsqrt",
    "rsqrt_ref",
    "sigmoid",
    "sigmoid_ref",
    "sqrt",
    "sqrt_ref",
    "tanh",
    "tanh_ref",
]

CANONICAL_NAN_BITS = 0x7FC00000
_NAN = float("nan")
_INF = float("inf")

# ---- constants of the spec (binary64, written exactly in hex) ----------------------------

# exp64: v -> clamp(v, EXP_LO, EXP_HI) -> n = round(v / ln2) by the 1.5*2^52 trick ->
# r = n*(-ln2) + v -> p(r) = 1 + r + r^2 * G(r) (Horner) -> p * 2^n.
EXP_LO = -700.0
EXP_HI = 700.0
SHIFT = float.fromhex("0x1.8p52")  # 1.5 * 2^52: adding it rounds to an integer (RNE)
SHIFT_BITS = 0x4338000000000000  # bits of SHIFT; bits(SHIFT + n) = SHIFT_BITS + n
INVLN2 = float.fromhex("0x1.71547652b82fep0")  # RN64(1/ln 2)
LN2 = float.fromhex("0x1.62e42fefa39efp-1")  # RN64(ln 2)
NLN2 = -LN2
# G(r) ~ (e^r - 1 - r) / r^2 on |r| <= 0.35, coefficients g0..g7 (low to high).
EXP_G = (
    float.fromhex("0x1.fffffffffddd0p-2"),
    float.fromhex("0x1.555555555395ep-3"),
    float.fromhex("0x1.55555566c5f5fp-5"),
    float.fromhex("0x1.1111111cf4a65p-7"),
    float.fromhex("0x1.6c16687654889p-10"),
    float.fromhex("0x1.a019aa4b8d4b2p-13"),
    float.fromhex("0x1.a13c5c961953ap-16"),
    float.fromhex("0x1.72cbc42a87f4ep-19"),
)

# log: x = m * 2^k with m in [SQRTH, 2*SQRTH); f = m - 1; s = f / (f + 2); z = s*s;
# log(m) = s * (2 + z * H(z)); log(x) = k*LN2 + log(m).
SQRTH = float.fromhex("0x1.6a09e667f3bcdp-1")  # RN64(sqrt(1/2)), also RN64(1/sqrt(2))
SQRTH_BITS = 0x3FE6A09E667F3BCD
# H(z) ~ (2 atanh(sqrt z)/sqrt z - 2) / z on 0 <= z <= 0.0295, coefficients h0..h4.
LOG_H = (
    float.fromhex("0x1.55555555652efp-1"),
    float.fromhex("0x1.999998c85088fp-2"),
    float.fromhex("0x1.249325e779261p-2"),
    float.fromhex("0x1.c679e5956f3b3p-3"),
    float.fromhex("0x1.8c9e000149afdp-3"),
)

# erf: |y| < ERF_SPLIT: erf(y) = y * S(y*y); otherwise erfc(|y|) = exp64(-(y*y)) * P(|y|)/Q(|y|)
# with |y| clamped to ERF_YMAX.
ERF_SPLIT = 0.75
ERF_YMAX = 10.625
# S(z) ~ erf(sqrt z)/sqrt z on 0 <= z <= 0.5625, s0..s7.
ERF_S = (
    float.fromhex("0x1.20dd75042946dp+0"),
    float.fromhex("-0x1.812746aea7f01p-2"),
    float.fromhex("0x1.ce2f20b5fc719p-4"),
    float.fromhex("-0x1.b82caeacb9445p-6"),
    float.fromhex("0x1.565607f1c675ep-8"),
    float.fromhex("-0x1.bf7c3d8f275aap-11"),
    float.fromhex("0x1.edb7e28907697p-14"),
    float.fromhex("-0x1.87b01c2e69041p-17"),
)
# P(y)/Q(y) ~ exp(y^2) erfc(y) on 0.75 <= y <= 10.625; p0..p6, q0..q7 (q0 = 1).
ERFC_P = (
    float.fromhex("0x1.0000037cc608cp+0"),
    float.fromhex("0x1.bb2ab740bc900p+0"),
    float.fromhex("0x1.7634af3cc425fp+0"),
    float.fromhex("0x1.7e5ba632ac4dep-1"),
    float.fromhex("0x1.f04e8dbe12989p-3"),
    float.fromhex("0x1.87e67031abac2p-5"),
    float.fromhex("0x1.338ee4637e6d1p-8"),
)
ERFC_Q = (
    1.0,
    float.fromhex("0x1.6e04282bf90ecp+1"),
    float.fromhex("0x1.d81b4d4811c2bp+1"),
    float.fromhex("0x1.6694c49394f5bp+1"),
    float.fromhex("0x1.5db5ef9e2590dp+0"),
    float.fromhex("0x1.bc195d9a0e060p-2"),
    float.fromhex("0x1.5b4fffdfc8469p-4"),
    float.fromhex("0x1.1090faf974b11p-7"),
)
# GELU (erf form) uses the halved tables (halving is exact), so Phi needs no extra multiply.
GELU_S = tuple(c * 0.5 for c in ERF_S)
GELU_P = tuple(c * 0.5 for c in ERFC_P)
GELU_XMIN = -15.0  # gelu(x) rounds to -0 in fp32 for every x <= -15 (both forms)

# tanh: v = 2 * clamp(x, -TANH_XMAX, TANH_XMAX); em1 = e^v - 1; tanh = em1 / (em1 + 2)
TANH_XMAX = 10.0

# sigmoid(x) = 1 / (1 + exp64(-x))

# GELU (tanh form): gelu(x) = x / (1 + exp64(-(x * (GELU_K0 + GELU_K1 * x*x)))) with x >= GELU_XMIN
GELU_K0 = float.fromhex("0x1.9884533d43651p+0")  # RN64(2*sqrt(2/pi))
GELU_K1 = float.fromhex("0x1.2444f2a4d8b4bp-4")  # RN64(2*sqrt(2/pi)*0.044715)

# ---- fp32 helpers ---------------------------------------------------------------------------

_F32_OVERFLOW = float.fromhex("0x1.ffffffp127")  # |v| >= this rounds to inf (RNE)


def f32(v: float) -> float:
    """Round a binary64 value to the nearest fp32 value (RNE, subnormals kept, overflow to inf)."""
    if v != v:
        return _NAN
    if v >= _F32_OVERFLOW:
        return _INF
    if v <= -_F32_OVERFLOW:
        return -_INF
    return float(struct.unpack("<f", struct.pack("<f", v))[0])


def f32_bits(v: float) -> int:
    """The fp32 bit pattern (as an unsigned int) of an fp32 value held in a Python float.

    Every NaN maps to the canonical 0x7FC00000."""
    if v != v:
        return CANONICAL_NAN_BITS
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


def f32_from_bits(b: int) -> float:
    """The fp32 value with bit pattern `b` (taken modulo 2^32) as a Python float."""
    return float(struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0])


class _Deferral(threading.local):
    on = False


_deferral = _Deferral()


def canonicalize_nan_(y: Tensor) -> Tensor:
    """Replace every NaN of a float tensor (in place) by the canonical quiet NaN; inside
    `nan_canonicalization_deferred()` on this thread, nothing (the caller canonicalizes later)."""
    if _deferral.on:
        return y
    return torch.nan_to_num_(y, nan=_NAN, posinf=_INF, neginf=-_INF)


@contextlib.contextmanager
def nan_canonicalization_deferred() -> Iterator[None]:
    """On this thread, the kernels' in-place NaN canonicalization (`canonicalize_nan_`) is skipped
    until the block ends: a NaN a kernel makes keeps whatever sign and payload the hardware gave it.
    Only for a run whose every kernel's result, NaNs canonicalized, does not depend on its inputs'
    NaN payloads (trainer.interp: `NAN_DEFERRABLE`, tested kernel by kernel), and whose outputs the
    caller then canonicalizes: the same bits as canonicalizing after every kernel."""
    before = _deferral.on
    _deferral.on = True
    try:
        yield
    finally:
        _deferral.on = before


def canonicalize_nan(y: Tensor) -> Tensor:
    return torch.nan_to_num(y, nan=_NAN, posinf=_INF, neginf=-_INF)


def _check_f32(x: Tensor, name: str) -> None:
    if x.dtype != torch.float32:
        raise UnsupportedOpError(f"{name}: RepOps defines it for float32 tensors only, got {x.dtype}")


# ---- native dispatch ------------------------------------------------------------------------


def _native_loop(name: str, x: Tensor) -> Tensor | None:
    """`name`'s fused C loop applied to x when x is a contiguous fp32 CPU tensor and the
    library is available (large tensors split over torch's thread count); None otherwise
    (the caller then runs its torch operations)."""
    if x.dtype != torch.float32 or not x.is_cpu or not x.is_contiguous():
        return None
    lib = _native.library()
    if lib is None:
        return None
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    lib.run(name, x.data_ptr(), out.data_ptr(), x.numel(), torch.get_num_threads())
    return out


# ---- IEEE sqrt (torch's own CPU sqrt is not correctly rounded) -----------------------------


def _ieee_sqrt(x: Tensor) -> Tensor:
    """Correctly rounded sqrt of a float32 or float64 tensor, as a new tensor.

    torch 2.13's CPU sqrt kernel is off by one ulp for about 1 input in 6 (float32) and 1 in
    80 (float64), so on the CPU this goes through numpy, whose sqrt is the hardware's
    correctly rounded instruction. CUDA's sqrt/sqrtf (without fast-math) are IEEE."""
    if x.device.type == "cpu":
        a = x.detach().contiguous().numpy()
        out = np.empty_like(a)
        with np.errstate(invalid="ignore"):
            np.sqrt(a, out=out)
        return torch.from_numpy(out)
    return torch.sqrt(x)


# ---- tensor building blocks (float64) ---------------------------------------------------------


def _horner_t(r: Tensor, coefs: tuple[float, ...]) -> Tensor:
    """(((c_d*r + c_{d-1})*r + ...)*r + c_0) as a new tensor; len(coefs) >= 2."""
    p = r * coefs[-1]
    p.add_(coefs[-2])
    for c in reversed(coefs[:-2]):
        p.mul_(r).add_(c)
    return p


def _exp_reduce_t(v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """v (float64) -> (r, G-part q0 = G(r)*r + 1, t) with t = SHIFT + n (its bits hold n)."""
    v = v.clamp(EXP_LO, EXP_HI)
    t = v * INVLN2
    t.add_(SHIFT)
    r = t - SHIFT
    r.mul_(NLN2).add_(v)
    q0 = _horner_t(r, EXP_G)
    q0.mul_(r).add_(1.0)
    return r, q0, t


def _pow2_t(t: Tensor) -> Tensor:
    """2^n as float64, from t = SHIFT + n (consumes t): bits (n + 1023) << 52."""
    return t.view(torch.int64).add_(1023 - SHIFT_BITS).bitwise_left_shift_(52).view(torch.float64)


def _exp64_t(v: Tensor) -> Tensor:
    r, p, t = _exp_reduce_t(v)
    p.mul_(r).add_(1.0)
    return p.mul_(_pow2_t(t))


def _erfc_big_t(y: Tensor, pcoefs: tuple[float, ...]) -> Tensor:
    """exp64(-(y*y)) * P(y)/Q(y) for y >= 0 (float64); pcoefs is ERFC_P or GELU_P."""
    e = _exp64_t(torch.mul(y, y).neg_())
    num = _horner_t(y, pcoefs)
    den = _horner_t(y, ERFC_Q)
    return num.div_(den).mul_(e)


# ---- scalar building blocks (Python floats = binary64) ---------------------------------------


def _horner(r: float, coefs: tuple[float, ...]) -> float:
    p = coefs[-1]
    for c in reversed(coefs[:-1]):
        p = p * r + c
    return p


def _exp_reduce(v: float) -> tuple[float, float, int]:
    """As `_exp_reduce_t`: (r, G(r)*r + 1, n)."""
    if v < EXP_LO:
        v = EXP_LO
    elif v > EXP_HI:
        v = EXP_HI
    t = v * INVLN2 + SHIFT
    nf = t - SHIFT
    r = nf * NLN2 + v
    q0 = _horner(r, EXP_G) * r + 1.0
    return r, q0, int(nf)


def _exp64(v: float) -> float:
    """exp of a binary64 value (not NaN) by the spec's algorithm, in binary64."""
    r, q0, n = _exp_reduce(v)
    return math.ldexp(q0 * r + 1.0, n)


def _erfc_big(y: float, pcoefs: tuple[float, ...]) -> float:
    e = _exp64(-(y * y))
    return _horner(y, pcoefs) / _horner(y, ERFC_Q) * e


# ---- exp ------------------------------------------------------------------------------------


def exp_ref(x: float) -> float:
    """exp of an fp32 value: fp32(exp64(x))."""
    if x != x:
        return _NAN
    return f32(_exp64(x))


def exp(x: Tensor) -> Tensor:
    _check_f32(x, "exp")
    if (y := _native_loop("exp", x)) is not None:
        return y
    return canonicalize_nan_(_exp64_t(x.double()).float())


# ---- log ------------------------------------------------------------------------------------


def _log64(x: float) -> float:
    """log of a positive finite binary64 value by the spec's algorithm."""
    mant, e = math.frexp(x)  # x = mant * 2^e, mant in [0.5, 1)
    if mant < SQRTH:
        m, k = mant * 2.0, e - 1
    else:
        m, k = mant, e
    f = m - 1.0
    s = f / (f + 2.0)
    z = s * s
    lm = s * (_horner(z, LOG_H) * z + 2.0)
    return float(k) * LN2 + lm


def log_ref(x: float) -> float:
    """log of an fp32 value: -inf at +-0, NaN below 0 and at NaN, +inf at +inf."""
    if x != x or x < 0.0:
        return _NAN
    if x == 0.0:
        return -_INF
    if x == _INF:
        return _INF
    return f32(_log64(x))


def _log64_t(xd: Tensor) -> Tensor:
    """The spec's log core on a float64 tensor (meaningful for positive finite values only)."""
    b = xd.view(torch.int64)
    k = b - SQRTH_BITS
    k.bitwise_right_shift_(52)  # arithmetic shift: floor
    m = (b - torch.bitwise_left_shift(k, 52)).view(torch.float64)
    f = m.sub_(1.0)
    s = f / (f + 2.0)
    z = s * s
    lm = _horner_t(z, LOG_H)
    lm.mul_(z).add_(2.0).mul_(s)
    return k.double().mul_(LN2).add_(lm)


def log(x: Tensor) -> Tensor:
    _check_f32(x, "log")
    if (y := _native_loop("log", x)) is not None:
        return y
    y = _log64_t(x.double()).float()
    # special inputs (not positive finite): the core's value is replaced
    y = torch.where(x > 0.0, y, torch.where(x == 0.0, -_INF, _NAN))
    return y.masked_fill_(x == _INF, _INF)


# ---- sqrt and rsqrt -------------------------------------------------------------------------


def sqrt_ref(x: float) -> float:
    """IEEE sqrt of an fp32 value, correctly rounded to fp32 (via binary64: exact enough)."""
    if x != x or x < 0.0:
        return _NAN
    return f32(math.sqrt(x))


def sqrt(x: Tensor) -> Tensor:
    _check_f32(x, "sqrt")
    if (y := _native_loop("sqrt", x)) is not None:
        return y
    return canonicalize_nan_(_ieee_sqrt(x).to(x.device))


def rsqrt_ref(x: float) -> float:
    """fp32(1 / sqrt64(x)): +inf at +0, -inf at -0, +0 at +inf, NaN below 0."""
    if x != x or x < 0.0:
        return _NAN
    if x == 0.0:
        return math.copysign(_INF, x)
    return f32(1.0 / math.sqrt(x))


def rsqrt(x: Tensor) -> Tensor:
    _check_f32(x, "rsqrt")
    if (y := _native_loop("rsqrt", x)) is not None:
        return y
    s = _ieee_sqrt(x.double()).to(x.device)
    return canonicalize_nan_(torch.reciprocal(s).float())


# ---- tanh -----------------------------------------------------------------------------------


def tanh_ref(x: float) -> float:
    if x != x:
        return _NAN
    v = 2.0 * min(max(x, -TANH_XMAX), TANH_XMAX)
    r, q0, n = _exp_reduce(v)
    q = q0 * r
    scale = math.ldexp(1.0, n)
    em1 = scale * q + (scale - 1.0)
    return f32(math.copysign(em1 / (em1 + 2.0), x))


def tanh(x: Tensor) -> Tensor:
    _check_f32(x, "tanh")
    if (y := _native_loop("tanh", x)) is not None:
        return y
    v = x.double().clamp_(-TANH_XMAX, TANH_XMAX).mul_(2.0)
    r, q, t = _exp_reduce_t(v)
    q.mul_(r)
    scale = _pow2_t(t)
    em1 = q.mul_(scale)
    em1.add_(scale.sub_(1.0))
    y = em1 / (em1 + 2.0)
    return canonicalize_nan_(torch.copysign(y.float(), x))


# ---- sigmoid --------------------------------------------------------------------------------


def sigmoid_ref(x: float) -> float:
    if x != x:
        return _NAN
    return f32(1.0 / (1.0 + _exp64(-x)))


def sigmoid(x: Tensor) -> Tensor:
    _check_f32(x, "sigmoid")
    if (y := _native_loop("sigmoid", x)) is not None:
        return y
    e = _exp64_t(x.double().neg_())
    return canonicalize_nan_(e.add_(1.0).reciprocal_().float())


# ---- erf ------------------------------------------------------------------------------------


def erf_ref(x: float) -> float:
    if x != x:
        return _NAN
    if math.fabs(x) < ERF_SPLIT:
        return f32(x * _horner(x * x, ERF_S))
    y = min(math.fabs(x), ERF_YMAX)
    return f32(math.copysign(1.0 - _erfc_big(y, ERFC_P), x))


def erf(x: Tensor) -> Tensor:
    _check_f32(x, "erf")
    if (y := _native_loop("erf", x)) is not None:
        return y
    xd = x.double()
    small = _horner_t(xd * xd, ERF_S).mul_(xd)
    y = xd.abs().clamp_(max=ERF_YMAX)
    big = torch.copysign(_erfc_big_t(y, ERFC_P).neg_().add_(1.0), xd)
    out = torch.where(y < ERF_SPLIT, small, big)
    return canonicalize_nan_(out.float())


# ---- gelu -----------------------------------------------------------------------------------


def gelu_ref(x: float, approximate: str = "none") -> float:
    """x * Phi(x) (approximate='none') or the tanh form, as specified; fp32 in and out."""
    if approximate not in ("none", "tanh"):
        raise UnsupportedOpError(f"gelu: approximate={approximate!r} is not 'none' or 'tanh'")
    if x != x:
        return _NAN
    xc = max(x, GELU_XMIN)
    if approximate == "tanh":
        a = (xc * xc * GELU_K1 + GELU_K0) * xc
        return f32(xc / (1.0 + _exp64(-a)))
    y = xc * SQRTH
    if math.fabs(y) < ERF_SPLIT:
        phi = y * _horner(y * y, GELU_S) + 0.5
    else:
        c = _erfc_big(min(math.fabs(y), ERF_YMAX), GELU_P)
        phi = c if y < 0.0 else 1.0 - c
    return f32(xc * phi)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    _check_f32(x, "gelu")
    if approximate not in ("none", "tanh"):
        raise UnsupportedOpError(f"gelu: approximate={approximate!r} is not 'none' or 'tanh'")
    if (out := _native_loop("gelu" if approximate == "none" else "gelu_tanh", x)) is not None:
        return out
    xc = x.double().clamp_(min=GELU_XMIN)
    if approximate == "tanh":
        a = xc * xc
        a.mul_(GELU_K1).add_(GELU_K0).mul_(xc).neg_()
        den = _exp64_t(a).add_(1.0)
        return canonicalize_nan_(torch.div(xc, den).float())
    y = xc * SQRTH
    ay = y.abs()
    small = _horner_t(y * y, GELU_S).mul_(y).add_(0.5)
    c = _erfc_big_t(ay.clamp(max=ERF_YMAX), GELU_P)
    big = torch.where(y < 0.0, c, 1.0 - c)
    phi = torch.where(ay < ERF_SPLIT, small, big)
    return canonicalize_nan_(phi.mul_(xc).float())


# ---- log1p ----------------------------------------------------------------------------------


def log1p_ref(x: float) -> float:
    """log(1 + x) of an fp32 value: u = 1 + x; x if u == 1, else log64(u) * (x / (u - 1))."""
    if x != x or x < -1.0:
        return _NAN
    if x == -1.0:
        return -_INF
    if x == _INF:
        return _INF
    u = 1.0 + x
    if u == 1.0:
        return f32(x)
    return f32(_log64(u) * (x / (u - 1.0)))


def log1p(x: Tensor) -> Tensor:
    _check_f32(x, "log1p")
    if (out := _native_loop("log1p", x)) is not None:
        return out
    xd = x.double()
    u = xd + 1.0
    ok = u > 0.0  # x > -1 (x >= -1 + 2^-24 gives u >= 2^-24)
    core = _log64_t(torch.where(ok, u, 1.0))
    y = core.mul_(xd / (u - 1.0))
    y = torch.where(u == 1.0, xd, y).float()
    y = torch.where(x > -1.0, y, torch.where(x == -1.0, -_INF, _NAN))
    return canonicalize_nan_(y.masked_fill_(x == _INF, _INF))
