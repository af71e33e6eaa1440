"""The dot game's honest computation (offchain.game.dot) against the RepOps kernels, bit for bit.

`DotSide.value_bits` rebuilds an element of mm / addmm from the claim alone (the witnesses' classes, S,
the bias), exactly as DotReferee checks a claim; it must give the kernel's bits at every element, or an
honest defender's claim would be refused. The bisection helpers are checked on their own rules.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from offchain.game.dot import ADDMM, MM, NON_FINITE, DotSide, f32_bits, magnitude_class, split_points
from trainer.repops.linalg import addmm, mm


def _bits(t: torch.Tensor) -> list[int]:
    return t.contiguous().view(torch.int32).reshape(-1).tolist()


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(7)
    cases = []
    for k in (1, 2, 7, 64, 300):
        cases.append((f"randn K={k}", torch.randn(3, k, generator=g), torch.randn(k, 5, generator=g)))
    a = torch.randn(4, 33, generator=g)
    a[0] = 0.0  # an all-zero row
    a[1] *= 1e-40  # subnormals
    a[2, 5] = math.inf
    a[3, 7] = math.nan
    b = torch.randn(33, 5, generator=g) * torch.tensor([1.0, 1e30, 1e-30, 3e38, 1.0])
    b[:, 4] = 0.0
    cases.append(("edges", a, b))
    return cases


@pytest.mark.parametrize("name,a,b", _cases(), ids=[c[0] for c in _cases()])
def test_the_claim_rebuilds_every_element_of_mm_and_addmm_bit_for_bit_succeeds(
    name: str, a: torch.Tensor, b: torch.Tensor
) -> None:
    out = _bits(mm(a, b))
    n = b.shape[1]
    for e, want in enumerate(out):
        assert DotSide(MM, [a, b], e).value_bits() == want & 0xFFFFFFFF, (name, e)
    g = torch.Generator().manual_seed(3)
    for bias in (torch.randn(n, generator=g), torch.randn(1, n, generator=g), torch.randn(a.shape[0], n, generator=g)):
        out = _bits(addmm(bias, a, b))
        for e, want in enumerate(out):
            assert DotSide(ADDMM, [bias, a, b], e).value_bits() == want & 0xFFFFFFFF, (name, tuple(bias.shape), e)


def test_magnitude_class_orders_like_the_grid_exponent_succeeds() -> None:
    values = [0.0, -0.0, 2.0**-149, 2.0**-127, 2.0**-126, 0.75, 1.0, 1.5, 3.4e38]
    keys = [magnitude_class(f32_bits(v)) for v in values]
    assert keys[:2] == [0, 0]
    assert keys[2] == 2 and keys[-1] == 278  # e = -148 .. 128
    assert keys == sorted(keys)
    assert magnitude_class(f32_bits(math.inf)) == magnitude_class(0x7FC00001) == NON_FINITE
    for v in values[2:]:
        assert keys[values.index(v)] - 150 == math.frexp(v)[1]


@pytest.mark.parametrize("lo,hi,arity", [(0, 4096, 16), (0, 7, 16), (3, 5, 2), (0, 1, 4), (10, 100, 64), (0, 300, 8)])
def test_split_points_cover_the_range_in_at_most_arity_parts_succeeds(lo: int, hi: int, arity: int) -> None:
    pts = split_points(lo, hi, arity)
    bounds = [lo, *pts, hi]
    assert len(bounds) - 1 <= arity
    assert all(x < y for x, y in itertools.pairwise(bounds))
    assert (hi - lo <= 1) == (pts == [])


def test_the_honest_challenger_picks_the_first_wrong_end_and_refutes_a_small_exponent_succeeds() -> None:
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(2, 300, generator=g), torch.randn(300, 3, generator=g)
    side = DotSide(MM, [a, b], 4)
    pts = split_points(0, 300, 16)
    honest = list(side.splits(0, 300, 16))
    assert side.pick(0, 300, 16, honest) == len(pts)  # every interior value right: the end is disputed
    lie = list(honest)
    lie[5] += 1
    lie[9] -= 1
    assert side.pick(0, 300, 16, lie) == 5
    assert side.refutation((side.row_key, side.col_key)) is None
    which, at, _ = side.refutation((side.row_key - 1, side.col_key))  # type: ignore[misc]
    assert (which, at) == (0, side.row_at)
    which, at, _ = side.refutation((side.row_key, side.col_key - 1))  # type: ignore[misc]
    assert (which, at) == (1, side.col_at)
