"""Payout shares and Merkle-sum payout trees (docs/commitments.md, "Payout trees").

`split` cuts a pool of wei into integer shares by exact pro rata with largest remainders, so the
shares add up to the pool to the wei. `leaves_from_shares` orders the shares into tree leaves
(DID byte order, zero shares left out), `build_tree` builds the Merkle-sum tree that
`contracts/src/PayoutDistributor.sol` pays out by, and `verify_proof` checks a claim exactly as
the contract does. Pure functions; no chain code.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NewType

from trainer.ledger import did as ledger_did
from trainer.ledger.errors import LedgerError

Wei = NewType("Wei", int)

LEAF_PREFIX = b"\x10"
NODE_PREFIX = b"\x11"
ROOT_PREFIX = b"\x12"
PAD = bytes(32)
MAX_LEAVES = 1 << 16
"""Most leaves a payout tree may have (`PayoutDistributor.MAX_LEAVES`): proofs have at most 16 steps."""
MAX_SUM = (1 << 96) - 1
"""Largest amount, sum or pool (`PayoutDistributor.MAX_POOL`, 2^96 - 1 wei)."""


class PayoutError(LedgerError):
    """Root of every error raised by `trainer.ledger.payout`."""


class SplitError(PayoutError):
    """A pool cannot be split by the weights given (negative values, no weight at all, ...)."""


class PayoutTreeError(PayoutError):
    """Leaves cannot form a payout tree (bad account, amount, count or total)."""


class PayoutProofError(PayoutError):
    """A payout claim is malformed or does not verify; `reason` names the contract's error."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------------------- shares


def did_tie_key(did: str) -> bytes:
    """The default tie key: the DID string's UTF-8 bytes (byte order, shorter prefix first)."""
    return did.encode("utf-8")


