"""Descent moves against trainer.commit's trees: the fold of every level, the top, the isolated leaf."""

from __future__ import annotations

import random

import pytest

from offchain.game import Descent, GameError, LeafTree, first_difference, fold, level_width, log2_arity
from offchain.game.descent import is_padding, level_count, play
from trainer.commit import PAD, MerkleTree, depth, leaf_hash, list_root, node_hash
from trainer.commit import root as merkle_root

ARITIES = (2, 4, 16, 64)


def leaves(n: int, tag: str = "a") -> list[bytes]:
    return [leaf_hash(f"{tag} {i}".encode()) for i in range(n)]


@pytest.mark.parametrize("arity", ARITIES)
def test_top_level_folds_to_the_merkle_root(arity: int) -> None:
    for n in range(1, 71):
        ls = leaves(n)
        tree = LeafTree(ls)
        d = depth(n)
        assert tree.height == d and tree.count == n
        assert tree.top == MerkleTree(ls).top and tree.root == merkle_root(ls) == MerkleTree(ls).root
        top = tree.nodes(d, 0, arity)
        assert len(top) == level_width(arity, d) == 1 << min(log2_arity(arity), d)
        assert fold(top, d, 0, n) == tree.top
        assert list_root(n, fold(top, d, 0, n)) == merkle_root(ls)
        Descent.start(n, arity).check(top, merkle_root(ls))


@pytest.mark.parametrize("arity", ARITIES)
def test_every_level_folds_to_its_parent(arity: int) -> None:
    for n in (1, 2, 3, 5, 8, 9, 17, 33, 64, 65, 70):
        tree = LeafTree(leaves(n))
        for h in range(1, tree.height + 1):
            for p in range(1 << (tree.height - h)):
                assert fold(tree.nodes(h, p, arity), h, p, n) == tree.node(h, p)


def test_padding_positions_hold_pad_and_real_ones_do_not() -> None:
    n = 5  # docs/commitments.md's example: level 1 = n01, n23, node(L4, PAD); level 2 = ., node(node(L4,PAD), PAD)
    ls = leaves(n)
    tree = LeafTree(ls)
    assert [tree.leaf(i) for i in range(8)] == [*ls, PAD, PAD, PAD]
    assert tree.node(1, 2) == node_hash(ls[4], PAD) and tree.node(1, 3) == PAD
    assert tree.node(2, 1) == node_hash(node_hash(ls[4], PAD), PAD)
    for h in range(tree.height + 1):
        for p in range(1 << (tree.height - h)):
            assert (tree.node(h, p) == PAD) == is_padding(n, h, p)


def test_fold_refuses_a_non_pad_padding_position() -> None:
    n = 5
    tree = LeafTree(leaves(n))
    nodes = tree.nodes(2, 1, 4)  # positions 4..7 at height 0: L4, PAD, PAD, PAD
    assert nodes[1:] == [PAD] * 3
    with pytest.raises(GameError, match="padding position and must be PAD"):
        fold([nodes[0], nodes[0], PAD, PAD], 2, 1, n)
    with pytest.raises(GameError, match="power-of-two"):
        fold(nodes[:3], 2, 1, n)
    with pytest.raises(GameError, match="cannot lie below height 1"):
        fold(nodes, 1, 0, n)


def test_check_names_a_wrong_fold() -> None:
    tree = LeafTree(leaves(9))
    d = Descent.start(9, 4)
    mine = tree.nodes(d.height, d.position, 4)
    d.check(mine, tree.root)
    with pytest.raises(GameError, match="fold to"):
        d.check(mine, tree.top)  # at the top the root is checked, not the top
    with pytest.raises(GameError, match="posts 4 nodes, not 2"):
        d.check(mine[:2], tree.root)


def test_first_difference() -> None:
    a = leaves(6)
    b = list(a)
    b[3] = leaf_hash(b"other")
    assert first_difference(a, b) == 3
    with pytest.raises(GameError, match="agree everywhere"):
        first_difference(a, a)
    with pytest.raises(GameError, match="6 and 5 entries"):
        first_difference(a, a[:5])


def test_bad_arities_are_refused() -> None:
    for arity in (0, 1, 3, 6, 128):
        with pytest.raises(GameError, match="power of two"):
            Descent.start(4, arity)


@pytest.mark.parametrize("arity", ARITIES)
def test_a_descent_walks_down_to_one_leaf(arity: int) -> None:
    n = 70
    d = Descent.start(n, arity)
    assert d.at_top and d.height == 7 and d.position == 0
    path = []
    while not d.done:
        path.append((d.height, d.width))
        d = d.narrow(0)
    assert d.leaf_index == 0
    assert len(path) == level_count(n, arity) == -(-7 // log2_arity(arity))
    assert sum(w.bit_length() - 1 for _, w in path) == 7  # every level consumes log2(w) heights


def test_narrow_refuses_padding_and_finished_descents() -> None:
    d = Descent.start(5, 4)  # height 3: nodes at height 1, positions 0..3; 3 is padding
    assert d.width == 4 and list(d.positions) == [0, 1, 2, 3]
    with pytest.raises(GameError, match="padding"):
        d.narrow(3)
    leaf = d.narrow(2).narrow(0)
    assert leaf.done and leaf.leaf_index == 4
    with pytest.raises(GameError, match="already isolated"):
        leaf.narrow(0)
    with pytest.raises(GameError, match="only at height 0"):
        _ = d.leaf_index


def test_simulated_descents_find_the_first_differing_leaf() -> None:
    rng = random.Random(20240611)
    for _ in range(300):
        n = rng.randint(1, 300)
        arity = rng.choice(ARITIES)
        j = rng.randrange(n)
        a = leaves(n, "honest")
        b = a[:j] + leaves(n, "other")[j:]  # differ from index j on
        ta, tb = LeafTree(a), LeafTree(b)
        d = Descent.start(n, arity)
        moves = 0
        while not d.done:
            mine = ta.nodes(d.height, d.position, arity)  # the defender moves first
            theirs = tb.nodes(d.height, d.position, arity)
            current_a = ta.root if d.at_top else ta.node(d.height, d.position)
            current_b = tb.root if d.at_top else tb.node(d.height, d.position)
            d.check(mine, current_a)
            d.check(theirs, current_b)
            d = d.narrow(first_difference(theirs, mine))
            moves += 1
        assert d.leaf_index == j
        assert ta.leaf(j) == a[j] and tb.leaf(j) == b[j] and a[j] != b[j]
        assert moves == level_count(n, arity)
        assert play(ta, tb, arity).leaf_index == j


def test_a_single_difference_in_the_middle_is_found() -> None:
    a = leaves(37)
    b = list(a)
    b[20] = leaf_hash(b"x")
    for arity in ARITIES:
        assert play(LeafTree(a), LeafTree(b), arity).leaf_index == 20
