"""A ledger's pool in integer wei shares, by the genesis payout rule (docs/ledger.md, section 6).

Three parts, each split exactly by `trainer.ledger.payout.split` (floors, then largest
remainders, ties by DID bytes): `builder_bps` of the pool to the builders equally,
`verified_bps` pro rata to each contributor's accepted batches, and the rest pro rata to
`max(Σ_t φ(c, t), 0)`. A part with nobody to pay (no builders; nobody with positive
attribution; no accepted batches) goes to the next part in that order of fallbacks:
builders -> attribution, attribution -> verified work, verified work -> the refund account.
The shares of one account over the parts add up, and all shares add up to the pool exactly.
A contributor that any block refused for failing recomputation (`trainer.ledger.ledger.FORFEIT`)
forfeits everything: it is left out of both parts, whatever its other blocks hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from trainer.ledger.block import Block, PayoutRule
from trainer.ledger.graph import cumulative
from trainer.ledger.ledger import FORFEIT
from trainer.ledger.payout import split


def forfeited(blocks: Sequence[Block]) -> frozenset[str]:
    """The contributors some block refused for failing recomputation: they are paid nothing."""
    return frozenset(d for b in blocks for d, why in b.refused if why in FORFEIT)


def attribution_weights(blocks: Sequence[Block]) -> dict[str, int]:
    """max(Σ_t φ(c, t), 0) per contributor as integers on one scale (exact: the totals are dyadic);
    the forfeited are left out."""
    out = forfeited(blocks)
    totals = {d: ys[-1] for d, ys in cumulative(blocks).items() if d not in out}
    positive = {d: v for d, v in totals.items() if v > 0}
    if not positive:
        return {}
    scale = max(v.denominator for v in positive.values())  # a power of two
    return {d: int(v * scale) for d, v in positive.items()}


def batch_weights(blocks: Sequence[Block]) -> dict[str, int]:
    """Accepted batches per contributor, the forfeited left out."""
    lost = forfeited(blocks)
    out: dict[str, int] = {}
    for b in blocks:
        for d, m in zip(b.contributors, b.micro_batches, strict=True):
            if d not in lost:
                out[d] = out.get(d, 0) + m
    return out


def ledger_shares(
    pool: int, rule: PayoutRule, blocks: Sequence[Block], builders: Sequence[str], refund_to: str
) -> dict[str, int]:
    """The payout of `pool` wei: account (DID) -> wei, zero shares left out; sums to `pool`."""
    builder_part = pool * rule.builder_bps // 10_000 if builders else 0
    verified_part = pool * rule.verified_bps // 10_000
    attribution_part = pool - builder_part - verified_part
    attribution = attribution_weights(blocks)
    batches = batch_weights(blocks)
    if not attribution:
        verified_part, attribution_part = verified_part + attribution_part, 0
    parts: list[tuple[int, Mapping[str, int]]] = [
        (builder_part, dict.fromkeys(builders, 1)),
        (attribution_part, attribution),
    ]
    if batches:
        parts.append((verified_part, batches))
    else:
        parts.append((verified_part, {refund_to: 1}))
    shares: dict[str, int] = {}
    for amount, weights in parts:
        if amount == 0:
            continue
        for d, wei in split(amount, weights).items():
            shares[d] = shares.get(d, 0) + wei
    assert sum(shares.values()) == pool
    return {d: w for d, w in sorted(shares.items(), key=lambda kv: kv[0].encode()) if w}


def builder_fee(pool: int, rule: PayoutRule) -> int:
    """The builders' part of `pool` by `rule` (what a TrainingLedger's `builderFee` is set to)."""
    return pool * rule.builder_bps // 10_000


def tree_shares(pool: int, rule: PayoutRule, blocks: Sequence[Block], refund_to: str) -> dict[str, int]:
    """The shares of `ledger_shares(pool, rule, blocks, builders, refund_to)` that go into a TrainingLedger's
    payout tree: everyone's but the builders', whose part (`builder_fee(pool, rule)`, nonzero builders or not)
    the contract pays them itself. They sum to `pool - builder_fee(pool, rule)` exactly."""
    builder = "did:pkh:eip155:1:0x" + "00" * 20  # stands for the builders; nobody else can be the zero address
    shares = ledger_shares(pool, rule, blocks, [builder], refund_to)
    fee = shares.pop(builder, 0)
    assert fee == builder_fee(pool, rule) and sum(shares.values()) == pool - fee
    return shares


def fraction_of(shares: Mapping[str, int], pool: int) -> dict[str, Fraction]:
    return {d: Fraction(w, pool) for d, w in shares.items()}
