"""Bisection moves (IDisputeGame, "Bisection"): narrowing `lo .. hi` to one step.

After the checkpoint descent isolates checkpoint `j`, the steps `lo = (j-1) c .. hi = j c`
are narrowed. With `L = hi - lo` and `w = min(arity, L)` the split points are
`p_i = lo + (i * L) // w`, `i = 0 .. w`; each side posts its state roots at all `w + 1`
points, and the first `i` where the two lists differ gives `lo = p_{i-1}, hi = p_i`.
When `hi = lo + 1` the step `s = lo` is isolated: both sides agree on the root at `lo`
(the pre-state) and disagree at `lo + 1`.

    b = Bisection.after_checkpoint(j, interval, arity)
    while not b.done:
        mine = b.roots(my_root_at)            # what the mover posts
        b = b.narrow(mine, their_roots)
    b.step
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from offchain.game.descent import first_difference, log2_arity
from offchain.game.errors import GameError

RootAt = Callable[[int], bytes]  # step -> the state root after that many steps


def split_points(lo: int, hi: int, arity: int) -> list[int]:
    """`p_i = lo + (i * L) // w` for `i = 0 .. w`, `L = hi - lo`, `w = min(arity, L)`."""
    log2_arity(arity)
    if not 0 <= lo < hi:
        raise GameError(f"interval {lo} .. {hi} is empty; bisection needs lo < hi")
    span = hi - lo
    w = min(arity, span)
    return [lo + (i * span) // w for i in range(w + 1)]


@dataclass(frozen=True, slots=True)
class Bisection:
    """Where a bisection stands: the interval `lo .. hi` (both sides agree at `lo`, differ at `hi`)."""

    lo: int
    hi: int
    arity: int

    def __post_init__(self) -> None:
        log2_arity(self.arity)
        if not 0 <= self.lo < self.hi:
            raise GameError(f"interval {self.lo} .. {self.hi} is empty; bisection needs lo < hi")

    @classmethod
    def after_checkpoint(cls, checkpoint: int, interval: int, arity: int) -> Bisection:
        """The first interval once the descent isolated checkpoint `j >= 1`: `(j-1) c .. j c`."""
        if checkpoint < 1:
            raise GameError(f"checkpoint {checkpoint}: the first checkpoint (step 0) is agreed, so j >= 1")
        if interval < 1:
            raise GameError(f"checkpoint interval {interval} must be positive")
        return cls((checkpoint - 1) * interval, checkpoint * interval, arity)

    @property
    def done(self) -> bool:
        return self.hi == self.lo + 1

    @property
    def step(self) -> int:
        """The isolated step `s = lo` (pre-state at `lo`, post-state at `lo + 1`), once `done`."""
        if not self.done:
            raise GameError(f"the interval {self.lo} .. {self.hi} is not one step yet")
        return self.lo

    @property
    def width(self) -> int:
        return min(self.arity, self.hi - self.lo)

    @property
    def points(self) -> list[int]:
        return split_points(self.lo, self.hi, self.arity)

    def roots(self, root_at: RootAt) -> list[bytes]:
        """The mover's `w + 1` roots at the split points.

        Also defined on a one-step interval (`w = 1`: the roots at `lo` and `hi`), which is where the
        bisection starts when the checkpoint interval is 1.
        """
        return [bytes(root_at(p)) for p in self.points]

    def narrow_at(self, index: int) -> Bisection:
        """The interval once the posted lists first differ at `index` (1 .. w)."""
        if not 1 <= index <= self.width:
            raise GameError(
                f"the lists first differ at index {index}; index 0 is the agreed root at lo, so it must be in "
                f"1 .. {self.width}"
            )
        pts = self.points
        return Bisection(pts[index - 1], pts[index], self.arity)

    def narrow(self, mine: Sequence[bytes], theirs: Sequence[bytes]) -> Bisection:
        """The interval after both sides posted their roots at the split points."""
        if len(mine) != self.width + 1:
            raise GameError(f"a move on {self.lo} .. {self.hi} posts {self.width + 1} roots, not {len(mine)}")
        return self.narrow_at(first_difference(mine, theirs))

    @property
    def max_rounds(self) -> int:
        """Moves per side still to come in the longest case: the sub-intervals of one round differ
        in length by at most one, the longest being `ceil(L / w)`."""
        n, span = 0, self.hi - self.lo
        while span > 1:
            span = -(-span // min(self.arity, span))
            n += 1
        return n


def play(lo: int, hi: int, arity: int, mine: RootAt, theirs: RootAt) -> Bisection:
    """Both sides honest to their own roots: the finished bisection, whose `step` is isolated."""
    b = Bisection(lo, hi, arity)
    while not b.done:
        b = b.narrow(b.roots(mine), b.roots(theirs))
    return b
