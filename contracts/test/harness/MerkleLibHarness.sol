// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {MerkleLib} from "../../src/lib/MerkleLib.sol";

/// @notice Exposes MerkleLib's internal functions as external calls (for `expectRevert` and
///         calldata arguments), plus gas probes that time the library call alone.
contract MerkleLibHarness {
    function leafHash(bytes memory data) external pure returns (bytes32) {
        return MerkleLib.leafHash(data);
    }

    function leafHashCalldata(bytes calldata data) external pure returns (bytes32) {
        return MerkleLib.leafHashCalldata(data);
    }

    function nodeHash(bytes32 left, bytes32 right) external pure returns (bytes32) {
        return MerkleLib.nodeHash(left, right);
    }

    function listRoot(uint256 count, bytes32 top) external pure returns (bytes32) {
        return MerkleLib.listRoot(count, top);
    }

    function depth(uint256 count) external pure returns (uint256) {
        return MerkleLib.depth(count);
    }

    function rootInPlace(bytes32[] memory leaves) external pure returns (bytes32) {
        return MerkleLib.rootInPlace(leaves);
    }

    function computeRoot(uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        external
        pure
        returns (bytes32)
    {
        return MerkleLib.computeRoot(count, index, leaf, siblings);
    }

    function verify(bytes32 root, uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        external
        pure
    {
        MerkleLib.verify(root, count, index, leaf, siblings);
    }

    /// @notice Gas of one `MerkleLib.verify` call, arguments already decoded.
    function verifyGas(bytes32 root, uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        external
        view
        returns (uint256 gasUsed)
    {
        gasUsed = gasleft();
        MerkleLib.verify(root, count, index, leaf, siblings);
        gasUsed -= gasleft();
    }
}
