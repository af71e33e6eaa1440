"""The market, game and oracle clients on anvil: a task, two trainers with different checkpoint
lists, the checkpoint descent and the bisection played honestly by both through the clients,
then a timeout, settlement, finalization and withdrawal; and bad moves as typed exceptions."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from web3 import Web3

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import ORACLE_ARGS, Deployment, deploy_all
from offchain.chain.errors import ContractRevert
from offchain.contracts import dispute_game as dg
from offchain.contracts import recompute_oracle as ro
from offchain.contracts import task_market as tm
from offchain.contracts._base import ContractClient, MerkleError, TypedRevert
from offchain.contracts.dispute_game import Outcome, Side, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.recompute_oracle import OracleParams
from offchain.contracts.task_market import TaskSpec, TaskStatus
from offchain.game import Bisection, CheckpointList, Descent, first_difference, fold
from trainer.commit import PAD, list_root

pytestmark = pytest.mark.anvil

ETHER = 10**18
GWEI = 10**9
STEPS, INTERVAL, ARITY, CLOCK = 40, 4, 4, 3600


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def honest(step: int) -> bytes:
    """Synthetic state roots: the root after `step` steps of the honest run."""
    return sha(f"honest state {step}")


def diverging(after: int) -> Callable[[int], bytes]:
    """A run that agrees with the honest one up to step `after`, then differs."""
    return lambda s: honest(s) if s <= after else sha(f"wrong state {s}")


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployment(anvil: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[3].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False)


@pytest.fixture(scope="module")
def players(anvil: Anvil, artifacts: dict[str, Artifact], deployment: Deployment) -> dict[str, Protocol]:
    """The protocol's clients through the keys of a task client, trainers A and B, and a bystander."""
    out = {}
    for name, account in (("client", 4), ("a", 5), ("b", 6), ("anyone", 7)):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[account].private_key)
        out[name] = Protocol.from_deployment(chain, deployment, artifacts)
    return out


def now(p: Protocol) -> int:
    return int(p.market.chain.w3.eth.get_block("latest")["timestamp"])


def advance(p: Protocol, seconds: int) -> None:
    w3 = p.market.chain.w3
    w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
    w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def post(players: dict[str, Protocol], reward: int = 2 * ETHER) -> tuple[int, TaskSpec]:
    client = players["client"]
    spec = make_spec(client)
    task_id = client.market.post_task(spec, reward)
    assert client.market.spec_of(task_id) == spec
    return task_id, spec


def make_spec(client: Protocol) -> TaskSpec:
    t = now(client)
    spec = TaskSpec(
        program_hash=sha("program"),
        graph_root=sha("graph"),
        dataset_root=sha("dataset"),
        initial_state_root=honest(0),
        seed=7,
        dataset_size=100,
        steps=STEPS,
        checkpoint_interval=INTERVAL,
        batch_size=2,
        node_count=10,
        arity=ARITY,
        clock=CLOCK,
        slots=2,
        bond=tm.Wei(0),
        gas_price_cap=tm.Wei(GWEI),
        join_deadline=t + 1_000,
        submit_deadline=t + 2_000,
        dispute_deadline=t + 100_000,
    )
    return dataclasses.replace(spec, bond=client.market.min_bond(spec))


def market_balance_matches(p: Protocol) -> bool:
    return p.market.chain.balance(p.market.address) == p.market.totals()


def commit(p: Protocol, task_id: int, checkpoints: CheckpointList) -> bytes:
    """Commits to `checkpoints` (before the submit deadline); the salt to reveal with."""
    salt = tm.new_salt()
    me = p.market.chain.address
    c = p.market.commit(task_id, tm.result_commitment(task_id, me, checkpoints.roots, salt))
    assert (c.trainer, c.commitment) == (me, tm.result_commitment(task_id, me, checkpoints.roots, salt))
    return salt


def past_submit_deadline(p: Protocol, spec: TaskSpec) -> None:
    advance(p, max(1, spec.submit_deadline - now(p) + 1))


# -- the game, played honestly by both sides ---------------------------------------------------


