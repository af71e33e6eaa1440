"""ATen operator schemas as the program format sees them: argument kinds and binding.

A node's arguments are recorded by the names and order of its ATen overload's schema
(`torch.ops.aten.<op>.<overload>._schema`); this module classifies each schema argument
and turns recorded arguments back into a call.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainer.program.errors import ProgramFormatError


class Slot(enum.Enum):
    """The marker of a tensor argument in a node's recorded arguments: "an input goes here"."""

    TENSOR = "tensor"

    def __repr__(self) -> str:
        return "TENSOR"


class ArgKind(enum.Enum):
    TENSOR = "Tensor"  # one input (or a Python number: a wrapped scalar)
    TENSOR_LIST = "Tensor[]"  # a list of inputs
    OPT_TENSOR_LIST = "Tensor?[]"  # a list of inputs or None
    INT = "int"
    BOOL = "bool"
    FLOAT = "float"
    SCALAR = "Scalar"  # a Python bool, int or float; its type is part of the value
    STR = "str"
    INT_LIST = "int[]"
    BOOL_LIST = "bool[]"
    FLOAT_LIST = "float[]"
    DTYPE = "ScalarType"
    MEMORY_FORMAT = "MemoryFormat"
    DROPPED = "dropped"  # device, layout, pin_memory: placement, not values


TENSOR_KINDS = frozenset({ArgKind.TENSOR, ArgKind.TENSOR_LIST, ArgKind.OPT_TENSOR_LIST})

_BY_TYPE = {
    "Tensor": ArgKind.TENSOR,
    "List[Tensor]": ArgKind.TENSOR_LIST,
    "List[Optional[Tensor]]": ArgKind.OPT_TENSOR_LIST,
    "int": ArgKind.INT,
    "SymInt": ArgKind.INT,
    "bool": ArgKind.BOOL,
    "float": ArgKind.FLOAT,
    "number": ArgKind.SCALAR,
    "Scalar": ArgKind.SCALAR,
    "str": ArgKind.STR,
    "List[int]": ArgKind.INT_LIST,
    "List[SymInt]": ArgKind.INT_LIST,
    "List[bool]": ArgKind.BOOL_LIST,
    "List[float]": ArgKind.FLOAT_LIST,
}
# TorchScript types ScalarType and MemoryFormat as int; the argument name tells them apart.
_BY_NAME = {"dtype": ArgKind.DTYPE, "memory_format": ArgKind.MEMORY_FORMAT}
DROPPED_NAMES = frozenset({"device", "layout", "pin_memory"})


@dataclass(frozen=True, slots=True)
class ArgSpec:
    name: str
    kind: ArgKind
    optional: bool
    kwarg_only: bool
    has_default: bool
    default: Any


# Operator namespaces a program may name: ATen's, and the project's own (`torch.library` operators
# registered by trainer.repops, e.g. refereed::exact_dot; docs/program.md, "Operators").
NAMESPACES = ("aten", "refereed")


def op_overload(op: str) -> torch._ops.OpOverload:
    """`"aten.mm.default"` -> `torch.ops.aten.mm.default`; `"refereed.exact_dot.default"` ->
    `torch.ops.refereed.exact_dot.default` (registered when trainer.repops is imported)."""
    parts = op.split(".")
    if len(parts) != 3 or parts[0] not in NAMESPACES:
        raise ProgramFormatError(
            f"operator name {op!r} is not of the form aten.<op>.<overload> or refereed.<op>.<overload>"
        )
    if parts[0] != "aten":
        import trainer.repops  # noqa: F401  (registers the project's operators)
    try:
        overload = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except (AttributeError, RuntimeError):
        known = "registered by trainer.repops"
        if parts[0] == "aten":
            known = f"an ATen overload known to torch {torch.__version__}"
        raise ProgramFormatError(f"operator {op!r} is not {known}") from None
    if not isinstance(overload, torch._ops.OpOverload):
        raise ProgramFormatError(f"operator {op!r} is not an operator overload")
    return overload


