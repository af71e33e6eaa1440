"""The recompute oracle's client on anvil: draws that wait for enough oracles, an answer, a challenge, and a
committee that commits and reveals through `vote_commitment` (computed in Python, checked by the contract).

The oracle is deployed with its game bound to the test's own key (a `Binding` to an address), so that the
test can ask questions directly; everything else is the protocol's own deployment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import PROTOCOL, Binding, deploy_all
from offchain.contracts import recompute_oracle as ro
from offchain.contracts.recompute_oracle import QuestionStatus, RecomputeOracleClient

pytestmark = pytest.mark.anvil

ORACLES = range(1, 7)  # six registered oracles (a question needs committeeSize + 2 = 5)
CHALLENGER = 7
PARTIES = ("0x" + "aa" * 20, "0x" + "bb" * 20)


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


@pytest.fixture(scope="module")
def clients(anvil: Anvil, artifacts: dict[str, Artifact]) -> Iterator[dict[int, RecomputeOracleClient]]:
    """The oracle through the keys of anvil's accounts 0 (the deployer, bound as the asking game) to 7."""
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[0].private_key, artifacts=artifacts.values())
    bindings = (Binding("RecomputeOracle", "bindGame", deployer.address, "game"),)
    deployment = deploy_all(deployer, artifacts=artifacts, protocol=PROTOCOL, bindings=bindings, write=False)
    address = deployment.address("RecomputeOracle")
    callees = [artifacts["BlockhashRandomness"]]
    out = {}
    for i in range(8):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[i].private_key, artifacts=artifacts.values())
        out[i] = RecomputeOracleClient(chain, address, artifacts["RecomputeOracle"], callees)
    yield out


def mine(client: RecomputeOracleClient, blocks: int = 1) -> None:
    for _ in range(blocks):
        client.chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def draw_when_ready(client: RecomputeOracleClient, qid: int) -> ro.Draw:
    """What an agent does: mine blocks until the draw's randomness is readable, then draw."""
    for _ in range(4):
        if client.draw_ready(qid):
            return client.draw(qid)
        mine(client)
    raise AssertionError(f"question {qid}: the randomness never became readable")


def test_refusal_words_and_the_commitment_encoding(clients: dict[int, RecomputeOracleClient]) -> None:
    assert b"refereed:inputs-unavailable" + bytes(5) == ro.ORACLE_UNAVAILABLE
    assert b"refereed:inputs-inapplicable" + bytes(4) == ro.ORACLE_INAPPLICABLE
    assert clients[0].unavailable_hash() == ro.UNAVAILABLE_HASH == ro.outputs_hash([ro.ORACLE_UNAVAILABLE])
    member = clients[1].chain.address
    c = ro.vote_commitment(5, member, b"\x11" * 32, b"\x22" * 32)
    encoded = (5).to_bytes(32, "big") + bytes(12) + bytes.fromhex(member[2:]) + b"\x11" * 32 + b"\x22" * 32
    from eth_utils import keccak

    assert c == keccak(encoded) and len(c) == 32
    assert c != ro.vote_commitment(5, member, b"\x11" * 32, b"\x23" * 32)


