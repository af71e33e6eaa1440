"""ElementReferee on anvil through its typed client: a whole element game on a broadcast add, played
by `offchain.game.element.ElementSide` for both sides (the liar's output one ulp off at one element),
with the honest side as defender and as challenger, by hand and through the moves the trainer agents make
(`offchain.agents._element.element_move`); and bad moves as typed exceptions."""

from __future__ import annotations

import pytest
import torch

from offchain.agents._element import element_move
from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.contracts import element_referee as er
from offchain.contracts._base import TensorError
from offchain.contracts.dispute_game import Side
from offchain.game.element import ElementSide, InputOpening, first_differing_element
from trainer.commit import commit_tensor
from trainer.repops import KERNELS

pytestmark = pytest.mark.anvil

ADD, ARITY, CLOCK = 0, 4, 3600


@pytest.fixture(scope="module")
def referees(anvil: Anvil, artifacts: dict[str, Artifact]) -> dict[str, er.ElementRefereeClient]:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[3].private_key, artifacts=artifacts.values())
    trace = deployer.deploy(artifacts["TraceReferee"]).address
    deployed = deployer.deploy(artifacts["ElementReferee"], trace, deployer.deploy(artifacts["SumReferee"]).address)
    out = {}
    for name, account in (("owner", 3), ("defender", 5), ("challenger", 6)):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[account].private_key)
        out[name] = er.ElementRefereeClient(chain, deployed.address, artifacts["ElementReferee"])
    return out


def _sides(lie_at: int) -> tuple[ElementSide, ElementSide]:
    gen = torch.Generator().manual_seed(7)
    a = torch.randn(5, 1000, generator=gen)
    b = torch.randn(1000, generator=gen)
    out = KERNELS["aten.add.Tensor"].fast(a, b)
    bad = out.clone().view(-1)
    bad[lie_at] = torch.nextafter(bad[lie_at], torch.tensor(float("inf")))
    return ElementSide([a, b], out), ElementSide([a, b], bad.view(5, 1000))


def _play(refs: dict[str, er.ElementRefereeClient], sides: tuple[ElementSide, ElementSide]) -> int:
    players = (refs["defender"], refs["challenger"])
    params = er.Params(
        op=ADD,
        inputs=tuple(commit_tensor(t) for t in sides[0].inputs),
        outputs=(commit_tensor(sides[0].output), commit_tensor(sides[1].output)),
        players=(players[0].chain.address, players[1].chain.address),
        clocks=(CLOCK, CLOCK),
        arity=ARITY,
    )
    gid = refs["owner"].open(params)
    players[0].open_headers(gid, sides[0].header(), sides[0].input_headers())
    players[1].open_headers(gid, sides[1].header())
    while (v := refs["owner"].game_of(gid)).stage == er.Stage.CHUNK_DESCENT:
        receipt = players[0].descend(gid, sides[0].nodes(v.height, v.position, ARITY))
        posted = players[0].nodes_posted(receipt)
        players[1].descend(gid, sides[1].nodes(v.height, v.position, ARITY), posted)
    j = v.position
    players[0].open_chunk(gid, sides[0].chunk(j))
    players[1].open_chunk(gid, sides[1].chunk(j), sides[0].chunk(j))
    v = refs["owner"].game_of(gid)
    assert v.stage == er.Stage.ELEMENT_PROOF
    e = first_differing_element(sides[0].chunk(j), sides[1].chunk(j), sides[0].element_size, j)
    assert v.element == e
    return gid


@pytest.mark.parametrize("lie_at", [0, 2500, 4999])
def test_element_game_honest_defender_and_challenger(referees: dict[str, er.ElementRefereeClient], lie_at: int) -> None:
    honest, liar = _sides(lie_at)
    gid = _play(referees, (honest, liar))
    v = referees["owner"].game_of(gid)
    assert v.element == lie_at
    outcome = referees["defender"].prove_element(gid, tuple(honest.output.shape), honest.openings(v.element))
    assert outcome == er.Outcome.DEFENDER_WINS
    assert referees["owner"].winner(gid) == referees["defender"].chain.address
    # The liar defends: its proof (the agreed inputs) decides against it.
    gid = _play(referees, (liar, honest))
    out = referees["defender"].prove_element(gid, tuple(liar.output.shape), liar.openings(lie_at))
    assert out == er.Outcome.CHALLENGER_WINS


def test_bad_moves_are_typed(referees: dict[str, er.ElementRefereeClient]) -> None:
    honest, liar = _sides(10)
    gid = _play(referees, (honest, liar))
    with pytest.raises(er.ElementRefereeNotYourTurn):
        referees["challenger"].prove_element(gid, tuple(honest.output.shape), honest.openings(10))
    good = honest.openings(10)
    bad = [InputOpening(o.dtype, o.shape, bytes([o.chunk[0] ^ 1]) + o.chunk[1:], o.siblings) for o in good]
    with pytest.raises(TensorError):
        referees["defender"].prove_element(gid, tuple(honest.output.shape), bad)
    with pytest.raises(er.ElementRefereeHeaderDiffers):
        referees["defender"].prove_element(gid, (5000,), good)
    with pytest.raises(er.ElementRefereeBadParams):
        referees["owner"].open(
            er.Params(ADD, (), (b"\1" * 32, b"\2" * 32), (referees["defender"].chain.address,) * 2, (1, 1), 4)
        )


@pytest.mark.parametrize("honest_defends", [True, False], ids=["honest-defends", "honest-challenges"])
def test_the_agents_moves_play_a_whole_game(referees: dict[str, er.ElementRefereeClient], honest_defends: bool) -> None:
    """`offchain.agents._element.element_move`, as the trainer agents call it, plays both sides to the end over a
    5-chunk output (two descent levels at arity 2): the challenger reads the defender's nodes and chunk back
    from the chain (`defender_nodes`, `defender_chunk`), and a move out of turn is no move."""
    honest, liar = _sides(4321)
    sides = (honest, liar) if honest_defends else (liar, honest)
    players = {Side.DEFENDER: referees["defender"], Side.CHALLENGER: referees["challenger"]}
    params = er.Params(
        op=ADD,
        inputs=tuple(commit_tensor(t) for t in honest.inputs),
        outputs=(commit_tensor(sides[0].output), commit_tensor(sides[1].output)),
        players=(players[Side.DEFENDER].chain.address, players[Side.CHALLENGER].chain.address),
        clocks=(CLOCK, CLOCK),
        arity=2,
    )
    gid = referees["owner"].open(params)
    said: list[str] = []
    while (v := referees["owner"].game_of(gid)).stage is not er.Stage.RESOLVED:
        mover = Side(v.to_move)
        assert element_move(players[mover.other], gid, mover.other, sides[mover.other], 2) is None
        what = element_move(players[mover], gid, mover, sides[mover], 2)
        assert what is not None
        said.append(what)
    assert sum("chunk descent" in s for s in said) == 2 * 3  # K = 5 chunks: depth 3 at arity 2
    assert v.element == 4321
    assert v.outcome is (er.Outcome.DEFENDER_WINS if honest_defends else er.Outcome.CHALLENGER_WINS)
