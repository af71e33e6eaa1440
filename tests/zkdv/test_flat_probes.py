"""FlatProbes (the probes gathered straight out of one byte copy of the state) against ProbeSet on views of
the same copy: the same bits, compared as hashes, with signed zeros, infinities and NaNs among the values,
other entries (of other dtypes) between the probed leaves, and the layouts it must refuse."""

from __future__ import annotations

import hashlib

import pytest
import torch

from zkdv.transcript import FlatProbes, Probe, ProbeSet

SHAPES = {
    "param/a": (64, 64),
    "param/b": (64,),
    "param/c": (3, 7, 64),
    "param/d": (128, 10),
    "param/e": (10,),
    "param/f": (256, 256),
    "param/g": (5, 256),
    "param/h": (192, 64),
    "param/i": (1,),
    "param/j": (2, 1),
    "param/k": (4, 64),
    "param/l": (3, 100),
    "param/m": (7, 201),
}
# entries that are not probed, between and around the probed ones (a copy holds the whole state)
OTHERS = {
    "buffer/steps": (torch.int64, (3,)),
    "optim/m/a": (torch.float32, (64, 64)),
    "optim/flag": (torch.int32, (5,)),
    "param/z": (torch.float32, ()),
}


def _values(seed: int, special: bool) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n, shape in SHAPES.items():
        t = torch.randn(shape, generator=g) * 10 ** torch.randint(-8, 8, shape, generator=g).float()
        if special:
            flat = t.reshape(-1)
            flat[::7] = -0.0
            flat[3::97] = float("inf")
            flat[5::131] = float("nan")
            flat[11::151] = float("-nan")
            if n == "param/k":
                t[1] = -0.0
                t[2] = float("-inf")
                t[3, :5] = torch.tensor([float("inf"), float("-inf"), 1.0, -0.0, float("nan")])
        out[n] = t
    return out


def _state(values: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + seed)
    state: dict[str, torch.Tensor] = {}
    for n, (dtype, shape) in OTHERS.items():
        state[n] = torch.randint(-9, 9, shape, generator=g).to(dtype)
    state.update(values)
    return {n: state[n] for n in sorted(state)}  # the copy's order: canonical, probed and other entries mixed


def _copy(state: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.contiguous().reshape(-1).view(torch.uint8) for t in state.values()])


def _views(state: dict[str, torch.Tensor], flat: torch.Tensor) -> dict[str, torch.Tensor]:
    out, off = {}, 0
    for n, t in state.items():
        size = t.numel() * t.element_size()
        out[n] = flat[off : off + size].clone().view(t.dtype).reshape(t.shape)
        off += size
    return out


def _digest(probes: dict[str, bytes]) -> bytes:
    return hashlib.sha256(b"".join(n.encode() + b"\0" + v for n, v in sorted(probes.items()))).digest()


@pytest.mark.parametrize("ratio", [0.01, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("special", [False, True])
def test_flat_probes_match_probe_set(ratio: float, special: bool) -> None:
    probes = {n: Probe(n, shape[-1], ratio) for n, shape in SHAPES.items()}
    group = ProbeSet(probes)
    for seed in range(3):
        state = _state(_values(seed, special), seed)
        plan = FlatProbes.plan(group, [(n, t.dtype, tuple(t.shape)) for n, t in state.items()])
        assert plan is not None
        flat = _copy(state)
        want = group(_views(state, flat))
        got = plan(flat)
        assert list(got) == list(want) == list(probes)
        assert _digest(got) == _digest(want), (ratio, special, seed)
        assert _digest(got) == _digest({n: p(state[n]).numpy().tobytes() for n, p in probes.items()})


def test_flat_probes_refuse_what_they_cannot_gather() -> None:
    probes = ProbeSet({"param/a": Probe("param/a", 8, 0.5)})
    assert FlatProbes.plan(probes, [("param/a", torch.float32, (2, 8))]) is not None
    assert FlatProbes.plan(probes, [("param/a", torch.float64, (2, 8))]) is None  # not float32
    assert FlatProbes.plan(probes, [("buffer/b", torch.uint8, (3,)), ("param/a", torch.float32, (2, 8))]) is None
    assert FlatProbes.plan(probes, [("param/a", torch.float32, (2, 8)), ("z", torch.uint8, (3,))]) is None
    assert FlatProbes.plan(probes, [("param/a", torch.float32, (0, 8))]) is None  # empty
    assert FlatProbes.plan(probes, [("param/b", torch.float32, (2, 8))]) is None  # the leaf is missing
    assert FlatProbes.plan(ProbeSet({}), [("param/a", torch.float32, (2, 8))]) is None
