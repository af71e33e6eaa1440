"""Data-movement kernels equal their index-loop references, bit for bit."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops.shape import OPS

SPECIAL = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, -3.5])


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
