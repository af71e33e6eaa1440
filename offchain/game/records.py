"""The records a dispute reads (docs/commitments.md section 4, docs/program.md section 4).

- `CKPT`: `"CKPT" || u256(step) || stateRoot`, one per checkpoint; `CheckpointList` holds a
  trainer's whole list (its descent tree, its root, the openings the market and game ask for).
- `NODE`: `"NODE" || u256(index) || H(descriptor) || u256(nIn) || inputs || u256(nOut) || outputs`,
  a trace record (`trainer.interp.interpreter.NodeRecord`); `parse_node_record` reads one back.
- `DESC`: a node's descriptor; input `k`'s reference is three words at byte offset
  `4 + 32 (4 + 3k)` (`input_reference`), `parse_descriptor` reads the whole record.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from offchain.game.descent import LeafTree
from offchain.game.errors import GameError
from trainer.commit import MerkleTree, Opening, encode_record, leaf_hash
from trainer.interp.interpreter import NODE_TAG, NodeRecord

CHECKPOINT_TAG: Final = b"CKPT"
DESCRIPTOR_TAG: Final = b"DESC"
_WORD: Final = 32
_TAG: Final = 4


def checkpoint_record(step: int, state_root: bytes) -> bytes:
    """`"CKPT" || u256(step) || stateRoot`."""
    return encode_record(CHECKPOINT_TAG, [step, _hash(state_root, "state root")])


def checkpoint_leaf(step: int, state_root: bytes) -> bytes:
    return leaf_hash(checkpoint_record(step, state_root))


class CheckpointList:
    """A trainer's checkpoint list: the state roots at steps `0, c, 2c, ..., T`."""

    __slots__ = ("interval", "merkle", "roots", "tree")

    def __init__(self, roots: Sequence[bytes], interval: int) -> None:
        if len(roots) < 2:
            raise GameError(f"a checkpoint list holds at least the roots at steps 0 and T, got {len(roots)}")
        if interval < 1:
            raise GameError(f"checkpoint interval {interval} must be positive")
        self.interval = interval
        self.roots = tuple(_hash(r, f"root {i}") for i, r in enumerate(roots))
        leaves = [checkpoint_leaf(i * interval, r) for i, r in enumerate(self.roots)]
        self.tree = LeafTree(leaves)
        self.merkle = MerkleTree(leaves)

    @classmethod
    def from_steps(cls, root_at: Callable[[int], bytes], steps: int, interval: int) -> CheckpointList:
        """The list of a run whose state root after `s` steps is `root_at(s)`."""
        if steps < 1 or steps % interval:
            raise GameError(f"steps ({steps}) must be a positive multiple of the interval ({interval})")
        return cls([root_at(s) for s in range(0, steps + 1, interval)], interval)

    @property
    def count(self) -> int:
        """`T / c + 1` checkpoints."""
        return len(self.roots)

    @property
    def steps(self) -> int:
        return (self.count - 1) * self.interval

    @property
    def root(self) -> bytes:
        """The checkpoint-list root (the market builds it from `roots` at `submit`)."""
        return self.merkle.root

    @property
    def initial_root(self) -> bytes:
        return self.roots[0]

    @property
    def final_root(self) -> bytes:
        return self.roots[-1]

    def step_of(self, index: int) -> int:
        return index * self.interval

    def leaf(self, index: int) -> bytes:
        return self.merkle.leaf(index)

    def opening(self, index: int) -> Opening:
        return self.merkle.open(index)

    def proof(self, index: int) -> list[bytes]:
        """The siblings of checkpoint `index`, as the contracts take them."""
        return list(self.merkle.open(index).siblings)


# -- NODE records --------------------------------------------------------------------------


def parse_node_record(record: bytes) -> NodeRecord:
    """A NODE record's fields; GameError unless it is exactly one well-formed record."""
    record = bytes(record)
    if record[:_TAG] != NODE_TAG:
        raise GameError(f"a NODE record starts with b'NODE', not {record[:_TAG]!r}")
    words = _words(record, "NODE record")
    if len(words) < 4:
        raise GameError(f"a NODE record has at least 4 words, this one {len(words)}")
    n_in = _count(words[2], "input count")
    if len(words) < 4 + n_in:
        raise GameError(f"a NODE record with {n_in} inputs has at least {4 + n_in} words, this one {len(words)}")
    n_out = _count(words[3 + n_in], "output count")
    if len(words) != 4 + n_in + n_out:
        raise GameError(
            f"a NODE record with {n_in} inputs and {n_out} outputs has {4 + n_in + n_out} words, this one {len(words)}"
        )
    return NodeRecord(
        index=int.from_bytes(words[0], "big"),
        descriptor_hash=words[1],
        inputs=tuple(words[3 : 3 + n_in]),
        outputs=tuple(words[4 + n_in :]),
    )


def first_differing_input(a: NodeRecord, b: NodeRecord) -> int | None:
    """The first input `k` whose commitments differ; None when all agree (then the oracle decides)."""
    if len(a.inputs) != len(b.inputs):
        raise GameError(f"the records have {len(a.inputs)} and {len(b.inputs)} inputs; one descriptor fixes it")
    for k, (x, y) in enumerate(zip(a.inputs, b.inputs, strict=True)):
        if x != y:
            return k
    return None


