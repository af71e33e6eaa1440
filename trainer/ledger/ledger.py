"""Building and replaying a ledger's blocks (docs/ledger.md).

`Ledger(programs, genesis)` runs a ledger's two programs with the RepOps interpreter after
checking that the programs and the local kernels are the ones the genesis pins. Contributors
call `gradient`; block builders call `build` for each step; `replay` rebuilds every block
from genesis and the step inputs and names the first one that does not reproduce.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import torch

from trainer.commit.merkle import leaf_hash, root
from trainer.commit.records import encode_record, state_root
from trainer.interp import Interpreter, InterpreterError
from trainer.ledger.attribution import (
    EXACT_SHAPLEY_MAX,
    FirstOrder,
    fraction_of_f32,
    shapley_exact,
    shapley_sampled,
)
from trainer.ledger.block import Block, Genesis, f32_bits
from trainer.ledger.did import did_order
from trainer.ledger.errors import BlockError, ContributionError, LedgerError, ManifestError
from trainer.ledger.manifest import kernel_manifest, manifest_hash
from trainer.ledger.programs import ATTR_WEIGHT, GRAD, TERMS, LedgerPrograms, ProgramPair, model_root
from trainer.repops import KERNELS, OpSpec

Tensor = torch.Tensor
State = dict[str, Tensor]


REUSED_BATCH = "batch already in an earlier block"
SHARED_BATCH = "batch shared with another contribution of the step"
# Recomputation (docs/ledger.md, section 7): a sampled contribution whose gradient is not the gradient
# program's output on its own committed batches, or whose batches cannot be had, is refused, and its
# contributor forfeits its whole payout (trainer.ledger.shares).
# The draw is known once the step's validation batch is revealed, before the contributors' reveals, so
# a drawn contributor that committed must reveal, and publish its data, or forfeit all the same.
NOT_RECOMPUTED = "gradient does not recompute from its batches"
RECOMPUTE_UNAVAILABLE = "batches unavailable for recomputation"
NOT_REVEALED = "committed, drawn for recomputation, never revealed"
FORFEIT = frozenset({NOT_RECOMPUTED, RECOMPUTE_UNAVAILABLE, NOT_REVEALED})
_SUM = KERNELS["aten.sum.dim_IntList"].fast


def exact_sum_rows(rows: Sequence[Tensor]) -> Tensor:
    """RepOps' exact sum of same-shaped fp32 tensors (docs/repops/linalg.md, "Sums and means")."""
    return rows[0].clone() if len(rows) == 1 else _SUM(torch.stack(list(rows)), [0])


def batch_commitment(batch: Mapping[str, Tensor]) -> bytes:
    """The commitment of a batch (contribution or validation): the state root of its tensors."""
    return state_root(dict(batch))


def validation_leaf(step: int, commitment: bytes) -> bytes:
    """leaf("LVAL" || u256(step) || commitment): step t's entry in the genesis validation root."""
    return leaf_hash(encode_record(b"LVAL", [step, commitment]))


def validation_root(commitments: Sequence[bytes]) -> bytes:
    """The list root over the validation batches of steps 1..T."""
    if not commitments:
        raise LedgerError("a ledger needs at least one step of validation data")
    return root([validation_leaf(t, c) for t, c in enumerate(commitments, start=1)])


@dataclass(frozen=True, slots=True)
class Contribution:
    """A contributor's step input: its DID, its batch's commitment and its gradients (`grad/<param>`),
    or None when the data behind its revealed commitment cannot be had."""

    did: str
    batch_commitment: bytes  # the list root over its micro-batches' commitments (`batches_commitment`)
    gradient_commitment: bytes
    micro_batches: int  # how many batches its gradient sums (1 .. genesis.max_micro_batches)
    gradients: Mapping[str, Tensor] | None  # the exact sum of the micro-batches' gradients
    # Its micro-batches, as a builder that recomputes needs them (None: not at hand, or not fetched).
    batches: tuple[Mapping[str, Tensor], ...] | None = None

    @staticmethod
    def of(did: str, batches: Sequence[Mapping[str, Tensor]], gradients: Mapping[str, Tensor]) -> Contribution:
        return Contribution(
            did, batches_commitment(batches), state_root(dict(gradients)), len(batches), gradients, tuple(batches)
        )


