"""Every entry of the adversary catalogue, played by agents against honest trainers on anvil.

Each case runs a whole `Scenario` (a client, k = 3 trainers cast by `cast`, the oracles the
entry needs, a watcher) on a fresh deployment and checks that the honest group is paid,
that every game an honest trainer plays is won by it, that every cheater is eliminated and
loses at least its bond, that every honest oracle keeps its whole bond, that the game
isolated the step the cheater deviated at, and that the game was decided where the catalogue
says (`decided_by`), as seen by following each game's stage round by round. An entry's
`Case.check` adds what is particular to it, read from the chain's events (and its state at
past blocks) and the agents' records: for the attacks on the recompute oracle, that the
draws could not be chosen, that no junk question was asked, that a question waited for
enough oracles, that a question the node cannot run was answered INAPPLICABLE. The unit
cases check each cheater's claimed roots against the honest run, bit for bit, without a chain.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eth_typing import HexStr
from web3 import Web3
from web3.contract import Contract

from offchain.agents.adversaries import (
    ACCOMPLICE,
    CATALOGUE,
    DEFAULT,
    Adversary,
    Cheater,
    EagerKernels,
    ForgedRoots,
    cast,
    squatting_cast,
)
from offchain.agents.adversaries._agents import grinder_artifact
from offchain.agents.adversaries._witnesses import RewiredWitness
from offchain.agents.client import TaskOrder
from offchain.agents.oracle import COMPUTED, INAPPLICABLE
from offchain.agents.scenario import ORACLES, OracleRole, Scenario, ScenarioResult, TrainerRole, oracle_roles
from offchain.agents.strategy import HONEST
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment
from offchain.contracts.dispute_game import Outcome, Stage
from offchain.contracts.protocol import Protocol
from offchain.contracts.recompute_oracle import (
    INAPPLICABLE_HASH,
    Question,
    QuestionStatus,
    RecomputeOracleClient,
    outputs_hash,
)
from offchain.contracts.task_market import TaskStatus
from offchain.game.records import RefKind
from offchain.game.witness import RunWitness
from trainer.workloads import Workload, mlp_digits

pytestmark = pytest.mark.anvil

ETHER = 10**18
STEPS, INTERVAL, BATCH, SEED = 8, 4, 8, 11
K = 3
REFUSED = re.compile(r"the contract refused our move \((\w+)\); attempt \d+")


@dataclass
class Played:
    """One entry's scenario after its run: what a `Case.check` reads."""

    node: Anvil
    scenario: Scenario
    result: ScenarioResult
    prepared: Any = None  # what `Case.prepare` returned


@dataclass(frozen=True)
class Case:
    """What a game against the entry's cheater looks like."""

    decided_in: Stage  # the stage a game was in when it ended
    refused: bool = False  # the cheater's move there was refused (it cannot back its claim)
    check: Callable[[Played], None] | None = None
    prepare: Callable[[Anvil, Scenario], Any] | None = None  # before the run, e.g. a contract the check calls
    cheater_games: int = 0  # games between two cheaters (sybils of one attacker), beside those against honest ones


def liar_slashed(played: Played) -> None:
    """Every oracle lies when drawn to answer (the draw is random), and only then. Each lie was challenged
    by another oracle and overturned by a committee of three others that committed to their votes, then
    revealed them: the liar's whole bond is slashed, half of it, with the challenge bond back, is credited
    to the challenger, and nobody else lost anything."""
    scenario = played.scenario
    oracle = scenario.protocol().oracle
    oracles = {scenario.keys[n].address for n in scenario.oracles}
    lies = oracle._logs("QuestionAnswered")
    assert lies and all(e["oracle"] in oracles for e in lies), "nobody answered"
    challenges = {int(e["questionId"]): e for e in oracle._logs("AnswerChallenged")}
    liars = {e["oracle"] for e in lies}
    bond = oracle.min_bond()
    for lie in lies:
        qid, liar = int(lie["questionId"]), lie["oracle"]
        assert qid in challenges, f"nobody challenged the lie answered to question {qid}"
        challenger = challenges[qid]["challenger"]
        assert challenger in oracles - {liar}
        (seating,) = oracle.seatings(qid)  # one committee round decided it
        assert set(seating.committee) <= oracles - {liar, challenger}
        committed = oracle.commitments(qid, from_block=seating.block)
        revealed = oracle.reveals(qid, from_block=seating.block)
        assert set(committed) == set(revealed) == set(seating.committee), "every member committed, then revealed"
        settled = oracle._logs("QuestionSettled", {"questionId": qid})
        assert settled and bytes(settled[0]["outputsHash"]) != bytes(lie["outputsHash"]), "the lie stood"
        assert set(revealed.values()) == {bytes(settled[0]["outputsHash"])}, "the committee voted as one"
        credited = sum(int(e["amount"]) for e in oracle._logs("Credited", {"account": challenger}))
        assert credited >= bond // 2 + oracle.challenge_bond()
    for liar in liars:
        assert oracle.bond_of(liar) == 0 and not oracle.is_active(liar)
        assert sum(int(e["amount"]) for e in oracle._logs("OracleSlashed", {"oracle": liar})) == bond
    for honest in oracles - liars:
        assert not oracle._logs("OracleSlashed", {"oracle": honest}) and oracle.bond_of(honest) == bond


def questions_of(scenario: Scenario, result: ScenarioResult) -> dict[int, int]:
    """game id -> the id of the question it asked the oracle."""
    game = scenario.protocol().game
    return {g.game_id: game.game_of(g.game_id).question_id for g in result.games}


