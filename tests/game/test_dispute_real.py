"""Whole disputes on anvil over a real training run (MLP on digits, RepOps interpreter).

Two trainers run the same task. One is honest; the other leaves the honest run at one step
in one of four ways (a faulty kernel, a tampered input state, the wrong batch, a tampered
output state) and then defends its claims to the end. Both play every move through the
Python clients from their `RunWitness`; an oracle recomputes the disputed node when the game
gets there. In every case the honest trainer wins, the cheater's group is slashed, the task
pays the honest trainer, and the market's books balance.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator

import pytest
import torch

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import ORACLE_ARGS, Deployment, deploy_all
from offchain.contracts.dispute_game import Outcome, Side, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.recompute_oracle import OracleParams, QuestionStatus
from offchain.contracts.task_market import TaskSpec, TaskStatus, Wei, new_salt, result_commitment
from offchain.game.player import PLAYING, GamePlayer, recompute
from offchain.game.witness import Deviation, DeviationKind, RunWitness
from trainer.commit import commit_tensor
from trainer.runner.runner import RunConfig
from trainer.workloads import Workload, mlp_digits

pytestmark = pytest.mark.anvil

ETHER = 10**18
GWEI = 10**9
STEPS, INTERVAL, BATCH, SEED, ARITY, CLOCK = 8, 4, 8, 11, 4, 3600
WRONG_STEP = 5
ORACLES = (("oracle", 9), ("oracle-2", 3), ("oracle-3", 4), ("oracle-4", 5), ("oracle-5", 6))


@pytest.fixture(scope="module")
def workload() -> Workload:
    return mlp_digits(steps=STEPS, checkpoint_interval=INTERVAL, batch_size=BATCH, seed=SEED)


@pytest.fixture(scope="module")
def honest(workload: Workload) -> RunWitness:
    return witness(workload, None)


def witness(workload: Workload, deviation: Deviation | None) -> RunWitness:
    cfg = RunConfig(STEPS, INTERVAL, BATCH, SEED)
    return RunWitness(workload.program, workload.dataset, cfg, workload.initial_state(), deviation)


@pytest.fixture(scope="module")
def deployment(anvil: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False)


@pytest.fixture(scope="module")
def actors(anvil: Anvil, artifacts: dict[str, Artifact], deployment: Deployment) -> Iterator[dict[str, Protocol]]:
    out = {}
    for name, account in (("client", 1), ("honest", 2), ("cheater", 8), *ORACLES):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[account].private_key)
        out[name] = Protocol.from_deployment(chain, deployment, artifacts)
    for name, _ in ORACLES:  # a question is drawn only once committeeSize + 2 = 5 oracles are registered
        out[name].oracle.register()
    yield out


def now(p: Protocol) -> int:
    return int(p.market.chain.w3.eth.get_block("latest")["timestamp"])


def advance(p: Protocol, seconds: int) -> None:
    w3 = p.market.chain.w3
    w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
    w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def post(p: Protocol, honest: RunWitness) -> tuple[int, TaskSpec]:
    program, t = honest.program, now(p)
    spec = TaskSpec(
        program_hash=program.program_hash,
        graph_root=program.graph_root,
        dataset_root=honest.dataset.root,
        initial_state_root=honest.root(0),
        seed=SEED,
        dataset_size=len(honest.dataset),
        steps=STEPS,
        checkpoint_interval=INTERVAL,
        batch_size=BATCH,
        node_count=len(program.nodes),
        arity=ARITY,
        clock=CLOCK,
        slots=2,
        bond=Wei(0),
        gas_price_cap=Wei(GWEI),
        join_deadline=t + 1_000,
        submit_deadline=t + 2_000,
        dispute_deadline=t + 100_000,
    )
    spec = dataclasses.replace(spec, bond=p.market.min_bond(spec))
    return p.market.post_task(spec, 3 * ETHER), spec


def answer_as_oracle(actors: dict[str, Protocol], honest: RunWitness, game_id: int) -> None:
    """The drawn oracle recomputes the disputed node from inputs the honest trainer published."""
    anyone = actors["oracle"]
    view = anyone.game.game_of(game_id)
    assert anyone.oracle.question(view.question_id).status is QuestionStatus.DRAWING
    while not anyone.oracle.draw_ready(view.question_id):  # the draw's randomness: a block after the ask
        anyone.market.chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    drawn = anyone.oracle.draw(view.question_id).assignment
    assert drawn is not None, "five oracles are registered: the question is assigned"
    oracle = next(actors[n] for n, _ in ORACLES if actors[n].oracle.chain.address == drawn.oracle)
    q = oracle.oracle.question(view.question_id)
    assert q.status is QuestionStatus.ASSIGNED and q.oracle == drawn.oracle
    store = {commit_tensor(t.contiguous()): t for t in honest.node_inputs(view.lo, view.position)}
    inputs = honest.trace(view.lo).records[view.position].inputs
    assert hashlib.sha256(b"".join(inputs)).digest() == q.inputs_hash, "the question's inputs"
    outputs = recompute(honest.interpreter, view.position, inputs, lambda c: store[c])
    oracle.oracle.answer(view.question_id, outputs)
    advance(oracle, OracleParams(*ORACLE_ARGS).challenge_window + 1)  # type: ignore[arg-type]
    oracle.oracle.settle(view.question_id)


CASES = [
    # (deviation, who defends, the stage that decides)
    (DeviationKind.KERNEL, "cheater", Stage.ORACLE),
    (DeviationKind.STATE_INPUT, "honest", Stage.INPUT_PROOF),
    (DeviationKind.BATCH, "honest", Stage.INPUT_PROOF),
    (DeviationKind.POST_STATE, "honest", Stage.POST_STATE_PROOF),
    (DeviationKind.STATE_INPUT, "cheater", Stage.INPUT_PROOF),
]


@pytest.mark.parametrize(("kind", "defender", "decided_in"), CASES, ids=lambda v: getattr(v, "value", v))
def test_the_honest_trainer_wins_a_real_dispute(
    actors: dict[str, Protocol],
    workload: Workload,
    honest: RunWitness,
    kind: DeviationKind,
    defender: str,
    decided_in: Stage,
) -> None:
    # A faulty log-softmax: the element phase does not take it, so the oracle decides (node 0's op, the default
    # target, is a permute, which the ElementReferee decides on chain).
    target = "aten._log_softmax.default" if kind is DeviationKind.KERNEL else ""
    cheat = witness(workload, Deviation(WRONG_STEP, kind, target))
    client, anyone = actors["client"], actors["oracle"]
    task_id, spec = post(client, honest)
    runs = {"honest": honest, "cheater": cheat}
    groups = {}
    salts = {name: new_salt() for name in runs}
    for name in ("honest", "cheater"):  # commit before the submit deadline, reveal after it
        m = actors[name].market
        m.join(task_id)
        m.commit(task_id, result_commitment(task_id, m.chain.address, runs[name].checkpoints.roots, salts[name]))
    advance(anyone, spec.submit_deadline - now(anyone) + 1)
    for name in ("honest", "cheater"):
        groups[name] = actors[name].market.submit_list(task_id, runs[name].checkpoints, salts[name]).group
    challenger = "cheater" if defender == "honest" else "honest"
    address = {name: actors[name].market.chain.address for name in ("honest", "cheater")}
    game_id = anyone.market.open_dispute(task_id, address[defender], address[challenger])
    players = {
        defender: GamePlayer(actors[defender].game, game_id, runs[defender], Side.DEFENDER),
        challenger: GamePlayer(actors[challenger].game, game_id, runs[challenger], Side.CHALLENGER),
    }

    stages_seen = []
    view = anyone.game.game_of(game_id)
    while view.stage in PLAYING:
        stages_seen.append(view.stage)
        mover = players[defender] if view.to_move is Side.DEFENDER else players[challenger]
        try:
            mover.move()
        except Exception:
            # A cheater cannot prove a wrong value: the contract refuses every attempt. It stops,
            # and its clock runs out.
            assert mover is players["cheater"], "the honest side's move was refused"
            assert view.stage in (Stage.INPUT_PROOF, Stage.POST_STATE_PROOF)
            advance(anyone, view.deadline - now(anyone) + 1)
            anyone.game.timeout(game_id)
        view = anyone.game.game_of(game_id)
    stages_seen.append(view.stage)
    assert decided_in in stages_seen

    if view.stage is Stage.ORACLE:
        answer_as_oracle(actors, honest, game_id)
        anyone.game.resolve_oracle(game_id)
    outcome = anyone.game.outcome(game_id)
    honest_side = Side.DEFENDER if defender == "honest" else Side.CHALLENGER
    assert outcome is (Outcome.DEFENDER_WINS if honest_side is Side.DEFENDER else Outcome.CHALLENGER_WINS)
    isolated = anyone.game.step_isolated(game_id)
    assert isolated is not None and isolated.step == WRONG_STEP

    # Rounds within the bound; the honest side's gas within the bound its compensation pays for.
    cfg = anyone.game.config_of(game_id)
    assert max(p.moves for p in players.values()) <= anyone.game.round_bound(cfg)
    assert sum(players["honest"].gas) <= anyone.game.honest_gas_bound(cfg)
    for name, p in players.items():
        gas = f"gas max {max(p.gas, default=0)}, total {sum(p.gas)}"
        print(f"{kind.value}, {defender} defends: {name} {p.moves} moves, {gas}")

    assert anyone.market.settle_dispute(game_id) is outcome
    assert anyone.market.group_of(task_id, groups["cheater"]).eliminated
    assert anyone.market.trainer_of(task_id, address["cheater"]).eliminated
    assert not anyone.market.trainer_of(task_id, address["honest"]).eliminated
    advance(anyone, spec.dispute_deadline - now(anyone) + 1)  # never finalized earlier
    fin = client.market.finalize(task_id)
    assert fin.winning_group == groups["honest"]
    assert anyone.market.task(task_id).status is TaskStatus.FINALIZED
    h = actors["honest"].market.chain.address
    credited = anyone.market.credit_of(h)  # its metered gas, at most the compensation bound
    assert 0 < credited <= anyone.market.compensation(spec)
    assert anyone.market.claim(task_id, h).amount == 3 * ETHER + spec.bond
    assert anyone.market.credit_of(h) == credited + 3 * ETHER + spec.bond
    assert anyone.market.credit_of(actors["cheater"].market.chain.address) == 0
    assert anyone.market.chain.balance(anyone.market.address) == anyone.market.totals()
    paid = actors["honest"].market.withdraw()
    assert paid.amount > spec.bond


def test_the_cheaters_run_really_differs(honest: RunWitness, workload: Workload) -> None:
    """Each deviation changes the claimed roots from the step after it on, and not before."""
    for kind in DeviationKind:
        cheat = witness(workload, Deviation(WRONG_STEP, kind))
        assert [cheat.root(s) == honest.root(s) for s in range(STEPS + 1)] == [
            s <= WRONG_STEP for s in range(STEPS + 1)
        ], kind
        same_trace = cheat.trace(WRONG_STEP).root == honest.trace(WRONG_STEP).root
        assert same_trace is (kind is DeviationKind.POST_STATE), kind
    assert torch.equal(honest.batch(3)["x"], workload.dataset.batch(SEED, 3, BATCH)["x"])
