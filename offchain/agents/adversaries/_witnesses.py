"""The runs the catalogue's cheaters claim: `RunWitness` subclasses, each wrong in one way.

A witness answers every question of the game from the run it claims, so a cheater plays
its wrong run to the end with the ordinary `GamePlayer`; the contracts refuse the moves it
cannot back (a Merkle opening that does not match, a proof of a value it never had), its
trainer marks the game stuck after three refusals, and its clock runs out.

- `OneUlpWitness`: the state one step hands on has one tensor moved by one ulp.
- `LazyWitness`: from one step on, the state is copied instead of trained.
- `PoisonedBatchWitness`: from one step on, the batches come from another seed.
- `EagerWitness`: every node runs torch's own ATen kernel instead of the RepOps one.
- `RewiredWitness`: one step runs a program with one node changed (another op, or an
  input taken from another node), claiming either that program's descriptor or the task's.
- `ForgedWitness`: honest up to a checkpoint, then checkpoint states of random numbers it
  never trained to (and nothing between them).
- `HostileInputsWitness`: a faulty kernel at one step, whose trace claims a wrong-shaped input
  for a later node of that step (a question the oracle cannot run), in variants that differ
  only in that node's outputs and the state they hand on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import torch

from offchain.game.errors import GameError
from offchain.game.witness import DeviationKind, RunWitness, State
from trainer.commit import commit_tensor
from trainer.commit.records import canonical_names
from trainer.interp import Interpreter
from trainer.interp.interpreter import Trace
from trainer.program import Program
from trainer.program._schema import op_overload
from trainer.program.optim import PARAM
from trainer.program.program import InputRef, NodeRef, Ref
from trainer.repops import KERNELS, OpSpec


@dataclass
class OneUlpWitness(RunWitness):
    """A POST_STATE deviation of one ulp: `deviation.target` (default: the state's last
    parameter) moved by `torch.nextafter` towards +inf, on its first element or on every element."""

    whole_tensor: bool = False

    def _tamper(self, state: State) -> State:
        d = self.deviation
        if d is None or d.kind is not DeviationKind.POST_STATE:
            raise GameError("a one-ulp witness needs a POST_STATE deviation")
        name = d.target or [n for n in canonical_names(list(state)) if n.startswith(PARAM)][-1]
        t = state[name]
        up = torch.nextafter(t, torch.full_like(t, math.inf))
        if not self.whole_tensor:
            flat = t.clone().reshape(-1)
            flat[0] = up.reshape(-1)[0]
            up = flat.reshape(t.shape)
        return {**state, name: up.contiguous()}


@dataclass
class LazyWitness(RunWitness):
    """From step `lazy_from` on, the state after a step is the state before it.

    It still claims the real trace of each step (the trace it would have computed from the
    state it holds): only the state it hands on is wrong. A skipped step reports the loss of
    the step before it (a trainer's journal wants one per step).
    """

    lazy_from: int = 0

    def _run_step(self, step: int, state: State) -> State:
        if step < self.lazy_from:
            return super()._run_step(step, state)
        self.losses[step] = self.losses.get(step - 1, 0.0)
        return dict(state)


@dataclass
class PoisonedBatchWitness(RunWitness):
    """From step `poisoned_from` on, step s reads batch s of the schedule of `other_seed`."""

    poisoned_from: int = 0
    other_seed: int = 0

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        if step < self.poisoned_from:
            return super().batch(step)
        return self.dataset.batch(self.other_seed, step, self.config.batch_size)


def aten_kernels(program: Program) -> dict[str, OpSpec]:
    """The RepOps kernel table with each of `program`'s ops run by its ATen overload instead."""
    kernels = dict(KERNELS)
    for op in {n.op for n in program.nodes}:
        kernels[op] = dataclasses.replace(KERNELS[op], fast=op_overload(op))
    return kernels


@dataclass
class EagerWitness(RunWitness):
    """Every step run with torch's eager ATen kernels (whatever BLAS and vector code this
    machine's torch uses), not with RepOps. Its traces name the task's descriptors."""

    @cached_property
    def interpreter(self) -> Interpreter:
        return Interpreter(self.program, aten_kernels(self.program))


def replace_op(program: Program, index: int, op: str) -> Program:
    """`program` with node `index` computed by `op` (same arguments, same output types)."""
    nodes = list(program.nodes)
    nodes[index] = dataclasses.replace(nodes[index], op=op)
    return dataclasses.replace(program, nodes=tuple(nodes))


def replace_input(program: Program, index: int, k: int, ref: Ref) -> Program:
    """`program` with input `k` of node `index` read from `ref` instead."""
    nodes = list(program.nodes)
    inputs = list(nodes[index].inputs)
    inputs[k] = ref
    nodes[index] = dataclasses.replace(nodes[index], inputs=tuple(inputs))
    return dataclasses.replace(program, nodes=tuple(nodes))


@dataclass
class RewiredWitness(RunWitness):
    """Step `at_step` runs `rewired` (the task's program with node `node` changed).

    With `claims_task_descriptors` its trace names the task's descriptor for every node, so
    the changed node's record claims inputs or outputs the task's graph does not give; without
    it, the record names the changed descriptor, which the task's graph root does not hold.
    """

    at_step: int = 0
    rewired: Program | None = None
    node: int = 0
    claims_task_descriptors: bool = False

    @cached_property
    def rewired_interpreter(self) -> Interpreter:
        if self.rewired is None:
            raise GameError("a rewired witness needs the program it runs at its step")
        return Interpreter(self.rewired)

    def _interpreter_at(self, step: int) -> Interpreter:
        return self.rewired_interpreter if step == self.at_step else super()._interpreter_at(step)

    def trace(self, step: int) -> Trace:
        if step == self.at_step and self.claims_task_descriptors and step not in self._traces:
            records = super().trace(step).records
            self._traces[step] = Trace(
                tuple(dataclasses.replace(r, descriptor_hash=self.program.descriptor_hash(r.index)) for r in records)
            )
        return super().trace(step)

    def graph_proof(self, node: int) -> tuple[bytes, list[bytes]]:
        if node != self.node or self.claims_task_descriptors or self.rewired is None:
            return super().graph_proof(node)
        descriptor, opening = self.rewired.open_node(node)  # opens in the rewired graph, not the task's
        return descriptor, list(opening.siblings)

    def node_inputs(self, step: int, node: int) -> list[torch.Tensor]:
        if step != self.at_step or self.rewired is None:
            return super().node_inputs(step, node)
        state, batch = self.step_input(step), self.batch(step)
        values = self.rewired_interpreter.node_values(state, batch)
        inputs = {**state, **batch}
        consts = {c.name: c.tensor() for c in self.rewired.constants}
        out: list[torch.Tensor] = []
        for ref in self.rewired.nodes[node].inputs:
            if isinstance(ref, NodeRef):
                out.append(values[ref.index][ref.slot])
            elif isinstance(ref, InputRef):
                out.append(inputs[ref.name])
            else:
                out.append(consts[ref.name])
        return out


def skipped_input(program: Program) -> tuple[int, int, NodeRef]:
    """A node input to rewire: the first input k of a node d that reads the output of a node j
    which itself reads a tensor of the same type; d then reads that tensor, skipping j (in the
    MLP: the second layer reads the pre-activation instead of the GELU's output)."""
    for node in program.nodes:
        for k, ref in enumerate(node.inputs):
            if not isinstance(ref, NodeRef):
                continue
            produced = program.ref_type(ref)
            for source in program.nodes[ref.index].inputs:
                if isinstance(source, NodeRef) and program.ref_type(source) == produced:
                    return node.index, k, source
    raise GameError("the program has no node whose input can be taken from one node earlier")


def swapped_op(program: Program, op: str = "aten.sub.Tensor", to: str = "aten.add.Tensor") -> int:
    """The first node computing `op` on two node outputs (in the MLP: the logits' gradient)."""
    for node in program.nodes:
        if node.op == op and all(isinstance(r, NodeRef) for r in node.inputs):
            return node.index
    raise GameError(f"the program has no {op} node on two node outputs to compute with {to}")


@dataclass
class ForgedWitness(RunWitness):
    """Honest states up to step `forged_from`; from there on only checkpoint states, each of
    random numbers (drawn from the step number), and no state between them: it can submit the
    roots but cannot show any step that leads to them."""

    forged_from: int = 0

    def state(self, step: int) -> State:
        if step <= self.forged_from:
            return super().state(step)
        c = self.config.checkpoint_interval
        if step % c and step != self.config.steps:
            raise GameError(f"the forged run has no state after step {step}; it never trained past {self.forged_from}")
        if step not in self._states:
            self._states[step] = _noise(self.initial, step)
            last = self.losses.get(self.forged_from - 1, 0.0)
            for s in range(step - c, step):
                self.losses.setdefault(s, last)
        return self._states[step]


def _noise(like: Mapping[str, torch.Tensor], step: int) -> State:
    out: State = {}
    for name, t in like.items():
        seed = int.from_bytes(hashlib.sha256(f"forged/{step}/{name}".encode()).digest()[:8], "big")
        g = torch.Generator().manual_seed(seed)
        if t.is_floating_point():
            out[name] = torch.rand(t.shape, generator=g, dtype=t.dtype).contiguous()
        else:
            out[name] = t.clone()
    return out


def first_op_after(program: Program, node: int, op: str) -> int:
    """The first node of operator `op` after `node`."""
    for n in program.nodes[node + 1 :]:
        if n.op == op:
            return n.index
    raise GameError(f"the program has no {op} node after node {node}")


@dataclass
class HostileInputsWitness(RunWitness):
    """A KERNEL deviation at `deviation.step`, whose trace also claims that node `node` of that step read, as
    input `input_index`, a tensor that does not fit it: the real input flattened to one dimension (a
    log-softmax over dim 1, or an mm, of a 1-d tensor). It publishes that tensor for the oracle
    (`node_inputs`). `variant` 0 claims the node's computed outputs; another variant claims them with one bit
    flipped and hands on a post-state moved by `deviation.delta * variant`, so that two sybils of different
    variants are in different groups, agree on everything of the step before the node, on the node's
    inputs, and differ on its outputs."""

    node: int = 0
    input_index: int = 0
    variant: int = 0

    def _step(self) -> int:
        if self.deviation is None or self.deviation.kind is not DeviationKind.KERNEL:
            raise GameError("a hostile-inputs witness needs a KERNEL deviation")
        return self.deviation.step

    def _run_step(self, step: int, state: State) -> State:
        new_state = super()._run_step(step, state)
        if step != self._step() or not self.variant:
            return new_state
        assert self.deviation is not None
        name = canonical_names(list(new_state))[-1]
        return {**new_state, name: new_state[name] + self.deviation.delta * self.variant}

    def crafted(self) -> torch.Tensor:
        real = super().node_inputs(self._step(), self.node)[self.input_index]
        return real.reshape(-1).contiguous()

    def trace(self, step: int) -> Trace:
        if step == self._step() and step not in self._traces:
            records = list(super().trace(step).records)
            r = records[self.node]
            inputs = list(r.inputs)
            inputs[self.input_index] = commit_tensor(self.crafted())
            outputs = r.outputs
            if self.variant:
                first = outputs[0]
                outputs = (bytes([first[0] ^ self.variant]) + first[1:], *outputs[1:])
            records[self.node] = dataclasses.replace(r, inputs=tuple(inputs), outputs=tuple(outputs))
            self._traces[step] = Trace(tuple(records))
        return super().trace(step)

    def node_inputs(self, step: int, node: int) -> list[torch.Tensor]:
        inputs = super().node_inputs(step, node)
        if (step, node) == (self._step(), self.node):
            inputs[self.input_index] = self.crafted()
        return inputs
