// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title ICommitmentVerifier
/// @notice Checks openings of the commitments of docs/commitments.md: Merkle list leaves and
///         tensor elements. Stateless; deployed for the demo and for off-chain clients that want
///         a chain's verdict (and its gas) on an opening.
/// @dev Failures revert with the custom errors of `contracts/src/lib/Errors.sol`.
interface ICommitmentVerifier {
    /// @notice A tensor element opening was checked by `verifyElement`.
    /// @param caller The account that asked.
    /// @param commitment The tensor commitment opened against.
    /// @param index The flat (row-major) element index.
    /// @param valueBits The element's bytes read little-endian (its raw bit pattern).
    event ElementVerified(
        address indexed caller, bytes32 indexed commitment, uint256 index, uint256 valueBits
    );

    /// @notice Checks that element `index` of the tensor committed as `commitment` lies in `chunk`,
    ///         emits `ElementVerified` and returns the element's bits.
    /// @dev The same check as `elementValue`; a transaction, so that its gas can be measured.
    ///      Reverts `TensorUnsupportedDtype`, `TensorTooManyDims`, `TensorTooLarge`,
    ///      `TensorElementOutOfRange`, `TensorChunkLength`, the Merkle opening errors
    ///      (`MerkleProofLength`, ...) or `TensorCommitmentMismatch`.
    /// @param commitment The tensor commitment `H(0x03 || header || dataRoot)`.
    /// @param dtype The dtype code (1..10).
    /// @param shape The tensor's shape (empty for a scalar; at most 32 dims).
    /// @param index The flat (row-major) element index.
    /// @param chunk The whole 4096-byte chunk `index * size / 4096` (the last one may be shorter).
    /// @param siblings The Merkle opening of that chunk against the data root, leaf level first.
    /// @return valueBits The element's `size` bytes read little-endian as an unsigned integer.
    function verifyElement(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external returns (uint256 valueBits);

    /// @notice `verifyElement` without the event: the element's bits if the opening is valid.
    /// @dev Reverts exactly as `verifyElement`.
    /// @param commitment The tensor commitment.
    /// @param dtype The dtype code (1..10).
    /// @param shape The tensor's shape.
    /// @param index The flat (row-major) element index.
    /// @param chunk The chunk holding the element.
    /// @param siblings The Merkle opening of that chunk, leaf level first.
    /// @return valueBits The element's bytes read little-endian as an unsigned integer.
    function elementValue(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external pure returns (uint256 valueBits);

    /// @notice Returns normally iff the opening proves `leaf` at `index` under `root`.
    /// @dev Reverts `MerkleCountTooLarge`, `MerkleIndexOutOfRange`, `MerklePaddingLeaf`,
    ///      `MerkleProofLength` or `MerkleRootMismatch(computed, root)`.
    /// @param root The list root `H(0x02 || u64(count) || top)`.
    /// @param count The number of leaves in the list.
    /// @param index The position of the leaf.
    /// @param leaf The leaf hash `H(0x00 || data)`.
    /// @param siblings The sibling hashes from the leaf level upward (`depth(count)` of them).
    function verifyLeaf(bytes32 root, uint256 count, uint256 index, bytes32 leaf, bytes32[] calldata siblings)
        external
        pure;

    /// @notice The list root `H(0x02 || u64(count) || top)` of a list of `count` leaves whose tree
    ///         has the top node `top`.
    /// @dev Reverts `MerkleCountTooLarge` unless `count < 2^64`.
    /// @param count The number of leaves.
    /// @param top The top node of the padded tree (`PAD` for 0 leaves, the leaf itself for 1).
    /// @return The list root.
    function listRoot(uint256 count, bytes32 top) external pure returns (bytes32);
}