def batches_commitment(batches: Sequence[Mapping[str, Tensor]]) -> bytes:
    """The commitment of a contributor's step batches: the list root over leaf("CBAT" || u256(i) ||
    batch commitment) of its micro-batches in order."""
    if not batches:
        raise ContributionError("a contribution needs at least one batch")
    return root([leaf_hash(encode_record(b"CBAT", [i, batch_commitment(b)])) for i, b in enumerate(batches)])


@dataclass(frozen=True)
class BuiltBlock:
    block: Block
    state: State  # the model state after the step
    weights: dict[str, Tensor]  # the attribution weights, keyed like the gradients (grad/<param>)
    first_order: FirstOrder  # the exact row sums of the block program's `attr/terms` (its accepted rows)
    terms: Tensor | None = None  # the block program's whole `attr/terms` (float64 [max_contributors, n_params])


@dataclass(frozen=True, slots=True)
class StepInputs:
    contributions: Sequence[Contribution]
    validation: Mapping[str, Tensor]
    # DIDs that committed to the step but never revealed: one drawn for recomputation forfeits.
    unrevealed: Sequence[str] = ()
    # The recomputation draw's entropy: the hash of the chain block that revealed the validation batch
    # (needed when the genesis recomputes; Block.draw records it).
    draw: bytes = b""


