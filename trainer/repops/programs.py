"""The transcendental functions of RepOps as straight-line programs of binary64 steps (data).

docs/repops/elementwise.md, "Transcendental functions", defines each of exp, log, log1p, rsqrt, tanh,
sigmoid, erf, gelu (approximate='none') and gelu (approximate='tanh') as a fixed sequence of binary64
operations on `x = f64(input)` ending in one rounding to fp32. This module writes each sequence down
once, as data: a `Program` is a list of `Step`s, each an opcode and up to three operand references into
the *tape* `[x, constants..., step 0, step 1, ...]`. Branches of the spec (erf's |x| < 0.75, log1p's
u == 1, log's x <= 0, the NaN and infinity specials) are `SELECT`s over both branches, so a program has
no control flow, and every opcode is total: it gives a value on every operand, NaN, infinities, zeros
and negatives included (the log split is guarded by a select that feeds it 1.0 where the spec's
specials take over, and is defined on every other pattern too).

The same programs are the contract side's: scripts/trace_programs.py writes them into
contracts/src/lib/TracePrograms.sol, and TraceReferee (docs/game.md 2.9) recomputes one step of a
posted trace from its operands. `run` is the reference evaluator: plain Python floats (IEEE binary64,
round to nearest even; `math.sqrt` is correctly rounded) on bit patterns, with Binary64.sol's rules:
every NaN an arithmetic step produces is the canonical `0x7FF8000000000000`, `copysign` moves bits.
tests/repops/test_programs.py checks every program against the scalar references and the tensor
kernels of `trainer.repops.mathfn`, bit for bit.

Opcodes (a, b, c the operands' bit patterns; results are binary64 patterns unless said):

| code | name | result |
| --- | --- | --- |
| 0-3 | ADD SUB MUL DIV | RN(a + b), RN(a - b), RN(a * b), RN(a / b) |
| 4 | SQRT | RN(sqrt(a)) (sqrt(-0) = -0, negative: NaN) |
| 5, 6 | NEG ABS | sign flipped / cleared (NaN: canonical) |
| 7 | COPYSIGN | a's magnitude bits with b's sign bit |
| 8, 9 | MIN MAX | RepOps' `b < a ? b : a` / `a < b ? b : a` (NaN a kept) |
| 10-12 | LT LE EQ | 1 if a < b / a <= b / a == b (IEEE; NaN: 0), else 0 (the patterns 1 and 0) |
| 13 | SELECT | b if a != 0 else c (a the condition) |
| 14 | POW2 | `(a + 1023 - 0x4338000000000000) << 52` mod 2^64: 2^n from t = 0x1.8p52 + n |
| 15, 16 | LOGK LOGM | k as binary64 and m of the log split a = m * 2^k (a positive normal); otherwise +0 and a |
| 17 | F32 | the fp32 pattern of RN32(a) (NaN: 0x7FC00000), zero-extended |
"""

from __future__ import annotations

import enum
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "FUNCTIONS",
    "NAN64",
    "PROGRAMS",
    "Op",
    "Program",
    "Step",
    "apply",
    "f32_to_f64_bits",
    "first_wrong_step",
    "pack",
    "run",
    "unpack",
]

MASK64 = (1 << 64) - 1
SIGN64 = 1 << 63
INF64 = 0x7FF0000000000000
NAN64 = 0x7FF8000000000000  # Binary64.sol's canonical NaN
NAN32 = 0x7FC00000
MIN_NORMAL64 = 0x0010000000000000
SHIFT_BITS = 0x4338000000000000  # bits(0x1.8p52)
SQRTH_BITS = 0x3FE6A09E667F3BCD  # bits(RN64(sqrt(1/2)))
_F32_OVERFLOW = float.fromhex("0x1.ffffffp127")  # |v| >= this rounds to inf


