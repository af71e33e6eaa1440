// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "../interfaces/IDisputeGame.sol";

// Errors of DisputeGame (docs/game.md). File-level, so that off-chain decoders share one
// definition per selector.

/// @notice No game has id `gameId`.
error DisputeGameUnknown(uint256 gameId);
/// @notice A config field is out of range: `field` names it (1 steps, 2 checkpointInterval,
///         3 nodeCount, 4 datasetSize, 5 batchSize, 6 arity, 7 clock), `value` is what was given.
error DisputeGameBadConfig(uint256 field, uint256 value);
/// @notice Both players claim the same checkpoint root, or are the same account.
error DisputeGameNoDispute(address defender, address challenger, bytes32 root);
/// @notice The challenger's list equals the defender's below two differing nodes (only a hash
///         collision could do that), or outside the top of the trace descent.
error DisputeGameNoDifference(uint256 gameId);
/// @notice The move belongs to stage `expected`; the game is in stage `actual`.
error DisputeGameWrongStage(uint256 gameId, IDisputeGame.Stage expected, IDisputeGame.Stage actual);
/// @notice The game is in stage `stage`, where this call does nothing.
error DisputeGameNotPlaying(uint256 gameId, IDisputeGame.Stage stage);
/// @notice `caller` may not move now; `expected` is the player to move.
error DisputeGameNotYourTurn(uint256 gameId, address caller, address expected);
/// @notice The mover's clock ran out at `deadline`; the game can only be ended by `timeout`.
error DisputeGameClockExpired(uint256 gameId, uint256 deadline);
/// @notice `timeout` was called while the mover still has time until `deadline`.
error DisputeGameClockRunning(uint256 gameId, uint256 deadline);
/// @notice A list of nodes or roots has `got` entries; the move needs `expected`.
error DisputeGameWidth(uint256 got, uint256 expected);
/// @notice Entry `index` of a descent move lies at a padding position and must be PAD.
error DisputeGamePaddingNode(uint256 index);
/// @notice The posted nodes or roots fold or hash to `computed`, not to the committed `expected`.
error DisputeGameFoldMismatch(bytes32 computed, bytes32 expected);
/// @notice The opponent's list, passed back, hashes to `computed`, not to what it posted.
error DisputeGameOpponentMismatch(bytes32 computed, bytes32 expected);
/// @notice An endpoint root differs from the one both players must share.
error DisputeGameEndpointMismatch(bytes32 given, bytes32 expected);
/// @notice The record's leaf hash is `computed`, not the differing leaf `expected`.
error DisputeGameRecordMismatch(bytes32 computed, bytes32 expected);
/// @notice A record or descriptor is malformed: `reason` (1 tag, 2 length, 3 index, 4 counts,
///         5 slot out of range), `value` the offending value.
error DisputeGameMalformed(uint256 reason, uint256 value);
/// @notice The descriptor hashes to `computed`; the record or the game holds `expected`.
error DisputeGameDescriptorMismatch(bytes32 computed, bytes32 expected);
/// @notice The disputed reference is of kind `kind`; this proof is for kind `expected`.
error DisputeGameWrongReference(uint256 kind, uint256 expected);
/// @notice The proof establishes the value `proven`; the defender's record holds `claimed`.
error DisputeGameValueMismatch(bytes32 proven, bytes32 claimed);
/// @notice The program roots hash to `computed`, not to the task's program hash `expected`.
error DisputeGameProgramMismatch(bytes32 computed, bytes32 expected);
/// @notice A batch of `nbytes` bytes exceeds the `maxBytes` a proof may carry.
error DisputeGameBatchTooLarge(uint256 nbytes, uint256 maxBytes);
/// @notice The state has `count` entries; games handle at most `maxCount`.
error DisputeGameTooManyEntries(uint256 count, uint256 maxCount);
/// @notice The oracle has not decided question `questionId` yet (status `status`).
error DisputeGameOracleNotDone(uint256 questionId, uint8 status);
error DisputeGameNotDeployer(address caller, address deployer);
error DisputeGameMarketAlreadyBound(address market);
error DisputeGameNotMarket(address caller, address market);
/// @notice The deployer already bound the ElementReferee `referee`.
error DisputeGameRefereeAlreadyBound(address referee);
/// @notice The element game `elementGame` has not ended yet.
error DisputeGameElementNotDone(uint256 elementGame);
