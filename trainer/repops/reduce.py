"""Exact reductions and the composites built on them (docs/repops/linalg.md).

Sums and means round each reduced slice to one power-of-two grid (p_sum(L) bits for a slice of
L values) and add the integers exactly, so the result does not depend on order, threads, layout
or device; max is exact by nature. Softmax, log_softmax, layer norm and the accumulating
index_put (embedding backward) are fixed compositions of these and of the elementwise functions
exp, log and rsqrt of trainer.repops.mathfn. Every NaN returned is the canonical 0x7FC00000.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import torch

from trainer.repops import _native, mathfn
from trainer.repops._fixed import (
    F32_NAN,
    all_finite,
    canonical_nan,
    canonicalize_nan,
    exact_sum_ref,
    exponent_ref,
    grid_magic,
    grid_max,
    nonfinite_sum_ref,
    p_sum,
    quantize,
    round_f32,
    round_f32_dyadic,
)
from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError
from trainer.repops.indexing import (
    check_scatter,
    index_offsets,
    index_shapes,
    index_values,
    scatter_offsets,
)
from trainer.repops.linalg import native_isa
from trainer.repops.shape import check_dim

SEC_SUM = "Sums and means"
SEC_MAX = "Maximum"
SEC_SOFTMAX = "Softmax and log-softmax"
SEC_LAYER_NORM = "Layer norm"
SEC_INDEX_PUT = "Exact accumulation into indexed positions"

_INTEGRAL = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


# --- shapes -----------------------------------------------------------------------------------


def _dims(x: torch.Tensor, dim: int | Sequence[int] | None) -> list[int]:
    """The reduced dimensions, wrapped and sorted; None or [] means all of them."""
    nd = max(x.dim(), 1)
    if dim is None:
        dims: list[int] = []
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    if not dims:
        return list(range(nd))
    out = set()
    for d in dims:
        if not -nd <= d < nd:
            raise RepOpsError(f"dimension {d} out of range for a {x.dim()}-D tensor")
        out.add(d % nd)
    return sorted(out)


def _squeeze(t: torch.Tensor, dims: list[int], keepdim: bool, ndim: int) -> torch.Tensor:
    if ndim == 0:
        return t.reshape(())
    return t if keepdim else t.squeeze(dims)


def _check_float(x: torch.Tensor, op: str) -> None:
    if x.dtype != torch.float32:
        raise UnsupportedOpError(f"{op}: RepOps defines it for float32 tensors, got {x.dtype}")


def _check_dtype_arg(op: str, x: torch.Tensor, dtype: torch.dtype | None) -> None:
    if dtype is not None and dtype != x.dtype:
        raise UnsupportedOpError(f"{op} with dtype={dtype}: RepOps supports only dtype=None (or the input's dtype)")


# --- fast kernels -----------------------------------------------------------------------------


def _native_grid_sum(x: torch.Tensor, dims: list[int], p: int) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The native pass of linalg.c (max, grid, exact sum per slice, in one call) when x is a
    contiguous CPU tensor whose reduced dims are consecutive; None otherwise. Returns (s, m) as
    _grid_sum, with m standing in for the maxima: 0 for finite slices, inf for the others (the
    only use _finish makes of m), or None when the pass flagged no slice (all finite: _finish
    then needs no check, which would cost a reduction and a host sync)."""
    if (
        x.dtype != torch.float32
        or x.device.type != "cpu"
        or not x.is_contiguous()
        or sorted(dims) != list(range(min(dims), max(dims) + 1))
    ):
        return None
    lib = _native.linalg_library()
    if lib is None:
        return None
    before = math.prod(x.shape[: min(dims)])
    length = math.prod(x.shape[d] for d in dims)
    after = math.prod(x.shape[max(dims) + 1 :])
    # slices as rows (1, before, length), or side by side (before, after, length): value l of
    # slice r at l * after + r
    geom = (1, before, length, 0, length, 1) if after == 1 else (before, after, length, length * after, 1, after)
    sums = torch.empty(before * after, dtype=torch.float64)
    bad = torch.empty(before * after, dtype=torch.uint8)
    isa = _native.ISAS.index(native_isa())
    nbad = lib.gridsum_f64(
        x.data_ptr(), *geom, p, sums.data_ptr(), bad.data_ptr(), isa, max(1, torch.get_num_threads())
    )
    if nbad < 0:
        raise RepOpsError("native grid sum refused its arguments")
    keep = [1 if d in dims else n for d, n in enumerate(x.shape)]
    if not nbad:
        return sums.view(keep), None
    m = torch.where(bad.view(keep).bool(), torch.tensor(math.inf), torch.zeros(keep, dtype=torch.float32))
    return sums.view(keep), m


