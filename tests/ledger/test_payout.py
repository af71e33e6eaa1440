"""Payout shares and trees (trainer/ledger/payout.py, docs/commitments.md "Payout trees").

The trees and claims here are the ones forge checks against the contract: the vectors under
contracts/test/vectors/payout_*.json are written by scripts/payout_vectors.py, and
`test_vectors_are_up_to_date` fails when the committed files differ from what it writes now.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.ledger.payout import (
    MAX_LEAVES,
    MAX_SUM,
    PAD,
    PayoutLeaf,
    PayoutProof,
    PayoutProofError,
    PayoutTreeError,
    ProofStep,
    SplitError,
    build_tree,
    depth,
    did_of,
    leaf_hash,
    leaves_from_shares,
    node_hash,
    parse_did,
    payout_root,
    proof_root,
    split,
    verify_proof,
)

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("payout_vectors", ROOT / "scripts" / "payout_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def b(x: str) -> bytes:
    return bytes.fromhex(x.removeprefix("0x"))


def _proof(c: dict[str, Any]) -> PayoutProof:
    steps = tuple(ProofStep(b(h), int(s)) for h, s in zip(c["hashes"], c["sums"], strict=True))
    return PayoutProof(c["index"], b(c["account"]), int(c["amount"]), steps)


def _account(i: int) -> bytes:
    return hashlib.sha256(f"test account {i}".encode()).digest()[:20]


# ---------------------------------------------------------------------------- vectors


def test_vectors_are_up_to_date(tmp_path: Path) -> None:
    """The committed files are exactly what the writer produces now (forge tests the same bytes)."""
    for fresh in _writer().write_all(tmp_path):
        committed = VECTORS / fresh.name
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed} is stale: run PYTHONPATH=. .venv/bin/python scripts/payout_vectors.py"
        )


@pytest.mark.parametrize("case", load("payout_trees.json")["cases"], ids=lambda c: c["name"])
def test_tree_case(case: dict[str, Any]) -> None:
    """Each vector tree rebuilds to its top hash and root, and every proof in it verifies."""
    root = b(case["root"])
    assert payout_root(b(case["topHash"]), case["count"], int(case["total"])) == root
    assert int(case["total"]) == int(case["pool"])
    if "leaves" in case:
        leaves = [PayoutLeaf(b(x["account"]), int(x["amount"])) for x in case["leaves"]]
        tree = build_tree(leaves)
        assert tree.top_hash == b(case["topHash"])
        assert tree.root == root
        shares = split(int(case["pool"]), {x["did"]: x["weight"] for x in case["leaves"]})
        assert leaves_from_shares(shares, 31337) == tuple(leaves)
        for p in case["proofs"]:
            assert tree.proof(p["index"]) == _proof(p)
    for p in case["proofs"]:
        proof = _proof(p)
        assert len(proof.steps) == case["depth"] == depth(case["count"])
        verify_proof(root, case["count"], proof)


@pytest.mark.parametrize("case", load("payout_negative.json")["cases"], ids=lambda c: c["name"])
def test_negative_case(case: dict[str, Any]) -> None:
    """Each forged claim the contract must refuse is refused here for the same reason."""
    neg = load("payout_negative.json")
    root = payout_root(b(neg["topHash"]), neg["count"], int(case["value"]))
    with pytest.raises(PayoutProofError) as err:
        verify_proof(root, neg["count"], _proof(case))
    assert err.value.reason == case["error"]
    if case["error"] == "RootMismatch":
        assert proof_root(neg["count"], _proof(case)) == b(case["computed"])
        assert root == b(case["expected"])


@pytest.mark.parametrize("case", load("payout_splits.json")["cases"], ids=lambda c: c["name"])
def test_split_case(case: dict[str, Any]) -> None:
    shares = split(int(case["pool"]), {k: int(v) for k, v in case["weights"].items()})
    assert shares == {k: int(v) for k, v in case["shares"].items()}
    assert list(shares) == list(case["shares"]), "tie-key order"
    assert sum(shares.values()) == int(case["pool"])


# ---------------------------------------------------------------------------- split


def test_split_largest_remainder_by_hand() -> None:
    # 100 over weights 1, 2, 3, 994 (W = 1000): quotas 0.1, 0.2, 0.3, 99.4 -> floors 0, 0, 0, 99, R = 1,
    # the largest remainder is 994's (0.4).
    assert split(100, {"a": 1, "b": 2, "c": 3, "d": 994}) == {"a": 0, "b": 0, "c": 0, "d": 100}
    # 10 three ways: floors 3, R = 1, equal remainders: the first tie key ("a") gets it.
    assert split(10, {"c": 1, "b": 1, "a": 1}) == {"a": 4, "b": 3, "c": 3}


def test_split_ties_use_the_tie_key() -> None:
    w = {"a": 1, "b": 1, "c": 1}
    assert split(2, w) == {"a": 1, "b": 1, "c": 0}
    assert split(2, w, tie_key=lambda k: bytes([255 - ord(k)])) == {"c": 1, "b": 1, "a": 0}


@pytest.mark.parametrize(
    ("pool", "weights", "message"),
    [
        (10, {}, "no accounts"),
        (10, {"a": 0, "b": 0}, "every weight is zero"),
        (-1, {"a": 1}, "pool must be non-negative"),
        (10, {"a": -1, "b": 2}, "must be non-negative"),
        (10, {"a": 1.5}, "must be an int"),
        (10, {"a": True}, "must be an int"),
        (2.0, {"a": 1}, "must be an int"),
    ],
)
def test_split_bad_input_raises(pool: Any, weights: Any, message: str) -> None:
    with pytest.raises(SplitError, match=message):
        split(pool, weights)


def test_split_duplicate_tie_keys_raise() -> None:
    with pytest.raises(SplitError, match="same tie key"):
        split(10, {"a": 1, "A": 1}, tie_key=lambda k: k.lower().encode())


weights_st = st.dictionaries(
    st.text(alphabet="0123456789abcdef", min_size=1, max_size=6),
    st.integers(min_value=0, max_value=10**30),
    min_size=1,
    max_size=24,
).filter(lambda w: sum(w.values()) > 0)
pools_st = st.integers(min_value=0, max_value=2**120)


@settings(max_examples=300, deadline=None)
@given(pools_st, weights_st)
def test_split_sums_to_pool_and_stays_within_one_wei(pool: int, weights: dict[str, int]) -> None:
    shares = split(pool, weights)
    assert set(shares) == set(weights)
    assert sum(shares.values()) == pool
    total = sum(weights.values())
    for k, w in weights.items():
        quota = Fraction(pool * w, total)
        assert abs(shares[k] - quota) < 1, "within one wei of the exact quota"
        assert shares[k] >= 0


@settings(max_examples=200, deadline=None)
@given(pools_st, weights_st, st.randoms(use_true_random=False))
def test_split_is_permutation_independent(pool: int, weights: dict[str, int], rnd: Any) -> None:
    items = list(weights.items())
    rnd.shuffle(items)
    shuffled = dict(items)
    assert split(pool, shuffled) == split(pool, weights)
    assert list(split(pool, shuffled)) == sorted(weights, key=str.encode), "result in tie-key order"


@settings(max_examples=300, deadline=None)
@given(pools_st, weights_st, st.data())
def test_split_is_monotone_in_each_weight(pool: int, weights: dict[str, int], data: st.DataObject) -> None:
    """Raising one account's weight (the others fixed) never lowers its share, and more weight than
    another account never means a smaller share."""
    key = data.draw(st.sampled_from(sorted(weights)))
    more = dict(weights)
    more[key] += data.draw(st.integers(min_value=1, max_value=10**30))
    assert split(pool, more)[key] >= split(pool, weights)[key]
    shares = split(pool, weights)
    for a in weights:
        for c in weights:
            if weights[a] > weights[c]:
                assert shares[a] >= shares[c]


# ---------------------------------------------------------------------------- tree


def test_hash_layouts() -> None:
    acct = bytes(range(1, 21))
    assert leaf_hash(acct, 5) == hashlib.sha256(b"\x10" + acct + (5).to_bytes(32, "big")).digest()
    h1, h2 = hashlib.sha256(b"x").digest(), hashlib.sha256(b"y").digest()
    data = b"\x11" + h1 + (3).to_bytes(32, "big") + h2 + (4).to_bytes(32, "big")
    assert len(data) == 129
    assert node_hash(h1, 3, h2, 4) == hashlib.sha256(data).digest()
    root_in = b"\x12" + (7).to_bytes(8, "big") + h1 + (9).to_bytes(32, "big")
    assert payout_root(h1, 7, 9) == hashlib.sha256(root_in).digest()


def test_tree_shape_pads_with_zero_nodes() -> None:
    leaves = [PayoutLeaf(_account(i), i + 1) for i in range(5)]
    tree = build_tree(leaves)
    l0 = [(leaf_hash(x.account, x.amount), x.amount) for x in leaves]
    n01 = node_hash(*l0[0], *l0[1])
    n23 = node_hash(*l0[2], *l0[3])
    n4p = node_hash(*l0[4], PAD, 0)
    a = node_hash(n01, 3, n23, 7)
    c = node_hash(n4p, 5, PAD, 0)
    assert tree.top_hash == node_hash(a, 10, c, 5)
    assert tree.total == 15
    assert tree.proof(4).steps[0] == ProofStep(PAD, 0)
    one = build_tree(leaves[:1])
    assert one.top_hash == l0[0][0] and one.proof(0).steps == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=2**64), min_size=1, max_size=70))
def test_every_proof_verifies_and_binds_its_amount(amounts: list[int]) -> None:
    tree = build_tree([PayoutLeaf(_account(i), a) for i, a in enumerate(amounts)])
    assert tree.total == sum(amounts)
    for i in range(len(amounts)):
        p = tree.proof(i)
        verify_proof(tree.root, len(amounts), p)
        with pytest.raises(PayoutProofError) as err:
            verify_proof(tree.root, len(amounts), PayoutProof(i, p.account, p.amount + 1, p.steps))
        assert err.value.reason == "RootMismatch"
    # A tree that promises more than the escrow: no proof verifies against the escrow's root.
    short = payout_root(tree.top_hash, len(amounts), tree.total - 1)
    with pytest.raises(PayoutProofError):
        verify_proof(short, len(amounts), tree.proof(0))


def test_proof_errors_name_the_contract_error() -> None:
    tree = build_tree([PayoutLeaf(_account(i), 10) for i in range(3)])
    p = tree.proof(1)
    cases = [
        (PayoutProof(3, p.account, 10, p.steps), "IndexOutOfRange"),
        (PayoutProof(1, p.account, 0, p.steps), "ZeroAmount"),
        (PayoutProof(1, bytes(20), 10, p.steps), "ZeroAccount"),
        (PayoutProof(1, p.account, 10, p.steps[:1]), "ProofLength"),
        (PayoutProof(1, p.account, MAX_SUM + 1, p.steps), "SumTooLarge"),
    ]
    for bad, reason in cases:
        with pytest.raises(PayoutProofError) as err:
            verify_proof(tree.root, 3, bad)
        assert err.value.reason == reason


@pytest.mark.parametrize(
    ("leaves", "message"),
    [
        ([], "1 .. 65536 leaves"),
        ([PayoutLeaf(_account(0), MAX_SUM), PayoutLeaf(_account(1), 1)], "over the largest pool"),
    ],
)
def test_build_tree_refuses(leaves: list[PayoutLeaf], message: str) -> None:
    with pytest.raises(PayoutTreeError, match=message):
        build_tree(leaves)


def test_build_tree_refuses_too_many_leaves() -> None:
    leaf = PayoutLeaf(_account(0), 1)
    with pytest.raises(PayoutTreeError, match=r"1 \.\. 65536 leaves"):
        build_tree([leaf] * (MAX_LEAVES + 1))


@pytest.mark.parametrize(
    ("account", "amount", "message"),
    [
        (bytes(20), 1, "zero address"),
        (b"\x01" * 19, 1, "20 bytes"),
        (_account(0), 0, "leave out zero shares"),
        (_account(0), MAX_SUM + 1, r"1 \.\. 2"),
    ],
)
def test_leaf_refuses(account: bytes, amount: int, message: str) -> None:
    with pytest.raises(PayoutTreeError, match=message):
        PayoutLeaf(account, amount)


def test_leaves_from_shares_orders_by_did_and_drops_zeros() -> None:
    a, c = _account(1), _account(2)
    da, dc = did_of(5, a), did_of(5, c)
    leaves = leaves_from_shares({dc: 3, da: 4, did_of(5, _account(3)): 0}, 5)
    assert [x.account for x in leaves] == [x for _, x in sorted([(da, a), (dc, c)])]
    assert parse_did(da) == (5, a)
    with pytest.raises(PayoutTreeError, match="not of chain 6"):
        leaves_from_shares({da: 1}, 6)
    with pytest.raises(PayoutTreeError, match="is not a DID"):
        leaves_from_shares({da.upper(): 1}, 5)
    with pytest.raises(PayoutTreeError, match="nothing to pay out"):
        leaves_from_shares({da: 0}, 5)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=10**24), st.lists(st.integers(0, 10**6), min_size=1, max_size=40))
def test_split_then_tree_pays_the_pool_exactly(pool: int, weights: list[int]) -> None:
    """The whole path: split -> leaves -> tree; the tree's total is the pool (so the contract's escrow)."""
    if sum(weights) == 0:
        weights[0] = 1
    shares = split(pool, {did_of(1, _account(i)): w for i, w in enumerate(weights)})
    if not any(shares.values()):
        return
    tree = build_tree(leaves_from_shares(shares, 1))
    assert tree.total == pool
