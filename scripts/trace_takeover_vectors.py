"""Write the vectors of the trace takeover forge tests (DotReferee.startTrace / settleTrace, docs/game.md 2.9).

Run `PYTHONPATH=. .venv/bin/python scripts/trace_takeover_vectors.py [OUT_DIR]` (default contracts/test/vectors);
it writes trace_takeover.json, which contracts/test/DotRefereeTrace.t.sol and DotRefereeTraceGas.t.sol play
(ElementGames plays each case to ElementProof, the defender hands the element to a TraceReferee game);
tests/game/test_trace_takeover_vectors.py checks that the committed file is what this writes now. Everything
derives from a fixed seed.

Each case is one unary node of a keyed transcendental function (exp, log, log1p, tanh, sigmoid, erf, gelu
with approximate 'none' and 'tanh'), in element_referee.json's node format: the agreed fp32 input (a few
hundred randn values times 4, with +-0, subnormals, +-3e38, +-inf, NaN, +-1 and exp's overflow and underflow
edges at fixed positions), the honest output from the RepOps kernel (`KERNELS[name].fast`, checked equal to
its reference and, element by element, to the last step of `trainer.repops.programs.run`). A lie changes one
output element by one ulp (the lowest bit; an infinity becomes the largest finite value of its sign); lies
sit at a random element, the subnormal, the large value and +inf (skipped where the honest value is NaN). Per
lie the file holds the differing chunks, both values, the input element's opening, the input pattern x, the
honest trace and the liar's trace (the program's trace with its last step the liar's value; its first wrong
step is its last), packed as TraceReferee takes them. Per case: the table key's parts (opHash, argHash, nIn)
and the code. The last two cases (exp and gelu on 4096 elements: four full 4096-byte chunks) are the gas
test's: startTrace there opens a full chunk with two siblings.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import torch

from offchain.game.element_table import TRACE_BASE, element_op
from trainer.commit import commit_tensor, open_element
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import CHUNK, chunk_leaves, tensor_bytes
from trainer.program.program import TENSOR, encode_args
from trainer.repops import programs as P

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "trace_takeover.json"

Json = dict[str, Any]

_spec = importlib.util.spec_from_file_location(
    "element_referee_vectors", Path(__file__).parent / "element_referee_vectors.py"
)
assert _spec is not None and _spec.loader is not None
ev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ev)

# (program name, aten op, args, kernel kwargs)
FUNCTIONS: tuple[tuple[str, str, tuple[tuple[str, object], ...], dict[str, Any]], ...] = (
    ("exp", "aten.exp.default", (("self", TENSOR),), {}),
    ("log", "aten.log.default", (("self", TENSOR),), {}),
    ("log1p", "aten.log1p.default", (("self", TENSOR),), {}),
    ("tanh", "aten.tanh.default", (("self", TENSOR),), {}),
    ("sigmoid", "aten.sigmoid.default", (("self", TENSOR),), {}),
    ("erf", "aten.erf.default", (("self", TENSOR),), {}),
    ("gelu", "aten.gelu.default", (("self", TENSOR), ("approximate", "none")), {"approximate": "none"}),
    ("gelu_tanh", "aten.gelu.default", (("self", TENSOR), ("approximate", "tanh")), {"approximate": "tanh"}),
)
SPECIALS = (
    0.0,
    -0.0,
    1e-40,
    -1e-40,
    1e-45,
    3e38,
    -3e38,
    float("inf"),
    float("-inf"),
    float("nan"),
    1.0,
    -1.0,
    88.72,
    -103.9,
    0.5,
    -0.5,
)
LIE_AT = (20, 2, 5, 7)  # a random element, the subnormal 1e-40, 3e38, +inf
SHAPES = ((300,), (3, 100), (2, 5, 30), (300,), (4, 75), (300,), (3, 100), (300,))
INF32, NINF32 = 0x7F800000, 0xFF800000


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _bits(t: torch.Tensor) -> list[int]:
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def _input(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    t = torch.randn(shape, generator=gen, dtype=torch.float32) * 4
    flat = t.view(-1)
    for i, v in enumerate(SPECIALS):
        flat[i] = v
    return t


def liar_value(honest: int) -> int:
    """One ulp off: the lowest bit flipped; an infinity becomes the largest finite value of its sign."""
    return honest - 1 if honest in (INF32, NINF32) else honest ^ 1


def _is_nan(b: int) -> bool:
    return (b & 0x7FFFFFFF) > INF32


def _case(
    name: str,
    op: str,
    args: tuple[tuple[str, object], ...],
    kw: dict[str, Any],
    x: torch.Tensor,
    lie_at: tuple[int, ...] = LIE_AT,
) -> Json:
    arg_bytes = encode_args(list(args))
    code = element_op(op, arg_bytes, 1)
    assert code == TRACE_BASE + P.FUNCTIONS[name], (name, code)
    out = ev._kernel(op, x, **kw)
    xb, yb = _bits(x), _bits(out)
    steps = len(P.PROGRAMS[name].steps)
    for i, (a, y) in enumerate(zip(xb, yb, strict=True)):
        assert P.run(name, a)[-1] == y, f"{name}: element {i}: program != kernel"
    data = tensor_bytes(out)
    leaves = chunk_leaves(data)
    lies = []
    for e in lie_at:
        if _is_nan(yb[e]):
            continue
        lv = liar_value(yb[e])
        raw = bytearray(data)
        raw[4 * e : 4 * e + 4] = lv.to_bytes(4, "little")
        liar = torch.frombuffer(raw, dtype=torch.float32).reshape(out.shape).clone()
        liar_data = tensor_bytes(liar)
        j = 4 * e // CHUNK
        o = open_element(x, e)
        honest_trace = P.run(name, xb[e])
        liar_trace = P.run(name, xb[e], {steps - 1: lv})
        assert P.first_wrong_step(name, xb[e], liar_trace) == steps - 1
        lies.append(
            {
                "element": e,
                "chunkIndex": j,
                "commitment": _hex(commit_tensor(liar)),
                "dataRoot": ev._header(liar)["dataRoot"],
                "leaf": _hex(chunk_leaves(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestChunk": _hex(bytes(data[j * CHUNK : (j + 1) * CHUNK])),
                "liarChunk": _hex(bytes(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestValue": yb[e],
                "liarValue": lv,
                "openings": [
                    {"index": o.index, "chunk": _hex(o.chunk), "siblings": [_hex(s) for s in o.proof.siblings]}
                ],
                "x": xb[e],
                "honestTrace": _hex(P.pack(honest_trace)),
                "liarTrace": _hex(P.pack(liar_trace)),
            }
        )
    tree = MerkleTree(leaves)
    assert _hex(tree.root) == ev._header(out)["dataRoot"]
    return {
        "name": name,
        "op": code,
        "fn": P.FUNCTIONS[name],
        "steps": steps,
        "opHash": _hex(hashlib.sha256(op.encode()).digest()),
        "argHash": _hex(hashlib.sha256(arg_bytes).digest()),
        "nIn": 1,
        "scalars": ["0", "0"],
        "inputs": [ev._header(x)],
        "output": {
            **ev._header(out),
            "nbytes": len(data),
            "chunkCount": len(leaves) // 32,
            "leaves": [_hex(leaves[i : i + 32]) for i in range(0, len(leaves), 32)],
        },
        "lies": lies,
    }


def cases() -> list[Json]:
    gen = torch.Generator().manual_seed(66)
    out = [
        _case(name, op, args, kw, _input(gen, shape))
        for (name, op, args, kw), shape in zip(FUNCTIONS, SHAPES, strict=True)
    ]
    # The gas cases: 4096 elements, four full chunks; one lie, at the random element of the second chunk.
    for name, op, args, kw in (FUNCTIONS[0], FUNCTIONS[6]):
        c = _case(name, op, args, kw, _input(gen, (4096,)), (1500,))
        c["name"] = f"{name}_4096"
        out.append(c)
    return out


def vectors() -> Json:
    return {"version": 1, "chunk": CHUNK, "functions": len(FUNCTIONS), "cases": cases()}


def write(out_dir: Path = DEFAULT_OUT) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / NAME
    path.write_text(json.dumps(vectors(), indent=1) + "\n")
    return path


def main() -> None:
    path = write(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
    print(path, path.stat().st_size)


if __name__ == "__main__":
    main()