def _grid_sum(x: torch.Tensor, dims: list[int]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(s, m), keepdim: s the exact float64 value of each slice's grid sum, m the slice's max |x|
    (or, from the native pass, 0 / inf for finite / non-finite slices, None when all are finite)."""
    length = math.prod(x.shape[d] for d in dims)
    native = _native_grid_sum(x, dims, p_sum(length))
    if native is not None:
        return native
    m = grid_max(x, dims)
    c = grid_magic(m, p_sum(length))
    return x.to(torch.float64).add_(c).sub_(c).sum(dim=dims, keepdim=True), m  # see _fixed.quantize


def _finish(v: torch.Tensor, x: torch.Tensor, dims: list[int], m: torch.Tensor | None) -> torch.Tensor:
    """float64 results -> float32; slices holding inf or NaN get the IEEE sum's value instead
    (m None: every slice is finite)."""
    out = v.to(torch.float32)
    if m is None or all_finite(m):
        return out
    hi = torch.amax(x, dim=dims, keepdim=True)  # NaN if any NaN
    lo = torch.amin(x, dim=dims, keepdim=True)
    inf = torch.full((), math.inf, dtype=torch.float32, device=x.device)
    special = torch.where(hi == math.inf, inf, -inf)
    special = torch.where(torch.isnan(hi) | ((hi == math.inf) & (lo == -math.inf)), canonical_nan(x.device), special)
    return torch.where(m < math.inf, out, special)


def exact_sum(x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    """The spec's sum of a float32 tensor over `dims` (non-empty, wrapped)."""
    ndim = x.dim()
    xs = x.reshape(1) if ndim == 0 else x
    if xs.numel() == 0:
        return _squeeze(torch.zeros_like(xs).sum(dim=dims, keepdim=True), dims, keepdim, ndim)
    s, m = _grid_sum(xs, dims)
    return _squeeze(_finish(s, xs, dims, m), dims, keepdim, ndim)


def exact_mean(x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    """The spec's mean: the exact grid sum divided by L in float64, then rounded to float32."""
    ndim = x.dim()
    xs = x.reshape(1) if ndim == 0 else x
    length = math.prod(xs.shape[d] for d in dims)
    if length == 0:
        shape = [1 if d in dims else n for d, n in enumerate(xs.shape)]
        out = torch.full(shape, F32_NAN, dtype=torch.float32, device=x.device)
        return _squeeze(canonicalize_nan(out), dims, keepdim, ndim)
    if xs.numel() == 0:
        return _squeeze(torch.zeros_like(xs).sum(dim=dims, keepdim=True), dims, keepdim, ndim)
    s, m = _grid_sum(xs, dims)
    return _squeeze(_finish(s.div_(float(length)), xs, dims, m), dims, keepdim, ndim)


def _max_keepdim(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """Slice maxima (keepdim): NaN if any NaN; a zero maximum is +0 if the slice holds +0, else -0."""
    r = torch.amax(x, dim=dims, keepdim=True)
    zero = r == 0
    if bool(zero.any()):
        pos_zero = torch.any((x == 0) & ~torch.signbit(x), dim=dims, keepdim=True)
        signed = torch.where(pos_zero, torch.zeros_like(r), torch.full_like(r, -0.0))
        r = torch.where(zero, signed, r)
    return canonicalize_nan(r)


def sum_dim_intlist(
    self: torch.Tensor,
    dim: Sequence[int] | None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten.sum.dim_IntList. Integer and bool inputs: the exact int64 sum."""
    _check_dtype_arg("aten.sum.dim_IntList", self, dtype)
    dims = _dims(self, dim)
    if self.dtype in _INTEGRAL:
        return torch.sum(self, dim=dims if self.dim() else None, keepdim=keepdim, dtype=torch.int64)
    _check_float(self, "aten.sum.dim_IntList")
    return exact_sum(self, dims, keepdim)


def sum_default(self: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten.sum.default: the sum of all elements."""
    return sum_dim_intlist(self, None, False, dtype=dtype)


def mean_dim(
    self: torch.Tensor,
    dim: Sequence[int] | None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten.mean.dim."""
    _check_dtype_arg("aten.mean.dim", self, dtype)
    _check_float(self, "aten.mean.dim")
    return exact_mean(self, _dims(self, dim), keepdim)


def amax(self: torch.Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> torch.Tensor:
    """aten.amax.default."""
    _check_float(self, "aten.amax.default")
    dims = _dims(self, dim)
    xs = self.reshape(1) if self.dim() == 0 else self
    return _squeeze(_max_keepdim(xs, dims), dims, keepdim, self.dim())


def max_dim(self: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.max.dim: (values, indices); the index is the first position holding the maximum
    (the first NaN if there is one; for a zero maximum, the first zero of the maximum's sign)."""
    _check_float(self, "aten.max.dim")
    dims = _dims(self, dim)
    xs = self.reshape(1) if self.dim() == 0 else self
    v = _max_keepdim(xs, dims)
    d = dims[0]
    hit = torch.where(torch.isnan(v), torch.isnan(xs), (xs == v) & (torch.signbit(xs) == torch.signbit(v)))
    shape = [1] * xs.dim()
    shape[d] = xs.shape[d]
    pos = torch.arange(xs.shape[d], device=xs.device).reshape(shape)
    idx = torch.amin(torch.where(hit, pos, xs.shape[d]), dim=d, keepdim=True)
    return _squeeze(v, dims, keepdim, self.dim()), _squeeze(idx, dims, keepdim, self.dim())


def _softmax_parts(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(z, u, s): z = x - max, u = exp(z), s = exact sum of u over dim (keepdim)."""
    dims = _dims(x, dim)
    z = torch.sub(x, _max_keepdim(x, dims))
    u = mathfn.exp(z)
    return z, u, exact_sum(u, dims, keepdim=True)


def _check_softmax(op: str, x: torch.Tensor, half_to_float: bool) -> None:
    if half_to_float:
        raise UnsupportedOpError(f"{op} with half_to_float=True: RepOps supports only float32 in and out")
    _check_float(x, op)


def softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    """aten._softmax.default: exp(x - max) / exact_sum(exp(x - max))."""
    _check_softmax("aten._softmax.default", self, half_to_float)
    if self.numel() == 0:
        return self.clone()
    xs = self.reshape(1) if self.dim() == 0 else self
    _, u, s = _softmax_parts(xs, dim)
    return canonicalize_nan(torch.div(u, s)).reshape(self.shape)


def log_softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    """aten._log_softmax.default: (x - max) - log(exact_sum(exp(x - max)))."""
    _check_softmax("aten._log_softmax.default", self, half_to_float)
    if self.numel() == 0:
        return self.clone()
    xs = self.reshape(1) if self.dim() == 0 else self
    z, _, s = _softmax_parts(xs, dim)
    return canonicalize_nan(torch.sub(z, mathfn.log(s))).reshape(self.shape)


def _layer_norm_dims(x: torch.Tensor, normalized_shape: Sequence[int]) -> list[int]:
    k = len(normalized_shape)
    if k == 0 or k > x.dim() or tuple(x.shape[x.dim() - k :]) != tuple(normalized_shape):
        raise RepOpsError(f"normalized_shape {list(normalized_shape)} does not end the input shape {list(x.shape)}")
    if math.prod(normalized_shape) == 0:
        raise UnsupportedOpError("aten.native_layer_norm.default over zero elements")
    return list(range(x.dim() - k, x.dim()))


def native_layer_norm(
    input: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.native_layer_norm.default: (out, mean, rstd), mean and rstd of shape [..., 1, ..., 1].

    mean = exact_mean(x); d = x - mean; var = exact_mean(d * d); rstd = rsqrt(var + fp32(eps));
    out = ((d * rstd) * weight) + bias, each step one float32 operation.
    """
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        if t is not None:
            _check_float(t, f"aten.native_layer_norm.default ({name})")
    dims = _layer_norm_dims(input, normalized_shape)
    mean = exact_mean(input, dims, keepdim=True)
    d = torch.sub(input, mean)
    var = exact_mean(torch.mul(d, d), dims, keepdim=True)
    eps32 = torch.tensor(eps, dtype=torch.float32, device=input.device)
    rstd = mathfn.rsqrt(torch.add(var, eps32))
    out = torch.mul(d, rstd)
    if weight is not None:
        out = torch.mul(out, weight)
    if bias is not None:
        out = torch.add(out, bias)
    return canonicalize_nan(out), mean, rstd


# --- scalar references ------------------------------------------------------------------------


def _slices(x: torch.Tensor, dims: list[int]) -> tuple[list[list[float]], list[int]]:
    """The reduced slices of x as Python lists (kept positions in row-major order), and the
    keepdim output shape. Data movement only; no arithmetic."""
    xs = x.reshape(1) if x.dim() == 0 else x
    kept = [d for d in range(xs.dim()) if d not in dims]
    length = math.prod(xs.shape[d] for d in dims)
    outer = math.prod(xs.shape[d] for d in kept)
    flat = xs.permute(*kept, *dims).reshape(outer, length).tolist()
    shape = [1 if d in dims else n for d, n in enumerate(xs.shape)]
    return flat, shape


def _tensor(values: list[float], shape: Sequence[int], ndim: int, dims: list[int], keepdim: bool) -> torch.Tensor:
    t = torch.tensor(values, dtype=torch.float32).reshape(shape)
    return _squeeze(t, dims, keepdim, ndim)


def sum_ref(values: Sequence[float]) -> float:
    """The spec's sum of one slice of float32 values."""
    special = nonfinite_sum_ref(values)
    if special is not None:
        return special
    s, k = exact_sum_ref(values)
    return round_f32_dyadic(s, k)


def mean_ref(values: Sequence[float]) -> float:
    if not values:
        return F32_NAN
    special = nonfinite_sum_ref(values)
    if special is not None:
        return special
    s, k = exact_sum_ref(values)
    return round_f32(math.ldexp(float(s), k) / len(values))  # exact value / L in float64, then fp32


def max_ref(values: Sequence[float]) -> float:
    if any(math.isnan(v) for v in values):
        return F32_NAN
    r = max(values)
    if r == 0.0:
        return 0.0 if any(v == 0.0 and math.copysign(1.0, v) > 0 for v in values) else -0.0
    return r


def _same(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def sum_dim_intlist_reference(
    self: torch.Tensor, dim: Sequence[int] | None, keepdim: bool = False, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    _check_dtype_arg("aten.sum.dim_IntList", self, dtype)
    dims = _dims(self, dim)
    if self.dtype in _INTEGRAL:
        slices, shape = _slices(self.to(torch.int64), dims)
        t = torch.tensor([sum(int(v) for v in s) for s in slices], dtype=torch.int64).reshape(shape)
        return _squeeze(t, dims, keepdim, self.dim())
    _check_float(self, "aten.sum.dim_IntList")
    slices, shape = _slices(self, dims)
    return _tensor([sum_ref(s) for s in slices], shape, self.dim(), dims, keepdim)


def sum_default_reference(self: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    return sum_dim_intlist_reference(self, None, False, dtype=dtype)


def mean_dim_reference(
    self: torch.Tensor, dim: Sequence[int] | None, keepdim: bool = False, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    _check_dtype_arg("aten.mean.dim", self, dtype)
    _check_float(self, "aten.mean.dim")
    dims = _dims(self, dim)
    slices, shape = _slices(self, dims)
    return _tensor([mean_ref(s) for s in slices], shape, self.dim(), dims, keepdim)


def amax_reference(self: torch.Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> torch.Tensor:
    _check_float(self, "aten.amax.default")
    dims = _dims(self, dim)
    slices, shape = _slices(self, dims)
    return _tensor([max_ref(s) for s in slices], shape, self.dim(), dims, keepdim)


def max_dim_reference(self: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    _check_float(self, "aten.max.dim")
    dims = _dims(self, dim)
    slices, shape = _slices(self, dims)
    vals = [max_ref(s) for s in slices]
    idx = [next(i for i, v in enumerate(s) if _same(v, r)) for s, r in zip(slices, vals, strict=True)]
    values = _tensor(vals, shape, self.dim(), dims, keepdim)
    indices = _squeeze(torch.tensor(idx, dtype=torch.int64).reshape(shape), dims, keepdim, self.dim())
    return values, indices


def _rowwise_ref(x: torch.Tensor, dim: int, f: Callable[[list[float]], list[float]]) -> torch.Tensor:
    """Apply f to every slice along dim, putting the results back in place."""
    dims = _dims(x, dim)
    xs = x.reshape(1) if x.dim() == 0 else x
    d = dims[0]
    moved = xs.movedim(d, -1)
    rows = moved.reshape(-1, xs.shape[d]).tolist() if xs.numel() else []
    out = torch.tensor([f(r) for r in rows], dtype=torch.float32).reshape(moved.shape)
    return out.movedim(-1, d).reshape(x.shape).contiguous()


def _softmax_row_parts(row: list[float]) -> tuple[list[float], list[float], float]:
    mx = max_ref(row)
    z = [round_f32(v - mx) for v in row]
    u = [mathfn.exp_ref(v) for v in z]
    return z, u, sum_ref(u)


def softmax_reference(self: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    _check_softmax("aten._softmax.default", self, half_to_float)

    def row(r: list[float]) -> list[float]:
        _, u, s = _softmax_row_parts(r)
        return [round_f32(v / s) for v in u]  # s >= 1 or NaN: no division by zero

    return _rowwise_ref(self, dim, row)


def log_softmax_reference(self: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    _check_softmax("aten._log_softmax.default", self, half_to_float)

    def row(r: list[float]) -> list[float]:
        z, _, s = _softmax_row_parts(r)
        ls = mathfn.log_ref(s)
        return [round_f32(v - ls) for v in z]

    return _rowwise_ref(self, dim, row)


def native_layer_norm_reference(
    input: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dims = _layer_norm_dims(input, normalized_shape)
    slices, shape = _slices(input, dims)
    w = weight.reshape(-1).tolist() if weight is not None else None
    b = bias.reshape(-1).tolist() if bias is not None else None
    eps32 = round_f32(eps)
    outs, means, rstds = [], [], []
    for row in slices:
        mu = mean_ref(row)
        d = [round_f32(v - mu) for v in row]
        var = mean_ref([round_f32(v * v) for v in d])
        rs = mathfn.rsqrt_ref(round_f32(var + eps32))
        o = [round_f32(v * rs) for v in d]
        if w is not None:
            o = [round_f32(v * wv) for v, wv in zip(o, w, strict=True)]
        if b is not None:
            o = [round_f32(v + bv) for v, bv in zip(o, b, strict=True)]
        outs.append(o)
        means.append(mu)
        rstds.append(rs)
    out = torch.tensor(outs, dtype=torch.float32).reshape(input.shape)
    return (
        out,
        torch.tensor(means, dtype=torch.float32).reshape(shape),
        torch.tensor(rstds, dtype=torch.float32).reshape(shape),
    )


OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("aten.sum.dim_IntList", sum_dim_intlist, sum_dim_intlist_reference, SEC_SUM),
        OpSpec("aten.sum.default", sum_default, sum_default_reference, SEC_SUM),
        OpSpec("aten.mean.dim", mean_dim, mean_dim_reference, SEC_SUM),
        OpSpec("aten.amax.default", amax, amax_reference, SEC_MAX),
        OpSpec("aten.max.dim", max_dim, max_dim_reference, SEC_MAX),
        OpSpec("aten._softmax.default", softmax, softmax_reference, SEC_SOFTMAX),
        OpSpec("aten._log_softmax.default", log_softmax, log_softmax_reference, SEC_SOFTMAX),
        OpSpec("aten.native_layer_norm.default", native_layer_norm, native_layer_norm_reference, SEC_LAYER_NORM),
    )
}


# --- exact accumulation into indexed positions: index_put, index_add, scatter_add -------------
#
# Every one is "out = self, then position t gets f32(self[t] + G[t]) where G[t] is the exact grid
# sum of the values sent to t" (linalg.md, Exact accumulation into indexed positions). The terms
# form an (N, C) matrix: N entries per column, column c's grid from its largest finite |value|
# with p_sum(N) bits, and every position receives terms of one column only.


def _add_exact(base: torch.Tensor, dest: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    """base (flat, float32) with the exact column-grid sums of vals (N, C) added at dest (N, C)."""
    n = vals.shape[0]
    flat = base.reshape(-1)
    if vals.numel() == 0:
        return flat.clone()
    m = grid_max(vals, [0])
    finite = all_finite(m)
    v = (
        vals
        if finite
        else torch.where(vals.abs() < math.inf, vals, torch.zeros((), dtype=vals.dtype, device=vals.device))
    )
    if not finite:
        m = grid_max(v, [0])  # the column's largest finite |value|
    q = quantize(v, grid_magic(m, p_sum(n)))  # float64, exact multiples of the column's step
    where = dest.reshape(-1)
    acc = torch.zeros(flat.shape, dtype=torch.float64, device=flat.device).index_add_(0, where, q.reshape(-1))
    g = acc.to(torch.float32)

    def hit(mask: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(flat.shape, dtype=torch.int64, device=flat.device)
        return z.index_add_(0, where, mask.reshape(-1).to(torch.int64)) > 0

    if not finite:
        has_nan, has_pos, has_neg = hit(torch.isnan(vals)), hit(vals == math.inf), hit(vals == -math.inf)
        inf = torch.full((), math.inf, dtype=torch.float32, device=flat.device)
        g = torch.where(has_pos, inf, torch.where(has_neg, -inf, g))
        g = torch.where(has_nan | (has_pos & has_neg), canonical_nan(flat.device), g)
    touched = hit(torch.ones_like(where, dtype=torch.bool))
    return torch.where(touched, canonicalize_nan(torch.add(flat, g)), flat)


def _add_exact_ref(base: list[float], terms: Sequence[tuple[int, object, float]], n: int) -> list[float]:
    """The spec, by loops: terms (position, column, value), n entries per column."""
    if not terms:
        return list(base)
    p = p_sum(n)
    maxima: dict[object, float] = {}
    groups: dict[int, list[float]] = {}
    column: dict[int, object] = {}
    for t, c, v in terms:
        if not (math.isnan(v) or math.isinf(v)):
            maxima[c] = max(maxima.get(c, 0.0), abs(v))
        groups.setdefault(t, []).append(v)
        column[t] = c
    out = list(base)
    for t, vs in groups.items():
        special = nonfinite_sum_ref(vs)
        if special is None:
            e = exponent_ref(maxima.get(column[t], 0.0))
            g = round_f32_dyadic(sum(round(math.ldexp(v, p - e)) for v in vs), e - p)
        else:
            g = special
        out[t] = round_f32(out[t] + g)
    return out


def _index_put_check(self: torch.Tensor, values: torch.Tensor, accumulate: bool) -> None:
    op = "aten.index_put.default"
    if accumulate:
        _check_float(self, op)
        _check_float(values, op)
    elif values.dtype != self.dtype:
        raise UnsupportedOpError(f"{op}: values are {values.dtype} and self {self.dtype}; RepOps needs one dtype")
    if self.dim() == 0:
        raise RepOpsError(f"{op}: cannot index a 0-D tensor")


def index_put(
    self: torch.Tensor, indices: Sequence[torch.Tensor | None], values: torch.Tensor, accumulate: bool = False
) -> torch.Tensor:
    """aten.index_put.default. accumulate=True: exact sums of the values sent to each position;
    accumulate=False: a copy, where two entries name one position the last (row-major) wins."""
    op = "aten.index_put.default"
    _index_put_check(self, values, accumulate)
    dest, out_shape, at, ni = index_offsets(list(self.shape), indices, op)
    vals = index_values(values, out_shape, at, ni, op)
    if accumulate:
        return _add_exact(self.contiguous(), dest, vals).reshape(self.shape)
    flat = self.reshape(-1)
    last = torch.full(flat.shape, -1, dtype=torch.int64, device=flat.device)
    last.scatter_reduce_(0, dest.reshape(-1), torch.arange(dest.numel(), device=flat.device), "amax")
    picked = vals.reshape(-1)[last.clamp(min=0)] if vals.numel() else flat
    return torch.where(last >= 0, picked, flat).reshape(self.shape)


def index_put_reference(
    self: torch.Tensor, indices: Sequence[torch.Tensor | None], values: torch.Tensor, accumulate: bool = False
) -> torch.Tensor:
    op = "aten.index_put.default"
    _index_put_check(self, values, accumulate)
    shape = list(self.shape)
    tdims, others, ishape, at, ts = index_shapes(shape, indices, op)
    out_shape = [shape[k] for k in others]
    out_shape[at:at] = ishape
    try:
        vals = values.expand(out_shape).contiguous().reshape(-1).tolist()
    except RuntimeError:
        raise RepOpsError(f"{op}: values of shape {list(values.shape)} do not broadcast to {out_shape}") from None
    ix = [t.reshape(-1).tolist() for t in ts]
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    istrides = [math.prod(ishape[k + 1 :]) for k in range(len(ishape))]
    terms = []
    for pos, i in enumerate(itertools.product(*(range(n) for n in out_shape))):
        block, rest = i[at : at + len(ishape)], i[:at] + i[at + len(ishape) :]
        n = sum(a * b for a, b in zip(block, istrides, strict=True))
        t = sum(ix[j][n] * strides[k] for j, k in enumerate(tdims))
        t += sum(r * strides[k] for r, k in zip(rest, others, strict=True))
        terms.append((t, rest, vals[pos]))
    base = self.contiguous().reshape(-1).tolist()
    if accumulate:
        out = _add_exact_ref(base, terms, math.prod(ishape))
        return torch.tensor(out, dtype=torch.float32).reshape(self.shape)
    for t, _, v in terms:  # row-major order: the last write wins
        base[t] = v
    return torch.tensor(base, dtype=self.dtype).reshape(self.shape)


def _index_add_args(self: torch.Tensor, dim: int, index: torch.Tensor, alpha: object) -> list[torch.Tensor | None]:
    op = "aten.index_add.default"
    if alpha != 1:
        raise UnsupportedOpError(f"{op} with alpha={alpha}: RepOps supports only alpha=1 (multiply the source first)")
    if index.dim() > 1:
        raise RepOpsError(f"{op}: the index must be 0-D or 1-D, got {index.dim()}-D")
    nd = max(self.dim(), 1)
    if not -nd <= dim < nd:
        raise RepOpsError(f"{op}: dimension {dim} out of range for a {self.dim()}-D tensor")
    return [None] * (dim % nd) + [index.reshape(-1)]


def _index_add_source(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> None:
    want = list(self.shape)
    want[dim % max(self.dim(), 1)] = index.numel()
    if list(source.shape) != want:
        raise RepOpsError(f"aten.index_add.default: source has shape {list(source.shape)}, expected {want}")


def index_add(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: object = 1
) -> torch.Tensor:
    """aten.index_add.default (alpha=1): index_put(self, [None] * dim + [index], source, True)."""
    indices = _index_add_args(self, dim, index, alpha)
    _index_add_source(self, dim, index, source)
    return index_put(self, indices, source, True)


def index_add_reference(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: object = 1
) -> torch.Tensor:
    indices = _index_add_args(self, dim, index, alpha)
    _index_add_source(self, dim, index, source)
    return index_put_reference(self, indices, source, True)


def _scatter_add_check(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> int:
    op = "aten.scatter_add.default"
    _check_float(self, op)
    _check_float(src, op)
    if self.dim() == 0:
        raise UnsupportedOpError(f"{op} of a 0-D tensor")
    d = check_dim(dim, self.dim(), op)
    check_scatter(self, d, index, src, op)
    return d


def scatter_add(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """aten.scatter_add.default: entry i adds src[i] at i with axis dim replaced by index[i]; the
    N = index.shape[dim] entries of each column (the other coordinates of i) share one grid."""
    d = _scatter_add_check(self, dim, index, src)
    if index.numel() == 0:
        return self.clone()
    dest = scatter_offsets(list(self.shape), index, d).movedim(d, 0)
    vals = src[tuple(slice(0, n) for n in index.shape)].movedim(d, 0)
    n = index.shape[d]
    return _add_exact(self.contiguous(), dest.reshape(n, -1), vals.reshape(n, -1)).reshape(self.shape)


def scatter_add_reference(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    d = _scatter_add_check(self, dim, index, src)
    shape, ishape = list(self.shape), list(index.shape)
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    sstrides = [math.prod(src.shape[k + 1 :]) for k in range(src.dim())]
    ix, sv = index.contiguous().reshape(-1).tolist(), src.contiguous().reshape(-1).tolist()
    terms = []
    for k, i in enumerate(itertools.product(*(range(n) for n in ishape))):
        j = list(i)
        j[d] = ix[k]
        value = sv[sum(a * b for a, b in zip(i, sstrides, strict=True))]
        terms.append((sum(a * b for a, b in zip(j, strides, strict=True)), i[:d] + i[d + 1 :], value))
    out = _add_exact_ref(self.contiguous().reshape(-1).tolist(), terms, ishape[d])
    return torch.tensor(out, dtype=torch.float32).reshape(self.shape)


OPS.update(
    {
        spec.name: spec
        for spec in (
            OpSpec("aten.index_put.default", index_put, index_put_reference, SEC_INDEX_PUT),
            OpSpec("aten.index_add.default", index_add, index_add_reference, SEC_INDEX_PUT),
            OpSpec("aten.scatter_add.default", scatter_add, scatter_add_reference, SEC_INDEX_PUT),
        )
    }
)


# =============================================================================================
# Batch norm, group norm and the full mean (issue 15: norms of ordinary models)
# =============================================================================================

SEC_BATCH_NORM = "Batch norm"
SEC_GROUP_NORM = "Group norm"


def mean_default(self: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten.mean.default: the mean of all elements (as aten.mean.dim over every dimension)."""
    return mean_dim(self, None, False, dtype=dtype)


def mean_default_reference(self: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    return mean_dim_reference(self, None, False, dtype=dtype)


def _exact_div(x: torch.Tensor, dims: list[int], divisor: int) -> torch.Tensor:
    """The exact grid sum of each slice divided by `divisor` in float64, rounded once (keepdim)."""
    s, m = _grid_sum(x, dims)
    return _finish(s.div_(float(divisor)), x, dims, m)


def _affine(
    out: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, shape: list[int]
) -> torch.Tensor:
    if weight is not None:
        out = torch.mul(out, weight.reshape(shape))
    if bias is not None:
        out = torch.add(out, bias.reshape(shape))
    return canonicalize_nan(out)


def _bn_check(op: str, input: torch.Tensor, *ts: torch.Tensor | None) -> tuple[list[int], list[int], int]:
    """(reduced dims, channel broadcast shape, values per channel)."""
    if input.dim() < 2:
        raise RepOpsError(f"{op}: input must be at least 2-D (N, C, ...), got shape {list(input.shape)}")
    _check_float(input, op)
    c = input.shape[1]
    for t in ts:
        if t is not None:
            _check_float(t, op)
            if tuple(t.shape) != (c,):
                raise RepOpsError(f"{op}: per-channel tensors must have shape [{c}], got {list(t.shape)}")
    dims = [0, *range(2, input.dim())]
    return dims, [1, c] + [1] * (input.dim() - 2), math.prod(input.shape[d] for d in dims)


def _bn_train(
    op: str, input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, list[int], int]:
    """(out, mean [C], rstd [C], d = x - mean, dims, n) of batch norm with batch statistics."""
    dims, shape, n = _bn_check(op, input, weight, bias)
    if n < 2:
        raise RepOpsError(f"{op}: training batch norm needs more than 1 value per channel, got {n}")
    x = input
    if input.dim() > 2:
        # channels first, each channel's values one contiguous row: the reduced dims become one
        # consecutive dim (the native exact sum); exact sums and elementwise steps do not
        # depend on the layout, so the bits are those of the original one
        c = input.shape[1]
        x = input.transpose(0, 1).reshape(c, -1)
        dims, shape = [1], [c, 1]
    mean = exact_mean(x, dims, keepdim=True)
    d = torch.sub(x, mean)
    var = exact_mean(torch.mul(d, d), dims, keepdim=True)
    rstd = mathfn.rsqrt(torch.add(var, torch.tensor(eps, dtype=torch.float32, device=input.device)))
    out = _affine(torch.mul(d, rstd), weight, bias, shape)
    if input.dim() > 2:
        moved = [input.shape[1], input.shape[0], *input.shape[2:]]
        out = out.reshape(moved).transpose(0, 1).contiguous()
    return out, mean.reshape(-1), rstd.reshape(-1), d, dims, n


def _bn_eval(
    op: str,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    _, shape, _ = _bn_check(op, input, weight, bias, running_mean, running_var)
    eps32 = torch.tensor(eps, dtype=torch.float32, device=input.device)
    rstd = mathfn.rsqrt(torch.add(running_var, eps32)).reshape(shape)
    return _affine(torch.mul(torch.sub(input, running_mean.reshape(shape)), rstd), weight, bias, shape)


def _running_update(running: torch.Tensor, batch: torch.Tensor, momentum: float) -> torch.Tensor:
    """RN32(RN32(k * running) + RN32(m * batch)), m = RN32(momentum), k = RN32(1 - momentum)."""
    m = mathfn.f32(momentum)
    k = mathfn.f32(1.0 - momentum)
    return canonicalize_nan(torch.add(torch.mul(running, k), torch.mul(batch, m)))


def native_batch_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.native_batch_norm.default without running statistics to update: training with
    none (batch statistics; returns out, mean, rstd), or evaluation with them (returns out and
    two empty tensors). Training with running statistics mutates them in torch; capture turns
    it into aten._native_batch_norm_legit_functional."""
    op = "aten.native_batch_norm.default"
    if training:
        if running_mean is not None or running_var is not None:
            raise UnsupportedOpError(
                f"{op} in training mode with running statistics updates them in place; "
                "capture rewrites it to aten._native_batch_norm_legit_functional.default"
            )
        out, mean, rstd, _, _, _ = _bn_train(op, input, weight, bias, eps)
        return out, mean, rstd
    if running_mean is None or running_var is None:
        raise RepOpsError(f"{op} in evaluation mode needs running_mean and running_var")
    empty = torch.empty(0, dtype=torch.float32, device=input.device)
    return _bn_eval(op, input, weight, bias, running_mean, running_var, eps), empty, empty.clone()


def native_batch_norm_legit_functional(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten._native_batch_norm_legit_functional.default: (out, mean, rstd, new running_mean,
    new running_var). Training: batch statistics; running_var is updated with the unbiased
    variance (exact grid sum of d*d divided by n - 1). Evaluation: running statistics, passed on."""
    op = "aten._native_batch_norm_legit_functional.default"
    if not training:
        empty = torch.empty(0, dtype=torch.float32, device=input.device)
        out = _bn_eval(op, input, weight, bias, running_mean, running_var, eps)
        return out, empty, empty.clone(), running_mean.clone(), running_var.clone()
    _bn_check(op, input, running_mean, running_var)
    out, mean, rstd, d, dims, n = _bn_train(op, input, weight, bias, eps)
    var_u = _exact_div(torch.mul(d, d), dims, n - 1).reshape(-1)
    return (
        out,
        mean,
        rstd,
        _running_update(running_mean, mean, momentum),
        _running_update(running_var, var_u, momentum),
    )


def _gn_check(
    op: str,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    n: int,
    c: int,
    hxw: int,
    group: int,
) -> None:
    _check_float(input, op)
    if input.dim() < 2 or input.shape[0] != n or input.shape[1] != c or input.numel() != n * c * hxw:
        raise RepOpsError(f"{op}: input shape {list(input.shape)} does not match N={n}, C={c}, HxW={hxw}")
    if group <= 0 or c % group:
        raise RepOpsError(f"{op}: {c} channels do not split into {group} groups")
    if hxw * (c // group) == 0:
        raise UnsupportedOpError(f"{op} over zero elements")
    for t in (weight, bias):
        if t is not None:
            _check_float(t, op)
            if tuple(t.shape) != (c,):
                raise RepOpsError(f"{op}: per-channel tensors must have shape [{c}], got {list(t.shape)}")


def native_group_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.native_group_norm.default: (out, mean [N, G], rstd [N, G]); each (n, g) slice of
    C/G * HxW values normalised as layer norm does, then the per-channel affine."""
    op = "aten.native_group_norm.default"
    _gn_check(op, input, weight, bias, N, C, HxW, group)
    xg = input.reshape(N, group, (C // group) * HxW)
    mean = exact_mean(xg, [2], keepdim=True)
    d = torch.sub(xg, mean)
    var = exact_mean(torch.mul(d, d), [2], keepdim=True)
    rstd = mathfn.rsqrt(torch.add(var, torch.tensor(eps, dtype=torch.float32, device=input.device)))
    out = torch.mul(d, rstd).reshape(N, C, HxW)
    out = _affine(out, weight, bias, [1, C, 1]).reshape(input.shape)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


# --- scalar references of the norms ----------------------------------------------------------


def _norm_slice_ref(
    row: list[float], eps32: float, divisor: int | None = None
) -> tuple[list[float], float, float, float]:
    """(d, mean, rstd, var_div) of one slice: layer norm's arithmetic; var_div = exact sum of d*d / divisor."""
    mu = mean_ref(row)
    d = [round_f32(v - mu) for v in row]
    dd = [round_f32(v * v) for v in d]
    var = mean_ref(dd)
    rs = mathfn.rsqrt_ref(round_f32(var + eps32))
    var_div = math.nan
    if divisor is not None:
        special = nonfinite_sum_ref(dd)
        if special is not None:
            var_div = special
        else:
            s, k = exact_sum_ref(dd)
            var_div = round_f32(math.ldexp(float(s), k) / divisor)
    return d, mu, rs, var_div


def _channel_rows(x: torch.Tensor) -> list[list[float]]:
    """Per channel c, the values x[:, c, ...] in row-major order (data movement only)."""
    return x.movedim(1, 0).reshape(x.shape[1], -1).tolist()


def _put_channels(rows: list[list[float]], like: torch.Tensor) -> torch.Tensor:
    moved = list(like.movedim(1, 0).shape)
    return torch.tensor(rows, dtype=torch.float32).reshape(moved).movedim(0, 1).contiguous()


def _affine_ref(v: float, c: int, w: list[float] | None, b: list[float] | None) -> float:
    if w is not None:
        v = round_f32(v * w[c])
    if b is not None:
        v = round_f32(v + b[c])
    return v


def _bn_reference(
    op: str,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    update: bool,
) -> tuple[torch.Tensor, ...]:
    _, _, n = _bn_check(op, input, weight, bias, running_mean, running_var)
    w = weight.tolist() if weight is not None else None
    b = bias.tolist() if bias is not None else None
    eps32 = round_f32(eps)
    rows = _channel_rows(input)
    empty = torch.empty(0, dtype=torch.float32)
    if not training:
        assert running_mean is not None and running_var is not None
        rm, rv = running_mean.tolist(), running_var.tolist()
        out = []
        for c, row in enumerate(rows):
            rs = mathfn.rsqrt_ref(round_f32(rv[c] + eps32))
            out.append([_affine_ref(round_f32(round_f32(v - rm[c]) * rs), c, w, b) for v in row])
        res = (_put_channels(out, input), empty, empty.clone())
        return (*res, running_mean.clone(), running_var.clone()) if update else res
    if n < 2:
        raise RepOpsError(f"{op}: training batch norm needs more than 1 value per channel, got {n}")
    out, means, rstds, vars_u = [], [], [], []
    for c, row in enumerate(rows):
        d, mu, rs, vu = _norm_slice_ref(row, eps32, n - 1)
        out.append([_affine_ref(round_f32(v * rs), c, w, b) for v in d])
        means.append(mu)
        rstds.append(rs)
        vars_u.append(vu)
    res = (_put_channels(out, input), torch.tensor(means), torch.tensor(rstds))
    if not update:
        return res
    assert running_mean is not None and running_var is not None
    m, k = round_f32(momentum), round_f32(1.0 - momentum)
    new_rm = [round_f32(round_f32(k * r) + round_f32(m * v)) for r, v in zip(running_mean.tolist(), means, strict=True)]
    new_rv = [round_f32(round_f32(k * r) + round_f32(m * v)) for r, v in zip(running_var.tolist(), vars_u, strict=True)]
    return (*res, torch.tensor(new_rm, dtype=torch.float32), torch.tensor(new_rv, dtype=torch.float32))


def native_batch_norm_reference(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, ...]:
    op = "aten.native_batch_norm.default"
    if training and (running_mean is not None or running_var is not None):
        raise UnsupportedOpError(f"{op} in training mode with running statistics updates them in place")
    if not training and (running_mean is None or running_var is None):
        raise RepOpsError(f"{op} in evaluation mode needs running_mean and running_var")
    return _bn_reference(op, input, weight, bias, running_mean, running_var, training, momentum, eps, update=False)


def native_batch_norm_legit_functional_reference(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, ...]:
    op = "aten._native_batch_norm_legit_functional.default"
    return _bn_reference(op, input, weight, bias, running_mean, running_var, training, momentum, eps, update=True)


def native_group_norm_reference(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    op = "aten.native_group_norm.default"
    _gn_check(op, input, weight, bias, N, C, HxW, group)
    w = weight.tolist() if weight is not None else None
    b = bias.tolist() if bias is not None else None
    eps32 = round_f32(eps)
    cg = C // group
    rows = input.reshape(N, group, cg * HxW).tolist()
    out: list[float] = []
    means: list[float] = []
    rstds: list[float] = []
    for n_i in range(N):
        for g in range(group):
            d, mu, rs, _ = _norm_slice_ref(rows[n_i][g], eps32)
            out.extend(_affine_ref(round_f32(v * rs), g * cg + j // HxW, w, b) for j, v in enumerate(d))
            means.append(mu)
            rstds.append(rs)
    return (
        torch.tensor(out, dtype=torch.float32).reshape(input.shape),
        torch.tensor(means, dtype=torch.float32).reshape(N, group),
        torch.tensor(rstds, dtype=torch.float32).reshape(N, group),
    )


NORM_OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("aten.mean.default", mean_default, mean_default_reference, SEC_SUM),
        OpSpec("aten.native_batch_norm.default", native_batch_norm, native_batch_norm_reference, SEC_BATCH_NORM),
        OpSpec(
            "aten._native_batch_norm_legit_functional.default",
            native_batch_norm_legit_functional,
            native_batch_norm_legit_functional_reference,
            SEC_BATCH_NORM,
        ),
        OpSpec("aten.native_group_norm.default", native_group_norm, native_group_norm_reference, SEC_GROUP_NORM),
    )
}
OPS.update(NORM_OPS)
