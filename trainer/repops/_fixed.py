"""Fixed-point helpers shared by the exact kernels (docs/repops/linalg.md, "Fixed-point grid").

A slice of fp32 values (a row of A, a column of B, a reduced slice of a sum) gets one
power-of-two grid from its largest magnitude m: e is the integer with 2^(e-1) <= m < 2^e and
every value x becomes the integer q = RNE(x * 2^(p-e)), so |q| <= 2^p. Sums and dot products
of these integers are exact, hence independent of order, blocking, threads and device.

Tensor helpers here use only exact or correctly rounded torch operations, so they give the same
bits on CPU and CUDA. The `*_ref` helpers are the scalar (Python int and float) definitions.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import torch

P_DOT_MAX = 14  # a dot product's inputs: |q| <= 2^14 splits into two int8 slices (hi in [-64, 64], lo in [-128, 127])
P_SUM_MAX = 50  # a sum's inputs: the float64 grid trick below needs p <= 50
CANONICAL_NAN_BITS = 0x7FC00000  # the only NaN a RepOps kernel returns (float32 bits)
F32_NAN = struct.unpack("<f", struct.pack("<I", CANONICAL_NAN_BITS))[0]

_F64_EXP_MASK = 0x7FF0000000000000


def ceil_log2(n: int) -> int:
    """The least integer c with 2^c >= n, for n >= 1 (0 for n = 1)."""
    if n < 1:
        raise ValueError(f"ceil_log2 needs n >= 1, got {n}")
    return (n - 1).bit_length()


def p_dot(k: int) -> int:
    """Grid bits of a dot product's inputs for reduced length k >= 1: min(14, floor((53 - ceil(log2 k)) / 2)).

    Then |S| <= k * 2^(2p) <= 2^53, so the exact integer sum S and all its partial sums are
    integers that float64 represents exactly.
    """
    return min(P_DOT_MAX, (53 - ceil_log2(k)) // 2)


def p_dot64(k: int) -> int:
    """Grid bits of `refereed::exact_dot` over k >= 1 terms: floor((53 - ceil(log2 k)) / 2), p_dot without
    its cap of 14 (which exists for the int8 engines), so |S| <= k * 2^(2p) <= 2^53 still holds."""
    return (53 - ceil_log2(k)) // 2


def p_sum(n: int) -> int:
    """Grid bits of a sum's inputs for slice length n >= 1: min(50, 53 - ceil(log2 n)), so |S| <= n * 2^p <= 2^53."""
    return min(P_SUM_MAX, 53 - ceil_log2(n))


# --- tensor helpers (fast paths) --------------------------------------------------------------


def canonical_nan(device: torch.device) -> torch.Tensor:
    """A 0-dim float32 tensor holding the canonical quiet NaN 0x7FC00000."""
    return torch.tensor(CANONICAL_NAN_BITS, dtype=torch.int32, device=device).view(torch.float32)


def canonicalize_nan(x: torch.Tensor) -> torch.Tensor:
    """x with every NaN replaced by the canonical NaN, infinities kept (one pass, no host sync)."""
    return torch.nan_to_num(x, nan=F32_NAN, posinf=math.inf, neginf=-math.inf)


_LARGE = 1 << 16  # elements: above this, grid_max avoids a temporary |x| (fresh memory costs page faults)


