// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRandomness} from "./interfaces/IRandomness.sol";

/// @notice `requestId` is unknown, or not readable in this block.
error BlockhashRandomnessNotReady(uint256 requestId, IRandomness.RequestStatus status);
/// @notice The delay must be at least one block and leave the value readable for a while.
error BlockhashRandomnessBadDelay(uint256 delay);

/// @title BlockhashRandomness
/// @notice Randomness from the hash of a block mined after the request: request `id` made in block
///         `b` is `keccak256(blockhash(b + delay), id)`, readable from block `b + delay + 1` for the
///         256 blocks the EVM keeps hashes of, `Expired` after that.
/// @dev Bias (docs/game.md, "Randomness"): nobody can read the value before block `b + delay` is
///      mined, so a requester cannot pick it by choosing when to request or when to read. The
///      proposer of block `b + delay` can: a block hash is a hash of the whole header, which its
///      proposer can vary at will (transaction order, timestamp), so with probability about its
///      share of block proposals an attacker chooses the value outright. A VRF behind `IRandomness`
///      removes that lever.
contract BlockhashRandomness is IRandomness {
    /// @dev Blocks whose hashes the EVM still returns.
    uint256 private constant HASH_WINDOW = 256;

    uint256 private immutable _delay;
    uint256 private _count;
    mapping(uint256 requestId => uint256) private _targetBlock;

    constructor(uint256 delay_) {
        if (delay_ == 0 || delay_ > 64) revert BlockhashRandomnessBadDelay(delay_);
        _delay = delay_;
    }

    /// @inheritdoc IRandomness
    function request() external returns (uint256 requestId) {
        requestId = ++_count;
        uint256 target = block.number + _delay;
        _targetBlock[requestId] = target;
        emit RandomnessRequested(requestId, msg.sender, target + 1);
    }

    /// @inheritdoc IRandomness
    function statusOf(uint256 requestId) public view returns (RequestStatus) {
        uint256 target = _targetBlock[requestId];
        if (target == 0) return RequestStatus.None;
        if (block.number <= target) return RequestStatus.Pending;
        if (block.number > target + HASH_WINDOW) return RequestStatus.Expired;
        return RequestStatus.Ready;
    }

    /// @inheritdoc IRandomness
    function valueOf(uint256 requestId) external view returns (bytes32) {
        RequestStatus status = statusOf(requestId);
        if (status != RequestStatus.Ready) revert BlockhashRandomnessNotReady(requestId, status);
        return keccak256(abi.encode(blockhash(_targetBlock[requestId]), requestId));
    }

    /// @notice Blocks between a request and the block whose hash decides it.
    function delay() external view returns (uint256) {
        return _delay;
    }
}