@dataclass(frozen=True)
class Drawn:
    """A draw made on a question: the answering oracle (`QuestionAssigned`) or a committee (`CommitteeSeated`)."""

    block: int
    request: int  # the randomness request it used
    request_block: int
    committee: bool
    picked: list[str]


def drawn(oracle: RecomputeOracleClient, qid: int) -> list[Drawn]:
    """Every draw made on question `qid`, oldest first."""
    requests = [(int(e["_block"]), int(e["requestId"])) for e in oracle._logs("DrawRequested", {"questionId": qid})]
    made = [(int(a["_block"]), False, [a["oracle"]]) for a in oracle._logs("QuestionAssigned", {"questionId": qid})]
    made += [(s.block, True, list(s.committee)) for s in oracle.seatings(qid)]
    out = []
    for block, committee, picked in sorted(made):
        request_block, request = max(r for r in requests if r[0] < block)
        out.append(Drawn(block, request, request_block, committee, picked))
    return out


def keeper_probe(node: Anvil, scenario: Scenario) -> Contract:
    """An honest keeper's own DrawGrinder (deployed from account 0, no party): it runs a draw with eth_call."""
    keeper = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=scenario.artifacts.values())
    return keeper.deploy(grinder_artifact(), scenario.deployment.address("RecomputeOracle")).contract


def draws_not_chosen(played: Played) -> None:
    """The grinder could not choose: its one-transaction challenge-and-draw was refused (the randomness is
    not readable yet); each draw it ran at several blocks picked the same oracles at every block, which are
    those the draw seated and those an honest keeper's draw gives in the block before; its oracle, when it
    answered or sat on a committee, was overturned or outvoted and lost its whole bond."""
    scenario, result, keeper = played.scenario, played.result, played.prepared
    oracle = scenario.protocol().oracle
    grinder = scenario.trainers["cheater"]
    accomplice = Web3.to_checksum_address(scenario.keys[ACCOMPLICE].address)
    helper = grinder.db.get("grinder", "contract")
    assert helper is not None, "the grinder never deployed its contract"
    questions = questions_of(scenario, result)
    for qid in questions.values():
        rec = grinder.db.get("grind", qid)
        assert rec is not None and rec["challenge_and_draw"] == "RecomputeOracleRandomnessPending", (qid, rec)
    assert all(e["challenger"] != helper["address"] for e in oracle._logs("AnswerChallenged"))

    several, at_once = 0, 0
    ran = {False: 0, True: 0}  # draws the grinder ran itself, answering oracle / committee
    for qid in questions.values():
        draws = drawn(oracle, qid)
        assert [d.committee for d in draws] == [False, True], f"question {qid}: an answering oracle, then a committee"
        for d in draws:
            # Whoever made the draw, it seated what an honest keeper's draw gives in the block before.
            keeper_from = {"from": played.node.accounts[0].address}
            answerer, seated = keeper.functions.drawAndShow(qid).call(keeper_from, block_identifier=d.block - 1)
            assert (list(seated[-len(d.picked) :]) if d.committee else [answerer]) == d.picked, (qid, d, seated)
            # The grinder mines the blocks it waits for and so usually gets to a draw first, but not always:
            # every other party's transaction mines a block too, so the randomness can become readable while an
            # honest oracle ticks, which then draws it (always so for the committee after an honest oracle
            # challenged its ally's answer). It must have run draws of both kinds itself (checked below); each
            # it ran saw one outcome at every block it tried.
            probe = grinder.db.get("probe", f"{qid}:{d.request}")
            if probe is None:
                continue
            ran[d.committee] += 1
            runs = probe["probes"]
            assert runs and all(r.get("picked") == d.picked for r in runs), (d, runs)
            blocks = [r["block"] for r in runs]
            assert len(set(blocks)) == len(blocks) and max(blocks) < d.block
            several += len(blocks) > 1
            # A draw that seats its ally at the first block tried leaves it nothing to grind for.
            at_once += len(blocks) == 1 and bool(runs[0].get("favourable"))
    # The grinder challenges only an honest answer. When its ally was drawn to answer every question (the grinder
    # draws only then; a clean-clone run drew it for both), honest oracles challenge the lie and one of them draws
    # the committee in its own tick, before the grinder's: no committee draw of its own to check in that run. A
    # question it challenged itself it probes in the same tick, before anyone else can draw.
    own = [qid for qid in questions.values() if (grinder.db.get("grind", qid) or {}).get("challenged")]
    assert ran[False] and (ran[True] or not own), f"the grinder ran too few draws itself (answering, committee): {ran}"
    # It grinds (tries later blocks) whenever the first block does not seat its ally. Two clean-clone runs seated
    # the ally at the first block of both answering draws, and honest oracles drew both committees: nothing to
    # grind for. Any draw it ran that did not seat its ally at once must have been tried at several blocks.
    assert several or at_once == ran[False] + ran[True], f"the grinder never tried a second block: {ran}, {at_once}"

    lied = False
    for qid in questions.values():
        q = oracle.question(qid)
        assert q.status is QuestionStatus.FINAL
        for who, outputs in oracle.answers(qid):
            if who == accomplice:
                lied = True
                assert outputs_hash(outputs) != q.outputs_hash and oracle._logs("AnswerChallenged", {"questionId": qid})
        for seating in oracle.seatings(qid):
            if accomplice in seating.committee:
                lied = True
                votes = oracle.reveals(qid, from_block=seating.block)
                assert votes[accomplice] != q.outputs_hash, "its oracle's vote stood"
                assert sum(v == q.outputs_hash for v in votes.values()) > len(votes) // 2
    assert (oracle.bond_of(accomplice) == 0) is lied, "its oracle lost its bond exactly when it lied"


