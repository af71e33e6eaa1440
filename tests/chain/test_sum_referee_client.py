"""SumReferee on anvil through its typed client (docs/game.md 2.10): a sum game on a committed fp32 tensor played
with `offchain.game.sum.SumSide`'s moves (the challenger passing back the prefix sums `defender_splits` reads from
the Claimed and SplitPosted events): a lying defender (one bit off, its S the one its value follows from) loses at
the last term the contract recomputes, an honest one wins; a wrong exponent claim is refuted; bad moves are typed
exceptions with their sentence; every error of the contract has its class."""

from __future__ import annotations

import pytest
import torch

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.contracts import sum_referee as sr
from offchain.game.element_table import sum_variant
from offchain.game.sum import SumSide, sum_input_index
from trainer.commit import commit_tensor
from trainer.repops.reduce import sum_dim_intlist

pytestmark = pytest.mark.anvil

CLOCK, ARITY = 3600, 4
DEFENDER_WINS, CHALLENGER_WINS = 1, 2
Refs = dict[str, sr.SumRefereeClient]


@pytest.fixture(scope="module")
def referees(anvil: Anvil, artifacts: dict[str, Artifact]) -> Refs:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[3].private_key, artifacts=artifacts.values())
    deployed = deployer.deploy(artifacts["SumReferee"])
    out = {}
    for name, account in (("owner", 3), ("defender", 5), ("challenger", 6)):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[account].private_key)
        out[name] = sr.SumRefereeClient(chain, deployed.address, artifacts["SumReferee"])
    return out


X = torch.randn(3, 13, generator=torch.Generator().manual_seed(5))
DIMS, KEEP, ELEMENT = (1,), False, 1
OUT = sum_dim_intlist(X, list(DIMS), KEEP)
VARIANT = sum_variant(DIMS, KEEP)


def _side(value: int | None = None) -> SumSide:
    s = SumSide(VARIANT, X, tuple(OUT.shape), ELEMENT)
    if value is not None:
        assert s.defend(value)
    return s


def _open(refs: Refs, values: tuple[int, int]) -> int:
    from eth_utils import keccak

    # keccak256(abi.encodePacked(uint8(1), uint64[] shape)): a packed array's items take 32 bytes each
    header = keccak(bytes([1]) + b"".join(int(d).to_bytes(32, "big") for d in OUT.shape))
    players = (refs["defender"].chain.address, refs["challenger"].chain.address)
    params = sr.SumParams(VARIANT, commit_tensor(X), header, ELEMENT, values, players, (CLOCK, CLOCK), ARITY)
    return refs["owner"].open(params)


def _play(refs: Refs, gid: int, defender: SumSide, challenger: SumSide) -> int:
    """Both sides' moves until the game ends; returns the outcome."""
    for _ in range(32):
        v = refs["owner"].game_of(gid)
        if v.stage is sr.Stage.RESOLVED:
            return v.outcome
        if v.stage is sr.Stage.CLAIM:
            refs["defender"].claim(gid, defender.claim(ARITY))
        elif v.stage is sr.Stage.SPLIT:
            refs["defender"].split(gid, defender.splits(v.lo, v.hi, ARITY))
        elif v.stage is sr.Stage.TERM:
            refs["defender"].prove_term(gid, defender.term_opening(v.lo))
        else:
            theirs = refs["challenger"].defender_splits(gid)
            refs["challenger"].pick(gid, theirs, challenger.pick(v.lo, v.hi, ARITY, theirs))
    raise AssertionError("the sum game did not end")


def test_honest_side_wins_both_ways_succeeds(referees: Refs) -> None:
    honest = _side().value_bits()
    assert honest == int(OUT.view(torch.int32).reshape(-1)[ELEMENT]) & 0xFFFFFFFF
    lie = honest ^ 1
    gid = _open(referees, (lie, honest))
    assert _play(referees, gid, _side(lie), _side()) == CHALLENGER_WINS
    (term,) = referees["owner"]._logs("TermComputed", {"gameId": gid})
    assert int(term["at"]) == _side().length - 1, "the liar's prefix sums are right but for P(L): the last term"
    v = referees["owner"].game_of(gid)
    assert v.length == 13 and v.key == _side().key and v.witness == _side().witness and v.moves > 2
    assert all(g > 0 for g in referees["owner"].meter_of(gid))
    gid = _open(referees, (honest, lie))
    assert _play(referees, gid, _side(), _side()) == DEFENDER_WINS
    assert referees["owner"].input_index(ELEMENT, 4, (3, 13), 2) == sum_input_index(ELEMENT, 4, (3, 13), 2) == 17
    assert referees["owner"].split_points(0, 13, ARITY) == [4, 8, 12]