def test_deployment_wires_the_contracts(players: dict[str, Protocol], deployment: Deployment) -> None:
    p = players["anyone"]
    assert p.market.game() == p.game.address == deployment.address("DisputeGame")
    assert p.game.oracle() == p.oracle.address == p.market.oracle() == deployment.address("RecomputeOracle")
    assert p.game.market() == p.market.address, "only the market opens games"
    assert p.oracle.game() == p.game.address, "only the game asks the oracle"
    assert p.oracle.randomness() == deployment.address("BlockhashRandomness")
    params = OracleParams(*ORACLE_ARGS)  # type: ignore[arg-type]
    assert p.oracle.params() == params and params.oracles_needed == 5
    bound = 3 * (3600 + 600 + 2) + 600 + 1 + 2 * (3600 + 2 * 600 + 2)
    assert p.oracle.max_resolution_time() == params.max_resolution_time == bound
    assert [(b.contract, b.function) for b in deployment.bindings] == [
        ("RecomputeOracle", "bindGame"),
        ("DisputeGame", "bindMarket"),
        ("DisputeGame", "bindReferee"),  # the element phase is bound by default
    ]


def test_only_the_bound_market_opens_games(players: dict[str, Protocol]) -> None:
    anyone = players["anyone"]
    cfg = dg.Config(sha("program"), sha("graph"), sha("dataset"), 7, STEPS, INTERVAL, 10, 100, 2, ARITY, CLOCK)
    a, b = players["a"].market.chain.address, players["b"].market.chain.address
    with pytest.raises(dg.DisputeGameNotMarket) as refused:
        anyone.game.open(cfg, a, honest(1), b, honest(2))
    assert refused.value.args.market == anyone.market.address
    with pytest.raises(dg.DisputeGameNotDeployer):
        anyone.game.bind_market(anyone.game.chain.address)
    with pytest.raises(ro.RecomputeOracleNotDeployer):
        anyone.oracle.bind_game(anyone.oracle.chain.address)
    with pytest.raises(ro.RecomputeOracleNotGame) as asked:
        anyone.oracle.ask(sha("program"), 1, [sha("input")], (a, b))
    assert asked.value.args.game == anyone.game.address


