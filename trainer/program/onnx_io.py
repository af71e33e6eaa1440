"""The program artifact: a `Program` as an ONNX model, and back.

Layout (docs/program.md, "The ONNX artifact"): value names carry their role
(`state:<name>`, `batch:<name>`, `const:<name>`, `node:<i>:<slot>`, `out:state:<name>`,
`out:loss:<name>`); program nodes are ONNX nodes named `node:<i>` in index order, each a
standard ONNX operator where its semantics match the ATen overload exactly and otherwise
an operator of the custom domain `ai.refereed.aten` (op_type = the ATen name without
`aten.`), or for the project's own operators of `ai.refereed.ops` (op_type = the name without
`refereed.`); each program output is an `Identity` node writing `out:...`. Loading checks the
file with `onnx.checker`, rebuilds the program (which validates it) and compares the
program hash recorded in the file's metadata, and the caller's expected hash if given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import onnx
import torch
from google.protobuf.message import DecodeError
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from trainer.program._schema import ArgKind, ArgSpec, recorded_specs
from trainer.program.errors import ProgramError, ProgramFormatError
from trainer.program.program import (
    DTYPE_NAMES,
    DTYPES_BY_NAME,
    FORMAT_VERSION,
    MEMORY_FORMAT_NAMES,
    MEMORY_FORMATS_BY_NAME,
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

DOMAIN: Final = "ai.refereed.aten"
DOMAIN_VERSION: Final = 1
# The project's own operators (namespace `refereed`, e.g. refereed.exact_dot.default): op_type = the
# name without `refereed.`. Imported only by a program that has such a node, so the artifact of any
# other program is unchanged.
OPS_DOMAIN: Final = "ai.refereed.ops"
OPS_DOMAIN_VERSION: Final = 1
_NAMESPACE_OF_DOMAIN: Final = {DOMAIN: "aten", OPS_DOMAIN: "refereed"}
ONNX_OPSET: Final = 21
IR_VERSION: Final = 10
GRAPH_NAME: Final = "training_step"
PRODUCER: Final = "refereed-training"
META_FORMAT: Final = "refereed.program.format"
META_HASH: Final = "refereed.program.hash"
META_GRAPH_ROOT: Final = "refereed.program.graph_root"

ONNX_DTYPES: Final[dict[torch.dtype, int]] = {
    torch.float32: TensorProto.FLOAT,
    torch.float64: TensorProto.DOUBLE,
    torch.float16: TensorProto.FLOAT16,
    torch.bfloat16: TensorProto.BFLOAT16,
    torch.uint8: TensorProto.UINT8,
    torch.int8: TensorProto.INT8,
    torch.int16: TensorProto.INT16,
    torch.int32: TensorProto.INT32,
    torch.int64: TensorProto.INT64,
    torch.bool: TensorProto.BOOL,
}
TORCH_DTYPES: Final = {v: k for k, v in ONNX_DTYPES.items()}


# -- value names -------------------------------------------------------------------------


def input_value(i: ProgramInput) -> str:
    return f"{i.kind.value}:{i.name}"


def const_value(name: str) -> str:
    return f"const:{name}"


def node_value(index: int, slot: int) -> str:
    return f"node:{index}:{slot}"


def output_value(o: ProgramOutput) -> str:
    return f"out:{o.kind.value}:{o.name}"


def shape_value(index: int) -> str:
    return f"node:{index}:shape"


# -- standard operators ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StandardOp:
    """An ATen overload that maps to one standard ONNX operator, and when it may."""

    aten: str
    onnx: str
    tensor_args: tuple[str, ...]  # schema names of the tensor arguments, in ONNX input order
    fixed: tuple[tuple[str, ArgValue], ...] = ()  # other arguments, with the only value allowed
    dtypes: frozenset[torch.dtype] | None = frozenset({torch.float32})  # of all inputs and outputs; None: any


_FP32_BINARY = ("self", "other")
STANDARD_OPS: Final = (
    StandardOp("aten.add.Tensor", "Add", _FP32_BINARY, (("alpha", 1),)),
    StandardOp("aten.sub.Tensor", "Sub", _FP32_BINARY, (("alpha", 1),)),
    StandardOp("aten.mul.Tensor", "Mul", _FP32_BINARY),
    StandardOp("aten.div.Tensor", "Div", _FP32_BINARY),
    StandardOp("aten.neg.default", "Neg", ("self",)),
    StandardOp("aten.sqrt.default", "Sqrt", ("self",)),
    StandardOp("aten.reciprocal.default", "Reciprocal", ("self",)),
    StandardOp("aten.bitwise_and.Tensor", "And", _FP32_BINARY, dtypes=frozenset({torch.bool})),
    StandardOp("aten.bitwise_not.default", "Not", ("self",), dtypes=frozenset({torch.bool})),
    StandardOp("aten.where.self", "Where", ("condition", "self", "other"), dtypes=None),
    # permute -> Transpose(perm) and view -> Reshape(allowzero=1) are handled below.
)
_STANDARD_BY_ATEN: Final = {s.aten: s for s in STANDARD_OPS}
_STANDARD_BY_ONNX: Final = {s.onnx: s for s in STANDARD_OPS}


def _standard_op(p: Program, node: Node) -> StandardOp | None:
    spec = _STANDARD_BY_ATEN.get(node.op)
    if spec is None:
        return None
    args = dict(node.args)
    if any(args[name] is not TENSOR for name in spec.tensor_args):
        return None  # a Python-number operand: custom domain, the number as an attribute
    for name, value in spec.fixed:
        if type(args[name]) is not type(value) or args[name] != value:
            return None
    types = [p.ref_type(r) for r in node.inputs] + list(node.outputs)
    if spec.aten == "aten.where.self":
        if p.ref_type(node.inputs[0]).dtype != torch.bool or len({t.dtype for t in types[1:]}) != 1:
            return None
    elif spec.dtypes is not None and any(t.dtype not in spec.dtypes for t in types):
        return None
    return spec


# -- attributes ----------------------------------------------------------------------------


def _scalar_tensor(v: bool | int | float) -> TensorProto:
    if type(v) is bool:
        return numpy_helper.from_array(np.array(v, dtype=np.bool_))
    if type(v) is int:
        if not -(2**63) <= v < 2**63:
            raise ProgramFormatError(f"integer {v} does not fit an ONNX int64 attribute")
        return numpy_helper.from_array(np.array(v, dtype=np.int64))
    return numpy_helper.from_array(np.array(v, dtype=np.float64))


def _attribute(name: str, attr_type: int, value: object) -> AttributeProto:
    a = AttributeProto(name=name)
    a.type = attr_type  # type: ignore[assignment]
    if attr_type == AttributeProto.INT:
        a.i = int(value)  # type: ignore[call-overload]
    elif attr_type == AttributeProto.INTS:
        a.ints.extend(int(x) for x in value)  # type: ignore[attr-defined]
    elif attr_type == AttributeProto.STRING:
        a.s = str(value).encode("utf-8")
    elif attr_type == AttributeProto.TENSOR:
        a.t.CopyFrom(value)  # type: ignore[arg-type]
    else:
        raise AssertionError(attr_type)
    return a


def _encode_value(spec: ArgSpec, v: ArgValue) -> AttributeProto:
    k = spec.kind
    if k in (ArgKind.TENSOR, ArgKind.SCALAR, ArgKind.FLOAT):
        assert isinstance(v, bool | int | float)
        return _attribute(spec.name, AttributeProto.TENSOR, _scalar_tensor(v))
    if k in (ArgKind.INT, ArgKind.BOOL):
        return _attribute(spec.name, AttributeProto.INT, v)
    if k in (ArgKind.INT_LIST, ArgKind.BOOL_LIST):
        return _attribute(spec.name, AttributeProto.INTS, v)
    if k is ArgKind.FLOAT_LIST:
        assert isinstance(v, tuple)
        return _attribute(spec.name, AttributeProto.TENSOR, numpy_helper.from_array(np.array(v, dtype=np.float64)))
    if k is ArgKind.STR:
        return _attribute(spec.name, AttributeProto.STRING, v)
    if k is ArgKind.DTYPE:
        assert isinstance(v, torch.dtype)
        return _attribute(spec.name, AttributeProto.STRING, DTYPE_NAMES[v])
    if k is ArgKind.MEMORY_FORMAT:
        assert isinstance(v, torch.memory_format)
        return _attribute(spec.name, AttributeProto.STRING, MEMORY_FORMAT_NAMES[v])
    raise AssertionError(k)


def _decode_value(op: str, spec: ArgSpec, a: AttributeProto) -> ArgValue:
    where = f"{op} attribute {spec.name!r}"
    k = spec.kind

    def want(t: int) -> None:
        if a.type != t:
            raise ProgramFormatError(
                f"{where} has ONNX type {AttributeProto.AttributeType.Name(a.type)}, "
                f"expected {AttributeProto.AttributeType.Name(t)}"
            )

    if k in (ArgKind.TENSOR, ArgKind.SCALAR, ArgKind.FLOAT):
        want(AttributeProto.TENSOR)
        arr = numpy_helper.to_array(a.t)
        if arr.ndim != 0:
            raise ProgramFormatError(f"{where} must be a 0-d tensor, has shape {list(arr.shape)}")
        if arr.dtype == np.bool_ and k is not ArgKind.FLOAT:
            return bool(arr)
        if arr.dtype == np.int64 and k is not ArgKind.FLOAT:
            return int(arr)
        if arr.dtype == np.float64:
            return float(arr)
        raise ProgramFormatError(
            f"{where} holds a {arr.dtype} tensor; expected double" + ("" if k is ArgKind.FLOAT else ", int64 or bool")
        )
    if k is ArgKind.INT:
        want(AttributeProto.INT)
        return int(a.i)
    if k is ArgKind.BOOL:
        want(AttributeProto.INT)
        if a.i not in (0, 1):
            raise ProgramFormatError(f"{where} is a bool, stored as 0 or 1, not {a.i}")
        return bool(a.i)
    if k is ArgKind.INT_LIST:
        want(AttributeProto.INTS)
        return tuple(int(x) for x in a.ints)
    if k is ArgKind.BOOL_LIST:
        want(AttributeProto.INTS)
        if any(x not in (0, 1) for x in a.ints):
            raise ProgramFormatError(f"{where} is a bool list, stored as 0s and 1s")
        return tuple(bool(x) for x in a.ints)
    if k is ArgKind.FLOAT_LIST:
        want(AttributeProto.TENSOR)
        arr = numpy_helper.to_array(a.t)
        if arr.ndim != 1 or arr.dtype != np.float64:
            raise ProgramFormatError(f"{where} must be a 1-d double tensor")
        return tuple(float(x) for x in arr)
    want(AttributeProto.STRING)
    s = a.s.decode("utf-8")
    if k is ArgKind.STR:
        return s
    if k is ArgKind.DTYPE:
        if s not in DTYPES_BY_NAME:
            raise ProgramFormatError(f"{where}: unknown dtype {s!r}")
        return DTYPES_BY_NAME[s]
    if k is ArgKind.MEMORY_FORMAT:
        if s not in MEMORY_FORMATS_BY_NAME:
            raise ProgramFormatError(f"{where}: unknown memory format {s!r}")
        return MEMORY_FORMATS_BY_NAME[s]
    raise AssertionError(k)


# -- writing -------------------------------------------------------------------------------


def _value_info(name: str, t: TensorType) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, ONNX_DTYPES[t.dtype], list(t.shape))


def _tensor_proto(name: str, t: TensorType, data: bytes) -> TensorProto:
    proto = TensorProto(name=name, data_type=ONNX_DTYPES[t.dtype], dims=list(t.shape))
    proto.raw_data = data
    return proto


def to_onnx(program: Program) -> onnx.ModelProto:
    """The ONNX model of `program`; `onnx.checker.check_model` accepts it."""
    names: dict[str, str] = {i.name: input_value(i) for i in program.inputs}

    def value(ref: Ref) -> str:
        if isinstance(ref, InputRef):
            return names[ref.name]
        if isinstance(ref, ConstRef):
            return const_value(ref.name)
        return node_value(ref.index, ref.slot)

    initializers = [_tensor_proto(const_value(c.name), c.type, c.data) for c in program.constants]
    onnx_nodes = []
    value_infos = []
    for node in program.nodes:
        outs = [node_value(node.index, s) for s in range(len(node.outputs))]
        value_infos += [_value_info(o, t) for o, t in zip(outs, node.outputs, strict=True)]
        ins = [value(r) for r in node.inputs]
        name = f"node:{node.index}"
        std = _standard_op(program, node)
        args = dict(node.args)
        if std is not None:
            onnx_nodes.append(helper.make_node(std.onnx, ins, outs, name=name))
        elif node.op == "aten.permute.default" and _is_permutation(args["dims"], len(node.outputs[0].shape)):
            onnx_nodes.append(helper.make_node("Transpose", ins, outs, name=name, perm=list(args["dims"])))  # type: ignore[arg-type]
        elif node.op == "aten.view.default":
            size = args["size"]
            assert isinstance(size, tuple)
            shape = numpy_helper.from_array(np.array(size, dtype=np.int64), shape_value(node.index))
            initializers.append(shape)
            onnx_nodes.append(
                helper.make_node("Reshape", [*ins, shape_value(node.index)], outs, name=name, allowzero=1)
            )
        else:
            onnx_nodes.append(_custom_node(node, ins, outs, name))
    for o in program.outputs:
        onnx_nodes.append(helper.make_node("Identity", [value(o.ref)], [output_value(o)], name=output_value(o)))

    graph = helper.make_graph(
        onnx_nodes,
        GRAPH_NAME,
        inputs=[_value_info(input_value(i), i.type) for i in program.inputs],
        outputs=[_value_info(output_value(o), o.type) for o in program.outputs],
        initializer=initializers,
        value_info=value_infos,
    )
    uses_own = any(n.domain == OPS_DOMAIN for n in onnx_nodes)
    own_ops = [helper.make_opsetid(OPS_DOMAIN, OPS_DOMAIN_VERSION)] if uses_own else []
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid(DOMAIN, DOMAIN_VERSION), *own_ops],
        ir_version=IR_VERSION,
        producer_name=PRODUCER,
        producer_version=str(FORMAT_VERSION),
    )
    helper.set_model_props(
        model,
        {
            META_FORMAT: str(FORMAT_VERSION),
            META_HASH: program.program_hash.hex(),
            META_GRAPH_ROOT: program.graph_root.hex(),
        },
    )
    return model


def _is_permutation(dims: ArgValue, ndim: int) -> bool:
    return isinstance(dims, tuple) and sorted(dims) == list(range(ndim))  # type: ignore[type-var]


def _custom_node(node: Node, ins: list[str], outs: list[str], name: str) -> onnx.NodeProto:
    inputs = iter(ins)
    onnx_inputs: list[str] = []
    attrs: list[AttributeProto] = []
    for spec, (_, v) in zip(recorded_specs(node.op), node.args, strict=True):
        if spec.kind is ArgKind.TENSOR:
            if v is TENSOR:
                onnx_inputs.append(next(inputs))
            elif v is None:
                onnx_inputs.append("")
            else:
                attrs.append(_encode_value(spec, v))
        elif spec.kind in (ArgKind.TENSOR_LIST, ArgKind.OPT_TENSOR_LIST):
            assert isinstance(v, tuple)
            attrs.append(_attribute(spec.name, AttributeProto.INT, len(v)))
            onnx_inputs += [next(inputs) if x is TENSOR else "" for x in v]
        elif v is not None:
            attrs.append(_encode_value(spec, v))
    namespace, _, op_type = node.op.partition(".")
    domain = OPS_DOMAIN if namespace == "refereed" else DOMAIN
    proto = helper.make_node(op_type, onnx_inputs, outs, name=name, domain=domain)
    proto.attribute.extend(attrs)
    return proto


def to_bytes(program: Program) -> bytes:
    return to_onnx(program).SerializeToString()


def save(program: Program, path: str | Path) -> None:
    Path(path).write_bytes(to_bytes(program))


# -- reading -------------------------------------------------------------------------------


def from_bytes(data: bytes, *, expected_hash: bytes | None = None) -> Program:
    """The program in an ONNX file's bytes (ProgramFormatError if corrupt or tampered)."""
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise ProgramFormatError(f"the file is not a readable ONNX model: {e}") from None
    return from_onnx(model, expected_hash=expected_hash)


