"""Dropout whose mask is data the step receives, drawn by the keyed generator outside the step.

A training step may not draw random numbers (capture refuses `torch.rand`, `bernoulli` and
torch's own dropout): every honest trainer must get the same bits, and the referee must be able
to recompute any input. So dropout is written with `KeyedDropout(p, features)` in the model;
its mask for step `t` is `dropout_masks(model, seed, t, batch_size)[f"mask/{path}"]`, an fp32
tensor of 0 and RN32(1/(1-p)) from `trainer.data.keyed.dropout_mask(seed, t, path, ...)`, passed
in the batch beside `x` and `y`. The layer multiplies: `out = RN32(x * mask)` (one IEEE
multiplication), so its backward is `grad * mask`. In eval mode it is the identity.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from trainer.data.keyed import dropout_mask
from trainer.program.errors import ProgramError

MASK = "mask/"


class KeyedDropout(nn.Module):
    """Dropout with probability `p` over inputs shaped (batch, *features); the mask comes from the batch."""

    mask: torch.Tensor

    def __init__(self, p: float, features: Sequence[int]) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ProgramError(f"KeyedDropout probability must be in [0, 1), got {p}")
        self.p = float(p)
        self.features = tuple(int(f) for f in features)
        self.register_buffer("mask", torch.empty(0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return x
        if self.mask.numel() == 0:
            raise ProgramError(
                "KeyedDropout got no mask: pass the batch entry from trainer.program.dropout_masks "
                "(the step does this from batch['mask/<module path>'])"
            )
        if tuple(x.shape[1:]) != self.features or tuple(self.mask.shape) != tuple(x.shape):
            raise ProgramError(
                f"KeyedDropout: input {list(x.shape)} and mask {list(self.mask.shape)} must both be "
                f"[batch, {', '.join(map(str, self.features))}]"
            )
        return x * self.mask

    def extra_repr(self) -> str:
        return f"p={self.p}, features={self.features}"


def dropout_masks(model: nn.Module, seed: int, step: int, batch_size: int) -> dict[str, torch.Tensor]:
    """The batch entries `mask/<path>` of every KeyedDropout module of `model` for step `step`."""
    return {
        MASK + path: dropout_mask(seed, step, path, (batch_size, *m.features), m.p)
        for path, m in model.named_modules()
        if isinstance(m, KeyedDropout)
    }
