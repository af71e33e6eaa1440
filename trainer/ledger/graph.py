"""The attribution graph of a ledger (docs/ledger.md, section 3): contributor c -> later contributor c'.

Edge (c, c') exists iff c contributed at some step t and c' at a later step t' > t; its weight is
Σ φ(c, t) over the steps t of c that some contribution of c' follows: the marginal loss reduction
of c that c' built on. Derived from the blocks alone, exactly (fractions).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from trainer.ledger.block import Block


def cumulative(blocks: Sequence[Block]) -> dict[str, list[Fraction]]:
    """Per contributor, Σ_{s <= t} φ(c, s) after each block t (0 before its first contribution)."""
    dids = sorted({d for b in blocks for d in b.contributors}, key=str.encode)
    out: dict[str, list[Fraction]] = {d: [] for d in dids}
    running = dict.fromkeys(dids, Fraction(0))
    for b in blocks:
        scale = Fraction(2) ** b.phi_exponent
        for d, n in zip(b.contributors, b.phi, strict=True):
            running[d] += Fraction(n) * scale
        for d in dids:
            out[d].append(running[d])
    return out


def attribution_graph(blocks: Sequence[Block]) -> dict[tuple[str, str], Fraction]:
    """Edge weights of the attribution graph."""
    last_step: dict[str, int] = {}
    for b in blocks:
        for d in b.contributors:
            last_step[d] = b.step
    edges: dict[tuple[str, str], Fraction] = {}
    for b in blocks:
        scale = Fraction(2) ** b.phi_exponent
        for d, n in zip(b.contributors, b.phi, strict=True):
            for later, last in last_step.items():
                if last > b.step:
                    edges[(d, later)] = edges.get((d, later), Fraction(0)) + Fraction(n) * scale
    return edges