def arg_specs(op: str | torch._ops.OpOverload) -> tuple[ArgSpec, ...]:
    overload = op_overload(op) if isinstance(op, str) else op
    specs = []
    for a in overload._schema.arguments:
        type_str = str(a.type)
        optional = type_str.startswith("Optional[")
        inner = type_str[len("Optional[") : -1] if optional else type_str
        if a.name in DROPPED_NAMES:
            kind = ArgKind.DROPPED
        elif a.name in _BY_NAME and inner == "int":
            kind = _BY_NAME[a.name]
        elif inner in _BY_TYPE:
            kind = _BY_TYPE[inner]
        else:
            raise ProgramFormatError(f"{overload}: argument {a.name!r} has type {type_str}, which programs cannot hold")
        specs.append(
            ArgSpec(
                name=a.name,
                kind=kind,
                optional=optional,
                kwarg_only=a.kwarg_only,
                has_default=a.has_default_value(),
                default=a.default_value if a.has_default_value() else None,
            )
        )
    return tuple(specs)


def recorded_specs(op: str) -> tuple[ArgSpec, ...]:
    """The schema arguments a node records, in schema order (all but the dropped ones)."""
    return tuple(s for s in arg_specs(op) if s.kind is not ArgKind.DROPPED)


@dataclass(frozen=True, slots=True)
class ArgTemplate:
    """A node's recorded arguments, resolved once into a call shape: positional values,
    keyword values, and where each input tensor goes (tuples become lists). `bind` fills in
    the tensors; it is what every executor calls per step, so it does no schema lookups."""

    op: str
    positional: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    # Per tensor input, in order: (keyword name or None for positional, position, index in a list or None).
    slots: tuple[tuple[str | None, int, int | None], ...]

    @staticmethod
    def of(op: str, args: Sequence[tuple[str, Any]]) -> ArgTemplate:
        specs = {s.name: s for s in recorded_specs(op)}
        positional: list[Any] = []
        kwargs: list[tuple[str, Any]] = []
        slots: list[tuple[str | None, int, int | None]] = []
        for name, value in args:
            kw = name if specs[name].kwarg_only else None
            pos = len(kwargs) if kw else len(positional)
            if value is Slot.TENSOR:
                slots.append((kw, pos, None))
            elif isinstance(value, tuple):
                slots.extend((kw, pos, j) for j, v in enumerate(value) if v is Slot.TENSOR)
                value = list(value)
            (kwargs.append((name, value)) if kw else positional.append(value))
        return ArgTemplate(op, tuple(positional), tuple(kwargs), tuple(slots))

    def bind(self, tensors: Sequence[torch.Tensor]) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments with `tensors` put in their places, in order."""
        if len(tensors) != len(self.slots):
            raise ProgramFormatError(
                f"{self.op}: {len(tensors)} input tensors for {len(self.slots)} tensor arguments"
            )
        positional = list(self.positional)
        kwargs = dict(self.kwargs) if self.kwargs else {}
        copied: set[str | int] = set()
        for (kw, pos, j), t in zip(self.slots, tensors, strict=True):
            key: str | int = pos if kw is None else kw
            target: Any = positional if kw is None else kwargs
            if j is None:
                target[key] = t
                continue
            if key not in copied:  # a fresh copy of the template's list, once per call
                target[key] = list(target[key])
                copied.add(key)
            target[key][j] = t
        return positional, kwargs


def bind_args(
    op: str, args: Sequence[tuple[str, Any]], tensors: Sequence[torch.Tensor]
) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for calling the overload `op` with a node's arguments.

    Tensor markers in `args` are replaced by `tensors` in order; tuples become lists.
    Dropped arguments (device, layout, pin_memory) are left to their defaults.
    """
    return ArgTemplate.of(op, args).bind(tensors)
