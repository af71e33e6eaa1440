"""Run a captured program with RepOps kernels only, optionally tracing every node.

The interpreter never runs the client's Python: it walks the program's nodes and calls,
for each, the RepOps kernel registered under the node's ATen overload name. In trace mode
it records, per node, the record

    "NODE" || u256(index) || H(descriptor) || u256(nIn) || inputCommitment... || u256(nOut) || outputCommitment...

(docs/commitments.md section 4; commitments of contiguous tensors per section 3) and the
trace root, the list root over these records in node order. `run_node` recomputes one node
alone from its input tensors: what the recompute oracle does.

`run` and `trace` do not walk the nodes: the program is compiled once, on first use, into
straight-line Python (`compile_program`): one line per node calling its kernel with its
recorded arguments already in place (non-tensor values bound as names, tensors as locals),
then the output check of the descriptor's dtype and shape. The same kernels are called with
the same arguments in the same order as the node walk (`node_values`, `run_node`), so the
bits are the same; tests/interp compares the two.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from trainer.commit import MerkleTree, commit_tensor, commit_tensors, encode_record, leaf_hash
from trainer.program._schema import ArgTemplate
from trainer.program.program import ConstRef, InputRef, Node, NodeRef, Program, Ref
from trainer.repops import KERNELS, OpSpec, RepOpsError, UnsupportedOpError
from trainer.repops.mathfn import canonicalize_nan, nan_canonicalization_deferred

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


COMMIT_BATCH_BYTES = 1 << 26  # trace mode's batches: the contiguous copies of one batch live at once


def _commit_batches(items: Sequence[tuple[int, Tensor]], hashes: list[bytes | None]) -> None:
    """hashes[slot] = commitment(tensor) for each (slot, tensor), by `commit_tensors` (the same
    bits: tests/commit/test_native.py), in batches of about COMMIT_BATCH_BYTES."""
    start, size = 0, 0
    for end, (_, t) in enumerate(items, 1):
        size += t.numel() * t.element_size()
        if size >= COMMIT_BATCH_BYTES or end == len(items):
            part = items[start:end]
            tensors = [t if t.is_contiguous() else t.contiguous() for _, t in part]
            for (slot, _), c in zip(part, commit_tensors(tensors), strict=True):
                hashes[slot] = c
            start, size = end, 0


def commit_worker_default() -> bool:
    """Whether trace mode's commit worker has a spare CPU: more CPUs available to the process
    than torch's intra-op threads (else it slows the parallel kernels down more than it saves;
    the rule of zkdv.torch.commit_worker_default)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus > torch.get_num_threads()