def _check_int(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SplitError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise SplitError(f"{what} must be non-negative, got {value}")
    return value


def split(pool: int, weights: Mapping[str, int], tie_key: Callable[[str], bytes] = did_tie_key) -> dict[str, int]:
    """Split `pool` wei among the keys of `weights`, exactly.

    Share `i` is `floor(pool * w_i / W)` (`W` the sum of the weights) plus one wei for each of
    the `R = pool - sum of the floors` keys with the largest remainders `pool * w_i mod W`;
    equal remainders go in increasing byte order of `tie_key(key)`. The shares add up to `pool`,
    differ from the exact quota by less than one wei, never decrease when one key's weight grows,
    and do not depend on the order of `weights`. The result lists every key (zero shares too), in
    tie-key order.

    Raises `SplitError` for a negative or non-int pool or weight, for no keys, for two keys with
    the same tie key, and when every weight is zero (`W = 0`): there is then no pro-rata rule, and
    the caller decides (refund the pool, or split it equally by passing weight 1 for each key).
    """
    _check_int("pool", pool)
    if not weights:
        raise SplitError("no accounts to split the pool among")
    ranked: list[tuple[bytes, str, int]] = []
    for key, w in weights.items():
        ranked.append((tie_key(key), key, _check_int(f"weight of {key!r}", w)))
    ranked.sort()
    for (a, ka, _), (b, kb, _) in itertools.pairwise(ranked):
        if a == b:
            raise SplitError(f"{ka!r} and {kb!r} have the same tie key {a!r}: ties could not be broken")
    total_weight = sum(w for _, _, w in ranked)
    if total_weight == 0:
        raise SplitError(
            f"every weight is zero ({len(ranked)} accounts): no pro-rata split exists; "
            "refund the pool or pass equal weights explicitly"
        )
    shares: dict[str, int] = {}
    remainders: list[tuple[int, bytes, str]] = []
    for tk, key, w in ranked:
        q, r = divmod(pool * w, total_weight)
        shares[key] = q
        remainders.append((-r, tk, key))
    rest = pool - sum(shares.values())
    remainders.sort()
    for _, _, key in remainders[:rest]:
        shares[key] += 1
    return shares


def parse_did(did: str) -> tuple[int, bytes]:
    """`did:pkh:eip155:<chainId>:<0x + 40 lowercase hex>` -> (chain id, 20-byte address), by the
    ledger's own DID rules (`trainer.ledger.did`)."""
    try:
        chain_id, address = ledger_did.parse_did(did)
    except LedgerError as e:
        raise PayoutTreeError(str(e)) from None
    return chain_id, bytes.fromhex(address[2:])


def did_of(chain_id: int, account: bytes) -> str:
    """The canonical DID of `account` on `chain_id` (address in lowercase hex)."""
    if len(account) != 20:
        raise PayoutTreeError(f"an account is 20 bytes, got {len(account)}")
    try:
        return ledger_did.did_of(chain_id, "0x" + account.hex())
    except LedgerError as e:
        raise PayoutTreeError(str(e)) from None


# ---------------------------------------------------------------------------- tree


@dataclass(frozen=True, slots=True)
class PayoutLeaf:
    """Leaf of a payout tree: `account` (20 bytes) is paid `amount` wei (1 .. MAX_SUM)."""

    account: bytes
    amount: int

    def __post_init__(self) -> None:
        if not isinstance(self.account, bytes) or len(self.account) != 20:
            raise PayoutTreeError(f"a leaf's account is 20 bytes, got {self.account!r}")
        if self.account == bytes(20):
            raise PayoutTreeError("a leaf cannot pay the zero address (the contract never pays it)")
        if isinstance(self.amount, bool) or not isinstance(self.amount, int) or not 0 < self.amount <= MAX_SUM:
            raise PayoutTreeError(
                f"a leaf's amount is an int in 1 .. 2^96 - 1 (leave out zero shares), got {self.amount!r}"
            )


@dataclass(frozen=True, slots=True)
class ProofStep:
    """A sibling node from the leaf level upward: its hash and its sum (padding is `(PAD, 0)`)."""

    hash: bytes
    sum: int


@dataclass(frozen=True, slots=True)
class PayoutProof:
    """Everything `PayoutDistributor.claim` takes besides the distribution id."""

    index: int
    account: bytes
    amount: int
    steps: tuple[ProofStep, ...]

    def steps_abi(self) -> list[tuple[bytes, int]]:
        """The steps as the ABI's `(bytes32 hash, uint256 sum)[]`."""
        return [(s.hash, s.sum) for s in self.steps]


def leaf_hash(account: bytes, amount: int) -> bytes:
    """`H(0x10 || account(20) || u256(amount))`."""
    return hashlib.sha256(LEAF_PREFIX + account + amount.to_bytes(32, "big")).digest()


def node_hash(left: bytes, left_sum: int, right: bytes, right_sum: int) -> bytes:
    """`H(0x11 || lh || u256(ls) || rh || u256(rs))`: both children's hashes and sums (129 bytes in)."""
    return hashlib.sha256(
        NODE_PREFIX + left + left_sum.to_bytes(32, "big") + right + right_sum.to_bytes(32, "big")
    ).digest()


def payout_root(top_hash: bytes, leaf_count: int, total: int) -> bytes:
    """`H(0x12 || u64(leafCount) || topHash || u256(total))`: what the contract stores."""
    if not 0 <= leaf_count < 2**64:
        raise PayoutTreeError(f"leaf count {leaf_count} does not fit in 64 bits")
    if not 0 <= total < 2**256:
        raise PayoutTreeError(f"total {total} does not fit in 256 bits")
    return hashlib.sha256(ROOT_PREFIX + leaf_count.to_bytes(8, "big") + top_hash + total.to_bytes(32, "big")).digest()


def depth(leaf_count: int) -> int:
    """Proof length: 0 for one leaf, else ceil(log2 leafCount) (docs/commitments.md section 2)."""
    return 0 if leaf_count <= 1 else (leaf_count - 1).bit_length()


@dataclass(frozen=True, slots=True)
class PayoutTree:
    """A built payout tree. `levels[0]` is the leaf row, `levels[-1]` the top; each node is
    `(hash, sum)`, and a level of odd length below the top is extended with one padding node."""

    leaves: tuple[PayoutLeaf, ...]
    levels: tuple[tuple[tuple[bytes, int], ...], ...]

    @property
    def leaf_count(self) -> int:
        return len(self.leaves)

    @property
    def top_hash(self) -> bytes:
        return self.levels[-1][0][0]

    @property
    def total(self) -> int:
        return self.levels[-1][0][1]

    @property
    def root(self) -> bytes:
        return payout_root(self.top_hash, self.leaf_count, self.total)

    def proof(self, index: int) -> PayoutProof:
        """The claim of leaf `index`."""
        if not 0 <= index < self.leaf_count:
            raise PayoutTreeError(f"leaf {index} does not exist in a tree of {self.leaf_count} leaves")
        steps = []
        i = index
        for level in self.levels[:-1]:
            h, s = level[i ^ 1]
            steps.append(ProofStep(h, s))
            i >>= 1
        leaf = self.leaves[index]
        return PayoutProof(index, leaf.account, leaf.amount, tuple(steps))


def build_tree(leaves: Sequence[PayoutLeaf]) -> PayoutTree:
    """The Merkle-sum tree over `leaves` in index order: 1 .. MAX_LEAVES leaves, total <= MAX_SUM."""
    n = len(leaves)
    if not 0 < n <= MAX_LEAVES:
        raise PayoutTreeError(f"a payout tree has 1 .. {MAX_LEAVES} leaves, got {n}")
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, PayoutLeaf):
            raise PayoutTreeError(f"leaf {i} is a {type(leaf).__name__}, not a PayoutLeaf")
    total = sum(leaf.amount for leaf in leaves)
    if total > MAX_SUM:
        raise PayoutTreeError(f"the leaves add up to {total} wei, over the largest pool 2^96 - 1")
    row: list[tuple[bytes, int]] = [(leaf_hash(x.account, x.amount), x.amount) for x in leaves]
    levels: list[tuple[tuple[bytes, int], ...]] = []
    while len(row) > 1:
        if len(row) % 2:
            row.append((PAD, 0))
        levels.append(tuple(row))
        row = [(node_hash(lh, ls, rh, rs), ls + rs) for (lh, ls), (rh, rs) in zip(row[0::2], row[1::2], strict=True)]
    levels.append(tuple(row))
    return PayoutTree(tuple(leaves), tuple(levels))


