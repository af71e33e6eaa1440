"""Write the vectors of the sum takeover forge tests (DotReferee.startSum / settleSum, docs/game.md 2.10).

Run `PYTHONPATH=. .venv/bin/python scripts/sum_takeover_vectors.py [OUT_DIR]` (default contracts/test/vectors); it
writes sum_takeover.json, which contracts/test/DotRefereeSum.t.sol plays (ElementGames plays each case to
ElementProof, the defender hands the element to a SumReferee game with `startSum`, the game is played there and
`settleSum` hands its outcome back); tests/game/test_sum_takeover_vectors.py checks that the committed file is what
this writes now. Everything derives from a fixed seed.

Each case is one `sum.dim_IntList` node in element_referee.json's node format: the agreed fp32 input (its header,
and every chunk with its Merkle siblings, so that a test can open any term of a slice), the honest output from the
RepOps kernel (`KERNELS[...].fast`, checked equal to its reference), its code (112 + the variant) and table key
parts. A lie changes one output element's lowest bit; per lie the file holds the differing chunks, both values, an
input opening (ElementGames reads one per input; the sum game opens its own terms), and the sum game's data from
`offchain.game.sum.SumSide`: the witness's term, its class and bits, L, the reduced dims, every exact prefix sum
P(0..L) and the S a lying defender claims (`SumSide.defend`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import torch

from offchain.game.element_table import SUM_BASE, sum_args, sum_variant
from offchain.game.sum import SumSide
from trainer.commit import commit_tensor, open_element
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import CHUNK, chunk_leaves, tensor_bytes
from trainer.program.program import encode_args

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "sum_takeover.json"
OP = "aten.sum.dim_IntList"

Json = dict[str, Any]

_spec = importlib.util.spec_from_file_location(
    "element_referee_vectors", Path(__file__).parent / "element_referee_vectors.py"
)
assert _spec is not None and _spec.loader is not None
ev = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ev)


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _bits(t: torch.Tensor) -> list[int]:
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def _chunks(t: torch.Tensor) -> list[Json]:
    data = bytes(tensor_bytes(t.contiguous()))
    leaves = chunk_leaves(data)
    tree = MerkleTree(leaves)
    return [
        {"bytes": _hex(data[j * CHUNK : (j + 1) * CHUNK]), "siblings": [_hex(s) for s in tree.open(j).siblings]}
        for j in range(len(leaves) // 32)
    ]


def _case(name: str, x: torch.Tensor, dims: tuple[int, ...], keepdim: bool, lie_at: tuple[int, ...]) -> Json:
    arg_bytes = encode_args(list(sum_args(dims, keepdim)))
    variant = sum_variant(dims, keepdim)
    out = ev._kernel(OP, x, list(dims), keepdim)
    yb = _bits(out)
    data = tensor_bytes(out)
    leaves = chunk_leaves(data)
    lies = []
    for e in lie_at:
        honest = SumSide(variant, x, tuple(out.shape), e)
        assert honest.value_bits() == yb[e], f"{name}: element {e}: the claim's arithmetic != the kernel"
        lv = yb[e] ^ 1
        liar = SumSide(variant, x, tuple(out.shape), e)
        assert liar.defend(lv), f"{name}: element {e}: no S gives the liar's value"
        raw = bytearray(data)
        raw[4 * e : 4 * e + 4] = lv.to_bytes(4, "little")
        lied = torch.frombuffer(raw, dtype=torch.float32).reshape(out.shape).clone()
        liar_data = tensor_bytes(lied)
        j = 4 * e // CHUNK
        o = open_element(x, honest.indices[honest.at])
        lies.append(
            {
                "element": e,
                "chunkIndex": j,
                "commitment": _hex(commit_tensor(lied)),
                "dataRoot": ev._header(lied)["dataRoot"],
                "leaf": _hex(chunk_leaves(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestChunk": _hex(bytes(data[j * CHUNK : (j + 1) * CHUNK])),
                "liarChunk": _hex(bytes(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestValue": yb[e],
                "liarValue": lv,
                "openings": [{"chunk": _hex(o.chunk), "siblings": [_hex(s) for s in o.proof.siblings]}],
                "at": honest.at,
                "key": honest.key,
                "witness": honest.witness,
                "length": honest.length,
                "reduced": honest.reduced,
                "prefix": [str(v) for v in honest.prefix],
                "liarTotal": str(liar.total),
            }
        )
    assert _hex(MerkleTree(leaves).root) == ev._header(out)["dataRoot"]
    return {
        "name": name,
        "op": SUM_BASE + variant,
        "variant": variant,
        "opHash": _hex(hashlib.sha256(OP.encode()).digest()),
        "argHash": _hex(hashlib.sha256(arg_bytes).digest()),
        "nIn": 1,
        "scalars": ["0", "0"],
        "inputs": [{**ev._header(x), "chunks": _chunks(x)}],
        "output": {
            **ev._header(out),
            "nbytes": len(data),
            "chunkCount": len(leaves) // 32,
            "leaves": [_hex(leaves[i : i + 32]) for i in range(0, len(leaves), 32)],
        },
        "lies": lies,
    }


def cases() -> list[Json]:
    g = torch.Generator().manual_seed(112)
    return [
        # a row sum kept as a column: L = 24, a bisection of two levels at arity 16
        _case("dim=1 keepdim [4, 24]", torch.randn(4, 24, generator=g), (1,), True, (0, 2, 3)),
        # the loss's sum: every dim to a 0-dimensional output, L = 35
        _case("dim=() [5, 7]", torch.randn(5, 7, generator=g) * 100, (), False, (0,)),
        # the bias gradient's: dim 0 over [9, 1100] (two output chunks), the lie in the second
        _case("dim=0 keepdim [9, 1100]", torch.randn(9, 1100, generator=g), (0,), True, (1050,)),
    ]


def vectors() -> Json:
    return {"version": 1, "chunk": CHUNK, "cases": cases()}


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
