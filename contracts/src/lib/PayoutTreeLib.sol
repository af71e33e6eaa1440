// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IPayoutDistributor} from "../interfaces/IPayoutDistributor.sol";
import {MerkleLib} from "./MerkleLib.sol";
import {PayoutDistributorProofLength, PayoutDistributorSumTooLarge} from "./PayoutErrors.sol";

/// @title PayoutTreeLib
/// @notice Merkle-sum payout trees of docs/commitments.md, "Payout trees": leaf
///         `H(0x10 || account(20) || u256(amount))` with sum `amount`; node
///         `H(0x11 || lh || u256(ls) || rh || u256(rs))` with sum `ls + rs`; padding `(0, 0)`, in the
///         padded shape of section 2; root `H(0x12 || u64(n) || topHash || u256(total))`.
/// @dev Hashes go straight to the SHA-256 precompile (60 + 12 per input word), on scratch memory past
///      the free memory pointer, which is not moved: nothing is allocated while the buffer is in use.
///      The precompile fails only when out of gas; that reverts with empty data, as `sha256` does.
///      Functions are `view` only because solc counts every `staticcall` as a state read.
library PayoutTreeLib {
    /// @notice First byte of a payout leaf hash input.
    uint256 internal constant LEAF_PREFIX = 0x10;
    /// @notice First byte of a payout node hash input.
    uint256 internal constant NODE_PREFIX = 0x11;
    /// @notice First byte of a payout root hash input.
    uint256 internal constant ROOT_PREFIX = 0x12;
    /// @notice Largest amount or sum a tree may hold: 2^96 - 1 wei. With at most 16 steps of at most this
    ///         much each, a folded sum stays below 2^101, so the fold's additions cannot overflow; a
    ///         claim with a larger term is refused.
    uint256 internal constant MAX_SUM = 0xffffffffffffffffffffffff;

    /// @notice `H(0x12 || u64(count) || topHash || u256(total))`; the caller keeps `count < 2^64`.
    function rootOf(bytes32 topHash, uint256 count, uint256 total) internal view returns (bytes32 root) {
        assembly ("memory-safe") {
            // 73-byte input at p + 23 .. p + 95, p the free memory pointer: prefix, u64 count, top, total.
            let p := mload(0x40)
            mstore(p, or(shl(64, ROOT_PREFIX), and(count, 0xffffffffffffffff)))
            mstore(add(p, 0x20), topHash)
            mstore(add(p, 0x40), total)
            if iszero(staticcall(gas(), 0x02, add(p, 0x17), 73, 0x00, 0x20)) { revert(0x00, 0x00) }
            root := mload(0x00)
        }
    }

    /// @notice The payout root implied by leaf `(account, amount)` at `index` and its proof, in a tree of
    ///         `count` leaves (`index < count` is the caller's check): the folded top hash under
    ///         `rootOf(top, count, sum)`, with `sum` the amount plus every step's sum.
    /// @dev Reverts `PayoutDistributorProofLength` unless `proof.length == depth(count)`, and
    ///      `PayoutDistributorSumTooLarge` (the first such value) if the amount or a step's sum exceeds
    ///      `MAX_SUM`: the sums are OR-ed as they are folded and checked once, after the fold.
    function computeRoot(
        uint256 count,
        uint256 index,
        address account,
        uint256 amount,
        IPayoutDistributor.ProofStep[] calldata proof
    ) internal view returns (bytes32 root) {
        uint256 d = MerkleLib.depth(count);
        if (proof.length != d) revert PayoutDistributorProofLength(proof.length, d);
        uint256 bits = amount;
        assembly ("memory-safe") {
            // Buffer at p (the free memory pointer, not moved): the node input 0x11 || lh || ls || rh || rs
            // is the 129 bytes p + 31 .. p + 159; `base` = p + 32 holds the left child (hash, then sum) and
            // base + 0x40 the right one, the layout of a calldata ProofStep. `side` (0 or 0x40) says where
            // the running node goes at this level.
            let p := mload(0x40)
            let base := add(p, 0x20)
            // The leaf: 0x10 || account || amount, 53 bytes from p + 31; its hash lands in its half.
            mstore(p, LEAF_PREFIX)
            mstore(base, shl(96, account))
            mstore(add(p, 0x34), amount)
            let side := shl(6, and(index, 1))
            let at := add(base, side)
            if iszero(staticcall(gas(), 0x02, add(p, 0x1f), 53, at, 0x20)) { revert(0x00, 0x00) }
            mstore(add(at, 0x20), amount)
            mstore(p, NODE_PREFIX)
            let s := amount
            let end := add(proof.offset, shl(6, proof.length))
            for { let q := proof.offset } lt(q, end) { q := add(q, 0x40) } {
                let sibSum := calldataload(add(q, 0x20))
                bits := or(bits, sibSum)
                // The sibling's hash and sum, in one copy, into the other half.
                calldatacopy(add(base, xor(side, 0x40)), q, 0x40)
                // Wraps only if some term is 2^96 or more, and then the claim is refused below.
                s := add(s, sibSum)
                index := shr(1, index)
                side := shl(6, and(index, 1))
                at := add(base, side)
                if iszero(staticcall(gas(), 0x02, add(p, 0x1f), 129, at, 0x20)) {
                    revert(0x00, 0x00)
                }
                mstore(add(at, 0x20), s)
            }
            // The root: 0x12 || u64(count) || top || u256(s), 73 bytes from p + 23 (top moved to p + 0x20).
            let top := mload(at)
            mstore(p, or(shl(64, ROOT_PREFIX), and(count, 0xffffffffffffffff)))
            mstore(add(p, 0x20), top)
            mstore(add(p, 0x40), s)
            if iszero(staticcall(gas(), 0x02, add(p, 0x17), 73, 0x00, 0x20)) { revert(0x00, 0x00) }
            root := mload(0x00)
        }
        // Every term below 2^96 (so at most 17 of them cannot wrap the sum); else name the first too large.
        if (bits > MAX_SUM) revert PayoutDistributorSumTooLarge(_firstTooLarge(amount, proof), MAX_SUM);
    }

    /// @dev The amount, or else the first step sum, over `MAX_SUM` (the slow path of a refused claim).
    function _firstTooLarge(uint256 amount, IPayoutDistributor.ProofStep[] calldata proof)
        private
        pure
        returns (uint256)
    {
        if (amount > MAX_SUM) return amount;
        for (uint256 k; k < proof.length; ++k) {
            if (proof[k].sum > MAX_SUM) return proof[k].sum;
        }
        return 0; // unreachable: the caller saw a term over MAX_SUM
    }
}
