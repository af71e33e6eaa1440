// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {
    TensorChunkLength,
    TensorCommitmentMismatch,
    TensorElementOutOfRange,
    TensorTooLarge,
    TensorTooManyDims,
    TensorUnsupportedDtype
} from "./Errors.sol";
import {MerkleLib} from "./MerkleLib.sol";

/// @title TensorLib
/// @notice Tensor commitments and element openings of docs/commitments.md, section 3:
///         `commitment = H(0x03 || u8(dtype) || u8(ndim) || u64(shape[0]) .. || dataRoot)`, with
///         `dataRoot` the list root of the leaf hashes of the tensor's 4096-byte chunks.
library TensorLib {
    /// @notice Chunk size in bytes; the last chunk may be shorter, never empty.
    uint256 internal constant CHUNK = 4096;
    /// @notice Most dimensions a shape may have.
    uint256 internal constant MAX_NDIM = 32;
    /// @notice Most bytes a committable tensor may have: its chunk count must fit in 64 bits.
    uint256 internal constant MAX_NBYTES = MerkleLib.MAX_COUNT * CHUNK;

    /// @dev Element size in bytes of dtype code `i` in nibble `i` (codes 1..10; nibble 0 unused):
    ///      float32 4, float64 8, float16 2, bfloat16 2, uint8 1, int8 1, int16 2, int32 4, int64 8, bool 1.
    uint256 private constant SIZES = 0x18421122840;

    /// @notice Element size in bytes of dtype `dtype`; reverts `TensorUnsupportedDtype` unless 1..10.
    function elementSize(uint8 dtype) internal pure returns (uint256) {
        if (dtype == 0 || dtype > 10) revert TensorUnsupportedDtype(dtype);
        return (SIZES >> (4 * uint256(dtype))) & 0xf;
    }

    /// @notice `u8(dtype) || u8(ndim) || u64(shape[0]) || ... || u64(shape[ndim-1])`.
    /// @dev Reverts `TensorUnsupportedDtype` or `TensorTooManyDims` (more than 32 dims).
    function header(uint8 dtype, uint64[] calldata shape) internal pure returns (bytes memory) {
        return _encodeHeader(dtype, shape, 0);
    }

    /// @notice The tensor commitment `H(0x03 || header(dtype, shape) || dataRoot)`.
    /// @dev Reverts as `header`.
    function commitmentOf(uint8 dtype, uint64[] calldata shape, bytes32 dataRoot)
        internal
        pure
        returns (bytes32)
    {
        bytes memory body = _encodeHeader(dtype, shape, 32);
        assembly ("memory-safe") {
            // dataRoot fills the 32 bytes reserved after the header.
            mstore(add(body, mload(body)), dataRoot)
        }
        return MerkleLib.domainHash(MerkleLib.TENSOR_PREFIX, body);
    }

    /// @notice Number of elements of `shape` (1 for a scalar), saturated at 2^256 - 1.
    /// @dev Saturates rather than overflows so that `verifyElement` can report an uncommittable
    ///      shape with `TensorTooLarge` instead of a panic.
    function numel(uint64[] calldata shape) internal pure returns (uint256 n) {
        n = 1;
        bool saturated;
        for (uint256 i; i < shape.length;) {
            uint256 dim = shape[i];
            if (dim == 0) return 0;
            unchecked {
                // Wrapping product, with the wrap detected by division (dim != 0); i < shape.length.
                uint256 product = n * dim;
                if (product / dim != n) saturated = true;
                n = product;
                ++i;
            }
        }
        if (saturated) n = type(uint256).max;
    }

    /// @notice Checks an element opening against a tensor commitment; returns the element's bits.
    /// @dev The verifier of docs/commitments.md section 3. With `size = elementSize(dtype)`:
    ///      `numel` from the shape; `nbytes = numel * size`; chunk `j = index * size / CHUNK`; the
    ///      chunk must be `min(CHUNK, nbytes - j * CHUNK)` bytes; its leaf hash and `siblings` fold
    ///      (as `MerkleLib.computeRoot`, list of `ceil(nbytes / CHUNK)` leaves) to a `dataRoot`;
    ///      `commitmentOf(dtype, shape, dataRoot)` must equal `commitment`.
    ///      Reverts, in this order: `TensorUnsupportedDtype`, `TensorTooManyDims`, `TensorTooLarge`
    ///      (`nbytes > MAX_NBYTES`, including a product of dims past 2^256, so that nothing below
    ///      overflows), `TensorElementOutOfRange` (index >= numel), `TensorChunkLength`, the
    ///      `MerkleLib.computeRoot` errors (`MerkleProofLength` for a wrong sibling count), and
    ///      `TensorCommitmentMismatch(computed, commitment)`.
    /// @return valueBits The `size` bytes at offset `(index * size) % CHUNK` of the chunk, read
    ///         little-endian as an unsigned integer (the raw bit pattern, e.g. IEEE-754 bits).
    function verifyElement(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) internal pure returns (uint256 valueBits) {
        (uint256 size, uint256 j, uint256 count) = _locate(dtype, shape, index, chunk.length);
        bytes32 dataRoot = MerkleLib.computeRoot(count, j, MerkleLib.leafHashCalldata(chunk), siblings);
        bytes32 computed = commitmentOf(dtype, shape, dataRoot);
        if (computed != commitment) revert TensorCommitmentMismatch(computed, commitment);
        // size divides CHUNK, so the element lies inside the chunk.
        uint256 at = (index * size) % CHUNK;
        return _littleEndian(uint64(bytes8(chunk[at:at + size])));
    }

    /// @dev The shape checks of `verifyElement`, up to the chunk length: returns the element size,
    ///      the index `j` of the element's chunk and the chunk count.
    function _locate(uint8 dtype, uint64[] calldata shape, uint256 index, uint256 chunkLength)
        private
        pure
        returns (uint256 size, uint256 j, uint256 count)
    {
        size = elementSize(dtype);
        if (shape.length > MAX_NDIM) revert TensorTooManyDims(shape.length);
        uint256 n = numel(shape);
        uint256 maxNumel = MAX_NBYTES / size;
        if (n > maxNumel) revert TensorTooLarge(n, maxNumel);
        if (index >= n) revert TensorElementOutOfRange(index, n);
        // No overflow below: nbytes <= MAX_NBYTES < 2^77.
        uint256 nbytes = n * size;
        j = index * size / CHUNK;
        uint256 rest = nbytes - j * CHUNK;
        uint256 want = rest < CHUNK ? rest : CHUNK;
        if (chunkLength != want) revert TensorChunkLength(chunkLength, want);
        count = (nbytes + CHUNK - 1) / CHUNK;
    }

    /// @dev `header(dtype, shape)` followed by `extra` zero bytes, in one allocation.
    function _encodeHeader(uint8 dtype, uint64[] calldata shape, uint256 extra)
        private
        pure
        returns (bytes memory h)
    {
        elementSize(dtype);
        uint256 ndim = shape.length;
        if (ndim > MAX_NDIM) revert TensorTooManyDims(ndim);
        h = new bytes(2 + 8 * ndim + extra);
        h[0] = bytes1(dtype);
        h[1] = bytes1(uint8(ndim));
        for (uint256 i; i < ndim; ++i) {
            uint64 dim = shape[i];
            assembly ("memory-safe") {
                // Big-endian u64 at byte 2 + 8i of h; the 24 zero bytes it also writes after it land on
                // later dims (written next), on the extra bytes, or past h (its padding or free memory).
                mstore(add(add(h, 0x22), shl(3, i)), shl(192, dim))
            }
        }
    }

    /// @dev Byte-reverses a u64: `b0 b1 .. b_{s-1} 0 .. 0` (big-endian) becomes `sum b_k 256^k`.
    function _littleEndian(uint64 x) private pure returns (uint256) {
        x = ((x & 0xff00ff00ff00ff00) >> 8) | ((x & 0x00ff00ff00ff00ff) << 8);
        x = ((x & 0xffff0000ffff0000) >> 16) | ((x & 0x0000ffff0000ffff) << 16);
        return uint256((x >> 32) | (x << 32));
    }
}
