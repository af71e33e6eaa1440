// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "../interfaces/IDotReferee.sol";

// Errors of DotReferee (docs/game.md section 2.8). File-level, so that off-chain decoders share one
// definition per selector.

/// @notice No dot game has id `gameId`.
error DotRefereeUnknown(uint256 gameId);
/// @notice A parameter of `open` is out of range: `field` names it (1 op code, 2 input count, 3 players,
///         4 values, 5 clock, 6 arity, 7 the element or N), `value` is what was given.
error DotRefereeBadParams(uint256 field, uint256 value);
/// @notice The move belongs to stage `expected`; the game is in stage `actual`.
error DotRefereeWrongStage(uint256 gameId, IDotReferee.Stage expected, IDotReferee.Stage actual);
/// @notice The game is resolved: nobody can be timed out.
error DotRefereeNotPlaying(uint256 gameId);
/// @notice `caller` may not move now; `expected` is the player to move.
error DotRefereeNotYourTurn(uint256 gameId, address caller, address expected);
/// @notice The mover's clock ran out at `deadline`; the game can only be ended by `timeout`.
error DotRefereeClockExpired(uint256 gameId, uint256 deadline);
/// @notice `timeout` was called while the mover still has time until `deadline`.
error DotRefereeClockRunning(uint256 gameId, uint256 deadline);
/// @notice A list or index in the move has `got`; the move needs `expected` (an index: below it).
error DotRefereeWidth(uint256 got, uint256 expected);
/// @notice Opened tensor `tensor` (0 the bias, 1 A, 2 B) has `got` at dimension `dim` (2^256 - 1: the
///         number of dimensions); the game's K and N make it `expected`.
error DotRefereeShape(uint256 tensor, uint256 dim, uint256 got, uint256 expected);
/// @notice The claim makes the element `computed`, not the defender's own value `value`.
error DotRefereeInconsistent(uint32 computed, uint32 value);
/// @notice The defender's list, passed back, hashes to `computed`, not to what it posted.
error DotRefereeOpponentMismatch(bytes32 computed, bytes32 expected);
/// @notice The refuting element's magnitude class `key` does not exceed the claimed `claimed`.
error DotRefereeNotGreater(uint16 key, uint16 claimed);
/// @notice `caller` asked for the outcome of game `gameId`, which `owner` opened.
error DotRefereeNotOwner(uint256 gameId, address caller, address owner);
/// @notice An opened header (`tensor` 0 the output's dtype and shape, 1 A, 2 B) hashes to `computed`, not to
///         the element game's `expected`.
error DotRefereeHeader(uint256 tensor, bytes32 computed, bytes32 expected);

/// @notice The trace (or sum) game `traceGame` has no outcome yet: it cannot be settled.
error DotRefereeTracePending(uint256 traceGame);
