"""Write the differential vectors of the Solidity IEEE-754 libraries (docs/repops/ieee.md).

Run `PYTHONPATH=. .venv/bin/python scripts/ieee_vectors.py [OUT_DIR]` (default
contracts/test/vectors). contracts/test/lib/Binary32.t.sol, Binary64.t.sol and RepOpsElement.t.sol
check every record bit for bit; tests/repops/test_ieee_vectors.py checks that the committed files
are what this writes now. Everything derives from fixed seeds: a second run writes the same bytes.

- ieee_binary32.json, ieee_binary64.json: groups of records for each library function, expected
  bits from numpy (binary32: numpy.float32 arithmetic, IEEE on the host's SSE unit) and Python
  floats (binary64), each cross-checked against a second computation (binary32 through binary64
  and one rounding, binary64 division through numpy), then the canonical-NaN rule applied.
- ieee_element.json: one group per `RepOpsElement` operator code, expected bits from the RepOps
  kernel itself (`KERNELS[name].fast` on a 1-D tensor), checked equal to its scalar reference.
- ieee_mathfn.json: exp, log, tanh, sigmoid, erf and GELU (both forms) from the kernels, for the test-side sequences of
  contracts/test/utils/MathFnSequences.sol.

A group's `data` is its records concatenated, each the big-endian words of the argument columns
`args` (0 = a, 1 = b, 2 = c; columns that are 0 throughout are left out) and then `out`, every word
`width` bytes (4 or 8). Integer arguments and results are two's complement patterns of 64 bits.
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.repops import KERNELS

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAN32 = 0x7FC00000
NAN64 = 0x7FF8000000000000
M64 = (1 << 64) - 1
RANDOM_PER_GROUP = 150

Json = dict[str, Any]
Record = tuple[int, int, int, int]


# ---------------------------------------------------------------------------- bit helpers


def f32v(b: int) -> np.float32:
    return np.frombuffer(struct.pack("<I", b), dtype=np.float32)[0]


def f32b(v: Any) -> int:
    b = int(np.float32(v).view(np.uint32))
    return NAN32 if is_nan32(b) else b


def f64v(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", b))[0])


def f64b(v: float) -> int:
    b = int(struct.unpack("<Q", struct.pack("<d", float(v)))[0])
    return NAN64 if is_nan64(b) else b


def is_nan32(b: int) -> bool:
    return (b & 0x7FFFFFFF) > 0x7F800000


def is_nan64(b: int) -> bool:
    return (b & 0x7FFFFFFFFFFFFFFF) > 0x7FF0000000000000


def i64(n: int) -> int:
    """The 64-bit two's complement pattern of n."""
    return n & M64


# ---------------------------------------------------------------------------- input values


def _signed(values: Iterable[int], sign: int) -> list[int]:
    out: list[int] = []
    for v in values:
        out += [v, v | sign]
    return out


EDGE32 = _signed(
    [
        0x00000000,  # +0
        0x00000001,  # smallest subnormal
        0x00000003,
        0x007FFFFF,  # largest subnormal
        0x00800000,  # smallest normal
        0x00800001,
        0x0C000000,
        0x1F800000,  # 2^-64
        0x33800000,  # 2^-24: half an ulp of 1
        0x34000000,
        0x3DCCCCCD,  # 0.1
        0x3F7FFFFF,  # 1 - ulp
        0x3F800000,  # 1
        0x3F800001,  # 1 + ulp
        0x3FC00000,  # 1.5
        0x40000000,
        0x40400000,
        0x4B7FFFFF,
        0x4B800000,  # 2^24
        0x4B800001,
        0x5F000000,  # 2^63
        0x7F000000,
        0x7F7FFFFE,
        0x7F7FFFFF,  # largest finite
        0x7F800000,  # inf
        0x7FC00000,  # canonical NaN
        0x7FC00001,  # quiet NaN with payload
        0x7F800001,  # signalling NaN
        0x7FBFFFFF,
        0x7FFFFFFF,
    ],
    0x80000000,
)

