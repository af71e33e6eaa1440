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

    /// @notice Leaves per bitmap word: the low 160 bits of word `w` are the unclaimed flags of leaves
    ///         `160 w .. 160 w + 159`, the high 96 bits the sum those leaves have been paid.
    uint256 internal constant LEAVES_PER_WORD = 160;
    uint256 internal constant FLAGS = (uint256(1) << 160) - 1;

    /// @dev Three slots; a claim reads the first two and writes one bitmap word, nothing else: the
    ///      claimed sum lives in the words (`claimed` sums them). `claimDeadline != 0` marks a
    ///      distribution that exists (it is always in the future when created).
    struct Distribution {
        bytes32 root;
        uint64 claimDeadline;
        uint32 leafCount;
        bool swept;
        uint96 total;
        address refundTo;
    }

    mapping(uint256 id => Distribution) private _distributions;
    /// @dev Per distribution, `ceil(leafCount / 160)` words: flags set at creation for every leaf (so no
    ///      claim writes a fresh word), cleared by its claim, which adds its amount to the word's sum.
    mapping(uint256 id => mapping(uint256 word => uint256 flagsAndPaid)) private _words;
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
        if (leafCount == 0 || leafCount > MAX_LEAVES) {
            revert PayoutDistributorBadLeafCount(leafCount, MAX_LEAVES);
        }
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
            claimDeadline: claimDeadline,
            leafCount: uint32(leafCount),
            swept: false,
            total: uint96(msg.value),
            refundTo: refundTo
        });
        mapping(uint256 => uint256) storage words = _words[id];
        uint256 full = leafCount / LEAVES_PER_WORD;
        // At most 409 full words (MAX_LEAVES / 160), then one partial word.
        for (uint256 w; w < full; ++w) {
            words[w] = FLAGS;
        }
        uint256 rest = leafCount % LEAVES_PER_WORD;
        if (rest != 0) words[full] = (uint256(1) << rest) - 1;
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
            if (block.timestamp >= deadline) {
                revert PayoutDistributorClaimClosed(id, deadline, block.timestamp);
            }
        }
        uint256 count = d.leafCount;
        if (index >= count) revert PayoutDistributorIndexOutOfRange(id, index, count);
        if (amount == 0) revert PayoutDistributorZeroAmount(id, index);
        if (account == address(0)) revert PayoutDistributorZeroAccount(id, index);
        mapping(uint256 => uint256) storage words = _words[id];
        uint256 word = words[index / LEAVES_PER_WORD];
        uint256 flag = uint256(1) << (index % LEAVES_PER_WORD);
        if (word & flag == 0) revert PayoutDistributorAlreadyClaimed(id, index);
        {
            bytes32 computed = PayoutTreeLib.computeRoot(count, index, account, amount, proof);
            bytes32 root = d.root;
            if (computed != root) revert PayoutDistributorRootMismatch(id, computed, root);
        }
        unchecked {
            // The root binds the proof's sum to the escrow, so the word's paid sum plus amount is at most
            // the total, below 2^96: the addition stays in the word's high 96 bits.
            words[index / LEAVES_PER_WORD] = (word & ~flag) + (amount << 160);
        }
        emit Claimed(id, account, index, amount);
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
        uint256 amount = d.total - _claimed(id, d.leafCount);
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
            claimed: _claimed(id, d.leafCount),
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
        return _words[id][index / LEAVES_PER_WORD] & (uint256(1) << (index % LEAVES_PER_WORD)) == 0;
    }

    /// @inheritdoc IPayoutDistributor
    function claimedTotal(uint256 id) external view returns (uint256) {
        return _claimed(id, _existing(id).leafCount);
    }

    /// @inheritdoc IPayoutDistributor
    function distributionCount() external view returns (uint256) {
        return _count;
    }

    /// @inheritdoc IPayoutDistributor
    function rootOf(bytes32 topHash, uint64 leafCount, uint256 total) external view returns (bytes32) {
        return PayoutTreeLib.rootOf(topHash, leafCount, total);
    }

    /// @dev The sum of the words' paid sums: at most `ceil(MAX_LEAVES / 160) = 410` reads.
    function _claimed(uint256 id, uint256 leafCount) private view returns (uint256 sum) {
        mapping(uint256 => uint256) storage words = _words[id];
        uint256 n = (leafCount + LEAVES_PER_WORD - 1) / LEAVES_PER_WORD;
        for (uint256 w; w < n; ++w) {
            sum += words[w] >> 160;
        }
    }

    function _existing(uint256 id) private view returns (Distribution storage d) {
        d = _distributions[id];
        if (d.claimDeadline == 0) revert PayoutDistributorUnknown(id);
    }
}