def commitments_hash(commitments: Sequence[bytes]) -> bytes:
    """`sha256(c_0 || c_1 || ...)`: the oracle's `inputsHash` and `outputsHash`."""
    return hashlib.sha256(b"".join(_hash(c, f"commitment {i}") for i, c in enumerate(commitments))).digest()


# -- descriptors ---------------------------------------------------------------------------


class RefKind(enum.IntEnum):
    """Where a node input comes from (docs/program.md section 4)."""

    STATE = 1
    BATCH = 2
    CONSTANT = 3
    NODE = 4


@dataclass(frozen=True, slots=True)
class InputReference:
    """Input `k`'s three words: `(kind, a, b)`, `a` a name hash (kinds 1-3) or a node index (4)."""

    kind: RefKind
    a: bytes
    b: bytes

    @property
    def name_hash(self) -> bytes:
        if self.kind is RefKind.NODE:
            raise GameError("a node-output reference names a node and slot, not a name")
        return self.a

    @property
    def node(self) -> int:
        if self.kind is not RefKind.NODE:
            raise GameError(f"a {self.kind.name.lower()} reference names an input, not a node")
        return int.from_bytes(self.a, "big")

    @property
    def slot(self) -> int:
        if self.kind is not RefKind.NODE:
            raise GameError(f"a {self.kind.name.lower()} reference has no output slot")
        return int.from_bytes(self.b, "big")

    @property
    def words(self) -> tuple[int, bytes, bytes]:
        """As `uint256[3]` (the `ref` of a POUT record)."""
        return (int(self.kind), self.a, self.b)


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A parsed `DESC` record."""

    op_hash: bytes
    args_hash: bytes
    inputs: tuple[InputReference, ...]
    output_types: tuple[bytes, ...]

    @property
    def hash(self) -> bytes:
        """`H(descriptor)`, the word in NDSC and NODE records."""
        return hashlib.sha256(self.encode()).digest()

    def encode(self) -> bytes:
        words: list[bytes | int] = [self.op_hash, self.args_hash, len(self.inputs), len(self.output_types)]
        for ref in self.inputs:
            words += [int(ref.kind), ref.a, ref.b]
        words += list(self.output_types)
        return encode_record(DESCRIPTOR_TAG, words)


def input_reference(descriptor: bytes, k: int) -> InputReference:
    """Input `k`'s reference, read at byte offset `4 + 32 (4 + 3k)` as the contract reads it."""
    n_in, _ = _descriptor_counts(descriptor)
    if not 0 <= k < n_in:
        raise GameError(f"input {k} does not exist; the descriptor has {n_in} inputs")
    at = _TAG + _WORD * (4 + 3 * k)
    kind, a, b = (descriptor[at + _WORD * i : at + _WORD * (i + 1)] for i in range(3))
    code = int.from_bytes(kind, "big")
    try:
        ref_kind = RefKind(code)
    except ValueError:
        raise GameError(f"input {k} has reference kind {code}; kinds are 1 (state) .. 4 (node output)") from None
    return InputReference(ref_kind, bytes(a), bytes(b))


def parse_descriptor(descriptor: bytes) -> Descriptor:
    descriptor = bytes(descriptor)
    n_in, _ = _descriptor_counts(descriptor)
    words = _words(descriptor, "descriptor")
    return Descriptor(
        op_hash=words[0],
        args_hash=words[1],
        inputs=tuple(input_reference(descriptor, k) for k in range(n_in)),
        output_types=tuple(words[4 + 3 * n_in :]),
    )


def _descriptor_counts(descriptor: bytes) -> tuple[int, int]:
    if descriptor[:_TAG] != DESCRIPTOR_TAG:
        raise GameError(f"a descriptor starts with b'DESC', not {bytes(descriptor[:_TAG])!r}")
    words = _words(descriptor, "descriptor")
    if len(words) < 4:
        raise GameError(f"a descriptor has at least 4 words, this one {len(words)}")
    n_in, n_out = _count(words[2], "input count"), _count(words[3], "output count")
    if len(words) != 4 + 3 * n_in + n_out:
        raise GameError(
            f"a descriptor with {n_in} inputs and {n_out} outputs has {4 + 3 * n_in + n_out} words, "
            f"this one {len(words)}"
        )
    return n_in, n_out


def _words(record: bytes, what: str) -> list[bytes]:
    body = len(record) - _TAG
    if body < 0 or body % _WORD:
        raise GameError(f"a {what} is a 4-byte tag and 32-byte words; {len(record)} bytes is not")
    return [record[_TAG + _WORD * i : _TAG + _WORD * (i + 1)] for i in range(body // _WORD)]


def _count(word: bytes, what: str) -> int:
    v = int.from_bytes(word, "big")
    if v >= 2**32:
        raise GameError(f"{what} {v} is not a plausible count")
    return v


def _hash(value: bytes, what: str) -> bytes:
    if len(value) != 32:
        raise GameError(f"{what} is {len(value)} bytes, expected a 32-byte hash")
    return bytes(value)
