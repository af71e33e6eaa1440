// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ITaskMarket} from "../interfaces/ITaskMarket.sol";

// Errors of the task market (contracts/src/TaskMarket.sol). File-level, so that the contract,
// its tests and off-chain decoders share one definition per selector.

// ---- postTask --------------------------------------------------------------------------------

/// @notice A task must escrow a reward: `postTask` was sent no value.
error TaskMarketZeroReward();

/// @notice A task must train at least one step.
error TaskMarketZeroSteps();

/// @notice `checkpointInterval` must be non-zero and divide `steps`.
error TaskMarketBadCheckpointInterval(uint64 steps, uint64 checkpointInterval);

/// @notice A task has at most `maxCheckpoints` checkpoints after step 0 (`steps / checkpointInterval` is
///         `checkpoints`; `TaskMarket.MAX_CHECKPOINTS`): `submit` takes the whole list in one transaction.
error TaskMarketTooManyCheckpoints(uint256 checkpoints, uint256 maxCheckpoints);

/// @notice A program has at least one node.
error TaskMarketZeroNodeCount();

/// @notice A dataset has at least one example.
error TaskMarketZeroDatasetSize();

/// @notice A batch has at least one example.
error TaskMarketZeroBatchSize();

/// @notice The bisection arity must be a power of two in [2, 64].
error TaskMarketBadArity(uint64 arity);

/// @notice Each side of a game needs a non-zero clock.
error TaskMarketZeroClock();

/// @notice A task takes at least one trainer.
error TaskMarketZeroSlots();

/// @notice A task takes at most `maxSlots` trainers on slots (`TaskMarket.MAX_SLOTS`): the bond is sized
///         for `slots - 1` games.
error TaskMarketTooManySlots(uint32 slots, uint32 maxSlots);

/// @notice The deadlines must satisfy `timestamp < joinDeadline <= submitDeadline <= disputeDeadline`.
error TaskMarketBadDeadlines(
    uint256 timestamp, uint64 joinDeadline, uint64 submitDeadline, uint64 disputeDeadline
);

/// @notice Joining must stay open at least `minWindow` seconds after posting (`joinDeadline - timestamp`
///         is `window`): trainers other than the client's own must have time to see the task and join.
error TaskMarketJoinWindowTooShort(uint256 window, uint256 minWindow);

/// @notice Disputes must stay open at least `minWindow` seconds after the submit deadline
///         (`disputeDeadline - submitDeadline` is `window`): a result submitted in the last second must
///         still be disputable by a trainer that sees it.
error TaskMarketDisputeWindowTooShort(uint256 window, uint256 minWindow);

/// @notice Each side's clock (`clock` seconds) must cover every move of the longest game with
///         `MIN_MOVE_TIME` for each: `minClock = roundBound(cfg) * MIN_MOVE_TIME`.
error TaskMarketClockTooShort(uint64 clock, uint256 minClock);

/// @notice The largest decision proof a game of this spec can need may take `proofGas` gas
///         (`proofGasBound(spec)`: it grows with `batchSize`, `datasetSize` and `nodeCount`); one
///         transaction may spend at most `maxProofGas` on it (`TaskMarket.MAX_PROOF_GAS`), else an
///         honest defender might be unable to prove its input.
error TaskMarketProofTooLarge(uint256 proofGas, uint256 maxProofGas);

/// @notice The spec asks a bond of `bond` per trainer; covering every game a group can lose takes
///         `minBond`.
error TaskMarketBondBelowMinimum(uint256 bond, uint256 minBond);

// ---- tasks -----------------------------------------------------------------------------------

/// @notice Task `taskId` is `status` (None: no such task), which does not allow this call.
error TaskMarketTaskNotOpen(uint256 taskId, ITaskMarket.TaskStatus status);

// ---- join ------------------------------------------------------------------------------------

/// @notice Joining task `taskId` closed at `joinDeadline`; it is `timestamp`.
error TaskMarketJoinClosed(uint256 taskId, uint64 joinDeadline, uint256 timestamp);

/// @notice All `slots` slots of task `taskId` are taken.
error TaskMarketTaskFull(uint256 taskId, uint32 slots);

