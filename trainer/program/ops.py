"""Which ATen operators a program may contain: those with a RepOps kernel."""

from __future__ import annotations

from typing import Final

import trainer.repops

# PROVISIONAL: used only while `trainer.repops` does not yet export `KERNELS` (the union of
# its kernel modules' `OPS`). It is the census of the two reference models' captured steps
# (MLP + SGD, character transformer + AdamW + clipping); delete it once KERNELS lands.
PROVISIONAL_SUPPORTED_OPS: Final = frozenset(
    {
        "aten._log_softmax.default",
        "aten._softmax.default",
        "aten._to_copy.default",
        "aten.add.Tensor",
        "aten.addmm.default",
        "aten.arange.start_step",
        "aten.bitwise_and.Tensor",
        "aten.bitwise_not.default",
        "aten.bmm.default",
        "aten.cat.default",
        "aten.clamp.default",
        "aten.clone.default",
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
        "aten.lt.Scalar",
        "aten.mm.default",
        "aten.mul.Tensor",
        "aten.native_layer_norm.default",
        "aten.ne.Scalar",
        "aten.neg.default",
        "aten.permute.default",
        "aten.reciprocal.default",
        "aten.scalar_tensor.default",
        "aten.scatter.value",
        "aten.split_with_sizes.default",
        "aten.sqrt.default",
        "aten.squeeze.dims",
        "aten.sub.Tensor",
        "aten.sum.dim_IntList",
        "aten.unsqueeze.default",
        "aten.view.default",
        "aten.where.self",
    }
)

# Value-preserving aliases that capture removes (their users read the aliased tensor).
DROPPED_OPS: Final = frozenset({"aten.alias.default", "aten.lift_fresh_copy.default"})


def supported_ops() -> frozenset[str]:
    """The operator names (`str(OpOverload)`) that have a RepOps kernel."""
    kernels = getattr(trainer.repops, "KERNELS", None)
    if kernels:
        return frozenset(kernels)
    return PROVISIONAL_SUPPORTED_OPS
