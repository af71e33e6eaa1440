// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRecomputeOracle} from "../interfaces/IRecomputeOracle.sol";

// Errors of the recompute oracle (contracts/src/RecomputeOracle.sol). File-level, so that the
// contract, its tests and off-chain decoders share one definition per selector.

// ---- construction ----------------------------------------------------------------------------

/// @notice The committee must have an odd, non-zero number of members, so that a majority exists.
error RecomputeOracleInvalidCommitteeSize(uint8 committeeSize);

/// @notice An oracle's bond must be non-zero, or an oracle could join for free.
error RecomputeOracleZeroMinBond();

/// @notice A silent oracle would lose `silenceSlash`, more than the `minBond` it must hold.
error RecomputeOracleSilenceSlashTooLarge(uint256 silenceSlash, uint256 minBond);

/// @notice The answer, challenge and vote windows must all be non-zero.
error RecomputeOracleZeroWindow(uint64 answerWindow, uint64 challengeWindow, uint64 voteWindow);

/// @notice At least one oracle must be drawn per question.
error RecomputeOracleZeroMaxAttempts();

/// @notice `maxAttempts * answerWindow + challengeWindow + voteWindow` is `resolutionTime`
///         seconds, more than the `max` allowed.
error RecomputeOracleResolutionTimeTooLong(uint256 resolutionTime, uint256 max);

/// @notice An exit delay of `exitDelay` seconds is more than the `max` allowed.
error RecomputeOracleExitDelayTooLong(uint64 exitDelay, uint256 max);

// ---- oracles ---------------------------------------------------------------------------------

/// @notice `register` was sent `sent` wei; with the bond the caller has left it needs `required`.
error RecomputeOracleBondTooSmall(uint256 sent, uint256 required);

/// @notice `oracle` holds no bond.
error RecomputeOracleNotRegistered(address oracle);

/// @notice `oracle` already asked to exit; its bond can be taken out at `availableAt`.
error RecomputeOracleExitAlreadyRequested(address oracle, uint256 availableAt);

/// @notice `oracle` must call `requestExit` before `exit`.
error RecomputeOracleExitNotRequested(address oracle);

/// @notice `oracle` can take its bond out only at `availableAt`; it is `timestamp`.
error RecomputeOracleExitTooEarly(address oracle, uint256 availableAt, uint256 timestamp);

/// @notice `oracle` is still assigned to `openDuties` open questions (as oracle or committee member).
error RecomputeOracleOpenDuties(address oracle, uint256 openDuties);

// ---- questions -------------------------------------------------------------------------------

/// @notice Question `questionId` is `status`, which does not allow this call.
error RecomputeOracleWrongStatus(uint256 questionId, IRecomputeOracle.QuestionStatus status);

/// @notice Only `oracle`, the oracle assigned to `questionId`, may answer it; `caller` is not.
error RecomputeOracleNotAssignedOracle(uint256 questionId, address caller, address oracle);

/// @notice The deadline of `questionId` passed at `deadline`; it is `timestamp`.
error RecomputeOracleDeadlinePassed(uint256 questionId, uint64 deadline, uint256 timestamp);

/// @notice The deadline of `questionId` is `deadline`; it is only `timestamp`.
error RecomputeOracleDeadlineNotPassed(uint256 questionId, uint64 deadline, uint256 timestamp);

/// @notice `challenge` was sent `sent` wei; it takes exactly `required`.
error RecomputeOracleWrongChallengeBond(uint256 sent, uint256 required);

/// @notice `oracle` answered `questionId` and cannot challenge its own answer.
error RecomputeOracleSelfChallenge(uint256 questionId, address oracle);

/// @notice Only `drawn` of the `required` committee members could be drawn for `questionId`;
///         the answer stands.
error RecomputeOracleCommitteeUnavailable(uint256 questionId, uint256 drawn, uint256 required);

/// @notice `caller` is not on the committee of `questionId`.
error RecomputeOracleNotCommitteeMember(uint256 questionId, address caller);

/// @notice `member` already voted on `questionId`.
error RecomputeOracleAlreadyVoted(uint256 questionId, address member);

/// @notice The fee of `questionId` was already paid.
error RecomputeOracleFeeAlreadyPaid(uint256 questionId);

/// @notice `payFee` was sent `sent` wei; the fee is exactly `required`.
error RecomputeOracleWrongFee(uint256 sent, uint256 required);

// ---- payments --------------------------------------------------------------------------------

/// @notice `account` has no credit to withdraw.
error RecomputeOracleNothingToWithdraw(address account);

/// @notice Sending `amount` wei to `account` failed (its credit is restored by the revert).
error RecomputeOracleTransferFailed(address account, uint256 amount);