class Interpreter:
    """Runs `program` with the RepOps kernels in `kernels` (default: all of them)."""

    def __init__(
        self,
        program: Program,
        kernels: Mapping[str, OpSpec] | None = None,
        *,
        use: Literal["fast", "reference"] = "fast",
        device: torch.device | str | None = None,
        commit_worker: bool | None = None,
    ) -> None:
        kernels = KERNELS if kernels is None else kernels
        self.commit_worker = commit_worker  # trace mode's worker thread; None: where a CPU is spare
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
        # `run` skips the kernels' NaN canonicalization and canonicalizes the outputs once, where every op is
        # one whose RepOps kernel's result does not depend on NaN payloads (NAN_DEFERRABLE; checked for the table's
        # own kernels, so not for a table that swaps one) and the constants hold no other NaN than the canonical
        # one; `trace`, `node_values` and `run_node` canonicalize after every kernel
        self._deferrable = (
            use == "fast"
            and all(n.op in NAN_DEFERRABLE and kernels[n.op] is KERNELS[n.op] for n in program.nodes)
            and _canonical_nans(self._constants.values())
        )  # fmt: skip
        # compiled on first use of run / trace (a large program's source takes a while to compile)
        self._compiled: dict[bool, Callable[..., tuple[Tensor, ...]]] = {}

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

    def _inputs(self, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
        values: dict[str, Tensor] = {}
        for i in self.program.inputs:
            source = state if i.name in state else batch
            if i.name not in source:
                raise InterpreterError(f"input {i.name!r} is missing")
            t = source[i.name]
            if t.dtype != i.type.dtype or tuple(t.shape) != i.type.shape:
                raise InterpreterError(f"input {i.name!r} is {t.dtype}{list(t.shape)}; the program wants {i.type}")
            values[i.name] = t if self.device is None else t.to(self.device)
        return values

    def _execute(
        self,
        state: Mapping[str, Tensor],
        batch: Mapping[str, Tensor],
        *,
        trace: bool,
        keep: list[tuple[Tensor, ...]] | None = None,
    ) -> tuple[dict[str, Tensor], Tensor, Trace | None]:
        if keep is None:
            values = self._inputs(state, batch)
            step = self._compiled.get(trace)
            if step is None:
                step = self._compiled[trace] = compile_program(self, trace=trace)
            if not trace:
                if self._deferrable and _canonical_nans(values.values()):
                    with nan_canonicalization_deferred():
                        outs = step(*values.values(), None)
                    outs = tuple(_canonical(t) for t in outs)
                else:
                    outs = step(*values.values(), None)
                records = None
            else:
                outs, records = self._traced(step, values)
            outs_by_name = dict(zip((o.name for o in self.program.outputs), outs, strict=True))
            new_state = {n: outs_by_name[n].contiguous() for n in self.program.state_names}
            return new_state, outs_by_name[self._loss_name], Trace(records) if records is not None else None
        return self._walk(state, batch, trace=trace, keep=keep)

    def _traced(
        self, step: Callable[..., tuple[Tensor, ...]], values: dict[str, Tensor]
    ) -> tuple[tuple[Tensor, ...], tuple[NodeRecord, ...]]:
        """Runs the compiled trace step, committing each tensor it hands over, and assembles the
        records from the step's static layout. The tensors are committed in batches, each one
        native call (`commit_tensors`: the same commitments as `commitment`, tensor by tensor,
        without the fixed cost of a call per tensor, which made small tensors cost about 100 us
        each). Where a CPU is spare (`commit_worker_default`), one worker thread fed in node
        order through a queue commits whatever has arrived while the next kernels run (hashing
        releases the GIL); else the tensors are collected as they come and committed after the
        step, in batches of about COMMIT_BATCH_BYTES (the compiled step keeps every node's
        outputs referenced until it returns, so collecting them keeps nothing alive longer).
        Kernels never write into their inputs or earlier outputs, so a tensor committed later has
        the same bytes (tests/interp compares these records with the node walk's, hash for hash,
        both ways)."""
        layout, count = step.layout, step.commitments  # type: ignore[attr-defined]
        hashes: list[bytes | None] = [None] * count
        worker_wanted = self.commit_worker if self.commit_worker is not None else commit_worker_default()
        if not worker_wanted:
            items: list[tuple[int, Tensor]] = []
            outs = step(*values.values(), items.append)
            _commit_batches(items, hashes)
        else:
            failed: list[BaseException] = []
            work: queue.SimpleQueue[tuple[int, Tensor] | None] = queue.SimpleQueue()

            def worker() -> None:
                done = False
                while not done:
                    batch = [work.get()]
                    while not work.empty() and len(batch) < 256:  # what has arrived meanwhile, one call
                        batch.append(work.get())
                    if batch[-1] is None:
                        done = True
                        batch.pop()
                    if not failed and batch:
                        try:
                            _commit_batches(batch, hashes)  # type: ignore[arg-type]
                        except BaseException as e:  # re-raised on the calling thread below
                            failed.append(e)

            thread = threading.Thread(target=worker, name="trace-commitments", daemon=True)
            thread.start()
            try:
                outs = step(*values.values(), work.put)
            finally:
                work.put(None)
                thread.join()
            if failed:
                raise failed[0]
        got: list[bytes] = hashes  # type: ignore[assignment]  # every slot is filled: no failure
        records = tuple(
            NodeRecord(k, g, tuple(got[j] for j in ins), tuple(got[j] for j in outs_)) for k, g, ins, outs_ in layout
        )
        return outs, records

    def _walk(
        self,
        state: Mapping[str, Tensor],
        batch: Mapping[str, Tensor],
        *,
        trace: bool,
        keep: list[tuple[Tensor, ...]] | None = None,
    ) -> tuple[dict[str, Tensor], Tensor, Trace | None]:
        """The node walk: what the compiled code does, one node at a time (the reference)."""
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


# The ops whose kernels' results, NaNs canonicalized, are the same bits whatever sign and payload their inputs'
# NaNs carry (tests/interp/test_nan_deferral.py checks each one on every node of the bundled programs, with
# NaNs of other payloads put into its inputs): a run of such ops may leave the canonicalization of NaNs to its
# end (docs/repops/elementwise.md, "NaN"). Data movement copies a NaN's bits; a program whose inputs hold only
# canonical NaNs then has only canonical NaNs in the outputs that canonicalizing after every kernel gives.
NAN_DEFERRABLE: frozenset[str] = frozenset({
    "aten._log_softmax.default",
    "aten._softmax.default",
    "aten._to_copy.default",
    "aten.add.Tensor",
    "aten.addmm.default",
    "aten.bitwise_and.Tensor",
    "aten.bitwise_not.default",
    "aten.bmm.default",
    "aten.cat.default",
    "aten.clamp.default",
    "aten.clone.default",
    "aten.convolution.default",
    "aten.convolution_backward.default",
    "aten.div.Tensor",
    "aten.embedding.default",
    "aten.erf.default",
    "aten.exp.default",
    "aten.expand.default",
    "aten.full.default",
    "aten.full_like.default",
    "aten.gather.default",
    "aten.ge.Scalar",
    "aten.gelu.default",
    "aten.index_put.default",
    "aten.le.Scalar",
    "aten.lt.Scalar",
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool2d_with_indices_backward.default",
    "aten.mm.default",
    "aten.mul.Tensor",
    "aten.native_layer_norm.default",
    "aten.ne.Scalar",
    "aten.neg.default",
    "aten.permute.default",
    "aten.relu.default",
    "aten.scalar_tensor.default",
    "aten.scatter.value",
    "aten.split_with_sizes.default",
    "aten.sqrt.default",
    "aten.squeeze.dims",
    "aten.sub.Tensor",
    "aten.sum.dim_IntList",
    "aten.tanh.default",
    "aten.unsqueeze.default",
    "aten.view.default",
    "aten.where.self",
})


def _canonical_nans(tensors: Any) -> bool:
    """Whether every NaN in these tensors (floating ones; others hold none) has the canonical bits."""
    for t in tensors:
        if t.is_floating_point() and bool(torch.isnan(t).any()):
            bits = _int_view(t)
            if bits is None or not torch.equal(bits, _int_view(canonicalize_nan(t))):
                return False
    return True


def _int_view(t: Tensor) -> Tensor | None:
    kind = {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(t.element_size())
    return None if kind is None else t.contiguous().view(kind)


def _canonical(t: Tensor) -> Tensor:
    """t, or a copy of it with every NaN canonical (never written in place: an output may be an input)."""
    return canonicalize_nan(t) if t.is_floating_point() and bool(torch.isnan(t).any()) else t


def _check_one(interp: Interpreter, index: int, result: Any) -> Tensor:
    """The single output of node `index`, checked against its descriptor (the slow path of the
    compiled code's inline check: also taken by a kernel that returns a one-element list)."""
    node = interp.program.nodes[index]
    outputs = tuple(result) if isinstance(result, list | tuple) else (result,)
    return _checked(node, outputs)[0]


def _check_many(interp: Interpreter, index: int, result: Any) -> tuple[Tensor, ...]:
    node = interp.program.nodes[index]
    outputs = tuple(result) if isinstance(result, list | tuple) else (result,)
    return _checked(node, outputs)


def _checked(node: Node, outputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    if len(outputs) != len(node.outputs):
        raise InterpreterError(
            f"node {node.index} ({node.op}) gave {len(outputs)} outputs; its descriptor says {len(node.outputs)}"
        )
    for k, (t, want) in enumerate(zip(outputs, node.outputs, strict=True)):
        if not isinstance(t, Tensor) or t.dtype != want.dtype or tuple(t.shape) != want.shape:
            got = f"{t.dtype}{list(t.shape)}" if isinstance(t, Tensor) else type(t).__name__
            raise InterpreterError(f"node {node.index} ({node.op}) output {k} is {got}; its descriptor says {want}")
    return outputs


def compile_program(interp: Interpreter, *, trace: bool) -> Callable[..., tuple[Tensor, ...]]:
    """Straight-line Python for one step of `interp.program`.

    The returned function takes the program's inputs (in program order, already checked) and,
    in trace mode, a callable `put` that receives `(slot, tensor)` for every tensor to commit
    (None otherwise), and returns the program's outputs in program order. Line k calls node
    k's kernel (bound as `f{k}`) with its template's positional and keyword values (bound as
    names, the very objects `ArgTemplate.bind` would pass; a list holding tensors is built
    afresh, as bind does), then checks the output's type, dtype and shape inline (`_check_one`
    / `_check_many` on a mismatch or a multi-output node). In trace mode each node's outputs
    are handed to `put` after their check; the function's `layout` holds each node's record
    as (index, descriptor hash, input slots, output slots) and `commitments` the slot count.
    """
    program = interp.program
    env: dict[str, Any] = {
        "Tensor": Tensor,
        "_check_one": _check_one,
        "_check_many": _check_many,
        "_interp": interp,
    }
    names: dict[Ref, str] = {}
    params = []
    for k, i in enumerate(program.inputs):
        names[InputRef(i.name)] = f"i{k}"
        params.append(f"i{k}")
    lines = []
    for k, c in enumerate(program.constants):
        names[ConstRef(c.name)] = f"c{k}"
        env[f"c{k}"] = interp._constants[c.name]
    slot: dict[str, int] = {}  # committed tensor (its local's name) -> its place in the step's hashes
    layout: list[tuple[int, bytes, tuple[int, ...], tuple[int, ...]]] = []

    def commit(name: str) -> None:
        slot[name] = len(slot)
        lines.append(f"    put(({slot[name]}, {name}))")

    if trace:  # the commitments of the inputs and constants that some node reads
        used = {r for node in program.nodes for r in node.inputs}
        for ref, name in names.items():
            if ref in used:
                commit(name)

    def bound(value: Any, key: str) -> str:
        env[key] = value
        return key

    for node in program.nodes:
        k = node.index
        tmpl = interp._templates[k]
        env[f"f{k}"] = interp._fns[k]
        pos: list[Any] = list(tmpl.positional)
        kw: dict[str, Any] = dict(tmpl.kwargs)
        exprs_pos: list[str | None] = [None] * len(pos)
        exprs_kw: dict[str, str | None] = dict.fromkeys(kw)
        lists: dict[str | int, list[str]] = {}
        for (name, p, j), ref in zip(tmpl.slots, node.inputs, strict=True):
            key: str | int = p if name is None else name
            src = names[ref]
            if j is None:
                if name is None:
                    exprs_pos[p] = src
                else:
                    exprs_kw[name] = src
                continue
            if key not in lists:
                value = pos[p] if name is None else kw[name]
                lists[key] = [bound(v, f"a{k}_{key}_{m}") for m, v in enumerate(value)]
            lists[key][j] = src
        args = []
        for p, v in enumerate(pos):
            if p in lists:
                args.append("[" + ", ".join(lists[p]) + "]")
            else:
                args.append(exprs_pos[p] or bound(v, f"a{k}_{p}"))
        for name, v in kw.items():
            if name in lists:
                args.append(f"{name}=[" + ", ".join(lists[name]) + "]")
            else:
                args.append(f"{name}=" + (exprs_kw[name] or bound(v, f"a{k}_{name}")))
        call = f"f{k}({', '.join(args)})"
        outs = [f"v{k}_{m}" for m in range(len(node.outputs))]
        for m in range(len(node.outputs)):
            names[NodeRef(k, m)] = outs[m]
        if len(node.outputs) == 1:
            want = node.outputs[0]
            env[f"d{k}"] = want.dtype
            env[f"s{k}"] = tuple(want.shape)
            o = outs[0]
            lines.append(f"    {o} = {call}")
            lines.append(
                f"    if {o}.__class__ is not Tensor or {o}.dtype is not d{k} or {o}.shape != s{k}: "
                f"{o} = _check_one(_interp, {k}, {o})"
            )
        else:
            lines.append(f"    {', '.join(outs)}{',' if len(outs) == 1 else ''} = _check_many(_interp, {k}, {call})")
        if trace:
            for o in outs:
                commit(o)
            ins = tuple(slot[names[r]] for r in node.inputs)
            layout.append((k, program.descriptor_hash(k), ins, tuple(slot[o] for o in outs)))
    result = "".join(f"{names[o.ref]}, " for o in program.outputs)
    lines.append(f"    return ({result})")
    source = f"def step({', '.join([*params, 'put'])}):\n" + "\n".join(lines) + "\n"
    code = compile(source, f"<program step{' (trace)' if trace else ''}>", "exec")
    exec(code, env)  # the source is generated above from the program's own nodes
    step = env["step"]
    step.layout, step.commitments = tuple(layout), len(slot)
    return step
