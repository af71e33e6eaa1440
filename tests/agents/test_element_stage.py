"""Stage ELEMENT through the agents: a cheater whose first wrong node is in the element table, decided on chain.

The deployment binds the ElementReferee (`deploy_all(element_referee=True)`) and the scenario has no
oracle agent at all (the RecomputeOracle contract is deployed, since the market reads its fee, but nobody
registers with it). `copy-then-diverge` trains honestly up to the last step, whose `aten.sub.Tensor`
kernel is off by 1e-3: the first node whose outputs differ is a tensor-tensor sub on agreed inputs, which
the element table covers. Each game against an honest trainer must reach stage ELEMENT, be played there
by both trainer agents (header, chunk descent, chunk, the defender's input openings), and end by
`resolveElement` with the referee's outcome; no question is ever asked of the oracle; the honest group is
paid, the cheater loses its bond, and every wei is accounted for.

The `scalar-mul-*` runs play the same with a cheater whose mul kernel is off only in its calls with a Python
number: the first differing node is GELU's backward `mul.Tensor(x, 0.7071067811865476)`, keyed by the table's
Tensor-Scalar entry, whose defender first opens the node's argument bytes (stage ARGS) so that the referee
reads the number on chain. The `permute-*` and `view-*` runs play a cheater whose permute (view) kernel is off: the
first differing node is the forward's `permute(fc1.weight, [1, 0])` (the loss head's `view`), which the referee
decides by opening the input element the data movement reads (the dims read from the arguments in stage ARGS).
`full-like-honest-challenges`: a cheater whose full_like kernel is off, decided by the fill value read on chain.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from offchain.agents.adversaries import CATALOGUE, DeviatingStrategy, cast, last_step
from offchain.agents.base import Agent, AgentCrashed
from offchain.agents.client import TaskOrder
from offchain.agents.scenario import Scenario, ScenarioResult
from offchain.agents.strategy import HONEST
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.deploy import Deployment, deploy_all
from offchain.contracts import element_referee as er
from offchain.contracts.dispute_game import GameView, Outcome, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from offchain.game.element_table import (
    CONST_OPS,
    LAYOUT_OPS,
    PERMUTE,
    const_arg,
    element_op,
    packed_dims,
    permute_dims,
    scalar_arg,
)
from offchain.game.witness import Deviation, DeviationKind
from trainer.program.program import encode_args
from trainer.runner.runner import RunConfig
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

ETHER = 10**18
K = 3
CHEAT = "copy-then-diverge"


@pytest.fixture
def referee_deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False, element_referee=True)


def f64_bits(x: float) -> int:
    return int.from_bytes(struct.pack(">d", x), "big")


class Stages:
    """After every devnet round: the last stage each game was seen in before it resolved."""

    def __init__(self, protocol: Protocol) -> None:
        self.game = protocol.game
        self.last: dict[int, Stage] = {}

    def __call__(self) -> None:
        for game_id in range(1, self.game.game_count() + 1):
            stage = self.game.game_of(game_id).stage
            if stage is not Stage.RESOLVED:
                self.last[game_id] = stage


def crash_after(agent: Agent, call: str, nth: int) -> list[str]:
    """Kill `agent` right after its `nth` mined `ElementReferee.<call>`, before it wrote anything about it."""
    killed: list[str] = []
    seen = 0

    def hook(receipt: Receipt, what: str) -> None:
        nonlocal seen
        if what == call:
            seen += 1
            if seen == nth:
                killed.append(receipt.tx_hash)
                raise AgentCrashed(f"killed right after {what} ({receipt.tx_hash}) was mined")

    agent.chain.crash_after = hook  # type: ignore[attr-defined]
    return killed


class SilentInElement(DeviatingStrategy):
    """copy-then-diverge's cheat, and it makes no move once its game reaches stage ELEMENT."""

    def will_move(self, game_id: int, view: GameView, moves_made: int) -> bool:
        return view.stage is not Stage.ELEMENT


