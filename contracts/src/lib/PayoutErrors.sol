// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

// Errors of the payout distributor (contracts/src/PayoutDistributor.sol) and its tree library
// (contracts/src/lib/PayoutTreeLib.sol). File-level, so that the contract, its tests and off-chain
// decoders share one definition per selector.

// ---- createDistribution ----------------------------------------------------------------------

/// @notice A distribution must escrow a pool: `createDistribution` was sent no value.
error PayoutDistributorZeroPool();

/// @notice A pool of `value` wei exceeds `max` (`PayoutDistributor.MAX_POOL`, 2^96 - 1): every amount and
///         sum of a payout tree must fit in 96 bits.
error PayoutDistributorPoolTooLarge(uint256 value, uint256 max);

/// @notice A payout tree has between 1 and `max` leaves (`PayoutDistributor.MAX_LEAVES`); `leafCount` is not.
error PayoutDistributorBadLeafCount(uint256 leafCount, uint256 max);

/// @notice The top hash is zero, the padding node's hash: no tree with a claimable leaf has it.
error PayoutDistributorZeroTopHash();

/// @notice What is left unclaimed at the deadline goes to `refundTo`; it must not be the zero address.
error PayoutDistributorZeroRefundTo();

/// @notice The claim deadline must lie in `[earliest, latest]`: at least `MIN_CLAIM_PERIOD` and at most
///         `MAX_CLAIM_PERIOD` seconds after the creating block.
error PayoutDistributorBadDeadline(uint64 claimDeadline, uint256 earliest, uint256 latest);

// ---- claim, sweep, views ---------------------------------------------------------------------

/// @notice No distribution has the id `id`.
error PayoutDistributorUnknown(uint256 id);

/// @notice Claims of distribution `id` closed at `claimDeadline`; the block's time is `timestamp`.
error PayoutDistributorClaimClosed(uint256 id, uint64 claimDeadline, uint256 timestamp);

/// @notice Leaf `index` does not exist in distribution `id` of `leafCount` leaves (this covers every
///         padding position).
error PayoutDistributorIndexOutOfRange(uint256 id, uint256 index, uint256 leafCount);

/// @notice A claim of amount zero: padding leaves have sum 0 and are never claimable, and a real leaf
///         of amount 0 pays nothing.
error PayoutDistributorZeroAmount(uint256 id, uint256 index);

/// @notice A claim paying the zero address: such a leaf is never claimable (its amount is swept).
error PayoutDistributorZeroAccount(uint256 id, uint256 index);

/// @notice Leaf `index` of distribution `id` was claimed already.
error PayoutDistributorAlreadyClaimed(uint256 id, uint256 index);

/// @notice A proof carries `got` steps; a tree of its leaf count needs `expected` (its depth).
error PayoutDistributorProofLength(uint256 got, uint256 expected);

/// @notice A claimed amount or a proof step's sum is `sum`, over `max` (2^96 - 1): no tree of a valid pool
///         holds it.
error PayoutDistributorSumTooLarge(uint256 sum, uint256 max);

/// @notice The claim folds to the payout root `computed`, not to distribution `id`'s `expected`: a wrong
///         account, amount, index or proof step, or a tree whose sum is not the escrowed pool.
error PayoutDistributorRootMismatch(uint256 id, bytes32 computed, bytes32 expected);

/// @notice Sending `amount` wei to `to` failed (it refused the ether); nothing changed.
error PayoutDistributorTransferFailed(address to, uint256 amount);

/// @notice Distribution `id` cannot be swept before its claim deadline `claimDeadline` (now `timestamp`).
error PayoutDistributorSweepTooEarly(uint256 id, uint64 claimDeadline, uint256 timestamp);

/// @notice Distribution `id` was swept already.
error PayoutDistributorAlreadySwept(uint256 id);