def leaves_from_shares(shares: Mapping[str, int], chain_id: int) -> tuple[PayoutLeaf, ...]:
    """Leaves of `shares` (DID -> wei, e.g. from `split`) in DID byte order, zero shares left out.

    Every DID must be canonical and of `chain_id` (the chain the distributor lives on)."""
    leaves = []
    for did in sorted(shares, key=did_tie_key):
        chain, account = parse_did(did)
        if chain != chain_id:
            raise PayoutTreeError(f"{did} is an account of chain {chain}, not of chain {chain_id}")
        amount = shares[did]
        if amount != 0:
            leaves.append(PayoutLeaf(account, amount))
    if not leaves:
        raise PayoutTreeError("every share is zero: there is nothing to pay out")
    return tuple(leaves)


def proof_root(leaf_count: int, proof: PayoutProof) -> bytes:
    """The payout root a claim folds to, with the checks `PayoutDistributor.claim` makes first.

    Raises `PayoutProofError` whose `reason` is the contract's error name (without the
    `PayoutDistributor` prefix): IndexOutOfRange, ZeroAmount, ZeroAccount, ProofLength, SumTooLarge.
    """
    if not 0 <= proof.index < leaf_count:
        raise PayoutProofError("IndexOutOfRange", f"leaf {proof.index} does not exist in a tree of {leaf_count} leaves")
    if proof.amount == 0:
        raise PayoutProofError("ZeroAmount", f"leaf {proof.index}: a claim of 0 wei is never valid")
    if len(proof.account) != 20 or proof.account == bytes(20):
        raise PayoutProofError("ZeroAccount", f"leaf {proof.index}: the account must be a non-zero address")
    d = depth(leaf_count)
    if len(proof.steps) != d:
        raise PayoutProofError(
            "ProofLength", f"the proof has {len(proof.steps)} steps; a tree of {leaf_count} leaves needs {d}"
        )
    for value in (proof.amount, *(s.sum for s in proof.steps)):
        if not 0 <= value <= MAX_SUM:
            raise PayoutProofError("SumTooLarge", f"amount or sum {value} is over 2^96 - 1")
    h, s = leaf_hash(proof.account, proof.amount), proof.amount
    i = proof.index
    for step in proof.steps:
        h = node_hash(step.hash, step.sum, h, s) if i & 1 else node_hash(h, s, step.hash, step.sum)
        s += step.sum
        i >>= 1
    return payout_root(h, leaf_count, s)


def verify_proof(root: bytes, leaf_count: int, proof: PayoutProof) -> None:
    """Accept a claim against a distribution's `root`, or raise `PayoutProofError` as the contract would."""
    computed = proof_root(leaf_count, proof)
    if computed != root:
        raise PayoutProofError(
            "RootMismatch", f"the claim folds to root 0x{computed.hex()}, not the distribution's 0x{root.hex()}"
        )
