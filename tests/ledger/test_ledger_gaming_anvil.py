"""Gaming the training ledger on anvil (docs/ledger.md, section 7): what a contributor gains by sending
zeros, flipping its gradient's signs, copying another's revealed gradient, poisoning its data, or
splitting into two identities with its data divided among them. Three ledgers of 4 steps on one chain,
with the same genesis: an honest baseline (clean with two batches a step, noisy, poison), the same with
clean split into two identities of one batch each, and the strategies beside clean, noisy and poison.
The figures printed (`-s`) are the ones in docs/ledger.md."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest

from offchain.agents.devnet import Devnet
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import deploy_all
from offchain.contracts.training_ledger import FEE_INDEX, TrainingLedgerClient
from offchain.ledger.agents import BuilderAgent, ContributorAgent, LedgerClientAgent
from offchain.ledger.published import replay_from_store
from offchain.ledger.scenario import ScenarioConfig, Setup, setup, strategy_gradient
from offchain.store import Store
from trainer.ledger.block import Block, Genesis
from trainer.ledger.did import did_of
from trainer.ledger.graph import cumulative
from trainer.ledger.ledger import NOT_RECOMPUTED, NOT_REVEALED
from trainer.ledger.payout import split
from trainer.ledger.shares import batch_weights, forfeited

pytestmark = pytest.mark.anvil

POOL = 10**18
STEPS = 4
# The genesis' contributor slots (max_contributors = 7); every ledger below uses some of them.
KINDS = ("clean", "clean", "noisy", "poison", "zeros", "flipped", "copied")
BUILDERS = (8, 9)
DEPLOYER = 12


class _Quiet:
    def event(self, agent: str, message: str) -> None:
        pass

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass


@dataclass
class Outcome:
    blocks: list[Block]
    payout: dict[str, int]  # agent name -> wei claimed
    phi: dict[str, Fraction]  # agent name -> Σ_t φ
    did: dict[str, str]
    batches: dict[str, int]
    replayed: list[Block] | None = None  # the blocks a replay from the builders' published head rebuilt

    def verified_only(self, name: str) -> int:
        """What `name` gets from the verified-work part alone (its share of accepted batches)."""
        part = POOL * 2000 // 10_000  # the default rule's verified_bps
        return split(part, batch_weights(self.blocks))[self.did[name]]


@pytest.fixture(scope="module")
def chain(artifacts: dict[str, Artifact]) -> Any:
    with Anvil(accounts=13) as node:
        deployer = ChainClient(node.rpc_url, node.accounts[DEPLOYER].private_key, artifacts=artifacts.values())
        lc = TrainingLedgerClient.from_deployment(deployer, deploy_all(deployer, artifacts=artifacts, write=False))
        config = ScenarioConfig(steps=STEPS, batch=16, validation_batch=32, shapley_every=0, chain_id=node.chain_id,
                                kinds=KINDS)  # fmt: skip
        s = setup(config, [a.address for a in node.accounts[1:8]])
        yield node, artifacts, lc, config, s


def _ledger(
    chain: Any,
    tmp: Any,
    people: Sequence[tuple[str, int, Callable[[int], list[Mapping[str, Any]]], str | None]],
    genesis: Genesis | None = None,
    silent: int | None = None,
    replay: bool = False,
) -> Outcome:
    """Post a ledger and run it with `people` (name, account, batches of step t, strategy) and 2 builders
    (the setup's genesis, or `genesis`: the same programs under other options). Account `silent`, if
    given, bonds as a contributor, commits to step 1 and is never heard from again."""
    node, artifacts, lc, _, s = chain
    s: Setup
    store = Store(tmp / "public")

    def client_of(i: int) -> ChainClient:
        return ChainClient(node.rpc_url, node.accounts[i].private_key, artifacts=artifacts.values())

    quiet = _Quiet()
    client = LedgerClientAgent("client", client_of(0), lc, store, validation=s.validation, genesis=genesis or s.genesis,
                               programs=s.programs.pair, initial_state=s.initial_state, observer=quiet)  # fmt: skip
    lid = client.post(POOL, interval_steps=2, quorum=2)
    if silent is not None:
        quiet_lc = TrainingLedgerClient(client_of(silent), lc.address, artifacts["TrainingLedger"])
        quiet_lc.bond(lid, builder=False)
        quiet_lc.commit(lid, 1, b"\x5a" * 32)
    agents: dict[str, ContributorAgent] = {}
    for name, account, batches, _ in people:
        agents[name] = ContributorAgent(name, client_of(account), lc, store, lid, batches=batches, observer=quiet)
    clean_did = agents["clean"].did if "clean" in agents else None
    for name, _, _, strategy in people:
        if strategy is not None:
            f = agents[name].follower
            agents[name].gradient = strategy_gradient(strategy, lambda t, f=f: f.revealed_gradient(t - 1, clean_did))
    builders = [BuilderAgent(f"b{j}", client_of(j), lc, store, lid, observer=quiet) for j in BUILDERS]
    everyone: list[Any] = [*agents.values(), *builders, client]
    devnet = Devnet(node.rpc_url, everyone, observer=quiet)
    devnet.run(lambda: all(a.finished for a in everyone), timeout_s=300)
    assert devnet.refused == [] and not lc.ledger(lid).frozen
    claims = {e["account"]: int(e["amount"]) for e in lc.events("Claimed", {"id": lid}) if e["index"] != FEE_INDEX}
    blocks = builders[0].follower.blocks
    totals = {d: ys[-1] for d, ys in cumulative(blocks).items()}
    batches = batch_weights(blocks)
    replayed = None
    if replay:  # a third party rebuilds every block from the store alone (batches, gradients, step records)
        fetched, _ = replay_from_store(store, builders[0].head)
        replayed = fetched.blocks
    return Outcome(
        blocks,
        {n: claims.get(a.address, 0) for n, a in agents.items()},
        {n: totals.get(a.did, Fraction(0)) for n, a in agents.items()},
        {n: a.did for n, a in agents.items()},
        {n: batches.get(a.did, 0) for n, a in agents.items()},
        replayed,
    )


def _people(s: Setup, split_clean: bool | None) -> list[tuple[str, int, Any, str | None]]:
    """clean (two batches a step, or split in two identities of one; None: one batch), noisy, poison."""
    clean, noisy, poison = s.contributors[0], s.contributors[2], s.contributors[3]

    def draw(p: Any, i: int) -> Callable[[int], list[Any]]:
        return lambda t: [p.data.batch(p.seed, 2 * t + i, 16)]

    if split_clean is None:
        out = [("clean", 1, draw(clean, 0), None)]
    elif split_clean:
        out = [("clean-a", 1, draw(clean, 0), None), ("clean-b", 2, draw(clean, 1), None)]
    else:
        out = [("clean", 1, lambda t: [*draw(clean, 0)(t), *draw(clean, 1)(t)], None)]
    return [*out, ("noisy", 3, draw(noisy, 0), None), ("poison", 4, draw(poison, 0), None)]


def test_gaming_gains_on_chain(chain: Any, tmp_path: Any) -> None:
    s: Setup = chain[4]
    base = _ledger(chain, tmp_path / "base", _people(s, False))
    halves = _ledger(chain, tmp_path / "split", _people(s, True))
    strategies = [(k, 5 + i, (lambda p: lambda t: [p.data.batch(p.seed, 2 * t, 16)])(s.contributors[4 + i]), k)
                  for i, k in enumerate(("zeros", "flipped", "copied"))]  # fmt: skip
    games = _ledger(chain, tmp_path / "games", [*_people(s, None), *strategies])

    # Splitting gains nothing beyond rounding: the two identities' payouts add up to the unsplit one.
    unsplit, together = base.payout["clean"], halves.payout["clean-a"] + halves.payout["clean-b"]
    gain = together - unsplit
    assert halves.batches["clean-a"] + halves.batches["clean-b"] == base.batches["clean"] == 2 * STEPS
    assert abs(gain) <= unsplit // 1000  # the documented bound: below 10^-3 of the share
    phi_gap = halves.phi["clean-a"] + halves.phi["clean-b"] - base.phi["clean"]

    # Zeros: φ = 0 exactly at every step, paid the verified-work share only.
    z = games.did["zeros"]
    assert all(n == 0 for b in games.blocks for d, n in zip(b.contributors, b.phi, strict=True) if d == z)
    assert games.phi["zeros"] == 0 and games.payout["zeros"] == games.verified_only("zeros") > 0
    # Flipped signs: Σφ < 0, no attribution share.
    assert games.phi["flipped"] < 0 and games.payout["flipped"] == games.verified_only("flipped")
    # Poisoned data earns less than clean data (one batch a step each).
    assert games.payout["poison"] < games.payout["clean"]
    # The copied gradient is the clean contributor's of the step before, hash for hash (zeros at step 1).
    for prev, b in zip(games.blocks, games.blocks[1:], strict=False):
        mine = b.gradient_commitments[b.contributors.index(games.did["copied"])]
        assert mine == prev.gradient_commitments[prev.contributors.index(games.did["clean"])]

    figures = {
        "split": {"unsplit_wei": unsplit, "split_wei": together, "gain_wei": gain,
                  "gain_of_share": gain / unsplit, "phi_gap": float(phi_gap), "phi_unsplit": float(base.phi["clean"])},
        "games": {n: {"sum_phi": float(games.phi[n]), "payout_wei": games.payout[n], "share": games.payout[n] / POOL,
                      "verified_only_wei": games.verified_only(n)} for n in games.payout},
        "base": {n: {"sum_phi": float(base.phi[n]), "payout_wei": base.payout[n]} for n in base.payout},
    }  # fmt: skip
    print(json.dumps(figures, indent=2))


def test_recomputation_makes_the_strategies_pay_nothing_on_chain(chain: Any, tmp_path: Any) -> None:
    """The same strategies under a genesis whose builders recompute every contribution (recompute_every = 1):
    zeros, flipped and copied gradients are not the program's output on their own batches, so the builders'
    followers refuse them at step 1 and they claim nothing, nor does a contributor that committed and never
    revealed (the followers read its commit from the chain); the honest contributors share the pool."""
    s: Setup = chain[4]
    strict = dataclasses.replace(s.genesis, recompute_every=1)
    strategies = [(k, 5 + i, (lambda p: lambda t: [p.data.batch(p.seed, 2 * t, 16)])(s.contributors[4 + i]), k)
                  for i, k in enumerate(("zeros", "flipped", "copied"))]  # fmt: skip
    games = _ledger(chain, tmp_path / "strict", [*_people(s, None), *strategies], strict, silent=11, replay=True)
    cheats = {games.did[k] for k in ("zeros", "flipped", "copied")}
    quiet = did_of(chain[0].chain_id, chain[0].accounts[11].address)
    assert dict(games.blocks[0].refused) == {**dict.fromkeys(cheats, NOT_RECOMPUTED), quiet: NOT_REVEALED}
    assert forfeited(games.blocks) == {*cheats, quiet}
    assert [b.hash for b in games.replayed or []] == [b.hash for b in games.blocks]  # replay recomputes alike
    for k in ("zeros", "flipped", "copied"):
        assert games.payout[k] == 0 and games.batches[k] == 0, k
    honest = {k: games.payout[k] for k in ("clean", "noisy", "poison")}
    assert sum(honest.values()) == POOL - POOL * 1000 // 10_000  # everything but the builders' fee
    assert honest["clean"] > honest["noisy"] > honest["poison"] > 0
    print(json.dumps({"strict": {n: {"payout_wei": w, "share": w / POOL} for n, w in games.payout.items()}}, indent=2))
