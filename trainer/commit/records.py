"""Record leaves and the state root, docs/commitments.md sections 4 and 5."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence

import torch

from trainer.commit import _native
from trainer.commit.errors import CommitError, StateError
from trainer.commit.merkle import MerkleTree, leaf_hash, root
from trainer.commit.tensor import commit_tensor

Word = bytes | int

STATE_ENTRY_TAG = b"STEN"


def encode_record(tag: bytes, words: Sequence[Word]) -> bytes:
    """`tag || w_0 || ...`: 4 ASCII tag bytes, then 32-byte words (ints big-endian)."""
    if len(tag) != 4 or not tag.isascii():
        raise CommitError(f"record tag {tag!r} must be four ASCII bytes")
    out = [tag]
    for i, w in enumerate(words):
        if isinstance(w, int):
            if not 0 <= w < 2**256:
                raise CommitError(f"record word {i} = {w} does not fit in 256 unsigned bits")
            out.append(w.to_bytes(32, "big"))
        elif len(w) == 32:
            out.append(bytes(w))
        else:
            raise CommitError(f"record word {i} is {len(w)} bytes, expected 32")
    return b"".join(out)


def record_leaf(tag: bytes, words: Sequence[Word]) -> bytes:
    return leaf_hash(encode_record(tag, words))


def name_hash(name: str) -> bytes:
    return hashlib.sha256(name.encode("utf-8")).digest()


def state_entry(name: str, commitment: bytes) -> bytes:
    """The STEN record of one state tensor."""
    return encode_record(STATE_ENTRY_TAG, [name_hash(name), commitment])


def canonical_names(names: Sequence[str]) -> list[str]:
    """Names in the canonical order: by UTF-8 bytes. Refuses empty and duplicate names."""
    encoded = []
    for name in names:
        if not isinstance(name, str) or not name:
            raise StateError(f"state names must be non-empty strings, got {name!r}")
        encoded.append((name.encode("utf-8"), name))
    encoded.sort()
    for (a, name), (b, _) in itertools.pairwise(encoded):
        if a == b:
            raise StateError(f"state name {name!r} appears twice")
    return [name for _, name in encoded]


def _state_leaves(commitments: Mapping[str, bytes]) -> tuple[list[str], list[bytes]]:
    names = canonical_names(list(commitments))
    return names, [leaf_hash(state_entry(n, commitments[n])) for n in names]


def state_tree_from_commitments(commitments: Mapping[str, bytes]) -> tuple[list[str], MerkleTree]:
    """The canonical name order and the tree of STEN leaves over precomputed commitments."""
    names, leaves = _state_leaves(commitments)
    return names, MerkleTree(leaves)


def state_root_from_commitments(commitments: Mapping[str, bytes]) -> bytes:
    return root(_state_leaves(commitments)[1])


def state_root_ordered(name_hashes: bytes, commitments: Sequence[bytes]) -> bytes:
    """The state root over entries already in canonical order, given their names' hashes as one row
    (`b"".join(name_hash(n) ...)`) and their commitments: one native call when the library is there,
    else the reference (same bits: tests/commit/test_native.py)."""
    row = b"".join(commitments)
    fast = _native.state_root(name_hashes, row)
    if fast is not None:
        return fast
    return root([leaf_hash(encode_record(STATE_ENTRY_TAG, [name_hashes[i : i + 32], row[i : i + 32]]))
                 for i in range(0, len(row), 32)])


def state_commitments(state: Mapping[str, torch.Tensor]) -> dict[str, bytes]:
    return {name: commit_tensor(t) for name, t in state.items()}


def state_root(state: Mapping[str, torch.Tensor]) -> bytes:
    """Root of a state: list root of STEN records sorted by name bytes."""
    return state_root_from_commitments(state_commitments(state))
