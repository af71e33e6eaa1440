"""What a trainer knows about its run, in the shapes the dispute game asks for.

A `RunWitness` replays a training run (program, dataset, config, initial state) step by
step with the RepOps interpreter and answers every question of the game from it: state
roots at any step, the checkpoint list, the trace of a step, the post-state entries, and
the openings each proof needs (docs/game.md section 2). It keeps checkpoint states and the
states it was asked about, not every state of the run.

A `Deviation` makes the witness of a dishonest (or faulty) trainer: at one step it uses a
faulty kernel, a tampered input state, another step's batch, or tampers the state it hands
on, and keeps going from there. Tests and the demo use it to play a real cheater.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import torch

from offchain.contracts.dispute_game import BatchProof, EntryProof, PostStateProof
from offchain.game.descent import LeafTree
from offchain.game.errors import GameError
from offchain.game.records import CheckpointList, RefKind
from trainer.commit import MerkleTree, name_hash
from trainer.commit.records import canonical_names, state_commitments, state_tree_from_commitments
from trainer.data.dataset import Dataset
from trainer.data.keyed import batch_indices
from trainer.interp import Interpreter
from trainer.interp.interpreter import Trace
from trainer.program import Program
from trainer.program.program import InputRef, NodeRef, OutputKind
from trainer.repops import KERNELS, OpSpec
from trainer.runner.runner import RunConfig

State = dict[str, torch.Tensor]

DTYPE_CODES: dict[torch.dtype, int] = {
    torch.float32: 1,
    torch.float64: 2,
    torch.float16: 3,
    torch.bfloat16: 4,
    torch.uint8: 5,
    torch.int8: 6,
    torch.int16: 7,
    torch.int32: 8,
    torch.int64: 9,
    torch.bool: 10,
}


class DeviationKind(enum.Enum):
    KERNEL = "kernel"  # one operator computes a wrong value (its outputs differ, its inputs agree)
    STATE_INPUT = "state-input"  # the step reads a tampered copy of one state tensor
    BATCH = "batch"  # the step reads the batch of the next step
    POST_STATE = "post-state"  # the step is right, the state it hands on is tampered


@dataclass(frozen=True, slots=True)
class Deviation:
    """Where and how a trainer leaves the honest run (it keeps going from the wrong state)."""

    step: int
    kind: DeviationKind
    target: str = ""  # KERNEL: an op name (default: node 0's op); STATE_INPUT/POST_STATE: a state name
    delta: float = 1e-3
    # KERNEL: when not 0, the fp32 output element of largest magnitude moves by this many ulps instead (the
    # largest: a sum on the grid of its row's largest element keeps it; a small one may round away there)
    ulps: int = 0
    # KERNEL: only the calls whose second operand is a Python number go wrong (`mul.Tensor(x, 0.9)`: the
    # Tensor-Scalar nodes); the op's tensor-tensor calls stay right
    scalar_operand: bool = False


def state_entries(state: Mapping[str, torch.Tensor]) -> tuple[list[str], dict[str, bytes], MerkleTree]:
    """Names in canonical order, their tensor commitments, and the tree of their STEN leaves."""
    commitments = state_commitments({n: t.contiguous() for n, t in state.items()})
    names, tree = state_tree_from_commitments(commitments)
    return names, commitments, tree


def _leaves(tree: MerkleTree) -> LeafTree:
    return LeafTree([tree.leaf(i) for i in range(tree.count)])


@dataclass
class RunWitness:
    program: Program
    dataset: Dataset
    config: RunConfig
    initial: State
    deviation: Deviation | None = None
    _states: dict[int, State] = field(default_factory=dict, repr=False)
    _roots: dict[int, bytes] = field(default_factory=dict, repr=False)
    _traces: dict[int, Trace] = field(default_factory=dict, repr=False)
    losses: dict[int, float] = field(default_factory=dict, repr=False)  # step -> loss, for steps it ran
    steps_run: int = field(default=0, repr=False)  # steps computed (state replays and traces) so far

    def __post_init__(self) -> None:
        self._states[0] = dict(self.initial)
        d = self.deviation
        if d is not None and not 0 <= d.step < self.config.steps:
            raise GameError(f"deviation step {d.step} is outside 0 .. {self.config.steps - 1}")

    # -- the run ---------------------------------------------------------------------------

    @cached_property
    def interpreter(self) -> Interpreter:
        return Interpreter(self.program)

    @cached_property
    def faulty_interpreter(self) -> Interpreter:
        """The interpreter with one kernel off by `delta` (a KERNEL deviation)."""
        d = self.deviation
        if d is None:
            raise GameError("an honest witness has no faulty interpreter")
        op = d.target or self.program.nodes[0].op
        spec = KERNELS[op]

        def wrong(*args: object, **kwargs: object) -> object:
            out = spec.fast(*args, **kwargs)
            if d.scalar_operand and isinstance(args[1] if len(args) > 1 else kwargs.get("other"), torch.Tensor):
                return out
            if isinstance(out, torch.Tensor) and out.dtype == torch.float32 and d.ulps and out.numel():
                moved = out.contiguous().clone()
                at = int(moved.reshape(-1).abs().nan_to_num(0.0).argmax())
                moved.view(torch.int32).reshape(-1)[at] += d.ulps  # the next patterns away from zero
                return moved
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                return out + d.delta
            return out

        kernels: dict[str, OpSpec] = dict(KERNELS)
        kernels[op] = dataclasses.replace(spec, fast=wrong)
        return Interpreter(self.program, kernels)

    def _deviates(self, step: int, kind: DeviationKind) -> bool:
        d = self.deviation
        return d is not None and d.step == step and d.kind is kind

    def _interpreter_at(self, step: int) -> Interpreter:
        return self.faulty_interpreter if self._deviates(step, DeviationKind.KERNEL) else self.interpreter

    def _tamper(self, state: State) -> State:
        assert self.deviation is not None
        name = self.deviation.target or canonical_names(list(state))[-1]
        return {**state, name: state[name] + self.deviation.delta}

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        """The batch step `step` reads (the scheduled one, unless tampered)."""
        source = step + 1 if self._deviates(step, DeviationKind.BATCH) else step
        return self.dataset.batch(self.config.seed, source, self.config.batch_size)

    def _input_from(self, step: int, state: State) -> State:
        return self._tamper(state) if self._deviates(step, DeviationKind.STATE_INPUT) else state

    def step_input(self, step: int) -> State:
        """The state step `step` reads (the claimed state before it, unless tampered)."""
        return self._input_from(step, self.state(step))

    def _run_step(self, step: int, state: State) -> State:
        new_state, loss = self._interpreter_at(step).run(self._input_from(step, state), self.batch(step))
        self.losses[step] = float(loss)
        self.steps_run += 1
        return self._tamper(new_state) if self._deviates(step, DeviationKind.POST_STATE) else new_state

    def state(self, step: int) -> State:
        """The claimed state after `step` steps, replayed from the nearest kept state."""
        if not 0 <= step <= self.config.steps:
            raise GameError(f"step {step} is outside 0 .. {self.config.steps}")
        if step not in self._states:
            start = max(s for s in self._states if s <= step)
            state = self._states[start]
            c = self.config.checkpoint_interval
            for s in range(start, step):
                state = self._run_step(s, state)
                if (s + 1) % c == 0 or s + 1 == step:
                    self._states[s + 1] = state
        return self._states[step]

    def keep(self, step: int, state: State) -> None:
        """Seed the replay with a state known to be the claimed state after `step` (e.g. a stored checkpoint)."""
        self._states[step] = dict(state)

    def kept(self, step: int) -> bool:
        return step in self._states

    def root(self, step: int) -> bytes:
        if step not in self._roots:
            self._roots[step] = state_entries(self.state(step))[2].root
        return self._roots[step]

    @cached_property
    def checkpoints(self) -> CheckpointList:
        return CheckpointList.from_steps(self.root, self.config.steps, self.config.checkpoint_interval)

    def trace(self, step: int) -> Trace:
        """The trace of step `step`, as this trainer computed it."""
        if step not in self._traces:
            _, _, trace = self._interpreter_at(step).trace(self.step_input(step), self.batch(step))
            self.steps_run += 1
            self._traces[step] = trace
        return self._traces[step]

    def trace_tree(self, step: int) -> LeafTree:
        return LeafTree([r.leaf for r in self.trace(step).records])

    def state_tree(self, step: int) -> LeafTree:
        return _leaves(state_entries(self.state(step))[2])

    # -- proofs ----------------------------------------------------------------------------

    def record(self, step: int, node: int) -> bytes:
        return self.trace(step).records[node].encode()

    def graph_proof(self, node: int) -> tuple[bytes, list[bytes]]:
        """Node `node`'s descriptor and its opening in the graph root."""
        descriptor, opening = self.program.open_node(node)
        return descriptor, list(opening.siblings)

    @cached_property
    def program_roots(self) -> tuple[bytes, bytes, bytes, bytes]:
        p = self.program
        return (p.graph_root, p.inputs_root, p.outputs_root, p.constants_root)

    def _entry_proof(self, state: Mapping[str, torch.Tensor], name: str) -> EntryProof:
        names, _, tree = state_entries(state)
        if name not in names:
            raise GameError(f"the state has no entry {name!r}")
        return EntryProof.of(tree.open(names.index(name)))

    def state_input_proof(self, step: int, name: str) -> EntryProof:
        """Opening of entry `name` in the (agreed) state before `step`."""
        return self._entry_proof(self.state(step), name)

    def constant_proof(self, name: str) -> EntryProof:
        """Opening of constant `name` in the program's constants root."""
        return self._entry_proof({c.name: c.tensor() for c in self.program.constants}, name)

    def node_input_proof(self, step: int, node: int) -> tuple[bytes, list[bytes]]:
        """NODE record `node` of `step` and its opening in this trainer's trace root."""
        opening = MerkleTree([r.leaf for r in self.trace(step).records]).open(node)
        return self.record(step, node), list(opening.siblings)

    def batch_proof(self, step: int, name: str) -> BatchProof:
        """Batch tensor `name` of `step` by the schedule, every row opened in the dataset."""
        c = self.config
        idx = batch_indices(c.seed, step, c.batch_size, len(self.dataset))
        examples = [self.dataset.examples[i] for i in idx]
        stacked = torch.stack([ex[name] for ex in examples]).contiguous()
        tree = self.dataset.tree
        ex_roots: list[bytes] = []
        ds_sibs: list[bytes] = []
        field_index: list[int] = []
        field_sibs: list[bytes] = []
        field_count = 0
        for i, ex in zip(idx, examples, strict=True):
            names, _, ex_tree = state_entries(ex)
            ex_roots.append(ex_tree.root)
            ds_sibs.extend(tree.open(i).siblings)
            k = names.index(name)
            field_index.append(k)
            field_sibs.extend(ex_tree.open(k).siblings)
            field_count = len(names)
        return BatchProof(
            dtype=DTYPE_CODES[stacked.dtype],
            shape=tuple(stacked.shape),
            data=_le_bytes(stacked),
            example_roots=tuple(ex_roots),
            dataset_siblings=tuple(ds_sibs),
            field_count=field_count,
            field_index=tuple(field_index),
            field_siblings=tuple(field_sibs),
        )

    def post_state_proof(self, step: int, entry: int) -> PostStateProof:
        """Why entry `entry` of the state after `step` is what the agreed trace outputs."""
        post_names, post_commitments, _ = state_entries(self.state(step + 1))
        pre_names, pre_commitments, pre_tree = state_entries(self.state(step))
        name = post_names[entry]
        if pre_names[entry] != name:
            raise GameError(f"entry {entry} is {name!r} after step {step} but {pre_names[entry]!r} before")
        p = self.program
        outputs = list(p.outputs)
        k = next(i for i, o in enumerate(outputs) if o.name == name and o.kind is OutputKind.STATE)
        out = outputs[k]
        ref = tuple(w if isinstance(w, int) else int.from_bytes(w, "big") for w in p.ref_words(out.ref))
        source_record = b""
        source_sibs: list[bytes] = []
        source_entry = EntryProof(0, 0, ())
        if ref[0] == RefKind.NODE:
            source_record, source_sibs = self.node_input_proof(step, ref[1])
        elif ref[0] == RefKind.STATE:
            source_entry = self._entry_proof(self.state(step), _state_name(p, ref[1]))
        else:
            raise GameError(f"state output {name!r} refers to kind {ref[0]}, which no proof covers")
        return PostStateProof(
            name_hash=name_hash(name),
            commitment=post_commitments[name],
            pre_siblings=tuple(pre_tree.open(entry).siblings),
            pre_commitment=pre_commitments[name],
            program_roots=self.program_roots,
            output_count=len(outputs),
            output_index=k,
            type_hash=out.type.type_hash(),
            ref=(ref[0], ref[1], ref[2]),
            output_siblings=tuple(p.outputs_tree.open(k).siblings),
            source_record=source_record,
            source_siblings=tuple(source_sibs),
            source_entry=source_entry,
        )

    def node_inputs(self, step: int, node: int) -> list[torch.Tensor]:
        """The input tensors of node `node` at `step` (what a trainer publishes for the oracle)."""
        return self.node_io(step, node)[0]

    def node_io(self, step: int, node: int) -> tuple[list[torch.Tensor], tuple[torch.Tensor, ...]]:
        """The input tensors of node `node` at `step` and its outputs, as this trainer computed them (the
        element phase opens them: docs/game.md 2.7)."""
        state, batch = self.step_input(step), self.batch(step)
        values = self._interpreter_at(step).node_values(state, batch)
        return self._inputs_of(node, values, {**state, **batch}), tuple(t.contiguous() for t in values[node])

    def _inputs_of(
        self, node: int, values: list[tuple[torch.Tensor, ...]], inputs: Mapping[str, torch.Tensor]
    ) -> list[torch.Tensor]:
        consts = {c.name: c.tensor() for c in self.program.constants}
        out: list[torch.Tensor] = []
        for ref in self.program.nodes[node].inputs:
            if isinstance(ref, NodeRef):
                out.append(values[ref.index][ref.slot])
            elif isinstance(ref, InputRef):
                out.append(inputs[ref.name])
            else:
                out.append(consts[ref.name])
        return out


def _state_name(program: Program, hashed: int) -> str:
    target = hashed.to_bytes(32, "big")
    for n in program.state_names:
        if name_hash(n) == target:
            return n
    raise GameError(f"no state input has the name hash {target.hex()}")


def _le_bytes(t: torch.Tensor) -> bytes:
    """Row-major little-endian bytes (the commitment format's byte order; this host is little-endian)."""
    return t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""
