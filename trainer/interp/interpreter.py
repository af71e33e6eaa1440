"""Run a captured program with RepOps kernels only, optionally tracing every node.

The interpreter never runs the client's Python: it walks the program's nodes and calls,
for each, the RepOps kernel registered under the node's ATen overload name. In trace mode
it records, per node, the record

    "NODE" || u256(index) || H(descriptor) || u256(nIn) || inputCommitment... || u256(nOut) || outputCommitment...

(docs/commitments.md section 4; commitments of contiguous tensors per section 3) and the
trace root, the list root over these records in node order. `run_node` recomputes one node
alone from its input tensors: what the recompute oracle does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from trainer.commit import MerkleTree, commit_tensor, encode_record, leaf_hash
from trainer.program._schema import ArgTemplate
from trainer.program.program import ConstRef, InputRef, Node, NodeRef, Program, Ref
from trainer.repops import KERNELS, OpSpec, RepOpsError, UnsupportedOpError

Tensor = torch.Tensor
NODE_TAG = b"NODE"


class InterpreterError(RepOpsError):
    """A program cannot be run: missing kernel, wrong input, or an output that contradicts its descriptor."""


@dataclass(frozen=True, slots=True)
class NodeRecord:
    index: int
    descriptor_hash: bytes
    inputs: tuple[bytes, ...]  # tensor commitments, in the node's input order
    outputs: tuple[bytes, ...]

    def encode(self) -> bytes:
        return encode_record(
            NODE_TAG,
            [self.index, self.descriptor_hash, len(self.inputs), *self.inputs, len(self.outputs), *self.outputs],
        )

    @property
    def leaf(self) -> bytes:
        return leaf_hash(self.encode())


@dataclass(frozen=True, slots=True)
class Trace:
    records: tuple[NodeRecord, ...]

    @property
    def tree(self) -> MerkleTree:
        return MerkleTree([r.leaf for r in self.records])

    @property
    def root(self) -> bytes:
        return self.tree.root


def commitment(t: Tensor) -> bytes:
    return commit_tensor(t if t.is_contiguous() else t.contiguous())


class Interpreter:
    """Runs `program` with the RepOps kernels in `kernels` (default: all of them)."""

    def __init__(
        self,
        program: Program,
        kernels: Mapping[str, OpSpec] | None = None,
        *,
        use: Literal["fast", "reference"] = "fast",
        device: torch.device | str | None = None,
    ) -> None:
        kernels = KERNELS if kernels is None else kernels
        missing = sorted({n.op for n in program.nodes} - set(kernels))
        if missing:
            raise UnsupportedOpError(f"no RepOps kernel for: {', '.join(missing)}")
        self.program = program
        self.use = use
        self.device = torch.device(device) if device is not None else None
        self._fns = [kernels[n.op].fast if use == "fast" else kernels[n.op].reference for n in program.nodes]
        self._templates = [ArgTemplate.of(n.op, n.args) for n in program.nodes]
        self._constants = {c.name: c.tensor() for c in program.constants}
        if self.device is not None:
            self._constants = {k: v.to(self.device) for k, v in self._constants.items()}
        self._loss_name = next(o.name for o in program.outputs if o.name not in set(program.state_names))

    # -- running ---------------------------------------------------------------------------

    def run(self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> tuple[dict[str, Tensor], Tensor]:
        """(new state, loss) of one training step."""
        new_state, loss, _ = self._execute(state, batch, trace=False)
        return new_state, loss

    def trace(
        self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]
    ) -> tuple[dict[str, Tensor], Tensor, Trace]:
        """(new state, loss, trace) of one training step."""
        new_state, loss, trace = self._execute(state, batch, trace=True)
        assert trace is not None
        return new_state, loss, trace

    def node_values(self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> list[tuple[Tensor, ...]]:
        """Every node's outputs of one step, in node order (for inspection and tests)."""
        keep: list[tuple[Tensor, ...]] = []
        self._execute(state, batch, trace=False, keep=keep)
        return keep

    def run_node(self, index: int, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
        """The outputs of node `index` alone, from its input tensors (in the node's input order)."""
        if not 0 <= index < len(self.program.nodes):
            raise InterpreterError(f"node {index} does not exist; the program has {len(self.program.nodes)} nodes")
        node = self.program.nodes[index]
        if len(inputs) != len(node.inputs):
            raise InterpreterError(f"node {index} ({node.op}) takes {len(node.inputs)} tensors, got {len(inputs)}")
        return self._call(node, inputs)

    def _call(self, node: Node, tensors: Sequence[Tensor]) -> tuple[Tensor, ...]:
        positional, kwargs = self._templates[node.index].bind(tensors)
        result = self._fns[node.index](*positional, **kwargs)
        outputs = tuple(result) if isinstance(result, list | tuple) else (result,)
        if len(outputs) != len(node.outputs):
            raise InterpreterError(
                f"node {node.index} ({node.op}) gave {len(outputs)} outputs; its descriptor says {len(node.outputs)}"
            )
        for k, (t, want) in enumerate(zip(outputs, node.outputs, strict=True)):
            if t.dtype != want.dtype or tuple(t.shape) != want.shape:
                raise InterpreterError(
                    f"node {node.index} ({node.op}) output {k} is {t.dtype}{list(t.shape)}; its descriptor says {want}"
                )
        return outputs

    def _execute(
        self,
        state: Mapping[str, Tensor],
        batch: Mapping[str, Tensor],
        *,
        trace: bool,
        keep: list[tuple[Tensor, ...]] | None = None,
    ) -> tuple[dict[str, Tensor], Tensor, Trace | None]:
        values: dict[str, Tensor] = {}
        for i in self.program.inputs:
            source = state if i.name in state else batch
            if i.name not in source:
                raise InterpreterError(f"input {i.name!r} is missing")
            t = source[i.name]
            if t.dtype != i.type.dtype or tuple(t.shape) != i.type.shape:
                raise InterpreterError(f"input {i.name!r} is {t.dtype}{list(t.shape)}; the program wants {i.type}")
            values[i.name] = t if self.device is None else t.to(self.device)
        results: list[tuple[Tensor, ...]] = []
        consts = self._constants

        def get(ref: Ref) -> Tensor:
            if isinstance(ref, NodeRef):
                return results[ref.index][ref.slot]
            if isinstance(ref, InputRef):
                return values[ref.name]
            return consts[ref.name]

        records: list[NodeRecord] = []
        if trace:
            known: dict[Ref, bytes] = {InputRef(n): commitment(t) for n, t in values.items()}
            known.update({ConstRef(n): commitment(t) for n, t in consts.items()})
        for node in self.program.nodes:
            outs = self._call(node, [get(r) for r in node.inputs])
            results.append(outs)
            if trace:
                out_c = tuple(commitment(t) for t in outs)
                for k, c in enumerate(out_c):
                    known[NodeRef(node.index, k)] = c
                records.append(
                    NodeRecord(
                        node.index,
                        self.program.descriptor_hash(node.index),
                        tuple(known[r] for r in node.inputs),
                        out_c,
                    )
                )
        if keep is not None:
            keep.extend(results)
        outs_by_name = {o.name: get(o.ref) for o in self.program.outputs}
        new_state = {n: outs_by_name[n].contiguous() for n in self.program.state_names}
        return new_state, outs_by_name[self._loss_name], Trace(tuple(records)) if trace else None
