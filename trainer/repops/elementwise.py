"""Elementwise ATen operators of the captured training steps, as RepOps kernels.

Specified in docs/repops/elementwise.md. In short:

* fp32 arithmetic (add, sub, mul, div, neg, reciprocal, sqrt) is the IEEE-754 operation,
  correctly rounded, one rounding per operation, never fused; a Python scalar operand is
  first rounded to fp32 (RNE); `alpha` != 1 is a separate multiply (alpha*other rounded to
  fp32, then the add/sub), unlike torch's CPU kernel, which fuses it.
* exp, log, erf, tanh, sigmoid, rsqrt and gelu are `trainer.repops.mathfn`'s own algorithms.
* Integer and bool operands follow torch's type promotion (`torch.result_type`); integer
  arithmetic is exact two's-complement arithmetic (wrapping), comparisons are exact.
* Every NaN an arithmetic operation or float conversion returns is canonical (0x7FC00000 in
  fp32); selections and copies (where, relu, clamp, threshold_backward, clone, alias, copies
  to the same dtype) move bits unchanged.

`OPS` maps the ATen overload name to an `OpSpec` whose `fast` kernel is built from torch
operations that are exact or IEEE-correctly-rounded on every device, and whose `reference`
is a scalar loop over Python values. Both take the ATen schema's arguments (positional as
in the schema, then keyword-only ones) and give the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from trainer.repops import mathfn as M
from trainer.repops._spec import OpSpec, UnsupportedOpError

__all__ = ["OPS"]

Scalar = bool | int | float
Operand = Tensor | Scalar

_F32 = torch.float32
_F64 = torch.float64
_NAN = float("nan")
_INF = float("inf")
_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
_SUPPORTED = (_F32, _F64, torch.bool, *_INT_DTYPES)

_DOC = "docs/repops/elementwise.md"
SEC_ARITH = "Arithmetic"
SEC_MATH = "Transcendental functions"
SEC_CMP = "Comparisons and logic"
SEC_SELECT = "Selections"
SEC_CONVERT = "Conversions"
SEC_CREATE = "Creation and copies"


# =============================================================================================
# shared helpers
# =============================================================================================


def _dtype_of(v: Operand) -> torch.dtype:
    if isinstance(v, Tensor):
        return v.dtype
    if isinstance(v, bool):
        return torch.bool
    if isinstance(v, int):
        return torch.int64
    return _F32


def _result_type(*args: Operand) -> torch.dtype:
    """torch's type promotion (a Python scalar does not widen a tensor of its kind)."""
    if len(args) == 1:
        return _dtype_of(args[0])
    out = torch.result_type(args[0], args[1])  # type: ignore[arg-type]
    for a in args[2:]:
        out = torch.promote_types(out, _dtype_of(a))
    return out


def _check_dtype(dt: torch.dtype, op: str) -> None:
    if dt not in _SUPPORTED:
        raise UnsupportedOpError(f"{op}: dtype {dt} has no RepOps definition (fp32, float64, ints and bool do)")


def _device_of(*args: Operand) -> torch.device:
    for a in args:
        if isinstance(a, Tensor):
            return a.device
    return torch.device("cpu")


def _round_scalar(v: Scalar, dt: torch.dtype) -> Scalar:
    """A Python scalar converted to dtype `dt` as a Python value (fp32: RNE)."""
    if dt == _F32:
        if isinstance(v, bool):
            return 1.0 if v else 0.0
        if isinstance(v, int):
            return _int_to_f32(v)
        return M.f32(float(v))
    if dt == _F64:
        return float(v)
    if dt == torch.bool:
        return bool(v)
    if isinstance(v, float):
        if v != math.floor(v):
            raise UnsupportedOpError(f"a non-integral scalar {v!r} cannot be combined as {dt}")
        v = int(v)
    return _wrap_int(int(v), dt)


def _int_to_f32(n: int) -> float:
    """An integer rounded to the nearest fp32 value (RNE), without double rounding."""
    m = abs(n)
    e = m.bit_length()
    if e <= 24:
        return float(n)
    shift = e - 24
    q, rem = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and q & 1):
        q += 1
    v = math.ldexp(float(q), shift)
    if v >= 2.0**128:
        v = _INF
    return -v if n < 0 else v


def _wrap_int(n: int, dt: torch.dtype) -> int:
    bits = torch.iinfo(dt).bits
    if dt == torch.uint8:
        return n % 256
    n %= 1 << bits
    return n - (1 << bits) if n >= 1 << (bits - 1) else n


def _as_operand(v: Operand, dt: torch.dtype, device: torch.device) -> Tensor | Scalar:
    """Convert an operand to dtype `dt` for a torch op: tensors with `_convert_fast`;
    Python scalars rounded to `dt`, and on a non-CPU device made a 0-dim device tensor (CUDA
    divides by a CPU scalar as a multiply by its reciprocal; by a device tensor it divides)."""
    if isinstance(v, Tensor):
        return v if v.dtype == dt else _convert_fast(v, dt)
    s = _round_scalar(v, dt)
    if device.type != "cpu":
        return torch.full((), s, dtype=dt, device=device)
    return s


# ---- conversions (fast) -----------------------------------------------------------------------


def _convert_fast(x: Tensor, dt: torch.dtype) -> Tensor:
    src = x.dtype
    _check_dtype(src, "conversion")
    _check_dtype(dt, "conversion")
    if src == dt:
        return x.clone()
    if dt == torch.bool:
        return x != 0
    if dt.is_floating_point:
        y = x.to(dt)
        return M.canonicalize_nan_(y) if src.is_floating_point else y
    if src.is_floating_point:
        info = torch.iinfo(dt)
        over = x >= float(info.max) + 1.0  # powers of two (256 for uint8): exact in fp32
        under = x < float(info.min)
        bad = over | under | torch.isnan(x)
        y = torch.where(bad, torch.zeros((), dtype=src, device=x.device), x).to(dt)  # truncation toward zero
        y = torch.where(over, torch.full((), info.max, dtype=dt, device=x.device), y)
        return torch.where(under, torch.full((), info.min, dtype=dt, device=x.device), y)
    return x.to(dt)  # integers and bool: two's-complement wrap


