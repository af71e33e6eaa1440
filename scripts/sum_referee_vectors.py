"""Write the vectors of the SumReferee forge tests (docs/game.md section 2.10).

Run `PYTHONPATH=. .venv/bin/python scripts/sum_referee_vectors.py [OUT_DIR]` (default contracts/test/vectors); it
writes sum_referee.json. contracts/test/SumReferee.t.sol plays games with it; tests/game/test_sum_referee_vectors.py
checks that the committed file is what this writes now and that every case's honest value is the RepOps kernel's
element, bit for bit. Everything derives from fixed seeds.

Each case is one `sum.dim_IntList` node on a real fp32 tensor committed with trainer.commit: the agreed input (its
commitment, shape, data root and every chunk with its Merkle siblings, so a test can open any element), the node's
variant (dims and keepdim), the output shape, the disputed element, the kernel's value there (the honest one) and a
liar's (its lowest bit flipped), the honest witness(es), the slice's length, reduced dims and every exact prefix sum
P(0..L), and the S a lying defender claims (the one its value follows from: `SumSide.defend`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from offchain.game.element_table import sum_variant
from offchain.game.sum import SumSide
from trainer.commit import commit_tensor
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import chunk_leaves, data_root, tensor_bytes
from trainer.repops.reduce import sum_dim_intlist

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "sum_referee.json"
CHUNK = 4096


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _tensor(t: torch.Tensor) -> dict[str, Any]:
    data = bytes(tensor_bytes(t.contiguous()))
    leaves = chunk_leaves(data)
    tree = MerkleTree(leaves) if leaves else None
    chunks = []
    for j in range(len(leaves) // 32):
        assert tree is not None
        siblings = tree.open(j).siblings
        chunks.append({"bytes": _hex(data[j * CHUNK : (j + 1) * CHUNK]), "siblings": [_hex(s) for s in siblings]})
    return {
        "commitment": _hex(commit_tensor(t)),
        "shape": list(t.shape),
        "dataRoot": _hex(data_root(data)),
        "chunks": chunks,
    }


def _bits(t: torch.Tensor) -> list[int]:
    return [x & 0xFFFFFFFF for x in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def case(name: str, x: torch.Tensor, dims: tuple[int, ...], keepdim: bool, element: int) -> dict[str, Any]:
    out = sum_dim_intlist(x, list(dims), keepdim)
    honest = _bits(out)[element]
    variant = sum_variant(dims, keepdim)
    side = SumSide(variant, x, tuple(out.shape), element)
    if side.value_bits() != honest:
        raise SystemExit(f"{name}: the claim's arithmetic gives {side.value_bits():#x}, the kernel {honest:#x}")
    liar_value = honest ^ 1
    liar = SumSide(variant, x, tuple(out.shape), element)
    liar_total = liar.prefix[-1] if liar.defend(liar_value) else None
    return {
        "name": name,
        "variant": variant,
        "input": _tensor(x),
        "outShape": list(out.shape),
        "element": element,
        "honestValue": honest,
        "liarValue": liar_value,
        "liarTotal": str(liar_total) if liar_total is not None else "",  # "": no S gives the liar's value
        "at": side.at,
        "at2": side.at2,
        "key": side.key,
        "witness": side.witness,
        "length": side.length,
        "reduced": side.reduced,
        "decidedAtClaim": side.decided_at_claim,
        "prefix": [str(v) for v in side.prefix],
    }


def vectors() -> dict[str, Any]:
    g = torch.Generator().manual_seed(2027)
    inf, nan = float("inf"), float("nan")
    cases = [
        case("dim=1 [3, 40, 5]", torch.randn(3, 40, 5, generator=g), (1,), False, 7),
        case("dim=() [64, 33]", torch.randn(64, 33, generator=g) * 1000, (), False, 0),
        case("dim=(0, 1) keepdim [3, 4, 6]", torch.randn(3, 4, 6, generator=g), (0, 1), True, 5),
        case("dim=-1 keepdim [2, 3, 4, 7]", torch.randn(2, 3, 4, 7, generator=g), (-1,), True, 17),
        case("dim=2 keepdim [2, 3, 9]", torch.randn(2, 3, 9, generator=g), (2,), True, 4),
        case("dim=0 keepdim [9, 4]", torch.randn(9, 4, generator=g), (0,), True, 3),
        case("L = 1", torch.randn(1, 5, generator=g), (0,), False, 2),
        case("0-dimensional", torch.tensor(-3.25), (), False, 0),
    ]
    # Edge values: signed zeros, subnormals, the largest finite (the sum overflows to inf), ties on the grid.
    cases.append(case("zeros", torch.tensor([[0.0, -0.0, 0.0], [-0.0, -0.0, -0.0]]), (1,), False, 1))
    sub = torch.tensor([1e-45, -3e-45, 1.1754942e-38, 2e-44, -7e-45, 1.1754942e-38 * -0.5])
    cases.append(case("subnormals", sub, (0,), False, 0))
    big = torch.tensor([3.4028235e38, 3.4028235e38, -1.0])
    cases.append(case("overflow to +inf", big, (-1,), False, 0))
    h = 2.0**-50  # L = 4: p = 50, e = 1 (max 1.0): the step is 2^-49, h half of it
    cases.append(case("ties", torch.tensor([1.0, h, 3 * h, -h]), (), False, 0))
    cases.append(case("negative", -torch.rand(5, 6, generator=g) * 1e-3, (0,), False, 2))
    # The IEEE rule: an infinity (refutable), both infinities (NaN, two witnesses), a NaN.
    x = torch.randn(4, 6, generator=g)
    x[2, 3] = inf
    cases.append(case("+inf", x, (1,), False, 2))
    x = torch.randn(4, 6, generator=g)
    x[1, 1], x[1, 4] = -inf, inf
    cases.append(case("both infinities", x, (1,), False, 1))
    x = torch.randn(4, 6, generator=g)
    x[0, 5] = nan
    cases.append(case("NaN", x, (1,), False, 0))
    cases.append(case("L = 0", torch.zeros(0, 3), (0,), False, 1))
    # The gas case: L = 4096 (four chunks), the output one element.
    gas = case("dim=() L=4096", torch.randn(4096, generator=g), (), False, 0)
    return {"cases": cases, "gas": [gas]}


def main(argv: list[str]) -> None:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    (out / NAME).write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {out / NAME}")


if __name__ == "__main__":
    main(sys.argv)
