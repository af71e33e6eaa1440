"""The program: one captured training step as a list of primitive ATen nodes, and its hashes.

A `Program` is plain data: typed inputs (state, then batch), constants, nodes in execution
order and outputs (new state, then the loss). Each node names an ATen overload, records
that overload's non-tensor arguments and says where each tensor argument comes from. The
byte formats of node descriptors, the graph root and the program hash are specified in
docs/program.md; this module is their reference implementation.
"""

from __future__ import annotations

import enum
import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final, TypeAlias

import cbor2
import torch

from trainer.commit import (
    MerkleTree,
    Opening,
    ProofError,
    encode_record,
    name_hash,
    record_leaf,
    state_root_from_commitments,
)
from trainer.commit import verify as verify_opening
from trainer.commit.records import canonical_names
from trainer.commit.tensor import DTYPE_CODES, commitment_of, data_root, element_size, header, tensor_bytes
from trainer.program._schema import ArgKind, Slot, recorded_specs
from trainer.program.errors import ProgramFormatError

FORMAT_VERSION: Final = 1

DESCRIPTOR_TAG: Final = b"DESC"
GRAPH_NODE_TAG: Final = b"NDSC"
PROGRAM_INPUT_TAG: Final = b"PINP"
PROGRAM_OUTPUT_TAG: Final = b"POUT"
PROGRAM_TAG: Final = b"PROG"

TENSOR: Final = Slot.TENSOR

DTYPE_NAMES: Final[dict[torch.dtype, str]] = {dt: str(dt).removeprefix("torch.") for dt in DTYPE_CODES}
DTYPES_BY_NAME: Final[dict[str, torch.dtype]] = {n: dt for dt, n in DTYPE_NAMES.items()}
MEMORY_FORMAT_NAMES: Final[dict[torch.memory_format, str]] = {
    torch.contiguous_format: "contiguous_format",
    torch.preserve_format: "preserve_format",
    torch.channels_last: "channels_last",
    torch.channels_last_3d: "channels_last_3d",
}
MEMORY_FORMATS_BY_NAME: Final[dict[str, torch.memory_format]] = {n: f for f, n in MEMORY_FORMAT_NAMES.items()}

# A recorded argument value (docs/program.md, "Arguments").
ArgValue: TypeAlias = (
    "bool | int | float | str | torch.dtype | torch.memory_format | Slot | tuple[ArgValue, ...] | None"
)
Args: TypeAlias = tuple[tuple[str, ArgValue], ...]


class InputKind(enum.Enum):
    STATE = "state"
    BATCH = "batch"


class OutputKind(enum.Enum):
    STATE = "state"
    LOSS = "loss"


INPUT_KIND_CODES: Final = {InputKind.STATE: 1, InputKind.BATCH: 2}
OUTPUT_KIND_CODES: Final = {OutputKind.STATE: 1, OutputKind.LOSS: 2}
REF_STATE, REF_BATCH, REF_CONST, REF_NODE = 1, 2, 3, 4


@dataclass(frozen=True, slots=True)
class TensorType:
    dtype: torch.dtype
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_CODES:
            raise ProgramFormatError(
                f"dtype {self.dtype} cannot appear in a program; use one of {list(DTYPES_BY_NAME)}"
            )
        if not isinstance(self.shape, tuple) or any(type(d) is not int or d < 0 for d in self.shape):
            raise ProgramFormatError(f"shape {self.shape!r} must be a tuple of non-negative ints")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * element_size(DTYPE_CODES[self.dtype])

    def header(self) -> bytes:
        """`u8(dtype code) || u8(ndim) || u64(dim)...`, as in a tensor commitment."""
        return header(DTYPE_CODES[self.dtype], self.shape)

    def type_hash(self) -> bytes:
        return hashlib.sha256(self.header()).digest()

    def __str__(self) -> str:
        return f"{DTYPE_NAMES[self.dtype]}{list(self.shape)}"

    @staticmethod
    def of(t: torch.Tensor) -> TensorType:
        return TensorType(t.dtype, tuple(int(d) for d in t.shape))


@dataclass(frozen=True, slots=True)
class InputRef:
    """A graph input (state or batch tensor), by name."""

    name: str


