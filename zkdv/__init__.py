"""ZKDV: a verification transcript for an ordinary PyTorch training loop.

Shared configuration lives here; the Torch frontend is loaded lazily as `zkdv.torch`
(`zkdv.torch.ZKDV`). Every attested update runs on RepOps kernels, is committed to
`<proof>/records.cborl`, and sampled steps are re-checked by replaying the captured program
with the RepOps interpreter. Format and semantics: docs/zkdv.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from zkdv import overlap
from zkdv.config import SamplingPolicy, ZKDVConfig
from zkdv.errors import (
    ImplicitRandomnessError,
    ProgramChangedError,
    TranscriptError,
    UnsupportedOptimizerError,
    ZKDVError,
    ZKDVLoweringError,
    ZKDVPoisonedError,
    ZKDVUsageError,
)

__all__ = [
    "ImplicitRandomnessError",
    "ProgramChangedError",
    "SamplingPolicy",
    "TranscriptError",
    "UnsupportedOptimizerError",
    "ZKDVConfig",
    "ZKDVError",
    "ZKDVLoweringError",
    "ZKDVPoisonedError",
    "ZKDVUsageError",
    "overlap",
]


def __getattr__(name: str) -> Any:
    if name == "torch":
        return importlib.import_module("zkdv.torch")
    raise AttributeError(f"module 'zkdv' has no attribute {name!r}")
