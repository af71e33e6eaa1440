"""The honest moves of a dot game (DotReferee, docs/game.md section 2.8), without a chain.

A dot game decides one disputed element C[i, j] of `mm(A, B)` or `addmm(bias, A, B)` on agreed inputs by
RepOps' definition (docs/repops/linalg.md): the grid exponents of row i of A and column j of B, the exact
integer S = sum_k qa[i, k] * qb[k, j], one rounding. `DotSide` computes, from the agreed input tensors
alone, everything either side plays: the defender's claim (a witness element of each slice's largest
magnitude class, S, the prefix sums at each bisection's split points) and the openings of the last term;
the challenger's refutation of a wrong exponent claim and its pick of the first sub-range whose end the
defender got wrong. `magnitude_class`, `split_points` and `grid_exponent` are the contract's own rules, so
a player predicts what the contract computes. `offchain.contracts.dot_referee.DotRefereeClient` sends the
moves.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

import torch

from offchain.game.errors import GameError
from trainer.commit import open_element
from trainer.repops._fixed import exponent_ref, p_dot, quantize_ref, round_f32_dyadic

MM: int = 0
ADDMM: int = 1
NON_FINITE: int = 0xFFFF  # the magnitude class of NaN and +-inf


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def magnitude_class(bits: int) -> int:
    """The contract's `_key`: 0 for +-0, 150 + e for a finite nonzero value with 2^(e-1) <= |x| < 2^e,
    NON_FINITE for NaN and +-inf. A larger class is a larger grid exponent."""
    mag = bits & 0x7FFFFFFF
    if mag == 0:
        return 0
    biased = mag >> 23
    if biased == 0xFF:
        return NON_FINITE
    if biased:
        return biased + 24
    return mag.bit_length() + 1


def grid_exponent(key: int) -> int:
    """The grid exponent of a slice whose largest class is `key` (1 for an all-zero slice)."""
    return 1 if key == 0 else key - 150


def split_points(lo: int, hi: int, arity: int) -> list[int]:
    """The interior points of [lo, hi] (DotReferee.splitPoints): lo + s, lo + 2s, ... below hi, with
    s = ceil((hi - lo) / arity)."""
    if hi <= lo + 1:
        return []
    w = hi - lo
    step = -(-w // arity)
    count = -(-w // step) - 1
    return [lo + step * (m + 1) for m in range(count)]


@dataclass(frozen=True, slots=True)
class Opening:
    """One agreed input element's opening (IDotReferee.Opening)."""

    shape: tuple[int, ...]
    chunk: bytes
    siblings: tuple[bytes, ...]

    def to_abi(self) -> tuple[list[int], bytes, list[bytes]]:
        return (list(self.shape), self.chunk, list(self.siblings))


NO_OPENING = Opening((), b"", ())


def opening(t: torch.Tensor, index: int) -> Opening:
    o = open_element(t, index)
    return Opening(tuple(o.shape), o.chunk, tuple(o.proof.siblings))


@dataclass(frozen=True, slots=True)
class Claim:
    """The defender's first move (IDotReferee.Claim)."""

    row_at: int
    col_at: int
    row: Opening
    col: Opening
    bias: Opening
    total: int
    splits: tuple[int, ...]

    def to_abi(self) -> tuple[object, ...]:
        return (
            self.row_at,
            self.col_at,
            self.row.to_abi(),
            self.col.to_abi(),
            self.bias.to_abi(),
            self.total,
            list(self.splits),
        )


def _first_max(keys: Sequence[int]) -> int:
    best = max(keys)
    return keys.index(best)


