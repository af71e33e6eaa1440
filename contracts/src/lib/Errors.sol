// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

// Errors of the commitment libraries (docs/commitments.md). File-level, so that contracts
// and off-chain decoders share one definition per selector.

/// @notice A Merkle opening names leaf `index` of a list of only `count` leaves (this also
///         covers every padding position).
error MerkleIndexOutOfRange(uint256 index, uint256 count);

/// @notice A Merkle opening tries to open the padding leaf `PAD` (32 zero bytes).
error MerklePaddingLeaf();

/// @notice A Merkle opening carries `got` siblings; a list of its count needs `expected`.
error MerkleProofLength(uint256 got, uint256 expected);

/// @notice A Merkle opening folds to the root `computed`, not to the committed `expected`.
error MerkleRootMismatch(bytes32 computed, bytes32 expected);

/// @notice A list of `count` leaves cannot be committed: the count must fit in 64 bits.
error MerkleCountTooLarge(uint256 count);

/// @notice `dtype` is not one of the codes 1..10 of the commitment format.
error TensorUnsupportedDtype(uint8 dtype);

/// @notice A shape has `ndim` dimensions; the format allows at most 32.
error TensorTooManyDims(uint256 ndim);

/// @notice The tensor has `numel` elements (saturated at 2^256 - 1 if the product of its dims
///         overflows); its chunk count would not fit in 64 bits, so it cannot be committed.
error TensorTooLarge(uint256 numel, uint256 maxNumel);

/// @notice Flat element `index` does not exist in a tensor of `numel` elements.
error TensorElementOutOfRange(uint256 index, uint256 numel);

/// @notice The opened chunk is `got` bytes long; the tensor's shape makes it `expected`.
error TensorChunkLength(uint256 got, uint256 expected);

/// @notice An element opening implies the tensor commitment `computed`, not the committed `expected`.
error TensorCommitmentMismatch(bytes32 computed, bytes32 expected);