def oracles_not_starved(played: Played) -> None:
    """The starver's junk question and its game between its own accounts were refused before its games reached
    the oracle; its own oracle registered; every question of its games was drawn among the six oracles, and no
    honest oracle was slashed or deactivated."""
    scenario, result = played.scenario, played.result
    p = scenario.protocol()
    starver = scenario.trainers["cheater"]
    (attack,) = [rec for _, rec in starver.db.all("starve")]
    assert attack == {"ask": "RecomputeOracleNotGame", "open": "DisputeGameNotMarket"}, attack
    said = notes(scenario, "cheater")
    tried = max(i for i, m in enumerate(said) if "directly: refused" in m)
    assert tried < min(i for i, m in enumerate(said) if "published the inputs" in m), "it attacked too late"
    assert p.game.game_count() == len(result.games) and p.oracle.asked() == sorted(
        questions_of(scenario, result).values()
    )
    registered = {e["oracle"]: int(e["_block"]) for e in p.oracle._logs("OracleRegistered")}
    assert scenario.keys[ACCOMPLICE].address in registered and len(registered) == len(scenario.oracles)
    for qid in questions_of(scenario, result).values():
        first = drawn(p.oracle, qid)[0]
        assert not first.committee and first.request_block > max(registered.values()), "drawn among fewer oracles"
    for name in scenario.oracles:
        if name != ACCOMPLICE:
            assert p.oracle.is_active(scenario.keys[name].address), f"{name} was deactivated"


def waited_for_oracles(played: Played) -> None:
    """Only the cheater's oracle was registered when the first question was asked: the question stayed in its
    draw (its first draw found too few eligible oracles and asked for new randomness) and nothing was drawn
    before five honest oracles had registered before a randomness request."""
    scenario, result = played.scenario, played.result
    oracle = scenario.protocol().oracle
    accomplice = scenario.keys[ACCOMPLICE].address
    registered = {e["oracle"]: int(e["_block"]) for e in oracle._logs("OracleRegistered")}
    late = sorted(b for a, b in registered.items() if a != accomplice)
    assert len(late) == ORACLES and registered[accomplice] < late[0]
    questions = sorted(questions_of(scenario, result).values())
    for qid in questions:
        for d in drawn(oracle, qid):
            assert d.request_block > late[-1], f"question {qid} was drawn before five honest oracles were eligible"
    first = questions[0]
    asked = int(oracle._logs("QuestionAsked", {"questionId": first})[0]["_block"])
    assert asked < late[0], "the honest oracles registered before the question was asked"
    at_ask = Question.from_abi(oracle.contract.functions.question(first).call(block_identifier=asked))
    assert at_ask.status is QuestionStatus.DRAWING and at_ask.slot_count == 1, "the liar's was not the only slot"
    assigned = drawn(oracle, first)[0]
    requests = [int(e["_block"]) for e in oracle._logs("DrawRequested", {"questionId": first})]
    failed = [b for b in requests if asked < b < assigned.block]
    assert failed, "the first draw did not wait: no randomness was requested again before the assignment"
    waiting = Question.from_abi(oracle.contract.functions.question(first).call(block_identifier=failed[0]))
    assert waiting.status is QuestionStatus.DRAWING and waiting.attempts == 0
    assert any("too few eligible oracles" in m for name in scenario.oracles for m in notes(scenario, name))


def hostile_question_answered(played: Played) -> None:
    """The sybils' game asked about the gather node with the 1-d input they published (dim 1 does not exist
    there; an mm or a view, covered by the element table, would be decided on chain instead): the oracle drawn to answer
    ran it, answered INAPPLICABLE and wrote down why; nobody challenged; both sybils lost that game. Every
    oracle went on serving the honest trainer's games, whose questions it answered with the computed outputs."""
    scenario, result = played.scenario, played.result
    p = scenario.protocol()
    sybils = {"sybil-1", "sybil-2"}
    questions = questions_of(scenario, result)
    (among,) = [g for g in result.games if {g.defender, g.challenger} == sybils]
    assert among.outcome is Outcome.BOTH_LOSE, among
    hostile = questions[among.game_id]
    q = p.oracle.question(hostile)
    assert p.oracle.result(hostile) == (QuestionStatus.FINAL, INAPPLICABLE_HASH)
    assert not p.oracle._logs("AnswerChallenged", {"questionId": hostile})
    listing = scenario.public.get_blob(q.inputs_hash)
    crafted = scenario.public.get_tensor(listing[:32])
    assert crafted.dim() == 1, "the sybils did not publish the 1-d input"
    answerer = next(a for a in scenario.oracles.values() if a.address == q.oracle)
    rec = answerer.db.get("question", hostile) or {}
    assert rec["answered_kind"] == INAPPLICABLE and rec["verdict"]["kind"] == INAPPLICABLE, rec
    assert "out of range for a 1-D tensor" in rec["verdict"]["reason"], rec["verdict"]
    for agent in scenario.oracles.values():
        assert not any("handling it failed" in m for m in notes(scenario, agent.name)), agent.name
        assert not (agent.db.get("question", hostile) or {}).get("errors")
    for g in result.games:
        if g is among:
            continue
        qid = questions[g.game_id]
        (answered,) = [a for a in scenario.oracles.values() if a.address == p.oracle.question(qid).oracle]
        assert (answered.db.get("question", qid) or {})["answered_kind"] == COMPUTED


