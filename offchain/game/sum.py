"""The honest moves of a sum game (SumReferee, docs/game.md section 2.10), without a chain.

A sum game decides one disputed output element of `sum.dim_IntList` on an agreed fp32 input by RepOps'
definition (docs/repops/linalg.md, "Sums and means"): the slice's grid exponent from its largest magnitude, the
exact integer S = sum_k q_k, one rounding; the IEEE rule for a slice holding a NaN or an infinity. `SumSide`
computes, from the agreed input alone, everything either side plays: the defender's claim (a witness of the
slice's largest magnitude class, or the non-finite elements that decide it, S and the prefix sums at each
bisection's split points) and the opening of the last term; the challenger's refutation of a wrong claim and
its pick of the first sub-range whose end the defender got wrong. `sum_input_index` is the contract's
`inputIndex`. `offchain.contracts.sum_referee.SumRefereeClient` sends the moves.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

import torch

from offchain.game.dot import NO_OPENING, NON_FINITE, Opening, grid_exponent, magnitude_class, opening, split_points
from offchain.game.element import TensorHeader, header_of
from offchain.game.element_table import sum_reduced
from offchain.game.errors import GameError
from trainer.repops._fixed import p_sum, quantize_ref, round_f32_dyadic

NAN_BITS = 0x7FC00000
SIGN = 0x80000000


def is_nan(bits: int) -> bool:
    return bits & 0x7FFFFFFF > 0x7F800000


def f32_value(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def sum_input_index(element: int, k: int, shape: Sequence[int], reduced: int) -> int:
    """The input's flat index of term `k` of output element `element`'s slice (SumReferee.inputIndex): the kept
    coordinates from the element, the reduced ones from k, both row-major; `reduced` a bit per reduced dim."""
    index, stride = 0, 1
    for r in reversed(range(len(shape))):
        s = shape[r]
        if s == 0:
            return 0
        if reduced >> r & 1:
            k, c = divmod(k, s)
        else:
            element, c = divmod(element, s)
        index += c * stride
        stride *= s
    return index


@dataclass(frozen=True, slots=True)
class SumClaim:
    """The defender's first move (ISumReferee.Claim)."""

    output_shape: tuple[int, ...]
    input: TensorHeader
    at: int
    witness: Opening
    at2: int
    second: Opening
    total: int
    splits: tuple[int, ...]

    def to_abi(self) -> tuple[object, ...]:
        return (
            list(self.output_shape),
            self.input.to_abi(),
            self.at,
            self.witness.to_abi(),
            self.at2,
            self.second.to_abi(),
            self.total,
            list(self.splits),
        )


