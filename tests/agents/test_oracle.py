"""Oracle agents on anvil, against questions asked straight at the oracle.

The oracle is deployed with its game bound to the test's key (a `Binding` to an address), so a
test asks whatever question it likes: a node whose inputs do not fit it (INAPPLICABLE), inputs
nobody published (UNAVAILABLE), inputs that only some oracles can fetch (a false UNAVAILABLE,
challenged and overturned by a committee that commits, then reveals, through a member killed
between the two). Five `OracleAgent`s (the fewest a question can be drawn with) play each one
in a `Devnet`, which mines a block when a draw waits for randomness and warps the clock when
everyone waits for a window.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from recorder import Events

from offchain.agents.base import Agent, AgentCrashed, Observer
from offchain.agents.devnet import Devnet
from offchain.agents.oracle import INAPPLICABLE, UNAVAILABLE, OracleAgent
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.deploy import BINDINGS, PROTOCOL, Binding, Deployment, deploy_all
from offchain.contracts import recompute_oracle as ro
from offchain.contracts.recompute_oracle import QuestionStatus, RecomputeOracleClient
from offchain.store import Store
from trainer.commit import commit_tensor
from trainer.interp import Interpreter
from trainer.workloads import Workload

pytestmark = pytest.mark.anvil

ORACLE_ACCOUNTS = range(1, 6)
PARTIES = (10, 11)  # the dispute's two sides: never drawn
ADDMM, GELU = 1, 2  # nodes of the digits MLP's step: addmm(bias[128], x[8, 64], w[64, 128]); gelu([8, 128])


@pytest.fixture
def deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    """The protocol, with the oracle's game bound to account 0 (the asker) instead of the DisputeGame."""
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    bindings = (Binding("RecomputeOracle", "bindGame", deployer.address, "game"), BINDINGS[1])
    return deploy_all(deployer, artifacts=artifacts, protocol=PROTOCOL, bindings=bindings, write=False)


@pytest.fixture
def asker(node: Anvil, artifacts: dict[str, Artifact], deployment: Deployment) -> RecomputeOracleClient:
    chain = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return RecomputeOracleClient(
        chain, deployment.address("RecomputeOracle"), artifacts["RecomputeOracle"], [artifacts["BlockhashRandomness"]]
    )


class Oracles:
    """Five oracle agents, each with its own key, home and (unless shared) public store."""

    def __init__(
        self,
        node: Anvil,
        deployment: Deployment,
        artifacts: dict[str, Artifact],
        folder: Path,
        public: Store | None,
        observer: Observer,
    ) -> None:
        self.node, self.deployment, self.artifacts, self.folder = node, deployment, artifacts, folder
        self.public, self.observer = public, observer
        self.agents: dict[str, OracleAgent] = {}
        for i in ORACLE_ACCOUNTS:
            self.agents[f"oracle-{i}"] = self.make(f"oracle-{i}")

    def make(self, name: str) -> OracleAgent:
        i = int(name.rpartition("-")[2])
        return OracleAgent(
            name,
            rpc_url=self.node.rpc_url,
            private_key=self.node.accounts[i].private_key,
            deployment=self.deployment,
            artifacts=self.artifacts,
            home=self.folder / name,
            public=self.public or Store(self.folder / name / "public"),
            observer=self.observer,
        )

    def restart(self, agent: Agent) -> Agent:
        fresh = self.make(agent.name)
        self.agents[agent.name] = fresh
        return fresh

    def by_address(self, address: str) -> OracleAgent:
        return next(a for a in self.agents.values() if a.address == address)

    def devnet(self) -> Devnet:
        return Devnet(self.node.rpc_url, list(self.agents.values()), observer=self.observer, restart=self.restart)

    def registered(self) -> bool:
        return all(a.db.get("oracle", "registered") for a in self.agents.values())


@pytest.fixture
def oracles(
    node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact], tmp_path: Path
) -> Callable[..., Oracles]:
    def make(*, shared_store: bool = True) -> Oracles:
        public = Store(tmp_path / "public") if shared_store else None
        pool = Oracles(node, deployment, artifacts, tmp_path, public, Events())
        pool.devnet().run(pool.registered, timeout_s=60)
        return pool

    return make


def parties(node: Anvil) -> tuple[str, str]:
    return (node.accounts[PARTIES[0]].address, node.accounts[PARTIES[1]].address)


