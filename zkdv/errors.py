"""The errors of `zkdv`: one root, `ZKDVError`, and a subclass per kind of refusal."""

from __future__ import annotations


class ZKDVError(Exception):
    """Root of every error raised by `zkdv`."""


class ZKDVUsageError(ZKDVError):
    """The API was called in a way it does not support (wrong order, wrong argument)."""


class ZKDVLoweringError(ZKDVError):
    """The attested step cannot be lowered into a program: an unprepared stateful module,
    implicit randomness, an operator without a RepOps kernel, an optimizer without a functional form."""


class UnsupportedOptimizerError(ZKDVLoweringError):
    """The optimizer has no registered functional form (LBFGS, an unknown subclass)."""


class ImplicitRandomnessError(ZKDVLoweringError):
    """The step draws random numbers itself; replay could not recompute them."""


class ProgramChangedError(ZKDVError):
    """A transaction does not fit the program captured by the first one (another model, another shape)."""


class TranscriptError(ZKDVError):
    """A transcript file is malformed, truncated in its middle, or does not belong to this run."""


class ZKDVPoisonedError(ZKDVError):
    """A sampled self-check failed: the committed transition is not what the program computes.

    `step` is the first step whose check failed and `detail` says what differed. Once raised
    (or once a failure is known), every later operation of the proof raises it again.
    """

    def __init__(self, step: int, detail: str) -> None:
        self.step = step
        self.detail = detail
        super().__init__(f"zkdv check failed at step {step}: {detail}")
