"""ElementReferee on anvil: a covered operator on inputs of another dtype (an int64 add, which the table,
keyed by operator and not by dtype, covers) is proved inapplicable from the agreed input's header, through
the typed client; an fp32 input is refused as applicable, with its typed error."""

from __future__ import annotations

import pytest
import torch

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.contracts import element_referee as er
from offchain.game.element import header_of
from trainer.commit import commit_tensor

pytestmark = pytest.mark.anvil

ADD, ARITY, CLOCK = 0, 4, 3600


Referees = tuple[er.ElementRefereeClient, er.ElementRefereeClient, er.ElementRefereeClient]


@pytest.fixture(scope="module")
def referees(anvil: Anvil, artifacts: dict[str, Artifact]) -> Referees:
    """One ElementReferee seen by its games' owner, a defender and a challenger."""
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[3].private_key, artifacts=artifacts.values())
    trace, summer = (deployer.deploy(artifacts[name]).address for name in ("TraceReferee", "SumReferee"))
    address = deployer.deploy(artifacts["ElementReferee"], trace, summer).address
    chains = [ChainClient(anvil.rpc_url, anvil.accounts[i].private_key) for i in (3, 5, 6)]
    owner, defender, challenger = (er.ElementRefereeClient(c, address, artifacts["ElementReferee"]) for c in chains)
    return owner, defender, challenger


def test_an_int64_add_is_proved_inapplicable(referees: Referees) -> None:
    owner, defender, challenger = referees
    a = torch.arange(12, dtype=torch.float32).view(3, 4)
    idx = torch.arange(4, dtype=torch.int64)  # an index computation: int64
    out = a + idx
    params = er.Params(
        op=ADD,
        inputs=(commit_tensor(a), commit_tensor(idx)),
        outputs=(commit_tensor(out), commit_tensor(out + 1)),
        players=(defender.chain.address, challenger.chain.address),
        clocks=(CLOCK, CLOCK),
        arity=ARITY,
    )
    gid = owner.open(params)
    with pytest.raises(er.ElementRefereeApplicable) as refused:
        defender.prove_inapplicable(gid, 0, header_of(a))  # fp32, as add takes
    assert "openHeaders" in refused.value.sentence and refused.value.args.dtype == 1
    with pytest.raises(er.ElementRefereeNotYourTurn):
        challenger.prove_inapplicable(gid, 1, header_of(idx))
    assert defender.prove_inapplicable(gid, 1, header_of(idx)) == er.Outcome.INAPPLICABLE
    assert owner.outcome(gid) == er.Outcome.INAPPLICABLE
    assert owner.inputs_of(gid) == list(params.inputs)


def test_the_agents_defender_proves_an_int64_where_inapplicable(referees: Referees) -> None:
    """The agents' move (`offchain.agents._element.element_move`) at a where.self on int64 tensors, as the
    bundled workloads' cross-entropy runs it: the defender proves input 1's dtype instead of opening headers
    (which the referee would refuse, costing it the game on time), and the game is INAPPLICABLE."""
    from offchain.agents._element import element_move
    from offchain.contracts.dispute_game import Side
    from offchain.game.element import ElementSide

    owner, defender, challenger = referees
    cond = torch.tensor([True, False, True, False])
    a = torch.tensor([1, 2, 3, 4], dtype=torch.int64)
    b = torch.tensor([-100, -100, -100, -100], dtype=torch.int64)
    out = torch.where(cond, a, b)
    where = 13
    assert defender.input_dtypes(where) == (10, 1, 1)  # bool, f32, f32
    params = er.Params(
        op=where,
        inputs=tuple(commit_tensor(t) for t in (cond, a, b)),
        outputs=(commit_tensor(out), commit_tensor(out + 1)),
        players=(defender.chain.address, challenger.chain.address),
        clocks=(CLOCK, CLOCK),
        arity=ARITY,
    )
    gid = owner.open(params)
    mine = ElementSide([cond, a, b], out)
    assert element_move(challenger, gid, Side.CHALLENGER, mine, ARITY) is None  # not its turn
    said = element_move(defender, gid, Side.DEFENDER, mine, ARITY)
    assert said is not None and "input 1 is not of the operator's dtype" in said
    assert owner.outcome(gid) == er.Outcome.INAPPLICABLE
