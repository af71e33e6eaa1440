"""Write the vectors of the DotReferee forge tests (docs/game.md section 2.8).

Run `PYTHONPATH=. .venv/bin/python scripts/dot_referee_vectors.py [OUT_DIR]` (default
contracts/test/vectors); it writes dot_referee.json. contracts/test/DotReferee.t.sol plays games with it;
tests/game/test_dot_referee_vectors.py checks that the committed file is what this writes now and that
every case's honest value is the RepOps kernel's element, bit for bit. Everything derives from fixed seeds.

Each case is one mm or addmm node on real fp32 tensors committed with trainer.commit: the agreed inputs
(their commitments, shapes, and every chunk with its Merkle siblings, so a test can open any element),
the disputed element, the kernel's value there (the honest one) and a liar's value (its lowest bit
flipped), the honest witnesses and every exact prefix sum P(0..K), and the S a lying defender claims
(the one its value follows from: `DotSide.defend`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from offchain.game.dot import ADDMM, MM, DotSide
from trainer.commit import commit_tensor
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import chunk_leaves, tensor_bytes
from trainer.repops.linalg import addmm, mm

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "dot_referee.json"
CHUNK = 4096


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _tensor(t: torch.Tensor) -> dict[str, Any]:
    data = bytes(tensor_bytes(t.contiguous()))
    leaves = chunk_leaves(data)
    tree = MerkleTree(leaves)
    count = len(leaves) // 32
    chunks = []
    for j in range(count):
        siblings = tree.open(j).siblings
        chunks.append({"bytes": _hex(data[j * CHUNK : (j + 1) * CHUNK]), "siblings": [_hex(s) for s in siblings]})
    return {"commitment": _hex(commit_tensor(t)), "shape": list(t.shape), "chunks": chunks}


def _bits(t: torch.Tensor) -> list[int]:
    return [x & 0xFFFFFFFF for x in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def case(name: str, a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, element: int) -> dict[str, Any]:
    out = mm(a, b) if bias is None else addmm(bias, a, b)
    op = MM if bias is None else ADDMM
    inputs = [a, b] if bias is None else [bias, a, b]
    honest = _bits(out)[element]
    side = DotSide(op, inputs, element)
    if side.value_bits() != honest:
        raise SystemExit(f"{name}: the claim's arithmetic gives {side.value_bits():#x}, the kernel {honest:#x}")
    liar_value = honest ^ 1
    liar = DotSide(op, inputs, element)
    liar_total = liar.prefix[-1] if liar.defend(liar_value) else None
    return {
        "name": name,
        "op": op,
        "k": int(a.shape[1]),
        "n": int(b.shape[1]),
        "element": element,
        "inputs": [_tensor(t) for t in inputs],
        "honestValue": honest,
        "liarValue": liar_value,
        "liarTotal": str(liar_total) if liar_total is not None else "",  # "": no S gives the liar's value
        "rowAt": side.row_at,
        "colAt": side.col_at,
        "rowKey": side.row_key,
        "colKey": side.col_key,
        "decidedAtClaim": side.decided_at_claim,
        "prefix": [str(x) for x in side.prefix],
    }


def _bias(g: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=g)


def vectors() -> dict[str, Any]:
    g = torch.Generator().manual_seed(2026)
    cases = [
        case("mm K=64", torch.randn(3, 64, generator=g), torch.randn(64, 5, generator=g), None, 7),
        case("mm K=1", torch.randn(2, 1, generator=g), torch.randn(1, 3, generator=g), None, 4),
        case("addmm bias [N]", torch.randn(3, 7, generator=g), torch.randn(7, 5, generator=g), _bias(g, 5), 13),
        case("addmm bias [M, N]", torch.randn(3, 7, generator=g), torch.randn(7, 5, generator=g), _bias(g, 3, 5), 13),
    ]
    a = torch.randn(3, 33, generator=g)
    a[1, 20] = float("inf")
    cases.append(case("mm non-finite row", a, torch.randn(33, 4, generator=g), None, 6))
    a = torch.randn(3, 33, generator=g)
    a[2] = 0.0
    cases.append(case("mm zero row", a, torch.randn(33, 4, generator=g), None, 9))
    a = torch.randn(2, 300, generator=g)
    a[0] *= 1e-40  # subnormal row
    cases.append(case("mm subnormal row", a, torch.randn(300, 3, generator=g), None, 1))
    # A negative product that underflows: the spec's +0, not the -0 IEEE rounding would give.
    a = -torch.rand(2, 16, generator=g) * 1e-40
    b = torch.rand(16, 3, generator=g) * 1e-30
    cases.append(case("mm negative underflow", a, b, None, 2))
    # The gas case: K = 4096, A [1, K] and B [K, 1] of four chunks each.
    gas = case("mm K=4096", torch.randn(1, 4096, generator=g), torch.randn(4096, 1, generator=g), None, 0)
    gas_addmm = case(
        "addmm K=4096", torch.randn(1, 4096, generator=g), torch.randn(4096, 1, generator=g),
        torch.randn(1, generator=g), 0,
    )  # fmt: skip
    return {"cases": cases, "gas": [gas, gas_addmm]}


def main(argv: list[str]) -> None:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    (out / NAME).write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {out / NAME}")


if __name__ == "__main__":
    main(sys.argv)
