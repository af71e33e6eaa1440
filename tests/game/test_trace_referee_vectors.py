"""The TraceReferee forge tests' vectors (scripts/trace_referee_vectors.py) are up to date, every trace's output is
the RepOps kernel's value bit for bit, and every liar's trace is consistent but for its one altered step."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import torch

from trainer.repops import mathfn as M
from trainer.repops.programs import PROGRAMS, run

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"
KERNELS = {
    "exp": M.exp,
    "log": M.log,
    "log1p": M.log1p,
    "rsqrt": M.rsqrt,
    "tanh": M.tanh,
    "sigmoid": M.sigmoid,
    "erf": M.erf,
    "gelu": M.gelu,
    "gelu_tanh": lambda t: M.gelu(t, "tanh"),
}


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "trace_referee_vectors", ROOT / "scripts" / "trace_referee_vectors.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _words(hexstr: str) -> list[int]:
    raw = bytes.fromhex(hexstr[2:])
    return [int.from_bytes(raw[i : i + 8], "big") for i in range(0, len(raw), 8)]


def test_trace_vectors_are_up_to_date_and_honest_succeeds() -> None:
    written = _writer().vectors()
    committed = json.loads((VECTORS / "trace_referee.json").read_text())
    assert committed == written, "trace_referee.json is stale: run scripts/trace_referee_vectors.py"
    assert [f["name"] for f in committed["functions"]] == list(KERNELS)
    for f in committed["functions"]:
        n = f["steps"]
        words = _words(f["traces"])
        assert len(words) == n * len(f["xs"])
        outputs = [words[k * n + n - 1] for k in range(len(f["xs"]))]
        t = torch.tensor(f["xs"], dtype=torch.int64).to(torch.int32).view(torch.float32)
        kernel = [v & 0xFFFFFFFF for v in KERNELS[f["name"]](t).view(torch.int32).tolist()]
        assert outputs == kernel, f["name"]


def test_liar_traces_differ_at_one_step_only_succeeds() -> None:
    committed = json.loads((VECTORS / "trace_referee.json").read_text())
    for lie in committed["liars"]:
        trace, honest = _words(lie["trace"]), _words(lie["honest"])
        j = lie["wrong"]
        assert honest == run(lie["name"], lie["x"])
        assert trace[:j] == honest[:j] and trace[j] != honest[j]
        assert trace == run(lie["name"], lie["x"], {j: trace[j]}), "every step after the lie follows from it"
        assert trace[-1] == lie["value"] == honest[-1] ^ 1 == lie["honestValue"] ^ 1
        assert len(trace) == len(PROGRAMS[lie["name"]].steps)