EDGE64 = _signed(
    [
        0x0000000000000000,
        0x0000000000000001,
        0x000FFFFFFFFFFFFF,
        0x0010000000000000,
        0x0010000000000001,
        0x3C90000000000000,  # 2^-54
        0x3CA0000000000000,  # 2^-53: half an ulp of 1
        0x3FB999999999999A,  # 0.1
        0x3FEFFFFFFFFFFFFF,
        0x3FF0000000000000,
        0x3FF0000000000001,
        0x3FF8000000000000,
        0x4000000000000000,
        0x433FFFFFFFFFFFFF,
        0x4340000000000000,  # 2^53
        0x4340000000000001,
        0x3810000000000000,  # fp32's smallest normal
        0x36A0000000000000,  # fp32's smallest subnormal
        0x47EFFFFFE0000000,  # fp32's largest finite
        0x47EFFFFFF0000000,  # fp32's overflow boundary (rounds to inf)
        0x7FEFFFFFFFFFFFFE,
        0x7FEFFFFFFFFFFFFF,
        0x7FF0000000000000,
        0x7FF8000000000000,
        0x7FF8000000000001,
        0x7FF0000000000001,
        0x7FFFFFFFFFFFFFFF,
    ],
    0x8000000000000000,
)


def _rand32(rng: random.Random) -> int:
    kind = rng.randrange(4)
    if kind == 0:  # any pattern
        return rng.getrandbits(32)
    if kind == 1:  # short significand: products and sums land on exact ties
        return (rng.getrandbits(1) << 31) | (rng.randrange(1, 255) << 23) | (rng.getrandbits(12) << 11)
    if kind == 2:  # near 1 and the middle exponents
        return (rng.getrandbits(1) << 31) | (rng.randrange(100, 155) << 23) | rng.getrandbits(23)
    return (rng.getrandbits(1) << 31) | rng.choice([0, 1, 2, 253, 254]) << 23 | rng.getrandbits(23)


def _rand64(rng: random.Random) -> int:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.getrandbits(64)
    if kind == 1:
        return (rng.getrandbits(1) << 63) | (rng.randrange(1, 2047) << 52) | (rng.getrandbits(26) << 26)
    if kind == 2:
        return (rng.getrandbits(1) << 63) | (rng.randrange(900, 1150) << 52) | rng.getrandbits(52)
    return (rng.getrandbits(1) << 63) | rng.choice([0, 1, 2, 2045, 2046]) << 52 | rng.getrandbits(52)


def _close(rng: random.Random, x: int, bits: int) -> int:
    """A pattern near x or near -x: cancellation and ties in add/sub, exponent gaps 0..60."""
    frac = 23 if bits == 32 else 52
    sign = 1 << (bits - 1)
    mag = x & (sign - 1)
    gap = rng.randrange(0, frac + 8)
    mag = max(0, mag - (gap << frac)) ^ rng.getrandbits(rng.randrange(1, frac))
    return (mag & (sign - 1)) | (rng.getrandbits(1) << (bits - 1))


def pairs(edges: list[int], rnd: Callable[[random.Random], int], bits: int, seed: str) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = [(a, b) for a in edges for b in edges]
    for _ in range(RANDOM_PER_GROUP):
        a = rnd(rng)
        out.append((a, rnd(rng)))
        out.append((a, _close(rng, a, bits)))
    return out


def singles(edges: list[int], rnd: Callable[[random.Random], int], seed: str) -> list[int]:
    rng = random.Random(seed)
    return list(edges) + [rnd(rng) for _ in range(2 * RANDOM_PER_GROUP)]


# ---------------------------------------------------------------------------- binary32 / binary64


