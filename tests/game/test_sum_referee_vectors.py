"""The SumReferee forge tests' vectors (scripts/sum_referee_vectors.py) are up to date, their honest values are the
RepOps kernel's elements, bit for bit, and `sum_input_index` (SumReferee.inputIndex) names the elements torch's own
sum adds (the script also refuses to write a case whose claim arithmetic does not give the kernel's value)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

from offchain.game.element_table import SUM_DIMS, sum_reduced, sum_variant
from offchain.game.sum import sum_input_index
from trainer.commit import commit_tensor
from trainer.repops.reduce import sum_dim_intlist

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sum_referee_vectors", ROOT / "scripts" / "sum_referee_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensor(entry: dict) -> torch.Tensor:
    data = b"".join(bytes.fromhex(c["bytes"][2:]) for c in entry["chunks"])
    return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(entry["shape"]).clone()


def test_sum_vectors_are_up_to_date_and_honest_succeeds() -> None:
    written = _writer().vectors()
    committed = json.loads((VECTORS / "sum_referee.json").read_text())
    assert committed == written, "sum_referee.json is stale: run scripts/sum_referee_vectors.py"
    for case in committed["cases"] + committed["gas"]:
        x = _tensor(case["input"]) if case["input"]["chunks"] else torch.zeros(case["input"]["shape"])
        assert "0x" + commit_tensor(x).hex() == case["input"]["commitment"]
        v = case["variant"]
        dims = list(sum_reduced(v, x.dim())) or [0]
        out = sum_dim_intlist(x, dims, bool(v & 1))
        bits = out.contiguous().view(torch.int32).reshape(-1)[case["element"]].item() & 0xFFFFFFFF
        assert bits == case["honestValue"], case["name"]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", SUM_DIMS)
def test_sum_input_index_names_the_slice_torch_sums_succeeds(dims: tuple[int, ...], keepdim: bool) -> None:
    """Output element e's terms, as sum_input_index orders them, are exactly torch's slice of e (its values in
    row-major order over the reduced dims)."""
    x = torch.arange(3 * 4 * 5, dtype=torch.float32).reshape(3, 4, 5)
    v = sum_variant(dims, keepdim)
    reduced = sum_reduced(v, x.dim())
    mask = sum(1 << d for d in reduced)
    kept = [d for d in range(3) if d not in reduced]
    moved = x.permute(*kept, *reduced).reshape(-1, int(torch.tensor([x.shape[d] for d in reduced]).prod()))
    flat = x.reshape(-1)
    for e in range(moved.shape[0]):
        got = [float(flat[sum_input_index(e, k, tuple(x.shape), mask)]) for k in range(moved.shape[1])]
        assert got == moved[e].tolist(), (dims, keepdim, e)