def test_a_dispute_is_played_down_to_one_step_then_timed_out(players: dict[str, Protocol]) -> None:
    client, a, b, anyone = players["client"], players["a"], players["b"], players["anyone"]
    reward = 2 * ETHER
    task_id, spec = post(players, reward)
    for trainer in (a, b):
        trainer.market.join(task_id)
    assert anyone.market.trainers_of(task_id) == (a.market.chain.address, b.market.chain.address)

    wrong_after = 22  # B's run goes wrong at step 22: the root after 22 steps agrees, after 23 not
    lists = {
        "a": CheckpointList.from_steps(honest, STEPS, INTERVAL),
        "b": CheckpointList.from_steps(diverging(wrong_after), STEPS, INTERVAL),
    }
    salts = {"a": commit(a, task_id, lists["a"]), "b": commit(b, task_id, lists["b"])}
    with pytest.raises(tm.TaskMarketRevealClosed) as early:  # reveals open after the submit deadline
        a.market.submit_list(task_id, lists["a"], salts["a"])
    assert early.value.args.opensAfter == spec.submit_deadline
    past_submit_deadline(anyone, spec)
    sub_a = a.market.submit_list(task_id, lists["a"], salts["a"])
    sub_b = b.market.submit_list(task_id, lists["b"], salts["b"])
    assert (sub_a.group, sub_b.group) == (0, 1)
    assert anyone.market.group_of(task_id, 1).checkpoint_root == lists["b"].root
    assert anyone.market.group_of_trainer(task_id, b.market.chain.address) == 1
    view = anyone.market.task(task_id)
    assert (view.status, view.joined, view.entrants, view.submitted, view.group_count, view.live_groups) == (
        TaskStatus.OPEN,
        2,
        2,
        2,
        2,
        2,
    )

    # B defends its list, A challenges it.
    a_addr, b_addr = a.market.chain.address, b.market.chain.address
    game_id = anyone.market.open_dispute(task_id, b_addr, a_addr)
    assert anyone.market.disputes(task_id)[-1].game_id == game_id
    assert anyone.market.dispute_of(game_id) == tm.DisputeView(tm.TaskId(task_id), b_addr, a_addr, 1, 0, False)
    game = anyone.game
    assert game.config_of(game_id) == spec.config()
    g = game.game_of(game_id)
    assert g.players == (b.market.chain.address, a.market.chain.address)
    assert g.owner == anyone.market.address and g.stage is Stage.CHECKPOINT_DESCENT and g.to_move is Side.DEFENDER
    assert g.checkpoint_roots == (lists["b"].root, lists["a"].root)

    # Checkpoint descent: the defender posts its nodes, the challenger its own and the defender's.
    trees = {"b": lists["b"].tree, "a": lists["a"].tree}
    d = Descent.start(lists["a"].count, ARITY)
    while g.stage is Stage.CHECKPOINT_DESCENT:
        assert (g.height, g.position, g.leaf_count) == (d.height, d.position, lists["a"].count)
        mine = trees["b"].nodes(d.height, d.position, ARITY)
        b.game.descend(game_id, mine)
        assert game.game_of(game_id).half_done
        theirs = a.game.defender_nodes(game_id)
        assert list(theirs) == mine
        ours = trees["a"].nodes(d.height, d.position, ARITY)
        a.game.descend(game_id, ours, theirs)
        d = d.narrow(first_difference(theirs, ours))
        g = game.game_of(game_id)
        assert g.current == (trees["b"].node(d.height, d.position), trees["a"].node(d.height, d.position))
    j = d.leaf_index
    assert j == wrong_after // INTERVAL + 1
    # Only the defender's lists are published (the challenger passes them back).
    posted = game.nodes_posted(game_id)
    assert len(posted) == Descent.start(lists["a"].count, ARITY).levels_left
    assert all(e.side is Side.DEFENDER for e in posted)

    # Bisection of (j-1)c .. jc; the defender's first round proves its root at lo.
    assert g.stage is Stage.STEP_BISECTION and (g.lo, g.hi) == ((j - 1) * INTERVAL, j * INTERVAL)
    roots_b, roots_a = diverging(wrong_after), honest
    bis = Bisection(g.lo, g.hi, ARITY)
    first, rounds = True, 0
    while g.stage is Stage.STEP_BISECTION:
        assert (g.lo, g.hi) == (bis.lo, bis.hi)
        mine = bis.roots(roots_b)
        b.game.bisect(game_id, mine, lo_proof=lists["b"].proof(j - 1) if first else ())
        theirs = a.game.defender_roots(game_id)
        assert list(theirs) == mine
        ours = bis.roots(roots_a)
        a.game.bisect(game_id, ours, theirs)
        bis = bis.narrow(ours, theirs)
        first, rounds = False, rounds + 1
        g = game.game_of(game_id)
    assert bis.done and bis.step == wrong_after
    isolated = game.step_isolated(game_id)
    assert isolated is not None and isolated.step == wrong_after
    assert isolated.pre_root == honest(wrong_after) == g.agreed_root
    assert isolated.post_roots == (roots_b(wrong_after + 1), honest(wrong_after + 1))
    assert g.stage is Stage.TRACE_DESCENT and g.to_move is Side.DEFENDER and (g.lo, g.hi) == (22, 23)
    assert len(game.roots_posted(game_id)) == rounds
    assert rounds <= Bisection((j - 1) * INTERVAL, j * INTERVAL, ARITY).max_rounds
    assert g.moves == 2 * (len(posted) + len(game.roots_posted(game_id)))

    # The defender never commits its trace: once its clock runs out, anyone ends the game.
    with pytest.raises(dg.DisputeGameClockRunning) as early:
        anyone.game.timeout(game_id)
    assert early.value.args.deadline == g.deadline
    with pytest.raises(tm.TaskMarketGamePending):
        anyone.market.settle_dispute(game_id)
    advance(anyone, g.deadline - now(anyone) + 1)
    with pytest.raises(dg.DisputeGameClockExpired):
        b.game.descend(game_id, [PAD] * 4)
    assert anyone.game.timeout(game_id) is Outcome.CHALLENGER_WINS
    assert game.outcome(game_id) is Outcome.CHALLENGER_WINS and game.game_of(game_id).stage is Stage.RESOLVED

    # Settlement: B's group is eliminated; its bond repays the opener's gas and A's metered gas (both at
    # min(price paid, cap)), the rest waits in its pool.
    comp = anyone.market.compensation(spec)
    assert 0 < comp < spec.bond
    opener = anyone.market.chain.address
    credit_before = {x: anyone.market.credit_of(x) for x in (a_addr, opener)}
    assert anyone.market.settle_dispute(game_id) is Outcome.CHALLENGER_WINS
    [repaid] = [e for e in anyone.market._logs("OpenerRepaid", {"taskId": task_id}) if int(e["gameId"]) == game_id]
    assert repaid["opener"] == opener and 0 < int(repaid["amount"]) <= GWEI * anyone.market.open_gas_bound()
    [paid_a] = [e for e in anyone.market._logs("CompensationPaid", {"taskId": task_id}) if int(e["gameId"]) == game_id]
    assert paid_a["winner"] == a_addr and 0 < int(paid_a["amount"]) <= comp
    repay, comp_a = int(repaid["amount"]), int(paid_a["amount"])
    assert anyone.market.credit_of(a_addr) == credit_before[a_addr] + comp_a
    assert anyone.market.credit_of(opener) == credit_before[opener] + repay
    lost = anyone.market.group_of(task_id, 1)
    left = spec.bond - comp_a - repay
    assert lost.eliminated and lost.live == 0 and lost.pool == left and lost.members == (b_addr,)
    assert anyone.market.trainer_of(task_id, b_addr) == tm.TrainerView(
        True, True, True, 1, tm.Wei(left), challenger=False, committed=True, claimed=False
    )
    assert anyone.market.dispute_of(game_id).settled
    with pytest.raises(tm.TaskMarketDisputeAlreadySettled) as again:
        anyone.market.settle_dispute(game_id)
    assert again.value.args.gameId == game_id
    assert market_balance_matches(anyone)

    # Finalization: never before the dispute deadline (an outside challenger may still come); then it
    # credits the client only, and each live entrant claims its bond and share.
    with pytest.raises(tm.TaskMarketFinalizeTooEarly):
        client.market.finalize(task_id)
    with pytest.raises(tm.TaskMarketNotFinalized):
        anyone.market.claim(task_id, a_addr)
    advance(anyone, spec.dispute_deadline - now(anyone) + 1)
    burnt_before = anyone.market.total_burnt()
    fin = client.market.finalize(task_id)
    assert (fin.winning_group, fin.reward) == (0, reward)
    view = anyone.market.task(task_id)
    assert view.status is TaskStatus.FINALIZED and view.won and view.winning_group == 0 and view.share == reward
    assert anyone.market.credit_of(a_addr) == credit_before[a_addr] + comp_a
    with pytest.raises(tm.TaskMarketNothingToClaim):  # eliminated
        anyone.market.claim(task_id, b_addr)
    claimed = anyone.market.claim(task_id, a_addr)  # anyone may claim for a live entrant
    assert (claimed.trainer, claimed.amount) == (a_addr, spec.bond + reward)
    with pytest.raises(tm.TaskMarketNothingToClaim):  # once
        anyone.market.claim(task_id, a_addr)
    assert anyone.market.trainer_of(task_id, a_addr).claimed
    assert anyone.market.credit_of(a_addr) == credit_before[a_addr] + comp_a + spec.bond + reward
    assert anyone.market.credit_of(b_addr) == 0
    assert anyone.market.total_burnt() == burnt_before + left
    assert market_balance_matches(anyone)

    # Withdrawal: A's balance grows by its credit less the transaction fee.
    owed = anyone.market.credit_of(a_addr)
    balance = a.market.chain.balance()
    paid = a.market.withdraw()
    assert paid.amount == owed
    assert a.market.chain.balance() == balance + owed - paid.receipt.fee
    assert anyone.market.credit_of(a_addr) == 0 and market_balance_matches(anyone)
    with pytest.raises(tm.TaskMarketNothingToWithdraw) as nothing:
        b.market.withdraw()
    assert nothing.value.args.account == b_addr