def _group(name: str, records: list[Record]) -> Json:
    """Records as `a, b, c, out`; the columns that are 0 in every record are left out of `data`
    (`args` names the argument columns kept, `out` is always last), and every word is 4 bytes
    when all of them fit, else 8."""
    keep = [i for i in range(3) if any(r[i] for r in records)]
    width = 4 if all(w < 1 << 32 for r in records for w in r) else 8
    fmt = ">" + ("I" if width == 4 else "Q") * (len(keep) + 1)
    data = b"".join(struct.pack(fmt, *[r[i] for i in keep], r[3]) for r in records)
    return {"name": name, "count": len(records), "args": keep, "width": width, "data": "0x" + data.hex()}


def _np_op(op: str, x: Any, y: Any) -> Any:
    with np.errstate(all="ignore"):
        if op == "add":
            return x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return x * y
        return x / y


def _py_op(op: str, x: float, y: float) -> float:
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    with np.errstate(all="ignore"):
        return float(np.float64(x) / np.float64(y))


def _int_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _to_int(v: float, lo: int, hi: int) -> int:
    """The spec's float -> integer rule: NaN 0, truncation toward zero, saturation."""
    if v != v:
        return 0
    if v >= hi + 1:
        return hi
    if v < lo:
        return lo
    return int(v)


def _minmax(kind: str, a: int, b: int, lt: Callable[[int, int], bool]) -> int:
    if kind == "max":
        return b if lt(a, b) else a
    return b if lt(b, a) else a


INT_EDGES = [0, 1, -1, 2, 3, 255, 256, -129, (1 << 24) + 1, (1 << 24) + 3, (1 << 53) + 1, (1 << 60) + (1 << 36) + 1]
INT_EDGES += [(1 << 63) - 1, -(1 << 63), -(1 << 63) + 1, (1 << 62) + (1 << 38), -((1 << 40) + (1 << 16) + 1)]


def _ints(seed: str) -> list[int]:
    rng = random.Random(seed)
    return INT_EDGES + [rng.randrange(-(1 << 63), 1 << 63) >> rng.randrange(0, 63) for _ in range(RANDOM_PER_GROUP)]


def _ldexp_args(values: list[int], seed: str, wide: bool) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    span = 2200 if wide else 300
    ns = [0, 1, -1, 2, -2, span, -span, 100, -100, 1100, -1100]
    return [(v, n) for v in values[:40] for n in ns] + [(v, rng.randrange(-span, span)) for v in values]


