// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ITraceReferee} from "../interfaces/ITraceReferee.sol";

// Errors of TraceReferee (docs/game.md section 2.9). File-level, so that off-chain decoders share one
// definition per selector.

/// @notice No trace game has id `gameId`.
error TraceRefereeUnknown(uint256 gameId);
/// @notice `fn` is not a function id of TracePrograms (0 .. FUNCTIONS - 1).
error TraceRefereeNoFunction(uint256 fn);
/// @notice A parameter of `open` is out of range: `field` names it (1 players, 2 values, 3 clock), `value`
///         is what was given.
error TraceRefereeBadParams(uint256 field, uint256 value);
/// @notice The move belongs to stage `expected`; the game is in stage `actual`.
error TraceRefereeWrongStage(uint256 gameId, ITraceReferee.Stage expected, ITraceReferee.Stage actual);
/// @notice The game is resolved: nobody can be timed out.
error TraceRefereeNotPlaying(uint256 gameId);
/// @notice `caller` may not move now; `expected` is the player to move.
error TraceRefereeNotYourTurn(uint256 gameId, address caller, address expected);
/// @notice The mover's clock ran out at `deadline`; the game can only be ended by `timeout`.
error TraceRefereeClockExpired(uint256 gameId, uint256 deadline);
/// @notice `timeout` was called while the mover still has time until `deadline`.
error TraceRefereeClockRunning(uint256 gameId, uint256 deadline);
/// @notice The trace has `got` bytes; the function's program makes it `expected` (8 per step).
error TraceRefereeLength(uint256 got, uint256 expected);
/// @notice The trace's last step (its fp32 output) is `last`, not the defender's value `value`.
error TraceRefereeInconsistent(uint64 last, uint32 value);
/// @notice The trace passed back hashes to `computed`, not to the defender's claimed `expected`.
error TraceRefereeMismatch(bytes32 computed, bytes32 expected);
/// @notice Step index `step` is not below the program's step count `steps`.
error TraceRefereeStep(uint256 step, uint256 steps);
/// @notice `caller` asked for the outcome of game `gameId`, which `owner` opened.
error TraceRefereeNotOwner(uint256 gameId, address caller, address owner);