# -- commit, reveal, copies and forfeits ------------------------------------------------------


def test_result_commitment_matches_the_market_and_copies_forfeit(players: dict[str, Protocol]) -> None:
    """`result_commitment` is the market's hash (a real commit, then reveal); a commitment is bound to its
    trainer; an outside challenger that enters after seeing a result and reveals it is refused as a copy and,
    never revealing, forfeits its bond to the client; entry closes an hour before the dispute deadline."""
    client, a, b, anyone = players["client"], players["a"], players["b"], players["anyone"]
    spec = dataclasses.replace(make_spec(client), slots=1)
    spec = dataclasses.replace(spec, bond=client.market.min_bond(spec))
    reward = ETHER
    task_id = client.market.post_task(spec, reward)
    a_addr, b_addr = a.market.chain.address, b.market.chain.address
    honest_list = CheckpointList.from_steps(honest, STEPS, INTERVAL)
    roots, salt = list(honest_list.roots), tm.new_salt()
    a.market.join(task_id)
    commitment = tm.result_commitment(task_id, a_addr, roots, salt)
    assert commitment != tm.result_commitment(task_id, b_addr, roots, salt), "bound to the trainer"
    assert commitment != tm.result_commitment(task_id + 1, a_addr, roots, salt), "bound to the task"
    [made] = [a.market.commit(task_id, commitment)]
    assert anyone.market.commitments(task_id) == [made] and made.commitment == commitment
    assert anyone.market.trainer_of(task_id, a_addr).committed
    past_submit_deadline(anyone, spec)
    sub = a.market.submit(task_id, roots, salt)  # the market recomputes the same hash: the reveal is accepted
    assert sub.trainer == a_addr and sub.checkpoint_root == honest_list.root
    assert anyone.market.revealed_roots(task_id, a_addr) == tuple(roots)
    assert anyone.market.revealed_roots(task_id, b_addr) is None

    # b saw the reveal: it enters (no slot needed) with a's roots, and reveals them.
    copied = anyone.market.revealed_roots(task_id, a_addr)
    assert copied is not None
    b_salt = tm.new_salt()
    b.market.enter(task_id, tm.result_commitment(task_id, b_addr, copied, b_salt))
    view = anyone.market.trainer_of(task_id, b_addr)
    assert view.joined and view.challenger and view.committed and not view.submitted
    task = anyone.market.task(task_id)
    assert (task.joined, task.entrants) == (1, 2)
    with pytest.raises(tm.TaskMarketRevealClosed):  # in the block of its commit (a call sees the latest block)
        b.market.submit(task_id, copied, b_salt)
    advance(anyone, 1)
    with pytest.raises(tm.TaskMarketCopiedResult) as copy:
        b.market.submit(task_id, copied, b_salt)
    assert copy.value.args.group == sub.group and copy.value.args.groupCreatedBlock <= copy.value.args.committedBlock
    with pytest.raises(tm.TaskMarketAlreadyJoined):
        b.market.enter(task_id, bytes(32))
    advance(anyone, tm.entry_closes(spec) - now(anyone) + 1)
    with pytest.raises(tm.TaskMarketEntryClosed) as closed:
        anyone.market.enter(task_id, bytes(32))
    assert closed.value.args.closesAt == spec.dispute_deadline - tm.MIN_DISPUTE_WINDOW

    advance(anyone, spec.dispute_deadline - now(anyone) + 1)
    client_credit = anyone.market.credit_of(client.market.chain.address)
    anyone.market.finalize(task_id)
    [forfeit] = anyone.market._logs("BondsForfeited", {"taskId": task_id})
    assert (int(forfeit["count"]), int(forfeit["amount"])) == (1, spec.bond)
    assert anyone.market.credit_of(client.market.chain.address) == client_credit + spec.bond
    with pytest.raises(tm.TaskMarketNothingToClaim):
        anyone.market.claim(task_id, b_addr)
    assert a.market.claim(task_id, a_addr).amount == spec.bond + reward
    assert market_balance_matches(anyone)