class SumSide:
    """Output element `element` of one sum node (dims and keepdim `variant`) on the agreed fp32 input `x`."""

    __slots__ = ("at", "at2", "bits", "element", "indices", "key", "length", "out_shape", "prefix", "reduced", "x")

    def __init__(self, variant: int, x: torch.Tensor, out_shape: Sequence[int], element: int) -> None:
        if x.dtype != torch.float32:
            raise GameError(f"a sum game takes an fp32 input, not {x.dtype}")
        self.x = x.contiguous()
        self.out_shape = tuple(int(s) for s in out_shape)
        self.element = element
        shape = tuple(self.x.shape)
        dims = sum_reduced(variant, len(shape))
        self.reduced = sum(1 << d for d in dims)
        self.length = math.prod(shape[d] for d in dims) if shape else 1
        self.indices = [sum_input_index(element, k, shape, self.reduced) for k in range(self.length)]
        flat = self.x.reshape(-1).view(torch.int32)
        self.bits = [int(flat[i]) & 0xFFFFFFFF for i in self.indices]
        keys = [magnitude_class(b) for b in self.bits]
        self.at, self.at2 = 0, -1  # at2: the opposite infinity's term, -1 for none
        self.key = 0
        self.prefix: list[int] = [0]
        if not self.length:
            return
        nans = [k for k, b in enumerate(self.bits) if is_nan(b)]
        pos = [k for k, b in enumerate(self.bits) if b == 0x7F800000]
        neg = [k for k, b in enumerate(self.bits) if b == 0xFF800000]
        if nans:  # NaN decides at the claim
            self.at = nans[0]
        elif pos and neg:  # both infinities: NaN, decided at the claim with two witnesses
            self.at, self.at2 = pos[0], neg[0]
        elif pos or neg:
            self.at = (pos or neg)[0]
        else:
            self.at = keys.index(max(keys))
        self.key = keys[self.at]
        if self.key == NON_FINITE:
            return
        e, p = grid_exponent(self.key), p_sum(self.length)
        self.prefix = [0, *accumulate(quantize_ref(f32_value(b), e, p) for b in self.bits)]

    @property
    def witness(self) -> int:
        return self.bits[self.at] if self.length else 0

    @property
    def two_infinities(self) -> bool:
        return self.at2 >= 0

    @property
    def decided_at_claim(self) -> bool:
        """L = 0, a NaN or both infinities: the claim alone decides (no bisection, no refutation)."""
        return not self.length or (self.key == NON_FINITE and (is_nan(self.witness) or self.two_infinities))

    @property
    def total(self) -> int:
        return self.prefix[-1]

    def value_bits(self) -> int:
        """The element's binary32 bits by the claim's arithmetic (what the contract checks the claim against)."""
        if not self.length:
            return 0
        if self.key == NON_FINITE:
            return NAN_BITS if self.decided_at_claim else self.witness
        e = grid_exponent(self.key) - p_sum(self.length)
        v = round_f32_dyadic(self.total, e) + 0.0  # a sum that rounds to zero is +0 (linalg.md)
        return struct.unpack("<I", struct.pack("<f", v))[0]

    def defend(self, value_bits: int) -> bool:
        """Make the claim that of `value_bits`: the prefix sums stay the input's but S becomes one the value follows
        from (as `DotSide.defend`). False when no S gives it; an honest side's value changes nothing."""
        if value_bits == self.value_bits():
            return True
        if self.key == NON_FINITE or not self.length:
            return False
        target = f32_value(value_bits)
        if not math.isfinite(target):
            return False
        true_total = self.prefix[-1]
        e = grid_exponent(self.key) - p_sum(self.length)
        guess = round(math.ldexp(target, -e))
        for d in (0, 1, -1, 2, -2, 3, -3):
            self.prefix[-1] = guess + d
            if abs(guess + d) <= 1 << 53 and self.value_bits() == value_bits:
                return True
        self.prefix[-1] = true_total
        return False

    def header(self) -> TensorHeader:
        return header_of(self.x)

    def term_opening(self, k: int) -> Opening:
        return opening(self.x, self.indices[k])

    def splits(self, lo: int, hi: int, arity: int) -> tuple[int, ...]:
        """The true prefix sums at the interior points of [lo, hi]."""
        return tuple(self.prefix[x] for x in split_points(lo, hi, arity))

    def claim(self, arity: int) -> SumClaim:
        witness = self.term_opening(self.at) if self.length else NO_OPENING
        second = self.term_opening(self.at2) if self.length and self.two_infinities else NO_OPENING
        splits = () if self.key == NON_FINITE or not self.length else self.splits(0, self.length, arity)
        at2 = max(self.at2, 0)
        return SumClaim(self.out_shape, self.header(), self.at, witness, at2, second, self.total, splits)

    def refutation(self, key: int, witness: int) -> tuple[int, Opening] | None:
        """(at, opening) of a term that disproves a claim of class `key` with witness bits `witness` (a larger
        class; against an infinity a NaN or the opposite infinity), or None."""
        for k, b in enumerate(self.bits):
            if key == NON_FINITE:
                if is_nan(b) or b == witness ^ SIGN:
                    return k, self.term_opening(k)
            elif magnitude_class(b) > key:
                return k, self.term_opening(k)
        return None

    def pick(self, lo: int, hi: int, arity: int, theirs: Sequence[int]) -> int:
        """The index of the first sub-range of [lo, hi] whose end the defender got wrong (its last one when every
        interior value is right: the dispute is then about P(hi))."""
        points = split_points(lo, hi, arity)
        if len(theirs) != len(points):
            raise GameError(f"the defender posted {len(theirs)} prefix sums for {len(points)} split points")
        for m, (x, v) in enumerate(zip(points, theirs, strict=True)):
            if self.prefix[x] != v:
                return m
        return len(points)
