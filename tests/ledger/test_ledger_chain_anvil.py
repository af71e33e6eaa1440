"""The training ledger on a real anvil chain through the real TrainingLedger (docs/ledger.md): the four
contributors of the digits scenario (clean, noisy, copy, poison) commit and reveal their gradients
computed with trainer.ledger, three builders (quorum 2) build the blocks and post interval and payout
roots, every contributor claims; balances are exact to the wei and the blocks and shares are those of
the same ledger computed off chain. A builder that misattributes freezes the ledger and the pool goes
back to the client by `refund` (docs/ledger.md section 8); a contributor that reveals without publishing
its data is refused as unavailable."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from offchain.agents.devnet import Devnet
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.contracts.training_ledger import (
    FEE_INDEX,
    LedgerClaimsNotOpen,
    LedgerFrozen,
    LedgerPayoutMismatch,
    LedgerRevealMismatch,
    LedgerUnknown,
    TrainingLedgerClient,
    commit_hash,
)
from offchain.ledger.agents import (
    BuilderAgent,
    ContributorAgent,
    LedgerChainError,
    LedgerClientAgent,
    LedgerFollower,
    payout_tree,
)
from offchain.ledger.published import replay_from_store
from offchain.ledger.scenario import ScenarioConfig, run, setup
from offchain.store import Store
from trainer.ledger.block import Block
from trainer.ledger.did import did_of
from trainer.ledger.payout import PayoutProof
from trainer.ledger.shares import builder_fee, tree_shares

pytestmark = pytest.mark.anvil

POOL = 10**18
CONFIG = dict(steps=4, batch=16, validation_batch=32, shapley_every=0)
WINDOWS = dict(interval_steps=2, quorum=2)


class Events:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def event(self, agent: str, message: str) -> None:
        self.lines.append(f"[{agent}] {message}")

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass


@dataclasses.dataclass
class World:
    anvil: Anvil
    lc: TrainingLedgerClient
    ledger_id: int
    client: LedgerClientAgent
    contributors: list[ContributorAgent]
    builders: list[BuilderAgent]
    devnet: Devnet
    config: ScenarioConfig
    store: Store
    first_block: int
    before: dict[str, int]
    events: Events

    @property
    def agents(self) -> list[Any]:
        return [*self.contributors, *self.builders, self.client]

    def run(self, until: Any = None, timeout_s: float = 120.0) -> None:
        self.devnet.run(until or (lambda: all(a.finished for a in self.agents)), timeout_s=timeout_s)

    def gas_paid(self) -> dict[str, int]:
        """Wei each account paid for gas since the world began, from every mined transaction's receipt."""
        w3 = self.lc.chain.w3
        paid: dict[str, int] = {}
        for n in range(self.first_block, w3.eth.block_number + 1):
            for tx_hash in w3.eth.get_block(n)["transactions"]:
                tx = w3.eth.get_transaction(tx_hash)
                r = w3.eth.get_transaction_receipt(tx_hash)
                paid[tx["from"]] = paid.get(tx["from"], 0) + int(r["gasUsed"]) * int(r["effectiveGasPrice"])
        return paid

    def balance_changes(self) -> dict[str, int]:
        w3 = self.lc.chain.w3
        return {a: w3.eth.get_balance(a) - b for a, b in self.before.items()}


