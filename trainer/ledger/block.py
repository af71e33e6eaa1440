"""Ledger records: the genesis and one block per step, canonical CBOR, hash-chained.

A block records (docs/ledger.md, "Blocks"): the model id (the genesis hash), the step t, the
parent hash (the genesis hash for t = 1), the contributors' DIDs in byte order with their
batch and gradient commitments and the list roots over them, the validation batch's
commitment, the model root after the update, the validation loss before it, the step's
first-order attribution (exact integers over a power of two), the exact or sampled Shapley
values on sampled steps, the contributions refused, and the kernel manifest's hash.
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from trainer.commit.merkle import leaf_hash, root
from trainer.commit.records import encode_record
from trainer.ledger.did import did_order, parse_did
from trainer.ledger.encoding import dumps, loads
from trainer.ledger.errors import BlockError

GENESIS_TAG = b"RGEN"
BLOCK_TAG = b"RBLK"
BLOCK_FORMAT = 1


def _h(tag: bytes, data: bytes) -> bytes:
    return hashlib.sha256(tag + data).digest()


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_of_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def contributor_leaf(did: str, commitment: bytes) -> bytes:
    """leaf("CTRB" || H(did) || commitment): one contributor's entry in a block's list roots."""
    return leaf_hash(encode_record(b"CTRB", [hashlib.sha256(did.encode()).digest(), commitment]))


def contributor_root(dids: tuple[str, ...], commitments: tuple[bytes, ...]) -> bytes:
    if len(dids) != len(commitments):
        raise BlockError(f"{len(dids)} contributors but {len(commitments)} commitments")
    if not dids:
        return bytes(32)
    return root([contributor_leaf(d, c) for d, c in zip(dids, commitments, strict=True)])


@dataclass(frozen=True, slots=True)
class PayoutRule:
    """How the pool is split (docs/ledger.md, "Payout"), in basis points of the pool: `builder_bps`
    to the block builders of the winning group, `verified_bps` per accepted contribution, the rest
    pro rata to max(Σ_t φ_c, 0)."""

    builder_bps: int = 1000
    verified_bps: int = 2000

    def __post_init__(self) -> None:
        for name in ("builder_bps", "verified_bps"):
            v = getattr(self, name)
            if type(v) is not int or not 0 <= v <= 10_000:
                raise BlockError(f"{name} must be an integer in [0, 10000], got {v!r}")
        if self.builder_bps + self.verified_bps > 10_000:
            raise BlockError("builder_bps + verified_bps exceed the whole pool (10000)")


@dataclass(frozen=True, slots=True)
class Genesis:
    chain_id: int
    name: str
    initial_root: bytes  # model root before step 1
    gradient_program: bytes  # program hashes (docs/program.md)
    block_program: bytes
    manifest: bytes  # hash of the kernel manifest (trainer.ledger.manifest)
    validation_root: bytes  # list root over the steps' validation batch commitments
    steps: int
    max_contributors: int
    optimizer: str
    max_micro_batches: int = 4  # batches one contribution may sum
    shapley_every: int = 0  # exact Shapley values on about one step in this many (0: never)
    shapley_permutations: int = 64  # permutations sampled above 8 contributors
    payout: PayoutRule = field(default_factory=PayoutRule)
    recompute_every: int = 0  # builders recompute about one contribution in this many (0: never)

    def __post_init__(self) -> None:
        if type(self.recompute_every) is not int or self.recompute_every < 0:
            raise BlockError(f"recompute_every must be an integer >= 0, got {self.recompute_every!r}")

    def record(self) -> dict[str, Any]:
        return {
            "format": BLOCK_FORMAT,
            "chain_id": self.chain_id,
            "name": self.name,
            "initial_root": self.initial_root,
            "gradient_program": self.gradient_program,
            "block_program": self.block_program,
            "manifest": self.manifest,
            "validation_root": self.validation_root,
            "steps": self.steps,
            "max_contributors": self.max_contributors,
            "optimizer": self.optimizer,
            "max_micro_batches": self.max_micro_batches,
            "shapley_every": self.shapley_every,
            "shapley_permutations": self.shapley_permutations,
            "payout": {"builder_bps": self.payout.builder_bps, "verified_bps": self.payout.verified_bps},
            "recompute_every": self.recompute_every,
        }

    def encode(self) -> bytes:
        return dumps(self.record())

    @property
    def model_id(self) -> bytes:
        return _h(GENESIS_TAG, self.encode())

    @staticmethod
    def decode(data: bytes) -> Genesis:
        r = loads(data)
        try:
            if r["format"] != BLOCK_FORMAT:
                raise BlockError(f"genesis format {r['format']} is not {BLOCK_FORMAT}")
            return Genesis(
                chain_id=r["chain_id"],
                name=r["name"],
                initial_root=r["initial_root"],
                gradient_program=r["gradient_program"],
                block_program=r["block_program"],
                manifest=r["manifest"],
                validation_root=r["validation_root"],
                steps=r["steps"],
                max_contributors=r["max_contributors"],
                optimizer=r["optimizer"],
                max_micro_batches=r["max_micro_batches"],
                shapley_every=r["shapley_every"],
                shapley_permutations=r["shapley_permutations"],
                payout=PayoutRule(**r["payout"]),
                recompute_every=r["recompute_every"],
            )
        except (KeyError, TypeError) as e:
            raise BlockError(f"not a genesis record: {e}") from None

    def shapley_due(self, step: int, parent: bytes) -> bool:
        """Whether step `step` (with parent hash `parent`) gets Shapley values: H(parent || t) mod n == 0."""
        if self.shapley_every <= 0:
            return False
        h = hashlib.sha256(b"SHPD" + parent + step.to_bytes(8, "big")).digest()
        return int.from_bytes(h, "big") % self.shapley_every == 0

    def recompute_due(self, step: int, draw: bytes, did: str) -> bool:
        """Whether builders recompute `did`'s contribution to step `step`, whose draw entropy is `draw`
        (the hash of the chain block that revealed the step's validation batch, after every commit of
        the step: neither a contributor at commit time nor the client, who knows its validation data
        from the start, can tell in advance): u256(H("LREC" || u64(t) || draw || did)) mod
        recompute_every == 0."""
        if self.recompute_every <= 0:
            return False
        h = hashlib.sha256(b"LREC" + step.to_bytes(8, "big") + draw + did.encode()).digest()
        return int.from_bytes(h, "big") % self.recompute_every == 0


@dataclass(frozen=True, slots=True)
class Block:
    model: bytes
    step: int
    parent: bytes
    contributors: tuple[str, ...]  # DIDs, byte order
    batch_commitments: tuple[bytes, ...]
    gradient_commitments: tuple[bytes, ...]
    micro_batches: tuple[int, ...]  # batches each contribution sums; the aggregate divides by their total
    validation: bytes  # the validation batch's commitment (state root of its x, y)
    model_root: bytes
    val_loss_bits: int  # fp32 bits of L_val(θ_{t-1})
    phi: tuple[int, ...]  # first-order numerators, contributors' order
    phi_exponent: int  # φ_c = phi[c] · 2^phi_exponent
    shapley: tuple[tuple[int, int], ...] | None  # (numerator, denominator) per contributor, sampled steps
    shapley_exact: bool
    refused: tuple[tuple[str, str], ...]  # (DID, reason) of contributions left out
    manifest: bytes
    # The recomputation draw's entropy (docs/ledger.md, section 7): the hash of the chain block that
    # revealed the step's validation batch; empty when the genesis recomputes nothing.
    draw: bytes = b""

    def __post_init__(self) -> None:
        if list(self.contributors) != did_order(list(self.contributors)):
            raise BlockError(f"block {self.step}: contributors are not in DID byte order")
        n = len(self.contributors)
        lists = (self.batch_commitments, self.gradient_commitments, self.micro_batches, self.phi)
        if any(len(x) != n for x in lists):
            raise BlockError(f"block {self.step}: {n} contributors but lists of other lengths")
        if self.shapley is not None and len(self.shapley) != n:
            raise BlockError(f"block {self.step}: {n} contributors but {len(self.shapley)} Shapley values")
        for did, _ in self.refused:
            parse_did(did)

    @property
    def batch_root(self) -> bytes:
        return contributor_root(self.contributors, self.batch_commitments)

    @property
    def gradient_root(self) -> bytes:
        return contributor_root(self.contributors, self.gradient_commitments)

    def record(self) -> dict[str, Any]:
        return {
            "format": BLOCK_FORMAT,
            "model": self.model,
            "step": self.step,
            "parent": self.parent,
            "contributors": list(self.contributors),
            "batch_commitments": list(self.batch_commitments),
            "gradient_commitments": list(self.gradient_commitments),
            "micro_batches": list(self.micro_batches),
            "batch_root": self.batch_root,
            "gradient_root": self.gradient_root,
            "validation": self.validation,
            "model_root": self.model_root,
            "val_loss_bits": self.val_loss_bits,
            "attribution": {"phi": list(self.phi), "exponent": self.phi_exponent},
            "shapley": None
            if self.shapley is None
            else {"exact": self.shapley_exact, "values": [list(v) for v in self.shapley]},
            "refused": [list(r) for r in self.refused],
            "manifest": self.manifest,
            "draw": self.draw,
        }

    def encode(self) -> bytes:
        return dumps(self.record())

    @property
    def hash(self) -> bytes:
        return _h(BLOCK_TAG, self.encode())

    @property
    def val_loss(self) -> float:
        return f32_of_bits(self.val_loss_bits)

    def phi_values(self) -> list[float]:
        scale = Fraction(2) ** self.phi_exponent
        return [float(Fraction(n) * scale) for n in self.phi]

    def shapley_values(self) -> list[float] | None:
        return None if self.shapley is None else [float(Fraction(a, b)) for a, b in self.shapley]

    @staticmethod
    def decode(data: bytes) -> Block:
        r = loads(data)
        try:
            if r["format"] != BLOCK_FORMAT:
                raise BlockError(f"block format {r['format']} is not {BLOCK_FORMAT}")
            sh = r["shapley"]
            block = Block(
                model=r["model"],
                step=r["step"],
                parent=r["parent"],
                contributors=tuple(r["contributors"]),
                batch_commitments=tuple(r["batch_commitments"]),
                gradient_commitments=tuple(r["gradient_commitments"]),
                micro_batches=tuple(r["micro_batches"]),
                validation=r["validation"],
                model_root=r["model_root"],
                val_loss_bits=r["val_loss_bits"],
                phi=tuple(r["attribution"]["phi"]),
                phi_exponent=r["attribution"]["exponent"],
                shapley=None if sh is None else tuple((int(a), int(b)) for a, b in sh["values"]),
                shapley_exact=False if sh is None else bool(sh["exact"]),
                refused=tuple((str(d), str(w)) for d, w in r["refused"]),
                manifest=r["manifest"],
                draw=bytes(r["draw"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise BlockError(f"not a block record: {e}") from None
        if r["batch_root"] != block.batch_root or r["gradient_root"] != block.gradient_root:
            raise BlockError(f"block {block.step}: its list roots do not match its commitments")
        if block.encode() != bytes(data):
            raise BlockError(f"block {block.step}: the record does not re-encode to the same bytes")
        return block


def block_leaf(block: Block) -> bytes:
    """leaf("BLCK" || u256(step) || block hash): a block's entry in an interval's list root."""
    return leaf_hash(encode_record(b"BLCK", [block.step, block.hash]))


def interval_root(blocks: list[Block]) -> bytes:
    """The list root over consecutive blocks: what goes on chain per interval."""
    if not blocks:
        raise BlockError("an interval holds at least one block")
    for a, b in itertools.pairwise(blocks):
        if b.step != a.step + 1 or b.parent != a.hash:
            raise BlockError(f"block {b.step} does not follow block {a.step}")
    return root([block_leaf(b) for b in blocks])