# -- wrong moves surface as typed exceptions with the contract's arguments ---------------------


def test_post_task_refuses_a_spec_too_tight_to_play(players: dict[str, Protocol]) -> None:
    market = players["client"].market
    spec = make_spec(players["client"])
    with pytest.raises(tm.TaskMarketDisputeWindowTooShort) as window:
        market.post_task(dataclasses.replace(spec, dispute_deadline=spec.submit_deadline + 60), ETHER)
    assert (window.value.args.window, window.value.args.minWindow) == (60, tm.MIN_SUBMIT_TO_DISPUTE)
    assert tm.MIN_SUBMIT_TO_DISPUTE == market.reveal_window() + market.min_dispute_window() == 4500
    with pytest.raises(tm.TaskMarketClockTooShort) as clock:
        market.post_task(dataclasses.replace(spec, clock=1), ETHER)
    assert clock.value.args.minClock == 60 * players["anyone"].game.round_bound(spec.config())
    with pytest.raises(tm.TaskMarketTooManySlots) as slots:
        market.post_task(dataclasses.replace(spec, slots=65), ETHER)
    assert slots.value.args.maxSlots == 64
    with pytest.raises(tm.TaskMarketTooManyCheckpoints):
        market.post_task(dataclasses.replace(spec, steps=4097 * INTERVAL), ETHER)
    big = dataclasses.replace(spec, batch_size=1024, dataset_size=4096)
    with pytest.raises(tm.TaskMarketProofTooLarge) as proof:  # 1024 rows of 4096 examples: no tx could carry it
        market.post_task(big, ETHER)
    assert proof.value.args.proofGas == market.proof_gas_bound(big) > proof.value.args.maxProofGas == 8_000_000


