// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title Reference
/// @notice A second, deliberately plain implementation of docs/commitments.md for the tests:
///         builtin `sha256(abi.encodePacked(...))` only, whole padded trees built level by level.
///         The libraries under test must agree with it bit for bit.
library Reference {
    uint256 internal constant CHUNK = 4096;

    function leaf(bytes memory data) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x00), data));
    }

    function node(bytes32 l, bytes32 r) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x01), l, r));
    }

    function listRoot(uint256 n, bytes32 topNode) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x02), uint64(n), topNode));
    }

    /// @notice Bit length of n - 1, by counting (0 for n <= 1).
    function depth(uint256 n) internal pure returns (uint256 d) {
        while (n > (uint256(1) << d)) ++d;
    }

    /// @notice All levels of the tree over `leaves`, leaf row first, built level by level: a level
    ///         of odd length (other than the top) is extended with one PAD before hashing pairs.
    /// @dev docs/commitments.md section 2: a subtree holding only padding is PAD itself (not
    ///      node(PAD, PAD)); MerkleLib folds whatever siblings it gets, so it needs no such rule.
    function levels(bytes32[] memory leaves) internal pure returns (bytes32[][] memory tree) {
        tree = new bytes32[][](depth(leaves.length) + 1);
        bytes32[] memory row = leaves;
        for (uint256 k; k < tree.length; ++k) {
            if (row.length % 2 == 1 && k + 1 < tree.length) {
                bytes32[] memory padded = new bytes32[](row.length + 1);
                for (uint256 i; i < row.length; ++i) {
                    padded[i] = row[i];
                }
                row = padded;
            }
            tree[k] = row;
            if (k + 1 < tree.length) row = parents(row);
        }
    }

    /// @notice Parent row of a row of even length.
    function parents(bytes32[] memory row) internal pure returns (bytes32[] memory up) {
        up = new bytes32[](row.length / 2);
        for (uint256 i; i < up.length; ++i) {
            up[i] = node(row[2 * i], row[2 * i + 1]);
        }
    }

    function top(bytes32[] memory leaves) internal pure returns (bytes32) {
        if (leaves.length == 0) return bytes32(0);
        bytes32[][] memory tree = levels(leaves);
        return tree[tree.length - 1][0];
    }

    function root(bytes32[] memory leaves) internal pure returns (bytes32) {
        return listRoot(leaves.length, top(leaves));
    }

    /// @notice Siblings of leaf `index`, from the leaf level up.
    function proof(bytes32[] memory leaves, uint256 index) internal pure returns (bytes32[] memory sibs) {
        bytes32[][] memory tree = levels(leaves);
        sibs = new bytes32[](tree.length - 1);
        for (uint256 k; k < sibs.length; ++k) {
            sibs[k] = tree[k][(index >> k) ^ 1];
        }
    }

    /// @notice The root an opening folds to, with no validation at all.
    function fold(uint256 n, uint256 index, bytes32 h, bytes32[] memory sibs)
        internal
        pure
        returns (bytes32)
    {
        for (uint256 k; k < sibs.length; ++k) {
            h = (index >> k) & 1 == 0 ? node(h, sibs[k]) : node(sibs[k], h);
        }
        return listRoot(n, h);
    }

    /// @notice Leaf hashes of the 4096-byte chunks of `data`.
    function chunkLeaves(bytes memory data) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[]((data.length + CHUNK - 1) / CHUNK);
        for (uint256 j; j < leaves.length; ++j) {
            uint256 end = (j + 1) * CHUNK < data.length ? (j + 1) * CHUNK : data.length;
            leaves[j] = leaf(slice(data, j * CHUNK, end));
        }
    }

    function dataRoot(bytes memory data) internal pure returns (bytes32) {
        return root(chunkLeaves(data));
    }

    function header(uint8 dtype, uint64[] memory shape) internal pure returns (bytes memory h) {
        h = abi.encodePacked(dtype, uint8(shape.length));
        for (uint256 i; i < shape.length; ++i) {
            h = abi.encodePacked(h, shape[i]);
        }
    }

    function commitment(uint8 dtype, uint64[] memory shape, bytes32 dRoot) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x03), header(dtype, shape), dRoot));
    }

    /// @notice `size` bytes at `offset` of `data`, little-endian.
    function littleEndian(bytes memory data, uint256 offset, uint256 size) internal pure returns (uint256 v) {
        for (uint256 k; k < size; ++k) {
            v |= uint256(uint8(data[offset + k])) << (8 * k);
        }
    }

    function slice(bytes memory data, uint256 from, uint256 to) internal pure returns (bytes memory out) {
        out = new bytes(to - from);
        for (uint256 i; i < out.length; ++i) {
            out[i] = data[from + i];
        }
    }
}