def load(path: str | Path, *, expected_hash: bytes | None = None) -> Program:
    return from_bytes(Path(path).read_bytes(), expected_hash=expected_hash)


def from_onnx(model: onnx.ModelProto, *, expected_hash: bytes | None = None) -> Program:
    """The program an ONNX model holds.

    Checks the model with `onnx.checker`, rebuilds and validates the program, and compares
    its hash with the one recorded in the file and with `expected_hash` (for instance the
    hash posted on chain with the task).
    """
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, UnicodeDecodeError) as e:  # a damaged string field fails to decode
        raise ProgramFormatError(f"the ONNX model is invalid: {type(e).__name__}: {e}") from None
    try:
        program = _read(model)
    except ProgramFormatError:
        raise
    except (ProgramError, KeyError, ValueError, TypeError, IndexError, AssertionError) as e:
        raise ProgramFormatError(f"the ONNX model is not a well-formed program: {type(e).__name__}: {e}") from None
    meta = {p.key: p.value for p in model.metadata_props}
    recorded = meta.get(META_HASH)
    if recorded is not None and recorded != program.program_hash.hex():
        raise ProgramFormatError(
            f"the file records program hash {recorded} but its contents hash to {program.program_hash.hex()}: "
            "it was modified after it was written"
        )
    if expected_hash is not None and program.program_hash != expected_hash:
        raise ProgramFormatError(
            f"the program hashes to {program.program_hash.hex()}, not to the expected {expected_hash.hex()}"
        )
    return program


