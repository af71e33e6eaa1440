"""Indexing operators: advanced indexing, index_select, gather, scatter, embedding, and the
integer index arithmetic of torch's decompositions (docs/repops/shape.md).

Every output element is a copy of one input element (or a constant) chosen by index values,
so the fast kernels are torch's own operators after RepOps' checks: index dtypes, ranges (an
`IndexRangeError` naming the operator, index and dimension, never torch's internal message)
and shapes. Where torch leaves the winner of duplicate writes unspecified (scatter.src,
index_put without accumulation), the last entry in row-major order wins, picked by an exact
int64 maximum. The exact accumulating forms (index_put accumulate=True, index_add,
scatter_add) are in trainer.repops.reduce, which uses the offset helpers here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError
from trainer.repops.shape import (
    SECTIONS,
    IndexRangeError,
    _flat,
    _indices,
    _make,
    _moved_ref,
    _offset,
    _strides,
    check_dim,
)

Tensor = torch.Tensor
aten = torch.ops.aten
_INDEX_DTYPES = (torch.int64, torch.int32)


def embedding_ref(
    weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False
) -> Tensor:
    rows, dim = weight.shape
    w = _flat(weight)
    out = []
    for i in _flat(indices):
        if not 0 <= i < rows:
            raise IndexError(f"embedding index {i} is out of range for {rows} rows")
        out.extend(w[i * dim : (i + 1) * dim])
    return _make(out, [*indices.shape, dim], weight.dtype)


def gather_ref(self: Tensor, dim: int, index: Tensor, sparse_grad: bool = False) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.gather.default")
    check_index_tensor(index, self.shape[d] if self.dim() else 1, "aten.gather.default", d, allow_negative=False)
    src, st = _flat(self), _strides(list(self.shape))
    ix = _flat(index)
    out = []
    for k, idx in enumerate(_indices(list(index.shape))):
        j = list(idx)
        j[d] = ix[k]
        out.append(src[_offset(j, st)])
    return _make(out, list(index.shape), self.dtype)


def scatter_value_ref(self: Tensor, dim: int, index: Tensor, value: float) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.scatter.value")
    check_scatter(self, d, index, None, "aten.scatter.value")
    out, st = _flat(self), _strides(list(self.shape))
    v = torch.tensor(value, dtype=self.dtype).item()  # the scalar in the tensor's dtype, as torch does
    ix = _flat(index)
    for k, idx in enumerate(_indices(list(index.shape))):
        j = list(idx)
        j[d] = ix[k]
        out[_offset(j, st)] = v
    return _make(out, list(self.shape), self.dtype)


def check_index_tensor(index: Tensor, size: int, op: str, dim: int, *, allow_negative: bool) -> None:
    """Refuses float/bool index tensors and indices outside [-size, size) (or [0, size))."""
    if index.dtype not in _INDEX_DTYPES:
        raise UnsupportedOpError(f"{op}: index of dtype {index.dtype}; RepOps takes int64 or int32 indices")
    if index.numel() == 0:
        return
    lo, hi = int(index.min()), int(index.max())
    low = -size if allow_negative else 0
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        span = f"[{low}, {size})"
        raise IndexRangeError(f"{op}: index {bad} is out of range {span} for dimension {dim} of size {size}")


def index_shapes(
    shape: Sequence[int], indices: Sequence[Tensor | None], op: str
) -> tuple[list[int], list[int], list[int], int, list[Tensor]]:
    """For advanced indexing: (tensor dims, other dims, broadcast index shape, where the index
    block sits in the result, the index tensors broadcast and wrapped to int64)."""
    if len(indices) > len(shape):
        raise IndexRangeError(f"{op}: {len(indices)} indices for a {len(shape)}-D tensor")
    tdims = [k for k, t in enumerate(indices) if t is not None]
    if not tdims:
        raise UnsupportedOpError(f"{op} without an index tensor")
    for k in tdims:
        t = indices[k]
        assert t is not None
        if t.dtype in (torch.bool, torch.uint8):
            raise UnsupportedOpError(f"{op}: a boolean mask index has a data-dependent shape; index with integers")
        check_index_tensor(t, shape[k], op, k, allow_negative=True)
    try:
        ts = torch.broadcast_tensors(*[indices[k] for k in tdims])  # type: ignore[misc]
    except RuntimeError:
        shapes = [list(indices[k].shape) for k in tdims]  # type: ignore[union-attr]
        raise RepOpsError(f"{op}: index shapes {shapes} do not broadcast together") from None
    wrapped = [torch.where(t < 0, t + shape[k], t).to(torch.int64) for t, k in zip(ts, tdims, strict=True)]
    others = [k for k in range(len(shape)) if k not in tdims]
    adjacent = tdims == list(range(tdims[0], tdims[-1] + 1))
    at = tdims[0] if adjacent else 0
    return tdims, others, list(ts[0].shape), at, wrapped


def _index_out_shape(shape: Sequence[int], others: list[int], ishape: list[int], at: int) -> list[int]:
    rest = [shape[k] for k in others]
    return rest[:at] + ishape + rest[at:]


def index_ref(self: Tensor, indices: Sequence[Tensor | None]) -> Tensor:
    shape = list(self.shape)
    tdims, others, ishape, at, ts = index_shapes(shape, indices, "aten.index.Tensor")
    flat_ix = [_flat(t) for t in ts]
    ist = _strides(ishape)
    ni = len(ishape)

    def source(i: tuple[int, ...]) -> tuple[int, ...]:
        n = _offset(i[at : at + ni], ist)
        rest = i[:at] + i[at + ni :]
        j = [0] * len(shape)
        for k, r in zip(others, rest, strict=True):
            j[k] = r
        for k, ix in zip(tdims, flat_ix, strict=True):
            j[k] = ix[n]
        return tuple(j)

    return _moved_ref(self, _index_out_shape(shape, others, ishape, at), source)


def index_select_ref(self: Tensor, dim: int, index: Tensor) -> Tensor:
    op = "aten.index_select.default"
    d = check_dim(dim, self.dim(), op)
    if index.dim() > 1:
        raise RepOpsError(f"{op}: the index must be 0-D or 1-D, got {index.dim()}-D")
    size = self.shape[d] if self.dim() else 1
    check_index_tensor(index, size, op, d, allow_negative=False)
    ix = _flat(index)
    if self.dim() == 0:
        return _make([_flat(self)[0] for _ in ix], [] if index.dim() == 0 else [len(ix)], self.dtype)
    out_shape = list(self.shape)
    out_shape[d] = len(ix)
    return _moved_ref(self, out_shape, lambda i: (*i[:d], ix[i[d]], *i[d + 1 :]))


def check_scatter(self: Tensor, d: int, index: Tensor, src: Tensor | None, op: str) -> None:
    if index.dim() != self.dim() or (src is not None and src.dim() != self.dim()):
        raise RepOpsError(f"{op}: self, index and src must have the same number of dimensions")
    for k, n in enumerate(index.shape):
        if (src is not None and n > src.shape[k]) or (k != d and n > self.shape[k]):
            raise RepOpsError(f"{op}: index shape {list(index.shape)} exceeds src or self on dimension {k}")
    if src is not None and src.dtype != self.dtype:
        raise UnsupportedOpError(f"{op}: src is {src.dtype} and self {self.dtype}; RepOps needs one dtype")
    check_index_tensor(index, self.shape[d] if self.dim() else 1, op, d, allow_negative=False)


def scatter_src_ref(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    op = "aten.scatter.src"
    d = check_dim(dim, self.dim(), op)
    check_scatter(self, d, index, src, op)
    out, st = _flat(self), _strides(list(self.shape))
    vals, sst = _flat(src), _strides(list(src.shape))
    ix = _flat(index)
    for k, idx in enumerate(_indices(list(index.shape))):  # row-major order: the last write wins
        j = list(idx)
        j[d] = ix[k]
        out[_offset(j, st)] = vals[_offset(idx, sst)]
    return _make(out, list(self.shape), self.dtype)


def fmod_scalar_ref(self: Tensor, other: int) -> Tensor:
    _check_int_fmod(self, other)
    out = []
    for a in _flat(self):
        r = abs(a) % abs(other)
        out.append(-r if a < 0 else r)  # C's remainder: truncated quotient, sign of the dividend
    return _make(out, list(self.shape), self.dtype)


def _check_int_fmod(self: Tensor, other: Any) -> None:
    op = "aten.fmod.Scalar"
    if self.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8) or type(other) is not int:
        raise UnsupportedOpError(
            f"{op} on {self.dtype} by {type(other).__name__}: RepOps defines fmod only for integer tensors and "
            "integer divisors (index arithmetic, as in torch's roll decomposition)"
        )
    if other == 0:
        raise RepOpsError(f"{op}: integer division by zero")


def gather(self: Tensor, dim: int, index: Tensor, sparse_grad: bool = False) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.gather.default")
    check_index_tensor(index, self.shape[d] if self.dim() else 1, "aten.gather.default", d, allow_negative=False)
    return aten.gather.default(self, dim, index)


def scatter_value(self: Tensor, dim: int, index: Tensor, value: float) -> Tensor:
    op = "aten.scatter.value"
    d = check_dim(dim, self.dim(), op)
    check_scatter(self, d, index, None, op)
    return aten.scatter.value(self, dim, index, value)


def index_tensor(self: Tensor, indices: Sequence[Tensor | None]) -> Tensor:
    index_shapes(list(self.shape), indices, "aten.index.Tensor")  # dtypes, ranges, broadcasting
    return aten.index.Tensor(self, list(indices))


def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    op = "aten.index_select.default"
    d = check_dim(dim, self.dim(), op)
    if index.dim() > 1:
        raise RepOpsError(f"{op}: the index must be 0-D or 1-D, got {index.dim()}-D")
    check_index_tensor(index, self.shape[d] if self.dim() else 1, op, d, allow_negative=False)
    return aten.index_select.default(self, d, index)


def scatter_offsets(shape: Sequence[int], index: Tensor, d: int) -> Tensor:
    """int64 tensor of index's shape: the row-major offset in a tensor of `shape` of the position
    that entry i of a scatter along d names (i with axis d replaced by index[i])."""
    st = _strides(list(shape))
    dest = index.to(torch.int64) * st[d]
    for k, n in enumerate(index.shape):
        if k != d:
            view = [1] * index.dim()
            view[k] = n
            dest = dest + torch.arange(n, device=index.device).reshape(view) * st[k]
    return dest


def index_offsets(
    shape: Sequence[int], indices: Sequence[Tensor | None], op: str
) -> tuple[Tensor, list[int], int, int]:
    """For advanced indexing of a tensor of `shape`: (offsets (N, C) int64, the result shape,
    where the index block sits in it, its number of dims). Row n is the n-th entry of the broadcast index tensors
    (row-major), column c the c-th position of the other dims (row-major); offsets are row-major
    offsets into the indexed tensor."""
    tdims, others, ishape, at, ts = index_shapes(shape, indices, op)
    st = _strides(list(shape))
    device = ts[0].device
    rows = torch.zeros(math.prod(ishape), dtype=torch.int64, device=device)
    for k, t in zip(tdims, ts, strict=True):
        rows = rows + t.reshape(-1) * st[k]
    cols = torch.zeros((), dtype=torch.int64, device=device)
    for k in others:
        cols = cols.unsqueeze(-1) + torch.arange(shape[k], device=device) * st[k]
    return rows.unsqueeze(1) + cols.reshape(1, -1), _index_out_shape(shape, others, ishape, at), at, len(ishape)


def index_values(values: Tensor, out_shape: Sequence[int], at: int, n_index_dims: int, op: str) -> Tensor:
    """values broadcast to the indexing result's shape, as the (N, C) matrix index_offsets uses."""
    try:
        v = values.expand(list(out_shape))
    except RuntimeError:
        raise RepOpsError(f"{op}: values of shape {list(values.shape)} do not broadcast to {list(out_shape)}") from None
    ni = n_index_dims
    v = v.movedim(list(range(at, at + ni)), list(range(ni)))
    n = math.prod(v.shape[:ni])
    return v.reshape(n, -1) if n else v.reshape(0, math.prod(v.shape[ni:]))