def test_a_question_waits_for_oracles_then_is_answered_challenged_and_overturned(
    clients: dict[int, RecomputeOracleClient],
) -> None:
    asker, challenger = clients[0], clients[CHALLENGER]
    params = asker.params()
    qid = asker.ask(sha("program"), 3, [sha("in 0"), sha("in 1")], PARTIES)
    q = asker.question(qid)
    assert q.status is QuestionStatus.DRAWING and q.slot_count == asker.slot_count() == 0
    assert not asker.draw_ready(qid)
    with pytest.raises(ro.RecomputeOracleRandomnessPending):
        asker.draw(qid)

    # Nobody is registered: the draw requests fresh randomness and waits.
    first = draw_when_ready(asker, qid)
    assert first.waiting and asker.question(qid).status is QuestionStatus.DRAWING
    for i in ORACLES:
        clients[i].register()
    assert asker.slot_count() == len(ORACLES) and all(asker.units_of(clients[i].chain.address) == 1 for i in ORACLES)
    # The pending request was made before they registered: it still finds nobody, and requests again.
    again = draw_when_ready(asker, qid)
    assert again.waiting and asker.question(qid).slot_count == len(ORACLES)
    drawn = draw_when_ready(asker, qid)
    assert drawn.assignment is not None and drawn.seating is None
    by_address = {clients[i].chain.address: clients[i] for i in ORACLES}
    oracle = by_address[drawn.assignment.oracle]
    with pytest.raises(ro.RecomputeOracleWrongStatus):
        asker.draw(qid)  # someone else drew first: a race, read the question again

    lie = [sha("a wrong output")]
    oracle.answer(qid, lie)
    q = asker.question(qid)
    assert q.status is QuestionStatus.ANSWERED and q.outputs_hash == ro.outputs_hash(lie)
    with pytest.raises(ro.RecomputeOracleSelfChallenge):
        oracle.challenge(qid)
    challenger.challenge(qid)
    assert asker.question(qid).status is QuestionStatus.COMMITTEE_DRAWING
    seated = draw_when_ready(asker, qid)
    assert seated.seating is not None and seated.seating.round == 1
    committee = seated.seating.committee
    assert len(committee) == params.committee_size and oracle.chain.address not in committee
    assert asker.current_committee(qid, 1) == committee == asker.committee_of(qid)
    assert [s.committee for s in asker.seatings(qid)] == [committee]
    q = asker.question(qid)
    assert q.status is QuestionStatus.VOTING and q.commit_deadline == seated.seating.commit_deadline

    # The committee: two vote the right outputs, one votes the lie; each commits, then reveals.
    right = ro.outputs_hash([sha("the right output")])
    votes = {m: right for m in committee[:2]} | {committee[2]: ro.outputs_hash(lie)}
    salts = {m: hashlib.sha256(f"salt {m}".encode()).digest() for m in committee}
    outsider = next(c for a, c in by_address.items() if a not in committee and a != oracle.chain.address)
    with pytest.raises(ro.RecomputeOracleNotCommitteeMember):
        outsider.commit_vote(qid, ro.vote_commitment(qid, outsider.chain.address, right, salts[committee[0]]))
    for k, m in enumerate(committee):
        by_address[m].commit_vote(qid, ro.vote_commitment(qid, m, votes[m], salts[m]))
        if k == 0:
            with pytest.raises(ro.RecomputeOracleRevealTooEarly):  # the others have not committed yet
                by_address[m].reveal_vote(qid, votes[m], salts[m])
            with pytest.raises(ro.RecomputeOracleAlreadyCommitted):
                by_address[m].commit_vote(qid, b"\x00" * 32)
    assert asker.commitments(qid) == {m: ro.vote_commitment(qid, m, votes[m], salts[m]) for m in committee}
    first_member = by_address[committee[0]]
    with pytest.raises(ro.RecomputeOracleRevealMismatch):
        first_member.reveal_vote(qid, votes[committee[0]], b"\x01" * 32)
    with pytest.raises(ro.RecomputeOracleDeadlineNotPassed):
        asker.settle(qid)  # every member committed, but not every one revealed yet
    for m in committee:
        by_address[m].reveal_vote(qid, votes[m], salts[m])
    assert asker.reveals(qid) == votes

    bond_before = asker.bond_of(oracle.chain.address)
    assert asker.settle(qid) is QuestionStatus.FINAL  # every member revealed: no need to wait
    assert asker.result(qid) == (QuestionStatus.FINAL, right)
    assert bond_before == params.min_bond and asker.bond_of(oracle.chain.address) == 0  # the liar loses its bond
    assert asker.bond_of(committee[2]) == 0  # so does the member that voted the lie
    assert asker.credit_of(challenger.chain.address) == params.challenge_bond + params.min_bond // 2
    assert not asker.is_active(oracle.chain.address)
    with pytest.raises(ro.RecomputeOracleWrongStatus):
        asker.settle(qid)