def _fail(msg: str) -> ProgramFormatError:
    return ProgramFormatError(msg)


def _tensor_type(vi: onnx.ValueInfoProto) -> TensorType:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or tt.elem_type not in TORCH_DTYPES:
        raise _fail(f"value {vi.name!r} is not a tensor of a supported element type")
    if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
        raise _fail(f"value {vi.name!r} must have a fully known shape")
    return TensorType(TORCH_DTYPES[tt.elem_type], tuple(int(d.dim_value) for d in tt.shape.dim))


def _read(model: onnx.ModelProto) -> Program:
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get(DOMAIN) != DOMAIN_VERSION:
        raise _fail(f"the model does not import the {DOMAIN} operator set, version {DOMAIN_VERSION}")
    meta = {p.key: p.value for p in model.metadata_props}
    if meta.get(META_FORMAT) != str(FORMAT_VERSION):
        raise _fail(
            f"the model is not a program of format {FORMAT_VERSION} (metadata {META_FORMAT}={meta.get(META_FORMAT)!r})"
        )
    g = model.graph

    inputs = []
    values: dict[str, Ref] = {}
    for vi in g.input:
        kind_name, sep, name = vi.name.partition(":")
        if not sep or kind_name not in ("state", "batch"):
            raise _fail(f"graph input {vi.name!r} is neither state:<name> nor batch:<name>")
        inputs.append(ProgramInput(name, InputKind(kind_name), _tensor_type(vi)))
        values[vi.name] = InputRef(name)

    constants = []
    shapes: dict[str, tuple[int, ...]] = {}
    for init in g.initializer:
        if init.name.startswith("const:"):
            if init.data_type not in TORCH_DTYPES:
                raise _fail(f"constant {init.name!r} has an unsupported element type")
            if init.data_location != TensorProto.DEFAULT or not init.HasField("raw_data"):
                raise _fail(f"constant {init.name!r} must hold its bytes inline as raw_data")
            t = TensorType(TORCH_DTYPES[init.data_type], tuple(int(d) for d in init.dims))
            name = init.name.removeprefix("const:")
            constants.append(Constant(name, t, bytes(init.raw_data)))
            values[init.name] = ConstRef(name)
        elif init.name.startswith("node:") and init.name.endswith(":shape"):
            arr = numpy_helper.to_array(init)
            if arr.dtype != np.int64 or arr.ndim != 1:
                raise _fail(f"reshape shape {init.name!r} must be a 1-d int64 tensor")
            shapes[init.name] = tuple(int(x) for x in arr)
        else:
            raise _fail(f"initializer {init.name!r} is neither a constant (const:<name>) nor a reshape shape")

    types = {vi.name: _tensor_type(vi) for vi in g.value_info}
    onnx_nodes = list(g.node)
    n_outputs = len(g.output)
    if len(onnx_nodes) < n_outputs:
        raise _fail("the graph has fewer nodes than outputs")
    program_nodes, identity_nodes = onnx_nodes[: len(onnx_nodes) - n_outputs], onnx_nodes[len(onnx_nodes) - n_outputs :]

    nodes: list[Node] = []
    used_shapes: set[str] = set()
    for index, proto in enumerate(program_nodes):
        if proto.name != f"node:{index}":
            raise _fail(f"ONNX node {index} is named {proto.name!r}, expected 'node:{index}'")
        outs = []
        for s, out in enumerate(proto.output):
            if out != node_value(index, s):
                raise _fail(f"node {index} output {s} is named {out!r}, expected {node_value(index, s)!r}")
            if out not in types:
                raise _fail(f"node {index} output {s} has no value_info with its type")
            outs.append(types[out])

        def ref(name: str, index: int = index) -> Ref:
            if name not in values:
                raise _fail(f"node {index} reads {name!r}, which is not an input, constant or earlier node output")
            return values[name]

        node = _read_node(proto, index, ref, shapes, used_shapes, tuple(outs), opsets)
        nodes.append(node)
        for s in range(len(outs)):
            values[node_value(index, s)] = NodeRef(index, s)
    if used_shapes != set(shapes):
        raise _fail(f"reshape shapes {sorted(set(shapes) - used_shapes)} are not used by their Reshape nodes")

    outputs = []
    for vi, proto in zip(g.output, identity_nodes, strict=True):
        kind_name, _, name = vi.name.removeprefix("out:").partition(":")
        if not vi.name.startswith("out:") or kind_name not in ("state", "loss"):
            raise _fail(f"graph output {vi.name!r} is neither out:state:<name> nor out:loss:<name>")
        if proto.op_type != "Identity" or proto.domain not in ("", "ai.onnx") or list(proto.output) != [vi.name]:
            raise _fail(f"graph output {vi.name!r} must be written by an Identity node at the end of the graph")
        if len(proto.input) != 1 or proto.input[0] not in values:
            raise _fail(f"graph output {vi.name!r} reads an unknown value")
        outputs.append(ProgramOutput(name, OutputKind(kind_name), _tensor_type(vi), values[proto.input[0]]))
    return Program(inputs=tuple(inputs), constants=tuple(constants), nodes=tuple(nodes), outputs=tuple(outputs))


