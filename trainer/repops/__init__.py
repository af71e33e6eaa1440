"""RepOps: operators whose arithmetic is pinned down by docs/repops.md, so that every honest
machine computes the same bits. Each module exports `OPS: dict[str, OpSpec]`; `KERNELS`
is their union, keyed by ATen overload name ("aten.mm.default")."""

from trainer.repops._spec import Kernel, OpSpec, RepOpsError, UnsupportedOpError

__all__ = ["Kernel", "OpSpec", "RepOpsError", "UnsupportedOpError"]