@dataclass(frozen=True, slots=True)
class ConstRef:
    """A program constant, by name."""

    name: str


@dataclass(frozen=True, slots=True)
class NodeRef:
    """Output `slot` of the node at `index`."""

    index: int
    slot: int = 0


Ref: TypeAlias = InputRef | ConstRef | NodeRef


@dataclass(frozen=True, slots=True)
class Node:
    """One ATen call. `args` lists every recorded schema argument, in schema order, with the
    tensor arguments as `TENSOR` markers; `inputs` gives, in the same order, where each
    marked tensor comes from; `outputs` the type of each result."""

    index: int
    op: str
    args: Args
    inputs: tuple[Ref, ...]
    outputs: tuple[TensorType, ...]

    def __post_init__(self) -> None:
        for name, value in self.args:
            _check_value(self, name, value)
        markers = sum(_count_markers(v) for _, v in self.args)
        if markers != len(self.inputs):
            raise ProgramFormatError(
                f"node {self.index} ({self.op}) has {markers} tensor arguments but {len(self.inputs)} inputs"
            )
        if not self.outputs:
            raise ProgramFormatError(f"node {self.index} ({self.op}) has no outputs")

    def arg(self, name: str) -> ArgValue:
        for n, v in self.args:
            if n == name:
                return v
        raise KeyError(f"node {self.index} ({self.op}) has no argument {name!r}")


@dataclass(frozen=True, slots=True)
class ProgramInput:
    name: str
    kind: InputKind
    type: TensorType


@dataclass(frozen=True, slots=True)
class ProgramOutput:
    name: str
    kind: OutputKind
    type: TensorType
    ref: Ref


@dataclass(frozen=True, slots=True)
class Constant:
    """A tensor fixed by the program (a mask, position indices), kept as its committed bytes."""

    name: str
    type: TensorType
    data: bytes  # row-major, little-endian, as in a tensor commitment

    def __post_init__(self) -> None:
        if len(self.data) != self.type.nbytes:
            raise ProgramFormatError(
                f"constant {self.name!r} of type {self.type} needs {self.type.nbytes} bytes, has {len(self.data)}"
            )

    @staticmethod
    def of(name: str, t: torch.Tensor) -> Constant:
        t = t.detach().to("cpu").contiguous()
        return Constant(name, TensorType.of(t), bytes(tensor_bytes(t)))

    def tensor(self) -> torch.Tensor:
        if self.type.numel == 0:
            return torch.empty(self.type.shape, dtype=self.type.dtype)
        return torch.frombuffer(bytearray(self.data), dtype=self.type.dtype).reshape(self.type.shape)

    def commitment(self) -> bytes:
        """The tensor commitment (docs/commitments.md section 3) of the constant."""
        return commitment_of(DTYPE_CODES[self.type.dtype], self.type.shape, data_root(self.data))