def grid_max(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """m = max |x| over `dims`, kept as size-1 dims: NaN if the slice holds a NaN, inf if an inf.

    (The sign of a zero m does not matter: only its exponent bits are used.)"""
    if x.numel() <= _LARGE:
        return torch.amax(torch.abs(x), dim=tuple(dims), keepdim=True)
    hi = torch.amax(x, dim=tuple(dims), keepdim=True)
    return torch.maximum(hi, torch.amin(x, dim=tuple(dims), keepdim=True).neg_())


def all_finite(*maxima: torch.Tensor) -> bool:
    """Whether every slice maximum is finite (one host sync per tensor)."""
    return all(math.isfinite(float(m.max())) for m in maxima if m.numel())


def safe_max(m: torch.Tensor) -> torch.Tensor:
    """m where it is finite and positive, else 1.0 (a harmless grid; see grid_magic)."""
    m = torch.nan_to_num(m, nan=0.0, posinf=0.0)
    return torch.where(m > 0, m, torch.ones((), dtype=m.dtype, device=m.device))


def _exponent_field(m: torch.Tensor) -> torch.Tensor:
    """The biased exponent field E << 52 of float64(m) as int64 (E = e + 1022); non-finite m as 0."""
    bits = torch.nan_to_num(m.to(torch.float64), nan=0.0, posinf=0.0).view(torch.int64)
    return bits.bitwise_and_(_F64_EXP_MASK)


def grid_magic(m: torch.Tensor, p: int) -> torch.Tensor:
    """float64 c = 1.5 * 2^(e - p + 52) for slice maxima m >= 0 (see `quantize`).

    Built from bits: e - p + 52 + 1023 = E + 53 - p. An all-zero slice (E = 0) gets a tiny
    normal c, which maps its zeros to +0; a slice whose maximum is NaN or inf gets the same
    harmless c, and its result is replaced by the non-finite rule.
    """
    if not 0 <= p <= P_SUM_MAX:
        raise ValueError(f"grid bits must lie in [0, {P_SUM_MAX}], got {p}")
    return _exponent_field(m).add_(((53 - p) << 52) + (1 << 51)).view(torch.float64)


def grid_ulp(m: torch.Tensor, p: int) -> torch.Tensor:
    """float64 2^(e - p) for finite m > 0 (biased exponent E + 1 - p)."""
    return _exponent_field(m).add_((1 - p) << 52).view(torch.float64)


def grid_inv_ulp(m: torch.Tensor, p: int) -> torch.Tensor:
    """float64 2^(p - e) for finite m > 0 (biased exponent p + 2045 - E)."""
    e_field = torch.bitwise_right_shift(_exponent_field(m), 52)
    return torch.bitwise_left_shift(torch.sub(p + 2045, e_field), 52).view(torch.float64)


def quantize(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """float64 q * 2^(e - p) with q = RNE(x * 2^(p - e)), c = grid_magic(m, p) broadcast to x.

    float64(x) + c lands in the binade [2^(e-p+52), 2^(e-p+53)) whose spacing is 2^(e-p), so the
    (correctly rounded) addition rounds x to the grid, ties to even; subtracting c is exact
    (Sterbenz). A zero result is +0.
    """
    return x.to(torch.float64).add_(c).sub_(c)


# --- scalar references ------------------------------------------------------------------------


def f32_bits(x: float) -> int:
    """The binary32 bit pattern of x, which must be exactly representable in float32."""
    if math.isnan(x):
        return CANONICAL_NAN_BITS
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def round_f32(x: float) -> float:
    """x (a float64 value) rounded to binary32, to nearest, ties to even; overflow gives +-inf.

    NaN gives the canonical NaN's value. Plain integer arithmetic: no reliance on the C cast.
    """
    if math.isnan(x):
        return F32_NAN
    if x == 0.0 or math.isinf(x):
        return x
    _, e = math.frexp(x)  # 2^(e-1) <= |x| < 2^e
    quantum = max(e - 24, -149)  # binary32 spacing at |x|: 24 significant bits, subnormals at 2^-149
    n = round(math.ldexp(x, -quantum))  # exact scaling, then RNE to an integer (Python's round is half-even)
    if n == 0:
        return math.copysign(0.0, x)
    if abs(n).bit_length() + quantum > 128:  # |n| * 2^quantum >= 2^128
        return math.copysign(math.inf, x)
    return math.ldexp(n, quantum)


def round_f32_dyadic(n: int, k: int) -> float:
    """n * 2^k rounded to binary32 (RNE, overflow to inf); n an integer with |n| <= 2^53. Zero is +0."""
    if n == 0:
        return 0.0
    if abs(n) > 1 << 53:
        raise ValueError("round_f32_dyadic needs |n| <= 2^53")
    # float(n) is exact; the exponent may leave float64's range only far outside binary32's
    if k > 1100:
        return math.copysign(math.inf, n)
    if k < -1300:
        return math.copysign(0.0, n)
    if k < -1000:  # keep the float64 intermediate normal: pre-round at binary32's subnormal quantum
        return round_f32(math.ldexp(float(_rne_shift(n, -149 - k)), -149))
    return round_f32(math.ldexp(float(n), k))


def _rne_shift(n: int, s: int) -> int:
    """RNE(n / 2^s) for s >= 0, exactly."""
    if s <= 0:
        return n << -s
    q, r = divmod(n, 1 << s)
    half = 1 << (s - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q


def exponent_ref(m: float) -> int:
    """e with 2^(e-1) <= m < 2^e for finite m > 0; 1 for m = 0 (the grid of an all-zero slice)."""
    if m == 0.0:
        return 1
    return math.frexp(m)[1]


def quantize_ref(x: float, e: int, p: int) -> int:
    """RNE(x * 2^(p - e)) as a Python int (exact: the scaling is exact in float64)."""
    return round(math.ldexp(x, p - e))


def is_finite_ref(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


def nonfinite_sum_ref(values: Sequence[float]) -> float | None:
    """The IEEE result of a sum holding a non-finite value, or None if all are finite.

    Any NaN, or both +inf and -inf: NaN; else the infinity present.
    """
    has_nan = any(math.isnan(v) for v in values)
    has_pos = any(v == math.inf for v in values)
    has_neg = any(v == -math.inf for v in values)
    if has_nan or (has_pos and has_neg):
        return F32_NAN
    if has_pos:
        return math.inf
    if has_neg:
        return -math.inf
    return None


def exact_sum_ref(values: Sequence[float]) -> tuple[int, int]:
    """(S, k): the grid sum of float32 values, S * 2^k its value (docs: "Sums"). All finite."""
    n = len(values)
    if n == 0:
        return 0, 0
    p = p_sum(n)
    e = exponent_ref(max(abs(v) for v in values))
    return sum(quantize_ref(v, e, p) for v in values), e - p
