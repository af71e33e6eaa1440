// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title IRandomness
/// @notice A source of randomness fixed only after it was requested: `request` returns an id whose
///         value nobody (the requester included) can read in the requesting transaction, and which
///         becomes readable later. The recompute oracle draws oracles and committees from it, so that
///         whoever triggers a draw cannot choose its outcome. A deployment plugs in a VRF behind this
///         interface; `BlockhashRandomness` is the default (docs/game.md, "Randomness").
interface IRandomness {
    /// @notice Life cycle of a request.
    enum RequestStatus {
        None, // no such request
        Pending, // not yet readable
        Ready, // `valueOf` returns the value
        Expired // the value can no longer be read: request again
    }

    /// @notice `requester` asked for randomness `requestId`, readable from block `readyBlock`.
    event RandomnessRequested(uint256 indexed requestId, address indexed requester, uint256 readyBlock);

    /// @notice Requests a value; returns its id (1, 2, ...).
    function request() external returns (uint256 requestId);

    /// @notice Where request `requestId` stands.
    function statusOf(uint256 requestId) external view returns (RequestStatus);

    /// @notice The value of a `Ready` request; reverts otherwise.
    function valueOf(uint256 requestId) external view returns (bytes32);
}