def binary32_vectors() -> Json:
    groups: list[Json] = []
    lt = lambda a, b: bool(f32v(a) < f32v(b))  # noqa: E731
    pp = pairs(EDGE32, _rand32, 32, "b32/pairs")
    for op in ("add", "sub", "mul", "div"):
        recs = []
        for a, b in pp:
            got = f32b(_np_op(op, f32v(a), f32v(b)))
            with np.errstate(over="ignore"):  # a binary64 result beyond fp32's range rounds to inf
                check = f32b(np.float32(_py_op(op, float(f32v(a)), float(f32v(b)))))
            assert got == check, (op, hex(a), hex(b))
            recs.append((a, b, 0, got))
        groups.append(_group(op, recs))
    pp = pairs(EDGE32[::2] + EDGE32[1::4], _rand32, 32, "b32/cmp")
    with np.errstate(all="ignore"):
        for name, cmp in (("eq", np.equal), ("lt", np.less), ("le", np.less_equal)):
            groups.append(_group(name, [(a, b, 0, int(bool(cmp(f32v(a), f32v(b))))) for a, b in pp]))
    for kind in ("min", "max"):
        groups.append(_group(kind, [(a, b, 0, _minmax(kind, a, b, lt)) for a, b in pp]))
    groups.append(_group("copysign", [(a, b, 0, (a & 0x7FFFFFFF) | (b & 0x80000000)) for a, b in pp]))
    ss = singles(EDGE32, _rand32, "b32/singles")
    with np.errstate(all="ignore"):
        recs = []
        for a in ss:
            got = f32b(np.sqrt(f32v(a)))
            x = float(f32v(a))
            check = f32b(np.float32(math.sqrt(x))) if x >= 0 else (NAN32 if x == x else got)
            assert got == check or x != x, hex(a)
            recs.append((a, 0, 0, got))
        groups.append(_group("sqrt", recs))
        groups.append(_group("neg", [(a, 0, 0, f32b(-f32v(a))) for a in ss]))
        groups.append(_group("abs", [(a, 0, 0, f32b(np.abs(f32v(a)))) for a in ss]))
        groups.append(_group("toBinary64", [(a, 0, 0, f64b(float(np.float64(f32v(a))))) for a in ss]))
        for bits, signed in ((64, True), (32, True), (16, True), (8, True), (8, False)):
            lo, hi = _int_range(bits, signed)
            name = f"toInt_{'i' if signed else 'u'}{bits}"
            groups.append(_group(name, [(a, 0, 0, i64(_to_int(float(f32v(a)), lo, hi))) for a in ss]))
        recs = []
        for n in _ints("b32/ints"):
            got = f32b(np.float32(np.int64(n)))
            check = f32b(_ref_int_to_f32(n))
            assert got == check, n
            recs.append((i64(n), 0, 0, got))
        groups.append(_group("fromInt", recs))
        recs = []
        for a, n in _ldexp_args(ss, "b32/ldexp", False):
            got = f32b(np.ldexp(f32v(a), n))
            x = float(f32v(a))
            check = f32b(np.float32(_ldexp64(x, n))) if x == x else NAN32
            assert got == check, (hex(a), n)
            recs.append((a, i64(n), 0, got))
        groups.append(_group("ldexp", recs))
    recs = []
    for n, k in _scaled_args("b32/scaled"):
        got = _rn_scaled32(n, k)
        wide = _exact64(n, k)
        if math.isfinite(wide) and Fraction(wide) == Fraction(n) * Fraction(2) ** k:  # exact: f32 of it rounds once
            with np.errstate(over="ignore"):
                assert got == f32b(np.float32(wide)), (n, k)
        recs.append((i64(n), i64(k), 0, got))
    groups.append(_group("fromScaledInt", recs))
    return {"version": 1, "format": "binary32", "groups": groups}


def _ref_int_to_f32(n: int) -> float:
    """RN of an integer to fp32 by exact integer rounding (independent of numpy's cast)."""
    m = abs(n)
    shift = max(0, m.bit_length() - 24)
    q, rem = divmod(m, 1 << shift)
    if shift and (rem > 1 << (shift - 1) or (rem == 1 << (shift - 1) and q & 1)):
        q += 1
    v = math.ldexp(float(q), shift)
    return -v if n < 0 else v


def _scaled_args(seed: str) -> list[tuple[int, int]]:
    """(S, k) pairs for RN(S * 2^k): the integer edges and random S of up to 63 bits, at scales
    that give normal, subnormal, underflowing and overflowing results."""
    rng = random.Random(seed)
    ks = [0, -1, -24, -60, -149, -160, -1074, -1100, 64, 127, 1000]
    out = [(n, k) for n in INT_EDGES[:12] for k in ks]
    for _ in range(RANDOM_PER_GROUP * 2):
        s = rng.getrandbits(rng.randrange(1, 64)) * rng.choice((1, -1))
        out.append((s, rng.randrange(-1200, 1100)))
    return out


def _exact64(s: int, k: int) -> float:
    """RN64(s * 2^k) by CPython's correctly rounded Fraction -> float (subnormals kept)."""
    try:
        return float(Fraction(s) * Fraction(2) ** k)
    except OverflowError:
        return math.copysign(math.inf, s)


def _rn_scaled32(s: int, k: int) -> int:
    """RN32(s * 2^k) by exact integer rounding; the fp32 pattern."""
    if s == 0:
        return 0
    sign = 0x80000000 if s < 0 else 0
    m = abs(s)
    q = max(k + m.bit_length() - 24, -149)
    if q > k:
        r, rem = divmod(m, 1 << (q - k))
        half = 1 << (q - k - 1)
        if rem > half or (rem == half and r & 1):
            r += 1
    else:
        r = m << (k - q)
    return sign | min(((q + 149) << 23) + r, 0x7F800000)