class Op(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    SQRT = 4
    NEG = 5
    ABS = 6
    COPYSIGN = 7
    MIN = 8
    MAX = 9
    LT = 10
    LE = 11
    EQ = 12
    SELECT = 13
    POW2 = 14
    LOGK = 15
    LOGM = 16
    F32 = 17


ARITY: Mapping[Op, int] = MappingProxyType(
    {
        **{op: 2 for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.COPYSIGN, Op.MIN, Op.MAX, Op.LT, Op.LE, Op.EQ)},
        **{op: 1 for op in (Op.SQRT, Op.NEG, Op.ABS, Op.POW2, Op.LOGK, Op.LOGM, Op.F32)},
        Op.SELECT: 3,
    }
)

# ---- binary64 on bit patterns ------------------------------------------------------------------


def _f(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", b & MASK64))[0])


def _b(v: float) -> int:
    if v != v:
        return NAN64
    return int(struct.unpack("<Q", struct.pack("<d", v))[0])


def _isnan(b: int) -> bool:
    return b & ~SIGN64 & MASK64 > INF64


def _div(a: int, b: int) -> int:
    fa, fb = _f(a), _f(b)
    if fb == 0.0:  # Python raises here; IEEE: x / +-0 = +-inf by the signs, 0 / 0 = NaN
        if fa != fa or fa == 0.0:
            return NAN64
        return ((a ^ b) & SIGN64) | INF64
    return _b(fa / fb)


def _sqrt(a: int) -> int:
    fa = _f(a)
    if fa != fa or fa < 0.0:
        return NAN64
    return _b(math.sqrt(fa))


def _log_split(a: int) -> tuple[int, int]:
    """(k, m) with a = m * 2^k, m in [SQRTH, 2*SQRTH), for a positive normal pattern; (0, a) otherwise."""
    if a < MIN_NORMAL64 or a >= INF64:
        return 0, a
    k = (a - SQRTH_BITS) >> 52  # arithmetic: floor
    return k, a - (k << 52)


def _to_f32(a: int) -> int:
    if _isnan(a):
        return NAN32
    v = _f(a)
    if abs(v) >= _F32_OVERFLOW:
        return (0x80000000 if v < 0 else 0) | 0x7F800000
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


def f32_to_f64_bits(x_bits: int) -> int:
    """The binary64 pattern of the fp32 value with pattern `x_bits` (exact; NaN: canonical)."""
    x_bits &= 0xFFFFFFFF
    if x_bits & 0x7FFFFFFF > 0x7F800000:
        return NAN64
    return _b(float(struct.unpack("<f", struct.pack("<I", x_bits))[0]))


def apply(op: Op, a: int, b: int = 0, c: int = 0) -> int:
    """One step: opcode `op` on operand patterns a, b, c (SELECT: a the condition)."""
    if op == Op.ADD:
        return _b(_f(a) + _f(b))
    if op == Op.SUB:
        return _b(_f(a) - _f(b))
    if op == Op.MUL:
        return _b(_f(a) * _f(b))
    if op == Op.DIV:
        return _div(a, b)
    if op == Op.SQRT:
        return _sqrt(a)
    if op == Op.NEG:
        return NAN64 if _isnan(a) else a ^ SIGN64
    if op == Op.ABS:
        return NAN64 if _isnan(a) else a & ~SIGN64 & MASK64
    if op == Op.COPYSIGN:
        return (a & ~SIGN64 & MASK64) | (b & SIGN64)
    if op == Op.MIN:
        return b if _f(b) < _f(a) else a
    if op == Op.MAX:
        return b if _f(a) < _f(b) else a
    if op == Op.LT:
        return int(_f(a) < _f(b))
    if op == Op.LE:
        return int(_f(a) <= _f(b))
    if op == Op.EQ:
        return int(_f(a) == _f(b))
    if op == Op.SELECT:
        return b if a != 0 else c
    if op == Op.POW2:
        return ((a + 1023 - SHIFT_BITS) << 52) & MASK64
    if op == Op.LOGK:
        return _b(float(_log_split(a)[0]))
    if op == Op.LOGM:
        return _log_split(a)[1]
    if op == Op.F32:
        return _to_f32(a)
    raise ValueError(f"unknown opcode {op}")


# ---- programs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One step: `op` on the tape entries `args` (SELECT: condition, then, else)."""

    op: Op
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Program:
    """A function's straight-line program. Tape index 0 is x, 1 .. len(constants) the constants (binary64
    patterns), then one entry per step; the last step is the F32 rounding, its value the fp32 output."""

    name: str
    fn: int  # the id TraceReferee and TracePrograms.sol use
    constants: tuple[int, ...]
    steps: tuple[Step, ...]

    def encode(self) -> bytes:
        """4 bytes per step: opcode, then the three operand tape indices (unused ones 0)."""
        out = bytearray()
        for s in self.steps:
            args = list(s.args) + [0] * (3 - len(s.args))
            out += bytes([int(s.op), *args])
        return bytes(out)

    def encode_constants(self) -> bytes:
        """8 bytes per constant, big endian."""
        return b"".join(c.to_bytes(8, "big") for c in self.constants)


class _Ref:
    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind  # "x", "c" (constant) or "s" (step)
        self.index = index


def _h(s: str) -> int:
    return _b(float.fromhex(s))


# The spec's constants (docs/repops/elementwise.md), as binary64 patterns.
ONE, TWO, HALF, ZERO = _b(1.0), _b(2.0), _b(0.5), _b(0.0)
INF, NINF = INF64, INF64 | SIGN64
SHIFT = SHIFT_BITS
INVLN2 = _h("0x1.71547652b82fep+0")
LN2 = _h("0x1.62e42fefa39efp-1")
NLN2 = LN2 | SIGN64
EXP_LO, EXP_HI = _b(-700.0), _b(700.0)
EXP_G = tuple(
    _h(s)
    for s in (
        "0x1.fffffffffddd0p-2",
        "0x1.555555555395ep-3",
        "0x1.55555566c5f5fp-5",
        "0x1.1111111cf4a65p-7",
        "0x1.6c16687654889p-10",
        "0x1.a019aa4b8d4b2p-13",
        "0x1.a13c5c961953ap-16",
        "0x1.72cbc42a87f4ep-19",
    )
)
SQRTH = SQRTH_BITS
LOG_H = tuple(
    _h(s)
    for s in (
        "0x1.55555555652efp-1",
        "0x1.999998c85088fp-2",
        "0x1.249325e779261p-2",
        "0x1.c679e5956f3b3p-3",
        "0x1.8c9e000149afdp-3",
    )
)
ERF_SPLIT, ERF_YMAX = _b(0.75), _b(10.625)
ERF_S = tuple(
    _h(s)
    for s in (
        "0x1.20dd75042946dp+0",
        "-0x1.812746aea7f01p-2",
        "0x1.ce2f20b5fc719p-4",
        "-0x1.b82caeacb9445p-6",
        "0x1.565607f1c675ep-8",
        "-0x1.bf7c3d8f275aap-11",
        "0x1.edb7e28907697p-14",
        "-0x1.87b01c2e69041p-17",
    )
)
ERFC_P = tuple(
    _h(s)
    for s in (
        "0x1.0000037cc608cp+0",
        "0x1.bb2ab740bc900p+0",
        "0x1.7634af3cc425fp+0",
        "0x1.7e5ba632ac4dep-1",
        "0x1.f04e8dbe12989p-3",
        "0x1.87e67031abac2p-5",
        "0x1.338ee4637e6d1p-8",
    )
)
ERFC_Q = tuple(
    _h(s)
    for s in (
        "0x1p+0",
        "0x1.6e04282bf90ecp+1",
        "0x1.d81b4d4811c2bp+1",
        "0x1.6694c49394f5bp+1",
        "0x1.5db5ef9e2590dp+0",
        "0x1.bc195d9a0e060p-2",
        "0x1.5b4fffdfc8469p-4",
        "0x1.1090faf974b11p-7",
    )
)
GELU_S = tuple(_b(_f(c) * 0.5) for c in ERF_S)  # halving is exact (all normal)
GELU_P = tuple(_b(_f(c) * 0.5) for c in ERFC_P)
GELU_XMIN = _b(-15.0)
GELU_K0 = _h("0x1.9884533d43651p+0")
GELU_K1 = _h("0x1.2444f2a4d8b4bp-4")
TANH_LO, TANH_HI = _b(-10.0), _b(10.0)


class _Builder:
    """Collects a program's steps with symbolic references; `build` numbers the tape."""

    def __init__(self, name: str, fn: int) -> None:
        self.name = name
        self.fn = fn
        self.constants: list[int] = []
        self.steps: list[tuple[Op, tuple[_Ref, ...]]] = []
        self.x = _Ref("x", 0)

    def c(self, bits: int) -> _Ref:
        if bits not in self.constants:
            self.constants.append(bits)
        return _Ref("c", self.constants.index(bits))

    def _arg(self, a: _Ref | int) -> _Ref:
        return a if isinstance(a, _Ref) else self.c(a)

    def op(self, op: Op, *args: _Ref | int) -> _Ref:
        if len(args) != ARITY[op]:
            raise ValueError(f"{op.name} takes {ARITY[op]} operands")
        self.steps.append((op, tuple(self._arg(a) for a in args)))
        return _Ref("s", len(self.steps) - 1)

    # the spec's building blocks -------------------------------------------------------------

    def horner(self, r: _Ref, coefs: Sequence[int]) -> _Ref:
        """horner(r; c0..cd): p = cd; p = p*r + c(d-1); ...; p = p*r + c0."""
        p: _Ref | int = coefs[-1]
        for c in reversed(coefs[:-1]):
            p = self.op(Op.ADD, self.op(Op.MUL, p, r), c)
        assert isinstance(p, _Ref)
        return p

    def exp_reduce(self, v: _Ref) -> tuple[_Ref, _Ref, _Ref]:
        """exp64's reduction of v: (r, q0 = horner(r; G) * r + 1, t = SHIFT + n)."""
        v = self.op(Op.MIN, self.op(Op.MAX, v, EXP_LO), EXP_HI)
        t = self.op(Op.ADD, self.op(Op.MUL, v, INVLN2), SHIFT)
        nf = self.op(Op.SUB, t, SHIFT)
        r = self.op(Op.ADD, self.op(Op.MUL, nf, NLN2), v)
        q0 = self.op(Op.ADD, self.op(Op.MUL, self.horner(r, EXP_G), r), ONE)
        return r, q0, t

    def exp64(self, v: _Ref) -> _Ref:
        r, q0, t = self.exp_reduce(v)
        p = self.op(Op.ADD, self.op(Op.MUL, q0, r), ONE)
        return self.op(Op.MUL, p, self.op(Op.POW2, t))

    def log64(self, u: _Ref) -> _Ref:
        """k * LN2 + lm for u positive normal (its split), the spec's log core without rounding."""
        k = self.op(Op.LOGK, u)
        m = self.op(Op.LOGM, u)
        f = self.op(Op.SUB, m, ONE)
        s = self.op(Op.DIV, f, self.op(Op.ADD, f, TWO))
        z = self.op(Op.MUL, s, s)
        lm = self.op(Op.MUL, self.op(Op.ADD, self.op(Op.MUL, self.horner(z, LOG_H), z), TWO), s)
        return self.op(Op.ADD, self.op(Op.MUL, k, LN2), lm)

    def positive_finite(self, u: _Ref) -> tuple[_Ref, _Ref, _Ref]:
        """(u > 0, u < inf, u where 0 < u < inf else 1.0): the log split's guarded argument."""
        pos = self.op(Op.LT, ZERO, u)
        fin = self.op(Op.LT, u, INF)
        safe = self.op(Op.SELECT, fin, self.op(Op.SELECT, pos, u, ONE), ONE)
        return pos, fin, safe

    def erfc_big(self, y: _Ref, pcoefs: Sequence[int]) -> _Ref:
        """horner(y; P) / horner(y; Q0..Q7) * exp64(-(y * y))."""
        e = self.exp64(self.op(Op.NEG, self.op(Op.MUL, y, y)))
        q = self.op(Op.DIV, self.horner(y, pcoefs), self.horner(y, ERFC_Q))
        return self.op(Op.MUL, q, e)

    def build(self, out: _Ref) -> Program:
        self.op(Op.F32, out)
        nc = len(self.constants)

        def index(r: _Ref) -> int:
            return 0 if r.kind == "x" else 1 + r.index if r.kind == "c" else 1 + nc + r.index

        steps = tuple(Step(op, tuple(index(a) for a in args)) for op, args in self.steps)
        if 1 + nc + len(steps) > 256:
            raise ValueError(f"{self.name}: the tape does not fit one-byte references")
        for i, s in enumerate(steps):
            if any(a >= 1 + nc + i for a in s.args):
                raise ValueError(f"{self.name}: step {i} reads a later step")
        return Program(self.name, self.fn, tuple(self.constants), steps)


def _exp(b: _Builder) -> _Ref:
    # exp(x) = f32(exp64(x)); NaN flows through as NaN, +-inf are clamped to +-700.
    return b.exp64(b.x)


def _log(b: _Builder) -> _Ref:
    pos, fin, safe = b.positive_finite(b.x)
    y = b.log64(safe)
    special = b.op(Op.SELECT, b.op(Op.EQ, b.x, ZERO), NINF, NAN64)  # +-0: -inf; x < 0, NaN: NaN
    return b.op(Op.SELECT, pos, b.op(Op.SELECT, fin, y, INF), special)  # +inf: +inf


def _log1p(b: _Builder) -> _Ref:
    u = b.op(Op.ADD, ONE, b.x)
    pos, fin, safe = b.positive_finite(u)  # u > 0 iff x > -1 (fp32 x)
    core = b.op(Op.MUL, b.log64(safe), b.op(Op.DIV, b.x, b.op(Op.SUB, u, ONE)))
    y = b.op(Op.SELECT, b.op(Op.EQ, u, ONE), b.x, core)
    special = b.op(Op.SELECT, b.op(Op.EQ, u, ZERO), NINF, NAN64)  # x = -1: -inf; x < -1, NaN: NaN
    return b.op(Op.SELECT, pos, b.op(Op.SELECT, fin, y, INF), special)  # +inf: +inf


def _rsqrt(b: _Builder) -> _Ref:
    # sqrt(+-0) = +-0 and 1 / +-0 = +-inf, sqrt(+inf) = +inf, sqrt(x < 0) = NaN: no special case.
    return b.op(Op.DIV, ONE, b.op(Op.SQRT, b.x))


def _tanh(b: _Builder) -> _Ref:
    v = b.op(Op.MUL, TWO, b.op(Op.MIN, b.op(Op.MAX, b.x, TANH_LO), TANH_HI))
    r, q0, t = b.exp_reduce(v)
    q = b.op(Op.MUL, q0, r)
    s = b.op(Op.POW2, t)
    em1 = b.op(Op.ADD, b.op(Op.MUL, s, q), b.op(Op.SUB, s, ONE))
    y = b.op(Op.DIV, em1, b.op(Op.ADD, em1, TWO))
    return b.op(Op.COPYSIGN, y, b.x)


def _sigmoid(b: _Builder) -> _Ref:
    e = b.exp64(b.op(Op.NEG, b.x))
    return b.op(Op.DIV, ONE, b.op(Op.ADD, ONE, e))


def _erf(b: _Builder) -> _Ref:
    ax = b.op(Op.ABS, b.x)
    small = b.op(Op.MUL, b.x, b.horner(b.op(Op.MUL, b.x, b.x), ERF_S))
    y = b.op(Op.MIN, ax, ERF_YMAX)
    big = b.op(Op.COPYSIGN, b.op(Op.SUB, ONE, b.erfc_big(y, ERFC_P)), b.x)
    return b.op(Op.SELECT, b.op(Op.LT, ax, ERF_SPLIT), small, big)


def _gelu(b: _Builder) -> _Ref:
    xc = b.op(Op.MAX, b.x, GELU_XMIN)
    y = b.op(Op.MUL, xc, SQRTH)
    ay = b.op(Op.ABS, y)
    small = b.op(Op.ADD, b.op(Op.MUL, y, b.horner(b.op(Op.MUL, y, y), GELU_S)), HALF)
    c = b.erfc_big(b.op(Op.MIN, ay, ERF_YMAX), GELU_P)
    big = b.op(Op.SELECT, b.op(Op.LT, y, ZERO), c, b.op(Op.SUB, ONE, c))
    phi = b.op(Op.SELECT, b.op(Op.LT, ay, ERF_SPLIT), small, big)
    return b.op(Op.MUL, xc, phi)


def _gelu_tanh(b: _Builder) -> _Ref:
    xc = b.op(Op.MAX, b.x, GELU_XMIN)
    a = b.op(Op.MUL, b.op(Op.ADD, b.op(Op.MUL, b.op(Op.MUL, xc, xc), GELU_K1), GELU_K0), xc)
    e = b.exp64(b.op(Op.NEG, a))
    return b.op(Op.DIV, xc, b.op(Op.ADD, ONE, e))


# name -> id; the ids are TraceReferee's `fn`.
FUNCTIONS: Mapping[str, int] = MappingProxyType(
    {"exp": 0, "log": 1, "log1p": 2, "rsqrt": 3, "tanh": 4, "sigmoid": 5, "erf": 6, "gelu": 7, "gelu_tanh": 8}
)
_BODIES = {
    "exp": _exp,
    "log": _log,
    "log1p": _log1p,
    "rsqrt": _rsqrt,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "erf": _erf,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
}


def _program(name: str) -> Program:
    b = _Builder(name, FUNCTIONS[name])
    return b.build(_BODIES[name](b))


PROGRAMS: Mapping[str, Program] = MappingProxyType({name: _program(name) for name in FUNCTIONS})


def run(fn: str | int, x_f32_bits: int, overrides: Mapping[int, int] | None = None) -> list[int]:
    """The full trace of `fn` on the fp32 pattern `x_f32_bits`: one binary64 pattern per step, the last
    the fp32 output pattern. `overrides` (step -> pattern) replaces those steps' values (a liar's trace,
    the steps after an override evaluated from it)."""
    prog = PROGRAMS[fn] if isinstance(fn, str) else next(p for p in PROGRAMS.values() if p.fn == fn)
    tape = [f32_to_f64_bits(x_f32_bits), *prog.constants]
    base = len(tape)
    for i, s in enumerate(prog.steps):
        if overrides is not None and i in overrides:
            tape.append(overrides[i] & MASK64)
            continue
        a = [tape[j] for j in s.args]
        tape.append(apply(s.op, *a))
    return tape[base:]


def pack(trace: Sequence[int]) -> bytes:
    """A trace as TraceReferee takes it: 8 bytes per step, big endian."""
    return b"".join((v & MASK64).to_bytes(8, "big") for v in trace)


def unpack(data: bytes) -> list[int]:
    """The inverse of `pack` (a trailing partial word is refused)."""
    if len(data) % 8:
        raise ValueError(f"a packed trace is 8 bytes per step, got {len(data)} bytes")
    return [int.from_bytes(data[i : i + 8], "big") for i in range(0, len(data), 8)]


def first_wrong_step(fn: str | int, x_f32_bits: int, posted: Sequence[int]) -> int | None:
    """The first step where `posted` leaves the true trace of `fn` on x (the step an honest challenger names:
    its operands are the true values, so its recomputation gives the true value, not the posted one); None
    when `posted` is the true trace."""
    true = run(fn, x_f32_bits)
    if len(posted) != len(true):
        raise ValueError(f"the program has {len(true)} steps, the trace {len(posted)}")
    return next((i for i, (a, b) in enumerate(zip(true, posted, strict=True)) if a != b), None)