def test_a_smaller_witness_is_refuted_succeeds(referees: Refs) -> None:
    """A claim on a witness that is not of the slice's largest class (its value and S consistent with it): the
    challenger opens a larger element and wins at once."""
    from itertools import accumulate

    from offchain.game.dot import grid_exponent, magnitude_class
    from offchain.game.sum import f32_value
    from trainer.repops._fixed import p_sum, quantize_ref

    honest = _side()
    liar = _side()
    liar.at = min(range(liar.length), key=lambda k: magnitude_class(liar.bits[k]))
    liar.key = magnitude_class(liar.bits[liar.at])
    e, p = grid_exponent(liar.key), p_sum(liar.length)
    liar.prefix = [0, *accumulate(quantize_ref(f32_value(b), e, p) for b in liar.bits)]
    lie = honest.value_bits() ^ 1
    assert liar.key < honest.key and liar.defend(lie)  # S on the finer grid its value follows from
    gid = _open(referees, (lie, honest.value_bits()))
    referees["defender"].claim(gid, liar.claim(ARITY))
    v = referees["owner"].game_of(gid)
    assert (v.stage, v.key, v.witness) == (sr.Stage.PICK, liar.key, liar.witness)
    refutation = honest.refutation(v.key, v.witness)
    assert refutation is not None and honest.refutation(honest.key, honest.witness) is None
    assert referees["challenger"].refute(gid, *refutation) == CHALLENGER_WINS
    (refuted,) = referees["owner"]._logs("Refuted", {"gameId": gid})
    assert int(refuted["at"]) == refutation[0]


def test_bad_moves_are_typed_reverts_fails(referees: Refs) -> None:
    honest = _side()
    gid = _open(referees, (honest.value_bits(), honest.value_bits() ^ 1))
    with pytest.raises(sr.SumRefereeNotYourTurn):
        referees["challenger"].claim(gid, honest.claim(ARITY))
    with pytest.raises(sr.SumRefereeWrongStage):
        referees["defender"].split(gid, [1, 2, 3])
    with pytest.raises(sr.SumRefereeClockRunning):
        referees["owner"].timeout(gid)
    referees["defender"].claim(gid, honest.claim(ARITY))
    theirs = referees["challenger"].defender_splits(gid)
    with pytest.raises(sr.SumRefereeOpponentMismatch):
        referees["challenger"].pick(gid, [theirs[0] + 1, *theirs[1:]], 0)
    with pytest.raises(sr.SumRefereeWidth) as e:
        referees["challenger"].pick(gid, theirs, len(theirs) + 1)
    assert e.value.args.got == len(theirs) + 1
    with pytest.raises(sr.SumRefereeNotGreater):
        referees["challenger"].refute(gid, honest.at, honest.term_opening(honest.at))
    with pytest.raises(sr.SumRefereeUnknown):
        referees["owner"].game_of(10**6)
    with pytest.raises(sr.SumRefereeBadParams) as bad:
        _open(referees, (5, 5))
    assert bad.value.args.field == 4
    with pytest.raises(sr.SumRefereeNotOwner):
        referees["defender"].owned_outcome(gid)
    assert referees["owner"].owned_outcome(gid) == 0  # pending


def test_every_error_of_the_referee_has_its_class_succeeds(artifacts: dict[str, Artifact]) -> None:
    from offchain.contracts import dot_referee as dr

    declared = {item["name"] for item in artifacts[sr.CONTRACT_NAME].abi if item["type"] == "error"}
    mine = {n for n in declared if n.startswith(sr.CONTRACT_NAME)}
    assert mine == set(sr.SUM_REFEREE_ERRORS)
    known = set().union(*(set(t) for t in sr.ERRORS))
    assert declared <= known, sorted(declared - known)
    assert all(cls.__dict__.get("__doc__") for cls in sr.SUM_REFEREE_ERRORS.values())
    # a revert of the sum game bubbling up through DotReferee.startSum decodes to its class there too
    assert any(t is sr.SUM_REFEREE_ERRORS for t in dr.DotRefereeClient.ERRORS)
    assert "SumReferee" in dr.DotRefereeClient.CALLEES
