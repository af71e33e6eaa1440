"""Write the payout-tree vectors of docs/commitments.md, "Payout trees".

Run `PYTHONPATH=. .venv/bin/python scripts/payout_vectors.py [OUT_DIR]` (default
contracts/test/vectors). The forge tests (contracts/test/PayoutDistributor.t.sol and the gas test)
create distributions from these trees and claim every proof, and tests/ledger/test_payout.py
checks that the committed files are what this writes now, so the Python builder and the contract
cannot drift apart. Everything derives from fixed strings: a second run writes the same bytes.

- payout_trees.json: trees of 1, 2, 3, 4, 5, 7, 8, 9, 17 and 64 leaves, each split from a pool by
  `split`, with every leaf and every proof; a tree of 4096 leaves with the proofs of six leaves.
- payout_negative.json: claims against the 5-leaf tree that the contract must refuse, each with
  the error and its arguments.
- payout_splits.json: pools, weights and the exact shares `split` gives (ties, zero weights,
  pools smaller than the number of accounts).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from trainer.ledger.payout import (
    MAX_SUM,
    PayoutProof,
    PayoutTree,
    ProofStep,
    build_tree,
    depth,
    did_of,
    leaves_from_shares,
    payout_root,
    proof_root,
    split,
)

CHAIN_ID = 31337
FULL_SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 17, 64)
LARGE_SIZE = 4096
LARGE_PROOFS = (0, 1, 255, 256, 2047, 4095)
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"

Json = dict[str, Any]


def hx(b: bytes) -> str:
    return "0x" + b.hex()


def _h(seed: str) -> bytes:
    return hashlib.sha256(seed.encode()).digest()


def _account(name: str, i: int) -> bytes:
    return _h(f"payout/{name}/account/{i}")[:20]


def _weight(name: str, i: int) -> int:
    # 1 .. 2^20: every account gets a non-zero weight, so every case has exactly n leaves.
    return 1 + int.from_bytes(_h(f"payout/{name}/weight/{i}")[:4], "big") % (1 << 20)


def _pool(n: int) -> int:
    # Pools whose split leaves remainders; the 9-leaf one is small (a few thousand wei), so that the
    # largest-remainder wei are a visible part of each share.
    return 9001 if n == 9 else 10**18 + 12345 * n + 7


def _proof_json(p: PayoutProof) -> Json:
    return {
        "index": p.index,
        "account": hx(p.account),
        "amount": str(p.amount),
        "hashes": [hx(s.hash) for s in p.steps],
        "sums": [str(s.sum) for s in p.steps],
    }


def _tree_case(name: str, n: int, proofs: tuple[int, ...] | None) -> tuple[Json, PayoutTree]:
    weights = {did_of(CHAIN_ID, _account(name, i)): _weight(name, i) for i in range(n)}
    pool = _pool(n)
    shares = split(pool, weights)
    leaves = leaves_from_shares(shares, CHAIN_ID)
    assert len(leaves) == n, f"{name}: a zero share"
    tree = build_tree(leaves)
    case: Json = {
        "name": name,
        "count": n,
        "depth": depth(n),
        "pool": str(pool),
        "total": str(tree.total),
        "topHash": hx(tree.top_hash),
        "root": hx(tree.root),
    }
    if proofs is None:
        case["leaves"] = [
            {
                "did": did_of(CHAIN_ID, x.account),
                "weight": weights[did_of(CHAIN_ID, x.account)],
                "account": hx(x.account),
                "amount": str(x.amount),
            }
            for x in leaves
        ]
        proofs = tuple(range(n))
    case["proofs"] = [_proof_json(tree.proof(i)) for i in proofs]
    return case, tree


def tree_vectors() -> tuple[Json, PayoutTree]:
    cases = []
    five: PayoutTree | None = None
    for n in FULL_SIZES:
        case, tree = _tree_case(f"list{n}", n, None)
        cases.append(case)
        if n == 5:
            five = tree
    large, _ = _tree_case(f"list{LARGE_SIZE}", LARGE_SIZE, LARGE_PROOFS)
    cases.append(large)
    assert five is not None
    return {"version": 1, "chainId": CHAIN_ID, "cases": cases}, five


def _negative(name: str, tree: PayoutTree, p: PayoutProof, error: str, value: int | None = None) -> Json:
    """A claim against `tree` created with `value` wei (default its total) that must fail with `error`."""
    escrow = tree.total if value is None else value
    expected_root = payout_root(tree.top_hash, tree.leaf_count, escrow)
    case: Json = {"name": name, "value": str(escrow), "error": error, **_proof_json(p)}
    if error == "RootMismatch":
        computed = proof_root(tree.leaf_count, p)
        assert computed != expected_root, name
        case["computed"] = hx(computed)
        case["expected"] = hx(expected_root)
    elif error == "ProofLength":
        case["got"] = len(p.steps)
        case["expected"] = depth(tree.leaf_count)
    elif error == "SumTooLarge":
        case["sum"] = str(max(s.sum for s in p.steps))
    return case


def _with_step(p: PayoutProof, k: int, step: ProofStep) -> PayoutProof:
    steps = list(p.steps)
    steps[k] = step
    return PayoutProof(p.index, p.account, p.amount, tuple(steps))


def negative_vectors(tree: PayoutTree) -> Json:
    p = tree.proof(2)
    q = tree.proof(3)
    s0 = p.steps[0]
    top = p.steps[-1]
    flip = bytes([p.steps[1].hash[0] ^ 1]) + p.steps[1].hash[1:]
    # Move wei from the sibling's sum to the claimed amount: the fold's total stays the escrow.
    shifted = PayoutProof(p.index, p.account, p.amount + 1000, (ProofStep(s0.hash, s0.sum - 1000), *p.steps[1:]))
    cases = [
        _negative("wrong_sibling_hash", tree, _with_step(p, 1, ProofStep(flip, p.steps[1].sum)), "RootMismatch"),
        _negative(
            "wrong_sibling_sum", tree, _with_step(p, 1, ProofStep(p.steps[1].hash, p.steps[1].sum + 1)), "RootMismatch"
        ),
        _negative("wrong_amount", tree, PayoutProof(p.index, p.account, p.amount + 1, p.steps), "RootMismatch"),
        _negative("wrong_account", tree, PayoutProof(p.index, q.account, p.amount, p.steps), "RootMismatch"),
        _negative("wrong_index", tree, PayoutProof(q.index, p.account, p.amount, p.steps), "RootMismatch"),
        _negative("other_leaf_amount", tree, PayoutProof(p.index, p.account, q.amount, p.steps), "RootMismatch"),
        _negative("sum_shifted_to_amount", tree, shifted, "RootMismatch"),
        _negative(
            "padding_sibling_as_node",
            tree,
            _with_step(tree.proof(4), 0, ProofStep(tree.proof(4).steps[0].hash, 1)),
            "RootMismatch",
        ),
        _negative("missing_step", tree, PayoutProof(p.index, p.account, p.amount, p.steps[:-1]), "ProofLength"),
        _negative("extra_step", tree, PayoutProof(p.index, p.account, p.amount, (*p.steps, top)), "ProofLength"),
        _negative("sibling_sum_too_large", tree, _with_step(p, 0, ProofStep(s0.hash, MAX_SUM + 1)), "SumTooLarge"),
        _negative("sibling_sum_wraps", tree, _with_step(p, 0, ProofStep(s0.hash, 2**256 - p.amount)), "SumTooLarge"),
        # The escrow attack: the tree promises more (or less) than the pool; its real proofs pay nothing.
        _negative("escrow_short_by_one_wei", tree, p, "RootMismatch", value=tree.total - 1),
        _negative("escrow_over_by_one_wei", tree, p, "RootMismatch", value=tree.total + 1),
    ]
    return {
        "version": 1,
        "tree": "list5",
        "count": tree.leaf_count,
        "topHash": hx(tree.top_hash),
        "total": str(tree.total),
        "cases": cases,
    }


def split_vectors() -> Json:
    a, b, c, d = (did_of(CHAIN_ID, bytes([0] * 19 + [i])) for i in (1, 2, 3, 4))
    inputs: list[tuple[str, int, dict[str, int]]] = [
        ("equal_three_ways", 10, {c: 1, a: 1, b: 1}),
        ("ties_by_did", 5, {b: 2, a: 2, d: 2, c: 2}),
        ("zero_weight", 1000, {a: 0, b: 3, c: 7}),
        ("pool_zero", 0, {a: 5, b: 9}),
        ("pool_below_accounts", 2, {a: 1, b: 1, c: 1, d: 1}),
        ("largest_remainder", 100, {a: 1, b: 2, c: 3, d: 994}),
        ("one_account", 123456789, {b: 42}),
        ("big_pool", 10**24 + 1, {a: 3**40, b: 5**30, c: 7**20}),
    ]
    cases = []
    for name, pool, weights in inputs:
        shares = split(pool, weights)
        cases.append(
            {
                "name": name,
                "pool": str(pool),
                "weights": {k: str(v) for k, v in weights.items()},
                "shares": {k: str(v) for k, v in shares.items()},
            }
        )
    return {"version": 1, "cases": cases}


def write_all(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    trees, five = tree_vectors()
    written = []
    for name, data in (
        ("payout_trees.json", trees),
        ("payout_negative.json", negative_vectors(five)),
        ("payout_splits.json", split_vectors()),
    ):
        path = out_dir / name
        path.write_text(json.dumps(data, indent=1) + "\n")
        written.append(path)
    return written


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in write_all(out):
        print(path)


if __name__ == "__main__":
    main()