def _read_node(
    proto: onnx.NodeProto,
    index: int,
    ref: Callable[[str], Ref],
    shapes: dict[str, tuple[int, ...]],
    used_shapes: set[str],
    outputs: tuple[TensorType, ...],
    opsets: dict[str, int],
) -> Node:
    attrs = {a.name: a for a in proto.attribute}
    if len(attrs) != len(proto.attribute):
        raise _fail(f"node {index} repeats an attribute")
    if proto.domain in ("", "ai.onnx"):
        return _read_standard(proto, index, ref, attrs, shapes, used_shapes, outputs)
    if proto.domain not in _NAMESPACE_OF_DOMAIN:
        raise _fail(
            f"node {index} is in the domain {proto.domain!r}; programs use only '', {DOMAIN!r} and {OPS_DOMAIN!r}"
        )
    if proto.domain == OPS_DOMAIN and opsets.get(OPS_DOMAIN) != OPS_DOMAIN_VERSION:
        raise _fail(f"node {index} is in {OPS_DOMAIN!r}; the model does not import it, version {OPS_DOMAIN_VERSION}")
    op = _NAMESPACE_OF_DOMAIN[proto.domain] + "." + proto.op_type
    specs = recorded_specs(op)
    onnx_inputs = iter(proto.input)
    args: list[tuple[str, ArgValue]] = []
    inputs: list[Ref] = []

    def take(spec: ArgSpec, optional: bool) -> ArgValue:
        name = next(onnx_inputs, None)
        if name is None:
            raise _fail(f"node {index} ({op}) has too few inputs for argument {spec.name!r}")
        if name == "":
            if not optional:
                raise _fail(f"node {index} ({op}) omits the required tensor argument {spec.name!r}")
            return None
        inputs.append(ref(name))
        return TENSOR

    for spec in specs:
        a = attrs.pop(spec.name, None)
        if spec.kind is ArgKind.TENSOR:
            args.append((spec.name, _decode_value(op, spec, a) if a is not None else take(spec, spec.optional)))
        elif spec.kind in (ArgKind.TENSOR_LIST, ArgKind.OPT_TENSOR_LIST):
            if a is None or a.type != AttributeProto.INT or a.i < 0:
                raise _fail(
                    f"node {index} ({op}) needs the length of its tensor list {spec.name!r} as an INT attribute"
                )
            optional = spec.kind is ArgKind.OPT_TENSOR_LIST
            args.append((spec.name, tuple(take(spec, optional) for _ in range(a.i))))
        elif a is None:
            args.append((spec.name, None))
        else:
            args.append((spec.name, _decode_value(op, spec, a)))
    if next(onnx_inputs, None) is not None:
        raise _fail(f"node {index} ({op}) has more inputs than its schema's tensor arguments")
    if attrs:
        raise _fail(f"node {index} ({op}) has attributes {sorted(attrs)} that its schema does not know")
    return Node(index=index, op=op, args=tuple(args), inputs=tuple(inputs), outputs=outputs)


