"""Run configuration shared by the frontends: the name of the run and its sampling policy."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from zkdv.errors import ZKDVUsageError


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """Which steps are self-checked by replay.

    With the probabilistic policy each step's state check and update check are drawn
    independently with the given probabilities from a keyed hash (docs/zkdv.md, "Sampling"),
    so a resumed run draws the same steps. `DEBUGCheckEvery(n)` checks both at every n-th
    step (steps 0, n, 2n, ...), for tests and profiling.
    """

    state_check_probability: float = 0.0
    update_check_probability: float = 0.0
    every: int | None = None

    def __post_init__(self) -> None:
        for name in ("state_check_probability", "update_check_probability"):
            p = getattr(self, name)
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= float(p) <= 1.0:
                raise ZKDVUsageError(f"{name} must be a probability in [0, 1], got {p!r}")
        bad_every = isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1
        if self.every is not None and bad_every:
            raise ZKDVUsageError(f"DEBUGCheckEvery needs a positive integer, got {self.every!r}")

    @staticmethod
    def DEBUGCheckEvery(n: int) -> SamplingPolicy:
        """Check the state and the update of every n-th step (deterministic; for tests and profiling)."""
        return SamplingPolicy(every=n)

    def draws(self, key: bytes, step: int) -> tuple[bool, bool]:
        """(state check, update check) for `step` of the run whose root record hashes to `key`."""
        if self.every is not None:
            hit = step % self.every == 0
            return hit, hit
        return _drawn(key, step, b"state", self.state_check_probability), _drawn(
            key, step, b"update", self.update_check_probability)

    def to_record(self) -> dict[str, object]:
        if self.every is not None:
            return {"every": self.every}
        return {"state": float(self.state_check_probability), "update": float(self.update_check_probability)}


def _drawn(key: bytes, step: int, kind: bytes, p: float) -> bool:
    """`_draw(key, step, kind) < p`, without the hash where p <= 0: no draw is below 0."""
    if p <= 0:
        return False
    return _draw(key, step, kind) < p


def _draw(key: bytes, step: int, kind: bytes) -> float:
    """A uniform number in [0, 1): the first 8 bytes of SHA-256(b"ZKDV-SAMPLE" || key || u64(step) || kind) / 2^64."""
    digest = hashlib.sha256(b"ZKDV-SAMPLE" + key + step.to_bytes(8, "big") + kind).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True, slots=True)
class ZKDVConfig:
    """The run's name (recorded in the root record) and its sampling policy (off by default)."""

    name: str = "zkdv"
    sampling_policy: SamplingPolicy = SamplingPolicy()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ZKDVUsageError(f"the run name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.sampling_policy, SamplingPolicy):
            raise ZKDVUsageError(f"sampling_policy must be a zkdv.SamplingPolicy, got {type(self.sampling_policy)}")


def probe_width(last_dim: int, probe_ratio: float) -> int:
    """Columns kept by a leaf's probe: max(1, ceil(probe_ratio * last_dim)) (IEEE double product)."""
    return max(1, math.ceil(probe_ratio * last_dim))