def _world(
    anvil: Anvil,
    artifacts: dict[str, Artifact],
    tmp_path: Path,
    *,
    tamper: Any = None,
    withhold: str = "",
    steps: int = 4,
    reveal: bool = True,
) -> World:
    accounts = anvil.accounts
    deployer = ChainClient(anvil.rpc_url, accounts[9].private_key, artifacts=artifacts.values())
    deployment = deploy_all(deployer, artifacts=artifacts, write=False)
    lc = TrainingLedgerClient.from_deployment(deployer, deployment, artifacts)
    config = ScenarioConfig(chain_id=anvil.chain_id, **{**CONFIG, "steps": steps})  # type: ignore[arg-type]
    people = [a.address for a in accounts[1:5]]
    s = setup(config, people)
    store = Store(tmp_path / "public")
    events = Events()

    def chain(i: int) -> ChainClient:
        return ChainClient(anvil.rpc_url, accounts[i].private_key, artifacts=artifacts.values())

    everyone = [a.address for a in accounts[:8]] + [lc.address]
    before = {a: deployer.balance(a) for a in everyone}
    first_block = deployer.block_number() + 1
    client = LedgerClientAgent(
        "client",
        chain(0),
        lc,
        store,
        genesis=s.genesis,
        programs=s.programs.pair,
        initial_state=s.initial_state,
        validation=s.validation,
        observer=events,
        reveal=reveal,
    )
    lid = client.post(POOL, **WINDOWS)
    contributors = [
        ContributorAgent(
            p.kind,
            chain(1 + i),
            lc,
            store,
            lid,
            batches=lambda t, p=p: [p.data.batch(p.seed, t, config.batch)],
            observer=events,
            publish=p.kind != withhold,
        )
        for i, p in enumerate(s.contributors)
    ]
    builders = [
        BuilderAgent(f"builder{j}", chain(5 + j), lc, store, lid, observer=events, tamper=tamper if j == 2 else None)
        for j in range(3)
    ]
    devnet = Devnet(anvil.rpc_url, [*contributors, *builders, client], observer=events)
    return World(anvil, lc, lid, client, contributors, builders, devnet, config, store, first_block, before, events)


def _hashes(blocks: Sequence[Block]) -> list[bytes]:
    return [b.hash for b in blocks]


