// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title IPayoutDistributor
/// @notice Escrows a pool of wei and pays it out by a Merkle-sum tree (docs/commitments.md, "Payout
///         trees"): leaf `i` is `(account, amount)`, every node commits to both children's hashes and
///         sums, and the distribution's root `H(0x12 || u64(leafCount) || topHash || u256(msg.value))`
///         is built by the contract from the escrowed value itself. A claim folds its leaf and proof to
///         a root with the sum the proof implies, so only a tree whose leaves add up to exactly the
///         escrow can verify any claim: a tree that promises more than the pool pays nothing, and its
///         pool is swept back after the deadline.
///
///         Rules:
///         - `createDistribution` escrows `msg.value` (1 .. `MAX_POOL` wei) for a tree of 1 ..
///           `MAX_LEAVES` leaves; claims are open while `block.timestamp < claimDeadline`, and
///           `claimDeadline` lies `MIN_CLAIM_PERIOD` .. `MAX_CLAIM_PERIOD` seconds after creation.
///         - `claim` pays leaf `index`'s amount to the leaf's account, at most once per leaf (a bitmap);
///           anyone may submit it (a relayer pays the gas, the account gets the money). Leaves of amount
///           0, of the zero address, and padding positions (`index >= leafCount`) are never claimable.
///         - `sweep`, from `claimDeadline` on, once, by anyone: sends what was not claimed to `refundTo`.
///           Claims and sweep never overlap (claims end at the second sweeping starts), so nothing is
///           paid twice and nothing stays locked.
///
///         Payment design: the claim is the pull. The account is fixed by the tree, so the contract
///         sends the amount straight to it (no credit and `withdraw` step: that would cost the claimant
///         a second transaction and a fresh storage slot), after the bitmap and the claimed total are
///         final (checks, effects, then the one external call). A re-entrant call sees the leaf
///         claimed. An account that refuses ether makes its claim revert with nothing changed; its
///         amount is swept to `refundTo` at the deadline.
/// @dev Funds: `address(this).balance == sum over unswept distributions of (total - claimed)` at all
///      times (plus any ether forced in by `selfdestruct`, which no rule pays out). The creator prepays
///      the bitmap (one storage word per 160 leaves, flags set = unclaimed, and the sum paid from those
///      leaves in the word's high 96 bits), so a claim writes one word that is already non-zero and
///      nothing else: every claim costs the same, and no claimant pays for a fresh storage word.
interface IPayoutDistributor {
    /// @notice One proof step: the sibling node's hash and sum, from the leaf level upward. A padding
    ///         sibling is `(0, 0)`.
    struct ProofStep {
        bytes32 hash;
        uint256 sum;
    }

    /// @notice A distribution as stored. `root` binds `(topHash, leafCount, total)`; `claimed` is the sum
    ///         of the amounts paid so far; after `swept`, `total - claimed` went to `refundTo`.
    struct DistributionView {
        bytes32 root;
        uint256 total;
        uint256 claimed;
        address refundTo;
        uint64 claimDeadline;
        uint32 leafCount;
        bool swept;
    }

    /// @notice Distribution `id` escrows `total` wei for the tree `(topHash, leafCount)`, under `root`.
    event DistributionCreated(
        uint256 indexed id,
        address indexed creator,
        bytes32 root,
        bytes32 topHash,
        uint64 leafCount,
        uint256 total,
        address refundTo,
        uint64 claimDeadline
    );

    /// @notice Leaf `index` of distribution `id` paid `amount` wei to `account` (whoever sent the claim).
    event Claimed(uint256 indexed id, address indexed account, uint256 index, uint256 amount);

    /// @notice Distribution `id` sent its unclaimed `amount` wei (possibly 0) to `refundTo`; it is closed.
    event Swept(uint256 indexed id, address indexed refundTo, uint256 amount);

