"""Data-movement kernels equal their index-loop references, bit for bit."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from trainer.commit import state_root
from trainer.interp import Interpreter
from trainer.program import AdamWConfig, build_step, capture
from trainer.program.onnx_io import from_onnx, to_onnx
from trainer.repops import UnsupportedOpError
from trainer.repops import reduce as R
from trainer.repops.indexing import OPS as INDEXING_OPS
from trainer.repops.shape import OPS as SHAPE_OPS
from trainer.repops.shape import IndexRangeError

OPS = {**SHAPE_OPS, **INDEXING_OPS}

PAYLOAD_NAN = torch.tensor([0x7FC12345, 0xFFC00001 - 2**32], dtype=torch.int32).view(
    torch.float32
)  # NaNs with payloads
SPECIAL = torch.cat([torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, -3.5]), PAYLOAD_NAN])


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = a.contiguous(), b.contiguous()
    if a.dtype.is_floating_point:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    return torch.equal(a, b)


def both(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
    spec = OPS[name]
    return spec.fast(*args, **kwargs), spec.reference(*args, **kwargs)


def tensor_of(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g)
    flat = t.reshape(-1)
    flat[: min(flat.numel(), SPECIAL.numel())] = SPECIAL[: min(flat.numel(), SPECIAL.numel())]
    return t


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), data=st.data())
def test_permute_view_expand_unsqueeze_squeeze(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    t = tensor_of(shape, seed)
    dims = data.draw(st.permutations(range(len(shape))))
    assert same_bits(*both("aten.permute.default", t, dims))
    strided = t.permute(*dims)  # a non-contiguous input
    assert same_bits(*both("aten.view.default", strided.contiguous(), [-1]))
    assert same_bits(*both("aten.permute.default", strided, list(range(len(shape)))[::-1]))
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert same_bits(*both("aten.unsqueeze.default", t, d))
    ones = t.reshape((1, *shape, 1))
    assert same_bits(*both("aten.squeeze.dims", ones, [0, -1]))
    expanded = [3 if s == 1 else s for s in shape]
    assert same_bits(*both("aten.expand.default", t, [2, *expanded]))


@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), data=st.data())
def test_cat_split_gather_scatter(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    t = tensor_of(shape, seed)
    d = data.draw(st.integers(0, len(shape) - 1))
    u = tensor_of(shape, seed + 1)
    assert same_bits(*both("aten.cat.default", [t, u], d))
    n = shape[d]
    sizes = [n // 2, n - n // 2] if n > 1 else [1]
    for a, b in zip(*both("aten.split_with_sizes.default", t, sizes, d), strict=True):
        assert same_bits(a, b)
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, n, shape, generator=g)
    assert same_bits(*both("aten.gather.default", t, d, index))
    assert same_bits(*both("aten.scatter.value", t, d, index, -1.0))


def test_embedding() -> None:
    w = tensor_of((7, 5), 3)
    idx = torch.tensor([[0, 6, 3], [3, 3, 1]])
    assert same_bits(*both("aten.embedding.default", w, idx))


# -- slicing, indexing, reordering ------------------------------------------------------------


def strided_of(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """A non-contiguous tensor of `shape` (every other element of a wider, transposed buffer)."""
    t = tensor_of((*shape[::-1][:-1], 2 * shape[0]), seed).permute(*range(len(shape) - 1, -1, -1))[::2]
    assert t.shape == shape
    return t


bounds = st.one_of(st.none(), st.integers(-6, 6), st.just(2**63 - 1))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), contiguous=st.booleans(), data=st.data())
def test_slice_select_narrow_and_their_scatters(
    shape: tuple[int, ...], seed: int, contiguous: bool, data: st.DataObject
) -> None:
    t = tensor_of(shape, seed) if contiguous else strided_of(shape, seed)
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    start, end, step = data.draw(bounds), data.draw(bounds), data.draw(st.integers(1, 3))
    fast, ref = both("aten.slice.Tensor", t, d, start, end, step)
    assert same_bits(fast, ref) and same_bits(fast, t[(slice(None),) * (d % len(shape)) + (slice(start, end, step),)])
    src = tensor_of(tuple(fast.shape), seed + 1)
    assert same_bits(*both("aten.slice_scatter.default", t, src, d, start, end, step))
    n = shape[d]
    i = data.draw(st.integers(-n, n - 1))
    fast, ref = both("aten.select.int", t, d, i)
    assert same_bits(fast, ref)
    assert same_bits(*both("aten.select_scatter.default", t, tensor_of(tuple(fast.shape), seed + 2), d, i))
    begin = data.draw(st.integers(-n, n))
    length = data.draw(st.integers(0, n - (begin % n if begin < 0 else begin) if begin != n else 0))
    assert same_bits(*both("aten.narrow.default", t, d, begin, length))


index_entry = st.one_of(st.none(), st.sampled_from([(3,), (1,), (2, 1), (2, 3)]))


@settings(max_examples=80, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), contiguous=st.booleans(), data=st.data())
def test_index_tensor_with_none_entries_and_broadcast_indices(
    shape: tuple[int, ...], seed: int, contiguous: bool, data: st.DataObject
) -> None:
    t = tensor_of(shape, seed) if contiguous else strided_of(shape, seed)
    k = data.draw(st.integers(1, len(shape)))
    kinds = data.draw(st.lists(index_entry, min_size=k, max_size=k))
    if all(x is None for x in kinds):
        kinds[data.draw(st.integers(0, k - 1))] = (3,)
    g = torch.Generator().manual_seed(seed)
    broadcastable = [x for x in kinds if x is not None]
    try:
        torch.broadcast_shapes(*broadcastable)
    except RuntimeError:
        kinds = [None if x is None else (3,) for x in kinds]
    indices = [None if x is None else torch.randint(-shape[j], shape[j], x, generator=g) for j, x in enumerate(kinds)]
    fast, ref = both("aten.index.Tensor", t, indices)
    assert same_bits(fast, ref)
    assert fast.shape == torch.ops.aten.index.Tensor(t, indices).shape
    d = data.draw(st.integers(0, len(shape) - 1))
    idx = torch.randint(0, shape[d], (data.draw(st.integers(0, 5)),), generator=g)
    assert same_bits(*both("aten.index_select.default", t, d, idx))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), data=st.data())
def test_scatter_src_last_entry_wins_and_gather(shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    base = tensor_of(shape, seed)
    d = data.draw(st.integers(0, len(shape) - 1))
    g = torch.Generator().manual_seed(seed)
    ishape = tuple(
        data.draw(st.integers(1, 4)) if k == d else data.draw(st.integers(1, n)) for k, n in enumerate(shape)
    )
    index = torch.randint(0, shape[d], ishape, generator=g)  # duplicates are likely
    src = strided_of(tuple(n + 1 for n in ishape), seed + 1)
    assert same_bits(*both("aten.scatter.src", base, d, index, src))
    assert same_bits(*both("aten.gather.default", strided_of(shape, seed), d, index))
    unique = torch.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(len(shape))]).expand(*shape)
    fast = OPS["aten.scatter.src"].fast(base, d, unique.flip(d), tensor_of(shape, seed + 2))
    assert same_bits(fast, torch.scatter(base, d, unique.flip(d), tensor_of(shape, seed + 2)))


def test_scatter_src_duplicates_keep_the_last_entry() -> None:
    out = OPS["aten.scatter.src"].fast(
        torch.zeros(2, 3), 1, torch.tensor([[2, 0, 2], [1, 1, 1]]), torch.arange(6.0).reshape(2, 3)
    )
    assert out.tolist() == [[1.0, 0.0, 2.0], [0.0, 5.0, 0.0]]


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), contiguous=st.booleans(), data=st.data())
def test_stack_split_unbind_flip_roll_repeat(
    shape: tuple[int, ...], seed: int, contiguous: bool, data: st.DataObject
) -> None:
    t = tensor_of(shape, seed) if contiguous else strided_of(shape, seed)
    u = tensor_of(shape, seed + 1)
    assert same_bits(*both("aten.stack.default", [t, u, t], data.draw(st.integers(-len(shape) - 1, len(shape)))))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    for name, args in (("aten.split.Tensor", (t, data.draw(st.integers(1, 5)), d)), ("aten.unbind.int", (t, d))):
        fast, ref = both(name, *args)
        assert len(fast) == len(ref) and all(same_bits(a, b) for a, b in zip(fast, ref, strict=True))
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    assert same_bits(*both("aten.flip.default", t, dims))
    if dims:
        shifts = [data.draw(st.integers(-7, 7)) for _ in dims]
        assert same_bits(*both("aten.roll.default", t, shifts, dims))
    assert same_bits(*both("aten.roll.default", t, [data.draw(st.integers(-9, 9))], []))
    repeats = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape) + 2))
    assert same_bits(*both("aten.repeat.default", t, repeats))


def test_squeeze_transpose_views_and_fmod() -> None:
    t = tensor_of((1, 3, 1, 2), 4)
    for name, args in (
        ("aten.squeeze.dim", (t, 2)),
        ("aten.squeeze.dim", (t, 1)),
        ("aten.squeeze.default", (t,)),
        ("aten.transpose.int", (t.permute(3, 1, 0, 2), 1, -1)),
        ("aten.t.default", (tensor_of((3, 4), 5).t(),)),
        ("aten.t.default", (tensor_of((3,), 5),)),
        ("aten._unsafe_view.default", (t, [3, -1])),
    ):
        assert same_bits(*both(name, *args)), name
    x = torch.arange(-7, 8)
    fast, ref = both("aten.fmod.Scalar", x, 4)
    assert same_bits(fast, ref) and fast.tolist() == [math.fmod(v, 4) for v in range(-7, 8)]


def test_bad_indices_and_arguments_are_named() -> None:
    t = torch.zeros(2, 3)
    cases = [
        (
            IndexRangeError,
            r"aten.select.int: index 3 is out of range for dimension 1 of size 3",
            "aten.select.int",
            (t, 1, 3),
        ),
        (IndexRangeError, r"dimension 2 is out of range for a 2-D", "aten.slice.Tensor", (t, 2, 0, 1, 1)),
        (UnsupportedOpError, r"step 0", "aten.slice.Tensor", (t, 1, 0, 1, 0)),
        (IndexRangeError, r"index 5 is out of range \[-3, 3\)", "aten.index.Tensor", (t, [None, torch.tensor([5])])),
        (UnsupportedOpError, r"boolean mask", "aten.index.Tensor", (t, [torch.tensor([True, False])])),
        (IndexRangeError, r"index -1 is out of range \[0, 3\)", "aten.gather.default", (t, 1, torch.tensor([[-1]]))),
        (IndexRangeError, r"index 2 is out of range \[0, 2\)", "aten.index_select.default", (t, 0, torch.tensor([2]))),
        (IndexRangeError, r"index 9", "aten.scatter.src", (t, 1, torch.tensor([[9]]), t)),
        (IndexRangeError, r"index 9", "aten.scatter.value", (t, 1, torch.tensor([[9]]), 1.0)),
        (
            Exception,
            r"src is torch.float32\[2\], the region is torch.float32\[3\]",
            "aten.select_scatter.default",
            (t, torch.zeros(2), 0, 0),
        ),
        (UnsupportedOpError, r"integer tensors", "aten.fmod.Scalar", (t, 2)),
    ]
    for error, message, name, args in cases:
        for kernel in (OPS[name].fast, OPS[name].reference):
            with pytest.raises(error, match=message):
                kernel(*args)


# -- exact accumulation into indexed positions (reduce.py) -------------------------------------


def values_of(shape: tuple[int, ...], seed: int, kind: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(shape, generator=g)
    if kind == "spread":
        v = v * torch.exp2(torch.randint(-30, 30, shape, generator=g).float())
    elif kind == "special":
        flat = v.reshape(-1)
        k = torch.randint(0, max(flat.numel(), 1), (3,), generator=g)
        if flat.numel():
            flat[k] = torch.tensor([float("inf"), float("-inf"), float("nan")])[: len(k)]
    elif kind == "ties":
        v = torch.round(v * 4) / 4 + 2.0**-40
    return v


kinds = st.sampled_from(["normal", "spread", "special", "ties"])


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), kind=kinds, accumulate=st.booleans(), data=st.data())
def test_index_put_general_form(
    shape: tuple[int, ...], seed: int, kind: str, accumulate: bool, data: st.DataObject
) -> None:
    base = tensor_of(shape, seed)
    k = data.draw(st.integers(1, len(shape)))
    pattern = data.draw(st.lists(st.booleans(), min_size=k, max_size=k))
    pattern[data.draw(st.integers(0, k - 1))] = True
    n = data.draw(st.integers(0, 9))
    g = torch.Generator().manual_seed(seed)
    indices = [torch.randint(-shape[j], shape[j], (n,), generator=g) if p else None for j, p in enumerate(pattern)]
    out_shape = torch.ops.aten.index.Tensor(base, indices).shape
    values = values_of(tuple(out_shape), seed + 1, kind)
    fast = R.index_put(base, indices, values, accumulate)
    assert same_bits(fast, R.index_put_reference(base, indices, values, accumulate))
    assert fast.shape == base.shape
    keys = torch.stack([t % shape[j] for j, t in enumerate(indices) if t is not None], dim=1)
    if not accumulate and n and keys.unique(dim=0).shape[0] == n:  # a copy: with unique positions, torch agrees
        assert same_bits(fast, torch.ops.aten.index_put.default(base, indices, values, False))


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=st.integers(0, 1000), kind=kinds, data=st.data())
def test_scatter_add_and_index_add_equal_their_references(
    shape: tuple[int, ...], seed: int, kind: str, data: st.DataObject
) -> None:
    base = tensor_of(shape, seed)
    d = data.draw(st.integers(0, len(shape) - 1))
    g = torch.Generator().manual_seed(seed)
    ishape = tuple(
        data.draw(st.integers(0, 6)) if k == d else data.draw(st.integers(1, n)) for k, n in enumerate(shape)
    )
    index = torch.randint(0, shape[d], ishape, generator=g)
    src = values_of(tuple(n + 1 for n in ishape), seed + 1, kind)
    fast = R.scatter_add(base, d, index, src)
    assert same_bits(fast, R.scatter_add_reference(base, d, index, src))
    idx = torch.randint(-shape[d], shape[d], (ishape[d],), generator=g)
    source_shape = list(shape)
    source_shape[d] = ishape[d]
    source = values_of(tuple(source_shape), seed + 2, kind)
    assert same_bits(R.index_add(base, d, idx, source), R.index_add_reference(base, d, idx, source))
    assert same_bits(R.index_add(base, d, idx, source), R.index_put(base, [None] * d + [idx], source, True))


def test_the_order_of_duplicate_entries_does_not_matter() -> None:
    g = torch.Generator().manual_seed(3)
    base = values_of((5, 7, 3), 1, "normal")
    index = torch.randint(0, 5, (400, 7, 3), generator=g)  # many duplicates per position
    src = values_of((400, 7, 3), 2, "spread")
    perm = torch.randperm(400, generator=g)
    assert same_bits(R.scatter_add(base, 0, index[perm], src[perm]), R.scatter_add(base, 0, index, src))
    rows, cols = torch.randint(0, 5, (400,), generator=g), torch.randint(-3, 3, (400,), generator=g)
    vals = values_of((400, 7), 4, "spread")
    one = R.index_put(base, [rows, None, cols], vals, True)
    assert same_bits(R.index_put(base, [rows[perm], None, cols[perm]], vals[perm], True), one)
    idx, source, p50 = torch.randint(0, 7, (50,), generator=g), values_of((5, 50, 3), 5, "spread"), perm[perm < 50]
    assert same_bits(R.index_add(base, 1, idx[p50], source[:, p50]), R.index_add(base, 1, idx, source))


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_thread_count_does_not_matter(restore_threads: None) -> None:
    g = torch.Generator().manual_seed(5)
    base = values_of((64, 256), 1, "normal")
    index = torch.randint(0, 64, (4096, 256), generator=g)
    src = values_of((4096, 256), 2, "spread")
    rows = torch.randint(0, 64, (4096,), generator=g)
    runs = []
    for n in (1, 2):
        torch.set_num_threads(n)
        runs.append(
            (
                R.scatter_add(base, 0, index, src),
                R.index_put(base, [rows], src, True),
                R.index_put(base, [rows], src, False),
                OPS["aten.scatter.src"].fast(base, 0, index, src),
            )
        )
    assert all(same_bits(a, b) for a, b in zip(*runs, strict=True))


def test_untouched_positions_keep_their_bits_and_a_zero_sum_is_positive() -> None:
    base = torch.cat([PAYLOAD_NAN, torch.tensor([-0.0, -0.0])]).reshape(2, 2)
    out = R.scatter_add(base, 1, torch.tensor([[0], [1]]), torch.tensor([[0.0], [-0.0]]))
    ref = R.scatter_add_reference(base, 1, torch.tensor([[0], [1]]), torch.tensor([[0.0], [-0.0]]))
    assert same_bits(out, ref)
    assert out.view(torch.int32)[0, 1] == PAYLOAD_NAN.view(torch.int32)[1]  # untouched: the payload NaN stays
    assert out.view(torch.int32)[1].tolist() == [int(torch.tensor(-0.0).view(torch.int32)), 0]  # -0 + (+0 sum) = +0
    assert out.view(torch.int32)[0, 0] == 0x7FC00000  # a NaN that was added to is the canonical NaN


def test_accumulation_rejects_bad_arguments() -> None:
    t = torch.zeros(3, 4)
    with pytest.raises(UnsupportedOpError, match="alpha=2"):
        R.index_add(t, 0, torch.tensor([0]), torch.ones(1, 4), alpha=2)
    with pytest.raises(IndexRangeError, match="index 3 is out of range"):
        R.scatter_add(t, 0, torch.tensor([[3]]), torch.ones(1, 1))
    with pytest.raises(IndexRangeError, match="index -4"):
        R.index_put(t, [torch.tensor([-4])], torch.ones(4), True)
    with pytest.raises(UnsupportedOpError, match="float32"):
        R.scatter_add(t.double(), 0, torch.tensor([[0]]), torch.ones(1, 1).double())
    with pytest.raises(Exception, match="do not broadcast"):
        R.index_put(t, [torch.tensor([0, 1])], torch.ones(3, 4), True)


# -- the rewrites a user tries capture and run: fast kernels = scalar references, bit for bit ---


class MaxDimPool(nn.Module):
    """2x2 max pooling written with reshape, permute and .max(dim) (its backward is scatter.src)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, x_BHW: torch.Tensor) -> torch.Tensor:
        h = self.lin(x_BHW)
        b = h.shape[0]
        h = h.reshape(b, 2, 2, 2, 2).permute(0, 1, 3, 2, 4).reshape(b, 2, 2, 4)
        return self.head(h.max(dim=-1).values.reshape(b, 4))


