"""The kernel record every RepOps module exports, and the package's errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Kernel = Callable[..., Any]


class RepOpsError(Exception):
    """Root of every error raised by `trainer.repops`."""


class UnsupportedOpError(RepOpsError):
    """An ATen operator (or an overload, or an argument combination) has no RepOps kernel."""


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One ATen overload with its RepOps kernels.

    `fast` and `reference` take exactly the arguments of the ATen overload (positional as
    in its schema, then keyword), return what it returns, and give the same bits; `fast` is
    built from exact or IEEE-correctly-rounded tensor operations, `reference` is a slow
    scalar loop (Python ints and floats) written straight from docs/repops.md.
    """

    name: str  # str(torch.ops.aten.<op>.<overload>), e.g. "aten.mm.default"
    fast: Kernel
    reference: Kernel
    section: str  # the heading of docs/repops.md that specifies it
