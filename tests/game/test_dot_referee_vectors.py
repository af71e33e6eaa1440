"""The DotReferee forge tests' vectors (scripts/dot_referee_vectors.py) are up to date, and their honest values
are the RepOps kernels' elements, bit for bit (the script also refuses to write a case whose claim arithmetic
does not give the kernel's value)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import torch

from trainer.commit import commit_tensor
from trainer.repops.linalg import addmm, mm

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dot_referee_vectors", ROOT / "scripts" / "dot_referee_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensor(entry: dict) -> torch.Tensor:
    data = b"".join(bytes.fromhex(c["bytes"][2:]) for c in entry["chunks"])
    return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(entry["shape"]).clone()


def test_dot_vectors_are_up_to_date_and_honest_succeeds() -> None:
    written = _writer().vectors()
    committed = json.loads((VECTORS / "dot_referee.json").read_text())
    assert committed == written, "dot_referee.json is stale: run scripts/dot_referee_vectors.py"
    for case in committed["cases"] + committed["gas"]:
        tensors = [_tensor(t) for t in case["inputs"]]
        for t, entry in zip(tensors, case["inputs"], strict=True):
            assert "0x" + commit_tensor(t).hex() == entry["commitment"], case["name"]
        out = mm(*tensors) if case["op"] == 0 else addmm(*tensors)
        bits = out.contiguous().view(torch.int32).reshape(-1)[case["element"]].item() & 0xFFFFFFFF
        assert bits == case["honestValue"], case["name"]
        assert case["liarValue"] != case["honestValue"]
        assert int(case["prefix"][0]) == 0