def test_the_ledger_runs_on_chain_and_pays_by_attribution_to_the_wei(
    anvil: Anvil, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    start = time.perf_counter()
    w = _world(anvil, artifacts, tmp_path)
    lc, lid = w.lc, w.ledger_id
    # Up to the moment the payout root is agreed by the quorum (2 of the 3 builders' equal posts; the third
    # posts in the same round of ticks).
    w.run(lambda: w.lc.ledger(lid).has_payout)
    view = lc.ledger(lid)
    assert not view.frozen and view.intervals_agreed == 2 and view.payout_votes >= view.params.quorum == 2
    tree = w.builders[0].tree
    assert tree is not None and view.payout_root == tree.root and tree.total == POOL - view.params.builder_fee
    assert all(b.tree is not None and b.tree.root == tree.root for b in w.builders)
    relayer = w.contributors[0].lc
    with pytest.raises(LedgerClaimsNotOpen):  # every builder may still object until the settle window ends
        relayer.claim(lid, tree.proof(0))

    # Up to the end of the settle window: the third builder's equal post counted, nobody has claimed yet.
    w.run(lambda: w.lc.ledger(lid).has_payout and w.client.now() >= view.settle_time)
    assert lc.ledger(lid).payout_votes == 3 and all(lc.payout_voted(lid, b.address) for b in w.builders)
    # A claim with a wrong proof is refused with the typed error (a wrong amount, then another leaf's siblings).
    good = tree.proof(0)
    with pytest.raises(LedgerPayoutMismatch, match="does not open the ledger's payout root"):
        relayer.claim(lid, dataclasses.replace(good, amount=good.amount + 1))
    with pytest.raises(LedgerPayoutMismatch):
        relayer.claim(lid, PayoutProof(0, good.account, good.amount, tree.proof(1).steps))

    w.run()
    view = lc.ledger(lid)
    assert all(a.finished for a in w.agents), w.events.lines[-20:]
    assert w.devnet.refused == []  # no honest agent sent a transaction the contract refused

    # The blocks on chain are the off-chain ledger's, hash for hash: the same genesis, contributions, programs.
    off = run(Store(tmp_path / "offchain"), w.config, [a.address for a in w.anvil.accounts[1:5]])
    chain_blocks = w.builders[0].follower.blocks
    assert off.genesis.model_id == view.params.genesis
    assert _hashes(chain_blocks) == _hashes(off.blocks)
    assert all(_hashes(b.follower.blocks) == _hashes(off.blocks) for b in [*w.builders, *w.contributors])
    # ... and every block replays from the store, from genesis, in this process.
    head = w.builders[1].head
    assert head is not None
    fetched, _ = replay_from_store(w.store, head)
    assert _hashes(fetched.blocks) == _hashes(off.blocks)

    # The payout shares are trainer.ledger's for the same blocks, to the wei.
    client_did = did_of(w.anvil.chain_id, w.anvil.accounts[0].address)
    shares = tree_shares(POOL, w.config.payout, off.blocks, client_did)
    fee = builder_fee(POOL, w.config.payout)
    assert view.params.builder_fee == fee and sum(shares.values()) == POOL - fee
    claimed = {e["account"]: int(e["amount"]) for e in lc.events("Claimed", {"id": lid}) if e["index"] != FEE_INDEX}
    assert {did_of(w.anvil.chain_id, a): v for a, v in claimed.items()} == shares
    assert {c.claimed_amount for c in w.contributors} == set(shares.values())
    fees = {e["account"]: int(e["amount"]) for e in lc.events("Claimed", {"id": lid}) if e["index"] == FEE_INDEX}
    # The fee is split between the two builders whose posts made the quorum (the first takes the remainder).
    voters = [e["builder"] for e in lc.events("PayoutVoted", {"id": lid})]
    assert sorted(fees) == sorted(voters[:2]) and sum(fees.values()) == fee
    assert fees[voters[0]] == fee // 2 + fee % 2 and fees[voters[1]] == fee // 2

    # Exact balances: each account's change is what it was paid minus the gas it paid; the contract holds nothing.
    gas = w.gas_paid()
    change = w.balance_changes()
    client = w.anvil.accounts[0].address
    assert change[client] == -POOL - gas[client]
    for c in w.contributors:
        assert change[c.address] == claimed[c.address] - gas[c.address], c.name
    for b in w.builders:
        assert change[b.address] == fees.get(b.address, 0) - gas[b.address], b.name
    assert change[lc.address] == 0 and lc.balance() == 0
    assert view.paid == POOL and not view.refunded
    assert all(lc.bond_of(lid, a.address) == 0 for a in [*w.contributors, *w.builders])
    assert all(lc.claimed(lid, i) for i in range(tree.leaf_count))

    # The client's views and local computations agree with the contract's.
    salt, bc, gc = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
    who = w.contributors[0].address
    assert lc.contract_commit_hash(lid, 3, who, bc, gc, salt) == commit_hash(lid, 3, who, bc, gc, salt)
    assert lc.step_window(lid, 2) == view.step_window(2) and lc.end_time(lid) == view.end_time
    assert lc.settle_end(lid) == view.settle_time and lc.max_pool() == 2**96 - 1 and lc.ledger_count() > lid
    assert lc.max_leaves() == 2**16 and lc.max_quorum() == 256 and lc.paid_out(lid) == POOL
    assert lc.commit_count(lid, 1) == 4 and lc.interval_votes(lid, 0) == 3 and lc.interval_root(lid, 1) is not None
    assert all(lc.is_builder(lid, b.address) for b in w.builders) and not lc.is_builder(lid, who)
    assert [r.contributor for r in lc.reveals(lid, 1)] == [c.address for c in w.contributors]
    with pytest.raises(LedgerUnknown, match="No ledger has this id"):
        lc.ledger(lc.ledger_count())
    assert time.perf_counter() - start < 120


def _misattribute(block: Block) -> Block:
    """Credit each contributor with another's first-order attribution (the poison one with the clean one's)."""
    return dataclasses.replace(block, phi=tuple(reversed(block.phi)))


def test_a_misattributing_builder_freezes_the_ledger_and_the_pool_returns_to_the_client(
    anvil: Anvil, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    w = _world(anvil, artifacts, tmp_path, tamper=_misattribute, withhold="copy")
    lc, lid = w.lc, w.ledger_id

    # A reveal that does not open the contributor's commit is refused (before its agent reveals the right one).
    w.run(lambda: lc.validation_commitment(lid, 1) is not None)
    clean = w.contributors[0]
    p = clean.pending[1]
    c = p.contribution
    assert lc.commit_of(lid, 1, clean.address) == commit_hash(
        lid, 1, clean.address, c.batch_commitment, c.gradient_commitment, p.salt
    )
    with pytest.raises(LedgerRevealMismatch, match="does not open the contributor's own commit"):
        clean.lc.reveal(lid, 1, c.batch_commitment, c.gradient_commitment, bytes(32))
    with pytest.raises(LedgerRevealMismatch):  # another's gradient under its own commit
        other = w.contributors[1].pending[1].contribution
        clean.lc.reveal(lid, 1, c.batch_commitment, other.gradient_commitment, p.salt)

    w.run()
    view = lc.ledger(lid)
    assert view.frozen and view.refunded and not view.has_payout
    frozen = lc.events("Frozen", {"id": lid})
    assert len(frozen) == 1 and frozen[0]["i"] == 0
    honest, cheat = w.builders[0].follower.blocks, w.builders[2].follower.blocks
    assert [b.model_root for b in honest] == [b.model_root for b in cheat]  # same model, other attribution
    assert _hashes(honest) != _hashes(cheat)
    # The contributor that revealed without publishing its data is refused as unavailable in every block.
    copy = did_of(anvil.chain_id, w.contributors[2].address)
    assert w.contributors[2].name == "copy"
    assert all(b.refused == ((copy, "unavailable"),) and copy not in b.contributors for b in honest)
    assert all(len(b.contributors) == 3 for b in honest)
    # Nobody can post a payout root on a frozen ledger.
    tree = payout_tree(view, w.builders[0].follower.genesis, honest, anvil.chain_id)
    with pytest.raises(LedgerFrozen):
        w.builders[0].lc.post_payout_root(lid, tree)

    # The pool went back to the client by refund; everyone else paid only gas; the contract holds nothing.
    refunds = lc.events("Refunded", {"id": lid})
    assert [int(e["amount"]) for e in refunds] == [POOL]
    gas = w.gas_paid()
    change = w.balance_changes()
    for a in [w.anvil.accounts[0].address, *(c.address for c in w.contributors), *(b.address for b in w.builders)]:
        assert change[a] == -gas[a], a
    assert change[lc.address] == 0 and lc.balance() == 0


def test_a_client_that_never_reveals_validation_gets_its_pool_back_and_nobody_loses_a_bond(
    anvil: Anvil, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    w = _world(anvil, artifacts, tmp_path, steps=2, reveal=False)
    lc, lid = w.lc, w.ledger_id
    # A follower is shared only by agents of its own ledger, and never by a tampering builder (whose blocks
    # would become everyone's).
    other = lid + 1  # another ledger id (refused before anything is read of it)
    shared = LedgerFollower(lc, w.store, lid)
    chain = ChainClient(anvil.rpc_url, anvil.accounts[8].private_key, artifacts=artifacts.values())
    with pytest.raises(LedgerChainError, match="a shared follower follows the same ledger"):
        BuilderAgent("stray", chain, lc, w.store, other, follower=shared)
    with pytest.raises(LedgerChainError, match="a tampering agent builds its own"):
        BuilderAgent("tamperer", chain, lc, w.store, lid, follower=shared, tamper=lambda b: b)
    assert BuilderAgent("ok", chain, lc, w.store, lid, follower=shared).follower is shared
    w.run()
    view = lc.ledger(lid)
    assert view.refunded and not view.has_payout and lc.commit_count(lid, 1) == 4
    assert lc.events("Revealed", {"id": lid}) == [] and lc.events("IntervalPosted", {"id": lid}) == []
    assert all(b.follower.stalled == "the client never revealed validation batch 1" for b in w.builders)
    gas, change = w.gas_paid(), w.balance_changes()
    for a in [w.anvil.accounts[0].address, *(c.address for c in w.contributors), *(b.address for b in w.builders)]:
        assert change[a] == -gas[a], a
    assert change[lc.address] == 0 and lc.balance() == 0
