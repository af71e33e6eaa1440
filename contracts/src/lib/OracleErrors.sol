// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRecomputeOracle} from "../interfaces/IRecomputeOracle.sol";

// Errors of RecomputeOracle (contracts/src/RecomputeOracle.sol), each carrying the values that
// caused it.

error RecomputeOracleInvalidCommitteeSize(uint8 committeeSize);
error RecomputeOracleZeroMinBond();
error RecomputeOracleSilenceSlashTooLarge(uint256 silenceSlash, uint256 minBond);
error RecomputeOracleZeroWindow(uint64 answerWindow, uint64 challengeWindow, uint64 voteWindow);
error RecomputeOracleZeroMaxAttempts();
error RecomputeOracleZeroMaxRounds();
error RecomputeOracleResolutionTimeTooLong(uint256 resolutionTime, uint256 max);
error RecomputeOracleExitDelayTooLong(uint64 exitDelay, uint256 max);
error RecomputeOracleNotDeployer(address caller, address deployer);
error RecomputeOracleGameAlreadyBound(address game);
error RecomputeOracleNotGame(address caller, address game);
error RecomputeOracleBondTooSmall(uint256 sent, uint256 required);
error RecomputeOracleNotRegistered(address oracle);
error RecomputeOracleExitAlreadyRequested(address oracle, uint256 availableAt);
error RecomputeOracleExitNotRequested(address oracle);
error RecomputeOracleExitTooEarly(address oracle, uint256 availableAt, uint256 timestamp);
error RecomputeOracleOpenDuties(address oracle, uint256 openDuties);
error RecomputeOracleWrongStatus(uint256 questionId, IRecomputeOracle.QuestionStatus status);
error RecomputeOracleRandomnessPending(uint256 questionId, uint256 requestId);
error RecomputeOracleNotAssignedOracle(uint256 questionId, address caller, address oracle);
error RecomputeOracleDeadlinePassed(uint256 questionId, uint64 deadline, uint256 timestamp);
error RecomputeOracleDeadlineNotPassed(uint256 questionId, uint64 deadline, uint256 timestamp);
error RecomputeOracleWrongChallengeBond(uint256 sent, uint256 required);
error RecomputeOracleSelfChallenge(uint256 questionId, address oracle);
error RecomputeOracleNotCommitteeMember(uint256 questionId, address caller);
error RecomputeOracleAlreadyCommitted(uint256 questionId, address member);
error RecomputeOracleNotCommitted(uint256 questionId, address member);
error RecomputeOracleAlreadyRevealed(uint256 questionId, address member);
error RecomputeOracleRevealTooEarly(uint256 questionId, uint64 commitDeadline, uint256 timestamp);
error RecomputeOracleRevealMismatch(uint256 questionId, address member);
error RecomputeOracleFeeAlreadyPaid(uint256 questionId);
error RecomputeOracleWrongFee(uint256 sent, uint256 required);
error RecomputeOracleNothingToWithdraw(address account);
error RecomputeOracleTransferFailed(address account, uint256 amount);
