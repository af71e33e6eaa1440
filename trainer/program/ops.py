"""Which ATen operators a program may contain: those with a RepOps kernel (`trainer.repops.KERNELS`)."""

from __future__ import annotations

from typing import Final

import trainer.repops

# Value-preserving aliases that capture removes (their users read the aliased tensor).
DROPPED_OPS: Final = frozenset({"aten.alias.default", "aten.lift_fresh_copy.default"})

# Where a user reads the list of supported operators (docs/program.md section 8, generated from KERNELS).
SUPPORTED_OPS_DOC: Final = "docs/program.md#8-supported-operators"


def supported_ops() -> frozenset[str]:
    """The operator names (`str(OpOverload)`) that have a RepOps kernel."""
    return frozenset(trainer.repops.KERNELS)
