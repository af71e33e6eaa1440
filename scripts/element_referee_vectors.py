"""Write the vectors of the ElementReferee forge tests (docs/game.md section 2.7).

Run `PYTHONPATH=. .venv/bin/python scripts/element_referee_vectors.py [OUT_DIR]` (default
contracts/test/vectors); it writes element_referee.json and element_referee_gas.json.
contracts/test/ElementReferee.t.sol and ElementRefereeGas.t.sol play games with them;
tests/game/test_element_referee_vectors.py checks that the committed files are what this writes now.
Everything derives from fixed seeds.

Each case is one elementwise node: its agreed inputs (random fp32 values from a fixed seed, with
broadcasting), the honest output computed by the RepOps kernel (`KERNELS[name].fast`, checked equal to
its reference), both committed with trainer.commit. A lie changes one output element (the lowest bit
of its pattern) at the first, middle or last position; for each lie the file holds the differing chunk
of both sides, both values, the liar's commitment and the openings of the input elements at the
element's broadcast positions, which the honest side passes to `proveElement`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from trainer.commit import commit_tensor, open_element
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import CHUNK, chunk_leaves, dtype_code, element_size, tensor_bytes
from trainer.repops import KERNELS

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "element_referee.json"
GAS_NAME = "element_referee_gas.json"

Json = dict[str, Any]

# RepOpsElement codes (contracts/src/lib/RepOpsElement.sol).
ADD, MUL, DIV, NEG, RELU, WHERE, THRESHOLD_BACKWARD, LT, F32_TO_F64 = 0, 4, 5, 6, 12, 13, 17, 20, 24
HALF64 = 0x3FE0000000000000  # binary64 0.5, threshold_backward's threshold


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _f32(gen: torch.Generator, *shape: int) -> torch.Tensor:
    t = torch.randn(tuple(shape), generator=gen, dtype=torch.float32) * 4
    flat = t.view(-1)
    # A few special values among the random ones: signed zeros, a subnormal, infinities, NaN.
    specials = [0.0, -0.0, 1e-40, float("inf"), float("-inf"), float("nan"), 1.0, -1.0]
    if flat.numel() >= 64:
        for i, v in enumerate(specials):
            flat[i * 7] = v
    return t


def _kernel(name: str, *args: Any, **kwargs: Any) -> torch.Tensor:
    spec = KERNELS[name]
    fast = spec.fast(*args, **kwargs)
    ref = spec.reference(*args, **kwargs)
    assert bytes(tensor_bytes(fast)) == bytes(tensor_bytes(ref)), f"{name}: fast and reference differ"
    return fast


def _header(t: torch.Tensor) -> Json:
    from trainer.commit.merkle import root

    return {
        "dtype": dtype_code(t.dtype),
        "shape": list(t.shape),
        "dataRoot": _hex(root(chunk_leaves(tensor_bytes(t)))),
        "commitment": _hex(commit_tensor(t)),
    }


def _broadcast_index(e: int, out_shape: tuple[int, ...], shape: tuple[int, ...]) -> int:
    coords = []
    for d in reversed(out_shape):
        coords.append(e % d)
        e //= d
    index, stride = 0, 1
    for r, dim in enumerate(reversed(shape)):
        if dim != 1:
            index += coords[r] * stride
        stride *= dim
    return index


def _lie(out: torch.Tensor, e: int) -> torch.Tensor:
    """`out` with element `e`'s lowest bit flipped (a one-ulp error; True <-> False for bool)."""
    size = element_size(dtype_code(out.dtype))
    raw = bytearray(tensor_bytes(out))
    raw[e * size] ^= 1
    return torch.frombuffer(raw, dtype=out.dtype).reshape(out.shape).clone()