CASES: dict[str, Case] = {
    "faulty-kernel": Case(Stage.ORACLE),
    "one-ulp": Case(Stage.POST_STATE_PROOF, refused=True),
    "lazy": Case(Stage.POST_STATE_PROOF, refused=True),
    "poisoned-batch": Case(Stage.INPUT_PROOF, refused=True),
    "wrong-lr": Case(Stage.NODE_REVEAL, refused=True),
    "eager-kernels": Case(Stage.ELEMENT),  # its first wrong node is an addmm: the dot phase decides it
    "forged-roots": Case(Stage.STEP_BISECTION),
    "wrong-graph": Case(Stage.NODE_REVEAL, refused=True),
    "wrong-input": Case(Stage.INPUT_PROOF, refused=True),
    "refuses-to-move": Case(Stage.TRACE_DESCENT),
    "copy-then-diverge": Case(Stage.ELEMENT),  # its faulty sub.Tensor is in the element table
    "one-ulp-exp": Case(Stage.ELEMENT),  # its exp is in the element table: the trace game decides it
    "lying-oracle": Case(Stage.ORACLE, check=liar_slashed),
    "colluding": Case(Stage.INPUT_PROOF, refused=True),
    "committee-grinder": Case(Stage.ORACLE, check=draws_not_chosen, prepare=keeper_probe),
    "oracle-starver": Case(Stage.ORACLE, check=oracles_not_starved),
    "lone-liar": Case(Stage.ORACLE, check=waited_for_oracles),
    "hostile-question": Case(Stage.ORACLE, check=hostile_question_answered, cheater_games=1),
}


# Entries whose scenarios are their own tests (commit-reveal, below): a copier plays no game, a squatting
# ring needs the honest trainer to come last, a last-second reveal is timed to the chain second.
OWN_TESTS = frozenset({"copier", "squatting-ring", "last-second"})
GAMES = sorted(set(CATALOGUE) - OWN_TESTS)


def parties(adversary: Adversary, workload: Workload) -> int:
    trainers, oracles = cast(adversary, K, workload.config)
    return 2 + len(trainers) + len(oracles)  # with the client and the watcher


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workload() -> Workload:
    return mlp_digits(steps=STEPS, checkpoint_interval=INTERVAL, batch_size=BATCH, seed=SEED)


@pytest.fixture(scope="module")
def node(workload: Workload) -> Iterator[Anvil]:
    """One anvil for the module, with a funded account for the deployer and every party."""
    most = max(parties(a, workload) for a in CATALOGUE.values())
    with Anvil(accounts=1 + most) as n:
        yield n


@pytest.fixture(scope="module")
def honest(workload: Workload) -> RunWitness:
    return RunWitness(workload.program, workload.dataset, workload.config, workload.initial_state())


@pytest.fixture(scope="module")
def measured() -> Iterator[list[str]]:
    """Per-entry wall time, games, moves and gas, printed as a table after the module (-s)."""
    rows: list[str] = []
    yield rows
    if rows:
        print(
            "\nentry               wall  warped  games  moves per game  gas honest (each)   gas cheater   "
            "ended in          refused with"
        )
        print("\n".join(rows))


def notes(scenario: Scenario, name: str) -> list[str]:
    """The notes in party `name`'s journal (what it said it did), in order."""
    agents = {a.name: a for a in scenario.agents}
    return [a.detail for a in agents[name].db.actions() if a.kind == "note"]


def refusals(scenario: Scenario, name: str) -> list[str]:
    """The custom errors of the moves the contracts refused `name` (not counting moves that came late)."""
    return [m.group(1) for n in notes(scenario, name) if (m := REFUSED.search(n))]


class Stages:
    """Called after every devnet round: the last stage each game was seen in before it resolved."""

    def __init__(self, protocol: Protocol) -> None:
        self.game = protocol.game
        self.last: dict[int, Stage] = {}

    def __call__(self) -> None:
        for game_id in range(1, self.game.game_count() + 1):
            stage = self.game.game_of(game_id).stage
            if stage is not Stage.RESOLVED:
                self.last[game_id] = stage


def decided_by(protocol: Protocol, game_id: int, stage: Stage) -> str:
    """The words `Adversary.decided_by` starts with for a game that ended in `stage`."""
    if stage is Stage.ORACLE:
        return "oracle"
    if stage is Stage.INPUT_PROOF:
        disputed = protocol.game.input_disputed(game_id)
        assert disputed is not None
        return f"{RefKind(disputed.ref_kind).name.lower()} input proof"
    if stage is Stage.POST_STATE_PROOF:
        return "post-state proof"
    if stage is Stage.NODE_REVEAL:
        return "node reveal"
    if stage is Stage.ELEMENT:
        return "element"
    return "timeout"


def make_scenario(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    folder: Path,
    workload: Workload,
    trainers: list[TrainerRole],
    oracles: list[OracleRole],
    slots: int = K,
    **options: Any,
) -> Scenario:
    return Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=deployment,
        artifacts=artifacts,
        folder=folder,
        order=TaskOrder(workload, reward=3 * ETHER, slots=slots),
        trainers=trainers,
        oracles=oracles,
        **options,
    )


def assert_bids_capped(scenario: Scenario, result: ScenarioResult) -> None:
    """Every transaction any party sent bid at most the task's gas price cap per gas (maxFeePerGas), and so
    paid at most it: the market repays gas at min(price paid, cap), so a bid above it is never repaid."""
    p = scenario.protocol()
    cap = p.market.spec_of(result.task_id).gas_price_cap
    w3 = p.market.chain.w3
    sent = [e for e in result.journal if e.kind == "tx"]
    assert sent, "nobody sent a transaction?"
    for e in sent:
        tx, receipt = w3.eth.get_transaction(HexStr(e.tx)), w3.eth.get_transaction_receipt(HexStr(e.tx))
        assert int(tx["maxFeePerGas"]) <= cap, (e.agent, e.detail, tx["maxFeePerGas"], cap)
        assert int(receipt["effectiveGasPrice"]) <= cap, (e.agent, e.detail)