class DotSide:
    """The element (i, j) of one mm (inputs [A, B]) or addmm (inputs [bias, A, B]) node, from the agreed inputs."""

    __slots__ = ("a", "b", "bias", "col_at", "col_key", "i", "j", "k", "n", "op", "prefix", "row_at", "row_key")

    def __init__(self, op: int, inputs: Sequence[torch.Tensor], element: int) -> None:
        if op not in (MM, ADDMM):
            raise GameError(f"dot op code {op} is neither mm (0) nor addmm (1)")
        want = 3 if op == ADDMM else 2
        if len(inputs) != want:
            raise GameError(f"{'addmm' if op == ADDMM else 'mm'} takes {want} inputs, got {len(inputs)}")
        self.op = op
        self.bias = inputs[0].contiguous() if op == ADDMM else None
        self.a = inputs[-2].contiguous()
        self.b = inputs[-1].contiguous()
        if self.a.dim() != 2 or self.b.dim() != 2 or self.a.shape[1] != self.b.shape[0]:
            raise GameError(f"shapes {tuple(self.a.shape)} x {tuple(self.b.shape)} are not an mm")
        self.k = int(self.a.shape[1])
        self.n = int(self.b.shape[1])
        self.i, self.j = divmod(element, self.n)
        row = self.a[self.i].tolist()
        col = self.b[:, self.j].tolist()
        self.row_key = self.col_key = 0
        self.row_at = self.col_at = 0
        self.prefix: list[int] = [0]
        if self.k == 0:
            return
        row_keys = [magnitude_class(f32_bits(v)) for v in row]
        col_keys = [magnitude_class(f32_bits(v)) for v in col]
        self.row_at, self.col_at = _first_max(row_keys), _first_max(col_keys)
        self.row_key, self.col_key = row_keys[self.row_at], col_keys[self.col_at]
        if NON_FINITE in (self.row_key, self.col_key):
            return
        p = p_dot(self.k)
        ea, eb = grid_exponent(self.row_key), grid_exponent(self.col_key)
        if (ea, eb) != (exponent_ref(max(abs(v) for v in row)), exponent_ref(max(abs(v) for v in col))):
            raise GameError("the magnitude classes disagree with the grid exponents of linalg.md")  # a bug here
        terms = [quantize_ref(x, ea, p) * quantize_ref(w, eb, p) for x, w in zip(row, col, strict=True)]
        self.prefix = [0, *accumulate(terms)]

    def defend(self, value_bits: int) -> bool:
        """Make this side's claims those of its own value at the element: the prefix sums stay the agreed
        inputs' (a defender can only lie about them, and the bisection finds the first lie), but S becomes
        one that `value_bits` follows from. False when no S gives it (then no claim can be made: the
        contract refuses every one). An honest side's value is the spec's, and nothing changes."""
        if value_bits == self.value_bits():
            return True
        if self.decided_at_claim:
            return False
        true_total = self.prefix[-1]
        e = grid_exponent(self.row_key) + grid_exponent(self.col_key) - 2 * p_dot(self.k)
        target = struct.unpack("<f", struct.pack("<I", value_bits))[0]
        if not math.isfinite(target):
            return False
        if self.bias is not None:
            target -= float(self.bias.reshape(-1)[self._bias_index()])
        guess = round(math.ldexp(target, -e))
        for d in (0, 1, -1, 2, -2, 3, -3):
            self.prefix[-1] = guess + d
            if abs(guess + d) <= 1 << 53 and self.value_bits() == value_bits:
                return True
        self.prefix[-1] = true_total
        return False

    @property
    def decided_at_claim(self) -> bool:
        """K = 0 or a non-finite witness: the claim alone decides (no bisection)."""
        return self.k == 0 or NON_FINITE in (self.row_key, self.col_key)

    @property
    def total(self) -> int:
        return self.prefix[-1]

    def bias_opening(self) -> Opening:
        if self.bias is None:
            return NO_OPENING
        return opening(self.bias, self._bias_index())

    def splits(self, lo: int, hi: int, arity: int) -> tuple[int, ...]:
        """The true prefix sums at the interior points of [lo, hi]."""
        return tuple(self.prefix[x] for x in split_points(lo, hi, arity))

    def claim(self, arity: int) -> Claim:
        if self.k == 0:
            return Claim(0, 0, NO_OPENING, NO_OPENING, self.bias_opening(), 0, ())
        row = opening(self.a, self.i * self.k + self.row_at)
        col = opening(self.b, self.col_at * self.n + self.j)
        splits = () if self.decided_at_claim else self.splits(0, self.k, arity)
        return Claim(self.row_at, self.col_at, row, col, self.bias_opening(), self.total, splits)

    def refutation(self, claimed_keys: tuple[int, int]) -> tuple[int, int, Opening] | None:
        """(which, at, opening) of an element whose class exceeds a claimed one (0 row, 1 column), or None."""
        if self.row_key > claimed_keys[0]:
            return 0, self.row_at, opening(self.a, self.i * self.k + self.row_at)
        if self.col_key > claimed_keys[1]:
            return 1, self.col_at, opening(self.b, self.col_at * self.n + self.j)
        return None

    def pick(self, lo: int, hi: int, arity: int, theirs: Sequence[int]) -> int:
        """The index of the first sub-range of [lo, hi] whose end the defender got wrong (its last one when
        every interior value is right: the dispute is then about P(hi))."""
        points = split_points(lo, hi, arity)
        if len(theirs) != len(points):
            raise GameError(f"the defender posted {len(theirs)} prefix sums for {len(points)} split points")
        for m, (x, v) in enumerate(zip(points, theirs, strict=True)):
            if self.prefix[x] != v:
                return m
        return len(points)

    def term_openings(self, at: int) -> tuple[Opening, Opening]:
        return opening(self.a, self.i * self.k + at), opening(self.b, at * self.n + self.j)

    def value_bits(self) -> int:
        """The element's binary32 bits by the claim's arithmetic (what the contract checks the claim against)."""
        if self.k == 0:
            mm = 0.0
        elif self.decided_at_claim:
            mm = math.nan
        else:
            e = grid_exponent(self.row_key) + grid_exponent(self.col_key) - 2 * p_dot(self.k)
            mm = round_f32_dyadic(self.total, e) + 0.0  # a product that rounds to zero is +0 (linalg.md)
        if self.bias is not None:
            bias = self.bias.reshape(-1)[self._bias_index()].reshape(())
            out = (bias + torch.tensor(mm, dtype=torch.float32)).item()
            return 0x7FC00000 if math.isnan(out) else f32_bits(out)
        return 0x7FC00000 if math.isnan(mm) else f32_bits(mm)

    def _bias_index(self) -> int:
        """The bias element at (i, j)'s broadcast position, as the contract computes it."""
        assert self.bias is not None
        shape = tuple(self.bias.shape)
        index = 0
        if shape:
            if shape[-1] != 1:
                index = self.j
            if len(shape) == 2 and shape[0] != 1:
                index += self.i * shape[-1]
        return index
