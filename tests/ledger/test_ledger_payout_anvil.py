"""A ledger's pool paid out by attribution on anvil: shares from the blocks, the Merkle-sum tree,
the real PayoutDistributor, every leaf claimed once, to the wei."""

from __future__ import annotations

from pathlib import Path

import pytest

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.contracts.payout_distributor import PayoutDistributorAlreadyClaimed, PayoutDistributorClient
from offchain.ledger.scenario import ScenarioConfig, run
from offchain.store.store import Store
from trainer.ledger.did import did_of
from trainer.ledger.payout import build_tree, leaves_from_shares
from trainer.ledger.shares import attribution_weights, ledger_shares

pytestmark = pytest.mark.anvil
POOL = 10**18


def test_the_pool_is_paid_by_attribution_and_claimed(
    anvil: Anvil, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    accounts = anvil.accounts
    contributors = [a.address for a in accounts[1:5]]
    config = ScenarioConfig(steps=4, batch=16, validation_batch=32, shapley_every=0, chain_id=anvil.chain_id)
    result = run(Store(tmp_path), config, contributors)
    builder = did_of(anvil.chain_id, accounts[5].address)
    client_did = did_of(anvil.chain_id, accounts[0].address)
    shares = ledger_shares(POOL, config.payout, result.blocks, [builder], client_did)
    assert sum(shares.values()) == POOL
    kinds = {c.did: c.kind for c in result.contributors}
    by_kind = {kinds.get(d, "builder"): w for d, w in shares.items()}
    assert by_kind["builder"] == POOL * config.payout.builder_bps // 10_000
    weights = attribution_weights(result.blocks)
    poison = next(c.did for c in result.contributors if c.kind == "poison")
    if poison not in weights:  # negative attribution: the verified-work share only
        assert by_kind["poison"] < min(by_kind["clean"], by_kind["noisy"], by_kind["copy"])

    tree = build_tree(leaves_from_shares(shares, anvil.chain_id))
    chain = ChainClient(anvil.rpc_url, accounts[0].private_key, artifacts=artifacts.values())
    deployed = chain.deploy(artifacts["PayoutDistributor"])
    dist = PayoutDistributorClient(chain, deployed.address, artifacts["PayoutDistributor"])
    now = int(chain.w3.eth.get_block("latest")["timestamp"])
    created = dist.create(tree, accounts[0].address, now + 7200)
    relayer = dist.connect(ChainClient(anvil.rpc_url, accounts[6].private_key, artifacts=artifacts.values()))
    gas = []
    for i in range(tree.leaf_count):
        proof = tree.proof(i)
        who = chain.w3.to_checksum_address("0x" + proof.account.hex())
        before = chain.w3.eth.get_balance(who)
        receipt = relayer.claim(created.id, proof)  # anyone may claim for the leaf's account
        assert chain.w3.eth.get_balance(who) - before == proof.amount
        gas.append(receipt.gas_used)
    assert max(gas) <= 60_000, gas
    assert dist.claimed_total(created.id) == POOL
    assert chain.w3.eth.get_balance(dist.address) == 0
    with pytest.raises(PayoutDistributorAlreadyClaimed):
        relayer.claim(created.id, tree.proof(0))
