"""Attribution of a step's loss reduction to its contributors (docs/ledger.md, section 3).

**First order.** The block program (trainer.ledger.programs) computes, per parameter tensor k,
the attribution weight `w_k = P_k ⊙ ∇L_val(θ_{t-1})_k` and, per contribution row c, the exact
term `⟨w_k, g_{c,k}⟩` of RepOps' `refereed::exact_dot` (docs/repops/linalg.md, "Exact dot
products": every contributor's g_{c,k} on ONE grid shared by the step's contributions, w_k on its
own, p_dot64(numel) bits, the integers summed exactly, the binary64 result exact), into its state
tensor `attr/terms` [row, k]. It adds nothing across parameters. `FirstOrder.of_terms` adds each
row's terms here, exactly (Python fractions), and writes the φ_c as integer numerators over one
power of two: a pure function of the program's state, no rounding anywhere. Because each
parameter's terms share one grid and the dot products are exact and bilinear, Σ_c φ_c equals
Σ_k ⟨q(w_k), Σ_c q(g_{c,k})⟩ (the weights against the contributions' sum on the same grids, the
step's first-order total) to the last bit.

**Exact Shapley.** For coalitions S of the step's contributors, `v(S) = L_val(θ_{t-1}) -
L_val(update(θ_{t-1}, Σ_{c∈S} g_c / n))`; the Shapley value is the average marginal value
over all orders: all 2^n coalitions for n <= 8 (exact rationals of the fp32 losses),
seeded permutation sampling above.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import SupportsFloat

from trainer.ledger.errors import LedgerError

EXACT_SHAPLEY_MAX = 8


@dataclass(frozen=True, slots=True)
class FirstOrder:
    """φ_c = numerators[c] · 2^exponent (contributors in the block's order); total = Σ numerators."""

    numerators: tuple[int, ...]
    exponent: int

    @staticmethod
    def of_terms(terms: Sequence[Sequence[float]]) -> FirstOrder:
        """φ of each row of `attr/terms` (the binary64 terms of one contributor, one per parameter): the
        exact sum of its terms, all written as integers over their least common power of two (exactly;
        a step whose attribution is not finite cannot be attributed)."""
        fractions = []
        for row in terms:
            total = Fraction(0)
            for v in row:
                if not math.isfinite(v):
                    raise LedgerError(f"the block program's attribution holds {v}: the step cannot be attributed")
                total += Fraction(v)  # exact: binary64 values are dyadic rationals
            fractions.append(total)
        if not fractions:
            return FirstOrder((), 0)
        low = min(-(f.denominator.bit_length() - 1) for f in fractions)  # denominators are powers of two
        return FirstOrder(tuple(int(f * Fraction(2) ** -low) for f in fractions), low)

    @property
    def total(self) -> int:
        return sum(self.numerators)

    def value(self, c: int) -> float:
        return math.ldexp(float(Fraction(self.numerators[c])), self.exponent) if self.numerators[c] else 0.0

    def values(self) -> list[float]:
        return [float(Fraction(n) * Fraction(2) ** self.exponent) for n in self.numerators]

    def total_value(self) -> float:
        return float(Fraction(self.total) * Fraction(2) ** self.exponent)


def fraction_of_f32(x: SupportsFloat) -> Fraction:
    v = float(x)
    if not math.isfinite(v):
        raise LedgerError(f"a loss of {v} cannot enter a Shapley value")
    return Fraction(v)


def shapley_exact(n: int, value: Callable[[frozenset[int]], Fraction]) -> list[Fraction]:
    """The Shapley values of players 0..n-1 under `value` (called once per coalition)."""
    if not 0 <= n <= EXACT_SHAPLEY_MAX:
        raise LedgerError(f"exact Shapley values are computed for at most {EXACT_SHAPLEY_MAX} players, got {n}")
    v = {frozenset(s): value(frozenset(s)) for k in range(n + 1) for s in combinations(range(n), k)}
    fact = [math.factorial(i) for i in range(n + 1)]
    out = []
    for c in range(n):
        total = Fraction(0)
        for s, vs in v.items():
            if c in s:
                continue
            total += Fraction(fact[len(s)] * fact[n - len(s) - 1], fact[n]) * (v[s | {c}] - vs)
        out.append(total)
    return out


def shapley_sampled(
    n: int, value: Callable[[frozenset[int]], Fraction], seed: bytes, permutations: int
) -> list[Fraction]:
    """Monte-Carlo Shapley values: the mean marginal value over `permutations` orders drawn from
    SHA-256 in counter mode keyed by `seed` (a Fisher-Yates shuffle per order)."""
    if permutations < 1:
        raise LedgerError("permutation sampling needs at least one permutation")
    cache: dict[frozenset[int], Fraction] = {}

    def v(s: frozenset[int]) -> Fraction:
        if s not in cache:
            cache[s] = value(s)
        return cache[s]

    sums = [Fraction(0)] * n
    for r in range(permutations):
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            h = hashlib.sha256(b"SHAP" + seed + r.to_bytes(8, "big") + i.to_bytes(8, "big")).digest()
            j = int.from_bytes(h, "big") % (i + 1)
            order[i], order[j] = order[j], order[i]
        s: frozenset[int] = frozenset()
        for c in order:
            nxt = s | {c}
            sums[c] += v(nxt) - v(s)
            s = nxt
    return [x / permutations for x in sums]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); nan when a side is constant."""
    def ranks(xs: Sequence[float]) -> list[float]:
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        out = [0.0] * len(xs)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    if len(a) != len(b) or len(a) < 2:
        raise LedgerError("rank correlation needs two sequences of the same length >= 2")
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va and vb else float("nan")