def test_bad_moves_raise_typed_exceptions(players: dict[str, Protocol]) -> None:
    a, b, anyone = players["a"], players["b"], players["anyone"]
    task_id, spec = post(players)
    a.market.join(task_id)
    with pytest.raises(tm.TaskMarketAlreadyJoined) as joined:
        a.market.join(task_id)
    assert joined.value.args._asdict() == {"taskId": task_id, "trainer": a.market.chain.address}
    with pytest.raises(tm.TaskMarketBondTooSmall) as small:
        b.market.join(task_id, spec.bond - 1)
    assert (small.value.args.sent, small.value.args.required) == (spec.bond - 1, spec.bond)
    b.market.join(task_id)

    lists = {
        "a": CheckpointList.from_steps(honest, STEPS, INTERVAL),
        "b": CheckpointList.from_steps(diverging(3), STEPS, INTERVAL),
    }
    roots = list(lists["b"].roots)
    a_addr, b_addr = a.market.chain.address, b.market.chain.address
    with pytest.raises(tm.TaskMarketNotCommitted):
        b.market.submit(task_id, roots, bytes(32))
    salts = {"a": commit(a, task_id, lists["a"]), "b": commit(b, task_id, lists["b"])}
    with pytest.raises(tm.TaskMarketAlreadyCommitted):
        b.market.commit(task_id, bytes(32))
    with pytest.raises(tm.TaskMarketTaskFull):
        anyone.market.join(task_id)
    # Malformed lists are refused at the reveal, whatever was committed: two outside challengers commit to a
    # short list and to one that does not start at the task's initial state.
    odd = {"anyone": roots[:-1], "client": [sha("elsewhere"), *roots[1:]]}
    odd_salt = tm.new_salt()
    for name, claimed in odd.items():
        p = players[name]
        p.market.enter(task_id, tm.result_commitment(task_id, p.market.chain.address, claimed, odd_salt))
    assert anyone.market.trainer_of(task_id, anyone.market.chain.address).challenger
    past_submit_deadline(anyone, spec)
    with pytest.raises(tm.TaskMarketSubmitClosed):  # no commits on a slot after the submit deadline
        a.market.commit(task_id, bytes(32))
    with pytest.raises(tm.TaskMarketRevealMismatch):
        anyone.market.submit(task_id, roots, odd_salt)
    with pytest.raises(tm.TaskMarketCheckpointCount) as short:  # the whole list, steps 0 to T
        anyone.market.submit(task_id, odd["anyone"], odd_salt)
    assert (short.value.args.count, short.value.args.expected) == (len(roots) - 1, len(roots))
    with pytest.raises(tm.TaskMarketInitialStateMismatch) as start:  # from the task's initial state
        players["client"].market.submit(task_id, odd["client"], odd_salt)
    assert start.value.args.initialStateRoot == spec.initial_state_root and start.value.contract == "TaskMarket"
    a.market.submit_list(task_id, lists["a"], salts["a"])
    b.market.submit_list(task_id, lists["b"], salts["b"])
    with pytest.raises(tm.TaskMarketAlreadySubmitted):
        b.market.submit_list(task_id, lists["b"], salts["b"])
    with pytest.raises(tm.TaskMarketSameGroup):
        anyone.market.open_dispute(task_id, a_addr, a_addr)
    with pytest.raises(tm.TaskMarketNotSubmitted) as absent:
        anyone.market.open_dispute(task_id, a_addr, anyone.market.chain.address)
    assert absent.value.args.trainer == anyone.market.chain.address
    game_id = anyone.market.open_dispute(task_id, a_addr, b_addr)  # A defends, B challenges
    with pytest.raises(tm.TaskMarketAlreadyPlayed) as played:
        anyone.market.open_dispute(task_id, b_addr, a_addr)
    assert (played.value.args.defender, played.value.args.challenger) == (b_addr, a_addr)

    n = lists["a"].count
    d = Descent.start(n, ARITY)
    good = lists["a"].tree.nodes(d.height, d.position, ARITY)

    # Out of turn: the challenger moves first.
    with pytest.raises(dg.DisputeGameNotYourTurn) as turn:
        b.game.descend(game_id, lists["b"].tree.nodes(d.height, d.position, ARITY))
    assert turn.value.args._asdict() == {
        "gameId": game_id,
        "caller": b.market.chain.address,
        "expected": a.market.chain.address,
    }
    # The opponent's nodes instead of its own: they fold to the other root.
    other = lists["b"].tree.nodes(d.height, d.position, ARITY)
    with pytest.raises(dg.DisputeGameFoldMismatch) as folded:
        a.game.descend(game_id, other)
    err = folded.value
    assert isinstance(err, dg.DisputeGameError) and isinstance(err, ContractRevert)
    assert (err.args.computed, err.args.expected) == (lists["b"].root, lists["a"].root)
    assert err.args.computed == list_root(n, fold(other, d.height, d.position, n))
    assert err.contract == "DisputeGame" and "post the nodes of the tree that was committed" in str(err)
    assert str(err).startswith("DisputeGame reverted DisputeGameFoldMismatch(computed=0x")
    # A wrong width, and a padding position that is not PAD (n = 11: positions 3 at height 2 pad).
    with pytest.raises(dg.DisputeGameWidth) as width:
        a.game.descend(game_id, good[:2])
    assert (width.value.args.got, width.value.args.expected) == (2, 4)
    assert d.height == 4 and good[3] == PAD
    with pytest.raises(dg.DisputeGamePaddingNode) as padding:
        a.game.descend(game_id, [*good[:3], good[0]])
    assert padding.value.args.index == 3

    a.game.descend(game_id, good)
    # The challenger passes back something else than the defender posted.
    with pytest.raises(dg.DisputeGameOpponentMismatch):
        b.game.descend(game_id, other, [*good[:2], good[2][::-1], good[3]])
    # A move of another stage.
    with pytest.raises(dg.DisputeGameWrongStage) as stage:
        b.game.bisect(game_id, [PAD] * 5, [PAD] * 5)
    assert (stage.value.args.expected, stage.value.args.actual) == (Stage.STEP_BISECTION, Stage.CHECKPOINT_DESCENT)
    with pytest.raises(dg.DisputeGameUnknown):
        anyone.game.game_of(10**9)
    b.game.descend(game_id, other, good)
    assert anyone.game.game_of(game_id).moves == 2


