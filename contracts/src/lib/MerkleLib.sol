// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {
    MerkleCountTooLarge,
    MerkleIndexOutOfRange,
    MerklePaddingLeaf,
    MerkleProofLength,
    MerkleRootMismatch
} from "./Errors.sol";

/// @title MerkleLib
/// @notice SHA-256 Merkle lists of docs/commitments.md, sections 1 and 2: domain-separated
///         leaf, node and list-root hashes; a padded tree of depth `ceil(log2 n)`; a root that
///         binds the leaf count, hence the proof length.
/// @dev Hot hashes (inner nodes, list roots) go straight to the SHA-256 precompile on scratch
///      memory: 60 + 12 per word, against about 700 gas for `sha256(abi.encodePacked(...))`. The
///      precompile fails only when it runs out of gas; that reverts with empty data, as `sha256` does.
library MerkleLib {
    /// @notice First byte of a leaf hash input: `leaf(data) = H(0x00 || data)`.
    bytes1 internal constant LEAF_PREFIX = 0x00;
    /// @notice First byte of an inner node hash input: `node(l, r) = H(0x01 || l || r)`.
    bytes1 internal constant NODE_PREFIX = 0x01;
    /// @notice First byte of a list root hash input: `listRoot(n, top) = H(0x02 || u64(n) || top)`.
    bytes1 internal constant LIST_PREFIX = 0x02;
    /// @notice First byte of a tensor commitment hash input (docs/commitments.md, section 3).
    bytes1 internal constant TENSOR_PREFIX = 0x03;
    /// @notice The padding leaf; it fills positions `n .. 2^depth - 1` and can never be opened.
    bytes32 internal constant PAD = bytes32(0);
    /// @notice Largest leaf count a list root can encode (`u64`).
    uint256 internal constant MAX_COUNT = type(uint64).max;

    /// @notice `H(0x00 || data)`.
    function leafHash(bytes memory data) internal pure returns (bytes32) {
        return domainHash(LEAF_PREFIX, data);
    }

    /// @notice `H(0x00 || data)` of calldata bytes (one copy into memory, as the precompile needs).
    function leafHashCalldata(bytes calldata data) internal pure returns (bytes32) {
        return domainHash(LEAF_PREFIX, data);
    }

    /// @notice `H(prefix || body)`, hashed in place: `body` is not copied, and is unchanged after.
    function domainHash(bytes1 prefix, bytes memory body) internal pure returns (bytes32) {
        return _asPure(_domainHash)(prefix, body);
    }

    /// @notice `H(0x01 || left || right)`.
    function nodeHash(bytes32 left, bytes32 right) internal pure returns (bytes32) {
        return _asPure(_nodeHash)(left, right);
    }

    /// @notice `H(0x02 || u64(count) || top)`; reverts `MerkleCountTooLarge` unless `count < 2^64`.
    function listRoot(uint256 count, bytes32 top) internal pure returns (bytes32) {
        if (count > MAX_COUNT) revert MerkleCountTooLarge(count);
        return _asPure(_listRoot)(bytes32(count), top);
    }

    /// @notice Proof length of a list of `count` leaves: 0 for `count <= 1`, else `ceil(log2 count)`.
    /// @dev Reverts `MerkleCountTooLarge` unless `count < 2^64` (no such list has a root).
    function depth(uint256 count) internal pure returns (uint256 d) {
        if (count > MAX_COUNT) revert MerkleCountTooLarge(count);
        if (count <= 1) return 0;
        unchecked {
            // Bit length of count - 1, which lies in [1, 2^64 - 2]: halve the search six times.
            uint256 x = count - 1;
            if (x >= 1 << 32) (x, d) = (x >> 32, 32);
            if (x >= 1 << 16) (x, d) = (x >> 16, d + 16);
            if (x >= 1 << 8) (x, d) = (x >> 8, d + 8);
            if (x >= 1 << 4) (x, d) = (x >> 4, d + 4);
            if (x >= 1 << 2) (x, d) = (x >> 2, d + 2);
            if (x >= 1 << 1) d += 1;
            return d + 1;
        }
    }

    /// @notice The list root of `leaves`: the padded tree of section 2, built level by level (a level of
    ///         odd length other than the top is extended with one PAD, so a subtree holding only padding
    ///         is PAD itself), under `listRoot(n, top)`; an empty list's root is `listRoot(0, PAD)`.
    /// @dev Overwrites `leaves` with the levels as it folds them, so that no second array is
    ///      allocated. Reverts `MerkleCountTooLarge` unless `leaves.length < 2^64`.
    function rootInPlace(bytes32[] memory leaves) internal pure returns (bytes32) {
        uint256 n = leaves.length;
        if (n > MAX_COUNT) revert MerkleCountTooLarge(n);
        if (n == 0) return listRoot(0, PAD);
        return listRoot(n, _asPure(_foldLevels)(leaves));
    }

    /// @notice The list root implied by an opening of `leaf` at `index` in a list of `count` leaves.
    /// @dev Reverts `MerkleCountTooLarge` (count >= 2^64), `MerkleIndexOutOfRange` (index >= count,
    ///      which covers every padding position), `MerklePaddingLeaf` (leaf == PAD) and
    ///      `MerkleProofLength` (siblings.length != depth(count)), in that order.
    /// @param siblings The sibling hashes from the leaf level upward.
    function computeRoot(uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        internal
        pure
        returns (bytes32)
    {
        uint256 d = depth(count);
        if (index >= count) revert MerkleIndexOutOfRange(index, count);
        if (leaf == PAD) revert MerklePaddingLeaf();
        if (siblings.length != d) revert MerkleProofLength(siblings.length, d);
        return _asPure(_listRoot)(bytes32(count), _asPure(_fold)(index, leaf, siblings));
    }

    /// @notice Reverts unless the opening proves `leaf` at `index` under `root`.
    /// @dev Reverts as `computeRoot` on a malformed opening, else `MerkleRootMismatch(computed, root)`.
    function verify(bytes32 root, uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        internal
        pure
    {
        bytes32 computed = computeRoot(count, index, leaf, siblings);
        if (computed != root) revert MerkleRootMismatch(computed, root);
    }

    /// @dev `H(0x01 || left || right)` through the SHA-256 precompile; `view` only because solc
    ///      counts every `staticcall` as a state read.
    function _nodeHash(bytes32 left, bytes32 right) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // 65-byte input at 0x1f..0x5f: scratch space plus the free memory pointer slot, restored below.
            let fmp := mload(0x40)
            mstore(0x00, 0x01)
            mstore(0x20, left)
            mstore(0x40, right)
            if iszero(staticcall(gas(), 0x02, 0x1f, 0x41, 0x00, 0x20)) { revert(0x00, 0x00) }
            mstore(0x40, fmp)
            h := mload(0x00)
        }
    }

    /// @dev `H(prefix || body)` through the SHA-256 precompile, reading `body` where it lies.
    function _domainHash(bytes1 prefix, bytes memory body) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // The prefix byte goes into the last byte of body's length word, just before its data, so the
            // input is one contiguous range; the length word is restored after the call.
            let len := mload(body)
            mstore8(add(body, 0x1f), shr(248, prefix))
            if iszero(staticcall(gas(), 0x02, add(body, 0x1f), add(len, 1), 0x00, 0x20)) {
                revert(0x00, 0x00)
            }
            mstore(body, len)
            h := mload(0x00)
        }
    }

    /// @dev Folds `leaf` up through `siblings`: at level k, `node(h, s_k)` if bit k of `index` is 0,
    ///      else `node(s_k, h)`. One assembly loop, `view` for the same reason as `_nodeHash`.
    function _fold(uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        private
        view
        returns (bytes32 h)
    {
        assembly ("memory-safe") {
            // Hash loop on scratch space plus the free memory pointer slot (restored after the loop):
            // the input 0x01 || left || right sits at 0x1f..0x5f, and each output is written straight
            // into the half (left 0x20 if the next index bit is 0, right 0x40 if 1) where it is hashed next.
            let fmp := mload(0x40)
            mstore(0x00, 0x01)
            let hAt := add(0x20, shl(5, and(index, 1)))
            mstore(hAt, leaf)
            let end := add(siblings.offset, shl(5, siblings.length))
            for { let p := siblings.offset } lt(p, end) { p := add(p, 0x20) } {
                mstore(xor(hAt, 0x60), calldataload(p))
                index := shr(1, index)
                let next := add(0x20, shl(5, and(index, 1)))
                if iszero(staticcall(gas(), 0x02, 0x1f, 0x41, next, 0x20)) { revert(0x00, 0x00) }
                hAt := next
            }
            h := mload(hAt)
            mstore(0x40, fmp)
        }
    }

    /// @dev The top node of the padded tree over `leaves` (at least one), folded level by level in
    ///      place: node `i` of a level overwrites entry `i`, after entries `2i` and `2i + 1` were read.
    ///      `view` for the same reason as `_nodeHash`.
    function _foldLevels(bytes32[] memory leaves) private view returns (bytes32 top) {
        assembly ("memory-safe") {
            // Hash loop on scratch space plus the free memory pointer slot (restored after the loop): the
            // input 0x01 || left || right sits at 0x1f..0x5f, the output goes straight into the array.
            let fmp := mload(0x40)
            mstore(0x00, 0x01)
            let base := add(leaves, 0x20)
            for { let width := mload(leaves) } gt(width, 1) {} {
                let half := shr(1, add(width, 1))
                for { let i := 0 } lt(i, half) { i := add(i, 1) } {
                    let at := add(base, shl(6, i))
                    mstore(0x20, mload(at))
                    let right := 0 // PAD past the end of an odd level
                    if lt(add(shl(1, i), 1), width) { right := mload(add(at, 0x20)) }
                    mstore(0x40, right)
                    if iszero(staticcall(gas(), 0x02, 0x1f, 0x41, add(base, shl(5, i)), 0x20)) {
                        revert(0x00, 0x00)
                    }
                }
                width := half
            }
            mstore(0x40, fmp)
            top := mload(base)
        }
    }

    /// @dev `H(0x02 || u64(count) || top)` through the SHA-256 precompile; the caller checked
    ///      `count < 2^64`. `view` for the same reason as `_nodeHash`.
    function _listRoot(bytes32 count, bytes32 top) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // 41-byte input at 0x17..0x3f, inside the scratch space: prefix byte, 8-byte count, top.
            mstore(0x00, or(shl(64, 0x02), count))
            mstore(0x20, top)
            if iszero(staticcall(gas(), 0x02, 0x17, 0x29, 0x00, 0x20)) { revert(0x00, 0x00) }
            h := mload(0x00)
        }
    }

    /// @dev Retypes a precompile-backed hash as `pure`: SHA-256 reads no state, so the `view`
    ///      that solc infers from `staticcall` is a false positive.
    function _asPure(function(bytes32, bytes32) view returns (bytes32) f)
        private
        pure
        returns (function(bytes32, bytes32) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, different declared mutability; nothing else changes.
            g := f
        }
    }

    /// @dev `_asPure` for `_fold`'s signature.
    function _asPure(function(uint256, bytes32, bytes32[] calldata) view returns (bytes32) f)
        private
        pure
        returns (function(uint256, bytes32, bytes32[] calldata) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, different declared mutability; nothing else changes.
            g := f
        }
    }

    /// @dev `_asPure` for `_foldLevels`'s signature.
    function _asPure(function(bytes32[] memory) view returns (bytes32) f)
        private
        pure
        returns (function(bytes32[] memory) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, different declared mutability; nothing else changes.
            g := f
        }
    }

    /// @dev `_asPure` for `_domainHash`'s signature.
    function _asPure(function(bytes1, bytes memory) view returns (bytes32) f)
        private
        pure
        returns (function(bytes1, bytes memory) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, different declared mutability; nothing else changes.
            g := f
        }
    }
}