# ---- reference helpers (scalar loops) ----------------------------------------------------------


def _flat(t: Tensor, shape: Sequence[int]) -> list[Any]:
    return t.detach().cpu().broadcast_to(tuple(shape)).reshape(-1).tolist()


def _flat_bits(t: Tensor, shape: Sequence[int]) -> list[int]:
    """fp32 or float64 tensor -> its bit patterns as unsigned ints."""
    if t.dtype == _F32:
        b = t.detach().cpu().broadcast_to(tuple(shape)).contiguous().view(torch.int32).reshape(-1).tolist()
        return [v & 0xFFFFFFFF for v in b]
    b = t.detach().cpu().broadcast_to(tuple(shape)).contiguous().view(torch.int64).reshape(-1).tolist()
    return [v & 0xFFFFFFFFFFFFFFFF for v in b]


def _f64_bits(v: float) -> int:
    if v != v:
        return 0x7FF8000000000000
    return int(np.array(v, dtype=np.float64).view(np.uint64))


def _tensor_from_bits(bits: list[int], dt: torch.dtype, shape: Sequence[int], device: torch.device) -> Tensor:
    if dt == _F32:
        arr = np.array(bits, dtype=np.uint32).view(np.float32)
    else:
        arr = np.array(bits, dtype=np.uint64).view(np.float64)
    return torch.from_numpy(arr.copy()).reshape(tuple(shape)).to(device)


def _tensor_from_values(vals: list[Any], dt: torch.dtype, shape: Sequence[int], device: torch.device) -> Tensor:
    """Build a tensor from Python values that are already exact values of dtype `dt`
    (floats: canonical NaN)."""
    if dt == _F32:
        return _tensor_from_bits([M.f32_bits(v) for v in vals], dt, shape, device)
    if dt == _F64:
        return _tensor_from_bits([_f64_bits(v) for v in vals], dt, shape, device)
    return torch.tensor(vals, dtype=dt).reshape(tuple(shape)).to(device)


def _ref_convert_value(v: Any, src: torch.dtype, dt: torch.dtype) -> Any:
    """One value converted from dtype src to dt (docs: Conversions)."""
    if dt == torch.bool:
        return bool(v != 0) if v == v else True
    if dt == _F32:
        if src == torch.bool or not src.is_floating_point:
            return _int_to_f32(int(v))
        return M.f32(v)
    if dt == _F64:
        return float(v) if v == v else _NAN
    # integer target
    if src.is_floating_point:
        if v != v:
            return 0
        info = torch.iinfo(dt)
        if v >= float(info.max) + 1.0:
            return info.max
        if v < float(info.min):
            return info.min
        return int(v)  # truncation toward zero
    return _wrap_int(int(v), dt)


def _ref_operand(v: Operand, dt: torch.dtype, shape: Sequence[int]) -> list[Any]:
    """Operand values converted to dtype dt, broadcast to shape, as Python values."""
    if isinstance(v, Tensor):
        vals = _flat(v, shape)
        if v.dtype != dt:
            vals = [_ref_convert_value(a, v.dtype, dt) for a in vals]
        return vals
    s = _round_scalar(v, dt)
    return [s] * math.prod(shape)


def _bshape(*args: Operand) -> list[int]:
    return list(torch.broadcast_shapes(*[tuple(a.shape) for a in args if isinstance(a, Tensor)]))


# =============================================================================================
# arithmetic: add, sub, mul, div, neg, reciprocal, sqrt, pow
# =============================================================================================


def _wrap(n: int, dt: torch.dtype) -> int:
    return _wrap_int(n, dt)


def _ref_float_binop(name: str, a: float, b: float, dt: torch.dtype = _F32) -> float:
    """The IEEE operation on values of dtype dt (fp32 or float64). For fp32 it is computed in
    binary64 (exact enough: 53 >= 2*24+2 bits) and rounded once to fp32."""
    rnd: Callable[[float], float] = M.f32 if dt == _F32 else float
    if name == "add":
        return rnd(a + b)
    if name == "sub":
        return rnd(a - b)
    if name == "mul":
        return rnd(a * b)
    # div
    if b == 0.0:
        if a != a or a == 0.0:
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)
    return rnd(a / b)


def _ref_int_binop(name: str, a: int, b: int, dt: torch.dtype) -> int:
    if name == "add":
        return _wrap(a + b, dt)
    if name == "sub":
        return _wrap(a - b, dt)
    return _wrap(a * b, dt)


def _alpha_ok(alpha: Scalar, dt: torch.dtype, op: str) -> None:
    if dt == torch.bool and (alpha != 1 or op == "aten.sub.Tensor"):
        raise UnsupportedOpError(f"{op}: bool operands (alpha {alpha!r})")
    if not dt.is_floating_point and isinstance(alpha, float) and alpha != math.floor(alpha):
        raise UnsupportedOpError(f"{op}: a non-integral alpha {alpha!r} with integer operands")


