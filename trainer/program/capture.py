"""Capture a training step into a `Program`: trace with make_fx, normalize, check, record.

`make_fx` over the functionalized step with torch's core ATen decompositions (and mkldnn
off, so recurrent layers decompose into ordinary ops) yields a graph of primitive,
out-of-place ATen calls. Capture then

- names the graph inputs: state entries (canonical order), batch entries (canonical
  order); the step's constants (non-persistent buffers) and any tensor the graph holds
  as an attribute become named program constants;
- refuses random operators and rewrites in-place calls to pure ones (`_functional`);
- removes value-preserving aliases (`aten.alias`, `aten.lift_fresh_copy`), whose users
  read the aliased tensor instead, and dead nodes;
- resolves `getitem` on multi-output nodes into references to an output slot;
- records every node's schema arguments (defaults filled in, device/layout/pin_memory
  dropped) and output types;
- refuses, in one error, every operator that has no RepOps kernel, each with the line of the
  user's code that first uses it (for a backward node: the forward operator it is the
  gradient of, and that operator's line).

Where a node comes from is recorded while tracing by `_SourceRecorder`, a dispatch mode above
make_fx's: for a forward operator the innermost frame of the step outside torch and `trainer`
(make_fx's own stack traces keep only frames named `forward`, so a loss function has none),
and for a backward one the autograd node being run (`torch._C._current_autograd_node`), whose
sequence number is that of the forward operator that made it.
"""

from __future__ import annotations

import linecache
import operator
import os
import re
import sys
from collections import Counter
from collections.abc import Collection, Mapping
from types import FrameType
from typing import Any

import torch
from torch import fx
from torch._decomp import core_aten_decompositions
from torch.fx import traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

import trainer
from trainer.commit.records import canonical_names
from trainer.program._functional import refuse_random, remove_mutations
from trainer.program._schema import TENSOR_KINDS, ArgKind, ArgSpec, arg_specs
from trainer.program.errors import CaptureError, ProgramError, UnsupportedOperatorsError
from trainer.program.ops import DROPPED_OPS, supported_ops
from trainer.program.program import (
    TENSOR,
    ArgValue,
    Constant,
    ConstRef,
    InputKind,
    InputRef,
    Node,
    NodeRef,
    OutputKind,
    Program,
    ProgramInput,
    ProgramOutput,
    Ref,
    TensorType,
)
from trainer.program.step import BATCH_INPUT, BATCH_TARGET, LOSS, TrainStep

Tensor = torch.Tensor
GRAPH_CONSTANT = "tensor_constant/"
# A multi-output op's result that it does not compute (None in the graph, e.g. a gradient that
# convolution_backward's output_mask turns off) is recorded as, and returned by kernels as, float32[0].
SKIPPED_OUTPUT = TensorType(torch.float32, (0,))


SOURCE = "refereed_source"  # node.meta["custom"] keys written by _SourceRecorder
BACKWARD_OF = "refereed_backward_of"
_LIBRARY_DIRS = tuple(os.path.dirname(m.__file__ or "") + os.sep for m in (torch, trainer))


class _SourceRecorder(TorchDispatchMode):
    """Annotates every node make_fx creates with the user's source line (see the module docstring)."""

    def __init__(self, boundary: Any) -> None:
        super().__init__()
        self.boundary = boundary  # the code object of the traced function: frames outside it are the caller's
        self.forward: dict[int, tuple[str, str]] = {}  # autograd sequence number -> (forward op, where)

    def _where(self) -> str:
        fallback = None
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code is not self.boundary:
            path = frame.f_code.co_filename
            if not path.startswith(_LIBRARY_DIRS[0]):
                line = linecache.getline(path, frame.f_lineno).strip()
                at = f"{path}:{frame.f_lineno} in {frame.f_code.co_name}" + (f": {line}" if line else "")
                if not path.startswith(_LIBRARY_DIRS[1]) and not path.startswith("<"):
                    return at
                fallback = fallback or at
            frame = frame.f_back
        return fallback or "an unknown place"

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        grad_fn = torch._C._current_autograd_node()
        if grad_fn is None:
            where = self._where()
            # an operator that records a gradient made its autograd node just before dispatching here
            self.forward.setdefault(torch.autograd._get_sequence_nr() - 1, (str(func), where))
            note = {SOURCE: where}
        else:
            op, where = self.forward.get(grad_fn._sequence_nr(), ("an unknown operator", "an unknown place"))
            note = {SOURCE: where, BACKWARD_OF: f"{op} ({grad_fn.name()})"}
        with fx_traceback.annotate(note):
            return func(*args, **(kwargs or {}))


