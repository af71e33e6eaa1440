"""Per-transaction overlap policies: how far training may run ahead of a sampled check.

- `ALWAYS`: the next step is admitted as soon as the check holds its inputs (immutable
  copies, taken when the transaction closes); training and verification overlap, bounded
  only by `max_in_flight`.
- `UNCHECKED` (the default): a sampled check is a fence that retains at most one already
  admitted successor: step t + 2 is not admitted before the check of step t retires.
- `NEVER`: no successor is admitted before the check of this step retires (fully sequential).

A transaction without a sampled check never holds training back, whatever its policy.
"""

from __future__ import annotations

import enum


class Overlap(enum.Enum):
    ALWAYS = "always"
    UNCHECKED = "unchecked"
    NEVER = "never"

    def successors_allowed(self) -> int | None:
        """How many later steps may be admitted while this step's check is unresolved (None: no limit)."""
        return {Overlap.ALWAYS: None, Overlap.UNCHECKED: 1, Overlap.NEVER: 0}[self]


ALWAYS = Overlap.ALWAYS
UNCHECKED = Overlap.UNCHECKED
NEVER = Overlap.NEVER

__all__ = ["ALWAYS", "NEVER", "UNCHECKED", "Overlap"]