/// @notice `trainer` already joined task `taskId`.
error TaskMarketAlreadyJoined(uint256 taskId, address trainer);

/// @notice `join` was sent `sent` wei; the task's bond is `required`.
error TaskMarketBondTooSmall(uint256 sent, uint256 required);

// ---- submit ----------------------------------------------------------------------------------

/// @notice `trainer` has not joined task `taskId`.
error TaskMarketNotJoined(uint256 taskId, address trainer);

/// @notice Submissions to task `taskId` closed at `submitDeadline`; it is `timestamp`.
error TaskMarketSubmitClosed(uint256 taskId, uint64 submitDeadline, uint256 timestamp);

/// @notice `trainer` already submitted to task `taskId`, into group `group`.
error TaskMarketAlreadySubmitted(uint256 taskId, address trainer, uint32 group);

/// @notice A checkpoint list of task `taskId` has `expected` state roots (`steps / checkpointInterval + 1`,
///         steps 0 to `steps`); `count` were submitted.
error TaskMarketCheckpointCount(uint256 taskId, uint256 count, uint256 expected);

/// @notice Every checkpoint list of task `taskId` starts at its initial state root `initialStateRoot`;
///         the submitted one starts at `stateRoot`.
error TaskMarketInitialStateMismatch(uint256 taskId, bytes32 stateRoot, bytes32 initialStateRoot);

// ---- openDispute -----------------------------------------------------------------------------

/// @notice Disputes on task `taskId` closed at `disputeDeadline`; it is `timestamp`.
error TaskMarketDisputeClosed(uint256 taskId, uint64 disputeDeadline, uint256 timestamp);

/// @notice `trainer` has not submitted a result to task `taskId`, so it cannot play a dispute.
error TaskMarketNotSubmitted(uint256 taskId, address trainer);

/// @notice Both trainers submitted the same result (`group` of task `taskId`): nothing to dispute.
error TaskMarketSameGroup(uint256 taskId, uint32 group);

/// @notice `trainer` lost a game on task `taskId` and plays no more.
error TaskMarketTrainerEliminated(uint256 taskId, address trainer);

/// @notice `defender` and `challenger` already played each other on task `taskId` (in either role).
error TaskMarketAlreadyPlayed(uint256 taskId, address defender, address challenger);

// ---- settleDispute ---------------------------------------------------------------------------

/// @notice Game `gameId` was not opened by this market.
error TaskMarketUnknownDispute(uint256 gameId);

/// @notice Game `gameId` was already settled.
error TaskMarketDisputeAlreadySettled(uint256 gameId);

/// @notice Game `gameId` has not ended.
error TaskMarketGamePending(uint256 gameId);

// ---- finalize --------------------------------------------------------------------------------

/// @notice Task `taskId` still has `activeGames` games running; settle them first.
error TaskMarketGamesActive(uint256 taskId, uint32 activeGames);

/// @notice Task `taskId` cannot be finalized yet: it is `timestamp`, the dispute deadline is
///         `disputeDeadline`, and `liveGroups` groups are live. Never earlier: an outside challenger may
///         still come.
error TaskMarketFinalizeTooEarly(
    uint256 taskId, uint256 timestamp, uint64 disputeDeadline, uint32 liveGroups
);

// ---- payments --------------------------------------------------------------------------------

/// @notice `account` has no credit to withdraw.
error TaskMarketNothingToWithdraw(address account);

/// @notice Sending `amount` wei to `account` failed (its credit is restored by the revert).
error TaskMarketTransferFailed(address account, uint256 amount);
error TaskMarketAlreadyCommitted(uint256 taskId, address trainer);
error TaskMarketNotCommitted(uint256 taskId, address trainer);
error TaskMarketRevealMismatch(uint256 taskId, address trainer);
error TaskMarketRevealClosed(uint256 taskId, uint256 opensAfter, uint256 closesAt, uint256 timestamp);
error TaskMarketCopiedResult(uint256 taskId, uint32 group, uint256 groupCreatedBlock, uint256 committedBlock);
error TaskMarketEntryClosed(uint256 taskId, uint256 closesAt, uint256 timestamp);
error TaskMarketNotFinalized(uint256 taskId);
error TaskMarketNothingToClaim(uint256 taskId, address trainer);