def trace(step: TrainStep, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]) -> fx.GraphModule:
    """The raw make_fx graph of the step; placeholders are state, batch, constants (canonical orders)."""
    state_names, batch_names, const_names = _names(step, state, batch)
    n_state, n_batch = len(state_names), len(batch_names)

    def flat(tensors: list[Tensor]) -> list[Tensor]:
        s = dict(zip(state_names, tensors[:n_state], strict=True))
        b = dict(zip(batch_names, tensors[n_state : n_state + n_batch], strict=True))
        c = dict(zip(const_names, tensors[n_state + n_batch :], strict=True))
        with _SourceRecorder(flat.__code__):
            new_state, loss = step.fn_with_constants(s, b, c)
        return [new_state[n] for n in state_names] + [loss]

    example = [state[n].detach() for n in state_names] + [batch[n].detach() for n in batch_names]
    example += [step.constants[n] for n in const_names]
    try:
        table: Any = core_aten_decompositions()
        # Functionalized, so the in-place ops of torch's own RNN cells (add_, sigmoid_, ...) become
        # their out-of-place forms; with mkldnn off, nn.LSTM decomposes into matmuls and gates
        # instead of the opaque mkldnn_rnn_layer (the graphs of steps without either are unchanged).
        mkldnn = torch._C._get_mkldnn_enabled()
        torch._C._set_mkldnn_enabled(False)
        try:
            pure = torch.func.functionalize(flat, remove="mutations")
            with fx_traceback.preserve_node_meta():  # so that make_fx copies _SourceRecorder's notes onto the nodes
                return make_fx(pure, decomposition_table=table, record_stack_traces=True)(example)
        finally:
            torch._C._set_mkldnn_enabled(mkldnn)
    except ProgramError:
        raise
    except Exception as e:
        raise CaptureError(f"tracing the training step failed: {type(e).__name__}: {e}") from e


def capture(
    step: TrainStep,
    state: Mapping[str, Tensor],
    batch: Mapping[str, Tensor],
    *,
    supported: Collection[str] | None = None,
) -> Program:
    """The program of one training step, for states and batches shaped like the examples.

    `supported` is the set of operator names allowed (default: those with a RepOps kernel).
    Raises UnsupportedOperatorsError listing every operator without one, and CaptureError
    for anything else that cannot be captured.
    """
    gm = trace(step, state, batch)
    state_names, batch_names, const_names = _names(step, state, batch)
    inputs = tuple(
        [ProgramInput(n, InputKind.STATE, TensorType.of(state[n])) for n in state_names]
        + [ProgramInput(n, InputKind.BATCH, TensorType.of(batch[n])) for n in batch_names]
    )
    placeholder_refs: list[Ref] = [InputRef(n) for n in state_names + batch_names]
    placeholder_refs += [ConstRef(n) for n in const_names]
    constants = {n: Constant.of(n, step.constants[n]) for n in const_names}
    return _lower(
        gm, inputs, placeholder_refs, constants, frozenset(supported_ops() if supported is None else supported)
    )


def _names(
    step: TrainStep, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]
) -> tuple[list[str], list[str], list[str]]:
    state_names = canonical_names(list(state))
    want = step.state_names
    if state_names != want:
        missing = sorted(set(want) - set(state_names))
        extra = sorted(set(state_names) - set(want))
        raise CaptureError(f"state does not match the step: missing {missing}, unexpected {extra}")
    batch_names = canonical_names(list(batch))
    for key in (BATCH_INPUT, BATCH_TARGET):
        if key not in batch:
            raise CaptureError(f"the batch needs a {key!r} entry; it has {batch_names}")
    return state_names, batch_names, canonical_names(list(step.constants))


def _where(node: fx.Node) -> str:
    """The user's source line of a node; for a backward node, also the forward operator it is the gradient of."""
    note = node.meta.get("custom") or {}
    if BACKWARD_OF in note:
        return f"the backward of {note[BACKWARD_OF]} at {note[SOURCE]}"
    if SOURCE in note:
        return str(note[SOURCE])
    trace_text = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace_text)
    if not frames:
        return "an unknown place"
    path, line, fn, code = frames[-1]
    return f"{path}:{line} in {fn}: {code.strip()}"


def _op_name(node: fx.Node) -> str:
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    return getattr(node.target, "__name__", str(node.target))