def assert_verdicts(result: ScenarioResult, honest_group: int) -> None:
    """The client replayed sampled intervals of every revealed result: the honest one replays bit for bit,
    no other does (or could not be replayed at all: a state it claims was never published)."""
    assert result.verdicts.get(honest_group) == "verified", result.verdicts
    assert all(v in ("mismatch", "unverified") for g, v in result.verdicts.items() if g != honest_group), (
        result.verdicts
    )


# -- the catalogue on anvil -------------------------------------------------------------------


def test_every_entry_has_a_case() -> None:
    assert sorted(CASES) == GAMES, "each catalogue entry needs a Case here (or its own test), and each Case an entry"
    assert set(CATALOGUE) >= OWN_TESTS
    assert DEFAULT in CATALOGUE and CASES[DEFAULT].decided_in is Stage.ELEMENT, "the demo's default is decided on chain"


@pytest.mark.parametrize("name", GAMES)
def test_the_honest_group_wins_against(
    name: str,
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
    measured: list[str],
) -> None:
    adversary, case = CATALOGUE[name], CASES[name]
    trainers, oracles = cast(adversary, K, workload.config)
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, oracles)
    p = scenario.protocol()
    stages = Stages(p)
    prepared = case.prepare(node, scenario) if case.prepare is not None else None
    result = scenario.run(timeout_s=240, on_round=stages)

    honest = [t.name for t in trainers if t.strategy is HONEST]
    cheaters = [t.name for t in trainers if t.strategy is not HONEST]
    strategy = trainers[-1].strategy
    assert isinstance(strategy, Cheater)
    assert result.crashes == [] and result.rpc_failures == 0 and result.refused == []

    # The task is paid to the honest group.
    task = result.task_id
    group = {n: p.market.trainer_of(task, scenario.keys[n].address).group for n in honest + cheaters}
    assert len({group[n] for n in honest}) == 1 and all(group[c] != group[honest[0]] for c in cheaters)
    assert result.status is TaskStatus.FINALIZED and result.winning_group == group[honest[0]]

    # One game per (cheater, honest) pair, each won by the honest side, on the step the cheater deviated at.
    against_honest = [g for g in result.games if {g.defender, g.challenger} & set(honest)]
    assert len(against_honest) == len(cheaters) * len(honest)
    assert len(result.games) - len(against_honest) == case.cheater_games
    for g in result.games:
        assert {g.defender, g.challenger} & set(cheaters)
        if g in against_honest:
            winner = g.defender if g.outcome is Outcome.DEFENDER_WINS else g.challenger
            assert g.outcome in (Outcome.DEFENDER_WINS, Outcome.CHALLENGER_WINS) and winner in honest, g
        assert g.step == strategy.deviates_at, f"game {g.game_id} isolated step {g.step}"
        stage = stages.last[g.game_id]
        assert stage is case.decided_in, f"game {g.game_id} ended in {stage.name}"
        words = decided_by(p, g.game_id, stage)
        assert adversary.decided_by.startswith(words), f"{name}: decided by {words!r}, not {adversary.decided_by!r}"
    refused = {c: refusals(scenario, c) for c in cheaters}
    for c in cheaters:
        assert bool(refused[c]) is case.refused, f"{c}: refused {refused[c]}"
    assert not any(refusals(scenario, h) for h in honest), "an honest move was refused"

    # The cheaters lose their bond; the honest trainers get their share of the reward and their gas back.
    for c in cheaters:
        assert result.eliminated[c]
        assert result.net(c) <= -result.bond, f"{c}: {result.net(c)}"
    for h in honest:
        assert not result.eliminated[h]
        assert result.net(h) >= result.reward // len(honest) - result.fees[h], f"{h}: {result.net(h)}"
    # Every honest oracle keeps its whole bond.
    bond = p.oracle.min_bond()
    for role in oracles:
        if not role.liar:
            who = scenario.keys[role.name].address
            assert p.oracle.bond_of(who) == bond and not p.oracle._logs("OracleSlashed", {"oracle": who}), role.name
    if case.check is not None:
        case.check(Played(node, scenario, result, prepared))
    assert_bids_capped(scenario, result)
    assert_verdicts(result, group[honest[0]])

    moves = ",".join(str(g.moves) for g in result.games)
    honest_gas = "/".join(f"{result.gas[h] / 1e6:.2f}M" for h in honest)
    cheater_gas = "/".join(f"{result.gas[c] / 1e6:.2f}M" for c in cheaters)
    errors = ",".join(sorted({e for c in cheaters for e in refused[c]})) or "-"
    row = (
        f"{name:18s} {result.wall_s:5.1f}s {result.warped_s:6d}s  {len(result.games):5d}  {moves:15s} "
        f"{honest_gas:19s} {cheater_gas:13s} {stages.last[result.games[0].game_id].name:17s} {errors}"
    )
    measured.append(row)
    print(f"ADVERSARY {row}")


def test_an_eager_trainer_that_audits_does_not_submit(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """Eager kernels are caught by the trainer's own RepOps self-audit: it does not submit (and
    forfeits its bond), and says why; the honest trainer is paid alone, without a game."""
    trainers = [TrainerRole("honest-1", HONEST), TrainerRole("eager", EagerKernels("eager", audits=True))]
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, list(oracle_roles()), slots=2)
    result = scenario.run(timeout_s=120)
    p = scenario.protocol()
    eager = p.market.trainer_of(result.task_id, scenario.keys["eager"].address)
    assert eager.joined and not eager.submitted
    said = notes(scenario, "eager")
    assert any("SELF-AUDIT FAILED" in m and "not committing" in m for m in said), said
    assert not any(": submitted " in m for m in said)
    assert result.games == [] and result.status is TaskStatus.FINALIZED
    assert result.net("eager") <= -result.bond
    assert result.net("honest-1") >= result.reward - result.fees["honest-1"]


