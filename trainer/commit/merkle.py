"""Merkle lists as specified in docs/commitments.md, sections 1 and 2.

Pure functions over 32-byte SHA-256 digests. Leaf rows are passed around as one `bytes`
of `32 * n` bytes (row layout), which is what the native fast path works on too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from trainer.commit import _native
from trainer.commit.errors import ProofError

PAD = bytes(32)
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
LIST_PREFIX = b"\x02"
TENSOR_PREFIX = b"\x03"


def sha256(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(data: bytes | memoryview) -> bytes:
    """`H(0x00 || data)`."""
    h = hashlib.sha256(LEAF_PREFIX)
    h.update(data)
    return h.digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """`H(0x01 || left || right)`."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def list_root(count: int, top: bytes) -> bytes:
    """`H(0x02 || u64(count) || top)`: binds the leaf count, hence the proof depth."""
    if not 0 <= count < 2**64:
        raise ProofError(f"leaf count {count} does not fit in 64 bits")
    return hashlib.sha256(LIST_PREFIX + count.to_bytes(8, "big") + top).digest()


def depth(count: int) -> int:
    """Proof length of a list of `count` leaves: 0 for 0 or 1 leaf, else ceil(log2 count)."""
    return 0 if count <= 1 else (count - 1).bit_length()


def _row(leaves: Sequence[bytes] | bytes) -> bytes:
    if isinstance(leaves, bytes | bytearray | memoryview):
        row = bytes(leaves)
        if len(row) % 32:
            raise ProofError(f"leaf row of {len(row)} bytes is not a whole number of 32-byte hashes")
        return row
    for i, leaf in enumerate(leaves):
        if len(leaf) != 32:
            raise ProofError(f"leaf {i} is {len(leaf)} bytes, expected a 32-byte hash")
    return b"".join(leaves)


def _parent_row_py(row: bytes) -> bytes:
    """One level up, in pure Python (the reference). `row` holds an even number of hashes."""
    sha = hashlib.sha256
    return b"".join(sha(NODE_PREFIX + row[i : i + 64]).digest() for i in range(0, len(row), 64))


SMALL_PAIRS = 8  # up to this many pairs hashlib beats the native call's fixed cost (same bits)


def _parent_row(row: bytes) -> bytes:
    if len(row) <= 64 * SMALL_PAIRS:
        return _parent_row_py(row)
    fast = _native.parent_row(row)
    return fast if fast is not None else _parent_row_py(row)


def _rows(row: bytes, parent: Callable[[bytes], bytes]) -> Iterator[bytes]:
    """The rows of the tree over `row`, leaves first, each odd row (but the top) padded with PAD."""
    while len(row) > 32:
        if (len(row) // 32) % 2:
            row += PAD
        yield row
        row = parent(row)
    yield row


def top_of_row(row: bytes, *, native: bool = True) -> bytes:
    """Top of the padded tree over a leaf row (`32 * n` bytes)."""
    if not row:
        return PAD
    *_, top = _rows(row, _parent_row if native else _parent_row_py)
    return top


def root_of_row(row: bytes, *, native: bool = True) -> bytes:
    return list_root(len(row) // 32, top_of_row(row, native=native))


def root(leaves: Sequence[bytes] | bytes) -> bytes:
    """List root of leaf hashes (a sequence of 32-byte hashes or a row)."""
    return root_of_row(_row(leaves))


@dataclass(frozen=True, slots=True)
class Opening:
    """Opening of leaf `index` in a list of `count` leaves; siblings from the leaf level up."""

    count: int
    index: int
    siblings: tuple[bytes, ...]


class MerkleTree:
    """All levels of a list's tree, kept to produce openings."""

    __slots__ = ("_levels", "count")

    def __init__(self, leaves: Sequence[bytes] | bytes) -> None:
        row = _row(leaves)
        self.count = len(row) // 32
        self._levels = list(_rows(row, _parent_row))

    @property
    def top(self) -> bytes:
        return PAD if self.count == 0 else self._levels[-1][:32]

    @property
    def root(self) -> bytes:
        return list_root(self.count, self.top)

    def leaf(self, index: int) -> bytes:
        self._check_index(index)
        return self._levels[0][32 * index : 32 * index + 32]

    def open(self, index: int) -> Opening:
        self._check_index(index)
        siblings = []
        pos = index
        for level in self._levels[:-1]:
            sib = pos ^ 1
            siblings.append(level[32 * sib : 32 * sib + 32])
            pos >>= 1
        return Opening(self.count, index, tuple(siblings))

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.count:
            raise ProofError(f"leaf index {index} is out of range for a list of {self.count} leaves")


def fold(count: int, index: int, leaf: bytes, siblings: Sequence[bytes]) -> bytes:
    """The root that an opening implies; raises ProofError if it is malformed."""
    if not 0 <= index < count:
        raise ProofError(
            f"leaf index {index} is out of range for a list of {count} leaves"
            + (" (a padding position)" if index >= count and index < 1 << depth(count) else "")
        )
    if len(leaf) != 32:
        raise ProofError(f"leaf hash is {len(leaf)} bytes, expected 32")
    if leaf == PAD:
        raise ProofError("the padding leaf cannot be opened")
    want = depth(count)
    if len(siblings) != want:
        raise ProofError(f"proof has {len(siblings)} siblings; a list of {count} leaves needs {want}")
    h = leaf
    for k, sib in enumerate(siblings):
        if len(sib) != 32:
            raise ProofError(f"sibling {k} is {len(sib)} bytes, expected 32")
        h = node_hash(h, sib) if (index >> k) & 1 == 0 else node_hash(sib, h)
    return list_root(count, h)


def verify(root_: bytes, count: int, index: int, leaf: bytes, siblings: Sequence[bytes]) -> None:
    """Raise ProofError unless the opening proves `leaf` at `index` under `root_`."""
    got = fold(count, index, leaf, siblings)
    if got != root_:
        raise ProofError(f"opening of leaf {index} folds to {got.hex()}, not to the root {bytes(root_).hex()}")