def _lower(
    gm: fx.GraphModule,
    inputs: tuple[ProgramInput, ...],
    placeholder_refs: list[Ref],
    constants: dict[str, Constant],
    supported: frozenset[str],
) -> Program:
    graph = gm.graph
    refuse_random(graph, _where)
    remove_mutations(graph, _where)
    graph.eliminate_dead_code()

    counts: Counter[str] = Counter()
    where: dict[str, str] = {}
    for n in graph.nodes:
        if n.op in ("call_method", "call_module") or (
            n.op == "call_function" and n.target is not operator.getitem and _op_name(n) not in DROPPED_OPS
        ):
            name = _op_name(n)
            if name not in supported:
                counts[name] += 1
                where.setdefault(name, _where(n))
    if counts:
        raise UnsupportedOperatorsError(counts, where)

    env: dict[fx.Node, Ref | tuple[Ref, ...]] = {}
    nodes: list[Node] = []
    placeholders = iter(placeholder_refs)
    graph_constants = 0
    result_refs: list[Ref] = []
    for n in graph.nodes:
        if n.op == "placeholder":
            env[n] = next(placeholders)
        elif n.op == "get_attr":
            name = f"{GRAPH_CONSTANT}{graph_constants}"
            graph_constants += 1
            value = operator.attrgetter(n.target)(gm)
            if not isinstance(value, Tensor):
                raise CaptureError(f"graph attribute {n.target!r} is a {type(value).__name__}, not a tensor")
            constants[name] = Constant.of(name, value)
            env[n] = ConstRef(name)
        elif n.op == "call_function" and n.target is operator.getitem:
            source, slot = n.args
            refs = env[source]
            if not isinstance(refs, tuple):
                raise CaptureError(f"getitem of the single-output node {source.name} at {_where(n)}")
            env[n] = refs[slot]
        elif n.op == "call_function" and _op_name(n) in DROPPED_OPS:
            source = n.args[0]
            ref = env[source]
            if isinstance(ref, tuple):
                raise CaptureError(f"{_op_name(n)} of a multi-output node at {_where(n)}")
            env[n] = ref
        elif n.op == "call_function":
            node = _record(n, len(nodes), env)
            nodes.append(node)
            val = n.meta["val"]
            env[n] = (
                tuple(NodeRef(node.index, s) for s in range(len(node.outputs)))
                if isinstance(val, list | tuple)
                else NodeRef(node.index, 0)
            )
        elif n.op == "output":
            (results,) = n.args
            for i, r in enumerate(results):
                result = env.get(r) if isinstance(r, fx.Node) else None
                if result is None or isinstance(result, tuple):
                    raise CaptureError(f"result {i} of the step is not a tensor computed by the graph: {r!r}")
                result_refs.append(result)
        else:
            raise CaptureError(f"graph node {n.name} of kind {n.op} cannot be captured")

    def type_of(ref: Ref) -> TensorType:
        if isinstance(ref, InputRef):
            return next(i.type for i in inputs if i.name == ref.name)
        if isinstance(ref, ConstRef):
            return constants[ref.name].type
        return nodes[ref.index].outputs[ref.slot]

    state_inputs = [i for i in inputs if i.kind is InputKind.STATE]
    if len(result_refs) != len(state_inputs) + 1:
        raise CaptureError(f"the step returned {len(result_refs)} tensors, expected {len(state_inputs) + 1}")
    outputs = [
        ProgramOutput(i.name, OutputKind.STATE, type_of(ref), ref)
        for i, ref in zip(state_inputs, result_refs, strict=False)
    ]
    outputs.append(ProgramOutput(LOSS, OutputKind.LOSS, type_of(result_refs[-1]), result_refs[-1]))
    consts = tuple(constants[name] for name in canonical_names(list(constants))) if constants else ()
    return Program(inputs=inputs, constants=consts, nodes=tuple(nodes), outputs=tuple(outputs))


