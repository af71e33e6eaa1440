"""The dot phase through the agents: the demo's default cheat decided on chain, with no oracle at all.

`eager-kernels` trains with torch's own ATen kernels, so its bits differ from RepOps' from step 0; the first
node that differs is an `addmm` (the first layer) on inputs both sides agree on. With the ElementReferee
bound and no oracle agent registered, each game against an honest trainer must reach stage ELEMENT, isolate
one output element of that addmm there (header, chunk descent, chunk), hand it to the DotReferee (the
defender's `start` with its claim), be bisected over the exact integer prefix sums down to one term that the
contract recomputes, and end by `resolveElement` with the dot game's outcome: no question asked of the
oracle, the honest group paid, the cheater's bond slashed, every wei accounted for (docs/game.md 2.8).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offchain.agents.adversaries import CATALOGUE, cast
from offchain.agents.client import TaskOrder
from offchain.agents.scenario import Scenario, ScenarioResult
from offchain.agents.strategy import HONEST
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment, deploy_all
from offchain.contracts import dot_referee as dr
from offchain.contracts import element_referee as er
from offchain.contracts.dispute_game import Outcome, Stage
from offchain.contracts.task_market import TaskStatus
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

ETHER = 10**18
K = 3
CHEAT = "eager-kernels"


@pytest.fixture
def dot_deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False, element_referee=True)


@pytest.fixture(params=[False, True], ids=["honest-challenges", "honest-defends"])
def played(
    request: pytest.FixtureRequest,
    node: Anvil,
    dot_deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> Iterator[tuple[bool, Scenario, ScenarioResult, int]]:
    trainers, _ = cast(CATALOGUE[CHEAT], K, workload.config)
    scenario = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=dot_deployment,
        artifacts=artifacts,
        folder=tmp_path,
        order=TaskOrder(workload, reward=3 * ETHER, slots=K),
        trainers=trainers,
        oracles=[],  # no oracle agent: nobody could answer a question
        opener_defends=request.param,
    )
    p = scenario.protocol()
    market_before = int(p.market.chain.balance(p.market.address))
    result = scenario.run(timeout_s=300)
    assert result.crashes == []
    yield request.param, scenario, result, market_before


def test_eager_kernels_are_decided_by_the_dot_phase_with_no_oracle(
    played: tuple[bool, Scenario, ScenarioResult, int], workload: Workload
) -> None:
    honest_defends, scenario, result, market_before = played
    p = scenario.protocol()
    assert p.referee is not None
    dot = p.referee.dot()
    assert result.rpc_failures == 0 and result.refused == []
    names = list(scenario.trainers)
    honest = [n for n in names if scenario.trainer_roles[names.index(n)].strategy is HONEST]
    assert len(honest) == 2 and len(result.games) == 2
    for g in result.games:
        view = p.game.game_of(g.game_id)
        assert view.stage is Stage.RESOLVED and view.question_id == 0 and view.element_game != 0
        node = workload.program.nodes[view.position]
        assert node.op in ("aten.addmm.default", "aten.mm.default"), node.op
        rv = p.referee.game_of(view.element_game)
        assert rv.stage is er.Stage.RESOLVED and rv.op in (64, 65)
        did = dot.taken_over(view.element_game)
        assert did != 0, "the element never went to the dot phase"
        dv = dot.game_of(did)
        assert dv.stage is dr.Stage.RESOLVED and dv.element_game == view.element_game and dv.owner == p.referee.address
        assert int(dv.outcome) == int(rv.outcome) == int(g.outcome)
        winner = g.defender if g.outcome is Outcome.DEFENDER_WINS else g.challenger
        assert winner in honest and (g.defender in honest) is honest_defends, g
        # Decided by the contract's own arithmetic: a term recomputed, or an exponent refuted, or the claim alone.
        computed = dot._logs("TermComputed", {"gameId": did}) + dot._logs("Refuted", {"gameId": did})
        assert computed, "the dot game ended without the contract deciding it (a timeout?)"
        # The winner's dot moves are metered into the element game's meter, which the market repays.
        side = int(view.side_of(scenario.keys[winner].address))
        element_gas = p.referee.meter_of(view.element_game)
        assert element_gas[side] >= dot.meter_of(did)[side] > 0
        # ... and repaid: the game's metered moves at min(price paid, cap), the element and dot moves at the cap,
        # within the task's compensation bound, which the honest side's whole game stays below.
        (gas, spent), cap = p.game.meter_of(g.game_id), p.market.spec_of(result.task_id).gas_price_cap
        owed = min(spent[side], gas[side] * cap) + element_gas[side] * cap
        bound = p.market.compensation(p.market.spec_of(result.task_id))
        paid = [int(e["amount"]) for e in p.market._logs("CompensationPaid", {"taskId": result.task_id})
                if int(e["gameId"]) == g.game_id]  # fmt: skip
        assert paid == [owed] and owed < bound, (paid, owed, bound)
    assert not any(e.kind == "tx" and e.detail.startswith("RecomputeOracle.") for e in result.journal)
    assert p.oracle._logs("QuestionAsked") == []
    assert not any(e.kind == "tx" and e.detail.endswith(".timeout") for e in result.journal)
    market = p.market
    assert result.status is TaskStatus.FINALIZED
    assert result.eliminated == {n: n not in honest for n in names}
    assert result.net("cheater") <= -result.bond
    assert int(market.chain.balance(market.address)) == market.totals()
    market_after = int(market.chain.balance(market.address))
    assert sum(result.net(n) + result.fees[n] for n in scenario.keys) == market_before - market_after