# -- the error tables cover every custom error of the ABIs ------------------------------------


@pytest.mark.parametrize(
    ("client", "root", "own"),
    [
        (dg.DisputeGameClient, dg.DisputeGameError, dg.DISPUTE_GAME_ERRORS),
        (tm.TaskMarketClient, tm.TaskMarketError, tm.TASK_MARKET_ERRORS),
        (ro.RecomputeOracleClient, ro.RecomputeOracleError, ro.RECOMPUTE_ORACLE_ERRORS),
    ],
)
def test_every_custom_error_has_its_exception_class(
    artifacts: dict[str, Artifact], client: type[ContractClient], root: type[TypedRevert], own: Any
) -> None:
    """The contract's errors (with those of the helpers it creates) are exactly its table's classes,
    and every error the client can meet decodes through an ABI it registers."""
    contract = client.CONTRACT_NAME
    sources = [contract, *(name for name in client.CALLEES if name in artifacts)]
    declared = {item["name"] for name in sources for item in artifacts[name].abi if item["type"] == "error"}
    mine = {name for name in declared if name.startswith(contract)}
    assert mine == set(own), "the client's exception classes and the contract's errors differ"
    known = set().union(*(set(t) for t in client.ERRORS))
    assert declared <= known, f"errors without a class: {sorted(declared - known)}"
    for name, cls in own.items():
        assert cls.__name__ == name and issubclass(cls, root) and cls.__doc__ and cls.__doc__.strip()


