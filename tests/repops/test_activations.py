"""Activation kernels (trainer/repops/activations.py) and log1p: fast == reference bit for bit
(hypothesis over fp32 bit patterns, strided/transposed/expanded layouts, -0/inf/NaN), 1 vs 2
threads, a row alone vs in a batch of 64, and closeness to torch's own (semantics only)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.repops.test_elementwise import SPECIAL_BITS, same_bits, tensor_in_layout
from trainer.repops import KERNELS, UnsupportedOpError
from trainer.repops import mathfn as M
from trainer.repops.activations import OPS

shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple)
SELECTIONS = {
    "aten.clamp.Tensor",
    "aten.clamp_min.default",
    "aten.clamp_max.default",
    "aten.hardtanh.default",
    "aten.hardtanh_backward.default",  # passes g (its bits) or +0
    "aten.leaky_relu_backward.default",  # passes g where x > 0 (its bits), else RN32(g * s)
}

# (name, extra scalar arguments); every one takes a float32 tensor first
UNARY: list[tuple[str, tuple[Any, ...]]] = [
    ("aten.leaky_relu.default", ()),
    ("aten.leaky_relu.default", (0.2,)),
    ("aten.leaky_relu.default", (-1.5,)),
    ("aten.hardtanh.default", ()),
    ("aten.hardtanh.default", (0.0, 6.0)),
    ("aten.clamp_min.default", (0.1,)),
    ("aten.clamp_max.default", (-0.0,)),
    ("aten.sign.default", ()),
    ("aten.log1p.default", ()),
    ("aten.add.Scalar", (1.0,)),
    ("aten.add.Scalar", (0.1, 3)),
    ("aten.sub.Scalar", (1,)),
    ("aten.mul.Scalar", (0.1,)),
    ("aten.div.Scalar", (3,)),
    ("aten.div.Scalar", (0.0,)),
]
BINARY: list[tuple[str, tuple[Any, ...]]] = [
    ("aten.leaky_relu_backward.default", (0.01, False)),
    ("aten.hardtanh_backward.default", (-1.0, 1.0)),
]


def check(name: str, *args: Any) -> torch.Tensor:
    spec = OPS[name]
    fast, ref = spec.fast(*args), spec.reference(*args)
    assert same_bits(fast, ref), (name, args, fast, ref)
    if name not in SELECTIONS and fast.numel():
        nan = torch.isnan(fast)
        assert bool((fast.view(torch.int32)[nan] == M.CANONICAL_NAN_BITS).all())
    return fast


def from_bits(bits: list[int], shape: tuple[int, ...] = (-1,)) -> torch.Tensor:
    return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy()).reshape(shape)


@pytest.mark.parametrize(("name", "extra"), UNARY)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_unary_fast_equals_reference(name: str, extra: tuple[Any, ...], data: Any) -> None:
    x = data.draw(tensor_in_layout(data.draw(shapes), torch.float32))
    check(name, x, *extra)


@pytest.mark.parametrize(("name", "extra"), BINARY)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_backward_fast_equals_reference(name: str, extra: tuple[Any, ...], data: Any) -> None:
    shape = data.draw(shapes)
    g = data.draw(tensor_in_layout(shape, torch.float32))
    x = data.draw(tensor_in_layout(shape, torch.float32))
    check(name, g, x, *extra)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_clamp_tensor_fast_equals_reference(data: Any) -> None:
    shape = data.draw(shapes)
    x = data.draw(tensor_in_layout(shape, torch.float32))
    lo = data.draw(st.one_of(st.none(), tensor_in_layout(shape, torch.float32)))
    hi = data.draw(tensor_in_layout(shape, torch.float32)) if lo is None or data.draw(st.booleans()) else None
    check("aten.clamp.Tensor", x, lo, hi)


def test_specials() -> None:
    x = from_bits(SPECIAL_BITS)
    for name, extra in UNARY:
        check(name, x, *extra)
    for name, extra in BINARY:
        check(name, x, x.flip(0), *extra)
    check("aten.clamp.Tensor", x, x.flip(0), None)
    nan, inf = math.nan, math.inf
    t = torch.tensor([-0.0, 0.0, nan, inf, -inf, -1.0, -2.0, 1e-30, -1e-30, 3e38])
    y = check("aten.log1p.default", t)
    want = [-0.0, 0.0, nan, inf, nan, -inf, nan, 1e-30, -1e-30, M.log_ref(3e38)]
    assert y.view(torch.int32).tolist() == torch.tensor(want).view(torch.int32).tolist()
    s = check("aten.sign.default", t)
    assert s.view(torch.int32).tolist() == torch.tensor([0.0, 0, 0, 1, -1, -1, -1, 1, -1, 1]).view(torch.int32).tolist()
    lr = check("aten.leaky_relu.default", t, 0.1)
    assert torch.equal(lr[:2].view(torch.int32), t[:2].view(torch.int32))  # -0 * s = -0, +0 * s = +0


def test_log1p_is_accurate() -> None:
    """Against float64 log1p: within one fp32 ulp over 2^18 values spread across binades."""
    g = torch.Generator().manual_seed(3)
    x = (torch.rand(1 << 18, generator=g) * 2 - 1) * torch.exp2(torch.randint(-40, 40, (1 << 18,), generator=g)).float()
    x = x.clamp(min=-0.999999)
    y = M.log1p(x).double()
    exact = torch.log1p(x.double())
    ulp = (torch.nextafter(exact.float(), torch.tensor(math.inf)).double() - exact.float().double()).abs()
    err = ((y - exact).abs() / ulp).max()
    assert float(err) <= 0.5001, float(err)


@pytest.fixture
def restore_threads() -> Iterator[None]:
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


def test_threads_and_batch_rows_do_not_matter(restore_threads: None) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, 1031, generator=g) * 20
    gr = torch.randn(64, 1031, generator=g)
    lo, hi = torch.randn(64, 1031, generator=g) - 1, torch.randn(64, 1031, generator=g) + 1
    cases: list[tuple[str, tuple[Any, ...]]] = [(n, (x, *e)) for n, e in UNARY]
    cases += [(n, (gr, x, *e)) for n, e in BINARY] + [("aten.clamp.Tensor", (x, lo, hi))]
    for name, args in cases:
        fn = KERNELS[name].fast
        torch.set_num_threads(1)
        one = fn(*args)
        torch.set_num_threads(2)
        assert same_bits(one, fn(*args)), name
        row = fn(*[a[17:18] if isinstance(a, torch.Tensor) else a for a in args])
        assert same_bits(row, one[17:18].contiguous()), name


def test_close_to_torch() -> None:
    x = torch.randn(4096) * 6
    g = torch.randn(4096)
    lo, hi = torch.randn(4096) - 1, torch.randn(4096) + 1
    pairs = [
        (OPS["aten.leaky_relu.default"].fast(x, 0.2), F.leaky_relu(x, 0.2)),
        (OPS["aten.hardtanh.default"].fast(x, -2.0, 3.0), F.hardtanh(x, -2.0, 3.0)),
        (OPS["aten.clamp.Tensor"].fast(x, lo, hi), torch.clamp(x, lo, hi)),
        (OPS["aten.sign.default"].fast(x), torch.sign(x)),
        (OPS["aten.log1p.default"].fast(x.abs()), torch.log1p(x.abs())),
        (OPS["aten.div.Scalar"].fast(x, 3), x / 3),
        (
            OPS["aten.leaky_relu_backward.default"].fast(g, x, 0.2, False),
            torch.ops.aten.leaky_relu_backward(g, x, 0.2, False),
        ),
        (
            OPS["aten.hardtanh_backward.default"].fast(g, x, -1.0, 1.0),
            torch.ops.aten.hardtanh_backward(g, x, -1.0, 1.0),
        ),
    ]
    for ours, theirs in pairs:
        assert torch.allclose(ours, theirs, rtol=2e-7, atol=0)


def test_bad_input_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="float32"):
        OPS["aten.leaky_relu.default"].fast(torch.ones(2, dtype=torch.float64))
    with pytest.raises(UnsupportedOpError, match="at least one of min and max"):
        OPS["aten.clamp.Tensor"].fast(torch.ones(2), None, None)
    with pytest.raises(UnsupportedOpError, match="Python number"):
        OPS["aten.mul.Scalar"].fast(torch.ones(2), torch.ones(2))


def test_ops_name_their_section() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "repops" / "elementwise.md").read_text()
    for name, spec in OPS.items():
        assert spec.name == name and spec.section.startswith("docs/repops/elementwise.md: ")
        heading = spec.section.split(": ", 1)[1]
        assert f"## {heading}" in doc or f"### {heading}" in doc, heading
        assert f"`{name}`" in doc, name


@pytest.mark.parametrize("e", [-3, 1.5, -1.5])
def test_new_pow_exponents_match_reference_specials_and_torch(e: float) -> None:
    spec = KERNELS["aten.pow.Tensor_Scalar"]
    x = from_bits(SPECIAL_BITS)
    assert same_bits(spec.fast(x, e), spec.reference(x, e))
    y = torch.rand(4096) * 10 + 1e-3
    assert torch.allclose(spec.fast(y, e), torch.pow(y, e), rtol=4e-7, atol=0)