def publish(store: Store, tensors: list[torch.Tensor]) -> list[bytes]:
    """What a trainer publishes for the oracle: the tensors, and the list of their commitments."""
    commitments = [store.put_tensor(t) for t in tensors]
    store.put_blob(b"".join(commitments))
    return commitments


def ended(asker: RecomputeOracleClient, qid: int) -> Callable[[], bool]:
    return lambda: asker.question(qid).status.ended


def test_a_node_whose_inputs_do_not_fit_it_is_answered_inapplicable(
    node: Anvil, asker: RecomputeOracleClient, oracles: Callable[..., Oracles], workload: Workload
) -> None:
    pool = oracles()
    store = next(iter(pool.agents.values())).public
    program_hash = store.put_program(workload.program)
    # addmm(bias, x, w) with shapes that fit neither the node nor each other: the kernel raises.
    hostile = [torch.zeros(3), torch.ones(2, 5), torch.ones(7, 4)]
    qid = asker.ask(program_hash, ADDMM, publish(store, hostile), parties(node))
    pool.devnet().run(ended(asker, qid), timeout_s=120)

    q = asker.question(qid)
    assert asker.result(qid) == (QuestionStatus.FINAL, ro.INAPPLICABLE_HASH)
    answerer = pool.by_address(q.oracle)
    rec = answerer.db.get("question", qid)
    assert rec is not None and rec["answered"] == ro.INAPPLICABLE_HASH.hex() and rec["answered_kind"] == INAPPLICABLE
    assert rec["verdict"]["kind"] == INAPPLICABLE and rec["verdict"]["reason"], rec
    for agent in pool.agents.values():  # every oracle ran the node once, found the same, and nobody challenged
        verdict = (agent.db.get("question", qid) or {})["verdict"]
        assert verdict["kind"] == INAPPLICABLE and agent.nodes_recomputed == 1
    assert not asker._logs("AnswerChallenged")
    assert any("answered INAPPLICABLE" in m for n, m in pool.observer.seen if n == answerer.name)  # type: ignore[attr-defined]

    # The next tick, and a restarted agent's first, go over the same question without raising.
    for agent in pool.agents.values():
        for _ in range(3):
            agent.tick()
        assert (agent.db.get("question", qid) or {}).get("status") == "done"
        agent.close()
    fresh = pool.make(answerer.name)
    for _ in range(3):
        fresh.tick()
    assert (fresh.db.get("question", qid) or {}).get("status") == "done"


def test_inputs_nobody_published_are_answered_unavailable(
    node: Anvil, asker: RecomputeOracleClient, oracles: Callable[..., Oracles], workload: Workload
) -> None:
    pool = oracles()
    store = next(iter(pool.agents.values())).public
    program_hash = store.put_program(workload.program)
    missing = [b"\x42" * 32]  # a commitment whose tensor, and whose input list, were never published
    qid = asker.ask(program_hash, GELU, missing, parties(node))
    devnet = pool.devnet()
    devnet.run(ended(asker, qid), timeout_s=120)

    q = asker.question(qid)
    assert asker.result(qid) == (QuestionStatus.FINAL, ro.UNAVAILABLE_HASH)
    answerer = pool.by_address(q.oracle)
    rec = answerer.db.get("question", qid) or {}
    assert rec["answered_kind"] == UNAVAILABLE and "MissingObjectError" in rec["unavailable"], rec
    assert "verdict" not in rec, "an unavailable verdict is not kept: a later role fetches again"
    # It waited half the answer window for the inputs before giving up (the devnet warped the clock).
    (answered,) = asker._logs("QuestionAnswered")
    (assigned,) = asker.assignments(qid)
    answer_window = asker.params().answer_window
    answered_at = int(asker.chain.w3.eth.get_block(answered["_block"])["timestamp"])
    assert answered_at >= assigned.deadline - answer_window + answer_window // 2
    assert not asker._logs("AnswerChallenged"), "nobody else could fetch them either: no challenge"
    assert all(a.nodes_recomputed == 0 for a in pool.agents.values())