def _record(n: fx.Node, index: int, env: Mapping[fx.Node, Ref | tuple[Ref, ...]]) -> Node:
    op = _op_name(n)
    at = _where(n)
    if not isinstance(n.target, torch._ops.OpOverload):
        raise CaptureError(f"{op} is not an ATen overload (at {at})")
    try:
        specs = arg_specs(n.target)
    except ProgramError as e:
        raise CaptureError(f"{e} (at {at})") from None
    positional = [s for s in specs if not s.kwarg_only]
    if len(n.args) > len(positional):
        raise CaptureError(f"{op} called with {len(n.args)} positional arguments at {at}")
    kwargs = dict(n.kwargs)
    args: list[tuple[str, ArgValue]] = []
    inputs: list[Ref] = []
    for i, spec in enumerate(specs):
        if not spec.kwarg_only and i < len(n.args):
            value = n.args[i]
        elif spec.name in kwargs:
            value = kwargs.pop(spec.name)
        elif spec.has_default:
            value = spec.default
        else:
            raise CaptureError(f"{op} is missing its argument {spec.name!r} at {at}")
        if spec.kind is ArgKind.DROPPED:
            _check_dropped(op, spec, value, at)
            continue
        args.append((spec.name, _convert(op, spec, value, env, inputs, at)))
    if kwargs:
        raise CaptureError(f"{op} got unknown keyword arguments {sorted(kwargs)} at {at}")

    val = n.meta.get("val")
    vals = list(val) if isinstance(val, list | tuple) else [val]
    outputs = []
    for k, v in enumerate(vals):
        if v is None and len(vals) > 1:  # an optional result the op skips (output_mask): an empty tensor
            outputs.append(SKIPPED_OUTPUT)
            continue
        if not isinstance(v, Tensor):
            raise CaptureError(f"{op} output {k} is {type(v).__name__}, not a tensor, at {at}")
        try:
            outputs.append(TensorType.of(v))
        except ProgramError as e:
            raise CaptureError(f"{op} output {k}: {e} (at {at})") from None
    try:
        return Node(index=index, op=op, args=tuple(args), inputs=tuple(inputs), outputs=tuple(outputs))
    except ProgramError as e:
        raise CaptureError(f"{e} (at {at})") from None


def _check_dropped(op: str, spec: ArgSpec, value: Any, at: str) -> None:
    if spec.name == "layout" and value not in (None, torch.strided):
        raise CaptureError(f"{op} asks for layout {value} at {at}; programs hold dense (strided) tensors only")
    if spec.name == "pin_memory" and value not in (None, False):
        raise CaptureError(f"{op} asks for pinned memory at {at}; programs do not place tensors")


def _convert(
    op: str, spec: ArgSpec, value: Any, env: Mapping[fx.Node, Ref | tuple[Ref, ...]], inputs: list[Ref], at: str
) -> ArgValue:
    def bad(why: str) -> CaptureError:
        return CaptureError(f"{op} argument {spec.name!r} = {value!r}: {why} (at {at})")

    def tensor(v: Any, allow_none: bool, allow_number: bool) -> ArgValue:
        if isinstance(v, fx.Node):
            ref = env[v]
            if isinstance(ref, tuple):
                raise bad("a multi-output node used as one tensor")
            inputs.append(ref)
            return TENSOR
        if v is None and allow_none:
            return None
        if allow_number and type(v) in (bool, int, float):
            return v  # a wrapped number: a Python scalar where the schema has a tensor
        raise bad("expected a tensor")

    if value is None:
        if not spec.optional and spec.kind not in TENSOR_KINDS:
            raise bad("None for a required argument")
        return None
    kind = spec.kind
    if kind is ArgKind.TENSOR:
        return tensor(value, spec.optional, True)
    if kind in (ArgKind.TENSOR_LIST, ArgKind.OPT_TENSOR_LIST):
        if not isinstance(value, list | tuple):
            raise bad("expected a list of tensors")
        return tuple(tensor(v, kind is ArgKind.OPT_TENSOR_LIST, False) for v in value)
    if isinstance(value, fx.Node) or (isinstance(value, list | tuple) and any(isinstance(v, fx.Node) for v in value)):
        raise bad("a value computed by the graph where the schema wants a constant (data-dependent shapes?)")
    if kind is ArgKind.INT and type(value) is int:
        return value
    if kind is ArgKind.BOOL and type(value) is bool:
        return value
    if kind is ArgKind.FLOAT and type(value) in (int, float):
        return float(value)
    if kind is ArgKind.SCALAR and type(value) in (bool, int, float):
        return value
    if kind is ArgKind.STR and type(value) is str:
        return value
    if kind is ArgKind.INT_LIST and isinstance(value, list | tuple) and all(type(v) is int for v in value):
        return tuple(value)
    if kind is ArgKind.BOOL_LIST and isinstance(value, list | tuple) and all(type(v) is bool for v in value):
        return tuple(value)
    if kind is ArgKind.FLOAT_LIST and isinstance(value, list | tuple) and all(type(v) in (int, float) for v in value):
        return tuple(float(v) for v in value)
    if kind is ArgKind.DTYPE and isinstance(value, torch.dtype):
        return value
    if kind is ArgKind.MEMORY_FORMAT and isinstance(value, torch.memory_format):
        return value
    raise bad(f"not a valid {kind.value}")
