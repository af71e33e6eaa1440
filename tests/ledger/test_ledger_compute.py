"""The ledger's pure computation: exact aggregation, exact attribution, Shapley, blocks, replay.

Every equality claim here compares bits (block hashes, state roots, exact integers)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from fractions import Fraction

import pytest
import torch

from trainer.interp import Interpreter
from trainer.ledger.attribution import FirstOrder, shapley_exact, shapley_sampled
from trainer.ledger.block import Block, Genesis, interval_root
from trainer.ledger.did import did_of
from trainer.ledger.encoding import dumps, loads
from trainer.ledger.errors import BlockError, ContributionError, LedgerError, ManifestError
from trainer.ledger.ledger import (
    NOT_RECOMPUTED,
    NOT_REVEALED,
    RECOMPUTE_UNAVAILABLE,
    REUSED_BATCH,
    SHARED_BATCH,
    Contribution,
    Ledger,
    StepInputs,
    batch_commitment,
    earlier_batches,
)
from trainer.ledger.programs import GRAD, TERMS, LedgerPrograms, model_root
from trainer.ledger.shares import attribution_weights, forfeited, ledger_shares
from trainer.program import AdamWConfig, SGDConfig
from trainer.repops import KERNELS, OpSpec
from trainer.workloads import keyed_init, mlp_digits

STEPS = 3
N = 4


@pytest.fixture(scope="module", params=["sgd", "adamw"])
def setup(request: pytest.FixtureRequest):
    w = mlp_digits()
    ds = w.dataset
    opt = SGDConfig(lr=0.2, momentum=0.9) if request.param == "sgd" else AdamWConfig(lr=1e-2)
    val = [ds.batch(99, t, 32) for t in range(1, STEPS + 1)]
    lp = LedgerPrograms(w.step.model, w.step.loss_fn, opt, N, ds.batch(1, 0, 16), val[0])
    state = lp.model_state()
    state.update({k: v for k, v in keyed_init(w.step, 1).items() if k.startswith("param/")})
    genesis = Ledger.create_genesis(
        lp, chain_id=31337, name="t", initial_state=state,
        validation_commitments=[batch_commitment(v) for v in val], shapley_every=0,
    )
    ledger = Ledger(lp, genesis)
    dids = [did_of(31337, f"0x{i + 1:040x}") for i in range(N)]

    def batches(i: int, t: int) -> list[dict[str, torch.Tensor]]:
        b = ds.batch(10 + i, t, 16)
        if i == 1:  # noisy labels
            b = {"x": b["x"], "y": (b["y"] + 3) % 10}
        if i == 3:  # poisoned: every label 0
            b = {"x": b["x"], "y": torch.zeros_like(b["y"])}
        return [b]

    blocks, inputs, states = [], {}, [state]
    parent, s = genesis.model_id, state
    for t in range(1, STEPS + 1):
        cs = [ledger.contribute(d, s, batches(i, t)) for i, d in enumerate(dids)]
        inputs[t] = StepInputs(cs, val[t - 1])
        built = ledger.build(t, parent, s, inputs[t], earlier_batches(blocks))
        blocks.append(built.block)
        s, parent = built.state, built.block.hash
        states.append(s)
    return {"ledger": ledger, "lp": lp, "genesis": genesis, "blocks": blocks, "inputs": inputs, "states": states,
            "dids": dids, "val": val, "ds": ds}


def test_aggregation_does_not_depend_on_the_order_of_contributors(setup) -> None:
    inputs, states, ledger, genesis = setup["inputs"], setup["states"], setup["ledger"], setup["genesis"]
    cs = list(inputs[1].contributions)
    hashes = set()
    for perm in itertools.permutations(range(N)):
        got = ledger.build(1, genesis.model_id, states[0], StepInputs([cs[i] for i in perm], inputs[1].validation))
        hashes.add(got.block.hash)
        assert got.block.model_root == setup["blocks"][0].model_root == model_root(got.state)
    assert len(hashes) == 1


def test_rows_permuted_inside_the_block_program_give_the_same_model_root(setup) -> None:
    # Below the DID ordering: the block program itself, fed the rows in another order, gives the same bits,
    # and each row's attribution terms move with its row, bit for bit (one grid per parameter for all rows,
    # from the largest value over the rows: a permutation does not change it).
    ledger, inputs, states = setup["ledger"], setup["inputs"], setup["states"]
    grads = [c.gradients for c in inputs[1].contributions]
    a, _, _, terms_a = ledger._run_block(states[0], inputs[1].validation, grads, N)
    b, _, _, terms_b = ledger._run_block(states[0], inputs[1].validation, grads[::-1], N)
    assert model_root(a) == model_root(b)
    k = len(ledger.programs.param_names)
    assert terms_a.dtype == torch.float64 and tuple(terms_a.shape) == (ledger.programs.max_contributors, k)
    assert bool(terms_a[:N].ne(0).all())
    assert terms_a[:N].view(torch.int64).tolist() == terms_b[:N].flip(0).view(torch.int64).tolist()
    # three rows and a zero row (an absent contributor), in two placements: the terms move with their rows,
    # bit for bit, and the zero row's terms are +0
    _, _, _, three = ledger._run_block(states[0], inputs[1].validation, [*grads[:3], None], N)
    _, _, _, moved = ledger._run_block(states[0], inputs[1].validation, [None, grads[2], grads[0], grads[1]], N)
    assert moved[[2, 3, 1, 0]].view(torch.int64).tolist() == three.view(torch.int64).tolist()
    assert three[3].view(torch.int64).tolist() == [0] * k


def _grid(values: list[Fraction], p: int) -> tuple[int, list[int]]:
    m = max((abs(x) for x in values), default=Fraction(0))
    e = 1 if m == 0 else math.frexp(float(m))[1]  # 2^(e-1) <= m < 2^e
    return e, [round(x * Fraction(2) ** (p - e)) for x in values]


def _reference_attribution(weights, grads, names) -> tuple[list[list[Fraction]], Fraction]:
    """Slow reference of docs/ledger.md section 3, written here from the text with Fractions: per parameter
    (canonical order), the weight on its own grid and EVERY contributor's gradient on one grid shared by all
    of them (exponent from the largest magnitude over all contributors), p = p_dot64(numel) bits, Python's
    round (ties to even). Returns the exact terms [c][k] and, independently, the step's first-order total
    Σ_k <q(w_k), Σ_c q(g_c,k)> (the contributions summed on the grid first)."""
    terms: list[list[Fraction]] = [[] for _ in grads]
    total = Fraction(0)
    for name in names:
        wl = [Fraction(float(x)) for x in weights[GRAD + name].reshape(-1).tolist()]
        n = len(wl)
        p = (53 - (n - 1).bit_length()) // 2  # p_dot64: floor((53 - ceil(log2 N)) / 2)
        e_w, qw = _grid(wl, p)
        flat = [Fraction(float(x)) for g in grads for x in g[GRAD + name].reshape(-1).tolist()]
        e_g, qg = _grid(flat, p)
        scale = Fraction(2) ** (e_w + e_g - 2 * p)
        for c in range(len(grads)):
            s = sum(a * b for a, b in zip(qw, qg[c * n : (c + 1) * n], strict=True))
            assert abs(s) <= 2**53  # a binary64 integer
            terms[c].append(Fraction(s) * scale)
        column = [sum(qg[c * n + i] for c in range(len(grads))) for i in range(n)]
        total += Fraction(sum(a * b for a, b in zip(qw, column, strict=True))) * scale
    return terms, total


def test_first_order_attribution_is_exact_and_sums_to_the_total_to_the_last_bit(setup) -> None:
    ledger, inputs, states = setup["ledger"], setup["inputs"], setup["states"]
    cs = inputs[1].contributions
    built = ledger.build(1, setup["genesis"].model_id, states[0], inputs[1])
    grads = [c.gradients for c in sorted(cs, key=lambda c: c.did.encode())]
    terms, total = _reference_attribution(built.weights, grads, ledger.programs.param_names)
    # The program's state holds each term exactly (every term is a binary64 value: nothing is rounded)
    assert built.terms is not None and built.terms.dtype == torch.float64
    for row in terms:
        assert all(Fraction(float(t)) == t for t in row)
    want = torch.tensor([[float(t) for t in row] for row in terms], dtype=torch.float64)
    assert built.terms[:N].view(torch.int64).tolist() == want.view(torch.int64).tolist()
    # φ(c) = Σ_k terms[c, k] exactly, recorded as numerators over one power of two
    scale = Fraction(2) ** built.first_order.exponent
    phi = [Fraction(n) * scale for n in built.first_order.numerators]
    assert phi == [sum(row, Fraction(0)) for row in terms]
    assert built.block.phi == built.first_order.numerators and built.block.phi_exponent == built.first_order.exponent
    assert built.first_order == FirstOrder.of_terms(built.terms[:N].tolist())
    # Σ_c φ(c, t) is the step's first-order total, to the last bit
    assert Fraction(built.first_order.total) * scale == total == sum(phi)
    # the contributors in another order: the same block, so the same φ per DID
    again = ledger.build(1, setup["genesis"].model_id, states[0], StepInputs(list(cs)[::-1], inputs[1].validation))
    assert again.block.hash == built.block.hash


def test_the_payout_reads_phi_off_the_block_programs_state(setup) -> None:
    # Replay the captured block program with a fresh interpreter (no Ledger): φ is the exact row sum of its
    # attr/terms, each block records exactly that, and the attribution part of the payout is pro rata to it.
    lp, blocks, inputs, states = setup["lp"], setup["blocks"], setup["inputs"], setup["states"]
    run = Interpreter(lp.block_program)
    totals: dict[str, Fraction] = {}
    for t, b in enumerate(blocks, start=1):
        by_did = {c.did: c for c in inputs[t].contributions}
        rows = [by_did[d].gradients for d in b.contributors]
        count = sum(by_did[d].micro_batches for d in b.contributors)
        batch = lp.contributions_batch(inputs[t].validation, rows, count=count)
        out, _ = run.run(lp.block_inputs(states[t - 1]), batch)
        phi = [sum((Fraction(v) for v in row), Fraction(0)) for row in out[TERMS][: len(rows)].tolist()]
        assert [Fraction(n) * Fraction(2) ** b.phi_exponent for n in b.phi] == phi
        for d, v in zip(b.contributors, phi, strict=True):
            totals[d] = totals.get(d, Fraction(0)) + v
    weights = attribution_weights(blocks)
    positive = {d: v for d, v in totals.items() if v > 0}
    assert set(weights) == set(positive) and positive
    unit = next(iter(positive.values())) / weights[next(iter(positive))]
    assert all(Fraction(weights[d]) * unit == v for d, v in positive.items())


def test_shapley_values_are_efficient_exactly(setup) -> None:
    ledger, inputs, states = setup["ledger"], setup["inputs"], setup["states"]
    grads = [c.gradients for c in sorted(inputs[1].contributions, key=lambda c: c.did.encode())]
    v = ledger.coalition_value(states[0], inputs[1].validation, grads, N)
    values = shapley_exact(N, v)
    assert sum(values) == v(frozenset(range(N)))
    genesis = dataclasses.replace(setup["genesis"], shapley_every=1)  # every step sampled
    block = Ledger(setup["lp"], genesis).build(1, genesis.model_id, states[0], inputs[1]).block
    assert block.shapley is not None and block.shapley_exact
    assert [Fraction(a, b) for a, b in block.shapley] == values
    assert setup["blocks"][0].shapley is None and block.model_root == setup["blocks"][0].model_root


def test_shapley_sampling_is_seeded_and_exact_for_additive_games() -> None:
    weights = [Fraction(3), Fraction(-1), Fraction(7, 2), Fraction(0), Fraction(1, 3)]

    def additive(s: frozenset[int]) -> Fraction:
        return sum((weights[i] for i in s), Fraction(0))

    assert shapley_exact(5, additive) == weights
    assert shapley_sampled(5, additive, b"seed", 3) == weights
    a = shapley_sampled(5, lambda s: Fraction(len(s) ** 2), b"x", 7)
    assert a == shapley_sampled(5, lambda s: Fraction(len(s) ** 2), b"x", 7)
    with pytest.raises(LedgerError, match="at most 8"):
        shapley_exact(9, additive)


def test_a_split_identity_gains_nothing_beyond_rounding(setup) -> None:
    ledger, states, genesis, ds, dids = setup["ledger"], setup["states"], setup["genesis"], setup["ds"], setup["dids"]
    b1, b2 = ds.batch(50, 1, 16), ds.batch(51, 1, 16)
    other = ledger.contribute(dids[0], states[0], [ds.batch(52, 1, 16)])
    whole = ledger.contribute(dids[1], states[0], [b1, b2])
    halves = [ledger.contribute(dids[2], states[0], [b1]), ledger.contribute(dids[3], states[0], [b2])]
    val = setup["val"][0]
    one = ledger.build(1, genesis.model_id, states[0], StepInputs([other, whole], val))
    two = ledger.build(1, genesis.model_id, states[0], StepInputs([other, *halves], val))
    phi_one = one.block.phi_values()
    phi_two = two.block.phi_values()
    gain = (phi_two[1] + phi_two[2]) - phi_one[1]
    # Rounding: the whole contribution is its halves' sum rounded once to fp32, and each parameter's grid
    # (shared by the step's rows) keeps p_dot64(numel) bits (16 to 26 here) of the rows' largest value; both
    # errors are bounded by a few units of 2^-16 of the magnitude sum of the terms, sum |w| |g| (measured:
    # 2^-28.1 with SGD, 2^-18.8 with AdamW).
    magnitude = sum(float((one.weights[k].abs() * whole.gradients[k].abs()).sum()) for k in one.weights)
    assert abs(gain) <= 2.0**-16 * magnitude  # AdamW: the second moments (so P) move by rounding too
    assert abs(gain) < 1e-3 * abs(phi_one[1])  # and negligible next to what the identity earns
    assert abs(phi_two[0] - phi_one[0]) <= 2.0**-16 * magnitude


def test_refused_contributions_are_recorded_and_leave_the_block_unchanged(setup) -> None:
    ledger, inputs, states, genesis = setup["ledger"], setup["inputs"], setup["states"], setup["genesis"]
    cs = list(inputs[1].contributions)
    bad_grads = {k: v.clone() for k, v in cs[0].gradients.items()}
    first = next(iter(bad_grads))
    bad_grads[first].view(-1)[0] = float("nan")
    nan = Contribution.of(did_of(31337, "0x" + "e" * 40), [setup["ds"].batch(7, 1, 16)], bad_grads)
    missing = Contribution(did_of(31337, "0x" + "f" * 40), b"\x01" * 32, b"\x02" * 32, 1, None)
    lying = Contribution(did_of(31337, "0x" + "d" * 40), b"\x01" * 32, b"\x03" * 32, 1, cs[1].gradients)
    more = StepInputs([*cs, nan, missing, lying][:N + 3], inputs[1].validation)
    with pytest.raises(ContributionError, match="the ledger takes 4"):
        ledger.build(1, genesis.model_id, states[0], more)
    three = StepInputs([cs[0], nan, missing, lying], inputs[1].validation)
    got = ledger.build(1, genesis.model_id, states[0], three)
    reasons = {nan.did: "non-finite", missing.did: "unavailable", lying.did: "commitment mismatch"}
    assert dict(got.block.refused) == reasons
    alone = ledger.build(1, genesis.model_id, states[0], StepInputs([cs[0]], inputs[1].validation))
    assert got.block.model_root == alone.block.model_root
    with pytest.raises(ContributionError, match="contributed twice"):
        ledger.build(1, genesis.model_id, states[0], StepInputs([cs[0], cs[0]], inputs[1].validation))


def test_blocks_encode_canonically_and_refuse_tampering(setup) -> None:
    block = setup["blocks"][1]
    data = block.encode()
    assert Block.decode(data) == block and Block.decode(data).hash == block.hash
    record = loads(data)
    record["step"] = 7
    assert Block.decode(dumps(record)).hash != block.hash  # a valid record, of another block
    assert Block.decode(dumps({**loads(data), "model_root": b"\x00" * 32})).hash != block.hash
    import cbor2

    non_canonical = cbor2.dumps(dict(reversed(list(loads(data).items()))))
    with pytest.raises(BlockError, match="canonical"):
        Block.decode(non_canonical)
    with pytest.raises(BlockError, match="floats"):
        dumps({"loss": 2.5})
    forged = {**loads(data), "batch_root": b"\x11" * 32}
    with pytest.raises(BlockError, match="list roots"):
        Block.decode(dumps(forged))
    assert len(interval_root(setup["blocks"])) == 32
    with pytest.raises(BlockError, match="does not follow"):
        interval_root([setup["blocks"][0], setup["blocks"][2]])


def test_replay_reproduces_every_block_and_names_the_first_that_does_not(setup) -> None:
    ledger, blocks, inputs, states = setup["ledger"], setup["blocks"], setup["inputs"], setup["states"]
    final = ledger.replay(states[0], blocks, lambda t: inputs[t])
    assert model_root(final) == blocks[-1].model_root == model_root(states[-1])
    rec = loads(blocks[1].encode())
    phi = rec["attribution"]["phi"]
    rec["attribution"] = {**rec["attribution"], "phi": [phi[0] + 1, *phi[1:]]}
    wrong = Block.decode(dumps(rec))
    with pytest.raises(BlockError, match="block 2 does not reproduce: its attribution differs"):
        ledger.replay(states[0], [blocks[0], wrong, blocks[2]], lambda t: inputs[t])
    swapped = dict(inputs)
    cs = list(inputs[3].contributions)
    swapped[3] = StepInputs(cs[:-1], inputs[3].validation)
    with pytest.raises(BlockError, match="block 3 does not reproduce"):
        ledger.replay(states[0], blocks, lambda t: swapped[t])
    with pytest.raises(BlockError, match="block 3 found where block 2"):
        ledger.replay(states[0], [blocks[0], blocks[2]], lambda t: inputs[t])


def test_a_different_kernel_table_is_refused(setup) -> None:
    lp, genesis = setup["lp"], setup["genesis"]
    torch_mm = OpSpec("aten.mm.default", torch.mm, torch.mm, KERNELS["aten.mm.default"].section)
    swapped = {**KERNELS, "aten.mm.default": torch_mm}
    with pytest.raises(ManifestError, match="would not reproduce"):
        Ledger(lp, genesis, kernels=swapped)
    Ledger(lp, genesis, kernels=dict(KERNELS))  # the same kernels under another mapping: accepted


def test_bad_programs_and_options_are_refused() -> None:
    w = mlp_digits()
    b = w.dataset.batch(1, 0, 8)
    with pytest.raises(LedgerError, match="clipping"):
        LedgerPrograms(w.step.model, w.step.loss_fn, AdamWConfig(lr=1e-3, clip_grad_norm=1.0), 2, b, b)
    with pytest.raises(LedgerError, match="max_contributors"):
        LedgerPrograms(w.step.model, w.step.loss_fn, SGDConfig(lr=0.1), 0, b, b)
    with pytest.raises(LedgerError, match="address"):
        did_of(1, "0x123")


def test_a_batch_already_in_a_block_or_shared_in_the_step_is_refused(setup) -> None:
    """Section 7's rule. The attack: a contributor resubmits a batch an earlier block accepted (its
    gradient at the new state is honest computation), or two identities submit the same batch in one
    step. Built without the earlier blocks' commitments, the reuse is accepted and paid; with them it
    is refused, and replay refuses a block that accepted it."""
    ledger, blocks, inputs, states = (setup[k] for k in ("ledger", "blocks", "inputs", "states"))
    ds, val = setup["ds"], inputs[2].validation
    cs = list(inputs[2].contributions)
    first = inputs[1].contributions[0]
    reuser = ledger.contribute(did_of(31337, "0x" + "a" * 40), states[1], [ds.batch(10, 1, 16)])
    assert reuser.batch_commitment == first.batch_commitment  # contributor 0's batch of step 1
    step2 = StepInputs([*cs[:3], reuser], val)
    accepted = ledger.build(2, blocks[0].hash, states[1], step2)  # no earlier commitments: the attack pays
    assert reuser.did in accepted.block.contributors and accepted.block.refused == ()

    built = ledger.build(2, blocks[0].hash, states[1], step2, earlier_batches(blocks[:1]))
    assert built.block.refused == ((reuser.did, REUSED_BATCH),)
    honest = ledger.build(2, blocks[0].hash, states[1], StepInputs(cs[:3], val), earlier_batches(blocks[:1]))
    assert built.block.model_root == honest.block.model_root and built.block.phi == honest.block.phi

    with pytest.raises(BlockError, match="block 2 does not reproduce: its contributors differ"):
        ledger.replay(states[0], [blocks[0], accepted.block], lambda t: inputs[1] if t == 1 else step2)

    twin = ledger.contribute(did_of(31337, "0x" + "b" * 40), states[1], [ds.batch(10, 2, 16)])
    assert twin.batch_commitment == cs[0].batch_commitment  # contributor 0's batch of this very step
    shared = ledger.build(2, blocks[0].hash, states[1], StepInputs([*cs[:3], twin], val), earlier_batches(blocks[:1]))
    assert dict(shared.block.refused) == {cs[0].did: SHARED_BATCH, twin.did: SHARED_BATCH}
    assert cs[0].did not in shared.block.contributors and len(shared.block.contributors) == 2


def test_a_contribution_that_does_not_recompute_is_refused_and_forfeits_everything(setup) -> None:
    """The attack: a gradient that is not the program's output on the contributor's own batch (a copy of
    another's earlier gradient, zeros, signs flipped) is accepted when nobody recomputes, and is paid.
    With recomputation on every contribution (recompute_every = 1) each is refused with its reason and
    its contributor is paid nothing, while honest contributions pass recomputation bit for bit."""
    ledger, genesis, states, blocks = setup["ledger"], setup["genesis"], setup["states"], setup["blocks"]
    ds, lp, inputs, val = setup["ds"], setup["lp"], setup["inputs"], setup["val"]
    honest = list(inputs[2].contributions)[: N - 1]  # a slot left for the cheater
    batch = [ds.batch(77, 2, 16)]
    cheat = did_of(31337, "0x" + "c" * 40)
    previous = inputs[1].contributions[0].gradients  # contributor 0's gradient of step 1, revealed then
    fakes = {
        "copied": dict(previous),
        "zeros": {k: torch.zeros_like(v) for k, v in previous.items()},
        "flipped": {k: -v for k, v in ledger.contribute(cheat, states[1], batch).gradients.items()},
    }
    on = Ledger(lp, dataclasses.replace(genesis, recompute_every=1))
    draw = hashlib.sha256(b"the block that revealed validation batch 2").digest()

    def step2(cs: list[Contribution], unrevealed: tuple[str, ...] = ()) -> StepInputs:
        return StepInputs(cs, val[1], unrevealed, draw)

    # The cheater's honest step 1 (its own batch), accepted and paid: what forfeiture takes away.
    mine = ledger.contribute(cheat, states[0], [ds.batch(77, 1, 16)])
    first = StepInputs([*inputs[1].contributions[: N - 1], mine], val[0])
    earned = ledger.build(1, genesis.model_id, states[0], first).block
    assert ledger_shares(10**18, genesis.payout, [earned], [], "r")[cheat] > 0
    for what, grads in fakes.items():
        fake = Contribution.of(cheat, batch, grads)
        step = step2([*honest, fake])
        off = ledger.build(2, blocks[0].hash, states[1], step, earlier_batches(blocks[:1]))
        assert cheat in off.block.contributors and off.block.refused == (), what  # the attack pays without it
        assert ledger_shares(10**18, genesis.payout, [blocks[0], off.block], [], "r").get(cheat, 0) > 0, what

        built = on.build(2, blocks[0].hash, states[1], step, earlier_batches(blocks[:1]))
        assert built.block.refused == ((cheat, NOT_RECOMPUTED),), what
        assert cheat not in built.block.contributors
        clean = on.build(2, blocks[0].hash, states[1], step2(honest), earlier_batches(blocks[:1]))
        assert built.block.model_root == clean.block.model_root and built.block.phi == clean.block.phi
        # Forfeit: nothing for the cheater, whatever it earned in its accepted block before.
        assert forfeited([earned, built.block]) == {cheat}
        paid = ledger_shares(10**18, genesis.payout, [earned, built.block], [], "r")
        assert cheat not in paid and sum(paid.values()) == 10**18

    # The honest contributions recompute to their commitments: the same block as without recomputation.
    every = step2(list(inputs[2].contributions))
    again = on.build(2, blocks[0].hash, states[1], every, earlier_batches(blocks[:1])).block
    assert again.refused == () and (again.model_root, again.phi) == (blocks[1].model_root, blocks[1].phi)

    # Batches that are missing, or are not the committed ones, are refused as unavailable.
    real = ledger.contribute(cheat, states[1], batch)
    for c in (dataclasses.replace(real, batches=None), dataclasses.replace(real, batches=(ds.batch(78, 2, 16),))):
        got = on.build(2, blocks[0].hash, states[1], step2([*honest, c]), earlier_batches(blocks[:1]))
        assert got.block.refused == ((cheat, RECOMPUTE_UNAVAILABLE),)
    # Withholding its data, or not revealing at all, once the draw is known (the validation batch is
    # revealed before the contributors' reveals) forfeits too; undrawn, neither is held against it.
    gone = dataclasses.replace(real, gradients=None, batches=None)
    got = on.build(2, blocks[0].hash, states[1], step2([*honest, gone]), earlier_batches(blocks[:1]))
    assert got.block.refused == ((cheat, RECOMPUTE_UNAVAILABLE),) and forfeited([got.block]) == {cheat}
    got = ledger.build(2, blocks[0].hash, states[1], step2([*honest, gone]), earlier_batches(blocks[:1]))
    assert got.block.refused == ((cheat, "unavailable"),) and not forfeited([got.block])
    silent = step2(honest, (cheat,))
    got = on.build(2, blocks[0].hash, states[1], silent, earlier_batches(blocks[:1]))
    assert got.block.refused == ((cheat, NOT_REVEALED),) and forfeited([got.block]) == {cheat}
    assert got.block.model_root == clean.block.model_root
    assert ledger.build(2, blocks[0].hash, states[1], silent, earlier_batches(blocks[:1])).block.refused == ()
    # A batch the program cannot take does not recompute either (its commitment is still its own).
    odd = [{"x": batch[0]["x"][:8], "y": batch[0]["y"][:8]}]
    bad = Contribution.of(cheat, odd, real.gradients)
    got = on.build(2, blocks[0].hash, states[1], step2([*honest, bad]), earlier_batches(blocks[:1]))
    assert got.block.refused == ((cheat, NOT_RECOMPUTED),)
    # Without the draw a genesis that recomputes cannot build; the block records the draw it used.
    with pytest.raises(LedgerError, match="the step's draw"):
        on.build(2, blocks[0].hash, states[1], StepInputs(honest, val[1]), earlier_batches(blocks[:1]))
    assert got.block.draw == draw and Block.decode(got.block.encode()) == got.block


def test_recomputation_sampling_is_keyed_by_the_draw(setup) -> None:
    """About one contribution in n is recomputed, chosen by H(t, draw, did), the draw being the hash of the
    chain block that revealed the step's validation batch: after every commit, and unknown to the client."""
    g = dataclasses.replace(setup["genesis"], recompute_every=4)
    dids = [did_of(31337, f"0x{i:040x}") for i in range(1, 2001)]
    v1, v2 = hashlib.sha256(b"one block").digest(), hashlib.sha256(b"another").digest()
    due1 = {d for d in dids if g.recompute_due(1, v1, d)}
    due2 = {d for d in dids if g.recompute_due(1, v2, d)}
    assert 400 < len(due1) < 600 and 400 < len(due2) < 600  # 500 expected
    assert len(due1 & due2) < 200  # another draw, another sample (125 expected)
    assert not any(setup["genesis"].recompute_due(1, v1, d) for d in dids)  # 0: never
    with pytest.raises(BlockError, match="recompute_every"):
        dataclasses.replace(g, recompute_every=-1)
    assert Genesis.decode(g.encode()) == g and g.model_id != setup["genesis"].model_id
