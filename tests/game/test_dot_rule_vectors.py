"""The DotReferee rule, takeover and move-gas forge vectors (scripts/dot_rule_vectors.py): the grid arithmetic
reproduces RepOps' mm/addmm bits, and the files are current."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

from trainer.repops import KERNELS

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dot_rule_vectors", ROOT / "scripts" / "dot_rule_vectors.py")
assert _spec is not None and _spec.loader is not None
vec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vec)


def test_rule_vectors_grid_reproduces_kernel_bits() -> None:
    """Every element of every case's output, recomputed from exponents and the exact S, is the kernel's."""
    gen = torch.Generator().manual_seed(5)
    for k in (1, 2, 7, 64, 300):
        a, b = vec._inputs(gen, k)
        out = KERNELS["aten.mm.default"].fast(a, b)
        kernel = [int(v) for v in out.reshape(-1).view(torch.int32).tolist()]
        kernel = [v & 0xFFFFFFFF for v in kernel]
        mine = [vec.dot_element(a, b, e // 5, e % 5)["value"] for e in range(30)]
        assert mine == kernel, f"K = {k}"


def test_rule_vectors_are_current() -> None:
    for name, data in vec.vectors().items():
        on_disk = json.loads((ROOT / "contracts" / "test" / "vectors" / name).read_text())
        assert on_disk == data, f"{name} is stale: rerun scripts/dot_rule_vectors.py"
