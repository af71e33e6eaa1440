// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

// Errors of the training ledger (contracts/src/TrainingLedger.sol), file-level so tests share selectors.

/// @notice A ledger parameter is out of range; `what` names it.
error LedgerBadParam(string what);
/// @notice No ledger has id `id`.
error LedgerUnknown(uint256 id);
/// @notice The bond sent is not the ledger's bond.
error LedgerBadBond(uint256 sent, uint256 expected);
/// @notice The address has already bonded.
error LedgerAlreadyBonded(address who);
/// @notice The address has not bonded.
error LedgerNotBonded(address who);
/// @notice The action is outside its time window `[from, until)`.
error LedgerOutsideWindow(uint256 nowTs, uint256 from, uint256 until);
/// @notice Step `t` is not below the ledger's step count.
error LedgerBadStep(uint256 t, uint256 steps);
/// @notice The contributor already committed at this step.
error LedgerAlreadyCommitted(uint256 t, address who);
/// @notice The step already has its maximum number of commits.
error LedgerStepFull(uint256 t, uint256 max);
/// @notice Only the ledger's client may do this.
error LedgerNotClient(address caller);
/// @notice Validation batch `t` is already revealed.
error LedgerValidationAlreadyRevealed(uint256 t);
/// @notice Validation batch `t` is not revealed yet: contributors cannot reveal.
error LedgerValidationNotRevealed(uint256 t);
/// @notice The reveal does not open the contributor's commit.
error LedgerRevealMismatch(uint256 t, address who);
/// @notice The contributor already revealed at this step.
error LedgerAlreadyRevealed(uint256 t, address who);
/// @notice Interval `i` is not below the interval count.
error LedgerBadInterval(uint256 i, uint256 count);
/// @notice The builder already posted interval `i`.
error LedgerAlreadyPosted(uint256 i, address who);
/// @notice A builder posts intervals in order: interval `i` before the builder posted interval `next`.
error LedgerIntervalOrder(uint256 i, uint256 next);
/// @notice Builders disagree on an interval root: payout is frozen.
error LedgerFrozen(uint256 id);
/// @notice Interval roots are not all agreed by the builder quorum.
error LedgerIntervalsIncomplete(uint256 id);
/// @notice The pool was already refunded: no payout root can be posted.
error LedgerPayoutAlreadyPosted(uint256 id);
/// @notice The payout total must be `expected` (pool minus builder fee).
error LedgerPayoutTotal(uint256 total, uint256 expected);
/// @notice The builder already posted (voted for) the payout root.
error LedgerPayoutAlreadyVoted(uint256 id, address who);
/// @notice The payout root is agreed, but claims open only at `opensAt` (the end of the settle window).
error LedgerClaimsNotOpen(uint256 id, uint256 opensAt);
/// @notice No payout root is agreed (or claims are closed).
error LedgerNoPayout(uint256 id);
/// @notice Leaf `index` is out of range or already claimed.
error LedgerBadClaim(uint256 id, uint256 index);
/// @notice The proof does not open the payout root.
error LedgerPayoutMismatch(bytes32 computed, bytes32 root);
/// @notice The ledger is not over yet, or the refund is not available.
error LedgerNotOver(uint256 id);
/// @notice Nothing to withdraw or refund.
error LedgerNothingDue(uint256 id, address who);
/// @notice An ETH transfer failed.
error LedgerTransferFailed(address to, uint256 amount);
