"""Attribution of a step's loss reduction to its contributors (docs/ledger.md).

**First order.** The block program gives, per parameter tensor k, the attribution weight
`w_k = P_k ⊙ ∇L_val(θ_{t-1})_k` (trainer.ledger.programs). Contributor c's share is the exact
dot product `φ_c = Σ_k ⟨w_k, g_{c,k}⟩` on fixed-point grids:

- `w_k` on its own grid: e_w = the exponent of max |w_k| (2^(e-1) <= m < 2^e), q = RN(w · 2^(P-e_w));
- every contributor's `g_{c,k}` on ONE grid shared by all contributors of the step:
  e_g = the exponent of the largest |g_{c,k}| over every c, q = RN(g · 2^(P-e_g));
- `S_{c,k} = Σ q_w q_g` exactly (integers), `φ_c = Σ_k S_{c,k} · 2^(e_w,k + e_g,k - 2P)`.

with P = 24 grid bits (every fp32 value within 2^-24 of a tensor's largest keeps all its bits).
φ_c is an exact dyadic rational, stored as an integer numerator over a power of two common
to the step. Because the dot products are exact and bilinear, `Σ_c φ_c` equals the exact
dot product of the weights with the sum of the contributions on the same grids: the total
first-order loss reduction of the step, to the last bit.

**Exact Shapley.** For coalitions S of the step's contributors, `v(S) = L_val(θ_{t-1}) -
L_val(update(θ_{t-1}, Σ_{c∈S} g_c / n))`; the Shapley value is the average marginal value
over all orders: all 2^n coalitions for n <= 8 (exact rationals of the fp32 losses),
seeded permutation sampling above.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import torch

from trainer.ledger.errors import ContributionError, LedgerError

Tensor = torch.Tensor

GRID_BITS = 24
_CHUNK = 1 << 14  # |q_w q_g| <= 2^48, so a chunk's int64 sum stays below 2^62
EXACT_SHAPLEY_MAX = 8


def exponent(m: float) -> int:
    """e with 2^(e-1) <= m < 2^e; 1 for m = 0."""
    if m == 0.0:
        return 1
    return math.frexp(m)[1]


def _max_abs(t: Tensor) -> float:
    return float(t.detach().abs().max()) if t.numel() else 0.0


def on_grid(t: Tensor, e: int, p: int = GRID_BITS) -> Tensor:
    """RN(t · 2^(p-e)) as int64: exact, since t · 2^(p-e) is exact in binary64 and |q| <= 2^p."""
    scaled = t.detach().to(torch.float64) * math.ldexp(1.0, p - e)  # ldexp of 1.0 is an exact power of two
    return torch.round(scaled).to(torch.int64)  # round half to even


def exact_dot(qa: Tensor, qb: Tensor) -> int:
    """Σ qa·qb of two int64 grid tensors with |q| <= 2^24, exactly, as a Python int."""
    a, b = qa.reshape(-1), qb.reshape(-1)
    total = 0
    for i in range(0, a.numel(), _CHUNK):
        total += int((a[i : i + _CHUNK] * b[i : i + _CHUNK]).sum())
    return total


def check_finite(name: str, t: Tensor) -> None:
    if not bool(torch.isfinite(t).all()):
        raise ContributionError(f"{name} holds a non-finite value")


@dataclass(frozen=True, slots=True)
class FirstOrder:
    """φ_c = numerators[c] · 2^exponent (contributors in the block's order); total = Σ numerators."""

    numerators: tuple[int, ...]
    exponent: int

    @property
    def total(self) -> int:
        return sum(self.numerators)

    def value(self, c: int) -> float:
        return math.ldexp(float(Fraction(self.numerators[c])), self.exponent) if self.numerators[c] else 0.0

    def values(self) -> list[float]:
        return [float(Fraction(n) * Fraction(2) ** self.exponent) for n in self.numerators]

    def total_value(self) -> float:
        return float(Fraction(self.total) * Fraction(2) ** self.exponent)


def first_order(
    weights: Mapping[str, Tensor], contributions: Sequence[Mapping[str, Tensor]], p: int = GRID_BITS
) -> FirstOrder:
    """The exact first-order attribution of `contributions` (each maps the weight names' keys to a
    gradient tensor of the same shape) under attribution weights `weights`."""
    if not contributions:
        return FirstOrder((), 0)
    parts: list[list[tuple[int, int]]] = [[] for _ in contributions]  # (S, exponent) per tensor
    for name, w in weights.items():
        if not bool(torch.isfinite(w).all()):
            raise LedgerError(f"attribution weight {name} is not finite: the step cannot be attributed")
        gs = [c[name] for c in contributions]
        for i, g in enumerate(gs):
            if g.shape != w.shape:
                raise ContributionError(f"contribution {i}: {name} has shape {tuple(g.shape)}, want {tuple(w.shape)}")
        e_w = exponent(_max_abs(w))
        e_g = exponent(max(_max_abs(g) for g in gs))
        qw = on_grid(w, e_w, p)
        for i, g in enumerate(gs):
            parts[i].append((exact_dot(qw, on_grid(g, e_g, p)), e_w + e_g - 2 * p))
    low = min((e for row in parts for _, e in row), default=0)
    numerators = tuple(sum(s << (e - low) for s, e in row) for row in parts)
    return FirstOrder(numerators, low)


def fraction_of_f32(x: Tensor | float) -> Fraction:
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