def _fast_addsub(name: str, self: Operand, other: Operand, alpha: Scalar) -> Tensor:
    dt = _result_type(self, other)
    _check_dtype(dt, f"aten.{name}.Tensor")
    _alpha_ok(alpha, dt, f"aten.{name}.Tensor")
    dev = _device_of(self, other)
    a = _as_operand(self, dt, dev)
    b = _as_operand(other, dt, dev)
    if alpha != 1:
        if not isinstance(b, Tensor):
            b = torch.full((), b, dtype=dt, device=dev)
        b = torch.mul(b, _as_operand(alpha, dt, dev))
        if dt.is_floating_point:
            M.canonicalize_nan_(b)
    if dt == torch.bool:
        a_t = a if isinstance(a, Tensor) else torch.full((), a, dtype=dt, device=dev)
        b_t = b if isinstance(b, Tensor) else torch.full((), b, dtype=dt, device=dev)
        return torch.logical_or(a_t, b_t)
    if isinstance(a, Tensor):
        out = torch.add(a, b) if name == "add" else torch.sub(a, b)
    else:  # scalar first operand: (+-b) + a (negation is exact)
        assert isinstance(b, Tensor)
        out = torch.add(b, a) if name == "add" else torch.neg(b).add_(a)
    return M.canonicalize_nan_(out) if dt.is_floating_point else out


def _ref_addsub(name: str, self: Operand, other: Operand, alpha: Scalar) -> Tensor:
    dt = _result_type(self, other)
    _check_dtype(dt, f"aten.{name}.Tensor")
    _alpha_ok(alpha, dt, f"aten.{name}.Tensor")
    shape = _bshape(self, other)
    a = _ref_operand(self, dt, shape)
    b = _ref_operand(other, dt, shape)
    if alpha != 1:
        al = _round_scalar(alpha, dt)
        if dt.is_floating_point:
            b = [_ref_float_binop("mul", al, v, dt) for v in b]  # type: ignore[arg-type]
        elif dt != torch.bool:
            b = [_ref_int_binop("mul", al, v, dt) for v in b]  # type: ignore[arg-type]
    if dt.is_floating_point:
        out = [_ref_float_binop(name, x, y, dt) for x, y in zip(a, b, strict=True)]
    elif dt == torch.bool:
        out = [x or y for x, y in zip(a, b, strict=True)]
    else:
        out = [_ref_int_binop(name, x, y, dt) for x, y in zip(a, b, strict=True)]
    return _tensor_from_values(out, dt, shape, _device_of(self, other))


