"""Errors of `trainer.program`: one root, one subclass per kind of failure."""

from __future__ import annotations

from collections.abc import Mapping

from trainer.program.ops import SUPPORTED_OPS_DOC
from trainer.repops import UnsupportedOpError


class ProgramError(Exception):
    """Root of every error raised by `trainer.program`."""


class CaptureError(ProgramError):
    """A training step cannot be captured into a program."""


class UnsupportedOperatorsError(CaptureError, UnsupportedOpError):
    """The captured step uses operators without a RepOps kernel; `counts` maps each to its uses."""

    def __init__(self, counts: Mapping[str, int], where: Mapping[str, str] | None = None) -> None:
        self.counts = dict(sorted(counts.items()))
        self.where = dict(where or {})
        lines = []
        for op, n in self.counts.items():
            at = f", first at {self.where[op]}" if op in self.where else ""
            lines.append(f"  {op}: {n} use{'s' if n != 1 else ''}{at}")
        total = len(self.counts)
        super().__init__(
            f"the training step uses {total} operator{'s' if total != 1 else ''} without a RepOps kernel "
            f"(rewrite those lines with the supported operators listed in {SUPPORTED_OPS_DOC}, or add kernels "
            "to trainer.repops):\n" + "\n".join(lines)
        )


class ProgramFormatError(ProgramError):
    """A program (in memory or read from a file) is malformed, or does not match its hash."""
