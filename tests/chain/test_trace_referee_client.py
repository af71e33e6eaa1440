"""TraceReferee on anvil through its typed client (docs/game.md 2.9): `evaluate` equals programs.run; a lying
defender (one ulp off, its trace consistent but for one step) loses to the challenger naming the step
`programs.first_wrong_step` finds in the trace read back from the Claimed event; an honest defender wins
against a challenger naming any step; bad moves are typed exceptions with their sentence."""

from __future__ import annotations

import struct

import pytest

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.contracts import trace_referee as tr
from trainer.repops import programs as P

pytestmark = pytest.mark.anvil

CLOCK = 3600
DEFENDER_WINS, CHALLENGER_WINS = 1, 2


def _f32(v: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


@pytest.fixture(scope="module")
def referees(anvil: Anvil, artifacts: dict[str, Artifact]) -> dict[str, tr.TraceRefereeClient]:
    deployer = ChainClient(anvil.rpc_url, anvil.accounts[3].private_key, artifacts=artifacts.values())
    deployed = deployer.deploy(artifacts["TraceReferee"])
    out = {}
    for name, account in (("owner", 3), ("defender", 5), ("challenger", 6)):
        chain = ChainClient(anvil.rpc_url, anvil.accounts[account].private_key)
        out[name] = tr.TraceRefereeClient(chain, deployed.address, artifacts["TraceReferee"])
    return out


def _open(refs: dict[str, tr.TraceRefereeClient], fn: str, x: int, values: tuple[int, int]) -> int:
    players = (refs["defender"].chain.address, refs["challenger"].chain.address)
    return refs["owner"].open(P.FUNCTIONS[fn], x, values, players, (CLOCK, CLOCK))


@pytest.mark.parametrize("fn", ["gelu", "log1p", "rsqrt"])
def test_evaluate_equals_python_trace_succeeds(referees: dict[str, tr.TraceRefereeClient], fn: str) -> None:
    for x in (_f32(0.3), _f32(-2.5), 0x7FC00000, 0xFF800000):
        assert referees["owner"].evaluate(P.FUNCTIONS[fn], x) == P.run(fn, x)


@pytest.mark.parametrize(("fn", "wrong_from_end"), [("gelu", 30), ("erf", 2), ("sigmoid", 1)])
def test_lying_defender_loses_at_its_wrong_step_succeeds(
    referees: dict[str, tr.TraceRefereeClient], fn: str, wrong_from_end: int
) -> None:
    x = _f32(-1.375)
    honest = P.run(fn, x)
    j = len(honest) - wrong_from_end
    # The liar alters step j (a binary64 step: its value nudged until the output is one ulp off; the fp32 step
    # itself: the liar's value) and evaluates every later step from it.
    liar = next(
        t
        for e in range(64)
        for sign in (1, -1)
        if (t := P.run(fn, x, {j: (honest[j] + sign * (1 << e)) & P.MASK64}))[-1] == honest[-1] ^ 1
    )
    gid = _open(referees, fn, x, (liar[-1], honest[-1]))
    receipt = referees["defender"].claim(gid, P.pack(liar))
    assert receipt.gas_used <= 100_000
    posted = referees["challenger"].claimed_trace(gid)
    step = P.first_wrong_step(fn, x, P.unpack(posted))
    assert step == j
    outcome, receipt = referees["challenger"].refute(gid, posted, step)
    assert outcome == CHALLENGER_WINS and receipt.gas_used <= 100_000
    v = referees["owner"].game_of(gid)
    assert v.stage == tr.Stage.RESOLVED and v.moves == 2 and min(referees["owner"].meter_of(gid)) > 21_000


def test_honest_defender_wins_against_any_step_succeeds(referees: dict[str, tr.TraceRefereeClient]) -> None:
    x = _f32(0.8)
    trace = P.pack(P.run("tanh", x))
    assert P.first_wrong_step("tanh", x, P.unpack(trace)) is None
    for step in (0, 17, len(trace) // 8 - 1):
        gid = _open(referees, "tanh", x, (P.run("tanh", x)[-1], 0x3F000000))
        referees["defender"].claim(gid, trace)
        outcome, _ = referees["challenger"].refute(gid, referees["challenger"].claimed_trace(gid), step)
        assert outcome == DEFENDER_WINS


def test_bad_moves_are_typed_reverts_fails(referees: dict[str, tr.TraceRefereeClient]) -> None:
    x = _f32(2.0)
    trace = P.pack(P.run("exp", x))
    gid = _open(referees, "exp", x, (P.run("exp", x)[-1], 0))
    with pytest.raises(tr.TraceRefereeLength) as e:
        referees["defender"].claim(gid, trace[:-8])
    assert e.value.args.got == len(trace) - 8 and e.value.args.expected == len(trace)
    assert "8 per step" in str(e.value)
    with pytest.raises(tr.TraceRefereeNotYourTurn):
        referees["challenger"].claim(gid, trace)
    referees["defender"].claim(gid, trace)
    with pytest.raises(tr.TraceRefereeMismatch):
        referees["challenger"].refute(gid, trace[:-1] + b"\x01", 0)
    with pytest.raises(tr.TraceRefereeStep):
        referees["challenger"].refute(gid, trace, len(trace) // 8)
    with pytest.raises(tr.TraceRefereeNoFunction):
        referees["owner"].evaluate(9, x)
    with pytest.raises(tr.TraceRefereeBadParams):
        _open(referees, "exp", x, (5, 5))


def test_every_error_of_the_referee_has_its_class_succeeds(artifacts: dict[str, Artifact]) -> None:
    declared = {item["name"] for item in artifacts[tr.CONTRACT_NAME].abi if item["type"] == "error"}
    # evaluateElement's errors (RepOpsElement) are the ElementReferee client's: it is the one whose calls reach it.
    from offchain.contracts.element_referee import ELEMENT_ARITHMETIC_ERRORS

    assert declared - set(ELEMENT_ARITHMETIC_ERRORS) == set(tr.TRACE_REFEREE_ERRORS)
    assert set(ELEMENT_ARITHMETIC_ERRORS) <= declared
    assert all(cls.__dict__.get("__doc__") for cls in tr.TRACE_REFEREE_ERRORS.values())
