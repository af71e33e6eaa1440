// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "./IDisputeGame.sol";

/// @title IGameOwner
/// @notice What a dispute game asks its owner (the account that opened it), when that owner is a
///         contract: who else may move for a side. A group of trainers that submitted the same result
///         plays as one side, so that any honest member can carry the game when the first member
///         (the side's named player) does not move.
interface IGameOwner {
    /// @notice True iff `account` may move for `side` of game `gameId` besides the named player.
    function isTeammate(uint256 gameId, IDisputeGame.Side side, address account) external view returns (bool);
}
