"""pytest side of the shared vectors: the files forge reads are checked here too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainer.commit import (
    ElementOpening,
    MerkleTree,
    Opening,
    ProofError,
    UnsupportedTensorError,
    leaf_hash,
    root,
    verify,
    verify_element,
)
from trainer.commit.merkle import root_of_row
from trainer.commit.records import name_hash, state_entry
from trainer.commit.tensor import chunk_leaves_py, commitment_of
from trainer.commit.vectors import write_all

VECTORS = Path(__file__).resolve().parents[2] / "contracts" / "test" / "vectors"


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def b(x: str) -> bytes:
    return bytes.fromhex(x.removeprefix("0x"))


def test_vectors_are_up_to_date(tmp_path: Path) -> None:
    """The committed files are exactly what the writer produces now (both sides test the same thing)."""
    for fresh in write_all(tmp_path):
        committed = VECTORS / fresh.name
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed} is stale: run python -m trainer.commit.vectors"
        )


@pytest.mark.parametrize("case", load("merkle.json")["cases"], ids=lambda c: c["name"])
def test_merkle_case(case: dict[str, Any]) -> None:
    leaves = [leaf_hash(b(r)) for r in case["records"]]
    assert [x.hex() for x in leaves] == [b(x).hex() for x in case["leaves"]]
    assert root(leaves) == b(case["root"])
    tree = MerkleTree(leaves)
    assert tree.root == b(case["root"])
    for op in case["openings"]:
        sibs = [b(s) for s in op["siblings"]]
        assert len(sibs) == case["depth"]
        verify(b(case["root"]), case["count"], op["index"], leaves[op["index"]], sibs)
        assert tree.open(op["index"]) == Opening(case["count"], op["index"], tuple(sibs))


@pytest.mark.parametrize("case", load("tensors.json")["cases"], ids=lambda c: c["name"])
def test_tensor_case(case: dict[str, Any]) -> None:
    shape = tuple(case["shape"])
    assert commitment_of(case["dtype"], shape, b(case["dataRoot"])) == b(case["commitment"])
    if case["hasData"]:
        data = b(case["data"])
        assert len(data) == case["nbytes"]
        assert root_of_row(chunk_leaves_py(data), native=False) == b(case["dataRoot"])
    for op in case["openings"]:
        opening = ElementOpening(
            case["dtype"],
            shape,
            op["index"],
            b(op["chunk"]),
            Opening(case["chunkCount"], op["chunkIndex"], tuple(b(s) for s in op["siblings"])),
        )
        assert verify_element(b(case["commitment"]), opening) == op["valueBits"]


def test_tensor_vectors_cover_the_issue_cases() -> None:
    cases = {c["name"]: c for c in load("tensors.json")["cases"]}
    assert cases["empty_f32"]["numel"] == 0 and cases["empty_f32"]["openings"] == []
    assert cases["scalar_f32"]["shape"] == [] and len(cases["scalar_f32"]["openings"]) == 1
    big = cases["w_1mib_f32"]
    assert big["nbytes"] == 2**20
    assert [o["index"] for o in big["openings"]] == [0, big["numel"] // 2, big["numel"] - 1]


def test_state_vectors() -> None:
    state = load("state.json")
    names = [e["name"] for e in state["entries"]]
    assert names == sorted(names, key=lambda n: n.encode("utf-8"))
    leaves = []
    for e in state["entries"]:
        assert b(e["nameHash"]) == name_hash(e["name"])
        assert state_entry(e["name"], b(e["commitment"])) == b(e["record"])
        leaves.append(leaf_hash(b(e["record"])))
    assert root(leaves) == b(state["root"])
    for i, e in enumerate(state["entries"]):
        verify(b(state["root"]), state["count"], i, leaves[i], [b(s) for s in e["siblings"]])


# The Python rejection that corresponds to each Solidity custom error named in the vectors.
PY_MESSAGE = {
    "MerkleRootMismatch": "not to the root",
    "MerkleProofLength": "siblings; a list of",
    "MerkleIndexOutOfRange": "out of range",
    "MerklePaddingLeaf": "padding leaf",
    "TensorChunkLength": "bytes; shape",
    "TensorCommitmentMismatch": "implies commitment",
    "TensorElementOutOfRange": "out of range for shape",
    "TensorUnsupportedDtype": "unknown dtype code",
}


@pytest.mark.parametrize("case", load("negative.json")["merkle"], ids=lambda c: c["reason"])
def test_negative_merkle_rejected(case: dict[str, Any]) -> None:
    with pytest.raises(ProofError, match=PY_MESSAGE[case["error"]]):
        verify(b(case["root"]), case["count"], case["index"], b(case["leaf"]), [b(s) for s in case["siblings"]])


@pytest.mark.parametrize("case", load("negative.json")["elements"], ids=lambda c: c["reason"])
def test_negative_element_rejected(case: dict[str, Any]) -> None:
    nbytes_of = {4: 2, 7: 2, 11: 2}
    shape = tuple(case["shape"])
    n = 1
    for d in shape:
        n *= d
    count = -(-(n * nbytes_of[case["dtype"]]) // 4096)
    opening = ElementOpening(
        case["dtype"],
        shape,
        case["index"],
        b(case["chunk"]),
        Opening(count, case["chunkIndex"], tuple(b(s) for s in case["siblings"])),
    )
    with pytest.raises((ProofError, UnsupportedTensorError), match=PY_MESSAGE[case["error"]]):
        verify_element(b(case["commitment"]), opening)
