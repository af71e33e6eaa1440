"""The per-step caches of zkdv's training thread give what they stand in for: `ZKDV._named_parameters` is
`dict(root.named_parameters())` after any change to the module tree, `ZKDV._flatten` is `pytree.tree_flatten`
for every batch, whatever batch came before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils import _pytree as pytree

import zkdv


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 4)
        self.b = nn.Sequential(nn.Linear(4, 2), nn.ReLU())


def _same(got: dict[str, Any], want: dict[str, Any]) -> bool:
    return list(got) == list(want) and all(got[k] is want[k] for k in want)


def _rename(m: _Net) -> None:  # in place: the same dict, the same objects in the same order, one name changed
    d = m.a._parameters
    w, b = d.pop("weight"), d.pop("bias")
    d["w2"], d["bias"] = w, b


_CHANGES = {
    "a parameter replaced": lambda m: setattr(m.a, "weight", nn.Parameter(torch.zeros(4, 3))),
    "a parameter deleted": lambda m: delattr(m.a, "bias"),
    "a parameter added": lambda m: m.b[0].register_parameter("extra", nn.Parameter(torch.zeros(1))),
    "a parameter set to None": lambda m: setattr(m.b[0], "bias", None),
    "a submodule replaced": lambda m: setattr(m, "b", nn.Sequential(nn.Linear(4, 2))),
    "a submodule added deep": lambda m: m.b.add_module("2", nn.Linear(2, 2)),
    "a submodule shared": lambda m: setattr(m, "c", m.a),
    "the parameter dict swapped": lambda m: setattr(m.a, "_parameters", dict(m.a._parameters)),
    "a parameter renamed, same object": _rename,
    "the parameters' data replaced": lambda m: setattr(m.a.weight, "data", torch.ones(4, 3)),
}


@pytest.mark.parametrize("change", list(_CHANGES))
def test_the_parameters_walk_sees_every_change_of_the_module_tree(tmp_path: Path, change: str) -> None:
    proof = zkdv.torch.ZKDV(tmp_path)
    m = _Net()
    assert _same(proof._named_parameters(m), dict(m.named_parameters()))
    assert proof._named_parameters(m) is proof._named_parameters(m)  # unchanged: the last walk's dict
    _CHANGES[change](m)
    assert _same(proof._named_parameters(m), dict(m.named_parameters()))
    other = _Net()
    assert _same(proof._named_parameters(other), dict(other.named_parameters()))


def _t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


_BATCHES = [
    {"x": _t(2, 3), "y": _t(2, dtype=torch.int64)},
    {"x": _t(4, 3), "y": _t(4, dtype=torch.int64)},
    {"y": _t(2), "x": _t(2)},  # the same keys in another order: another spec
    {"x": [_t(2)], "y": _t(2)},  # as many leaves as keys, but nested
    {"x": _t(2), "y": _t(2)},
    {"x": nn.Parameter(_t(2)), "y": _t(2)},  # a tensor subclass: pytree's own walk
    {"x": (_t(2), _t(3)), "y": _t(2)},
    {"x": _t(2), "y": _t(2), "z": _t(1)},
    (_t(2), _t(2)),
    _t(3),
    {"x": _t(2), "y": {"z": _t(1)}},
    {"x": _t(5), "y": _t(5)},
]


def test_the_batch_flatten_is_pytrees_for_every_batch_after_any_other(tmp_path: Path) -> None:
    proof = zkdv.torch.ZKDV(tmp_path)
    for first in _BATCHES:
        for batch in _BATCHES:
            for b in (first, batch, batch):
                leaves, spec = proof._flatten(b)
                want_leaves, want_spec = pytree.tree_flatten(b)
                assert spec == want_spec
                assert len(leaves) == len(want_leaves) and all(a is w for a, w in zip(leaves, want_leaves, strict=True))
