"""ProbeSet (probes computed by groups of equal last dimension) against Probe per leaf: the same bits,
compared as hashes, on random values with signed zeros, infinities and NaNs among them."""

from __future__ import annotations

import hashlib

import pytest
import torch

from zkdv.transcript import Probe, ProbeSet

SHAPES = {"param/a": (64, 64), "param/b": (64,), "param/c": (3, 7, 64), "param/d": (128, 10), "param/e": (10,),
          "param/f": (256, 256), "param/g": (5, 256), "param/h": (192, 64), "param/i": (1,), "param/j": (2, 1),
          "param/k": (4, 64), "param/l": (3, 100), "param/m": (7, 201)}


def _values(seed: int, special: bool) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n, shape in SHAPES.items():
        t = torch.randn(shape, generator=g) * 10 ** torch.randint(-8, 8, shape, generator=g).float()
        if special:
            flat = t.reshape(-1)
            flat[:: 7] = -0.0
            flat[3:: 97] = float("inf")
            flat[5:: 131] = float("nan")
            if n == "param/k":
                t[1] = -0.0  # slices of negative zeros only
                t[2] = float("-inf")
                t[3, :5] = torch.tensor([float("inf"), float("-inf"), 1.0, -0.0, float("nan")])
        out[n] = t
    return out


def _digest(probes: dict[str, bytes]) -> bytes:
    return hashlib.sha256(b"".join(n.encode() + b"\0" + v for n, v in sorted(probes.items()))).digest()


@pytest.mark.parametrize("ratio", [0.01, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("special", [False, True])
def test_probe_set_matches_probe_per_leaf(ratio: float, special: bool) -> None:
    probes = {n: Probe(n, shape[-1], ratio) for n, shape in SHAPES.items()}
    group = ProbeSet(probes)
    for seed in range(3):
        values = _values(seed, special)
        want = {n: p(values[n]).numpy().tobytes() for n, p in probes.items()}
        got = group(values)
        assert list(got) == list(want)
        assert _digest(got) == _digest(want), (ratio, special, seed)
