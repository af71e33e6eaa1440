"""The trace game through the agents: a one-ulp error in a transcendental function decided on chain, with no
oracle at all.

`one-ulp-exp` trains with RepOps, except that at one step the largest element of the exp node's output is one
ulp off; the first node that differs is that exp, on inputs both sides agree on. With the ElementReferee
bound and no oracle agent registered, each game against an honest trainer must reach stage ELEMENT, isolate
the element there (header, chunk descent, chunk), hand it to a TraceReferee game (the defender's
`DotReferee.startTrace`, opening the input element), where the defender posts exp's binary64 trace and the
challenger names the first wrong step, which the contract recomputes; then `settleTrace` hands the outcome
back and `resolveElement` ends the dispute game: no question asked of the oracle, the honest group paid, the
cheater's bond slashed, every wei accounted for (docs/game.md 2.9).
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
from offchain.contracts import element_referee as er
from offchain.contracts import trace_referee as tr
from offchain.contracts.dispute_game import Outcome, Stage
from offchain.contracts.task_market import TaskStatus
from trainer.repops import programs
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

ETHER = 10**18
K = 3
CHEAT = "one-ulp-exp"


@pytest.fixture
def trace_deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False, element_referee=True)


@pytest.fixture(params=[False, True], ids=["honest-challenges", "honest-defends"])
def played(
    request: pytest.FixtureRequest,
    node: Anvil,
    trace_deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> Iterator[tuple[bool, Scenario, ScenarioResult, int]]:
    trainers, _ = cast(CATALOGUE[CHEAT], K, workload.config)
    scenario = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=trace_deployment,
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


def test_a_one_ulp_exp_is_decided_by_the_trace_game_with_no_oracle(
    played: tuple[bool, Scenario, ScenarioResult, int], workload: Workload
) -> None:
    honest_defends, scenario, result, market_before = played
    p = scenario.protocol()
    assert p.referee is not None
    dot = p.referee.dot()
    trace = dot.trace()
    assert result.rpc_failures == 0 and result.refused == []
    names = list(scenario.trainers)
    honest = [n for n in names if scenario.trainer_roles[names.index(n)].strategy is HONEST]
    assert len(honest) == 2 and len(result.games) == 2
    for g in result.games:
        view = p.game.game_of(g.game_id)
        assert view.stage is Stage.RESOLVED and view.question_id == 0 and view.element_game != 0
        node = workload.program.nodes[view.position]
        assert node.op == "aten.exp.default", node.op
        rv = p.referee.game_of(view.element_game)
        assert rv.stage is er.Stage.RESOLVED and rv.op == 66  # ElementReferee.EXP
        assert dot.taken_over(view.element_game) == 0
        tid = dot.traced_by(view.element_game)
        assert tid != 0, "the element never went to the trace game"
        tv = trace.game_of(tid)
        assert tv.stage is tr.Stage.RESOLVED and tv.owner == dot.address and tv.fn == 0  # exp
        assert int(tv.outcome) == int(rv.outcome) == int(g.outcome)
        winner = g.defender if g.outcome is Outcome.DEFENDER_WINS else g.challenger
        assert winner in honest and (g.defender in honest) is honest_defends, g
        # Decided by the contract's own arithmetic: one step of exp's program recomputed, from the trace the
        # defender posted, whose last step is the defender's value and whose input is the agreed element.
        (step,) = trace._logs("StepRecomputed", {"gameId": tid})
        posted = programs.unpack(trace.claimed_trace(tid))
        assert posted == programs.run("exp", tv.x, {len(posted) - 1: tv.values[0]})
        assert (int(step["computed"]) == int(step["posted"])) is honest_defends, step
        if not honest_defends:  # the liar's wrong step is its last: the one-ulp value it claimed
            assert int(step["step"]) == len(posted) - 1 and int(step["posted"]) == tv.values[0]
        # The winner's trace moves (and the defender's startTrace) are metered into the element game's meter,
        # which the market repays.
        side = int(view.side_of(scenario.keys[winner].address))
        element_gas = p.referee.meter_of(view.element_game)
        assert element_gas[side] >= trace.meter_of(tid)[side] > 0
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