def _ldexp64(x: float, n: int) -> float:
    try:
        return math.ldexp(x, n)
    except OverflowError:
        return math.copysign(math.inf, x)


def binary64_vectors() -> Json:
    groups: list[Json] = []
    lt = lambda a, b: f64v(a) < f64v(b)  # noqa: E731
    pp = pairs(EDGE64, _rand64, 64, "b64/pairs")
    for op in ("add", "sub", "mul", "div"):
        recs = []
        for a, b in pp:
            x, y = f64v(a), f64v(b)
            got = f64b(_py_op(op, x, y))
            check = f64b(float(_np_op(op, np.float64(x), np.float64(y))))
            assert got == check, (op, hex(a), hex(b))
            recs.append((a, b, 0, got))
        groups.append(_group(op, recs))
    pp = pairs(EDGE64[::2] + EDGE64[1::4], _rand64, 64, "b64/cmp")
    groups.append(_group("eq", [(a, b, 0, int(f64v(a) == f64v(b))) for a, b in pp]))
    groups.append(_group("lt", [(a, b, 0, int(f64v(a) < f64v(b))) for a, b in pp]))
    groups.append(_group("le", [(a, b, 0, int(f64v(a) <= f64v(b))) for a, b in pp]))
    for kind in ("min", "max"):
        groups.append(_group(kind, [(a, b, 0, _minmax(kind, a, b, lt)) for a, b in pp]))
    sign = 1 << 63
    groups.append(_group("copysign", [(a, b, 0, (a & (sign - 1)) | (b & sign)) for a, b in pp]))
    ss = singles(EDGE64, _rand64, "b64/singles")
    with np.errstate(all="ignore"):
        recs = []
        for a in ss:
            x = f64v(a)
            got = f64b(float(np.sqrt(np.float64(x))))
            if x >= 0:
                assert got == f64b(math.sqrt(x)), hex(a)
            recs.append((a, 0, 0, got))
        groups.append(_group("sqrt", recs))
        groups.append(_group("neg", [(a, 0, 0, f64b(-f64v(a))) for a in ss]))
        groups.append(_group("abs", [(a, 0, 0, f64b(abs(f64v(a)))) for a in ss]))
        recs = []
        for a in ss:
            got = f32b(np.float64(f64v(a)).astype(np.float32))
            recs.append((a, 0, 0, got))
        groups.append(_group("toBinary32", recs))
    for bits, signed in ((64, True), (32, True)):
        lo, hi = _int_range(bits, signed)
        name = f"toInt_i{bits}"
        groups.append(_group(name, [(a, 0, 0, i64(_to_int(f64v(a), lo, hi))) for a in ss]))
    groups.append(_group("fromInt", [(i64(n), 0, 0, f64b(float(n))) for n in _ints("b64/ints")]))
    groups.append(
        _group(
            "ldexp",
            [
                (a, i64(n), 0, f64b(_ldexp64(f64v(a), n)) if not is_nan64(a) else NAN64)
                for a, n in _ldexp_args(ss, "b64/ldexp", True)
            ],
        )
    )
    groups.append(
        _group("fromScaledInt", [(i64(n), i64(k), 0, f64b(_exact64(n, k))) for n, k in _scaled_args("b64/scaled")])
    )
    # log's split of a positive normal x: c = k (int64 pattern), out = m's pattern; x = m * 2^k.
    recs = []
    sqrth = f64v(0x3FE6A09E667F3BCD)
    for a in ss:
        x = f64v(a)
        if not (x > 0 and math.isfinite(x) and a >= 0x0010000000000000):
            continue
        mant, e = math.frexp(x)
        m, k = (mant * 2.0, e - 1) if mant < sqrth else (mant, e)
        assert math.ldexp(m, k) == x
        recs.append((a, 0, i64(k), f64b(m)))
    groups.append(_group("logSplit", recs))
    # exp64's 2^n from t = SHIFT + n, n in the clamp's range and beyond.
    shift = float.fromhex("0x1.8p52")
    recs = []
    for n in [*range(-1022, 1024, 7), -1010, 1010, 0, 1, -1]:
        t = shift + n
        recs.append((f64b(t), 0, 0, f64b(math.ldexp(1.0, n))))
    groups.append(_group("pow2OfShifted", recs))
    return {"version": 1, "format": "binary64", "groups": groups}


