"""Data-movement operators: views, slices, concatenation, reordering (docs/repops/shape.md).

None of them does arithmetic on values: each output element is a copy of one input element
(or a constant), chosen by index arithmetic alone, so the result is exact on any machine.
Gathers, scatters and advanced indexing are in trainer.repops.indexing. The fast kernels
are torch's own operators; the references move Python scalars by explicit
index loops written from the spec. Outputs may be views; the interpreter makes them
contiguous where bytes are committed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch

from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError

Tensor = torch.Tensor
aten = torch.ops.aten


class IndexRangeError(RepOpsError, IndexError):
    """An index (or a slice bound, or a dimension) lies outside the tensor it addresses."""


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


# -- slicing, indexing and reordering: shared rules -------------------------------------------


def check_dim(dim: int, ndim: int, op: str) -> int:
    """dim wrapped into [0, ndim); a 0-D tensor counts as 1-D for dims, as in torch."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexRangeError(f"{op}: dimension {dim} is out of range for a {ndim}-D tensor")
    return dim % n


def _slice_range(size: int, start: int | None, end: int | None, step: int, op: str) -> range:
    """The positions slice(start, end, step) selects along an axis of `size` (Python's clamping)."""
    if step < 1:
        raise UnsupportedOpError(f"{op}: step {step}; slices need a step >= 1")
    lo = 0 if start is None else (start + size if start < 0 else start)
    hi = size if end is None else (end + size if end < 0 else end)
    lo, hi = min(max(lo, 0), size), min(max(hi, 0), size)
    return range(lo, max(lo, hi), step)


def _wrap_index(i: int, size: int, op: str, dim: int) -> int:
    if not -size <= i < size:
        raise IndexRangeError(f"{op}: index {i} is out of range for dimension {dim} of size {size}")
    return i + size if i < 0 else i


def _moved_ref(self: Tensor, out_shape: Sequence[int], source: Any) -> Tensor:
    """The tensor of out_shape whose element at i is self's element at source(i) (a tuple)."""
    src, st = _flat(self), _strides(list(self.shape))
    out = [src[_offset(source(idx), st)] for idx in _indices(out_shape)]
    return _make(out, out_shape, self.dtype)