def scatter_src(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """aten.scatter.src; where entries of one column name the same position, the last in
    row-major order of index wins (found by an exact int64 amax, so no write order matters)."""
    op = "aten.scatter.src"
    d = check_dim(dim, self.dim(), op)
    check_scatter(self, d, index, src, op)
    if index.numel() == 0:
        return self.clone()
    if self.dim() == 0 or index.shape[d] == 1:  # one entry per column: no position is named twice
        return aten.scatter.src(self, dim, index, src)
    dest = scatter_offsets(list(self.shape), index, d)
    order = torch.arange(index.numel(), device=self.device)
    last = torch.full((self.numel(),), -1, dtype=torch.int64, device=self.device)
    last.scatter_reduce_(0, dest.reshape(-1), order, "amax")
    vals = src[tuple(slice(0, n) for n in index.shape)].reshape(-1)
    picked = vals[last.clamp(min=0)]
    return torch.where(last >= 0, picked, self.reshape(-1)).reshape(self.shape)


def fmod_scalar(self: Tensor, other: int) -> Tensor:
    _check_int_fmod(self, other)
    return aten.fmod.Scalar(self, other)


def _spec(name: str, fast: Any, reference: Any) -> OpSpec:
    return OpSpec(name, fast, reference, SECTIONS.get(name, "Data movement"))


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in (
        _spec("aten.embedding.default", aten.embedding.default, embedding_ref),
        _spec("aten.gather.default", gather, gather_ref),
        _spec("aten.index.Tensor", index_tensor, index_ref),
        _spec("aten.index_select.default", index_select, index_select_ref),
        _spec("aten.scatter.value", scatter_value, scatter_value_ref),
        _spec("aten.scatter.src", scatter_src, scatter_src_ref),
        _spec("aten.fmod.Scalar", fmod_scalar, fmod_scalar_ref),
    )
}