class IndexIm2col(nn.Module):
    """A 3x3 convolution as im2col by advanced indexing (index.Tensor, backward index_put) and matmul."""

    def __init__(self) -> None:
        super().__init__()
        self.kernel = nn.Linear(9, 2)
        self.head = nn.Linear(2 * 4, 3)
        rows = (torch.arange(2).reshape(2, 1) + torch.arange(3).reshape(1, 3)).reshape(2, 1, 3, 1)
        cols = (torch.arange(2).reshape(2, 1) + torch.arange(3).reshape(1, 3)).reshape(1, 2, 1, 3)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)

    def forward(self, x_BHW: torch.Tensor) -> torch.Tensor:
        b = x_BHW.shape[0]
        patches = x_BHW[:, self.get_buffer("rows"), self.get_buffer("cols")].reshape(
            b, 4, 9
        )  # B, 2x2 positions, 3x3 window
        return self.head(torch.relu(self.kernel(patches)).reshape(b, 8))


class GRULoop(nn.Module):
    """A GRU written by hand: Linear + sigmoid/tanh + chunk over time steps, stacked."""

    def __init__(self, d: int = 3, h: int = 4) -> None:
        super().__init__()
        self.h = h
        self.x2h, self.h2h, self.head = nn.Linear(d, 3 * h), nn.Linear(h, 3 * h), nn.Linear(h, 3)

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        h = x_BTD.new_zeros(x_BTD.shape[0], self.h)
        outs = []
        for t in range(x_BTD.shape[1]):
            xr, xz, xn = self.x2h(x_BTD[:, t]).chunk(3, dim=1)
            hr, hz, hn = self.h2h(h).chunk(3, dim=1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * torch.tanh(xn + r * hn) + z * h
            outs.append(h)
        return self.head(torch.stack(outs, dim=1)[:, -1])


class LSTMLoop(nn.Module):
    """An LSTM written by hand: one Linear over cat([x_t, h]), gates by slicing."""

    def __init__(self, d: int = 3, h: int = 4) -> None:
        super().__init__()
        self.h = h
        self.gates, self.head = nn.Linear(d + h, 4 * h), nn.Linear(h, 3)

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        b, n, h_ = x_BTD.shape[0], x_BTD.shape[1], self.h
        h, c = x_BTD.new_zeros(b, h_), x_BTD.new_zeros(b, h_)
        outs = []
        for t in range(n):
            g = self.gates(torch.cat([x_BTD[:, t], h], dim=1))
            i, f, o, u = g[:, :h_], g[:, h_ : 2 * h_], g[:, 2 * h_ : 3 * h_], g[:, 3 * h_ :]
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(u)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return self.head(torch.stack(outs, 1).flip(1)[:, 0])


class TorchRNN(nn.Module):
    """nn.GRU / nn.LSTM themselves: capture functionalizes their in-place cells (mkldnn off)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(3, 4, batch_first=True)
        self.head = nn.Linear(4, 3)

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x_BTD)
        return self.head(out[:, -1])


@pytest.mark.parametrize(
    ("model", "x_shape"),
    [
        (MaxDimPool, (2, 4, 4)),
        (IndexIm2col, (2, 4, 4)),
        (GRULoop, (2, 3, 3)),
        (LSTMLoop, (2, 3, 3)),
        (lambda: TorchRNN("GRU"), (2, 3, 3)),
        (lambda: TorchRNN("LSTM"), (2, 3, 3)),
    ],
    ids=["maxdim_pool", "index_im2col", "gru_loop", "lstm_loop", "nn_gru", "nn_lstm"],
)
def test_user_rewrites_capture_and_their_reference_run_gives_the_fast_bits(
    model: Callable[[], nn.Module], x_shape: tuple[int, ...], restore_threads: None
) -> None:
    torch.manual_seed(0)
    step = build_step(model(), F.cross_entropy, AdamWConfig(lr=1e-2, clip_grad_norm=1.0))
    state = step.init_state()
    batch = {"x": torch.randn(x_shape), "y": torch.tensor([0, 2])}
    program = capture(step, state, batch)
    assert from_onnx(to_onnx(program)).program_hash == program.program_hash  # the new ops survive the artifact
    fast_state, fast_loss, fast_trace = Interpreter(program).trace(state, batch)
    ref_state, _, ref_trace = Interpreter(program, use="reference").trace(state, batch)
    mismatched = [
        program.nodes[a.index].op for a, b in zip(fast_trace.records, ref_trace.records, strict=True) if a != b
    ]
    assert not mismatched, f"reference and fast kernels differ at: {mismatched[:5]}"
    assert state_root(fast_state) == state_root(ref_state)
    torch.set_num_threads(1)
    assert Interpreter(program).trace(state, batch)[2].root == fast_trace.root
    _, eager_loss = step.fn(state, batch)
    assert abs(float(fast_loss) - float(eager_loss)) < 1e-5