def test_a_false_unavailable_is_challenged_and_overturned_by_a_committee(
    node: Anvil, asker: RecomputeOracleClient, oracles: Callable[..., Oracles], workload: Workload
) -> None:
    """Each oracle has its own store, and the inputs reach every store but the answerer's: it answers
    UNAVAILABLE, another challenges, and a committee of the other three commits and reveals the computed
    outputs. One member is killed right after its commitment landed; restarted over the same home, it
    reveals with the salt its records kept."""
    pool = oracles(shared_store=False)
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(8, 128, generator=generator)
    for agent in pool.agents.values():
        program_hash = agent.public.put_program(workload.program)
    commitments = publish(Store(pool.folder / "scratch"), [x])
    expected = ro.outputs_hash([commit_tensor(t) for t in Interpreter(workload.program).run_node(GELU, [x])])
    qid = asker.ask(program_hash, GELU, commitments, parties(node))
    devnet = pool.devnet()
    devnet.run(lambda: asker.question(qid).status is QuestionStatus.ASSIGNED, timeout_s=60)
    answerer = pool.by_address(asker.question(qid).oracle)
    for agent in pool.agents.values():
        if agent is not answerer:
            publish(agent.public, [x])

    killed: list[str] = []

    def crash_after_commit(receipt: Receipt, what: str) -> None:
        if what == "commitVote" and not killed:
            killed.append(receipt.tx_hash)
            raise AgentCrashed("killed right after its commitment was mined")

    for agent in pool.agents.values():
        agent.chain.crash_after = crash_after_commit
    devnet.run(ended(asker, qid), timeout_s=180)

    q = asker.question(qid)
    (challenged,) = asker._logs("AnswerChallenged")
    challenger = challenged["challenger"]
    (seating,) = asker.seatings(qid)
    assert set(seating.committee) == {a.address for a in pool.agents.values()} - {answerer.address, challenger}
    committed = asker.commitments(qid, from_block=seating.block)
    revealed = asker.reveals(qid, from_block=seating.block)
    assert set(committed) == set(revealed) == set(seating.committee)
    assert q.status is QuestionStatus.FINAL and q.outputs_hash == expected != ro.UNAVAILABLE_HASH
    assert set(revealed.values()) == {q.outputs_hash}
    assert len(killed) == 1 and len(devnet.crashes) == 1, "one member was killed between commit and reveal"
    # Its records held the salt before the commitment was sent; the restarted agent revealed with it.
    crashed = pool.agents[devnet.crashes[0]]
    (vote,) = [v for _, v in crashed.db.all("vote")]
    assert vote["committed"] and vote["revealed"] and bytes.fromhex(vote["outputs_hash"]) == q.outputs_hash
    assert (
        ro.vote_commitment(qid, crashed.address, q.outputs_hash, bytes.fromhex(vote["salt"]))
        == committed[crashed.address]
    )
    # A wrong UNAVAILABLE costs what silence costs, no more; the challenger gets its bond back.
    params = asker.params()
    assert asker.bond_of(answerer.address) == params.min_bond - params.silence_slash
    assert asker.credit_of(challenger) >= params.challenge_bond or asker._logs("Withdrawn", {"account": challenger})
    assert devnet.refused == []


def test_a_question_whose_handling_fails_is_written_down_and_the_others_go_on(
    node: Anvil,
    asker: RecomputeOracleClient,
    oracles: Callable[..., Oracles],
    workload: Workload,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = oracles()
    store = next(iter(pool.agents.values())).public
    program_hash = store.put_program(workload.program)
    x = torch.ones(8, 128)
    broken = asker.ask(program_hash, GELU, publish(store, [torch.zeros(8, 128)]), parties(node))
    fine = asker.ask(program_hash, GELU, publish(store, [x]), parties(node))
    broken_hash = asker.question(broken).inputs_hash
    get_blob = Store.get_blob

    def on_fire(self: Store, digest: bytes) -> bytes:
        if digest == broken_hash:
            raise RuntimeError("disk on fire")  # not a StoreError: nothing the agent expects
        return get_blob(self, digest)

    monkeypatch.setattr(Store, "get_blob", on_fire)
    pool.devnet().run(ended(asker, fine), timeout_s=120)

    expected = ro.outputs_hash([commit_tensor(t) for t in Interpreter(workload.program).run_node(GELU, [x])])
    assert asker.result(fine) == (QuestionStatus.FINAL, expected)
    failed = [a.db.get("question", broken) or {} for a in pool.agents.values()]
    trouble = [r for r in failed if r.get("errors")]
    assert trouble and all("RuntimeError: disk on fire" in r["last_error"] for r in trouble), failed
    assert not asker.answers(broken), "nobody could read the broken question's inputs"
    said = [m for _, m in pool.observer.seen if f"question {broken}: handling it failed" in m]  # type: ignore[attr-defined]
    assert 1 <= len(said) <= len(pool.agents), "each agent says a new trouble once"