def test_a_lone_liar_whose_question_no_oracle_comes_for_is_abandoned(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """`lone-liar` with no honest oracle ever coming: each question waits in its draw (the devnet moves the
    clock when everyone waits) until its draw deadline, then is abandoned; the games end NoDecision, nobody
    is eliminated, nobody is paid the reward and the client gets it back."""
    trainers, oracles = cast(CATALOGUE["lone-liar"], K, workload.config)
    alone = [o for o in oracles if o.name == ACCOMPLICE]
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, alone)
    result = scenario.run(timeout_s=120)
    p = scenario.protocol()
    assert result.crashes == [] and result.refused == []

    assert len(result.games) == 2 and all(g.outcome is Outcome.NO_DECISION for g in result.games), result.games
    wait_limit = p.oracle.params().wait_limit
    for qid in questions_of(scenario, result).values():
        assert p.oracle.question(qid).status is QuestionStatus.ABANDONED
        assert not p.oracle.assignments(qid), "a question was assigned with one oracle"
        assert len(p.oracle._logs("DrawRequested", {"questionId": qid})) >= 2, "the draw did not wait"
    assert result.warped_s >= wait_limit
    said = notes(scenario, ACCOMPLICE)
    assert any("too few eligible oracles" in m for m in said), said

    assert result.status is TaskStatus.FINALIZED and result.winning_group is not None and result.winning_group < 0
    assert not any(result.eliminated.values()), result.eliminated
    assert result.net("client") == -result.fees["client"], "the client did not get its reward back"
    for t in trainers:
        assert result.net(t.name) == -result.fees[t.name], f"{t.name}: {result.net(t.name)}"


# -- the cheaters' runs, without a chain ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(CATALOGUE) - {"copier"}))  # a copier trains nothing
def test_the_claimed_roots_differ_from_the_cheat_step_on(name: str, workload: Workload, honest: RunWitness) -> None:
    """State roots (bytes) equal the honest run's up to the cheat step and differ after it."""
    strategy = CATALOGUE[name].strategy(workload.config)
    assert isinstance(strategy, Cheater) and not strategy.audits
    cheat = strategy.witness(workload.program, workload.dataset, workload.config, workload.initial_state())
    checkpoints = list(range(0, STEPS + 1, INTERVAL))
    if isinstance(strategy, ForgedRoots):  # it has its checkpoints only
        last_same, steps = strategy.honest_until, checkpoints
    else:
        assert strategy.deviates_at is not None
        last_same, steps = strategy.deviates_at, list(range(STEPS + 1))
    assert [cheat.root(s) == honest.root(s) for s in steps] == [s <= last_same for s in steps]
    same = [bytes(r) == bytes(h) for r, h in zip(cheat.checkpoints.roots, honest.checkpoints.roots, strict=True)]
    assert same == [s <= last_same for s in checkpoints]


@pytest.mark.parametrize(("name", "claims_task_descriptor"), [("wrong-graph", False), ("wrong-input", True)])
def test_a_rewired_node_is_the_first_difference_of_its_step(
    name: str, claims_task_descriptor: bool, workload: Workload, honest: RunWitness
) -> None:
    strategy = CATALOGUE[name].strategy(workload.config)
    cheat = strategy.witness(workload.program, workload.dataset, workload.config, workload.initial_state())
    assert isinstance(cheat, RewiredWitness) and cheat.rewired is not None
    step = cheat.at_step
    mine, theirs = cheat.trace(step).records, honest.trace(step).records
    first = next(i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b)
    assert first == cheat.node
    same_descriptor = mine[first].descriptor_hash == workload.program.descriptor_hash(first)
    assert same_descriptor is claims_task_descriptor
    if claims_task_descriptor:  # the claimed inputs differ: a node input proof decides
        assert mine[first].inputs != theirs[first].inputs
    else:  # the descriptor is its own: it is not in the task's graph
        assert cheat.rewired.graph_root != workload.program.graph_root
        assert mine[first].inputs == theirs[first].inputs


def test_eager_kernels_differ_from_repops_at_every_step(workload: Workload, honest: RunWitness) -> None:
    """From the same pre-state, the ATen trace of every step differs from the RepOps trace; its
    first differing node has the same inputs in both (so a game over it goes to the oracle)."""
    eager = EagerKernels("eager").witness(workload.program, workload.dataset, workload.config, workload.initial_state())
    for step in range(STEPS):
        state, batch = honest.state(step), honest.batch(step)
        _, _, mine = eager.interpreter.trace(state, batch)
        theirs = honest.trace(step)
        differ = [i for i, (a, b) in enumerate(zip(mine.records, theirs.records, strict=True)) if a != b]
        assert differ, f"step {step}: ATen and RepOps agree on every node"
        first = differ[0]
        assert mine.records[first].inputs == theirs.records[first].inputs
        assert mine.records[first].outputs != theirs.records[first].outputs


# The honest trainers open the games and challenge; the cheaters, who open none, defend. When the opener
# defends instead, the honest trainer itself has to prove its claims through its agent.
HONEST_PROVES = {
    "one-ulp": Stage.POST_STATE_PROOF,  # it opens the post-state entry and its source in the agreed trace
    "poisoned-batch": Stage.INPUT_PROOF,  # it opens its batch, row by row, in the dataset
    "wrong-input": Stage.INPUT_PROOF,  # it opens the source node's record in its trace
}