def test_typed_reverts_keep_arguments_and_pickle(players: dict[str, Protocol]) -> None:
    import pickle

    with pytest.raises(dg.DisputeGameUnknown) as info:
        players["anyone"].game.game_of(12345)
    err = info.value
    assert err.args.gameId == 12345 and err.error_name == "DisputeGameUnknown"
    assert "use the id `openDispute` returned" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is dg.DisputeGameUnknown and again.args == err.args and str(again) == str(err)


def test_typed_revert_from_raw_data(artifacts: dict[str, Artifact]) -> None:
    from eth_abi import encode
    from eth_utils import function_signature_to_4byte_selector as selector

    from offchain.chain._revert import ErrorRegistry
    from offchain.contracts._base import typed_revert

    reg = ErrorRegistry()
    for name in ("DisputeGame", "TaskMarket", "RecomputeOracle"):
        reg.add_abi(name, artifacts[name].abi)
    tables = tm.TaskMarketClient.ERRORS
    data = selector("DisputeGameWidth(uint256,uint256)") + encode(["uint256", "uint256"], [3, 4])
    err = typed_revert(reg.decode(data, contract="TaskMarket"), tables)
    assert type(err) is dg.DisputeGameWidth and err.args._asdict() == {"got": 3, "expected": 4}
    assert str(err).startswith("TaskMarket reverted DisputeGameWidth(got=3, expected=4): A list in the move has")
    short = typed_revert(reg.decode(data[:20]), tables)  # the error's data does not decode: say so
    assert type(short) is dg.DisputeGameWidth and "does not decode" in str(short)
    lib = typed_revert(reg.decode(selector("MerklePaddingLeaf()")), tables)
    assert isinstance(lib, MerkleError) and "the padding leaf" in str(lib)  # the registry's sentence
    other = reg.decode(selector("Mystery()"))
    assert typed_revert(other, tables) is other
    addr = "0x" + "ab" * 20
    data = selector("TaskMarketNotJoined(uint256,address)") + encode(["uint256", "address"], [1, addr])
    joined = typed_revert(reg.decode(data), tables)
    assert isinstance(joined, tm.TaskMarketNotJoined) and joined.args.trainer == Web3.to_checksum_address(addr)


def test_the_feed_says_when_the_node_pruned_a_moves_state(players: dict[str, Protocol]) -> None:
    """The feed describes a move by the game's state before and after its block. Our anvil, like a
    full node, keeps only recent states (512 blocks): a feed reading from genesis later gets the
    move's line with a note instead of an exception, and the lines of recent blocks are whole."""
    from offchain.agents.view import GameFeed
    from offchain.chain.anvil import DEFAULT_HISTORY

    a, b, anyone = players["a"], players["b"], players["anyone"]
    task_id, spec = post(players)
    for trainer in (a, b):
        trainer.market.join(task_id)
    lists = {
        "a": CheckpointList.from_steps(honest, STEPS, INTERVAL),
        "b": CheckpointList.from_steps(diverging(5), STEPS, INTERVAL),
    }
    salts = {"a": commit(a, task_id, lists["a"]), "b": commit(b, task_id, lists["b"])}
    past_submit_deadline(anyone, spec)
    a.market.submit_list(task_id, lists["a"], salts["a"])
    b.market.submit_list(task_id, lists["b"], salts["b"])
    start = anyone.market.chain.block_number()
    game_id = anyone.market.open_dispute(task_id, b.market.chain.address, a.market.chain.address)
    advance(anyone, CLOCK + 1)
    assert anyone.game.timeout(game_id) is Outcome.CHALLENGER_WINS  # the defender never moved

    def timeouts(feed: GameFeed) -> list[str]:
        return [line.text for line in feed.poll() if line.function == "timeout" and line.contract == "DisputeGame"]

    fresh = timeouts(GameFeed(anyone, from_block=start))
    assert len(fresh) == 1 and "clock ran out" in fresh[0] and "no state" not in fresh[0]
    w3 = anyone.market.chain.w3
    w3.provider.make_request("anvil_mine", [hex(DEFAULT_HISTORY + 8)])  # type: ignore[arg-type]
    late = timeouts(GameFeed(anyone, from_block=start))
    assert len(late) == 1 and "the node keeps no state that old" in late[0], late
