from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.commit import PAD, MerkleTree, ProofError, depth, fold, leaf_hash, list_root, node_hash, root, verify


def leaves_of(n: int, salt: int = 0) -> list[bytes]:
    return [leaf_hash(f"{salt}/{i}".encode()) for i in range(n)]


def test_domain_separation_bytes() -> None:
    assert leaf_hash(b"x") == hashlib.sha256(b"\x00x").digest()
    a, c = b"\x11" * 32, b"\x22" * 32
    assert node_hash(a, c) == hashlib.sha256(b"\x01" + a + c).digest()
    assert list_root(3, a) == hashlib.sha256(b"\x02" + (3).to_bytes(8, "big") + a).digest()


@pytest.mark.parametrize(("n", "d"), [(0, 0), (1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4), (2**20 + 1, 21)])
def test_depth(n: int, d: int) -> None:
    assert depth(n) == d


def test_small_trees_by_hand() -> None:
    l0, l1, l2 = leaves_of(3)
    assert root([]) == list_root(0, PAD)
    assert root([l0]) == list_root(1, l0)
    assert root([l0, l1]) == list_root(2, node_hash(l0, l1))
    assert root([l0, l1, l2]) == list_root(3, node_hash(node_hash(l0, l1), node_hash(l2, PAD)))


def test_padding_subtrees_are_pad_not_hashes_of_pad() -> None:
    """docs/commitments.md section 2: a subtree covering only padding positions is PAD itself."""
    ls = leaves_of(5)
    left = node_hash(node_hash(ls[0], ls[1]), node_hash(ls[2], ls[3]))
    right = node_hash(node_hash(ls[4], PAD), PAD)
    assert root(ls) == list_root(5, node_hash(left, right))
    assert MerkleTree(ls).open(4).siblings == (PAD, PAD, left)


def test_root_binds_count() -> None:
    """Three leaves and the same three plus an explicit PAD-valued fourth differ only by count."""
    ls = leaves_of(3)
    assert root(ls) != root([*ls, PAD])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), salt=st.integers(0, 10**6), data=st.data())
def test_every_opening_verifies_and_tampering_fails(n: int, salt: int, data: st.DataObject) -> None:
    ls = leaves_of(n, salt)
    tree = MerkleTree(ls)
    assert tree.root == root(ls)
    i = data.draw(st.integers(0, n - 1))
    op = tree.open(i)
    verify(tree.root, n, i, ls[i], op.siblings)
    if op.siblings:
        k = data.draw(st.integers(0, len(op.siblings) - 1))
        bad = list(op.siblings)
        bad[k] = bytes([bad[k][0] ^ 0x80]) + bad[k][1:]
        with pytest.raises(ProofError, match="not to the root"):
            verify(tree.root, n, i, ls[i], bad)
    if n > 1:
        j = data.draw(st.integers(0, n - 1).filter(lambda j: j != i))
        with pytest.raises(ProofError, match="not to the root"):
            verify(tree.root, n, j, ls[i], op.siblings)
        with pytest.raises(ProofError, match="siblings"):
            verify(tree.root, n, i, ls[i], op.siblings[:-1])
    with pytest.raises(ProofError, match="out of range"):
        verify(tree.root, n, n, ls[i], op.siblings)


def test_malformed_inputs_are_named() -> None:
    ls = leaves_of(4)
    tree = MerkleTree(ls)
    with pytest.raises(ProofError, match="padding leaf"):
        fold(4, 1, PAD, tree.open(1).siblings)
    with pytest.raises(ProofError, match="expected 32"):
        fold(4, 1, b"short", tree.open(1).siblings)
    with pytest.raises(ProofError, match="sibling 0 is 3 bytes"):
        fold(4, 1, ls[1], (b"abc", tree.open(1).siblings[1]))
    with pytest.raises(ProofError, match="padding position"):
        fold(3, 3, ls[0], tree.open(3).siblings)
    with pytest.raises(ProofError, match="out of range"):
        tree.open(4)
    with pytest.raises(ProofError, match="not a whole number"):
        root(b"\x00" * 33)
