"""Batch norm (training with and without running statistics, evaluation), group norm and the
full mean (reduce.py's norm block): fast == reference bit for bit over shapes, value kinds
(spread, ties, tiny, -0/inf/NaN), layouts; 1 vs 2 threads; batch order and batch rows; close
to torch's own (semantics only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.repops.test_reduce import KINDS, assert_same, sample
from trainer.repops import KERNELS, RepOpsError
from trainer.repops.reduce import NORM_OPS

BN = NORM_OPS["aten.native_batch_norm.default"]
BNF = NORM_OPS["aten._native_batch_norm_legit_functional.default"]
GN = NORM_OPS["aten.native_group_norm.default"]
MEAN = NORM_OPS["aten.mean.default"]


def both(spec: Any, *args: Any) -> Any:
    fast, ref = spec.fast(*args), spec.reference(*args)
    assert_same(tuple(fast), tuple(ref))
    return fast


@st.composite
def bn_case(
    draw: st.DrawFn,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    rest = draw(st.lists(st.integers(1, 4), min_size=0, max_size=2))
    n, c = draw(st.integers(1, 9)), draw(st.integers(1, 5))
    if n * (1 if not rest else int(torch.tensor(rest).prod())) < 2:
        n = 2
    kind, seed = draw(st.sampled_from(KINDS)), draw(st.integers(0, 2**31))
    x = sample((n, c, *rest), kind, seed)
    if draw(st.booleans()) and x.dim() >= 2:  # a non-contiguous view with the same values
        x = x.transpose(0, 1).contiguous().transpose(0, 1)
    w = sample((c,), "normal", seed + 1) if draw(st.booleans()) else None
    b = sample((c,), "normal", seed + 2) if draw(st.booleans()) else None
    rm = sample((c,), "normal", seed + 3)
    rv = sample((c,), "normal", seed + 4).abs()
    return x, w, b, rm, rv


@settings(max_examples=80, deadline=None)
@given(case=bn_case(), momentum=st.sampled_from([0.1, 0.01, 0.5]), eps=st.sampled_from([1e-5, 1e-3]))
def test_batch_norm_fast_equals_reference(case: Any, momentum: float, eps: float) -> None:
    x, w, b, rm, rv = case
    both(BN, x, w, b, None, None, True, momentum, eps)
    both(BN, x, w, b, rm, rv, False, momentum, eps)
    both(BNF, x, w, b, rm, rv, True, momentum, eps)
    both(BNF, x, w, b, rm, rv, False, momentum, eps)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 4),
    groups=st.sampled_from([1, 2, 3]),
    per=st.integers(1, 3),
    hw=st.lists(st.integers(1, 4), min_size=0, max_size=2),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**31),
    affine=st.booleans(),
)
def test_group_norm_fast_equals_reference(
    n: int, groups: int, per: int, hw: list[int], kind: str, seed: int, affine: bool
) -> None:
    c = groups * per
    x = sample((n, c, *hw), kind, seed)
    w = sample((c,), "normal", seed + 1) if affine else None
    b = sample((c,), "normal", seed + 2) if affine else None
    hxw = int(torch.tensor(hw).prod()) if hw else 1
    both(GN, x, w, b, n, c, hxw, groups, 1e-5)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 7), min_size=0, max_size=3).map(tuple), kind=st.sampled_from(KINDS))
def test_full_mean_fast_equals_reference(shape: tuple[int, ...], kind: str) -> None:
    x = sample(shape, kind, 11)
    assert_same(MEAN.fast(x), MEAN.reference(x))


@pytest.fixture
def restore_threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


def test_threads_do_not_matter(restore_threads: None) -> None:
    x = sample((256, 16, 33), "spread", 1)
    w, b = sample((16,), "normal", 2), sample((16,), "normal", 3)
    rm, rv = sample((16,), "normal", 4), sample((16,), "normal", 5).abs()
    calls = [
        (BNF.fast, (x, w, b, rm, rv, True, 0.1, 1e-5)),
        (BN.fast, (x, w, b, None, None, True, 0.1, 1e-5)),
        (GN.fast, (x, w, b, 256, 16, 33, 4, 1e-5)),
    ]
    for fn, args in calls:
        torch.set_num_threads(1)
        one = fn(*args)
        torch.set_num_threads(2)
        assert_same(tuple(one), tuple(fn(*args)))


def test_batch_order_does_not_matter_and_group_norm_rows_are_independent() -> None:
    x = sample((64, 8, 5), "spread", 7)
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(0))
    rm, rv = torch.zeros(8), torch.ones(8)
    a = BNF.fast(x, None, None, rm, rv, True, 0.1, 1e-5)
    p = BNF.fast(x[perm], None, None, rm, rv, True, 0.1, 1e-5)
    assert_same(a[0][perm], p[0])
    assert_same(tuple(a[1:]), tuple(p[1:]))  # exact batch statistics: order-free
    g = GN.fast(x, None, None, 64, 8, 5, 2, 1e-5)
    row = GN.fast(x[17:18], None, None, 1, 8, 5, 2, 1e-5)
    assert_same(g[0][17:18].contiguous(), row[0])
    assert_same(g[1][17:18].contiguous(), row[1])


def test_close_to_torch() -> None:
    x = torch.randn(32, 6, 7) * 3 + 1
    w, b = torch.randn(6), torch.randn(6)
    rm, rv = torch.randn(6), torch.rand(6) + 0.5
    out, mean, _, nrm, nrv = BNF.fast(x, w, b, rm, rv, True, 0.1, 1e-5)
    trm, trv = rm.clone(), rv.clone()
    want = F.batch_norm(x, trm, trv, w, b, training=True, momentum=0.1, eps=1e-5)
    assert torch.allclose(out, want, atol=1e-5)
    assert torch.allclose(nrm, trm, atol=1e-6) and torch.allclose(nrv, trv, atol=1e-6)
    assert torch.allclose(mean, x.mean(dim=(0, 2)), atol=1e-6)
    ev = BN.fast(x, w, b, rm, rv, False, 0.1, 1e-5)[0]
    assert torch.allclose(ev, F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5), atol=1e-5)
    g = GN.fast(x, w, b, 32, 6, 7, 3, 1e-5)[0]
    assert torch.allclose(g, F.group_norm(x, 3, w, b, 1e-5), atol=1e-5)


def test_bad_input_is_refused() -> None:
    x = torch.randn(1, 3)
    with pytest.raises(RepOpsError, match="more than 1 value per channel"):
        BNF.fast(x, None, None, torch.zeros(3), torch.ones(3), True, 0.1, 1e-5)
    with pytest.raises(RepOpsError, match="shape \\[3\\]"):
        BN.fast(torch.randn(4, 3), torch.ones(4), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RepOpsError, match="do not split into 2 groups"):
        GN.fast(torch.randn(2, 3), None, None, 2, 3, 1, 2, 1e-5)
    with pytest.raises(RepOpsError, match="rewrites it"):
        BN.fast(torch.randn(4, 3), None, None, torch.zeros(3), torch.ones(3), True, 0.1, 1e-5)
    assert all(name in KERNELS for name in NORM_OPS)
