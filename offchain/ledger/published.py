"""A ledger's objects in the public store, and replay from them (docs/ledger.md, section 9).

Everything is content-addressed, so nothing read back is trusted: the genesis, the blocks and
the per-step records are canonical-CBOR blobs (key: SHA-256 of the bytes); the programs are
stored by program hash, the initial state, the validation batches and the contributions'
gradients as states by their state roots (a gradient's key is its gradient commitment, a
validation batch's its commitment). The **head** is a blob naming the rest:

    {"genesis": digest, "initial_state": root, "validation": [commitment per step 1..T],
     "steps": [{"record": digest, "block": digest}, ...]}

and a **step record** lists the step's revealed contributions, refused ones included, each with
the state roots of its micro-batches (stored too, so that a replay can recompute a sampled
contribution; an empty list when they were not at hand):

    {"step": t, "contributions": [[did, batch commitment, gradient commitment, batches, [batch roots]], ...],
     "unrevealed": [did, ...]}

(`unrevealed`: the DIDs that committed to the step and never revealed.)

Until the TrainingLedger contract holds the heads, a head digest is how a ledger is named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from offchain.store.errors import MissingObjectError
from offchain.store.store import Store
from trainer.ledger.block import Block, Genesis
from trainer.ledger.encoding import dumps, loads
from trainer.ledger.errors import BlockError
from trainer.ledger.ledger import Contribution, Ledger, StepInputs, batch_commitment, validation_root
from trainer.ledger.programs import ProgramPair, model_root

Tensor = torch.Tensor


@dataclass(frozen=True)
class PublishedStep:
    inputs: StepInputs
    block: Block


def step_record(step: int, contributions: Sequence[Contribution], unrevealed: Sequence[str] = ()) -> bytes:
    return dumps(
        {
            "step": step,
            "unrevealed": sorted(unrevealed, key=lambda d: d.encode("utf-8")),
            "contributions": [
                [c.did, c.batch_commitment, c.gradient_commitment, c.micro_batches, _batch_roots(c)]
                for c in contributions
            ],
        }
    )


def _batch_roots(c: Contribution) -> list[bytes]:
    return [] if c.batches is None else [batch_commitment(b) for b in c.batches]


def publish(
    store: Store,
    genesis: Genesis,
    programs: ProgramPair,
    initial_state: Mapping[str, Tensor],
    validation: Sequence[Mapping[str, Tensor]],
    steps: Sequence[PublishedStep],
) -> bytes:
    """Put every object of a ledger into `store`; returns the head's digest."""
    store.put_program(programs.gradient)
    store.put_program(programs.block)
    initial_root = store.put_state(dict(initial_state))
    commitments = [store.put_state(dict(v)) for v in validation]
    if validation_root(commitments) != genesis.validation_root:
        raise BlockError("the validation batches are not the ones the genesis commits to")
    rows = []
    for s in steps:
        for c in s.inputs.contributions:
            if c.gradients is not None:
                store.put_state(dict(c.gradients))
            for b in c.batches or ():
                store.put_state(dict(b))
        rows.append(
            {
                "record": store.put_blob(step_record(s.block.step, s.inputs.contributions, s.inputs.unrevealed)),
                "block": store.put_blob(s.block.encode()),
            }
        )
    head = {
        "genesis": store.put_blob(genesis.encode()),
        "initial_state": initial_root,
        "validation": commitments,
        "steps": rows,
    }
    return store.put_blob(dumps(head))


@dataclass(frozen=True)
class Fetched:
    genesis: Genesis
    programs: ProgramPair
    initial_state: dict[str, Tensor]
    validation: list[bytes]
    blocks: list[Block]
    records: list[dict[str, object]]


def fetch(store: Store, head: bytes) -> Fetched:
    """A ledger's genesis, programs, initial state and blocks from `store` (each checked against its
    key by the store); BlockError when the records do not fit together."""
    try:
        h = loads(store.get_blob(head))
        genesis = Genesis.decode(store.get_blob(h["genesis"]))
        programs = ProgramPair(store.get_program(genesis.gradient_program), store.get_program(genesis.block_program))
        initial = store.get_state(h["initial_state"])
        validation = list(h["validation"])
        blocks = [Block.decode(store.get_blob(row["block"])) for row in h["steps"]]
        records = [loads(store.get_blob(row["record"])) for row in h["steps"]]
    except (KeyError, TypeError) as e:
        raise BlockError(f"the head {head.hex()} is not a ledger head: {e}") from None
    if validation_root(validation) != genesis.validation_root:
        raise BlockError("the head's validation commitments are not the genesis' validation root")
    if model_root(initial) != genesis.initial_root:
        raise BlockError("the head's initial state is not the genesis' initial state")
    return Fetched(genesis, programs, initial, validation, blocks, records)


def replay_from_store(
    store: Store, head: bytes, *, progress: Callable[[int, Block], None] | None = None
) -> tuple[Fetched, dict[str, Tensor]]:
    """Fetch a ledger and replay every block from genesis (trainer.ledger.Ledger.replay): the model
    state after the last block. Raises ManifestError under other kernels, BlockError naming the
    first block that does not reproduce, the store's errors for missing or corrupt objects."""
    f = fetch(store, head)
    ledger = Ledger(f.programs, f.genesis)

    def inputs(t: int) -> StepInputs:
        record = f.records[t - 1]
        if record.get("step") != t:
            raise BlockError(f"the step record of block {t} is for step {record.get('step')}")
        contributions = []
        for did, batch_c, grad_c, m, roots in record["contributions"]:  # type: ignore[union-attr]
            try:
                grads: dict[str, Tensor] | None = store.get_state(grad_c)
            except MissingObjectError:
                grads = None  # the block must then have refused it as unavailable
            try:
                batches: tuple[dict[str, Tensor], ...] | None = tuple(store.get_state(r) for r in roots) or None
            except MissingObjectError:
                batches = None  # a recomputed contribution must then have been refused as unavailable
            contributions.append(Contribution(did, batch_c, grad_c, m, grads, batches))
        unrevealed = [str(d) for d in record["unrevealed"]]  # type: ignore[union-attr]
        return StepInputs(contributions, store.get_state(f.validation[t - 1]), unrevealed)

    return f, ledger.replay(f.initial_state, f.blocks, inputs, progress=progress)