@dataclass(frozen=True)
class Run:
    """One way to play the scenario."""

    name: str
    honest_defends: bool = False  # the trainer that opens a game defends in it (the honest ones open first)
    crash: tuple[str, str] | None = None  # (party, ElementReferee function): killed right after its first one
    silent: bool = False  # the cheater stops moving in stage ELEMENT: the honest side times it out there
    scalar: bool = False  # the cheat: a Tensor-Scalar mul (`mul.Tensor(x, 0.7071...)`), not copy-then-diverge's sub
    target: str = ""  # the cheat: this op's kernel is off on the last step, not copy-then-diverge's sub

    def __str__(self) -> str:
        return self.name


RUNS = [
    Run("honest-challenges"),
    Run("honest-defends", honest_defends=True),
    Run("honest-challenger-killed-after-its-header", crash=("honest-1", "openHeaders")),
    Run("cheating-defender-killed-after-its-chunk", crash=("cheater", "openChunk")),
    Run("cheating-defender-silent", silent=True),
    Run("cheating-challenger-silent", honest_defends=True, silent=True),
    # The first wrong node is a Tensor-Scalar mul (GELU's backward, `mul.Tensor(x, 0.7071067811865476)`):
    # the defender opens its argument bytes (stage ARGS) and the referee computes x * f32(0.7071...).
    Run("scalar-mul-honest-challenges", scalar=True),
    Run("scalar-mul-honest-defends", honest_defends=True, scalar=True),
    # Data movement: the referee opens the input element a permute (view) puts at the first differing position.
    Run("permute-honest-challenges", target="aten.permute.default"),
    Run("view-honest-defends", honest_defends=True, target="aten.view.default"),
    # Creation: the referee reads the fill value of the first full_like (the loss's backward seed) and rounds it.
    Run("full-like-honest-challenges", target="aten.full_like.default"),
]

# The element phase of a Tensor-Scalar node: the cheater's mul kernel is off by 1e-3 on the last step, only in
# its calls with a Python number (the tensor-tensor muls before them stay right).
SCALAR_MUL = "aten.mul.Tensor"


def scalar_cheat(config: RunConfig) -> DeviatingStrategy:
    return DeviatingStrategy(
        "faulty-scalar-mul", Deviation(last_step(config), DeviationKind.KERNEL, SCALAR_MUL, scalar_operand=True)
    )


@pytest.fixture(params=RUNS, ids=str)
def played(
    request: pytest.FixtureRequest,
    node: Anvil,
    referee_deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> Iterator[tuple[Run, Scenario, ScenarioResult, Stages, int]]:
    """The scenario, played to the end as `Run` says."""
    run: Run = request.param
    trainers, _ = cast(CATALOGUE[CHEAT], K, workload.config)
    if run.scalar:
        trainers[-1] = dataclasses.replace(trainers[-1], strategy=scalar_cheat(workload.config))
    if run.target:
        wrong = Deviation(last_step(workload.config), DeviationKind.KERNEL, run.target)
        trainers[-1] = dataclasses.replace(trainers[-1], strategy=DeviatingStrategy("faulty-" + run.target, wrong))
    if run.silent:
        cheat = trainers[-1].strategy
        assert isinstance(cheat, DeviatingStrategy)
        trainers[-1] = dataclasses.replace(trainers[-1], strategy=SilentInElement(CHEAT, cheat.deviation))
    scenario = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=referee_deployment,
        artifacts=artifacts,
        folder=tmp_path,
        order=TaskOrder(workload, reward=3 * ETHER, slots=K),
        trainers=trainers,
        oracles=[],  # no oracle agent: nobody could answer a question
        opener_defends=run.honest_defends,
    )
    killed: list[str] = []
    if run.crash is not None:
        who, call = run.crash
        killed = crash_after(scenario.trainers[who], call, 1)
    p = scenario.protocol()
    market_before = int(p.market.chain.balance(p.market.address))
    stages = Stages(p)
    result = scenario.run(timeout_s=300, on_round=stages)
    if run.crash is not None:
        who, call = run.crash
        assert result.crashes == [who] and len(killed) == 1
        # The killing move is on chain, journaled late by the fresh agent, and never sent again.
        fresh = scenario.trainers[who]
        sent = [a for a in fresh.db.actions() if a.kind == "tx" and a.detail == f"ElementReferee.{call}"]
        games = [g for g in result.games if who in (g.defender, g.challenger)]
        assert [a.tx for a in sent].count(killed[0]) == 1 and len(sent) == len(games), sent
        notes = [a.detail for a in fresh.db.actions() if a.kind == "note"]
        assert "restarted from its records" in notes and not any("refused" in n for n in notes), notes
    else:
        assert result.crashes == []
    yield run, scenario, result, stages, market_before