@dataclass(frozen=True)
class Program:
    """A captured training step. Construction validates it (ProgramFormatError if malformed)."""

    inputs: tuple[ProgramInput, ...]
    constants: tuple[Constant, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[ProgramOutput, ...]

    def __post_init__(self) -> None:
        _validate(self)

    # -- lookups ---------------------------------------------------------------------------

    @cached_property
    def _inputs(self) -> dict[str, ProgramInput]:
        return {i.name: i for i in self.inputs}

    @cached_property
    def _constants(self) -> dict[str, Constant]:
        return {c.name: c for c in self.constants}

    def input(self, name: str) -> ProgramInput:
        return self._inputs[name]

    def constant(self, name: str) -> Constant:
        return self._constants[name]

    @property
    def state_names(self) -> list[str]:
        return [i.name for i in self.inputs if i.kind is InputKind.STATE]

    @property
    def batch_names(self) -> list[str]:
        return [i.name for i in self.inputs if i.kind is InputKind.BATCH]

    def ref_type(self, ref: Ref) -> TensorType:
        if isinstance(ref, InputRef):
            return self._inputs[ref.name].type
        if isinstance(ref, ConstRef):
            return self._constants[ref.name].type
        return self.nodes[ref.index].outputs[ref.slot]

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return dict(sorted(counts.items()))

    # -- hashes (docs/program.md) ------------------------------------------------------------

    def ref_words(self, ref: Ref) -> list[bytes | int]:
        """The three words of an input reference: kind, then name hash and 0, or index and slot."""
        if isinstance(ref, InputRef):
            kind = REF_STATE if self._inputs[ref.name].kind is InputKind.STATE else REF_BATCH
            return [kind, name_hash(ref.name), 0]
        if isinstance(ref, ConstRef):
            return [REF_CONST, name_hash(ref.name), 0]
        return [REF_NODE, ref.index, ref.slot]

    def descriptor(self, index: int) -> bytes:
        """The descriptor bytes of node `index`."""
        node = self.nodes[index]
        words: list[bytes | int] = [
            name_hash(node.op),
            hashlib.sha256(encode_args(node.args)).digest(),
            len(node.inputs),
            len(node.outputs),
        ]
        for ref in node.inputs:
            words.extend(self.ref_words(ref))
        words.extend(t.type_hash() for t in node.outputs)
        return encode_record(DESCRIPTOR_TAG, words)

    @cached_property
    def descriptor_hashes(self) -> tuple[bytes, ...]:
        """`H(descriptor)` of every node, computed once (traces read them every step)."""
        return tuple(hashlib.sha256(self.descriptor(i)).digest() for i in range(len(self.nodes)))

    def descriptor_hash(self, index: int) -> bytes:
        return self.descriptor_hashes[index]

    @cached_property
    def graph_tree(self) -> MerkleTree:
        return MerkleTree([graph_leaf(i, h) for i, h in enumerate(self.descriptor_hashes)])

    @property
    def graph_root(self) -> bytes:
        return self.graph_tree.root

    def open_node(self, index: int) -> tuple[bytes, Opening]:
        """Node `index`'s descriptor and its opening against the graph root."""
        return self.descriptor(index), self.graph_tree.open(index)

    @cached_property
    def inputs_root(self) -> bytes:
        return MerkleTree(
            [
                record_leaf(PROGRAM_INPUT_TAG, [INPUT_KIND_CODES[i.kind], name_hash(i.name), i.type.type_hash()])
                for i in self.inputs
            ]
        ).root

    @cached_property
    def outputs_tree(self) -> MerkleTree:
        """The POUT leaves of the outputs, in program order (a dispute opens state outputs in it)."""
        return MerkleTree(
            [
                record_leaf(
                    PROGRAM_OUTPUT_TAG,
                    [OUTPUT_KIND_CODES[o.kind], name_hash(o.name), o.type.type_hash(), *self.ref_words(o.ref)],
                )
                for o in self.outputs
            ]
        )

    @property
    def outputs_root(self) -> bytes:
        return self.outputs_tree.root

    @cached_property
    def constants_root(self) -> bytes:
        return state_root_from_commitments({c.name: c.commitment() for c in self.constants})

    @cached_property
    def program_hash(self) -> bytes:
        return hashlib.sha256(
            encode_record(
                PROGRAM_TAG,
                [FORMAT_VERSION, self.graph_root, self.inputs_root, self.outputs_root, self.constants_root],
            )
        ).digest()

    def summary(self) -> str:
        lines = [
            f"program {self.program_hash.hex()}",
            f"  graph root {self.graph_root.hex()}",
            f"  {len(self.state_names)} state inputs, {len(self.batch_names)} batch inputs, "
            f"{len(self.constants)} constants, {len(self.nodes)} nodes, {len(self.outputs)} outputs",
        ]
        lines += [f"  {n:5d}  {op}" for op, n in self.op_counts().items()]
        return "\n".join(lines)


def graph_leaf(index: int, descriptor_hash: bytes) -> bytes:
    """Leaf of node `index` in the graph tree: `leaf("NDSC" || u256(index) || H(descriptor))`."""
    return record_leaf(GRAPH_NODE_TAG, [index, descriptor_hash])


def verify_node(graph_root: bytes, node_count: int, index: int, descriptor: bytes, opening: Opening) -> None:
    """Raise ProofError unless `descriptor` is node `index` of the graph with this root."""
    if opening.index != index or opening.count != node_count:
        raise ProofError(f"opening is for leaf {opening.index} of {opening.count}, not node {index} of {node_count}")
    verify_opening(
        graph_root, node_count, index, graph_leaf(index, hashlib.sha256(descriptor).digest()), opening.siblings
    )


# -- arguments ---------------------------------------------------------------------------


def _cbor_value(v: ArgValue) -> object:
    if v is TENSOR:
        return cbor2.undefined
    if isinstance(v, torch.dtype):
        return DTYPE_NAMES[v]
    if isinstance(v, torch.memory_format):
        return MEMORY_FORMAT_NAMES[v]
    if isinstance(v, tuple):
        return [_cbor_value(x) for x in v]
    return v


def encode_args(args: Args) -> bytes:
    """Canonical CBOR of `[[name, value], ...]` (docs/program.md, "Arguments")."""
    return cbor2.dumps([[name, _cbor_value(v)] for name, v in args], canonical=True)


def _count_markers(v: ArgValue) -> int:
    if v is TENSOR:
        return 1
    if isinstance(v, tuple):
        return sum(_count_markers(x) for x in v)
    return 0


def _check_value(node: Node, name: str, v: ArgValue) -> None:
    where = f"node {node.index} ({node.op}) argument {name!r}"
    if v is None or v is TENSOR or isinstance(v, bool | str):
        return
    if isinstance(v, int):
        if not -(2**64) <= v < 2**64:
            raise ProgramFormatError(f"{where}: integer {v} does not fit in 64 bits")
        return
    if isinstance(v, float):
        if math.isnan(v):
            raise ProgramFormatError(f"{where}: NaN is not allowed as an argument")
        return
    if isinstance(v, torch.dtype):
        if v not in DTYPE_NAMES:
            raise ProgramFormatError(f"{where}: dtype {v} cannot appear in a program")
        return
    if isinstance(v, torch.memory_format):
        if v not in MEMORY_FORMAT_NAMES:
            raise ProgramFormatError(f"{where}: memory format {v} is not supported")
        return
    if isinstance(v, tuple):
        for x in v:
            _check_value(node, name, x)
        return
    raise ProgramFormatError(f"{where}: value {v!r} of type {type(v).__name__} cannot appear in a program")


# -- validation ----------------------------------------------------------------------------


def _check_canonical(what: str, names: Sequence[str]) -> None:
    try:
        want = canonical_names(list(names))
    except Exception as e:  # StateError: empty or duplicate
        raise ProgramFormatError(f"{what}: {e}") from None
    if list(names) != want:
        raise ProgramFormatError(f"{what} must be in canonical order (by UTF-8 bytes): {want}, got {list(names)}")


def _validate(p: Program) -> None:
    kinds = [i.kind for i in p.inputs]
    n_state = kinds.count(InputKind.STATE)
    if kinds != [InputKind.STATE] * n_state + [InputKind.BATCH] * (len(kinds) - n_state):
        raise ProgramFormatError("program inputs must list every state input before every batch input")
    _check_canonical("state inputs", [i.name for i in p.inputs[:n_state]])
    _check_canonical("batch inputs", [i.name for i in p.inputs[n_state:]])
    if len({i.name for i in p.inputs}) != len(p.inputs):
        raise ProgramFormatError("a name is used by a state input and a batch input")
    _check_canonical("constants", [c.name for c in p.constants])

    inputs = {i.name: i for i in p.inputs}
    constants = {c.name for c in p.constants}

    def check_ref(ref: Ref, before: int, where: str) -> TensorType:
        if isinstance(ref, InputRef):
            if ref.name not in inputs:
                raise ProgramFormatError(f"{where} reads input {ref.name!r}, which the program does not have")
            return inputs[ref.name].type
        if isinstance(ref, ConstRef):
            if ref.name not in constants:
                raise ProgramFormatError(f"{where} reads constant {ref.name!r}, which the program does not have")
            return p.constant(ref.name).type
        if isinstance(ref, NodeRef):
            if type(ref.index) is not int or not 0 <= ref.index < before:
                raise ProgramFormatError(f"{where} reads node {ref.index}, which does not come before it")
            outs = p.nodes[ref.index].outputs
            if type(ref.slot) is not int or not 0 <= ref.slot < len(outs):
                raise ProgramFormatError(f"{where} reads output {ref.slot} of node {ref.index}, which has {len(outs)}")
            return outs[ref.slot]
        raise ProgramFormatError(f"{where}: {ref!r} is not a reference")

    for i, node in enumerate(p.nodes):
        if node.index != i:
            raise ProgramFormatError(f"node at position {i} says it has index {node.index}")
        _check_args_against_schema(node)
        for ref in node.inputs:
            check_ref(ref, i, f"node {i} ({node.op})")

    state_inputs = [i for i in p.inputs if i.kind is InputKind.STATE]
    kinds_out = [o.kind for o in p.outputs]
    n_out_state = kinds_out.count(OutputKind.STATE)
    if kinds_out != [OutputKind.STATE] * n_out_state + [OutputKind.LOSS] * (len(kinds_out) - n_out_state):
        raise ProgramFormatError("program outputs must list every state output before the loss outputs")
    got = [(o.name, o.type) for o in p.outputs[:n_out_state]]
    want = [(i.name, i.type) for i in state_inputs]
    if got != want:
        raise ProgramFormatError(
            "the state outputs must be the state inputs' names and types, in the same order: "
            f"{[f'{n}: {t}' for n, t in want]} != {[f'{n}: {t}' for n, t in got]}"
        )
    _check_canonical("loss outputs", [o.name for o in p.outputs[n_out_state:]])
    if len({o.name for o in p.outputs}) != len(p.outputs):
        raise ProgramFormatError("a name is used by a state output and a loss output")
    for o in p.outputs:
        t = check_ref(o.ref, len(p.nodes), f"output {o.name!r}")
        if t != o.type:
            raise ProgramFormatError(f"output {o.name!r} has type {o.type} but its source has type {t}")


def _check_args_against_schema(node: Node) -> None:
    specs = recorded_specs(node.op)
    names = [n for n, _ in node.args]
    want = [s.name for s in specs]
    if names != want:
        raise ProgramFormatError(f"node {node.index} ({node.op}) records arguments {names}; its schema has {want}")
    for spec, (_, value) in zip(specs, node.args, strict=True):
        if not _fits(spec.kind, spec.optional, value):
            raise ProgramFormatError(
                f"node {node.index} ({node.op}) argument {spec.name!r} = {value!r} is not a valid {spec.kind.value}"
                + ("?" if spec.optional else "")
            )


def _fits(kind: ArgKind, optional: bool, v: ArgValue) -> bool:
    if v is None:
        return optional
    if kind is ArgKind.TENSOR:
        return v is TENSOR or isinstance(v, bool | int | float)
    if kind is ArgKind.TENSOR_LIST:
        return isinstance(v, tuple) and all(x is TENSOR for x in v)
    if kind is ArgKind.OPT_TENSOR_LIST:
        return isinstance(v, tuple) and all(x is TENSOR or x is None for x in v)
    if kind is ArgKind.INT:
        return type(v) is int
    if kind is ArgKind.BOOL:
        return type(v) is bool
    if kind is ArgKind.FLOAT:
        return type(v) is float
    if kind is ArgKind.SCALAR:
        return type(v) in (bool, int, float)
    if kind is ArgKind.STR:
        return type(v) is str
    if kind is ArgKind.INT_LIST:
        return isinstance(v, tuple) and all(type(x) is int for x in v)
    if kind is ArgKind.BOOL_LIST:
        return isinstance(v, tuple) and all(type(x) is bool for x in v)
    if kind is ArgKind.FLOAT_LIST:
        return isinstance(v, tuple) and all(type(x) is float for x in v)
    if kind is ArgKind.DTYPE:
        return isinstance(v, torch.dtype)
    if kind is ArgKind.MEMORY_FORMAT:
        return isinstance(v, torch.memory_format)
    return False


def iter_refs(p: Program) -> Iterator[tuple[int | None, Ref]]:
    """Every reference in the program: (node index or None for an output, ref)."""
    for node in p.nodes:
        for ref in node.inputs:
            yield node.index, ref
    for o in p.outputs:
        yield None, o.ref
