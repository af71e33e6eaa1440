"""Write the shared JSON test vectors of docs/commitments.md section 6.

Run `python -m trainer.commit.vectors [OUT_DIR]` (default contracts/test/vectors). The
forge tests and pytest read the same files, so Python and Solidity cannot drift apart.
Everything is derived from fixed seeds: a second run writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trainer.commit.merkle import MerkleTree, Opening, depth, leaf_hash, root_of_row
from trainer.commit.records import encode_record, name_hash, state_entry, state_tree_from_commitments
from trainer.commit.tensor import CHUNK, ElementOpening, chunk_leaves, commit_tensor, open_element, tensor_bytes

LIST_SIZES = (1, 2, 3, 4, 5, 8, 9, 16, 17, 64, 65)
INLINE_DATA_MAX = 3 * CHUNK  # tensors up to this size carry their bytes in the vectors

Json = dict[str, Any]

# The Solidity custom error each negative case must raise (contracts/src/lib/).
MERKLE_ERRORS = {
    "wrong_sibling": "MerkleRootMismatch",
    "wrong_index": "MerkleRootMismatch",
    "wrong_leaf": "MerkleRootMismatch",
    "missing_sibling": "MerkleProofLength",
    "extra_sibling": "MerkleProofLength",
    "wrong_count": "MerkleRootMismatch",
    "index_out_of_range": "MerkleIndexOutOfRange",
    "padding_position": "MerkleIndexOutOfRange",
    "padding_leaf": "MerklePaddingLeaf",
}
ELEMENT_ERRORS = {
    "truncated_chunk": "TensorChunkLength",
    "extended_chunk": "TensorChunkLength",
    "wrong_chunk_byte": "TensorCommitmentMismatch",
    "element_out_of_range": "TensorElementOutOfRange",
    "wrong_shape": "TensorChunkLength",
    "wrong_dtype": "TensorCommitmentMismatch",
    "unsupported_dtype": "TensorUnsupportedDtype",
    "wrong_sibling": "TensorCommitmentMismatch",
}


def hx(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _word(seed: str) -> bytes:
    return hashlib.sha256(seed.encode()).digest()


def _opening_json(op: Opening) -> Json:
    return {"index": op.index, "siblings": [hx(s) for s in op.siblings]}


def merkle_vectors() -> Json:
    cases = []
    for n in LIST_SIZES:
        records = [encode_record(b"TEST", [i, _word(f"list{n}/{i}")]) for i in range(n)]
        leaves = [leaf_hash(r) for r in records]
        tree = MerkleTree(leaves)
        cases.append(
            {
                "name": f"list{n}",
                "count": n,
                "depth": depth(n),
                "records": [hx(r) for r in records],
                "leaves": [hx(x) for x in leaves],
                "root": hx(tree.root),
                "openings": [_opening_json(tree.open(i)) for i in range(n)],
            }
        )
    return {"version": 1, "cases": cases}


def _tensor_cases() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(1234)
    return [
        ("empty_f32", torch.zeros(0, 3, dtype=torch.float32)),
        ("scalar_f32", torch.tensor(-1.5, dtype=torch.float32)),
        ("vec7_f32", torch.randn(7, generator=g)),
        ("mat_i64", torch.randint(-(2**62), 2**62, (3, 5), generator=g, dtype=torch.int64)),
        ("mask_bool", torch.rand(33, generator=g) > 0.5),
        ("w_bf16", torch.randn(4, 1100, generator=g).to(torch.bfloat16)),  # 8800 bytes: 3 chunks
        ("w_1mib_f32", torch.randn(512, 512, generator=g)),  # 1 MiB: 256 chunks
    ]


def _element_json(op: ElementOpening) -> Json:
    return {
        "index": op.index,
        "chunkIndex": op.proof.index,
        "chunk": hx(op.chunk),
        "siblings": [hx(s) for s in op.proof.siblings],
        "valueBits": op.value_bits,
    }


def tensor_vectors() -> Json:
    cases = []
    for name, t in _tensor_cases():
        data = tensor_bytes(t)
        code = {torch.float32: 1, torch.int64: 9, torch.bool: 10, torch.bfloat16: 4}[t.dtype]
        n = t.numel()
        picks = sorted({0, n // 2, n - 1}) if n else []
        case: Json = {
            "name": name,
            "dtype": code,
            "shape": list(t.shape),
            "numel": n,
            "nbytes": len(data),
            "chunkCount": -(-len(data) // CHUNK),
            "dataRoot": hx(root_of_row(chunk_leaves(data, native=False), native=False)),
            "commitment": hx(commit_tensor(t, native=False)),
            "hasData": len(data) <= INLINE_DATA_MAX,
            "data": hx(bytes(data)) if len(data) <= INLINE_DATA_MAX else "0x",
            "openings": [_element_json(open_element(t, e)) for e in picks],
        }
        cases.append(case)
    return {"version": 1, "chunk": CHUNK, "cases": cases}


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(99)
    return {
        "layers.0.weight": torch.randn(16, 8, generator=g),
        "layers.0.bias": torch.randn(16, generator=g),
        "layers.1.weight": torch.randn(4, 16, generator=g),
        "layers.1.bias": torch.zeros(4),
        "optim.step": torch.tensor(3, dtype=torch.int64),
        "émbed.ü": torch.ones(2, 2),  # non-ASCII: order is by UTF-8 bytes
    }


def state_vectors() -> Json:
    commitments = {k: commit_tensor(v, native=False) for k, v in _state().items()}
    names, tree = state_tree_from_commitments(commitments)
    return {
        "version": 1,
        "count": len(names),
        "root": hx(tree.root),
        "entries": [
            {
                "name": n,
                "nameHash": hx(name_hash(n)),
                "commitment": hx(commitments[n]),
                "record": hx(state_entry(n, commitments[n])),
                "leaf": hx(tree.leaf(i)),
                "siblings": [hx(s) for s in tree.open(i).siblings],
            }
            for i, n in enumerate(names)
        ],
    }


def _flip(b: bytes, byte: int = 0) -> bytes:
    return b[:byte] + bytes([b[byte] ^ 1]) + b[byte + 1 :]


def negative_vectors() -> Json:
    """Openings that must be rejected; `reason` names the rule that rejects them."""
    neg: list[Json] = []

    def add(reason: str, root: bytes, count: int, index: int, leaf: bytes, sibs: list[bytes]) -> None:
        neg.append(
            {
                "reason": reason,
                "error": MERKLE_ERRORS[reason],
                "root": hx(root),
                "count": count,
                "index": index,
                "leaf": hx(leaf),
                "siblings": [hx(s) for s in sibs],
            }
        )

    leaves = [leaf_hash(encode_record(b"TEST", [i, _word(f"neg/{i}")])) for i in range(5)]
    tree = MerkleTree(leaves)  # 5 leaves, depth 3, positions 5..7 are padding
    op = tree.open(2)
    sibs = list(op.siblings)
    add("wrong_sibling", tree.root, 5, 2, leaves[2], [sibs[0], _flip(sibs[1]), sibs[2]])
    add("wrong_index", tree.root, 5, 3, leaves[2], sibs)
    add("wrong_leaf", tree.root, 5, 2, leaves[3], sibs)
    add("missing_sibling", tree.root, 5, 2, leaves[2], sibs[:-1])
    add("extra_sibling", tree.root, 5, 2, leaves[2], [*sibs, sibs[0]])
    add("wrong_count", tree.root, 6, 2, leaves[2], sibs)
    add("index_out_of_range", tree.root, 5, 8, leaves[2], sibs)
    # A genuine path to padding position 5 (its siblings really are in the tree).
    pad_sibs = [bytes(32), tree.open(4).siblings[1], tree.open(4).siblings[2]]
    add("padding_position", tree.root, 5, 5, bytes(32), pad_sibs)
    add("padding_leaf", tree.root, 5, 1, bytes(32), list(tree.open(1).siblings))

    t = _tensor_cases()[-2][1]  # bf16, 3 chunks, last one short
    good = open_element(t, t.numel() - 1)
    commitment = commit_tensor(t, native=False)
    elements: list[Json] = []

    def add_el(reason: str, mutate: Callable[[Json], None]) -> None:
        j = {
            "reason": reason,
            "error": ELEMENT_ERRORS[reason],
            "commitment": hx(commitment),
            "dtype": 4,
            "shape": list(t.shape),
        }
        j.update(_element_json(good))
        mutate(j)
        elements.append(j)

    def set_(key: str, value: Any) -> Callable[[Json], None]:
        return lambda j: j.__setitem__(key, value)

    add_el("truncated_chunk", set_("chunk", hx(good.chunk[:-1])))
    add_el("extended_chunk", set_("chunk", hx(good.chunk + b"\x00")))
    add_el("wrong_chunk_byte", set_("chunk", hx(_flip(good.chunk, 7))))
    add_el("element_out_of_range", set_("index", t.numel()))
    add_el("wrong_shape", set_("shape", [4, 1101]))
    add_el("wrong_dtype", set_("dtype", 7))  # int16: same size, other commitment
    add_el("unsupported_dtype", set_("dtype", 11))
    add_el("wrong_sibling", set_("siblings", [hx(_flip(good.proof.siblings[0])), hx(good.proof.siblings[1])]))
    return {"version": 1, "merkle": neg, "elements": elements}


def write_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in (
        ("merkle.json", merkle_vectors),
        ("tensors.json", tensor_vectors),
        ("state.json", state_vectors),
        ("negative.json", negative_vectors),
    ):
        path = out_dir / name
        text = json.dumps(build(), indent=1, ensure_ascii=True) + "\n"
        if not path.exists() or path.read_text() != text:
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(text)
            tmp.replace(path)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "contracts" / "test" / "vectors"
    for p in write_all(out):
        print(f"{p}: {p.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