def test_a_covered_node_is_decided_in_stage_element_with_no_oracle(
    played: tuple[Run, Scenario, ScenarioResult, Stages, int], workload: Workload
) -> None:
    run, scenario, result, stages, market_before = played
    p = scenario.protocol()
    assert p.referee is not None and p.game.referee() == p.referee.address
    assert result.rpc_failures == 0 and result.refused == []
    names = list(scenario.trainers)
    honest = [n for n in names if scenario.trainer_roles[names.index(n)].strategy is HONEST]
    cheaters = [n for n in names if n not in honest]
    assert len(honest) == 2 and cheaters == ["cheater"]

    # Two games (the cheater against each honest trainer), each decided by its element game.
    assert len(result.games) == len(honest)
    program = workload.program
    for g in result.games:
        assert stages.last[g.game_id] is Stage.ELEMENT, f"game {g.game_id} ended in {stages.last[g.game_id].name}"
        view = p.game.game_of(g.game_id)
        assert view.question_id == 0 and view.element_game != 0
        node = program.nodes[view.position]
        if run.scalar:  # the first Tensor-Scalar mul: its number read on chain from the node's argument bytes
            assert node.op == SCALAR_MUL and len(node.inputs) == 1, (node.op, node.args)
            assert p.referee.game_of(view.element_game).op == 48  # ElementReferee.MUL_SCALAR
            (opened,) = p.referee._logs("ArgsOpened", {"gameId": view.element_game})
            assert opened["scalar"] == scalar_arg(48, encode_args(node.args)) == f64_bits(dict(node.args)["other"])
        elif run.target:  # the first node the cheater's data movement changes, keyed by its operator alone
            args = encode_args(node.args)
            code = p.referee.game_of(view.element_game).op
            assert code == element_op(node.op, args, len(node.inputs)) and code in LAYOUT_OPS | CONST_OPS, (node, code)
            assert node.op == run.target
            opened = [e["scalar"] for e in p.referee._logs("ArgsOpened", {"gameId": view.element_game})]
            if code == PERMUTE:  # its dims read on chain from the argument bytes
                dims = permute_dims(args)
                assert dims is not None and opened == [packed_dims(dims)]
            elif code in CONST_OPS:  # its fill value read on chain
                assert opened == [const_arg(code, args)] and opened[0] is not None
            else:
                assert opened == []
        else:
            assert node.op == "aten.sub.Tensor", node.op  # the first node the cheater's faulty sub kernel changes
        rv = p.referee.game_of(view.element_game)
        assert rv.stage is er.Stage.RESOLVED and rv.owner == p.game.address
        assert rv.players == view.players
        winner = g.defender if g.outcome is Outcome.DEFENDER_WINS else g.challenger
        assert g.outcome in (Outcome.DEFENDER_WINS, Outcome.CHALLENGER_WINS) and winner in honest, g
        assert (g.defender in honest) is run.honest_defends, g
        assert int(rv.outcome) == int(g.outcome), "the game's outcome is not its element game's"
        computed = p.referee._logs("ElementComputed", {"gameId": view.element_game})
        if run.silent:  # the cheater never moved there: its clock ran out on the referee
            assert computed == [] and rv.to_move == int(view.side_of(scenario.keys["cheater"].address))
        else:
            assert rv.values[0] != rv.values[1]
            assert len(computed) == 1, "the contract did not compute the element"
            honest_value = rv.values[0] if g.defender in honest else rv.values[1]
            assert int(computed[0]["value"]) == honest_value
        assert g.step == workload.config.steps - 1  # the last step, where the cheater's sub goes wrong
        # The winner's compensation repays its element moves too (metered on the referee, at the gas price cap).
        side = int(view.side_of(scenario.keys[winner].address))
        (gas, spent), element_gas = p.game.meter_of(g.game_id), p.referee.meter_of(view.element_game)
        if not run.silent:  # (a silent cheater's opponent may never get a turn there)
            assert element_gas[side] > 0, "the winner's element moves are metered"
        cap = p.market.spec_of(result.task_id).gas_price_cap
        owed = min(spent[side], gas[side] * cap) + element_gas[side] * cap
        paid = [int(e["amount"]) for e in p.market._logs("CompensationPaid", {"taskId": result.task_id})
                if int(e["gameId"]) == g.game_id]  # fmt: skip
        owed_at_most = p.market.compensation(p.market.spec_of(result.task_id))
        assert paid and paid[0] == min(owed, owed_at_most), (paid, owed, owed_at_most)
        if not run.silent:  # below the bound, so the element part is what the test sees repaid
            assert owed < owed_at_most and element_gas[side] * cap > 0
    # The game's decision came from resolveElement, and nothing was ever asked of the oracle.
    resolved_by = [e for e in result.journal if e.kind == "tx" and e.detail == "DisputeGame.resolveElement"]
    assert len(resolved_by) == len(result.games)
    assert not any(e.kind == "tx" and e.detail.startswith("RecomputeOracle.") for e in result.journal)
    assert p.oracle._logs("QuestionAsked") == [] and p.oracle._logs("OracleRegistered") == []
    assert not any(e.kind == "tx" and e.detail == "DisputeGame.resolveOracle" for e in result.journal)
    # Both sides played the referee's game through their agents (a silent cheater not at all: it was timed out).
    timeouts = [e for e in result.journal if e.kind == "tx" and e.detail == "ElementReferee.timeout"]
    assert len(timeouts) == (len(result.games) if run.silent else 0)
    # Every agent but a silent cheater made referee calls; a silent cheater made no move there, though it may
    # have sent a `timeout` (anyone may once a clock ran out, and its agent still does that duty: it can time
    # itself out before its opponent does).
    for n in names:
        calls = [
            e for e in result.journal if e.agent == n and e.kind == "tx" and e.detail.startswith("ElementReferee.")
        ]
        if run.silent and n == "cheater":
            assert [e for e in calls if e.detail != "ElementReferee.timeout"] == [], (n, calls)
        elif run.silent and not run.honest_defends:
            # The silent cheater defends, so it had the first move and never made it: its honest opponent never
            # had a turn, and the one call its game needed (the timeout) may have come from any agent first.
            assert all(e.detail == "ElementReferee.timeout" for e in calls), (n, calls)
        else:
            assert calls, n

    # The honest group is paid; the cheater is eliminated and loses at least its bond; the books balance.
    task = result.task_id
    market = p.market
    assert result.status is TaskStatus.FINALIZED
    group = {n: market.trainer_of(task, scenario.keys[n].address).group for n in names}
    assert result.winning_group == group[honest[0]] == group[honest[1]] != group["cheater"]
    assert result.eliminated == {n: n in cheaters for n in names}
    assert result.net("cheater") <= -result.bond
    slashed = {e["trainer"]: int(e["slashed"]) for e in market._logs("TrainerEliminated", {"taskId": task})}
    assert slashed == {scenario.keys["cheater"].address: result.bond}
    for h in honest:
        assert result.net(h) >= result.reward // len(honest) - result.fees[h], f"{h}: {result.net(h)}"
    assert int(market.chain.balance(market.address)) == market.totals()
    # Every wei: what the parties gained, gas given back, is what left the market (nothing else holds any).
    market_after = int(market.chain.balance(market.address))
    assert sum(result.net(n) + result.fees[n] for n in scenario.keys) == market_before - market_after
    assert int(p.oracle.chain.balance(p.oracle.address)) == 0
