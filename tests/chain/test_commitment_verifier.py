"""CommitmentVerifier on anvil: element openings of real torch tensors, and every way to get one wrong."""

from __future__ import annotations

import dataclasses
import struct

import pytest
import torch

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.errors import ContractRevert
from offchain.contracts.commitment_verifier import CommitmentVerifierClient
from trainer.commit import (
    PAD,
    ElementOpening,
    MerkleTree,
    Opening,
    commit_tensor,
    element_commitment,
    leaf_hash,
    list_root,
    open_element,
)
from trainer.commit import root as merkle_root

pytestmark = pytest.mark.anvil


@pytest.fixture(scope="module")
def verifier(anvil: Anvil, artifacts: dict[str, Artifact]) -> CommitmentVerifierClient:
    chain = ChainClient(anvil.rpc_url, anvil.accounts[1].private_key, artifacts=artifacts.values())
    deployed = chain.deploy(artifacts["CommitmentVerifier"])
    return CommitmentVerifierClient(chain, deployed.address, artifacts["CommitmentVerifier"])


def _tensor(dtype: torch.dtype, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(n)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(n, generator=g).to(dtype)
    return torch.randint(-(2**31), 2**31, (n,), generator=g, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        (torch.float32, (3, 1000)),  # 12000 bytes: 3 chunks, the last one short
        (torch.bfloat16, (5000,)),
        (torch.int64, (2, 3, 300)),
        (torch.bool, (77,)),
        (torch.float64, ()),
    ],
)
def test_verify_element_gives_the_value_bits(
    verifier: CommitmentVerifierClient, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    n = 1
    for d in shape:
        n *= d
    t = _tensor(dtype, n).reshape(shape)
    commitment = commit_tensor(t)
    flat = t.reshape(-1)
    for index in sorted({0, n // 2, n - 1}):
        opening = open_element(t, index)
        expected = int.from_bytes(flat[index : index + 1].view(torch.uint8).numpy().tobytes(), "little")
        got = verifier.verify_element(commitment, opening)
        assert got.value_bits == opening.value_bits == expected
        assert got.gas_used > 21_000 and got.tx_hash.startswith("0x")
        assert verifier.element_value(commitment, opening) == expected


def test_value_bits_of_a_float32_are_its_ieee_bits(verifier: CommitmentVerifierClient) -> None:
    t = torch.tensor([1.5, -2.25, 3.0e-8], dtype=torch.float32)
    got = verifier.verify_element(commit_tensor(t), open_element(t, 1))
    assert got.value_bits == struct.unpack("<I", struct.pack("<f", -2.25))[0]


def _opening() -> tuple[bytes, ElementOpening]:
    t = _tensor(torch.float32, 5000)  # 20000 bytes: 5 chunks, depth 3
    return commit_tensor(t), open_element(t, 2500)


def _flip(b: bytes, at: int = 0) -> bytes:
    return b[:at] + bytes([b[at] ^ 1]) + b[at + 1 :]


def test_tampered_chunk_reverts_commitment_mismatch(verifier: CommitmentVerifierClient) -> None:
    commitment, op = _opening()
    bad = dataclasses.replace(op, chunk=_flip(op.chunk, 5))
    with pytest.raises(ContractRevert) as info:
        verifier.verify_element(commitment, bad)
    err = info.value
    assert err.error_name == "TensorCommitmentMismatch"
    assert err.args.computed == element_commitment(bad) and err.args.expected == commitment
    assert err.contract == "CommitmentVerifier"
    assert str(err).startswith("CommitmentVerifier reverted TensorCommitmentMismatch(computed=0x")
    assert "does not lead to the committed tensor" in str(err)


@pytest.mark.parametrize(
    ("case", "error", "args"),
    [
        ("sibling", "TensorCommitmentMismatch", None),
        ("short_proof", "MerkleProofLength", {"got": 2, "expected": 3}),
        ("long_proof", "MerkleProofLength", {"got": 4, "expected": 3}),
        ("index", "TensorElementOutOfRange", {"index": 5000, "numel": 5000}),
        ("truncated", "TensorChunkLength", {"got": 4095, "expected": 4096}),
        ("dtype", "TensorUnsupportedDtype", {"dtype": 11}),
        ("shape", "TensorCommitmentMismatch", None),
        ("dims", "TensorTooManyDims", {"ndim": 33}),
    ],
)
def test_wrong_openings_revert_with_decoded_errors(
    verifier: CommitmentVerifierClient, case: str, error: str, args: dict[str, int] | None
) -> None:
    commitment, op = _opening()
    sib = op.proof.siblings
    bad = {
        "sibling": lambda: dataclasses.replace(
            op, proof=dataclasses.replace(op.proof, siblings=(_flip(sib[0]), *sib[1:]))
        ),
        "short_proof": lambda: dataclasses.replace(op, proof=dataclasses.replace(op.proof, siblings=sib[:-1])),
        "long_proof": lambda: dataclasses.replace(op, proof=dataclasses.replace(op.proof, siblings=(*sib, sib[0]))),
        "index": lambda: dataclasses.replace(op, index=5000),
        "truncated": lambda: dataclasses.replace(op, chunk=op.chunk[:-1]),
        "dtype": lambda: dataclasses.replace(op, dtype=11),
        "shape": lambda: dataclasses.replace(op, shape=(1, 5000)),
        "dims": lambda: dataclasses.replace(op, shape=(1,) * 32 + (5000,)),
    }[case]()
    for check in (verifier.element_value, verifier.verify_element):  # eth_call and eth_estimateGas paths
        with pytest.raises(ContractRevert) as info:
            check(commitment, bad)
        assert info.value.error_name == error
        if args is not None:
            assert info.value.args._asdict() == args
        assert f"CommitmentVerifier reverted {error}(" in str(info.value)


def test_revert_in_a_mined_transaction_is_decoded_from_the_receipt(verifier: CommitmentVerifierClient) -> None:
    commitment, op = _opening()
    bad = dataclasses.replace(op, chunk=_flip(op.chunk))
    before = verifier.chain.block_number()
    with pytest.raises(ContractRevert) as info:
        verifier.verify_element(commitment, bad, gas=400_000)  # explicit gas: no estimate, the tx is mined
    assert verifier.chain.block_number() == before + 1
    err = info.value
    assert err.error_name == "TensorCommitmentMismatch" and err.tx_hash and err.tx_hash in str(err)
    assert err.args.expected == commitment


def test_verify_leaf_and_list_root(verifier: CommitmentVerifierClient) -> None:
    leaves = [leaf_hash(f"leaf {i}".encode()) for i in range(5)]
    tree = MerkleTree(leaves)
    root = merkle_root(leaves)
    for i in range(5):
        verifier.verify_leaf(root, leaves[i], tree.open(i))
    wrong = bytes(32)[:-1] + b"\x01"
    with pytest.raises(ContractRevert) as info:
        verifier.verify_leaf(wrong, leaves[2], tree.open(2))
    assert info.value.error_name == "MerkleRootMismatch"
    assert info.value.args.computed == root and info.value.args.expected == wrong
    with pytest.raises(ContractRevert, match=r"MerkleIndexOutOfRange\(index=5, count=5\)"):
        verifier.verify_leaf(root, leaves[0], Opening(5, 5, tree.open(4).siblings))
    with pytest.raises(ContractRevert, match=r"MerklePaddingLeaf\(\): the opened leaf is the padding leaf"):
        verifier.verify_leaf(root, PAD, tree.open(1))
    top = b"\x42" * 32
    assert verifier.list_root(7, top) == list_root(7, top)