def slice_ref(self: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.slice.Tensor")
    pos = _slice_range(self.shape[d], start, end, step, "aten.slice.Tensor")
    out_shape = list(self.shape)
    out_shape[d] = len(pos)
    return _moved_ref(self, out_shape, lambda i: (*i[:d], pos[i[d]], *i[d + 1 :]))


def select_ref(self: Tensor, dim: int, index: int) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.select.int")
    j = _wrap_index(index, self.shape[d], "aten.select.int", d)
    out_shape = [n for k, n in enumerate(self.shape) if k != d]
    return _moved_ref(self, out_shape, lambda i: (*i[:d], j, *i[d:]))


def _scatter_region_ref(self: Tensor, src: Tensor, d: int, pos: Sequence[int], op: str, keep_dim: bool) -> Tensor:
    """self with positions pos along d replaced by src (src lacks axis d when not keep_dim)."""
    want = list(self.shape)
    if keep_dim:
        want[d] = len(pos)
    else:
        del want[d]
    if list(src.shape) != want or src.dtype != self.dtype:
        raise RepOpsError(f"{op}: src is {src.dtype}{list(src.shape)}, the region is {self.dtype}{want}")
    out, st = _flat(self), _strides(list(self.shape))
    vals = _flat(src)
    for k, idx in enumerate(_indices(want)):
        j = list(idx)
        if keep_dim:
            j[d] = pos[j[d]]
        else:
            j.insert(d, pos[0])
        out[_offset(j, st)] = vals[k]
    return _make(out, list(self.shape), self.dtype)


def slice_scatter_ref(
    self: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    op = "aten.slice_scatter.default"
    d = check_dim(dim, self.dim(), op)
    return _scatter_region_ref(self, src, d, _slice_range(self.shape[d], start, end, step, op), op, True)


def select_scatter_ref(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    op = "aten.select_scatter.default"
    d = check_dim(dim, self.dim(), op)
    return _scatter_region_ref(self, src, d, [_wrap_index(index, self.shape[d], op, d)], op, False)


def _check_stack(tensors: Sequence[Tensor]) -> Tensor:
    if not tensors:
        raise RepOpsError("aten.stack.default of no tensors")
    first = tensors[0]
    if any(t.shape != first.shape or t.dtype != first.dtype for t in tensors):
        want = f"{first.dtype}{list(first.shape)}"
        raise RepOpsError(f"aten.stack.default: every tensor must have the shape and dtype of the first, {want}")
    return first


def stack_ref(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    op = "aten.stack.default"
    first = _check_stack(tensors)
    d = check_dim(dim, first.dim() + 1, op)
    srcs = [(_flat(t), _strides(list(first.shape))) for t in tensors]
    out_shape = list(first.shape)
    out_shape.insert(d, len(tensors))
    out = []
    for idx in _indices(out_shape):
        src, st = srcs[idx[d]]
        out.append(src[_offset(idx[:d] + idx[d + 1 :], st)])
    return _make(out, out_shape, first.dtype)


def split_ref(self: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
    op = "aten.split.Tensor"
    d = check_dim(dim, self.dim(), op)
    n = self.shape[d]
    if split_size < 0 or (split_size == 0 and n > 0):
        raise RepOpsError(f"{op}: split size {split_size} for a dimension of size {n}")
    chunks = max(1, -(-n // split_size)) if split_size else 1
    sizes = [min(split_size, n - k * split_size) for k in range(chunks)]
    return split_with_sizes_ref(self, sizes, d)


def unbind_ref(self: Tensor, dim: int = 0) -> list[Tensor]:
    d = check_dim(dim, self.dim(), "aten.unbind.int")
    return [select_ref(self, d, k) for k in range(self.shape[d])]


def flip_ref(self: Tensor, dims: Sequence[int]) -> Tensor:
    ds = [check_dim(d, self.dim(), "aten.flip.default") for d in dims]
    if len(set(ds)) != len(ds):
        raise RepOpsError(f"aten.flip.default: dimension repeated in {list(dims)}")
    shape = list(self.shape)
    return _moved_ref(self, shape, lambda i: tuple(shape[k] - 1 - v if k in ds else v for k, v in enumerate(i)))


def roll_ref(self: Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> Tensor:
    op = "aten.roll.default"
    if not dims:
        if len(shifts) != 1:
            raise RepOpsError(f"{op}: without dims it takes one shift, got {list(shifts)}")
        return roll_ref(self.reshape(-1), shifts, [0]).reshape(self.shape)
    if len(shifts) != len(dims):
        raise RepOpsError(f"{op}: {len(shifts)} shifts for {len(dims)} dims")
    shape = list(self.shape)
    total = [0] * len(shape)
    for s, d in zip(shifts, dims, strict=True):
        total[check_dim(d, self.dim(), op)] += s
    return _moved_ref(self, shape, lambda i: tuple((v - total[k]) % shape[k] for k, v in enumerate(i)))


def repeat_ref(self: Tensor, repeats: Sequence[int]) -> Tensor:
    if len(repeats) < self.dim() or any(r < 0 for r in repeats):
        raise RepOpsError(f"aten.repeat.default: repeats {list(repeats)} for a {self.dim()}-D tensor")
    padded = [1] * (len(repeats) - self.dim()) + list(self.shape)
    base = self.reshape(padded)
    out_shape = [n * r for n, r in zip(padded, repeats, strict=True)]
    return _moved_ref(base, out_shape, lambda i: tuple(v % padded[k] for k, v in enumerate(i)))


def squeeze_dim_ref(self: Tensor, dim: int) -> Tensor:
    return squeeze_dims_ref(self, [check_dim(dim, self.dim(), "aten.squeeze.dim")])


def squeeze_ref(self: Tensor) -> Tensor:
    return squeeze_dims_ref(self, list(range(self.dim())))


def transpose_ref(self: Tensor, dim0: int, dim1: int) -> Tensor:
    dims = list(range(self.dim()))
    a, b = check_dim(dim0, self.dim(), "aten.transpose.int"), check_dim(dim1, self.dim(), "aten.transpose.int")
    if self.dim() == 0:
        return view_ref(self, [])
    dims[a], dims[b] = dims[b], dims[a]
    return permute_ref(self, dims)


def t_ref(self: Tensor) -> Tensor:
    if self.dim() > 2:
        raise RepOpsError(f"aten.t.default: the input is {self.dim()}-D; t takes at most 2 dimensions")
    return transpose_ref(self, 0, 1) if self.dim() == 2 else view_ref(self, list(self.shape))


def narrow_ref(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    op = "aten.narrow.default"
    d = check_dim(dim, self.dim(), op)
    n = self.shape[d]
    s = start + n if start < 0 else start
    if not 0 <= s <= n or length < 0 or s + length > n:
        raise IndexRangeError(f"{op}: [{start}, {start} + {length}) does not lie in dimension {d} of size {n}")
    return slice_ref(self, d, s, s + length, 1)


# -- fast kernels --------------------------------------------------------------------------


def split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
    return list(aten.split_with_sizes.default(self, list(split_sizes), dim))


def slice_tensor(self: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.slice.Tensor")
    _slice_range(self.shape[d], start, end, step, "aten.slice.Tensor")  # checks the step
    return aten.slice.Tensor(self, d, start, end, step)


def select_int(self: Tensor, dim: int, index: int) -> Tensor:
    d = check_dim(dim, self.dim(), "aten.select.int")
    return aten.select.int(self, d, _wrap_index(index, self.shape[d], "aten.select.int", d))


def _check_region(self: Tensor, src: Tensor, want: list[int], op: str) -> None:
    if list(src.shape) != want or src.dtype != self.dtype:
        raise RepOpsError(f"{op}: src is {src.dtype}{list(src.shape)}, the region is {self.dtype}{want}")


def slice_scatter(
    self: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    op = "aten.slice_scatter.default"
    d = check_dim(dim, self.dim(), op)
    want = list(self.shape)
    want[d] = len(_slice_range(self.shape[d], start, end, step, op))
    _check_region(self, src, want, op)
    return aten.slice_scatter.default(self, src, d, start, end, step)


def select_scatter(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    op = "aten.select_scatter.default"
    d = check_dim(dim, self.dim(), op)
    j = _wrap_index(index, self.shape[d], op, d)
    _check_region(self, src, [n for k, n in enumerate(self.shape) if k != d], op)
    return aten.select_scatter.default(self, src, d, j)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    op = "aten.stack.default"
    first = _check_stack(tensors)
    return aten.stack.default(list(tensors), check_dim(dim, first.dim() + 1, op))


def split_tensor(self: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
    op = "aten.split.Tensor"
    d = check_dim(dim, self.dim(), op)
    n = self.shape[d]
    if split_size < 0 or (split_size == 0 and n > 0):
        raise RepOpsError(f"{op}: split size {split_size} for a dimension of size {n}")
    return list(aten.split.Tensor(self, split_size, d))


def unbind_int(self: Tensor, dim: int = 0) -> list[Tensor]:
    return list(aten.unbind.int(self, check_dim(dim, self.dim(), "aten.unbind.int")))


def flip(self: Tensor, dims: Sequence[int]) -> Tensor:
    ds = [check_dim(d, self.dim(), "aten.flip.default") for d in dims]
    if len(set(ds)) != len(ds):
        raise RepOpsError(f"aten.flip.default: dimension repeated in {list(dims)}")
    return aten.flip.default(self, ds)


def roll(self: Tensor, shifts: Sequence[int], dims: Sequence[int] = ()) -> Tensor:
    op = "aten.roll.default"
    if (not dims and len(shifts) != 1) or (dims and len(shifts) != len(dims)):
        raise RepOpsError(f"{op}: shifts {list(shifts)} do not match dims {list(dims)}")
    ds = [check_dim(d, self.dim(), op) for d in dims]
    return aten.roll.default(self, list(shifts), ds)


def repeat(self: Tensor, repeats: Sequence[int]) -> Tensor:
    if len(repeats) < self.dim() or any(r < 0 for r in repeats):
        raise RepOpsError(f"aten.repeat.default: repeats {list(repeats)} for a {self.dim()}-D tensor")
    return aten.repeat.default(self, list(repeats))


def unsafe_view(self: Tensor, size: Sequence[int]) -> Tensor:
    _infer_shape(size, self.numel())
    return self.reshape(list(size))


def transpose_int(self: Tensor, dim0: int, dim1: int) -> Tensor:
    a, b = check_dim(dim0, self.dim(), "aten.transpose.int"), check_dim(dim1, self.dim(), "aten.transpose.int")
    return aten.transpose.int(self, a, b)


def t_default(self: Tensor) -> Tensor:
    if self.dim() > 2:
        raise RepOpsError(f"aten.t.default: the input is {self.dim()}-D; t takes at most 2 dimensions")
    return aten.t.default(self)


def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    op = "aten.narrow.default"
    d = check_dim(dim, self.dim(), op)
    n = self.shape[d]
    s = start + n if start < 0 else start
    if not 0 <= s <= n or length < 0 or s + length > n:
        raise IndexRangeError(f"{op}: [{start}, {start} + {length}) does not lie in dimension {d} of size {n}")
    return aten.narrow.default(self, d, s, length)


def squeeze_dim(self: Tensor, dim: int) -> Tensor:
    return aten.squeeze.dim(self, check_dim(dim, self.dim(), "aten.squeeze.dim"))


_DOC = "docs/repops/shape.md"
SECTIONS: dict[str, str] = {  # operators specified under their own heading of shape.md
    **dict.fromkeys(
        [
            "aten._unsafe_view.default",
            "aten.transpose.int",
            "aten.t.default",
            "aten.squeeze.dim",
            "aten.squeeze.default",
        ],
        f"{_DOC}: Views",
    ),
    **dict.fromkeys(
        [
            "aten.slice.Tensor",
            "aten.narrow.default",
            "aten.select.int",
            "aten.slice_scatter.default",
            "aten.select_scatter.default",
            "aten.unbind.int",
            "aten.split.Tensor",
        ],
        f"{_DOC}: Slices and selections",
    ),
    **dict.fromkeys(
        ["aten.stack.default", "aten.flip.default", "aten.roll.default", "aten.repeat.default"],
        f"{_DOC}: Reordering and repetition",
    ),
    **dict.fromkeys(
        ["aten.index.Tensor", "aten.index_select.default", "aten.scatter.src"], f"{_DOC}: Advanced indexing"
    ),
    "aten.fmod.Scalar": f"{_DOC}: Index arithmetic",
}


def _spec(name: str, fast: Any, reference: Any) -> OpSpec:
    return OpSpec(name, fast, reference, SECTIONS.get(name, "Data movement"))


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in (
        _spec("aten.view.default", aten.view.default, view_ref),
        _spec("aten._unsafe_view.default", unsafe_view, view_ref),
        _spec("aten.permute.default", aten.permute.default, permute_ref),
        _spec("aten.transpose.int", transpose_int, transpose_ref),
        _spec("aten.t.default", t_default, t_ref),
        _spec("aten.expand.default", aten.expand.default, expand_ref),
        _spec("aten.unsqueeze.default", aten.unsqueeze.default, unsqueeze_ref),
        _spec("aten.squeeze.dims", aten.squeeze.dims, squeeze_dims_ref),
        _spec("aten.squeeze.dim", squeeze_dim, squeeze_dim_ref),
        _spec("aten.squeeze.default", aten.squeeze.default, squeeze_ref),
        _spec("aten.slice.Tensor", slice_tensor, slice_ref),
        _spec("aten.narrow.default", narrow, narrow_ref),
        _spec("aten.select.int", select_int, select_ref),
        _spec("aten.slice_scatter.default", slice_scatter, slice_scatter_ref),
        _spec("aten.select_scatter.default", select_scatter, select_scatter_ref),
        _spec("aten.cat.default", aten.cat.default, cat_ref),
        _spec("aten.stack.default", stack, stack_ref),
        _spec("aten.split_with_sizes.default", split_with_sizes, split_with_sizes_ref),
        _spec("aten.split.Tensor", split_tensor, split_ref),
        _spec("aten.unbind.int", unbind_int, unbind_ref),
        _spec("aten.flip.default", flip, flip_ref),
        _spec("aten.roll.default", roll, roll_ref),
        _spec("aten.repeat.default", repeat, repeat_ref),
    )
}