def _read_standard(
    proto: onnx.NodeProto,
    index: int,
    ref: Callable[[str], Ref],
    attrs: dict[str, AttributeProto],
    shapes: dict[str, tuple[int, ...]],
    used_shapes: set[str],
    outputs: tuple[TensorType, ...],
) -> Node:
    def check(n_inputs: int, attr_names: Sequence[str]) -> None:
        if len(proto.input) != n_inputs or "" in proto.input:
            raise _fail(f"node {index} ({proto.op_type}) must have {n_inputs} inputs")
        if sorted(attrs) != sorted(attr_names):
            raise _fail(f"node {index} ({proto.op_type}) must have exactly the attributes {list(attr_names)}")

    if proto.op_type == "Transpose":
        check(1, ["perm"])
        perm = tuple(int(x) for x in attrs["perm"].ints)
        return Node(index, "aten.permute.default", (("self", TENSOR), ("dims", perm)), (ref(proto.input[0]),), outputs)
    if proto.op_type == "Reshape":
        check(2, ["allowzero"])
        if attrs["allowzero"].i != 1:
            raise _fail(f"node {index} (Reshape) must set allowzero=1 (a 0 in the shape means 0, as in torch)")
        shape_name = proto.input[1]
        if shape_name != shape_value(index) or shape_name not in shapes:
            raise _fail(f"node {index} (Reshape) must read its shape from the initializer {shape_value(index)!r}")
        used_shapes.add(shape_name)
        size = shapes[shape_name]
        return Node(index, "aten.view.default", (("self", TENSOR), ("size", size)), (ref(proto.input[0]),), outputs)
    spec = _STANDARD_BY_ONNX.get(proto.op_type)
    if spec is None:
        raise _fail(f"node {index} uses the standard ONNX operator {proto.op_type!r}, which programs do not use")
    check(len(spec.tensor_args), [])
    args: tuple[tuple[str, ArgValue], ...] = tuple((name, TENSOR) for name in spec.tensor_args) + spec.fixed
    return Node(index, spec.aten, args, tuple(ref(n) for n in proto.input), outputs)
