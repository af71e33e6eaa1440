"""Run a program with torch's own ATen kernels, node by node.

Not reproducible across machines (torch's kernels are not RepOps): this is the baseline
the RepOps interpreter is compared against, and a check that a captured program computes
what the eager step computes (on one machine, with the same kernels, bit for bit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch._decomp import core_aten_decompositions
from torch.utils._python_dispatch import TorchDispatchMode

from trainer.program._schema import bind_args, op_overload
from trainer.program.errors import ProgramError
from trainer.program.program import ConstRef, InputRef, Node, Program, Ref

Tensor = torch.Tensor


def run_node_with_aten(node: Node, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """The outputs of one node, computed by the ATen overload it names."""
    positional, kwargs = bind_args(node.op, node.args, inputs)
    result = op_overload(node.op)(*positional, **kwargs)
    outputs = tuple(result) if isinstance(result, list | tuple) else (result,)
    if len(outputs) != len(node.outputs):
        raise ProgramError(
            f"node {node.index} ({node.op}) gave {len(outputs)} outputs, its descriptor says {len(node.outputs)}"
        )
    for k, (t, want) in enumerate(zip(outputs, node.outputs, strict=True)):
        if t.dtype != want.dtype or tuple(t.shape) != want.shape:
            raise ProgramError(
                f"node {node.index} ({node.op}) output {k} is {t.dtype}{list(t.shape)}, its descriptor says {want}"
            )
    return outputs


def run_with_aten(
    program: Program, state: Mapping[str, Tensor], batch: Mapping[str, Tensor]
) -> tuple[dict[str, Tensor], Tensor]:
    """(new state, loss) of one step."""
    values = {**{n: state[n] for n in program.state_names}, **{n: batch[n] for n in program.batch_names}}
    for i in program.inputs:
        t = values[i.name]
        if t.dtype != i.type.dtype or tuple(t.shape) != i.type.shape:
            raise ProgramError(f"input {i.name!r} is {t.dtype}{list(t.shape)}; the program wants {i.type}")
    constants = {c.name: c.tensor() for c in program.constants}
    results: list[tuple[Tensor, ...]] = []

    def get(ref: Ref) -> Tensor:
        if isinstance(ref, InputRef):
            return values[ref.name]
        if isinstance(ref, ConstRef):
            return constants[ref.name]
        return results[ref.index][ref.slot]

    for node in program.nodes:
        results.append(run_node_with_aten(node, [get(r) for r in node.inputs]))
    outs = {o.name: get(o.ref) for o in program.outputs}
    loss_names = [o.name for o in program.outputs if o.name not in state]
    return {n: outs[n] for n in program.state_names}, outs[loss_names[0]]


class DecomposedMode(TorchDispatchMode):
    """Eager execution with the decompositions capture uses: every ATen call that capture
    would decompose is run as its decomposition, so eager results use the same kernels as
    the captured program (and equal it bit for bit on one machine)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = core_aten_decompositions()

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        # The table loads lazily: `in` and `[]` see every entry, `dict.get` does not.
        if func in self.table:
            result = self.table[func](*args, **kwargs)
            if result is not NotImplemented:
                return result
        result = func.decompose(*args, **kwargs)
        if result is not NotImplemented:
            return result
        return func(*args, **kwargs)


def run_eager_decomposed(
    fn: Callable[[Mapping[str, Tensor], Mapping[str, Tensor]], tuple[dict[str, Tensor], Tensor]],
    state: Mapping[str, Tensor],
    batch: Mapping[str, Tensor],
) -> tuple[dict[str, Tensor], Tensor]:
    """`fn(state, batch)` run eagerly under `DecomposedMode`."""
    with DecomposedMode():
        return fn(state, batch)
