// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../interfaces/IElementReferee.sol";

// Errors of ElementReferee (docs/game.md section 2.7). File-level, so that off-chain decoders share
// one definition per selector.

/// @notice No element game has id `gameId`.
error ElementRefereeUnknown(uint256 gameId);
/// @notice A parameter of `open` is out of range: `field` names it (1 op code, 2 input count,
///         3 players, 4 outputs, 5 clock, 6 arity, 7 scalar), `value` is what was given.
error ElementRefereeBadParams(uint256 field, uint256 value);
/// @notice The move belongs to stage `expected`; the game is in stage `actual`.
error ElementRefereeWrongStage(uint256 gameId, IElementReferee.Stage expected, IElementReferee.Stage actual);
/// @notice The game is in stage `stage`, where nobody can be timed out.
error ElementRefereeNotPlaying(uint256 gameId, IElementReferee.Stage stage);
/// @notice `caller` may not move now; `expected` is the player to move.
error ElementRefereeNotYourTurn(uint256 gameId, address caller, address expected);
/// @notice The mover's clock ran out at `deadline`; the game can only be ended by `timeout`.
error ElementRefereeClockExpired(uint256 gameId, uint256 deadline);
/// @notice `timeout` was called while the mover still has time until `deadline`.
error ElementRefereeClockRunning(uint256 gameId, uint256 deadline);
/// @notice A list in the move has `got` entries; the move needs `expected`.
error ElementRefereeWidth(uint256 got, uint256 expected);
/// @notice An opened header implies the tensor commitment `computed`, not the committed `expected`
///         (`tensor`: 0 the output, 1 + k input k).
error ElementRefereeHeaderMismatch(uint256 tensor, bytes32 computed, bytes32 expected);
/// @notice Tensor `tensor` (0 the output, 1 + k input k) has dtype `got`; the operator needs `expected`.
error ElementRefereeDtype(uint256 tensor, uint8 got, uint8 expected);
/// @notice Dimension `dim` of tensor `tensor` (0 the output, 1 + k input k; dim = 2^256 - 1: the number
///         of dimensions) is `got`; broadcasting the inputs makes it `expected`.
error ElementRefereeShape(uint256 tensor, uint256 dim, uint256 got, uint256 expected);
/// @notice The output header (dtype and shape) hashes to `computed`, not to the one the defender opened.
error ElementRefereeHeaderDiffers(bytes32 computed, bytes32 expected);
/// @notice The two output data roots are equal under equal headers (only equal commitments could do that).
error ElementRefereeNoDifference(uint256 gameId);
/// @notice Entry `index` of a descent move lies at a padding position and must be PAD.
error ElementRefereePaddingNode(uint256 index);
/// @notice The posted nodes fold (at the top: to `listRoot(K, fold)`) to `computed`, not to the mover's
///         committed node or data root `expected`.
error ElementRefereeFoldMismatch(bytes32 computed, bytes32 expected);
/// @notice The opponent's list or chunk, passed back, hashes to `computed`, not to what it posted.
error ElementRefereeOpponentMismatch(bytes32 computed, bytes32 expected);
/// @notice The chunk's leaf hash is `computed`, not the mover's differing leaf `expected`.
error ElementRefereeChunkMismatch(bytes32 computed, bytes32 expected);
/// @notice The chunk is `got` bytes long; the output's shape makes chunk `j` `expected` bytes.
error ElementRefereeChunkLength(uint256 got, uint256 expected);
/// @notice `caller` asked for the outcome of element game `gameId`, which `owner` opened: only the
///         opener's own games decide anything for it.
error ElementRefereeNotOwner(uint256 gameId, address caller, address owner);
/// @notice Input `tensor` (1-based, as in ElementRefereeDtype) has `dtype`, the one the operator's spec
///         takes: the element phase applies, and the game goes on by `openHeaders`.
error ElementRefereeApplicable(uint256 tensor, uint8 dtype);
/// @notice Only the DotReferee this referee deployed may hand games over (`caller` is not it).
error ElementRefereeNotDot(address caller);
/// @notice The argument bytes given hash (SHA-256) to `computed`, not to the node's `expected` argument hash.
error ElementRefereeArgsMismatch(uint256 gameId, bytes32 computed, bytes32 expected);