    /// @notice Escrows `msg.value` for the payout tree with top node hash `topHash` over `leafCount` leaves.
    /// @dev The stored root is `rootOf(topHash, leafCount, msg.value)`: the tree's total is the escrow by
    ///      construction. Writes `ceil(leafCount / 160)` bitmap words (at `MAX_LEAVES`, 410 words).
    ///      Reverts `PayoutDistributorZeroPool`, `PayoutDistributorPoolTooLarge`,
    ///      `PayoutDistributorBadLeafCount`, `PayoutDistributorZeroTopHash`, `PayoutDistributorZeroRefundTo`,
    ///      `PayoutDistributorBadDeadline`, in that order.
    /// @param topHash The tree's top node hash (for one leaf, the leaf hash).
    /// @param leafCount Leaves of the tree, 1 .. `MAX_LEAVES`; it fixes the proof length (its depth).
    /// @param refundTo Receives what is left unclaimed at `claimDeadline`.
    /// @param claimDeadline Claims are accepted while `block.timestamp < claimDeadline`.
    /// @return id The new distribution's id (ids count from 1).
    function createDistribution(bytes32 topHash, uint64 leafCount, address refundTo, uint64 claimDeadline)
        external
        payable
        returns (uint256 id);

    /// @notice Pays leaf `index` of distribution `id`, `(account, amount)`, to `account`; anyone may call.
    /// @dev Reverts `PayoutDistributorUnknown`, `PayoutDistributorClaimClosed`,
    ///      `PayoutDistributorIndexOutOfRange`, `PayoutDistributorZeroAmount`, `PayoutDistributorZeroAccount`,
    ///      `PayoutDistributorAlreadyClaimed`, `PayoutDistributorProofLength`, `PayoutDistributorSumTooLarge`,
    ///      `PayoutDistributorRootMismatch`, in that order, and `PayoutDistributorTransferFailed` when the
    ///      account refuses the ether (then nothing changed).
    /// @param proof The sibling steps from the leaf level upward, exactly the tree's depth of them:
    ///        `ceil(log2 leafCount)`, 0 for one leaf.
    function claim(uint256 id, uint256 index, address account, uint256 amount, ProofStep[] calldata proof)
        external;

    /// @notice Sends what distribution `id` did not pay out to its `refundTo`, and closes it; anyone may call.
    /// @dev Reads `ceil(leafCount / 160)` bitmap words (their paid sums). Reverts `PayoutDistributorUnknown`, `PayoutDistributorSweepTooEarly` (before `claimDeadline`),
    ///      `PayoutDistributorAlreadySwept`, in that order, and `PayoutDistributorTransferFailed` when
    ///      `refundTo` refuses the ether (then nothing changed and it can be retried).
    function sweep(uint256 id) external;

    /// @notice Distribution `id`; reverts `PayoutDistributorUnknown` if there is none.
    function distribution(uint256 id) external view returns (DistributionView memory);

    /// @notice Whether leaf `index` of distribution `id` was paid; false for every `index >= leafCount`.
    /// @dev Reverts `PayoutDistributorUnknown` if there is no distribution `id`.
    function isClaimed(uint256 id, uint256 index) external view returns (bool);

    /// @notice The sum of the amounts distribution `id` paid by claims (a sweep does not count).
    /// @dev Reverts `PayoutDistributorUnknown` if there is no distribution `id`.
    function claimedTotal(uint256 id) external view returns (uint256);

    /// @notice How many distributions were created: ids are `1 .. distributionCount()`.
    function distributionCount() external view returns (uint256);

    /// @notice The payout root `H(0x12 || u64(leafCount) || topHash || u256(total))`.
    /// @dev `view` only because the SHA-256 precompile is reached by `staticcall`; it reads no state.
    function rootOf(bytes32 topHash, uint64 leafCount, uint256 total) external view returns (bytes32);

    /// @notice Most leaves a tree may have (2^16): proofs have at most 16 steps.
    function MAX_LEAVES() external view returns (uint256);

    /// @notice Largest pool (2^96 - 1 wei): every amount and sum of a tree fits in 96 bits.
    function MAX_POOL() external view returns (uint256);

    /// @notice Shortest claim period, seconds from creation to `claimDeadline` (1 hour).
    function MIN_CLAIM_PERIOD() external view returns (uint256);

    /// @notice Longest claim period, seconds from creation to `claimDeadline` (4 * 365 days): a deadline
    ///         in milliseconds by mistake would otherwise lock the unclaimed rest for millennia.
    function MAX_CLAIM_PERIOD() external view returns (uint256);
}
