// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ISumReferee} from "../interfaces/ISumReferee.sol";

// Errors of SumReferee (docs/game.md section 2.10). File-level, so that off-chain decoders share one definition
// per selector.

/// @notice No sum game has id `gameId`.
error SumRefereeUnknown(uint256 gameId);
/// @notice A parameter of `open` is out of range: `field` names it (1 the dims variant, 3 players, 4 values,
///         5 clock, 6 arity), `value` is what was given.
error SumRefereeBadParams(uint256 field, uint256 value);
/// @notice The move belongs to stage `expected`; the game is in stage `actual`.
error SumRefereeWrongStage(uint256 gameId, ISumReferee.Stage expected, ISumReferee.Stage actual);
/// @notice The game is resolved: nobody can be timed out.
error SumRefereeNotPlaying(uint256 gameId);
/// @notice `caller` may not move now; `expected` is the player to move.
error SumRefereeNotYourTurn(uint256 gameId, address caller, address expected);
/// @notice The mover's clock ran out at `deadline`; the game can only be ended by `timeout`.
error SumRefereeClockExpired(uint256 gameId, uint256 deadline);
/// @notice `timeout` was called while the mover still has time until `deadline`.
error SumRefereeClockRunning(uint256 gameId, uint256 deadline);
/// @notice A list or index in the move has `got`; the move needs `expected` (an index: below it).
error SumRefereeWidth(uint256 got, uint256 expected);
/// @notice The output shape has `got` at dimension `dim` (2^256 - 1: the number of dimensions; 2^256 - 2: a
///         reduced dimension that the input does not have, `got` being the input's dimension count) where the
///         sum of the input over the node's dims makes it `expected`.
error SumRefereeShape(uint256 dim, uint256 got, uint256 expected);
/// @notice An opened header (`tensor` 0 the output's dtype and shape, 1 the input's) hashes to `computed`, not
///         to the agreed `expected`; or (computed 0) the input's dtype `expected` is not fp32.
error SumRefereeHeader(uint256 tensor, bytes32 computed, bytes32 expected);
/// @notice The claim makes the element `computed`, not the defender's own value `value`.
error SumRefereeInconsistent(uint32 computed, uint32 value);
/// @notice The defender's list, passed back, hashes to `computed`, not to what it posted.
error SumRefereeOpponentMismatch(bytes32 computed, bytes32 expected);
/// @notice The refuting element `bits` does not disprove the claim: its magnitude class does not exceed the
///         claimed `claimed`, or (an infinite claim) it is neither a NaN nor the opposite infinity.
error SumRefereeNotGreater(uint32 bits, uint16 claimed);
/// @notice The claim's second witness `bits` is not the infinity opposite to its first, `first`.
error SumRefereeWitness(uint32 bits, uint32 first);
/// @notice `caller` asked for the outcome of game `gameId`, which `owner` opened.
error SumRefereeNotOwner(uint256 gameId, address caller, address owner);