def _case(name: str, op: int, inputs: list[torch.Tensor], out: torch.Tensor, scalars: tuple[int, int]) -> Json:
    data = tensor_bytes(out)
    leaves = chunk_leaves(data)
    size = element_size(dtype_code(out.dtype))
    n = out.numel()
    lies = []
    for e in sorted({0, n // 2, n - 1}):
        liar = _lie(out, e)
        liar_data = tensor_bytes(liar)
        j = e * size // CHUNK
        openings = []
        for t in inputs:
            o = open_element(t, _broadcast_index(e, tuple(out.shape), tuple(t.shape)))
            openings.append({"index": o.index, "chunk": _hex(o.chunk), "siblings": [_hex(s) for s in o.proof.siblings]})
        at = e * size
        lies.append(
            {
                "element": e,
                "chunkIndex": j,
                "commitment": _hex(commit_tensor(liar)),
                "dataRoot": _header(liar)["dataRoot"],
                "leaf": _hex(chunk_leaves(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestChunk": _hex(bytes(data[j * CHUNK : (j + 1) * CHUNK])),
                "liarChunk": _hex(bytes(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestValue": int.from_bytes(bytes(data[at : at + size]), "little"),
                "liarValue": int.from_bytes(bytes(liar_data[at : at + size]), "little"),
                "openings": openings,
            }
        )
    tree = MerkleTree(leaves)
    assert _hex(tree.root) == _header(out)["dataRoot"]
    return {
        "name": name,
        "op": op,
        "scalars": [str(s) for s in scalars],
        "inputs": [_header(t) for t in inputs],
        "output": {
            **_header(out),
            "nbytes": len(data),
            "chunkCount": len(leaves) // 32,
            "leaves": [_hex(leaves[i : i + 32]) for i in range(0, len(leaves), 32)],
        },
        "lies": lies,
    }


def cases() -> list[Json]:
    gen = torch.Generator().manual_seed(17)
    out: list[Json] = []
    a, b = _f32(gen, 3, 1500), _f32(gen, 1500)
    out.append(_case("add", ADD, [a, b], _kernel("aten.add.Tensor", a, b), (0, 0)))
    a, b = _f32(gen, 2000), _f32(gen)
    out.append(_case("mul", MUL, [a, b], _kernel("aten.mul.Tensor", a, b), (0, 0)))
    a, b = _f32(gen, 4, 1, 700), _f32(gen, 1, 3, 700)
    out.append(_case("div", DIV, [a, b], _kernel("aten.div.Tensor", a, b), (0, 0)))
    a = _f32(gen, 5000)
    out.append(_case("relu", RELU, [a], _kernel("aten.relu.default", a), (0, 0)))
    cond = torch.rand(10, 300, generator=gen) < 0.5
    a, b = _f32(gen, 10, 300), _f32(gen, 1, 300)
    out.append(_case("where", WHERE, [cond, a, b], _kernel("aten.where.self", cond, a, b), (0, 0)))
    g, x = _f32(gen, 3000), _f32(gen, 3000)
    out.append(
        _case(
            "threshold_backward",
            THRESHOLD_BACKWARD,
            [g, x],
            _kernel("aten.threshold_backward.default", g, x, 0.5),
            (HALF64, 0),
        )
    )
    a, b = _f32(gen, 6000), _f32(gen, 6000)
    out.append(_case("lt", LT, [a, b], _kernel("aten.lt.Tensor", a, b), (0, 0)))
    a = torch.tensor(-2.5, dtype=torch.float32)  # 0-dimensional: one element, one chunk of 4 bytes
    out.append(_case("neg_scalar", NEG, [a], _kernel("aten.neg.default", a), (0, 0)))
    a = _f32(gen, 1500)
    out.append(_case("f32_to_f64", F32_TO_F64, [a], _kernel("aten._to_copy.default", a, dtype=torch.float64), (0, 0)))
    return out


def gas_cases() -> list[Json]:
    """The gas test's cases: 4 MiB of fp32 output, 1024 chunks (three descent levels at arity 16)."""
    gen = torch.Generator().manual_seed(4096)
    a, b = _f32(gen, 1024, 1024), _f32(gen, 1024, 1024)
    cond = torch.rand(1024, 1024, generator=gen) < 0.5
    return [
        _case("add_4MiB", ADD, [a, b], _kernel("aten.add.Tensor", a, b), (0, 0)),
        _case("where_4MiB", WHERE, [cond, a, b], _kernel("aten.where.self", cond, a, b), (0, 0)),
    ]


def vectors() -> dict[str, Json]:
    """{file name: contents}."""
    return {
        NAME: {"version": 1, "chunk": CHUNK, "cases": cases()},
        GAS_NAME: {"version": 1, "chunk": CHUNK, "cases": gas_cases()},
    }


def write(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in vectors().items():
        path = out_dir / name
        path.write_text(json.dumps(data, indent=1) + "\n")
        paths.append(path)
    return paths


def main() -> None:
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(path)


if __name__ == "__main__":
    main()