_TORCH_BINARY: dict[str, Callable[..., Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}


def _f32_shortcut(name: str, a: Operand, b: Operand) -> Tensor | None:
    """The common case without the general promotion machinery: an fp32 tensor with an fp32
    tensor, or (on the CPU, where torch's scalar path is IEEE) with a Python float or int."""
    if isinstance(a, Tensor) and a.dtype is _F32:
        if isinstance(b, Tensor):
            if b.dtype is _F32:
                return M.canonicalize_nan_(_TORCH_BINARY[name](a, b))
        elif a.device.type == "cpu":
            if type(b) is float:
                return M.canonicalize_nan_(_TORCH_BINARY[name](a, M.f32(b)))
            if type(b) is int:
                return M.canonicalize_nan_(_TORCH_BINARY[name](a, _int_to_f32(b)))
    return None


def add_fast(self: Operand, other: Operand, *, alpha: Scalar = 1) -> Tensor:
    if alpha == 1 and (out := _f32_shortcut("add", self, other)) is not None:
        return out
    return _fast_addsub("add", self, other, alpha)


def add_ref(self: Operand, other: Operand, *, alpha: Scalar = 1) -> Tensor:
    return _ref_addsub("add", self, other, alpha)


def sub_fast(self: Operand, other: Operand, *, alpha: Scalar = 1) -> Tensor:
    if alpha == 1 and (out := _f32_shortcut("sub", self, other)) is not None:
        return out
    return _fast_addsub("sub", self, other, alpha)


def sub_ref(self: Operand, other: Operand, *, alpha: Scalar = 1) -> Tensor:
    return _ref_addsub("sub", self, other, alpha)


def mul_fast(self: Operand, other: Operand) -> Tensor:
    if (out := _f32_shortcut("mul", self, other)) is not None:
        return out
    dt = _result_type(self, other)
    _check_dtype(dt, "aten.mul.Tensor")
    dev = _device_of(self, other)
    a = _as_operand(self, dt, dev)
    b = _as_operand(other, dt, dev)
    if not isinstance(a, Tensor):
        a, b = b, a
    if dt == torch.bool:
        b_t = b if isinstance(b, Tensor) else torch.full((), b, dtype=dt, device=dev)
        return torch.logical_and(a, b_t)  # type: ignore[arg-type]
    out = torch.mul(a, b)  # type: ignore[arg-type]
    return M.canonicalize_nan_(out) if dt.is_floating_point else out


def mul_ref(self: Operand, other: Operand) -> Tensor:
    dt = _result_type(self, other)
    _check_dtype(dt, "aten.mul.Tensor")
    shape = _bshape(self, other)
    a = _ref_operand(self, dt, shape)
    b = _ref_operand(other, dt, shape)
    if dt.is_floating_point:
        out = [_ref_float_binop("mul", x, y, dt) for x, y in zip(a, b, strict=True)]
    elif dt == torch.bool:
        out = [x and y for x, y in zip(a, b, strict=True)]
    else:
        out = [_ref_int_binop("mul", x, y, dt) for x, y in zip(a, b, strict=True)]
    return _tensor_from_values(out, dt, shape, _device_of(self, other))


def _div_dtype(self: Operand, other: Operand) -> torch.dtype:
    dt = _result_type(self, other)
    if not dt.is_floating_point:
        dt = _F32  # true division of integers: in the default float dtype
    _check_dtype(dt, "aten.div.Tensor")
    return dt


def div_fast(self: Operand, other: Operand) -> Tensor:
    if (out := _f32_shortcut("div", self, other)) is not None:
        return out
    dt = _div_dtype(self, other)
    dev = _device_of(self, other)
    a = _as_operand(self, dt, dev)
    b = _as_operand(other, dt, dev)
    if not isinstance(a, Tensor):
        a = torch.full((), a, dtype=dt, device=dev)
    return M.canonicalize_nan_(torch.div(a, b))


def div_ref(self: Operand, other: Operand) -> Tensor:
    dt = _div_dtype(self, other)
    shape = _bshape(self, other)
    a = _ref_operand(self, dt, shape)
    b = _ref_operand(other, dt, shape)
    out = [_ref_float_binop("div", x, y, dt) for x, y in zip(a, b, strict=True)]
    return _tensor_from_values(out, dt, shape, _device_of(self, other))


def _float_unary_input(x: Tensor, op: str) -> Tensor:
    """Integer and bool inputs of a float function are converted to fp32 first."""
    if x.dtype == _F32:
        return x
    if x.dtype == torch.bool or x.dtype in _INT_DTYPES:
        return _convert_fast(x, _F32)
    raise UnsupportedOpError(f"{op}: RepOps defines it for float32 (and integer/bool) tensors, got {x.dtype}")


def _ref_unary_f32(x: Tensor, fn: Callable[[float], float], op: str) -> Tensor:
    if x.dtype != _F32 and x.dtype != torch.bool and x.dtype not in _INT_DTYPES:
        raise UnsupportedOpError(f"{op}: RepOps defines it for float32 (and integer/bool) tensors, got {x.dtype}")
    shape = list(x.shape)
    vals = _ref_operand(x, _F32, shape)
    return _tensor_from_values([fn(v) for v in vals], _F32, shape, x.device)


def neg_fast(self: Tensor) -> Tensor:
    if self.dtype == _F32 or self.dtype == _F64:
        return M.canonicalize_nan_(torch.neg(self))
    _check_dtype(self.dtype, "aten.neg.default")
    if self.dtype == torch.bool:
        raise UnsupportedOpError("aten.neg.default: bool tensors have no negation")
    return torch.neg(self)


def neg_ref(self: Tensor) -> Tensor:
    _check_dtype(self.dtype, "aten.neg.default")
    if self.dtype == torch.bool:
        raise UnsupportedOpError("aten.neg.default: bool tensors have no negation")
    shape = list(self.shape)
    vals = _flat(self, shape)
    if self.dtype.is_floating_point:
        return _tensor_from_values([-v for v in vals], self.dtype, shape, self.device)
    return _tensor_from_values([_wrap(-v, self.dtype) for v in vals], self.dtype, shape, self.device)


def reciprocal_fast(self: Tensor) -> Tensor:
    x = _float_unary_input(self, "aten.reciprocal.default")
    return M.canonicalize_nan_(torch.reciprocal(x))


def reciprocal_ref(self: Tensor) -> Tensor:
    return _ref_unary_f32(self, lambda v: _ref_float_binop("div", 1.0, v), "aten.reciprocal.default")


def _unary_math(
    fast_fn: Callable[[Tensor], Tensor], ref_fn: Callable[[float], float], op: str
) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    def fast(self: Tensor) -> Tensor:
        return fast_fn(_float_unary_input(self, op))

    def reference(self: Tensor) -> Tensor:
        return _ref_unary_f32(self, ref_fn, op)

    fast.__name__ = op.split(".")[1] + "_fast"
    reference.__name__ = op.split(".")[1] + "_ref"
    return fast, reference


_POW_EXPONENTS = (0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, -0.5, 1.5, -1.5)


def _pow_exponent(exponent: Scalar) -> float:
    e = float(exponent)
    if isinstance(exponent, bool) or e not in _POW_EXPONENTS:
        raise UnsupportedOpError(
            f"aten.pow.Tensor_Scalar: exponent {exponent!r} has no RepOps definition "
            f"(defined: {', '.join(repr(v) for v in _POW_EXPONENTS)})"
        )
    return e


def pow_fast(self: Tensor, exponent: Scalar) -> Tensor:
    e = _pow_exponent(exponent)
    if self.dtype != _F32 and self.dtype in _INT_DTYPES and e >= 0 and isinstance(exponent, int):
        return torch.pow(self, int(e))  # exact integer powers, wrapping
    x = _float_unary_input(self, "aten.pow.Tensor_Scalar")
    if e == 0.0:
        return torch.ones_like(x)
    if e == 1.0:
        return M.canonicalize_nan(x)
    if e == 2.0:
        return M.canonicalize_nan_(torch.mul(x, x))
    if e == 3.0:
        return M.canonicalize_nan_(torch.mul(x, x).mul_(x))
    if e == -1.0:
        return M.canonicalize_nan_(torch.reciprocal(x))
    if e == -2.0:
        return M.canonicalize_nan_(torch.mul(x, x).reciprocal_())
    if e == -3.0:
        return M.canonicalize_nan_(torch.mul(x, x).mul_(x).reciprocal_())
    if e == 0.5:
        return M.sqrt(x)
    if e == 1.5:
        return M.canonicalize_nan_(torch.mul(x, M.sqrt(x)))
    if e == -1.5:
        return M.canonicalize_nan_(torch.mul(x, M.sqrt(x)).reciprocal_())
    return M.rsqrt(x)


def _pow_ref_value(v: float, e: float) -> float:
    if e == 0.0:
        return 1.0
    if e == 1.0:
        return v
    if e == 2.0:
        return _ref_float_binop("mul", v, v)
    if e == 3.0:
        return _ref_float_binop("mul", _ref_float_binop("mul", v, v), v)
    if e == -1.0:
        return _ref_float_binop("div", 1.0, v)
    if e == -2.0:
        return _ref_float_binop("div", 1.0, _ref_float_binop("mul", v, v))
    if e == -3.0:
        return _ref_float_binop("div", 1.0, _ref_float_binop("mul", _ref_float_binop("mul", v, v), v))
    if e == 0.5:
        return M.sqrt_ref(v)
    if e == 1.5:
        return _ref_float_binop("mul", v, M.sqrt_ref(v))
    if e == -1.5:
        return _ref_float_binop("div", 1.0, _ref_float_binop("mul", v, M.sqrt_ref(v)))
    return M.rsqrt_ref(v)


def pow_ref(self: Tensor, exponent: Scalar) -> Tensor:
    e = _pow_exponent(exponent)
    if self.dtype != _F32 and self.dtype in _INT_DTYPES and e >= 0 and isinstance(exponent, int):
        shape = list(self.shape)
        vals = _flat(self, shape)
        return _tensor_from_values([_wrap(v ** int(e), self.dtype) for v in vals], self.dtype, shape, self.device)
    return _ref_unary_f32(self, lambda v: _pow_ref_value(v, e), "aten.pow.Tensor_Scalar")


def gelu_fast(self: Tensor, *, approximate: str = "none") -> Tensor:
    return M.gelu(_float_unary_input(self, "aten.gelu.default"), approximate)


def gelu_ref(self: Tensor, *, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise UnsupportedOpError(f"gelu: approximate={approximate!r} is not 'none' or 'tanh'")
    return _ref_unary_f32(self, lambda v: M.gelu_ref(v, approximate), "aten.gelu.default")


# =============================================================================================
# comparisons and logic
# =============================================================================================

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
_CMP_TORCH: dict[str, Callable[..., Tensor]] = {
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}


def _make_cmp(name: str) -> tuple[Callable[..., Tensor], Callable[..., Tensor]]:
    tfn = _CMP_TORCH[name]
    pfn = _CMP[name]
    op = f"aten.{name}"

    def fast(self: Tensor, other: Operand) -> Tensor:
        dt = _result_type(self, other)
        _check_dtype(dt, op)
        dev = _device_of(self, other)
        return tfn(_as_operand(self, dt, dev), _as_operand(other, dt, dev))

    def reference(self: Tensor, other: Operand) -> Tensor:
        dt = _result_type(self, other)
        _check_dtype(dt, op)
        shape = _bshape(self, other)
        a = _ref_operand(self, dt, shape)
        b = _ref_operand(other, dt, shape)
        return _tensor_from_values([pfn(x, y) for x, y in zip(a, b, strict=True)], torch.bool, shape, self.device)

    fast.__name__, reference.__name__ = f"{name}_fast", f"{name}_ref"
    return fast, reference


def _check_intlike(*ts: Tensor, op: str) -> torch.dtype:
    dt = _result_type(*ts)
    if dt.is_floating_point or dt not in _SUPPORTED:
        raise UnsupportedOpError(f"{op}: defined for integer and bool tensors only, got {dt}")
    return dt


_BITWISE: dict[str, tuple[Callable[..., Tensor], Callable[[int, int], int]]] = {
    "and": (torch.bitwise_and, lambda a, b: a & b),
    "or": (torch.bitwise_or, lambda a, b: a | b),
    "xor": (torch.bitwise_xor, lambda a, b: a ^ b),
}


def _make_bitwise(name: str) -> tuple[Callable[..., Tensor], Callable[..., Tensor]]:
    tfn, pfn = _BITWISE[name]
    op = f"aten.bitwise_{name}.Tensor"

    def fast(self: Tensor, other: Tensor) -> Tensor:
        dt = _check_intlike(self, other, op=op)
        return tfn(self.to(dt), other.to(dt))

    def reference(self: Tensor, other: Tensor) -> Tensor:
        dt = _check_intlike(self, other, op=op)
        shape = _bshape(self, other)
        a = _ref_operand(self, dt, shape)
        b = _ref_operand(other, dt, shape)
        if dt == torch.bool:
            out: list[Any] = [bool(pfn(int(x), int(y))) for x, y in zip(a, b, strict=True)]
        else:
            out = [_wrap(pfn(x, y), dt) for x, y in zip(a, b, strict=True)]
        return _tensor_from_values(out, dt, shape, self.device)

    fast.__name__, reference.__name__ = f"bitwise_{name}_fast", f"bitwise_{name}_ref"
    return fast, reference


def bitwise_not_fast(self: Tensor) -> Tensor:
    _check_intlike(self, op="aten.bitwise_not.default")
    return torch.bitwise_not(self)


def bitwise_not_ref(self: Tensor) -> Tensor:
    dt = _check_intlike(self, op="aten.bitwise_not.default")
    shape = list(self.shape)
    vals = _flat(self, shape)
    out = [not v for v in vals] if dt == torch.bool else [_wrap(~v, dt) for v in vals]
    return _tensor_from_values(out, dt, shape, self.device)


def _truth(t: Tensor) -> Tensor:
    return t if t.dtype == torch.bool else _convert_fast(t, torch.bool)


def _ref_truth(t: Tensor, shape: Sequence[int]) -> list[bool]:
    _check_dtype(t.dtype, "logical op")
    return [_ref_convert_value(v, t.dtype, torch.bool) for v in _flat(t, shape)]


def logical_and_fast(self: Tensor, other: Tensor) -> Tensor:
    return torch.logical_and(_truth(self), _truth(other))


def logical_and_ref(self: Tensor, other: Tensor) -> Tensor:
    shape = _bshape(self, other)
    out = [a and b for a, b in zip(_ref_truth(self, shape), _ref_truth(other, shape), strict=True)]
    return _tensor_from_values(out, torch.bool, shape, self.device)


def logical_or_fast(self: Tensor, other: Tensor) -> Tensor:
    return torch.logical_or(_truth(self), _truth(other))


def logical_or_ref(self: Tensor, other: Tensor) -> Tensor:
    shape = _bshape(self, other)
    out = [a or b for a, b in zip(_ref_truth(self, shape), _ref_truth(other, shape), strict=True)]
    return _tensor_from_values(out, torch.bool, shape, self.device)


def logical_not_fast(self: Tensor) -> Tensor:
    return torch.logical_not(_truth(self))


def logical_not_ref(self: Tensor) -> Tensor:
    shape = list(self.shape)
    return _tensor_from_values([not a for a in _ref_truth(self, shape)], torch.bool, shape, self.device)


# =============================================================================================
# selections: where, clamp, relu, threshold_backward, abs
# =============================================================================================


def _ref_select_bits(t: Operand, dt: torch.dtype, shape: Sequence[int]) -> list[Any]:
    """Operand as values of dtype dt, floats as bit patterns (selections keep NaN payloads
    of operands that already have dtype dt)."""
    if dt.is_floating_point:
        if isinstance(t, Tensor) and t.dtype == dt:
            return _flat_bits(t, shape)
        vals = _ref_operand(t, dt, shape)
        return [M.f32_bits(v) if dt == _F32 else _f64_bits(v) for v in vals]
    return _ref_operand(t, dt, shape)


def _ref_build(out: list[Any], dt: torch.dtype, shape: Sequence[int], device: torch.device) -> Tensor:
    if dt.is_floating_point:
        return _tensor_from_bits(out, dt, shape, device)
    return _tensor_from_values(out, dt, shape, device)


def where_fast(condition: Tensor, self: Operand, other: Operand) -> Tensor:
    dt = _result_type(self, other)
    _check_dtype(dt, "aten.where.self")
    dev = _device_of(condition, self, other)
    a = _as_operand(self, dt, dev)
    b = _as_operand(other, dt, dev)
    if not isinstance(a, Tensor):
        a = torch.full((), a, dtype=dt, device=dev)
    if not isinstance(b, Tensor):
        b = torch.full((), b, dtype=dt, device=dev)
    return torch.where(_truth(condition), a, b)


def where_ref(condition: Tensor, self: Operand, other: Operand) -> Tensor:
    dt = _result_type(self, other)
    _check_dtype(dt, "aten.where.self")
    shape = list(torch.broadcast_shapes(*[tuple(t.shape) for t in (condition, self, other) if isinstance(t, Tensor)]))
    c = _ref_truth(condition, shape)
    a = _ref_select_bits(self, dt, shape)
    b = _ref_select_bits(other, dt, shape)
    out = [x if k else y for k, x, y in zip(c, a, b, strict=True)]
    return _ref_build(out, dt, shape, condition.device)


def _clamp_bounds(self: Tensor, lo: Scalar | None, hi: Scalar | None) -> tuple[torch.dtype, Any, Any]:
    if lo is None and hi is None:
        raise UnsupportedOpError("aten.clamp.default: at least one of min and max must be given")
    dt = self.dtype
    for b in (lo, hi):
        if b is not None:
            dt = torch.promote_types(dt, _result_type(self, b))
    _check_dtype(dt, "aten.clamp.default")
    if dt == torch.bool:
        raise UnsupportedOpError("aten.clamp.default: bool tensors")
    rlo = None if lo is None else _round_scalar(lo, dt)
    rhi = None if hi is None else _round_scalar(hi, dt)
    return dt, rlo, rhi


def clamp_fast(self: Tensor, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:
    dt, lo, hi = _clamp_bounds(self, min, max)
    y = self if self.dtype == dt else _convert_fast(self, dt)
    dev = self.device
    if lo is not None:
        lo_t = torch.full((), lo, dtype=dt, device=dev)
        y = torch.where(y < lo_t, lo_t, y)
    if hi is not None:
        hi_t = torch.full((), hi, dtype=dt, device=dev)
        y = torch.where(y > hi_t, hi_t, y)
    return y


def clamp_ref(self: Tensor, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:
    dt, lo, hi = _clamp_bounds(self, min, max)
    shape = list(self.shape)
    vals = _ref_operand(self, dt, shape)
    bits = _ref_select_bits(self, dt, shape)
    lo_b = None if lo is None else (M.f32_bits(lo) if dt == _F32 else _f64_bits(lo) if dt == _F64 else lo)
    hi_b = None if hi is None else (M.f32_bits(hi) if dt == _F32 else _f64_bits(hi) if dt == _F64 else hi)
    out = []
    for v, b in zip(vals, bits, strict=True):
        if lo is not None and v < lo:
            v, b = lo, lo_b
        if hi is not None and v > hi:
            v, b = hi, hi_b
        out.append(b)
    return _ref_build(out, dt, shape, self.device)


def relu_fast(self: Tensor) -> Tensor:
    _check_dtype(self.dtype, "aten.relu.default")
    if self.dtype == torch.bool:
        raise UnsupportedOpError("aten.relu.default: bool tensors")
    return torch.where(self <= 0, torch.zeros((), dtype=self.dtype, device=self.device), self)


def relu_ref(self: Tensor) -> Tensor:
    _check_dtype(self.dtype, "aten.relu.default")
    if self.dtype == torch.bool:
        raise UnsupportedOpError("aten.relu.default: bool tensors")
    dt = self.dtype
    shape = list(self.shape)
    vals = _flat(self, shape)
    bits = _ref_select_bits(self, dt, shape)
    out = [0 if v <= 0 else b for v, b in zip(vals, bits, strict=True)]
    return _ref_build(out, dt, shape, self.device)


def threshold_backward_fast(grad_output: Tensor, self: Tensor, threshold: Scalar) -> Tensor:
    dt = grad_output.dtype
    _check_dtype(dt, "aten.threshold_backward.default")
    _check_dtype(self.dtype, "aten.threshold_backward.default")
    thr = _as_operand(threshold, self.dtype, self.device)
    return torch.where(self <= thr, torch.zeros((), dtype=dt, device=grad_output.device), grad_output)


def threshold_backward_ref(grad_output: Tensor, self: Tensor, threshold: Scalar) -> Tensor:
    dt = grad_output.dtype
    _check_dtype(dt, "aten.threshold_backward.default")
    _check_dtype(self.dtype, "aten.threshold_backward.default")
    shape = _bshape(grad_output, self)
    thr = _round_scalar(threshold, self.dtype)
    xs = _flat(self, shape)
    g = _ref_select_bits(grad_output, dt, shape)
    out = [0 if x <= thr else b for x, b in zip(xs, g, strict=True)]
    return _ref_build(out, dt, shape, grad_output.device)


def abs_fast(self: Tensor) -> Tensor:
    _check_dtype(self.dtype, "aten.abs.default")
    if self.dtype.is_floating_point:
        return M.canonicalize_nan_(torch.abs(self))
    return torch.abs(self)


def abs_ref(self: Tensor) -> Tensor:
    _check_dtype(self.dtype, "aten.abs.default")
    shape = list(self.shape)
    vals = _flat(self, shape)
    if self.dtype.is_floating_point:
        return _tensor_from_values([math.fabs(v) for v in vals], self.dtype, shape, self.device)
    if self.dtype == torch.bool:
        return _tensor_from_values(vals, self.dtype, shape, self.device)
    return _tensor_from_values([_wrap(abs(v), self.dtype) for v in vals], self.dtype, shape, self.device)


# =============================================================================================
# conversions, creation and copies
# =============================================================================================


def _to_copy_fast(
    self: Tensor,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
    non_blocking: bool = False,
    memory_format: Any = None,
) -> Tensor:
    _check_layout(layout, "aten._to_copy.default")
    y = _convert_fast(self, dtype or self.dtype)
    return y if device is None else y.to(device)


def _to_copy_ref(
    self: Tensor,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
    non_blocking: bool = False,
    memory_format: Any = None,
) -> Tensor:
    _check_layout(layout, "aten._to_copy.default")
    dt = dtype or self.dtype
    _check_dtype(self.dtype, "aten._to_copy.default")
    _check_dtype(dt, "aten._to_copy.default")
    shape = list(self.shape)
    dev = self.device if device is None else torch.device(device)
    if dt == self.dtype and dt.is_floating_point:
        return _tensor_from_bits(_flat_bits(self, shape), dt, shape, dev)
    vals = [_ref_convert_value(v, self.dtype, dt) for v in _flat(self, shape)]
    return _tensor_from_values(vals, dt, shape, dev)


def _check_layout(layout: Any, op: str) -> None:
    if layout is not None and layout != torch.strided:
        raise UnsupportedOpError(f"{op}: layout {layout} (only torch.strided)")


def _fill_dtype(fill_value: Scalar, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        _check_dtype(dtype, "fill")
        return dtype
    if isinstance(fill_value, bool):
        return torch.bool
    if isinstance(fill_value, int):
        return torch.int64
    return _F32


def _fill_value_bits(v: Scalar, dt: torch.dtype) -> Any:
    r = _round_scalar(v, dt)
    if dt == _F32:
        return M.f32_bits(r)  # type: ignore[arg-type]
    if dt == _F64:
        return _f64_bits(r)  # type: ignore[arg-type]
    return r


def _filled_fast(shape: Sequence[int], v: Scalar, dt: torch.dtype, device: Any) -> Tensor:
    r = _round_scalar(v, dt)
    return torch.full(tuple(shape), r, dtype=dt, device=device)


def _filled_ref(shape: Sequence[int], v: Scalar, dt: torch.dtype, device: Any) -> Tensor:
    n = math.prod(shape)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    return _ref_build([_fill_value_bits(v, dt)] * n, dt, list(shape), dev)


def scalar_tensor_fast(
    s: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    _check_layout(layout, "aten.scalar_tensor.default")
    dt = dtype or _F32
    _check_dtype(dt, "aten.scalar_tensor.default")
    return _filled_fast((), s, dt, device)


def scalar_tensor_ref(
    s: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    _check_layout(layout, "aten.scalar_tensor.default")
    dt = dtype or _F32
    _check_dtype(dt, "aten.scalar_tensor.default")
    return _filled_ref((), s, dt, device)


def full_fast(
    size: Sequence[int],
    fill_value: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    _check_layout(layout, "aten.full.default")
    return _filled_fast(size, fill_value, _fill_dtype(fill_value, dtype), device)


def full_ref(
    size: Sequence[int],
    fill_value: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    _check_layout(layout, "aten.full.default")
    return _filled_ref(size, fill_value, _fill_dtype(fill_value, dtype), device)


def full_like_fast(
    self: Tensor,
    fill_value: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
    memory_format: Any = None,
) -> Tensor:
    _check_layout(layout, "aten.full_like.default")
    dt = dtype or self.dtype
    _check_dtype(dt, "aten.full_like.default")
    return _filled_fast(self.shape, fill_value, dt, device if device is not None else self.device)


def full_like_ref(
    self: Tensor,
    fill_value: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
    memory_format: Any = None,
) -> Tensor:
    _check_layout(layout, "aten.full_like.default")
    dt = dtype or self.dtype
    _check_dtype(dt, "aten.full_like.default")
    return _filled_ref(list(self.shape), fill_value, dt, device if device is not None else self.device)


def clone_fast(self: Tensor, *, memory_format: Any = None) -> Tensor:
    return torch.clone(self, memory_format=memory_format or torch.preserve_format)


def clone_ref(self: Tensor, *, memory_format: Any = None) -> Tensor:
    shape = list(self.shape)
    if self.dtype.is_floating_point:
        return _tensor_from_bits(_flat_bits(self, shape), self.dtype, shape, self.device)
    return _tensor_from_values(_flat(self, shape), self.dtype, shape, self.device)


def alias_fast(self: Tensor) -> Tensor:
    return self.view(self.shape)


def _arange_args(
    start: Scalar, end: Scalar | None, step: Scalar, dtype: torch.dtype | None
) -> tuple[int, int, int, torch.dtype]:
    if end is None:
        start, end = 0, start
    vals = (start, end, step)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals) or step == 0:
        raise UnsupportedOpError(f"aten.arange: RepOps defines integer start/end/step only, got {vals}")
    dt = dtype or torch.int64
    _check_dtype(dt, "aten.arange")
    return int(start), int(end), int(step), dt  # type: ignore[arg-type]


def arange_start_step_fast(
    start: Scalar,
    end: Scalar,
    step: Scalar = 1,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    a, b, s, dt = _arange_args(start, end, step, dtype)
    return (
        _convert_fast(torch.arange(a, b, s, dtype=torch.int64, device=device), dt)
        if dt != torch.int64
        else torch.arange(a, b, s, dtype=torch.int64, device=device)
    )


def arange_start_step_ref(
    start: Scalar,
    end: Scalar,
    step: Scalar = 1,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    a, b, s, dt = _arange_args(start, end, step, dtype)
    vals = [_ref_convert_value(v, torch.int64, dt) for v in range(a, b, s)]
    dev = torch.device(device) if device is not None else torch.device("cpu")
    return _tensor_from_values(vals, dt, [len(vals)], dev)


def arange_fast(
    end: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    return arange_start_step_fast(0, end, 1, dtype=dtype, device=device)


def arange_ref(
    end: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    return arange_start_step_ref(0, end, 1, dtype=dtype, device=device)


def arange_start_fast(
    start: Scalar,
    end: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    return arange_start_step_fast(start, end, 1, dtype=dtype, device=device)


def arange_start_ref(
    start: Scalar,
    end: Scalar,
    *,
    dtype: torch.dtype | None = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = None,
) -> Tensor:
    return arange_start_step_ref(start, end, 1, dtype=dtype, device=device)


# =============================================================================================
# the table
# =============================================================================================


def _build() -> dict[str, OpSpec]:
    ops: dict[str, OpSpec] = {}

    def put(name: str, fast: Callable[..., Any], ref: Callable[..., Any], section: str) -> None:
        ops[name] = OpSpec(name=name, fast=fast, reference=ref, section=f"{_DOC}: {section}")

    put("aten.add.Tensor", add_fast, add_ref, SEC_ARITH)
    put("aten.sub.Tensor", sub_fast, sub_ref, SEC_ARITH)
    put("aten.mul.Tensor", mul_fast, mul_ref, SEC_ARITH)
    put("aten.div.Tensor", div_fast, div_ref, SEC_ARITH)
    put("aten.neg.default", neg_fast, neg_ref, SEC_ARITH)
    put("aten.reciprocal.default", reciprocal_fast, reciprocal_ref, SEC_ARITH)
    put("aten.pow.Tensor_Scalar", pow_fast, pow_ref, SEC_ARITH)
    for name, fast_fn, ref_fn in (
        ("sqrt", M.sqrt, M.sqrt_ref),
        ("rsqrt", M.rsqrt, M.rsqrt_ref),
        ("exp", M.exp, M.exp_ref),
        ("log", M.log, M.log_ref),
        ("erf", M.erf, M.erf_ref),
        ("tanh", M.tanh, M.tanh_ref),
        ("sigmoid", M.sigmoid, M.sigmoid_ref),
    ):
        op = f"aten.{name}.default"
        f, r = _unary_math(fast_fn, ref_fn, op)
        put(op, f, r, SEC_ARITH if name == "sqrt" else SEC_MATH)
    put("aten.gelu.default", gelu_fast, gelu_ref, SEC_MATH)
    for name in _CMP:
        f, r = _make_cmp(name)
        put(f"aten.{name}.Scalar", f, r, SEC_CMP)
        put(f"aten.{name}.Tensor", f, r, SEC_CMP)
    for name in _BITWISE:
        f, r = _make_bitwise(name)
        put(f"aten.bitwise_{name}.Tensor", f, r, SEC_CMP)
    put("aten.bitwise_not.default", bitwise_not_fast, bitwise_not_ref, SEC_CMP)
    put("aten.logical_and.default", logical_and_fast, logical_and_ref, SEC_CMP)
    put("aten.logical_or.default", logical_or_fast, logical_or_ref, SEC_CMP)
    put("aten.logical_not.default", logical_not_fast, logical_not_ref, SEC_CMP)
    put("aten.where.self", where_fast, where_ref, SEC_SELECT)
    put("aten.clamp.default", clamp_fast, clamp_ref, SEC_SELECT)
    put("aten.relu.default", relu_fast, relu_ref, SEC_SELECT)
    put("aten.threshold_backward.default", threshold_backward_fast, threshold_backward_ref, SEC_SELECT)
    put("aten.abs.default", abs_fast, abs_ref, SEC_ARITH)
    put("aten._to_copy.default", _to_copy_fast, _to_copy_ref, SEC_CONVERT)
    put("aten.scalar_tensor.default", scalar_tensor_fast, scalar_tensor_ref, SEC_CREATE)
    put("aten.full.default", full_fast, full_ref, SEC_CREATE)
    put("aten.full_like.default", full_like_fast, full_like_ref, SEC_CREATE)
    put("aten.clone.default", clone_fast, clone_ref, SEC_CREATE)
    put("aten.alias.default", alias_fast, clone_ref, SEC_CREATE)
    put("aten.arange.default", arange_fast, arange_ref, SEC_CREATE)
    put("aten.arange.start", arange_start_fast, arange_start_ref, SEC_CREATE)
    put("aten.arange.start_step", arange_start_step_fast, arange_start_step_ref, SEC_CREATE)
    return ops


OPS: dict[str, OpSpec] = _build()
