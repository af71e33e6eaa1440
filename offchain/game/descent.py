"""Descent moves (IDisputeGame, "Descent"), computed off chain from a full list of leaves.

A list of `n` leaf hashes is viewed as a complete tree of `2^D` leaf positions, `D = depth(n)`
(docs/commitments.md section 2). Position `p` at height `h` holds `PAD` when `p * 2^h >= n`,
else `node(left, right)` of its two children (a leaf at height 0); the top is the node at
`(D, 0)` and the root `listRoot(n, top)`.

A descent move at the current node `(h, p)` reveals the mover's `w = 2^t` nodes at height
`h - t`, positions `p*w .. p*w + w - 1`, where `t = min(log2(arity), h)`. The contract folds
them (`fold`) and checks the result against the mover's current node, or at the top
`listRoot(n, fold)` against the mover's root. The first index where the two sides' nodes
differ (`first_difference`) becomes the current position of both (`Descent.narrow`); after
`ceil(D / log2(arity))` levels the current nodes are the first differing leaves.

    tree = LeafTree(leaves)
    d = Descent.start(tree.count, arity)
    while not d.done:
        mine = tree.nodes(d.height, d.position, arity)   # what the mover posts
        d = d.narrow(first_difference(mine, their_nodes))
    d.leaf_index
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from offchain.game.errors import GameError
from trainer.commit import PAD, depth, list_root, node_hash

MIN_ARITY = 2
MAX_ARITY = 64


def log2_arity(arity: int) -> int:
    """`log2(arity)` of a power of two in [2, 64]; GameError otherwise."""
    if not MIN_ARITY <= arity <= MAX_ARITY or arity & (arity - 1):
        raise GameError(f"arity {arity} must be a power of two in [{MIN_ARITY}, {MAX_ARITY}]")
    return arity.bit_length() - 1


def level_width(arity: int, height: int) -> int:
    """`w = 2^t`, `t = min(log2(arity), height)`: how many nodes a move at `height` reveals."""
    if height < 0:
        raise GameError(f"height {height} is negative")
    return 1 << min(log2_arity(arity), height)


def is_padding(n: int, height: int, position: int) -> bool:
    """Whether position `position` at `height` of a list of `n` leaves is PAD (`p * 2^h >= n`)."""
    return position << height >= n


def level_count(n: int, arity: int) -> int:
    """Moves per side in a full descent of `n` leaves: `ceil(depth(n) / log2(arity))`."""
    t = log2_arity(arity)
    return -(-depth(n) // t)


def _check_hash(value: bytes, what: str) -> bytes:
    if len(value) != 32:
        raise GameError(f"{what} is {len(value)} bytes, expected a 32-byte hash")
    return bytes(value)


class LeafTree:
    """Every node of the complete tree over `leaves`: the mover's side of a descent."""

    __slots__ = ("_levels", "count", "height")

    def __init__(self, leaves: Sequence[bytes]) -> None:
        if not leaves:
            raise GameError("a descended list has at least one leaf")
        row = [_check_hash(leaf, f"leaf {i}") for i, leaf in enumerate(leaves)]
        self.count = len(row)
        self.height = depth(self.count)  # D
        row += [PAD] * ((1 << self.height) - self.count)
        levels = [row]
        for h in range(1, self.height + 1):
            below = levels[-1]
            levels.append(
                [
                    PAD if is_padding(self.count, h, q) else node_hash(below[2 * q], below[2 * q + 1])
                    for q in range(len(below) // 2)
                ]
            )
        self._levels = levels

    @property
    def top(self) -> bytes:
        return self._levels[-1][0]

    @property
    def root(self) -> bytes:
        """`listRoot(n, top)`: equals `trainer.commit.root(leaves)`."""
        return list_root(self.count, self.top)

    def leaf(self, index: int) -> bytes:
        return self.node(0, index)

    def node(self, height: int, position: int) -> bytes:
        """The node at `(height, position)` (PAD at padding positions)."""
        if not 0 <= height <= self.height or not 0 <= position < 1 << (self.height - height):
            raise GameError(f"({height}, {position}) is not a position of a tree of height {self.height}")
        return self._levels[height][position]

    def nodes(self, height: int, position: int, arity: int) -> list[bytes]:
        """The mover's `w` nodes at height `height - t` below the current node `(height, position)`."""
        w = level_width(arity, height)
        below = height - (w.bit_length() - 1)
        self.node(height, position)  # range check
        return list(self._levels[below][position * w : position * w + w])


def fold(nodes: Sequence[bytes], height: int, position: int, n: int) -> bytes:
    """The node at `(height, position)` that `nodes` (the `w` nodes below it) imply, as the contract
    computes it; GameError where the contract would refuse (a padding position not PAD, a wrong count).

    At the top (`height == depth(n)`, `position == 0`) the mover's root is `listRoot(n, fold(...))`.
    """
    w = len(nodes)
    if w == 0 or w & (w - 1):
        raise GameError(f"{w} nodes: a move reveals a power-of-two number of nodes")
    t = w.bit_length() - 1
    if t > height:
        raise GameError(f"{w} nodes cannot lie below height {height}")
    g = height - t
    start = position * w
    cur = []
    for i, x in enumerate(nodes):
        x = _check_hash(x, f"node {i}")
        if is_padding(n, g, start + i) and x != PAD:
            raise GameError(f"node {i} (position {start + i} at height {g}) is a padding position and must be PAD")
        cur.append(x)
    while len(cur) > 1:
        start >>= 1
        g += 1
        cur = [
            PAD if is_padding(n, g, start + q) else node_hash(cur[2 * q], cur[2 * q + 1]) for q in range(len(cur) // 2)
        ]
    return cur[0]


def first_difference(mine: Sequence[bytes], theirs: Sequence[bytes]) -> int:
    """The first index where the two lists differ; GameError if they have different lengths or agree."""
    if len(mine) != len(theirs):
        raise GameError(f"the lists have {len(mine)} and {len(theirs)} entries; a move compares equal lengths")
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if bytes(a) != bytes(b):
            return i
    raise GameError(f"the two lists of {len(mine)} entries agree everywhere: there is nothing to dispute")


@dataclass(frozen=True, slots=True)
class Descent:
    """Where a descent stands: the current node `(height, position)` of a tree of `n` leaves."""

    n: int
    arity: int
    height: int
    position: int

    @classmethod
    def start(cls, n: int, arity: int) -> Descent:
        """The top: `h = depth(n)`, `p = 0`."""
        if n < 1:
            raise GameError(f"a descended list has at least one leaf, not {n}")
        log2_arity(arity)
        return cls(n, arity, depth(n), 0)

    @property
    def depth(self) -> int:
        return depth(self.n)

    @property
    def at_top(self) -> bool:
        return self.height == depth(self.n)

    @property
    def done(self) -> bool:
        """The current nodes are leaves."""
        return self.height == 0

    @property
    def width(self) -> int:
        """`w`, the number of nodes each side posts at this level."""
        return level_width(self.arity, self.height)

    @property
    def child_height(self) -> int:
        return self.height - (self.width.bit_length() - 1)

    @property
    def positions(self) -> range:
        """The positions (at `child_height`) of the nodes posted at this level."""
        w = self.width
        return range(self.position * w, self.position * w + w)

    @property
    def levels_left(self) -> int:
        """Moves per side still to come, this level included."""
        return -(-self.height // log2_arity(self.arity))

    @property
    def leaf_index(self) -> int:
        """The isolated leaf, once `done`."""
        if not self.done:
            raise GameError(f"the descent is at height {self.height}; it isolates a leaf only at height 0")
        return self.position

    def narrow(self, index: int) -> Descent:
        """The descent after the two sides' nodes first differ at `index` (0 .. w-1)."""
        if self.done:
            raise GameError("the descent already isolated a leaf")
        w = self.width
        if not 0 <= index < w:
            raise GameError(f"index {index} is not one of the {w} nodes of this level")
        child = self.position * w + index
        g = self.child_height
        if is_padding(self.n, g, child):
            raise GameError(f"position {child} at height {g} is padding: both sides hold PAD there")
        return Descent(self.n, self.arity, g, child)

    def check(self, nodes: Sequence[bytes], current: bytes) -> None:
        """Raise GameError unless `nodes` are a valid move below `current` (the mover's current node,
        or its root at the top), as the contract checks them."""
        if len(nodes) != self.width:
            raise GameError(f"a move at height {self.height} posts {self.width} nodes, not {len(nodes)}")
        got = fold(nodes, self.height, self.position, self.n)
        if self.at_top:
            got = list_root(self.n, got)
        if got != current:
            raise GameError(f"the nodes fold to {got.hex()}, not to {bytes(current).hex()}")


def play(mine: LeafTree, theirs: LeafTree, arity: int) -> Descent:
    """Both sides honest: the finished descent, whose `leaf_index` is the first differing leaf."""
    if mine.count != theirs.count:
        raise GameError(f"the lists have {mine.count} and {theirs.count} leaves; a descent needs equal counts")
    d = Descent.start(mine.count, arity)
    while not d.done:
        d = d.narrow(
            first_difference(mine.nodes(d.height, d.position, arity), theirs.nodes(d.height, d.position, arity))
        )
    return d