# ---------------------------------------------------------------------------- element evaluators

ELEMENT_CODES = {
    "add": 0,
    "add_alpha": 1,
    "sub": 2,
    "sub_alpha": 3,
    "mul": 4,
    "div": 5,
    "neg": 6,
    "reciprocal": 7,
    "sqrt": 8,
    "rsqrt": 9,
    "abs": 10,
    "pow": 11,
    "relu": 12,
    "where": 13,
    "clamp": 14,
    "clamp_min": 15,
    "clamp_max": 16,
    "threshold_backward": 17,
    "eq": 18,
    "ne": 19,
    "lt": 20,
    "le": 21,
    "gt": 22,
    "ge": 23,
    "f32_to_f64": 24,
    "f64_to_f32": 25,
    "i64_to_f32": 26,
    "bool_to_f32": 27,
    "f32_to_i64": 28,
    "f32_to_i32": 29,
    "f32_to_i16": 30,
    "f32_to_i8": 31,
    "f32_to_u8": 32,
    "f32_to_bool": 33,
}

SMALL32 = [
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x3F800001,
    0x3DCCCCCD, 0xC0400000, 0x4B800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
    0xFFC00000, 0x7FC00001, 0x7F800001, 0xFFBFFFFF, 0x3F000000, 0xBF000000, 0x42FF0000, 0xC3010000,
]  # fmt: skip
SCALARS = [1.0, 2.0, 0.5, -1.0, 0.1, 0.9, 1e-40, -1e-46, 1e39, 3.0000001, 0.0, -0.0, -1.5, math.inf, -math.inf]
POW_EXPONENTS = [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5]
INT_CAST_EDGES32 = [
    127.5, 128.0, -128.5, -129.0, 255.9, 256.0, -0.5, -1.0, 32767.5, 32768.0, -32769.0, 2.0**31, -(2.0**31),
    2.0**31 - 128, 2.0**63, -(2.0**63), 2.0**62 + 2.0**39, 1e30, -1e30, 0.99999994, -0.99999994,
]  # fmt: skip


def _t32(bits: list[int]) -> torch.Tensor:
    return torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in bits], dtype=torch.int32).view(torch.float32)


def _bits_of(t: torch.Tensor) -> list[int]:
    """The output elements as unsigned patterns (64-bit two's complement for integers)."""
    if t.dtype == torch.float32:
        return [int(v) & 0xFFFFFFFF for v in t.view(torch.int32).tolist()]
    if t.dtype == torch.float64:
        return [int(v) & M64 for v in t.view(torch.int64).tolist()]
    if t.dtype == torch.bool:
        return [int(v) for v in t.tolist()]
    return [i64(int(v)) for v in t.tolist()]


def _kernel(name: str, *args: Any, **kwargs: Any) -> list[int]:
    spec = KERNELS[name]
    fast = _bits_of(spec.fast(*args, **kwargs))
    ref = _bits_of(spec.reference(*args, **kwargs))
    assert fast == ref, f"{name}: fast and reference kernels differ"
    return fast


