"""RepOps: operators whose arithmetic is pinned down by docs/repops.md, so that every honest
machine computes the same bits.

Each kernel module exports `OPS: dict[str, OpSpec]`; `KERNELS` is their union, keyed by
ATen overload name ("aten.mm.default"), or for the project's own operators (`torch.library`
namespace `refereed`, e.g. "refereed.exact_dot.default") by that overload's name. An operator
claimed by two modules is an error.
"""

from collections.abc import Mapping
from types import MappingProxyType

from trainer.repops import activations, conv, dot, elementwise, indexing, linalg, reduce, shape
from trainer.repops._spec import Kernel, OpSpec, RepOpsError, UnsupportedOpError


def _union(*tables: Mapping[str, OpSpec]) -> Mapping[str, OpSpec]:
    merged: dict[str, OpSpec] = {}
    for table in tables:
        for name, spec in table.items():
            if name in merged:
                raise RepOpsError(f"{name} has two RepOps kernels")
            merged[name] = spec
    return MappingProxyType(merged)


KERNELS: Mapping[str, OpSpec] = _union(
    elementwise.OPS, activations.OPS, linalg.OPS, reduce.OPS, shape.OPS, indexing.OPS, conv.OPS, dot.OPS
)

__all__ = ["KERNELS", "Kernel", "OpSpec", "RepOpsError", "UnsupportedOpError"]
