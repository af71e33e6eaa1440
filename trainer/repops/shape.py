"""Data-movement operators: views, copies, concatenation, gathers (docs/repops/shape.md).

None of them does arithmetic on values: each output element is a copy of one input element
(or a constant), chosen by index arithmetic alone, so the result is exact on any machine.
The fast kernels are torch's own operators; the references move Python scalars by explicit
index loops written from the spec. Outputs may be views; the interpreter makes them
contiguous where bytes are committed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch

from trainer.repops._spec import OpSpec, UnsupportedOpError

Tensor = torch.Tensor
aten = torch.ops.aten


# -- scalar helpers ------------------------------------------------------------------------


def _flat(t: Tensor) -> list[Any]:
    return t.contiguous().reshape(-1).tolist()


def _make(values: Sequence[Any], shape: Sequence[int], dtype: torch.dtype) -> Tensor:
    return torch.tensor(list(values), dtype=dtype).reshape(tuple(shape))


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def _indices(shape: Sequence[int]) -> itertools.product[tuple[int, ...]]:
    return itertools.product(*(range(d) for d in shape))


def _offset(idx: Sequence[int], strides: Sequence[int]) -> int:
    return sum(i * s for i, s in zip(idx, strides, strict=True))


def _dim(d: int, ndim: int) -> int:
    return d + ndim if d < 0 else d


def _infer_shape(size: Sequence[int], numel: int) -> list[int]:
    shape = list(size)
    if -1 in shape:
        k = shape.index(-1)
        rest = math.prod(d for i, d in enumerate(shape) if i != k)
        shape[k] = numel // rest if rest else 0
    if math.prod(shape) != numel:
        raise UnsupportedOpError(f"view to {list(size)} does not match {numel} elements")
    return shape


# -- references ----------------------------------------------------------------------------


def view_ref(self: Tensor, size: Sequence[int]) -> Tensor:
    return _make(_flat(self), _infer_shape(size, self.numel()), self.dtype)


def permute_ref(self: Tensor, dims: Sequence[int]) -> Tensor:
    shape, src = list(self.shape), _flat(self)
    dims = [_dim(d, len(shape)) for d in dims]
    out_shape = [shape[d] for d in dims]
    st = _strides(shape)
    out = [src[sum(idx[k] * st[dims[k]] for k in range(len(dims)))] for idx in _indices(out_shape)]
    return _make(out, out_shape, self.dtype)


def expand_ref(self: Tensor, size: Sequence[int], implicit: bool = False) -> Tensor:
    shape, src = list(self.shape), _flat(self)
    lead = len(size) - len(shape)
    out_shape = [shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(size)]
    st = _strides(shape)
    out = []
    for idx in _indices(out_shape):
        off = 0
        for k in range(len(shape)):
            i = idx[k + lead]
            off += (0 if shape[k] == 1 else i) * st[k]
        out.append(src[off])
    return _make(out, out_shape, self.dtype)


def unsqueeze_ref(self: Tensor, dim: int) -> Tensor:
    shape = list(self.shape)
    shape.insert(_dim(dim, len(shape) + 1), 1)
    return _make(_flat(self), shape, self.dtype)


def squeeze_dims_ref(self: Tensor, dim: Sequence[int]) -> Tensor:
    ndim = self.dim()
    drop = {_dim(d, max(ndim, 1)) for d in dim}
    shape = [s for i, s in enumerate(self.shape) if not (i in drop and s == 1)]
    return _make(_flat(self), shape, self.dtype)


def cat_ref(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    parts = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)]  # legacy empty tensors are skipped
    d = _dim(dim, parts[0].dim())
    out_shape = list(parts[0].shape)
    out_shape[d] = sum(t.shape[d] for t in parts)
    srcs = [(_flat(t), _strides(list(t.shape)), t.shape[d]) for t in parts]
    out = []
    for idx in _indices(out_shape):
        i = idx[d]
        for src, st, n in srcs:
            if i < n:
                j = list(idx)
                j[d] = i
                out.append(src[_offset(j, st)])
                break
            i -= n
    return _make(out, out_shape, parts[0].dtype)


def split_with_sizes_ref(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
    d = _dim(dim, self.dim())
    src, st = _flat(self), _strides(list(self.shape))
    outs, start = [], 0
    for n in split_sizes:
        shape = list(self.shape)
        shape[d] = n
        vals = []
        for idx in _indices(shape):
            j = list(idx)
            j[d] += start
            vals.append(src[_offset(j, st)])
        outs.append(_make(vals, shape, self.dtype))
        start += n
    return outs


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
    d = _dim(dim, self.dim())
    src, st = _flat(self), _strides(list(self.shape))
    ix = _flat(index)
    out = []
    for k, idx in enumerate(_indices(list(index.shape))):
        j = list(idx)
        j[d] = ix[k]
        out.append(src[_offset(j, st)])
    return _make(out, list(index.shape), self.dtype)


def scatter_value_ref(self: Tensor, dim: int, index: Tensor, value: float) -> Tensor:
    d = _dim(dim, self.dim())
    out, st = _flat(self), _strides(list(self.shape))
    v = torch.tensor(value, dtype=self.dtype).item()  # the scalar in the tensor's dtype, as torch does
    ix = _flat(index)
    for k, idx in enumerate(_indices(list(index.shape))):
        j = list(idx)
        j[d] = ix[k]
        out[_offset(j, st)] = v
    return _make(out, list(self.shape), self.dtype)


# -- fast kernels --------------------------------------------------------------------------


def split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
    return list(aten.split_with_sizes.default(self, list(split_sizes), dim))


def _spec(name: str, fast: Any, reference: Any) -> OpSpec:
    return OpSpec(name, fast, reference, "Data movement")


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in (
        _spec("aten.view.default", aten.view.default, view_ref),
        _spec("aten.permute.default", aten.permute.default, permute_ref),
        _spec("aten.expand.default", aten.expand.default, expand_ref),
        _spec("aten.unsqueeze.default", aten.unsqueeze.default, unsqueeze_ref),
        _spec("aten.squeeze.dims", aten.squeeze.dims, squeeze_dims_ref),
        _spec("aten.cat.default", aten.cat.default, cat_ref),
        _spec("aten.split_with_sizes.default", split_with_sizes, split_with_sizes_ref),
        _spec("aten.embedding.default", aten.embedding.default, embedding_ref),
        _spec("aten.gather.default", aten.gather.default, gather_ref),
        _spec("aten.scatter.value", aten.scatter.value, scatter_value_ref),
    )
}
