"""Activations, losses' elementwise pieces and the Scalar overloads, as RepOps kernels.

Specified in docs/repops/elementwise.md, sections "Activations" and "Scalar overloads"
(log1p in "Transcendental functions"). These are the overloads that the captured steps of
ordinary models use beyond the reference models' census: torch's core decompositions turn
softplus, SiLU, MSE, smooth L1 and BCE-with-logits into log1p, sign, mean and the Scalar
overloads below, and keep leaky_relu, hardtanh and the tensor-bounded clamp as operators.

A separate module from `elementwise.py` (over the size the house style allows); it reuses
that module's promotion and reference helpers. `OPS` maps the ATen overload name to its
`OpSpec` (fast kernel from exact or correctly rounded torch operations; scalar reference).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from trainer.repops import elementwise as E
from trainer.repops import mathfn as M
from trainer.repops._spec import OpSpec, UnsupportedOpError

__all__ = ["OPS"]

Scalar = E.Scalar
_F32 = torch.float32
_DOC = "docs/repops/elementwise.md"
SEC_ACT = "Activations"
SEC_SCALAR = "Scalar overloads"
SEC_MATH = "Transcendental functions"


def _float_input(x: Tensor, op: str) -> Tensor:
    if x.dtype != _F32:
        raise UnsupportedOpError(f"{op}: RepOps defines it for float32 tensors, got {x.dtype}")
    return x


def _zero(x: Tensor) -> Tensor:
    return torch.zeros((), dtype=x.dtype, device=x.device)


# ---- leaky_relu -----------------------------------------------------------------------------


def leaky_relu_fast(self: Tensor, negative_slope: Scalar = 0.01) -> Tensor:
    x = _float_input(self, "aten.leaky_relu.default")
    s = M.f32(float(negative_slope))
    return torch.where(x > 0, x, M.canonicalize_nan_(torch.mul(x, s)))


def leaky_relu_ref(self: Tensor, negative_slope: Scalar = 0.01) -> Tensor:
    x = _float_input(self, "aten.leaky_relu.default")
    s = M.f32(float(negative_slope))
    shape = list(x.shape)
    out = [
        b if v > 0 else M.f32_bits(M.f32(v * s)) for v, b in zip(E._flat(x, shape), E._flat_bits(x, shape), strict=True)
    ]
    return E._tensor_from_bits(out, _F32, shape, x.device)


def leaky_relu_backward_fast(grad_output: Tensor, self: Tensor, negative_slope: Scalar, self_is_result: bool) -> Tensor:
    g = _float_input(grad_output, "aten.leaky_relu_backward.default")
    x = _float_input(self, "aten.leaky_relu_backward.default")
    s = M.f32(float(negative_slope))
    return torch.where(x > 0, g, M.canonicalize_nan_(torch.mul(g, s)))


def leaky_relu_backward_ref(grad_output: Tensor, self: Tensor, negative_slope: Scalar, self_is_result: bool) -> Tensor:
    g = _float_input(grad_output, "aten.leaky_relu_backward.default")
    x = _float_input(self, "aten.leaky_relu_backward.default")
    s = M.f32(float(negative_slope))
    shape = E._bshape(g, x)
    gv, gb, xv = E._flat(g, shape), E._flat_bits(g, shape), E._flat(x, shape)
    out = [b if xx > 0 else M.f32_bits(M.f32(v * s)) for v, b, xx in zip(gv, gb, xv, strict=True)]
    return E._tensor_from_bits(out, _F32, shape, g.device)


# ---- hardtanh and the clamp variants ----------------------------------------------------------


def hardtanh_fast(self: Tensor, min_val: Scalar = -1, max_val: Scalar = 1) -> Tensor:
    return E.clamp_fast(_float_input(self, "aten.hardtanh.default"), min_val, max_val)


def hardtanh_ref(self: Tensor, min_val: Scalar = -1, max_val: Scalar = 1) -> Tensor:
    return E.clamp_ref(_float_input(self, "aten.hardtanh.default"), min_val, max_val)


def hardtanh_backward_fast(grad_output: Tensor, self: Tensor, min_val: Scalar, max_val: Scalar) -> Tensor:
    g = _float_input(grad_output, "aten.hardtanh_backward.default")
    x = _float_input(self, "aten.hardtanh_backward.default")
    lo, hi = M.f32(float(min_val)), M.f32(float(max_val))
    return torch.where((x <= lo) | (x >= hi), _zero(g), g)


def hardtanh_backward_ref(grad_output: Tensor, self: Tensor, min_val: Scalar, max_val: Scalar) -> Tensor:
    g = _float_input(grad_output, "aten.hardtanh_backward.default")
    x = _float_input(self, "aten.hardtanh_backward.default")
    lo, hi = M.f32(float(min_val)), M.f32(float(max_val))
    shape = E._bshape(g, x)
    out = [0 if (v <= lo or v >= hi) else b for v, b in zip(E._flat(x, shape), E._flat_bits(g, shape), strict=True)]
    return E._tensor_from_bits(out, _F32, shape, g.device)


def clamp_min_fast(self: Tensor, min: Scalar) -> Tensor:
    return E.clamp_fast(self, min, None)


def clamp_min_ref(self: Tensor, min: Scalar) -> Tensor:
    return E.clamp_ref(self, min, None)


def clamp_max_fast(self: Tensor, max: Scalar) -> Tensor:
    return E.clamp_fast(self, None, max)


def clamp_max_ref(self: Tensor, max: Scalar) -> Tensor:
    return E.clamp_ref(self, None, max)


def _clamp_tensor_args(self: Tensor, lo: Tensor | None, hi: Tensor | None, op: str) -> list[Tensor]:
    if lo is None and hi is None:
        raise UnsupportedOpError(f"{op}: at least one of min and max must be given")
    ts = [t for t in (self, lo, hi) if t is not None]
    for t in ts:
        _float_input(t, op)
    return ts


def clamp_tensor_fast(self: Tensor, min: Tensor | None = None, max: Tensor | None = None) -> Tensor:
    _clamp_tensor_args(self, min, max, "aten.clamp.Tensor")
    y = self
    if min is not None:
        y = torch.where((y < min) | torch.isnan(min), min, y)
    if max is not None:
        y = torch.where((y > max) | torch.isnan(max), max, y)
    return y


def clamp_tensor_ref(self: Tensor, min: Tensor | None = None, max: Tensor | None = None) -> Tensor:
    ts = _clamp_tensor_args(self, min, max, "aten.clamp.Tensor")
    shape = list(torch.broadcast_shapes(*[tuple(t.shape) for t in ts]))
    xv, xb = E._flat(self, shape), E._flat_bits(self, shape)
    lo = (E._flat(min, shape), E._flat_bits(min, shape)) if min is not None else None
    hi = (E._flat(max, shape), E._flat_bits(max, shape)) if max is not None else None
    out = []
    for i, (v, b) in enumerate(zip(xv, xb, strict=True)):
        if lo is not None and (v < lo[0][i] or lo[0][i] != lo[0][i]):
            v, b = lo[0][i], lo[1][i]
        if hi is not None and (v > hi[0][i] or hi[0][i] != hi[0][i]):
            v, b = hi[0][i], hi[1][i]
        out.append(b)
    return E._tensor_from_bits(out, _F32, shape, self.device)


# ---- sign -----------------------------------------------------------------------------------


def sign_fast(self: Tensor) -> Tensor:
    x = _float_input(self, "aten.sign.default")
    one = torch.ones((), dtype=_F32, device=x.device)
    return torch.where(x > 0, one, torch.where(x < 0, -one, _zero(x)))


def sign_ref(self: Tensor) -> Tensor:
    x = _float_input(self, "aten.sign.default")
    shape = list(x.shape)
    vals = [1.0 if v > 0 else -1.0 if v < 0 else 0.0 for v in E._flat(x, shape)]
    return E._tensor_from_values(vals, _F32, shape, x.device)


# ---- log1p ----------------------------------------------------------------------------------


def log1p_fast(self: Tensor) -> Tensor:
    return M.log1p(E._float_unary_input(self, "aten.log1p.default"))


def log1p_ref(self: Tensor) -> Tensor:
    return E._ref_unary_f32(self, M.log1p_ref, "aten.log1p.default")


# ---- Scalar overloads -----------------------------------------------------------------------


def _scalar_other(other: Any, op: str) -> Scalar:
    if isinstance(other, Tensor) or type(other) not in (bool, int, float):
        raise UnsupportedOpError(f"{op}: `other` must be a Python number, got {type(other).__name__}")
    return other  # type: ignore[no-any-return]


def add_scalar_fast(self: Tensor, other: Scalar, alpha: Scalar = 1) -> Tensor:
    return E.add_fast(self, _scalar_other(other, "aten.add.Scalar"), alpha=alpha)


def add_scalar_ref(self: Tensor, other: Scalar, alpha: Scalar = 1) -> Tensor:
    return E.add_ref(self, _scalar_other(other, "aten.add.Scalar"), alpha=alpha)


def sub_scalar_fast(self: Tensor, other: Scalar, alpha: Scalar = 1) -> Tensor:
    return E.sub_fast(self, _scalar_other(other, "aten.sub.Scalar"), alpha=alpha)


def sub_scalar_ref(self: Tensor, other: Scalar, alpha: Scalar = 1) -> Tensor:
    return E.sub_ref(self, _scalar_other(other, "aten.sub.Scalar"), alpha=alpha)


def mul_scalar_fast(self: Tensor, other: Scalar) -> Tensor:
    return E.mul_fast(self, _scalar_other(other, "aten.mul.Scalar"))


def mul_scalar_ref(self: Tensor, other: Scalar) -> Tensor:
    return E.mul_ref(self, _scalar_other(other, "aten.mul.Scalar"))


def div_scalar_fast(self: Tensor, other: Scalar) -> Tensor:
    return E.div_fast(self, _scalar_other(other, "aten.div.Scalar"))


def div_scalar_ref(self: Tensor, other: Scalar) -> Tensor:
    return E.div_ref(self, _scalar_other(other, "aten.div.Scalar"))


# =============================================================================================
# the table
# =============================================================================================


def _build() -> dict[str, OpSpec]:
    ops: dict[str, OpSpec] = {}

    def put(name: str, fast: Callable[..., Any], ref: Callable[..., Any], section: str) -> None:
        ops[name] = OpSpec(name=name, fast=fast, reference=ref, section=f"{_DOC}: {section}")

    put("aten.leaky_relu.default", leaky_relu_fast, leaky_relu_ref, SEC_ACT)
    put("aten.leaky_relu_backward.default", leaky_relu_backward_fast, leaky_relu_backward_ref, SEC_ACT)
    put("aten.hardtanh.default", hardtanh_fast, hardtanh_ref, SEC_ACT)
    put("aten.hardtanh_backward.default", hardtanh_backward_fast, hardtanh_backward_ref, SEC_ACT)
    put("aten.clamp.Tensor", clamp_tensor_fast, clamp_tensor_ref, SEC_ACT)
    put("aten.clamp_min.default", clamp_min_fast, clamp_min_ref, SEC_ACT)
    put("aten.clamp_max.default", clamp_max_fast, clamp_max_ref, SEC_ACT)
    put("aten.sign.default", sign_fast, sign_ref, SEC_ACT)
    put("aten.log1p.default", log1p_fast, log1p_ref, SEC_MATH)
    put("aten.add.Scalar", add_scalar_fast, add_scalar_ref, SEC_SCALAR)
    put("aten.sub.Scalar", sub_scalar_fast, sub_scalar_ref, SEC_SCALAR)
    put("aten.mul.Scalar", mul_scalar_fast, mul_scalar_ref, SEC_SCALAR)
    put("aten.div.Scalar", div_scalar_fast, div_scalar_ref, SEC_SCALAR)
    return ops


OPS: dict[str, OpSpec] = _build()