def element_vectors() -> Json:
    rng = random.Random("element")
    vals = SMALL32 + [_rand32(rng) for _ in range(8)]
    pa = [a for a in vals for _ in vals]
    pb = [b for _ in vals for b in vals]
    ones = vals + [f32b(np.float32(v)) for v in INT_CAST_EDGES32] + [f32b(-np.float32(v)) for v in INT_CAST_EDGES32]
    groups: list[Json] = []

    def put(key: str, op: str, recs: list[Record], **extra: Any) -> None:
        groups.append({"op": op, "code": ELEMENT_CODES[key.split(":")[0]], **_group(key, recs), **extra})

    def binary(key: str, name: str, **kw: Any) -> None:
        out = _kernel(name, _t32(pa), _t32(pb), **kw)
        put(key, name, [(a, b, 0, o) for a, b, o in zip(pa, pb, out, strict=True)])

    for key, name in (("add", "aten.add.Tensor"), ("sub", "aten.sub.Tensor"), ("mul", "aten.mul.Tensor"),
                      ("div", "aten.div.Tensor")):  # fmt: skip
        binary(key, name)
    for key, name in (("add_alpha", "aten.add.Tensor"), ("sub_alpha", "aten.sub.Tensor")):
        recs = []
        for alpha in SCALARS[:11]:
            out = _kernel(name, _t32(vals), _t32(vals[::-1]), alpha=alpha)
            recs += [(a, b, f64b(alpha), o) for a, b, o in zip(vals, vals[::-1], out, strict=True)]
        put(key, name, recs)
    # Tensor-Scalar operands: b is the Python float's binary64 pattern; the test rounds it with
    # RepOpsElement.scalarToF32 before calling the operator, as the kernel does.
    for key, name in (("mul", "aten.mul.Tensor"), ("add", "aten.add.Tensor"), ("div", "aten.div.Tensor"),
                      ("lt", "aten.lt.Scalar"), ("ge", "aten.ge.Scalar")):  # fmt: skip
        recs = []
        for s in SCALARS:
            out = _kernel(name, _t32(vals), s)
            recs += [(a, f64b(s), 0, o) for a, o in zip(vals, out, strict=True)]
        put(key + ":scalar", name, recs, scalarB=True)
    for key, name in (("eq", "aten.eq.Tensor"), ("ne", "aten.ne.Tensor"), ("lt", "aten.lt.Tensor"),
                      ("le", "aten.le.Tensor"), ("gt", "aten.gt.Tensor"), ("ge", "aten.ge.Tensor")):  # fmt: skip
        binary(key, name)
    for key, name in (("neg", "aten.neg.default"), ("reciprocal", "aten.reciprocal.default"),
                      ("sqrt", "aten.sqrt.default"), ("rsqrt", "aten.rsqrt.default"), ("abs", "aten.abs.default"),
                      ("relu", "aten.relu.default")):  # fmt: skip
        out = _kernel(name, _t32(ones))
        put(key, name, [(a, 0, 0, o) for a, o in zip(ones, out, strict=True)])
    recs = []
    for e in POW_EXPONENTS:
        out = _kernel("aten.pow.Tensor_Scalar", _t32(ones), e)
        recs += [(a, f64b(e), 0, o) for a, o in zip(ones, out, strict=True)]
    put("pow", "aten.pow.Tensor_Scalar", recs)
    cond = [rng.getrandbits(1) for _ in pa]
    out = _kernel("aten.where.self", torch.tensor(cond, dtype=torch.bool), _t32(pa), _t32(pb))
    put("where", "aten.where.self", [(c, a, b, o) for c, a, b, o in zip(cond, pa, pb, out, strict=True)])
    bounds = [(-1.0, 1.0), (0.0, 6.0), (-0.0, 0.0), (0.1, 0.9), (2.0, -2.0), (-math.inf, 1e39), (1e-40, 1e-45)]
    rc, rmin, rmax = [], [], []
    for lo, hi in bounds:
        for a, o in zip(ones, _kernel("aten.clamp.default", _t32(ones), lo, hi), strict=True):
            rc.append((a, f64b(lo), f64b(hi), o))
        for a, o in zip(ones, _kernel("aten.clamp.default", _t32(ones), lo, None), strict=True):
            rmin.append((a, f64b(lo), 0, o))
        for a, o in zip(ones, _kernel("aten.clamp.default", _t32(ones), None, hi), strict=True):
            rmax.append((a, f64b(hi), 0, o))
    put("clamp", "aten.clamp.default", rc)
    put("clamp_min", "aten.clamp.default", rmin)
    put("clamp_max", "aten.clamp.default", rmax)
    recs = []
    for thr in [0.0, 0.5, -1e-45, 1e39]:
        out = _kernel("aten.threshold_backward.default", _t32(pb), _t32(pa), thr)
        recs += [(g, x, f64b(thr), o) for g, x, o in zip(pb, pa, out, strict=True)]
    put("threshold_backward", "aten.threshold_backward.default", recs)
    cp = "aten._to_copy.default"
    out = _kernel(cp, _t32(ones), dtype=torch.float64)
    put("f32_to_f64", cp, [(a, 0, 0, o) for a, o in zip(ones, out, strict=True)])
    e64 = singles(EDGE64, _rand64, "element/f64")
    t64 = torch.tensor([b - (1 << 64) if b >= 1 << 63 else b for b in e64], dtype=torch.int64).view(torch.float64)
    out = _kernel(cp, t64, dtype=torch.float32)
    put("f64_to_f32", cp, [(a, 0, 0, o) for a, o in zip(e64, out, strict=True)])
    ints = _ints("element/ints")
    out = _kernel(cp, torch.tensor(ints, dtype=torch.int64), dtype=torch.float32)
    put("i64_to_f32", cp, [(i64(n), 0, 0, o) for n, o in zip(ints, out, strict=True)])
    out = _kernel(cp, torch.tensor([False, True]), dtype=torch.float32)
    put("bool_to_f32", cp, [(0, 0, 0, out[0]), (1, 0, 0, out[1])])
    for key, dt in (("f32_to_i64", torch.int64), ("f32_to_i32", torch.int32), ("f32_to_i16", torch.int16),
                    ("f32_to_i8", torch.int8), ("f32_to_u8", torch.uint8), ("f32_to_bool", torch.bool)):  # fmt: skip
        out = _kernel(cp, _t32(ones), dtype=dt)
        mask = {torch.int32: 32, torch.int16: 16, torch.int8: 8}.get(dt, 64)
        put(key, cp, [(a, 0, 0, o & ((1 << mask) - 1)) for a, o in zip(ones, out, strict=True)])
    return {"version": 1, "groups": groups}


