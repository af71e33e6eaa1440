// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {MerkleLib} from "../../src/lib/MerkleLib.sol";

/// @title Trees
/// @notice In-memory Merkle lists of docs/commitments.md section 2 for the dispute game tests: the
///         padded tree of a list, its root, the node at (height, position) of the complete-tree
///         view, the nodes a descent move posts, and openings.
/// @dev Row `h` holds the `ceil(n / 2^h)` positions whose subtree covers a leaf; every other position
///      of the complete tree (`p * 2^h >= n`) is PAD. A row of odd length is hashed with one PAD on
///      the right, so a subtree holding only padding is PAD itself, never `node(PAD, PAD)`.
library Trees {
    bytes32 internal constant PAD = bytes32(0);

    /// @notice A list and its padded tree.
    struct Tree {
        uint256 count; // n, the leaves
        bytes32[][] rows; // rows[0] the leaves, rows[depth] the top (one node; PAD for n = 0)
        bytes32 root; // listRoot(n, top)
    }

    /// @notice `leaf(record)`.
    function leaf(bytes memory record) internal pure returns (bytes32) {
        return MerkleLib.leafHash(record);
    }

    /// @notice `depth(n)`: 0 for `n <= 1`, else `ceil(log2 n)`.
    function depth(uint256 n) internal pure returns (uint256 d) {
        while (n > (uint256(1) << d)) ++d;
    }

    /// @notice The tree of `leaves` (kept by reference, not copied).
    function build(bytes32[] memory leaves) internal pure returns (Tree memory t) {
        uint256 n = leaves.length;
        uint256 d = depth(n);
        t.count = n;
        t.rows = new bytes32[][](d + 1);
        t.rows[0] = leaves;
        for (uint256 h = 1; h <= d; ++h) {
            bytes32[] memory below = t.rows[h - 1];
            bytes32[] memory row = new bytes32[]((below.length + 1) / 2);
            for (uint256 i; i < row.length; ++i) {
                bytes32 right = 2 * i + 1 < below.length ? below[2 * i + 1] : PAD;
                row[i] = MerkleLib.nodeHash(below[2 * i], right);
            }
            t.rows[h] = row;
        }
        t.root = MerkleLib.listRoot(n, top(t));
    }

    /// @notice The root of `leaves`.
    function rootOf(bytes32[] memory leaves) internal pure returns (bytes32) {
        return build(leaves).root;
    }

    /// @notice The top node (PAD for an empty list).
    function top(Tree memory t) internal pure returns (bytes32) {
        bytes32[] memory row = t.rows[t.rows.length - 1];
        return row.length == 0 ? PAD : row[0];
    }

    /// @notice The tree's depth.
    function height(Tree memory t) internal pure returns (uint256) {
        return t.rows.length - 1;
    }

    /// @notice The node at `position` of row `h` of the complete-tree view (PAD past the padded row).
    function nodeAt(Tree memory t, uint256 h, uint256 position) internal pure returns (bytes32) {
        bytes32[] memory row = t.rows[h];
        return position < row.length ? row[position] : PAD;
    }

    /// @notice The leaf at `index`.
    function leafAt(Tree memory t, uint256 index) internal pure returns (bytes32) {
        return t.rows[0][index];
    }

    /// @notice The width `2^min(log2 arity, h)` of a descent move at height `h`.
    function moveWidth(uint256 h, uint256 arity) internal pure returns (uint256 w) {
        uint256 tBits;
        while ((uint256(1) << (tBits + 1)) <= arity && tBits < h) ++tBits;
        w = uint256(1) << tBits;
    }

    /// @notice The nodes a descent move at (height `h`, position `p`) posts: the `w` nodes at height
    ///         `h - log2 w`, positions `p w .. p w + w - 1` (PAD where the tree is padding).
    function descent(Tree memory t, uint256 h, uint256 p, uint256 arity)
        internal
        pure
        returns (bytes32[] memory nodes)
    {
        uint256 w = moveWidth(h, arity);
        uint256 below = h - log2(w);
        nodes = new bytes32[](w);
        for (uint256 i; i < w; ++i) {
            nodes[i] = nodeAt(t, below, p * w + i);
        }
    }

    /// @notice Folds `nodes` (at `baseHeight`, positions from `basePos`) up to one node, with PAD at
    ///         every position past `n` (the game's check, done the plain way for expected values).
    function fold(bytes32[] memory nodes, uint256 baseHeight, uint256 basePos, uint256 n)
        internal
        pure
        returns (bytes32)
    {
        bytes32[] memory level = new bytes32[](nodes.length);
        for (uint256 i; i < nodes.length; ++i) {
            level[i] = nodes[i];
        }
        uint256 w = nodes.length;
        uint256 h = baseHeight;
        uint256 pos = basePos;
        while (w > 1) {
            w /= 2;
            ++h;
            pos /= 2;
            for (uint256 i; i < w; ++i) {
                level[i] = ((pos + i) << h) >= n
                    ? PAD
                    : sha256(abi.encodePacked(bytes1(0x01), level[2 * i], level[2 * i + 1]));
            }
        }
        return level[0];
    }

    /// @notice The siblings of leaf `index`, from the leaf row up.
    function opening(Tree memory t, uint256 index) internal pure returns (bytes32[] memory siblings) {
        siblings = new bytes32[](height(t));
        for (uint256 k; k < siblings.length; ++k) {
            siblings[k] = nodeAt(t, k, (index >> k) ^ 1);
        }
    }

    /// @notice The root an opening folds to (no checks): `listRoot(n, fold)`.
    function rootFrom(uint256 n, uint256 index, bytes32 leafHash, bytes32[] memory siblings)
        internal
        pure
        returns (bytes32)
    {
        bytes32 h = leafHash;
        for (uint256 k; k < siblings.length; ++k) {
            h = (index >> k) & 1 == 0
                ? sha256(abi.encodePacked(bytes1(0x01), h, siblings[k]))
                : sha256(abi.encodePacked(bytes1(0x01), siblings[k], h));
        }
        return sha256(abi.encodePacked(bytes1(0x02), uint64(n), h));
    }

    /// @notice `listRoot(n, top)`.
    function listRoot(uint256 n, bytes32 topNode) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x02), uint64(n), topNode));
    }

    /// @notice log2 of a power of two.
    function log2(uint256 x) internal pure returns (uint256 r) {
        while (x > 1) {
            x >>= 1;
            ++r;
        }
    }
}