@pytest.mark.parametrize("name", sorted(HONEST_PROVES))
def test_the_honest_defender_proves_its_claims(
    name: str,
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    trainers, oracles = cast(CATALOGUE[name], 2, workload.config)
    scenario = Scenario(
        rpc_url=node.rpc_url,
        accounts=node.accounts,
        deployment=deployment,
        artifacts=artifacts,
        folder=tmp_path,
        order=TaskOrder(workload, reward=3 * ETHER, slots=2),
        trainers=trainers,
        oracles=oracles,
        opener_defends=True,
    )
    p = scenario.protocol()
    stages = Stages(p)
    result = scenario.run(timeout_s=240, on_round=stages)

    [game] = result.games
    assert (game.defender, game.challenger) == ("honest-1", "cheater"), "the opener (honest) defends"
    assert game.outcome is Outcome.DEFENDER_WINS, game
    assert stages.last[game.game_id] is HONEST_PROVES[name], stages.last[game.game_id].name
    assert not refusals(scenario, "honest-1"), "an honest proof was refused"
    assert game.step == trainers[-1].strategy.deviates_at
    assert result.eliminated == {"honest-1": False, "cheater": True}
    assert result.net("cheater") <= -result.bond
    assert result.net("honest-1") >= result.reward - result.fees["honest-1"]
    proved = [n for n in notes(scenario, "honest-1") if n.startswith(f"game {game.game_id}: proved ")]
    assert proved, "the honest defender's journal shows no proof"


# -- commit-reveal: copying, squatting, revealing late, and nobody watching -------------------------------


def market_events(p: Protocol, name: str, task_id: int) -> list[Any]:
    return list(p.market._logs(name, {"taskId": task_id}))


def block_time(p: Protocol, block: int) -> int:
    return int(p.market.chain.w3.eth.get_block(block)["timestamp"])


def assert_paid_the_honest(scenario: Scenario, result: ScenarioResult, honest: list[str]) -> int:
    """The task is won by the honest group, each honest trainer ends with at least its share less its gas; the
    honest group."""
    p = scenario.protocol()
    groups = {p.market.trainer_of(result.task_id, scenario.keys[h].address).group for h in honest}
    assert len(groups) == 1
    (group,) = groups
    assert result.status is TaskStatus.FINALIZED and result.winning_group == group
    for h in honest:
        assert not result.eliminated[h]
        assert result.net(h) >= result.reward // len(honest) - result.fees[h], f"{h}: {result.net(h)}"
    return group


def test_a_copier_cannot_reveal_a_result_it_did_not_commit_to(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """The copier never trains. It had to commit before the submit deadline, before any result was revealed,
    so it committed blind; when it reveals the honest list it saw, the list does not open its commitment: the
    market refuses it, and its bond is forfeit to the client. The honest pair is paid without a game."""
    trainers, oracles = cast(CATALOGUE["copier"], K, workload.config)
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, oracles)
    result = scenario.run(timeout_s=240)
    p = scenario.protocol()
    assert result.crashes == [] and result.refused == []

    copier = p.market.trainer_of(result.task_id, scenario.keys["cheater"].address)
    assert copier.joined and copier.committed and not copier.submitted
    said = notes(scenario, "cheater")
    assert any("refused its reveal (TaskMarketRevealMismatch)" in n for n in said), said
    assert not any("trained" in n for n in said), "the copier trains nothing"
    [forfeit] = market_events(p, "BondsForfeited", result.task_id)
    assert (int(forfeit["count"]), int(forfeit["amount"])) == (1, result.bond)
    assert result.net("cheater") <= -result.bond
    assert result.games == []
    honest = [t.name for t in trainers if t.strategy is HONEST]
    group = assert_paid_the_honest(scenario, result, honest)
    # The client got the honest result, and the copier's bond: its net is the reward paid less that bond.
    assert result.net("client") + result.fees["client"] == -result.reward + result.bond
    assert result.verdicts == {group: "verified"}
    assert_bids_capped(scenario, result)


def test_a_squatting_ring_loses_to_an_outside_challenger(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """Two lazy sybils take both slots the moment the task is posted and submit the untrained initial state.
    The honest trainer finds the task full, trains it anyway, enters as an outside challenger (bond, no slot),
    opens a game against each sybil and wins both: it alone is paid the reward, the sybils lose their bonds."""
    adversary = CATALOGUE["squatting-ring"]
    trainers, oracles, slots = squatting_cast(adversary, K, workload.config)
    assert slots == 2 and [t.strategy.honest for t in trainers] == [False, False, True]
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, oracles, slots=slots)
    p = scenario.protocol()
    stages = Stages(p)
    result = scenario.run(timeout_s=240, on_round=stages)
    assert result.crashes == [] and result.refused == []

    task = result.task_id
    sybils = [t.name for t in trainers if not t.strategy.honest]
    (honest,) = [t.name for t in trainers if t.strategy.honest]
    me = p.market.trainer_of(task, scenario.keys[honest].address)
    assert me.challenger and me.submitted and not me.eliminated
    assert all(not p.market.trainer_of(task, scenario.keys[s].address).challenger for s in sybils)
    [entered] = market_events(p, "ChallengerEntered", task)
    assert entered["challenger"] == scenario.keys[honest].address
    assert p.market.task(task).joined == slots and p.market.task(task).entrants == slots + 1

    assert len(result.games) == len(sybils)
    for g in result.games:
        assert (g.challenger, g.outcome) == (honest, Outcome.CHALLENGER_WINS), g
        assert g.defender in sybils and g.step == 0
        stage = stages.last[g.game_id]
        assert adversary.decided_by.startswith(decided_by(p, g.game_id, stage)), stage
    for s in sybils:
        assert result.eliminated[s] and result.net(s) <= -result.bond
    group = assert_paid_the_honest(scenario, result, [honest])
    assert result.net(honest) >= result.reward - result.fees[honest]
    assert_verdicts(result, group)
    assert_bids_capped(scenario, result)


def test_a_last_second_reveal_is_still_disputed_in_time(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """The liar reveals in the last second of its reveal window (the devnet stamps each block one second after
    the one before, so the second is exact). The honest trainers, which revealed at once, see it, open their
    games within the dispute hour that follows, and win them at the oracle."""
    trainers, oracles = cast(CATALOGUE["last-second"], K, workload.config)
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, oracles, block_time=1)
    result = scenario.run(timeout_s=300)
    p = scenario.protocol()
    assert result.crashes == [] and result.refused == []
    task = result.task_id
    spec = p.market.spec_of(task)
    liar = scenario.keys["cheater"].address
    reveals = {e["trainer"]: block_time(p, int(e["_block"])) for e in market_events(p, "ResultSubmitted", task)}
    [commit] = p.market.commitments(task, liar)
    closes_at = max(commit.timestamp, spec.submit_deadline) + p.market.reveal_window()
    assert reveals[liar] == closes_at, (reveals[liar], closes_at)  # the last second of its window
    assert all(t < reveals[liar] for a, t in reveals.items() if a != liar), "the honest trainers revealed first"

    honest = [t.name for t in trainers if t.strategy is HONEST]
    opened = {int(e["gameId"]): block_time(p, int(e["_block"])) for e in market_events(p, "DisputeOpened", task)}
    assert len(result.games) == len(honest)
    for g in result.games:
        assert g.defender == "cheater" and g.challenger in honest and g.outcome is Outcome.CHALLENGER_WINS, g
        assert reveals[liar] < opened[g.game_id] <= spec.dispute_deadline
    assert result.eliminated["cheater"] and result.net("cheater") <= -result.bond
    group = assert_paid_the_honest(scenario, result, honest)
    assert_verdicts(result, group)
    assert_bids_capped(scenario, result)


def test_no_watcher(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """No watcher runs at all: each honest trainer opens its own game against the cheater, plays it, settles
    it, and is repaid from the cheater's bond both the gas it spent opening the game (OpenerRepaid) and its
    metered gas (CompensationPaid). Its balance shows it to the wei: share + repayments - fees."""
    trainers, oracles = cast(CATALOGUE["faulty-kernel"], K, workload.config)
    scenario = make_scenario(node, deployment, artifacts, tmp_path, workload, trainers, oracles, watcher=False)
    assert scenario.watcher is None and all(a.role != "watcher" for a in scenario.agents)
    result = scenario.run(timeout_s=240)
    p = scenario.protocol()
    assert result.crashes == [] and result.refused == []
    task = result.task_id
    honest = [t.name for t in trainers if t.strategy is HONEST]
    by_address = {scenario.keys[h].address: h for h in honest}
    repaid = {int(e["gameId"]): e for e in market_events(p, "OpenerRepaid", task)}
    comp = {int(e["gameId"]): e for e in market_events(p, "CompensationPaid", task)}
    assert len(result.games) == len(honest) == len(repaid) == len(comp)
    for g in result.games:
        assert g.challenger in honest and g.outcome is Outcome.CHALLENGER_WINS
        opener = repaid[g.game_id]["opener"]
        assert by_address.get(opener) == g.challenger, "each honest trainer opened its own game"
        assert int(repaid[g.game_id]["amount"]) > 0
    assert result.gas["watcher"] == 0
    group = assert_paid_the_honest(scenario, result, honest)
    share = p.market.task(task).share
    for h in honest:
        address = scenario.keys[h].address
        back = sum(int(e["amount"]) for e in repaid.values() if e["opener"] == address)
        back += sum(int(e["amount"]) for e in comp.values() if e["winner"] == address)
        assert result.net(h) + result.fees[h] == share + back, h
    assert result.eliminated["cheater"]
    assert_verdicts(result, group)
    assert_bids_capped(scenario, result)


def test_a_challenging_client_beats_a_lone_cheater(
    node: Anvil,
    deployment: Deployment,
    artifacts: dict[str, Artifact],
    workload: Workload,
    tmp_path: Path,
) -> None:
    """The one trainer on the task's one slot cheats (a faulty kernel). The client, configured to challenge,
    trains the task itself, enters as an outside challenger, and wins the game: the honest result is its own,
    the reward comes back to it as its share, and the cheater's bond repays its gas."""
    cheat = CATALOGUE["faulty-kernel"].strategy(workload.config)
    scenario = make_scenario(
        node,
        deployment,
        artifacts,
        tmp_path,
        workload,
        [TrainerRole("cheater", cheat)],
        list(oracle_roles()),
        slots=1,
        client_challenges=True,
    )
    result = scenario.run(timeout_s=240)
    p = scenario.protocol()
    assert result.crashes == [] and result.refused == []
    task = result.task_id
    client = p.market.trainer_of(task, scenario.keys["client"].address)
    assert client.challenger and client.submitted and not client.eliminated and client.claimed
    [game] = result.games
    assert (game.defender, game.challenger, game.outcome) == ("cheater", "client", Outcome.CHALLENGER_WINS)
    assert result.eliminated["cheater"] and result.net("cheater") <= -result.bond
    assert result.winning_group == client.group
    assert result.net("client") + result.fees["client"] > 0, "the reward back, and its gas repaid"
    assert_verdicts(result, client.group)
    assert_bids_capped(scenario, result)
