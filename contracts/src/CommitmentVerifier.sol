// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ICommitmentVerifier} from "./interfaces/ICommitmentVerifier.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {TensorLib} from "./lib/TensorLib.sol";

/// @title CommitmentVerifier
/// @notice Stateless verifier of Merkle list and tensor element openings (docs/commitments.md).
contract CommitmentVerifier is ICommitmentVerifier {
    /// @inheritdoc ICommitmentVerifier
    function verifyElement(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external returns (uint256 valueBits) {
        valueBits = TensorLib.verifyElement(commitment, dtype, shape, index, chunk, siblings);
        emit ElementVerified(msg.sender, commitment, index, valueBits);
    }

    /// @inheritdoc ICommitmentVerifier
    function elementValue(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external pure returns (uint256 valueBits) {
        return TensorLib.verifyElement(commitment, dtype, shape, index, chunk, siblings);
    }

    /// @inheritdoc ICommitmentVerifier
    function verifyLeaf(bytes32 root, uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        external
        pure
    {
        MerkleLib.verify(root, count, index, leaf, siblings);
    }

    /// @inheritdoc ICommitmentVerifier
    function listRoot(uint256 count, bytes32 top) external pure returns (bytes32) {
        return MerkleLib.listRoot(count, top);
    }
}
