"""Typed errors of TrainingLedger (contracts/src/TrainingLedger.sol, docs/ledger.md): each revert the contract
can give, with the sentence a user reads. The ledger's chain client itself is not built yet."""

from __future__ import annotations

from offchain.contracts._base import ErrorTable, TypedRevert, error_table


class TrainingLedgerError(TypedRevert):
    """A training ledger rule refused the call."""


class LedgerBadParam(TrainingLedgerError):
    """A ledger parameter is out of range (the error names which: pool, steps, intervalSteps, windows,
    maxContributors, quorum (2 to 256), settle, builderFee, roots, root (a zero interval root) or payout)."""


class LedgerUnknown(TrainingLedgerError):
    """No ledger has this id."""


class LedgerBadBond(TrainingLedgerError):
    """The value sent is not the ledger's bond for this role (contributor or builder)."""


class LedgerAlreadyBonded(TrainingLedgerError):
    """This address has already bonded on the ledger: one bond per address."""


class LedgerNotBonded(TrainingLedgerError):
    """This address does not hold a bond on the ledger in the role the call needs (a contributor to commit, a
    builder to post roots: a builder who withdrew its bond posts no more)."""


class LedgerOutsideWindow(TrainingLedgerError):
    """The call is outside its time window [from, until): too early or too late."""


class LedgerBadStep(TrainingLedgerError):
    """Steps run 1 .. T: this step is not one of the ledger's."""


class LedgerAlreadyCommitted(TrainingLedgerError):
    """The contributor has already committed at this step."""


class LedgerStepFull(TrainingLedgerError):
    """The step already holds its maximum number of contributions."""


class LedgerNotClient(TrainingLedgerError):
    """Only the ledger's client may do this (reveal a validation batch)."""


class LedgerValidationAlreadyRevealed(TrainingLedgerError):
    """This step's validation batch is already revealed."""


class LedgerValidationNotRevealed(TrainingLedgerError):
    """The step's validation batch is not revealed yet, so contributors cannot reveal."""


class LedgerRevealMismatch(TrainingLedgerError):
    """The reveal does not open the contributor's own commit of this step (or there is none)."""


class LedgerAlreadyRevealed(TrainingLedgerError):
    """The contributor has already revealed at this step."""


class LedgerBadInterval(TrainingLedgerError):
    """The interval index is not below the ledger's interval count."""


class LedgerAlreadyPosted(TrainingLedgerError):
    """This builder has already posted this interval's root."""


class LedgerIntervalOrder(TrainingLedgerError):
    """A builder posts its interval roots in order (0, 1, ...): this interval comes after one it has not posted."""


class LedgerFrozen(TrainingLedgerError):
    """Builders posted different roots for an interval or for the payout: the ledger's payout is frozen for
    good, nothing can be claimed (the pool returns to the client after the settle window)."""


class LedgerIntervalsIncomplete(TrainingLedgerError):
    """Not every interval root has its builder quorum yet: no payout root can be posted."""


class LedgerPayoutAlreadyPosted(TrainingLedgerError):
    """The pool was already refunded: no payout root can be posted."""


class LedgerPayoutTotal(TrainingLedgerError):
    """The payout tree's total must be the pool minus the builder fee."""


class LedgerPayoutAlreadyVoted(TrainingLedgerError):
    """This builder has already posted its payout root for the ledger: one post per builder, no change of vote."""


class LedgerClaimsNotOpen(TrainingLedgerError):
    """The payout root is agreed, but claims (and fee claims) open only at the end of the settle window, so
    that every bonded builder can still object to it."""


class LedgerNoPayout(TrainingLedgerError):
    """No payout root is agreed by the builder quorum yet (or the pool was refunded and claims are closed):
    nothing can be claimed."""


class LedgerBadClaim(TrainingLedgerError):
    """The payout leaf index is out of range or already claimed."""


class LedgerPayoutMismatch(TrainingLedgerError):
    """The proof does not open the ledger's payout root for this leaf."""


class LedgerNotOver(TrainingLedgerError):
    """The ledger (or its settle and claim windows) is not over yet."""


class LedgerNothingDue(TrainingLedgerError):
    """Nothing is due to this address: no bond, no fee, or already refunded."""


class LedgerTransferFailed(TrainingLedgerError):
    """Sending the ether failed (the recipient refused it); nothing was paid."""


TRAINING_LEDGER_ERRORS: ErrorTable = error_table(TrainingLedgerError)
