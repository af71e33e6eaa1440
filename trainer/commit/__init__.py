"""Commitments: SHA-256 Merkle lists, tensor commitments, records and state roots.

The format is specified in docs/commitments.md; this package is its Python side (pure
functions, no chain code) and contracts/src/lib/ its Solidity side.
"""

from trainer.commit.errors import CommitError, ProofError, StateError, UnsupportedTensorError
from trainer.commit.merkle import PAD, MerkleTree, Opening, depth, fold, leaf_hash, list_root, node_hash, root, verify
from trainer.commit.records import (
    encode_record,
    name_hash,
    record_leaf,
    state_commitments,
    state_entry,
    state_root,
    state_root_from_commitments,
    state_root_ordered,
    state_tree_from_commitments,
)
from trainer.commit.tensor import (
    CHUNK,
    ElementOpening,
    commit_tensor,
    commit_tensors,
    dtype_code,
    element_commitment,
    open_element,
    verify_element,
)

__all__ = [
    "CHUNK",
    "PAD",
    "CommitError",
    "ElementOpening",
    "MerkleTree",
    "Opening",
    "ProofError",
    "StateError",
    "UnsupportedTensorError",
    "commit_tensor",
    "commit_tensors",
    "depth",
    "dtype_code",
    "element_commitment",
    "encode_record",
    "fold",
    "leaf_hash",
    "list_root",
    "name_hash",
    "node_hash",
    "open_element",
    "record_leaf",
    "root",
    "state_commitments",
    "state_entry",
    "state_root",
    "state_root_from_commitments",
    "state_root_ordered",
    "state_tree_from_commitments",
    "verify",
    "verify_element",
]
