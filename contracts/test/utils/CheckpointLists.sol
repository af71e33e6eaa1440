// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Reference} from "./Reference.sol";

/// @title CheckpointLists
/// @notice Checkpoint lists for the tests (docs/commitments.md, sections 2 and 4): the CKPT records
///         `"CKPT" || u256(i c) || stateRoot_i`, their padded Merkle tree, its root and openings.
/// @dev The tree is `Reference.levels`: a row of odd length (other than the top) gets one PAD, so a
///      subtree holding only padding is PAD itself, never `node(PAD, PAD)`.
library CheckpointLists {
    bytes4 internal constant CKPT = "CKPT";

    /// @notice A checkpoint list and its tree.
    struct List {
        uint64 interval; // c
        bytes32[] stateRoots; // stateRoots[i]: the state after step i c (stateRoots[0]: the initial state)
        bytes32[] leaves; // leaf(record i)
        bytes32[][] levels; // the padded tree, leaf row first, top last
        bytes32 root; // listRoot(n, top)
    }

    /// @notice `"CKPT" || u256(step) || stateRoot`.
    function record(uint256 step, bytes32 stateRoot) internal pure returns (bytes memory) {
        return abi.encodePacked(CKPT, step, stateRoot);
    }

    /// @notice `leaf(record(step, stateRoot))`.
    function leaf(uint256 step, bytes32 stateRoot) internal pure returns (bytes32) {
        return Reference.leaf(record(step, stateRoot));
    }

    /// @notice The list of the states `stateRoots` taken every `interval` steps.
    function build(bytes32[] memory stateRoots, uint64 interval) internal pure returns (List memory list) {
        list.interval = interval;
        list.stateRoots = stateRoots;
        list.leaves = new bytes32[](stateRoots.length);
        for (uint256 i; i < stateRoots.length; ++i) {
            list.leaves[i] = leaf(i * interval, stateRoots[i]);
        }
        list.levels = Reference.levels(list.leaves);
        list.root = Reference.listRoot(list.leaves.length, list.levels[list.levels.length - 1][0]);
    }

    /// @notice `count` state roots named by `label`: `keccak256(label, i)`, with `initial` first.
    function states(string memory label, bytes32 initial, uint256 count)
        internal
        pure
        returns (bytes32[] memory roots)
    {
        roots = new bytes32[](count);
        roots[0] = initial;
        for (uint256 i = 1; i < count; ++i) {
            roots[i] = keccak256(abi.encode(label, i));
        }
    }

    /// @notice The siblings of leaf `index`, from the leaf level up.
    function opening(List memory list, uint256 index) internal pure returns (bytes32[] memory siblings) {
        siblings = new bytes32[](list.levels.length - 1);
        for (uint256 k; k < siblings.length; ++k) {
            siblings[k] = list.levels[k][(index >> k) ^ 1];
        }
    }

    /// @notice The final state root.
    function finalState(List memory list) internal pure returns (bytes32) {
        return list.stateRoots[list.stateRoots.length - 1];
    }

    /// @notice The `width` nodes at `height` from `position` on (a descent move); positions past the
    ///         padded row, whose subtrees hold only padding, are PAD.
    function nodesAt(List memory list, uint256 height, uint256 position, uint256 width)
        internal
        pure
        returns (bytes32[] memory nodes)
    {
        bytes32[] memory row = list.levels[height];
        nodes = new bytes32[](width);
        for (uint256 i; i < width; ++i) {
            if (position + i < row.length) nodes[i] = row[position + i];
        }
    }
}
