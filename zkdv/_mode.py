"""Eager execution on RepOps kernels: a TorchDispatchMode over the kernel table.

Every ATen call that reaches the mode is handled as program capture would record it:
a call in torch's core ATen decomposition table is run as its decomposition (whose calls
re-enter the mode), then a CompositeImplicit decomposition, then the RepOps kernel
registered under the call's overload name, run with the arguments capture records
(placement arguments dropped). An in-place call whose functional form has a kernel is run
as that kernel and copied back. A call that draws random numbers is refused, and so is a
call with no kernel: the user's eager step then computes exactly what the program does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch
from torch._decomp import core_aten_decompositions
from torch.utils._python_dispatch import TorchDispatchMode

from trainer.program._schema import DROPPED_NAMES
from trainer.repops import KERNELS, OpSpec
from zkdv.errors import ImplicitRandomnessError, ZKDVLoweringError

RANDOMNESS_ADVICE = (
    "generate randomness outside the attested step (e.g. dropout masks, noise) and pass it in the "
    "transaction's batch; replay must recompute the same deterministic transition"
)
# Calls that return their input's values unchanged (views of it or the same tensor).
_PASS_NAMESPACES = frozenset({"profiler"})  # bookkeeping that computes no tensor values
_PASS_THROUGH = frozenset({"aten.detach.default", "aten.lift_fresh_copy.default", "aten._unsafe_view.default",
                           "aten._local_scalar_dense.default"})


@functools.cache
def decomposition_table() -> dict[Any, Any]:
    """torch's core ATen decomposition table, materialized once (its lazy form costs ~0.3 s a use)."""
    table = core_aten_decompositions()
    return {k: table[k] for k in list(table.keys())}


def is_random(func: torch._ops.OpOverload) -> bool:
    return torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


class RepOpsMode(TorchDispatchMode):
    """Routes ATen calls to `kernels` (default: `trainer.repops.KERNELS`)."""

    def __init__(self, kernels: Mapping[str, OpSpec] | None = None) -> None:
        super().__init__()
        self.kernels = KERNELS if kernels is None else kernels
        self.table = decomposition_table()
        self.calls = 0
        self._no_decomposition: set[Any] = set()
        self._kernel_of: dict[Any, Any] = {}  # overloads with no decomposition: their kernel

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        kernel = self._kernel_of.get(func)
        if kernel is not None:  # the common case, resolved once per overload below
            self.calls += 1
            return kernel(*args, **{k: v for k, v in kwargs.items() if k not in DROPPED_NAMES})
        name = str(func)
        if is_random(func):
            raise ImplicitRandomnessError(
                f"the attested step calls {name}, which draws random numbers: {RANDOMNESS_ADVICE}"
            )
        decomp = self.table.get(func)
        if decomp is not None:
            with self:
                result = decomp(*args, **kwargs)
            if result is not NotImplemented:
                return result
        if func not in self._no_decomposition:
            with self:
                result = func.decompose(*args, **kwargs)
            if result is not NotImplemented:
                return result
            self._no_decomposition.add(func)  # whether an op decomposes depends on the op alone
        spec = self.kernels.get(name)
        if spec is not None:
            if decomp is None:  # neither decomposition applies to this overload: go straight to the kernel
                self._kernel_of[func] = spec.fast
            self.calls += 1
            return spec.fast(*args, **{k: v for k, v in kwargs.items() if k not in DROPPED_NAMES})
        if name in _PASS_THROUGH or func.namespace in _PASS_NAMESPACES:
            return func(*args, **kwargs)
        if func._schema.is_mutable and name.split(".")[1].endswith("_"):
            base, _, overload = name.removeprefix("aten.").partition(".")
            functional = f"aten.{base[:-1]}.{overload}"
            fspec = self.kernels.get(functional)
            if fspec is not None:
                self.calls += 1
                out = fspec.fast(*args, **{k: v for k, v in kwargs.items() if k not in DROPPED_NAMES})
                with torch.no_grad():
                    args[0].copy_(out)
                return args[0]
        raise ZKDVLoweringError(
            f"the eager step calls {name}, which has no RepOps kernel (add one to trainer.repops or avoid the operator)"
        )