MATHFN = ("exp", "log", "tanh", "sigmoid", "erf", "gelu", "gelu_tanh")


def mathfn_vectors() -> Json:
    """Whole transcendental functions (the kernels' outputs) for MathFnSequences.sol, the test-side
    check that every step of their binary64 sequences is a library function."""
    rng = random.Random("mathfn")
    edges = [0x42B17218, 0x42B17217, 0xC2CFF1B4, 0xC2CFF1B5, 0x41200000, 0xC1200000, 0x41A00000]
    edges += [0x3F400000, 0xBF400000, 0x3F3FFFFF, 0x3F870A3D, 0x412A0000, 0xC1700000, 0xC1700001, 0xC1100000]
    vals = SMALL32 + edges + [(rng.randrange(0x3000, 0x4300) << 16) | rng.getrandbits(16) for _ in range(150)]
    vals += [v | 0x80000000 for v in vals[-150:]]
    groups = []
    for name in MATHFN:
        if name.startswith("gelu"):
            out = _kernel("aten.gelu.default", _t32(vals), approximate="tanh" if name == "gelu_tanh" else "none")
        else:
            out = _kernel(f"aten.{name}.default", _t32(vals))
        groups.append(_group(name, [(a, 0, 0, o) for a, o in zip(vals, out, strict=True)]))
    return {"version": 1, "groups": groups}


def write_all(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in (
        ("ieee_binary32.json", binary32_vectors()),
        ("ieee_binary64.json", binary64_vectors()),
        ("ieee_element.json", element_vectors()),
        ("ieee_mathfn.json", mathfn_vectors()),
    ):
        path = out_dir / name
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in write_all(out):
        print(path)


if __name__ == "__main__":
    main()
