"""The errors of `trainer.ledger`."""


class LedgerError(Exception):
    """Root of every error raised by `trainer.ledger`."""


class ContributionError(LedgerError):
    """A contribution cannot enter a block: wrong names, shapes or dtypes, or non-finite values."""


class BlockError(LedgerError):
    """A block does not decode, does not chain onto its parent, or does not reproduce."""


class ManifestError(LedgerError):
    """The kernels at hand are not the ones a ledger was pinned to at genesis."""
