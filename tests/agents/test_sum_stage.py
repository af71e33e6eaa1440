"""The sum phase through the agents: a one-ulp error in a sum decided on chain, with no oracle at all.

The cheater trains with RepOps, except that at one step every `sum.dim_IntList` output's largest element is one ulp
off (the loss's sum, then the bias gradients', so its state differs); the first node that differs is that step's
first sum, on inputs both sides agree on. With the ElementReferee bound and no oracle agent registered, each game
against an honest trainer must reach stage ELEMENT, isolate the element there (header, chunk descent, chunk), hand
it to a SumReferee game (the defender's `DotReferee.startSum`), where the defender claims the slice's largest class
with a witness, S and the prefix sums, the bisection walks to one term the contract recomputes; then `settleSum`
hands the outcome back and `resolveElement` ends the dispute game: no question asked of the oracle, the honest group
paid, the cheater's bond slashed, every wei accounted for (docs/game.md 2.10).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offchain.agents.adversaries import Adversary, DeviatingStrategy, cast, late_step
from offchain.agents.client import TaskOrder
from offchain.agents.scenario import Scenario, ScenarioResult
from offchain.agents.strategy import HONEST
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment, deploy_all
from offchain.contracts import element_referee as er
from offchain.contracts import sum_referee as sr
from offchain.contracts.dispute_game import Outcome, Stage
from offchain.contracts.task_market import TaskStatus
from offchain.game.element_table import SUM_OPS
from offchain.game.witness import Deviation, DeviationKind
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

ETHER = 10**18
K = 3
SUM = "aten.sum.dim_IntList"
# Not in the catalogue (its own test, here): the cheater every sum of one step is one ulp off.
ONE_ULP_SUM = Adversary(
    "one-ulp-sum",
    "at one step every sum's largest output element is one ulp off, the rest follows from it",
    lambda c: DeviatingStrategy("one-ulp-sum", Deviation(late_step(c), DeviationKind.KERNEL, SUM, ulps=1)),
    decided_by="element (on chain, by the sum phase)",
)


def _fp32(program: Any, node: Any) -> bool:
    return str(program.ref_type(node.inputs[0]).dtype) == "torch.float32"


@pytest.fixture
def sum_deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False, element_referee=True)


@pytest.fixture(params=[False, True], ids=["honest-challenges", "honest-defends"])
def played(
    request: pytest.FixtureRequest,
    node: Anvil,
    sum_deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> Iterator[tuple[bool, Scenario, ScenarioResult, int]]:
    trainers, _ = cast(ONE_ULP_SUM, K, workload.config)
    scenario = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=sum_deployment,
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


def test_a_one_ulp_sum_is_decided_by_the_sum_phase_with_no_oracle(
    played: tuple[bool, Scenario, ScenarioResult, int], workload: Workload
) -> None:
    honest_defends, scenario, result, market_before = played
    p = scenario.protocol()
    assert p.referee is not None
    dot = p.referee.dot()
    summer = dot.sum()
    assert summer.address == scenario.deployment.contracts["SumReferee"].address
    assert result.rpc_failures == 0 and result.refused == []
    names = list(scenario.trainers)
    honest = [n for n in names if scenario.trainer_roles[names.index(n)].strategy is HONEST]
    assert len(honest) == 2 and len(result.games) == 2
    for g in result.games:
        view = p.game.game_of(g.game_id)
        assert view.stage is Stage.RESOLVED and view.question_id == 0 and view.element_game != 0
        node = workload.program.nodes[view.position]
        assert node.op == SUM, node.op
        program = workload.program
        first = next(i for i, n in enumerate(program.nodes) if n.op == SUM and _fp32(program, n))
        assert view.position == first, "the step's first fp32 sum is its first wrong node (an int64 count is not moved)"
        rv = p.referee.game_of(view.element_game)
        assert rv.stage is er.Stage.RESOLVED and rv.op in SUM_OPS
        assert dot.taken_over(view.element_game) == 0 and dot.traced_by(view.element_game) == 0
        sid = dot.summed_by(view.element_game)
        assert sid != 0, "the element never went to the sum game"
        sv = summer.game_of(sid)
        assert sv.stage is sr.Stage.RESOLVED and sv.owner == dot.address and sv.variant == rv.op - 112
        assert int(sv.outcome) == int(rv.outcome) == int(g.outcome)
        winner = g.defender if g.outcome is Outcome.DEFENDER_WINS else g.challenger
        assert winner in honest and (g.defender in honest) is honest_defends, g
        # Decided by the contract's own arithmetic: one term of the slice recomputed on the claimed grid. The liar's
        # prefix sums are the true ones but for P(L), so the bisection ends at the last term, whichever side it is.
        (term,) = summer._logs("TermComputed", {"gameId": sid})
        assert int(term["at"]) == sv.length - 1 and sv.length > 1
        assert (int(term["q"]) == int(term["claimed"])) is honest_defends, term
        assert summer._logs("Claimed", {"gameId": sid}) and summer._logs("Picked", {"gameId": sid})
        # The winner's sum moves (and the defender's startSum) are metered into the element game's meter, which the
        # market repays.
        side = int(view.side_of(scenario.keys[winner].address))
        element_gas = p.referee.meter_of(view.element_game)
        assert element_gas[side] >= summer.meter_of(sid)[side] > 0
        (gas, spent), cap = p.game.meter_of(g.game_id), p.market.spec_of(result.task_id).gas_price_cap
        owed = min(spent[side], gas[side] * cap) + element_gas[side] * cap
        bound = p.market.compensation(p.market.spec_of(result.task_id))
        paid = [int(e["amount"]) for e in p.market._logs("CompensationPaid", {"taskId": result.task_id})
                if int(e["gameId"]) == g.game_id]  # fmt: skip
        assert paid == [owed] and owed < bound, (paid, owed, bound)
    assert any(e.kind == "tx" and e.detail.endswith(".startSum") for e in result.journal)
    assert any(e.kind == "tx" and e.detail.endswith(".settleSum") for e in result.journal)
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
