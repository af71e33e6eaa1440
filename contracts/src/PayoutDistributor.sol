// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IPayoutDistributor} from "./interfaces/IPayoutDistributor.sol";
import {
    PayoutDistributorAlreadyClaimed,
    PayoutDistributorAlreadySwept,
    PayoutDistributorBadDeadline,
    PayoutDistributorBadLeafCount,
    PayoutDistributorClaimClosed,
    PayoutDistributorIndexOutOfRange,
    PayoutDistributorPoolTooLarge,
    PayoutDistributorRootMismatch,
    PayoutDistributorSweepTooEarly,
    PayoutDistributorTransferFailed,
    PayoutDistributorUnknown,
    PayoutDistributorZeroAccount,
    PayoutDistributorZeroAmount,
    PayoutDistributorZeroPool,
    PayoutDistributorZeroRefundTo,
    PayoutDistributorZeroTopHash
} from "./lib/PayoutErrors.sol";
import {PayoutTreeLib} from "./lib/PayoutTreeLib.sol";

/// @title PayoutDistributor
/// @notice Pays escrowed pools out by Merkle-sum trees whose total is the escrow (IPayoutDistributor).
contract PayoutDistributor is IPayoutDistributor {
    /// @inheritdoc IPayoutDistributor
    uint256 public constant MAX_LEAVES = 1 << 16;
    /// @inheritdoc IPayoutDistributor
    uint256 public constant MAX_POOL = PayoutTreeLib.MAX_SUM;
    /// @inheritdoc IPayoutDistributor
    uint256 public constant MIN_CLAIM_PERIOD = 1 hours;
    /// @inheritdoc IPayoutDistributor
    uint256 public constant MAX_CLAIM_PERIOD = 4 * 365 days;

    /// @dev Three slots; a claim reads the first two and writes the second. `claimDeadline != 0` marks a
    ///      distribution that exists (it is always in the future when created).
    struct Distribution {
        bytes32 root;
        uint96 claimed;
        uint64 claimDeadline;
        uint32 leafCount;
        bool swept;
        address refundTo;
        uint96 total;
    }

    mapping(uint256 id => Distribution) private _distributions;
    /// @dev Bit `i % 256` of word `i / 256` is set while leaf `i` is unclaimed (set for `i < leafCount` at
    ///      creation, so no claim writes a fresh word).
    mapping(uint256 id => mapping(uint256 word => uint256 bits)) private _unclaimed;
    uint256 private _count;

    // ---- create ----------------------------------------------------------------------------------

    /// @inheritdoc IPayoutDistributor
    function createDistribution(bytes32 topHash, uint64 leafCount, address refundTo, uint64 claimDeadline)
        external
        payable
        returns (uint256 id)
    {
        if (msg.value == 0) revert PayoutDistributorZeroPool();
        if (msg.value > MAX_POOL) revert PayoutDistributorPoolTooLarge(msg.value, MAX_POOL);
        if (leafCount == 0 || leafCount > MAX_LEAVES) revert PayoutDistributorBadLeafCount(leafCount, MAX_LEAVES);
        if (topHash == bytes32(0)) revert PayoutDistributorZeroTopHash();
        if (refundTo == address(0)) revert PayoutDistributorZeroRefundTo();
        uint256 earliest = block.timestamp + MIN_CLAIM_PERIOD;
        uint256 latest = block.timestamp + MAX_CLAIM_PERIOD;
        if (claimDeadline < earliest || claimDeadline > latest) {
            revert PayoutDistributorBadDeadline(claimDeadline, earliest, latest);
        }
        bytes32 root = PayoutTreeLib.rootOf(topHash, leafCount, msg.value);
        id = ++_count;
        _distributions[id] = Distribution({
            root: root,
            claimed: 0,
            claimDeadline: claimDeadline,
            leafCount: uint32(leafCount),
            swept: false,
            refundTo: refundTo,
            total: uint96(msg.value)
        });
        mapping(uint256 => uint256) storage bits = _unclaimed[id];
        uint256 full = leafCount >> 8;
        // At most MAX_LEAVES / 256 = 256 words.
        for (uint256 w; w < full; ++w) {
            bits[w] = type(uint256).max;
        }
        uint256 rest = leafCount & 255;
        if (rest != 0) bits[full] = (uint256(1) << rest) - 1;
        emit DistributionCreated(id, msg.sender, root, topHash, leafCount, msg.value, refundTo, claimDeadline);
    }

    // ---- claim -----------------------------------------------------------------------------------

    /// @inheritdoc IPayoutDistributor
    function claim(uint256 id, uint256 index, address account, uint256 amount, ProofStep[] calldata proof)
        external
    {
        Distribution storage d = _distributions[id];
        {
            uint64 deadline = d.claimDeadline;
            if (deadline == 0) revert PayoutDistributorUnknown(id);
            if (block.timestamp >= deadline) revert PayoutDistributorClaimClosed(id, deadline, block.timestamp);
        }
        uint256 count = d.leafCount;
        if (index >= count) revert PayoutDistributorIndexOutOfRange(id, index, count);
        if (amount == 0) revert PayoutDistributorZeroAmount(id, index);
        if (account == address(0)) revert PayoutDistributorZeroAccount(id, index);
        mapping(uint256 => uint256) storage unclaimed = _unclaimed[id];
        uint256 bits = unclaimed[index >> 8];
        if (bits & (uint256(1) << (index & 255)) == 0) revert PayoutDistributorAlreadyClaimed(id, index);
        {
            bytes32 computed = PayoutTreeLib.computeRoot(count, index, account, amount, proof);
            bytes32 root = d.root;
            if (computed != root) revert PayoutDistributorRootMismatch(id, computed, root);
        }
        unclaimed[index >> 8] = bits & ~(uint256(1) << (index & 255));
        // The root binds the sum of the proof to the escrow, so amount <= total < 2^96 and
        // claimed + amount <= total: neither the cast nor the addition can overflow.
        d.claimed += uint96(amount);
        emit Claimed(id, index, account, amount, msg.sender);
        (bool ok,) = account.call{value: amount}("");
        if (!ok) revert PayoutDistributorTransferFailed(account, amount);
    }

    // ---- sweep -----------------------------------------------------------------------------------

    /// @inheritdoc IPayoutDistributor
    function sweep(uint256 id) external {
        Distribution storage d = _distributions[id];
        uint64 deadline = d.claimDeadline;
        if (deadline == 0) revert PayoutDistributorUnknown(id);
        if (block.timestamp < deadline) revert PayoutDistributorSweepTooEarly(id, deadline, block.timestamp);
        if (d.swept) revert PayoutDistributorAlreadySwept(id);
        uint256 amount = uint256(d.total) - d.claimed;
        address to = d.refundTo;
        d.swept = true;
        emit Swept(id, to, amount);
        if (amount != 0) {
            (bool ok,) = to.call{value: amount}("");
            if (!ok) revert PayoutDistributorTransferFailed(to, amount);
        }
    }

    // ---- views -----------------------------------------------------------------------------------

    /// @inheritdoc IPayoutDistributor
    function distribution(uint256 id) external view returns (DistributionView memory) {
        Distribution storage d = _existing(id);
        return DistributionView({
            root: d.root,
            total: d.total,
            claimed: d.claimed,
            refundTo: d.refundTo,
            claimDeadline: d.claimDeadline,
            leafCount: d.leafCount,
            swept: d.swept
        });
    }

    /// @inheritdoc IPayoutDistributor
    function isClaimed(uint256 id, uint256 index) external view returns (bool) {
        Distribution storage d = _existing(id);
        if (index >= d.leafCount) return false;
        return _unclaimed[id][index >> 8] & (uint256(1) << (index & 255)) == 0;
    }

    /// @inheritdoc IPayoutDistributor
    function claimedTotal(uint256 id) external view returns (uint256) {
        return _existing(id).claimed;
    }

    /// @inheritdoc IPayoutDistributor
    function distributionCount() external view returns (uint256) {
        return _count;
    }

    /// @inheritdoc IPayoutDistributor
    function rootOf(bytes32 topHash, uint64 leafCount, uint256 total) external view returns (bytes32) {
        return PayoutTreeLib.rootOf(topHash, leafCount, total);
    }

    function _existing(uint256 id) private view returns (Distribution storage d) {
        d = _distributions[id];
        if (d.claimDeadline == 0) revert PayoutDistributorUnknown(id);
    }
}