class Ledger:
    """A ledger's programs under the local kernels, checked against its genesis."""

    def __init__(
        self,
        programs: LedgerPrograms | ProgramPair,
        genesis: Genesis,
        *,
        kernels: Mapping[str, OpSpec] | None = None,
    ) -> None:
        if isinstance(programs, LedgerPrograms):
            programs = programs.pair
        gp, bp = programs.gradient, programs.block
        if gp.program_hash != genesis.gradient_program or bp.program_hash != genesis.block_program:
            raise LedgerError(
                "the programs at hand are not the genesis' programs: "
                f"gradient {gp.program_hash.hex()[:16]} vs {genesis.gradient_program.hex()[:16]}, "
                f"block {bp.program_hash.hex()[:16]} vs {genesis.block_program.hex()[:16]}"
            )
        if programs.max_contributors != genesis.max_contributors:
            raise LedgerError(
                f"programs take {programs.max_contributors} contributors, genesis {genesis.max_contributors}"
            )
        local = manifest_hash(kernel_manifest([gp, bp], kernels))
        if local != genesis.manifest:
            raise ManifestError(
                f"the local kernels give manifest {local.hex()[:16]}, the ledger was built under "
                f"{genesis.manifest.hex()[:16]}: replaying under other kernels would not reproduce its bits"
            )
        self.programs = programs
        self.genesis = genesis
        self._grad = Interpreter(gp, kernels)
        self._block = Interpreter(bp, kernels)

    @staticmethod
    def create_genesis(
        programs: LedgerPrograms,
        *,
        chain_id: int,
        name: str,
        initial_state: Mapping[str, Tensor],
        validation_commitments: Sequence[bytes],
        kernels: Mapping[str, OpSpec] | None = None,
        **options: object,
    ) -> Genesis:
        gp, bp = programs.gradient_program, programs.block_program
        return Genesis(
            chain_id=chain_id,
            name=name,
            initial_root=model_root(initial_state),
            gradient_program=gp.program_hash,
            block_program=bp.program_hash,
            manifest=manifest_hash(kernel_manifest([gp, bp], kernels)),
            validation_root=validation_root(validation_commitments),
            steps=len(validation_commitments),
            max_contributors=programs.max_contributors,
            optimizer=repr(programs.optimizer),
            **options,  # type: ignore[arg-type]
        )

    # -- contributors ------------------------------------------------------------------------

    def gradient(self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> tuple[dict[str, Tensor], Tensor]:
        """(grad/<param> tensors, loss) of the gradient program at `state` on one batch."""
        out, loss = self._grad.run(self.programs.gradient_inputs(state), batch)
        return {k: v for k, v in out.items() if k.startswith(GRAD)}, loss

    def contribute(
        self, did: str, state: Mapping[str, Tensor], batches: Sequence[Mapping[str, Tensor]]
    ) -> Contribution:
        """A contributor's step: the gradient program on each of its batches, summed exactly
        (RepOps' exact sum over the batches, one rounding), so that a contributor's gradient is the
        same sum whether its batches come as one identity or several."""
        if not 1 <= len(batches) <= self.genesis.max_micro_batches:
            raise ContributionError(
                f"a contribution holds 1 to {self.genesis.max_micro_batches} batches, got {len(batches)}"
            )
        grads = [self.gradient(state, b)[0] for b in batches]
        total = {k: exact_sum_rows([g[k] for g in grads]) for k in grads[0]}
        return Contribution.of(did, batches, total)

    # -- builders ----------------------------------------------------------------------------

    def _check(self, c: Contribution) -> str | None:
        """Why contribution `c` cannot enter a block, or None."""
        if c.gradients is None:
            return "unavailable"
        want = {GRAD + n: t for n, t in self.programs.param_types.items()}
        if set(c.gradients) != set(want):
            return "wrong tensors"
        for k, ref in want.items():
            g = c.gradients[k]
            if g.dtype != ref.dtype or tuple(g.shape) != tuple(ref.shape):
                return f"wrong type of {k}"
            if not bool(torch.isfinite(g).all()):
                return "non-finite"
        if state_root(dict(c.gradients)) != c.gradient_commitment:
            return "commitment mismatch"
        if not 1 <= c.micro_batches <= self.genesis.max_micro_batches:
            return "batch count out of range"
        return None

    def _recompute(self, c: Contribution, pre_state: Mapping[str, Tensor]) -> str | None:
        """Why `c` fails recomputation at `pre_state` (the state it was computed on), or None: its gradient
        commitment must be that of the gradient program's exact sum over its own committed batches."""
        batches = c.batches
        if batches is None or len(batches) != c.micro_batches:
            return RECOMPUTE_UNAVAILABLE
        try:
            if batches_commitment(batches) != c.batch_commitment:
                return RECOMPUTE_UNAVAILABLE  # not the batches it committed to: as good as none
            again = self.contribute(c.did, pre_state, batches)
        except InterpreterError:  # a batch the program cannot take (missing tensor, wrong type): no such gradient
            return NOT_RECOMPUTED
        return None if again.gradient_commitment == c.gradient_commitment else NOT_RECOMPUTED

    def _run_block(
        self,
        pre: Mapping[str, Tensor],
        validation: Mapping[str, Tensor],
        rows: list[Mapping[str, Tensor] | None],
        count: int,
    ) -> tuple[State, Tensor, dict[str, Tensor], Tensor]:
        """(model state after the update, L_val before it, the attribution weights keyed grad/<param>,
        `attr/terms`) of the block program on `rows` (None: a zero row)."""
        batch = self.programs.contributions_batch(validation, rows, count=count)
        out, loss = self._block.run(self.programs.block_inputs(pre), batch)
        state = {k: v for k, v in out.items() if not k.startswith(ATTR_WEIGHT) and k != TERMS}
        weights = {GRAD + k.removeprefix(ATTR_WEIGHT): v for k, v in out.items() if k.startswith(ATTR_WEIGHT)}
        return state, loss, weights, out[TERMS]

    def _loss_at(self, state: Mapping[str, Tensor], validation: Mapping[str, Tensor]) -> Tensor:
        return self._run_block(state, validation, [None], 1)[1]

    def build(
        self,
        step: int,
        parent: bytes,
        pre_state: Mapping[str, Tensor],
        inputs: StepInputs,
        earlier: Collection[bytes] = frozenset(),
    ) -> BuiltBlock:
        """Block `step` on `pre_state` (the model state after block step-1) from the step's inputs.
        `earlier` holds the batch commitments of blocks 1 .. step-1 (`earlier_batches`): a contribution
        whose batch commitment is among them, or another contribution's of this step, is refused
        (docs/ledger.md, section 7)."""
        g = self.genesis
        if not 1 <= step <= g.steps:
            raise LedgerError(f"step {step} is outside the ledger's steps 1..{g.steps}")
        by_did: dict[str, Contribution] = {}
        for c in inputs.contributions:
            if c.did in by_did:
                raise ContributionError(f"step {step}: {c.did} contributed twice")
            by_did[c.did] = c
        order = did_order(list(by_did))
        if len(order) > g.max_contributors:
            raise ContributionError(f"step {step}: {len(order)} contributions, the ledger takes {g.max_contributors}")
        accepted: list[Contribution] = []
        refused: list[tuple[str, str]] = []
        seen = Counter(c.batch_commitment for c in by_did.values())
        v = inputs.draw
        if g.recompute_every and len(v) != 32:
            raise LedgerError(
                f"step {step}: the genesis recomputes contributions, but the step's draw (the 32-byte hash of "
                f"the chain block that revealed its validation batch) is {len(v)} bytes"
            )
        for did in order:
            c = by_did[did]
            why = self._check(c)
            if why == "unavailable" and g.recompute_due(step, v, did):
                why = RECOMPUTE_UNAVAILABLE  # withholding its data when drawn is no way out
            if why is None and c.batch_commitment in earlier:
                why = REUSED_BATCH
            if why is None and seen[c.batch_commitment] > 1:
                why = SHARED_BATCH
            if why is None and g.recompute_due(step, v, did):
                why = self._recompute(c, pre_state)
            if why is None:
                accepted.append(by_did[did])
            else:
                refused.append((did, why))
        silent = [d for d in did_order(sorted(set(inputs.unrevealed) - set(by_did))) if g.recompute_due(step, v, d)]
        refused.extend((d, NOT_REVEALED) for d in silent)
        validation = dict(inputs.validation)
        grads = [c.gradients for c in accepted]
        n = len(accepted)
        count = sum(c.micro_batches for c in accepted)
        terms: Tensor | None = None
        if n:
            post, val_loss, weights, terms = self._run_block(pre_state, validation, list(grads), count)
            # φ comes from the program's state: row i of attr/terms is accepted[i]'s (rows past n are zero
            # rows), its exact sum over the parameters is φ (no rounding, outside the program)
            fo = FirstOrder.of_terms(terms[:n].tolist())
        else:  # nobody to aggregate: the state stays, the loss is still recorded
            post, val_loss = dict(pre_state), self._loss_at(pre_state, validation)
            weights, fo = {}, FirstOrder((), 0)
        shapley: tuple[tuple[int, int], ...] | None = None
        exact = False
        if n and g.shapley_due(step, parent):
            values, exact = self._shapley(pre_state, validation, grads, count, parent, step)  # type: ignore[arg-type]
            shapley = tuple((v.numerator, v.denominator) for v in values)
        block = Block(
            model=g.model_id,
            step=step,
            parent=parent,
            contributors=tuple(c.did for c in accepted),
            batch_commitments=tuple(c.batch_commitment for c in accepted),
            gradient_commitments=tuple(c.gradient_commitment for c in accepted),
            micro_batches=tuple(c.micro_batches for c in accepted),
            validation=batch_commitment(validation),
            model_root=model_root(post),
            val_loss_bits=f32_bits(float(val_loss)),
            phi=fo.numerators,
            phi_exponent=fo.exponent,
            shapley=shapley,
            shapley_exact=exact,
            refused=tuple(refused),
            manifest=g.manifest,
            draw=v if g.recompute_every else b"",  # a ledger that never recomputes draws nothing
        )
        return BuiltBlock(block, post, weights, fo, terms)

    def coalition_value(
        self,
        pre: Mapping[str, Tensor],
        validation: Mapping[str, Tensor],
        grads: Sequence[Mapping[str, Tensor]],
        count: int,
    ) -> Callable[[frozenset[int]], Fraction]:
        """v(S) = L_val(θ_∅) - L_val(θ_S), θ_S the update with the contributions of S summed and divided
        by the step's whole batch count (so the grand coalition's update is the block's)."""
        n = len(grads)
        losses: dict[frozenset[int], Fraction] = {}

        def loss(s: frozenset[int]) -> Fraction:
            if s not in losses:
                rows = [grads[i] if i in s else None for i in range(n)]
                theta, _, _, _ = self._run_block(pre, validation, rows, count)
                losses[s] = fraction_of_f32(self._loss_at(theta, validation))
            return losses[s]

        return lambda s: loss(frozenset()) - loss(s)

    def _shapley(
        self,
        pre: Mapping[str, Tensor],
        validation: Mapping[str, Tensor],
        grads: Sequence[Mapping[str, Tensor]],
        count: int,
        parent: bytes,
        step: int,
    ) -> tuple[list[Fraction], bool]:
        v = self.coalition_value(pre, validation, grads, count)
        if len(grads) <= EXACT_SHAPLEY_MAX:
            return shapley_exact(len(grads), v), True
        seed = parent + step.to_bytes(8, "big")
        return shapley_sampled(len(grads), v, seed, self.genesis.shapley_permutations), False

    # -- replay ------------------------------------------------------------------------------

    def replay(
        self,
        initial_state: Mapping[str, Tensor],
        blocks: Iterable[Block],
        inputs: Callable[[int], StepInputs],
        *,
        progress: Callable[[int, Block], None] | None = None,
    ) -> State:
        """Rebuild every block from genesis; the model state after the last. Raises BlockError naming
        the first block whose hash (hence model root, attribution, ...) does not reproduce."""
        g = self.genesis
        if model_root(initial_state) != g.initial_root:
            raise BlockError("the initial state's root is not the genesis' initial root")
        state: State = dict(initial_state)
        parent = g.model_id
        earlier: set[bytes] = set()
        for expect_step, block in enumerate(blocks, start=1):
            if block.step != expect_step:
                raise BlockError(f"block {block.step} found where block {expect_step} should be")
            if block.model != g.model_id:
                raise BlockError(f"block {block.step} belongs to another ledger")
            if block.parent != parent:
                raise BlockError(f"block {block.step} does not chain onto block {block.step - 1}")
            step_inputs = inputs(block.step)
            if not step_inputs.draw:  # the block's own record of it (builders checked it against the chain)
                step_inputs = dataclasses.replace(step_inputs, draw=block.draw)
            built = self.build(block.step, parent, state, step_inputs, earlier)
            if built.block.hash != block.hash:
                what = _first_difference(built.block, block)
                raise BlockError(f"block {block.step} does not reproduce: {what}")
            state, parent = built.state, block.hash
            earlier.update(block.batch_commitments)
            if progress is not None:
                progress(block.step, block)
        return state


def earlier_batches(blocks: Iterable[Block]) -> frozenset[bytes]:
    """The batch commitments the blocks accepted: what a later block refuses to accept again."""
    return frozenset(c for b in blocks for c in b.batch_commitments)


def _first_difference(mine: Block, theirs: Block) -> str:
    a, b = mine.record(), theirs.record()
    for k in a:
        if a[k] != b.get(k):
            return f"its {k} differs (replayed {str(a[k])[:40]}, recorded {str(b.get(k))[:40]})"
    return "its encoding differs"
